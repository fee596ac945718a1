use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Params {
    pub k: f64,
}

// A copy of a struct parameter is not split into fields.
#[differentiate(forward, reverse)]
fn f(p: &Params, a: f64) -> f64 {
    let q = p.clone();
    p.k * a + q.k
}

fn main() {}

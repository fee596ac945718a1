use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Params {
    pub k: f64,
}

// A struct inside a tuple is not split into fields.
#[differentiate(forward, reverse)]
fn f(p: &Params, a: f64) -> f64 {
    let pair = (p.clone(), a);
    p.k * a + pair.0.k * pair.1
}

fn main() {}

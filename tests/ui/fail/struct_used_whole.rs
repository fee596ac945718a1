use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Params {
    pub k: f64,
}

fn helper(p: &Params) -> f64 {
    p.k
}

// A struct passed whole to a call is not split yet.
#[differentiate(forward, reverse)]
fn f(p: &Params, a: f64) -> f64 {
    p.k * a + helper(p)
}

fn main() {}

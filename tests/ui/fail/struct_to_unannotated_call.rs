use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Params {
    pub k: f64,
}

fn helper(p: &Params) -> f64 {
    p.k
}

// A struct passed to a plain helper: the derivative needs the helper's split derivatives.
#[differentiate(forward, reverse)]
fn f(p: &Params, a: f64) -> f64 {
    p.k * a + helper(p)
}

fn main() {}

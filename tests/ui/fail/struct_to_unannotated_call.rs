use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Params {
    pub k: f64,
}

// A plain helper taking a struct, which phidiff does not inline (a `return` in a loop).
fn helper(p: &Params, xs: &[f64]) -> f64 {
    for &x in xs {
        if x > p.k {
            return x * p.k;
        }
    }
    p.k
}

#[differentiate(forward, reverse)]
fn f(p: &Params, xs: &[f64], a: f64) -> f64 {
    p.k * a + helper(p, xs)
}

fn main() {}

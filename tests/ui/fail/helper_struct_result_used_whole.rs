use phidiff::{differentiate, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct P2 {
    pub x: f64,
    pub y: f64,
}

fn swap(a: P2) -> P2 {
    P2 { x: a.y, y: a.x }
}

// The struct a helper returns, inside a tuple: not split.
#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    let a = P2 { x: x[0], y: x[1] };
    let t = (swap(a), x[2]);
    t.0.x * t.1
}

fn main() {}

use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct P2 {
    pub x: f64,
    pub y: f64,
}

#[differentiate(forward, reverse)]
fn mk(s: f64) -> P2 {
    P2 { x: s, y: s * s }
}

// A block's struct comes from a literal, a local or another block, not from a call.
#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    let v: P2 = {
        let s = x[0] * 2.0;
        mk(s)
    };
    v.x + v.y
}

fn main() {}

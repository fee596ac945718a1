use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct P2 {
    pub x: f64,
    pub y: f64,
}

#[derive(Differentiable, Clone, Copy)]
pub struct Ball {
    pub center: P2,
    pub r: f64,
}

// A whole assignment of a struct holding a struct: its inner struct is not split, so it
// would keep its old value.
#[differentiate(forward, reverse)]
fn f(b: &mut Ball, o: &Ball) -> f64 {
    *b = *o;
    b.center.x * b.r
}

fn main() {}

use phidiff::{differentiate, Differentiable};

#[derive(Differentiable)]
pub struct Inner {
    pub x: f64,
}

#[derive(Differentiable)]
pub struct Outer {
    pub scale: f64,
    pub inner: Inner,
}

// Fields of a struct inside a struct are not split yet.
#[differentiate(forward, reverse)]
fn f(p: &Outer, a: f64) -> f64 {
    p.scale * p.inner.x * a
}

fn main() {}

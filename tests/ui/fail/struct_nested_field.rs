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

// Fields of a struct inside a struct parameter are split (`p.inner.x`); inside a struct
// literal they are not yet.
#[differentiate(forward, reverse)]
fn f(p: &Outer, a: f64) -> f64 {
    let q = Outer { scale: a, inner: Inner { x: a } };
    p.scale * p.inner.x * q.inner.x
}

fn main() {}

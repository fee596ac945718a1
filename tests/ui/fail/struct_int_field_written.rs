use phidiff::{differentiate, Differentiable};

#[derive(Differentiable)]
pub struct State {
    pub x: f64,
    pub steps: usize,
}

// An integer field of a `&mut` struct written by the body.
#[differentiate(forward, reverse)]
fn advance(s: &mut State, dt: f64) {
    s.x += dt * s.x;
    s.steps += 1;
}

fn main() {}

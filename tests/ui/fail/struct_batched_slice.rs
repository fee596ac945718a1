use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Body {
    pub pos: [f64; 3],
    pub mass: f64,
}

// The batched sweep takes structs by reference, not slices of them (yet).
#[differentiate(reverse, reverse(width = 2))]
fn centre(bodies: &[Body]) -> f64 {
    let mut c = 0.0;
    for b in bodies.iter() {
        c += b.mass * b.pos[0];
    }
    c
}

// Nor structs by value.
#[differentiate(forward(width = 2))]
fn scaled(b: Body, s: f64) -> f64 {
    s * b.mass
}

fn main() {}

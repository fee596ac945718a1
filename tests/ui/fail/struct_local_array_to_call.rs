use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Phase {
    pub pos: [f64; 2],
    pub energy: f64,
}

#[differentiate(forward, reverse)]
pub fn stepped(s: &Phase, dt: f64) -> Phase {
    Phase { pos: [s.pos[0] + dt * s.pos[1], s.pos[1]], energy: s.energy }
}

// A struct built in the function (here a call's result) with an array field cannot be
// passed on to a call yet.
#[differentiate(forward, reverse)]
pub fn two_steps(s: &Phase, dt: f64) -> f64 {
    let a = stepped(s, dt);
    let b = stepped(&a, dt);
    b.energy
}

fn main() {}

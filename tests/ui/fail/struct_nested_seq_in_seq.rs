use phidiff::{differentiate, Differentiable};

#[derive(Differentiable)]
pub struct Joint {
    pub angle: f64,
}

#[derive(Differentiable)]
pub struct Arm {
    pub joints: Vec<Joint>,
    pub length: f64,
}

// A `Vec` of structs inside the elements of a slice of structs is not split yet.
#[differentiate(forward, reverse)]
fn reach(arms: &[Arm]) -> f64 {
    let mut s = 0.0;
    for a in arms {
        s += a.length * a.joints[0].angle.cos();
        let first = &a.joints[0];
        s += first.angle;
    }
    s
}

fn main() {}

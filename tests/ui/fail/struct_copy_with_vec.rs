use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Cloud {
    pub pts: Vec<f64>,
    pub w: f64,
}

// A copy of a struct with a `Vec` field is not split (its numbers and arrays are).
#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    let b = Cloud {
        pts: x.to_vec(),
        w: x[0],
    };
    let c = b;
    c.w * c.pts[1]
}

fn main() {}

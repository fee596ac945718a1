use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Fit {
    pub value: f64,
    pub residuals: Vec<f64>,
}

// A struct result's fields are outputs of known size: floats and arrays of floats.
#[differentiate(forward, reverse)]
fn fit(x: &[f64]) -> Fit {
    Fit {
        value: x[0],
        residuals: vec![x[0]; 2],
    }
}

fn main() {}

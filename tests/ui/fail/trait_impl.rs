use phidiff::{differentiate, Differentiable};

pub trait Cost {
    fn cost(&self, x: &[f64]) -> f64;
}

#[derive(Differentiable)]
pub struct Model {
    pub k: f64,
}

// The methods of a trait impl are not differentiated yet.
#[differentiate]
impl Cost for Model {
    fn cost(&self, x: &[f64]) -> f64 {
        self.k * x[0]
    }
}

fn main() {}

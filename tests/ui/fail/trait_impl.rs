use phidiff::{differentiate, Differentiable};

pub trait Cost {
    fn cost(&self, x: &[f64]) -> f64;
}

#[derive(Differentiable)]
pub struct Model {
    pub k: f64,
}

// A trait's method is differentiated when the trait impl carries `#[differentiate]` too
// (its derivatives go to an inherent impl beside it); the method's attribute alone cannot.
impl Cost for Model {
    #[differentiate(reverse)]
    fn cost(&self, x: &[f64]) -> f64 {
        self.k * x[0]
    }
}

fn main() {}

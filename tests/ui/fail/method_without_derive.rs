use phidiff::differentiate;

pub struct Model {
    pub k: f64,
}

impl Model {
    #[differentiate(forward, reverse)]
    pub fn f(&self, x: &[f64], a: f64) -> f64 {
        x[0] * a
    }
}

fn main() {}

use phidiff::differentiate;

pub trait Model {
    fn eval(&self, v: f64) -> f64;
}

#[differentiate(forward, reverse)]
fn f<F: Fn(&[f64]) -> f64>(x: &[f64], g: F) -> f64 { g(x) }

fn main() {}

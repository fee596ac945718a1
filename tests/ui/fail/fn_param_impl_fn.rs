use phidiff::differentiate;

pub trait Model {
    fn eval(&self, v: f64) -> f64;
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], g: impl Fn(f64) -> f64) -> f64 { g(x[0]) }

fn main() {}

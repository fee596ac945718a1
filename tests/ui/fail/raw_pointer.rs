use phidiff::differentiate;

pub trait Model {
    fn eval(&self, v: f64) -> f64;
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], p: *const f64) -> f64 { x[0] }

fn main() {}

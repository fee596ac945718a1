use phidiff::differentiate;

pub trait Model {
    fn eval(&self, v: f64) -> f64;
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], m: &dyn Model) -> f64 { m.eval(x[0]) }

fn main() {}

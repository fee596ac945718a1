use phidiff::differentiate;

pub struct Params {
    pub k: f64,
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, p: &Params) -> f64 {
    x[0] * a * p.k
}

fn main() {}

use phidiff::differentiate;

const SCALE: f64 = 2.0;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    x[0] * a * SCALE
}

fn main() {}

use phidiff::differentiate;

#[differentiate(reverce)]
fn f(x: &[f64], a: f64) -> f64 {
    x[0] * a
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse, wrt(z))]
fn f(x: &[f64], a: f64) -> f64 {
    x[0] * a
}

fn main() {}

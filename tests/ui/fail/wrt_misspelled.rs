use phidiff::differentiate;

#[differentiate(forward, wtr(a))]
fn f(x: &[f64], a: f64) -> f64 {
    x[0] * a
}

fn main() {}

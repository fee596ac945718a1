use phidiff::differentiate;

#[differentiate(forward, reverse, wrt(a, n))]
fn f(x: &[f64], a: f64, n: usize) -> f64 {
    x[n] * a
}

fn main() {}

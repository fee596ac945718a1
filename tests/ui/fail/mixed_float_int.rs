use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, n: usize) -> f64 {
    x[0] * a * n
}

fn main() {}

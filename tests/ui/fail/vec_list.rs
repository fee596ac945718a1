use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let w = vec![1.0, 2.0];
    (w[0] * x[0] + w[1] * x[1]) * a
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, n: usize) -> f64 {
    let mut t = vec![vec![vec![vec![0.0; n]; n]; n]; n];
    t[0][0][0][0] = a * x[0];
    t[0][0][0][0]
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(m: &[Vec<f64>], a: f64) -> f64 {
    let s: f64 = m[0].iter().sum();
    s * a
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let s: f64 = x[1..].iter().sum();
    s * a
}

fn main() {}

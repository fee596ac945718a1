use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let (p, q) = (x[0], a);
    p * q
}

fn main() {}

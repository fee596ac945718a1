use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut p = x[0];
    let mut q = a;
    (p, q) = (q, p);
    p * q + p
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, n: usize) -> f64 {
    let k = n.pow(2);
    x[k] * a
}

fn main() {}

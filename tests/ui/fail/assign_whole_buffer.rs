use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], y: &[f64], a: f64) -> f64 {
    let mut z = x.to_vec();
    z[0] += a;
    z = y.to_vec();
    z[0] * a
}

fn main() {}

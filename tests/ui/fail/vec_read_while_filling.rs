use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut v = Vec::new();
    v.push(x[0] * a);
    let first = v[0];
    v.push(first * first);
    v.iter().sum()
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut v = Vec::new();
    v.push(x[0] * a);
    v[0]
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(m: &[Vec<f64>], a: f64) -> f64 {
    let row = &m[0];
    row[0] * a
}

fn main() {}

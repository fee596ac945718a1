use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let tail = &x[1..];
    tail[0] * a
}

fn main() {}

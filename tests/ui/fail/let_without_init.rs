use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let s: f64;
    s = x[0] * a;
    s
}

fn main() {}

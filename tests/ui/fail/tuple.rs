use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let t = (x[0], a);
    t.0 * t.1
}

fn main() {}

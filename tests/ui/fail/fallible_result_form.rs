use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> Option<f64> {
    let r = if a > 0.0 { Some(x[0] * a) } else { None };
    r
}

fn main() {}

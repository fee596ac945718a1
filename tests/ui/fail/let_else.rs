use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, k: i64) -> f64 {
    let Ok(n) = usize::try_from(k) else { return a };
    x[n] * a
}

fn main() {}

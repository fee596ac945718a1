use phidiff::differentiate;

fn head(x: &[f64]) -> Option<f64> {
    let v = *x.first()?;
    Some(v)
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let v = x.get(1)?;
    v * a
}

fn main() {
    let _ = head(&[1.0]);
}

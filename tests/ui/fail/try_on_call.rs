use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn head(x: &[f64]) -> Option<f64> {
    Some(*x.first()?)
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> Option<f64> {
    let h = head(x)?;
    Some(h * a)
}

fn main() {}

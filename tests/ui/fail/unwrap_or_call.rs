use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn mean(x: &[f64]) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    Some(x.iter().sum::<f64>() / x.len() as f64)
}

#[differentiate(forward, reverse)]
fn centered(x: &[f64], a: f64) -> f64 {
    a - mean(x).unwrap_or(0.0)
}

fn main() {}

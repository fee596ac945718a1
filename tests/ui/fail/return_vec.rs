use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> Vec<f64> {
    x.iter().map(|v| v * a).collect()
}

fn main() {}

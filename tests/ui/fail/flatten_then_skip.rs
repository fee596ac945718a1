use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(m: &[Vec<f64>]) -> f64 {
    m.iter().flatten().skip(1).map(|v| v * v).sum()
}

fn main() {}

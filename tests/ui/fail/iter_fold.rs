use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    x.iter().fold(a, |acc, v| acc * v)
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f32) -> f64 {
    x[0] * a as f64
}

fn main() {}

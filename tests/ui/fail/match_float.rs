use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    match a {
        v if v > 0.0 => v * x[0],
        _ => x[0],
    }
}

fn main() {}

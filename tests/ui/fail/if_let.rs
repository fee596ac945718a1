use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    if let Some(m) = x.iter().copied().reduce(f64::max) {
        m * a
    } else {
        a
    }
}

fn main() {}

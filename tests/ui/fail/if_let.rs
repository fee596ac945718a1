use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    if let Some(v) = x.first() {
        *v * a
    } else {
        a
    }
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    if a > 0.0 {
        x[0] * a
    } else {
        f64::NAN
    }
}

fn main() {}

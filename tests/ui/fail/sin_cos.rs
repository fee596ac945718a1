use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let sc = a.sin_cos();
    sc.0 * x[0]
}

fn main() {}

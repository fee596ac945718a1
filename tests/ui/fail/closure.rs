use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let g = |v: f64| v * a;
    g(x[0])
}

fn main() {}

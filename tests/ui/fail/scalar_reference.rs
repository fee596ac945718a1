use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let r = &a;
    *r * x[0]
}

fn main() {}

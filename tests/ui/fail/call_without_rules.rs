use phidiff::differentiate;

fn helper(v: f64) -> f64 {
    v * v
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    helper(a) * x[0]
}

fn main() {}

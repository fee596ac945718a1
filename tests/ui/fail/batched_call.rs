use phidiff::differentiate;

#[differentiate(reverse)]
fn g(a: f64) -> f64 {
    a.sin()
}

#[differentiate(reverse(width = 2))]
fn f(x: &[f64]) -> f64 {
    x[0] * g(x[1])
}

fn main() {}

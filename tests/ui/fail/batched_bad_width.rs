use phidiff::differentiate;

#[differentiate(reverse(width = 0))]
fn f(x: &[f64]) -> f64 {
    x[0] * x[1]
}

#[differentiate(forward(width = 65))]
fn g(x: &[f64]) -> f64 {
    x[0] * x[1]
}

fn main() {}

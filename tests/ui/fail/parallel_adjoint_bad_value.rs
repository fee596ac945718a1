use phidiff::differentiate;

#[differentiate(reverse, parallel_adjoint = locks)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}

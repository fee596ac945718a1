use phidiff::differentiate;

#[differentiate(reverse)]
fn g(a: &[f64], out: &mut [f64]) {
    out[0] = a[0].sin();
}

#[differentiate(reverse(width = 2))]
fn f(x: &[f64]) -> f64 {
    let mut y = vec![0.0; 1];
    g(x, &mut y);
    x[0] * y[0]
}

fn main() {}

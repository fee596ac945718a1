use phidiff::differentiate;

#[differentiate(reverse, cuda)]
fn k(a: f64, x: &[f64], y: &mut [f64]) {
    y[0] = a * x[0];
}

fn main() {}

use phidiff::differentiate;

fn helper(v: f64) -> f64 {
    v * 2.0
}

#[differentiate(reverse, cuda)]
fn k(i: usize, x: &[f64], y: &mut [f64]) {
    y[i] = helper(x[i]);
}

fn main() {}

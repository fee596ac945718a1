use phidiff::differentiate;

#[differentiate(reverse, cuda)]
fn k(i: usize, x: &[f64]) -> f64 {
    x[i] * x[i]
}

fn main() {}

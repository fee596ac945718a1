use phidiff::differentiate;

#[differentiate(reverse, cuda)]
fn k(i: usize, x: &[f64], y: &mut [f64]) {
    let t = vec![0.5; 3];
    y[i] = x[i] * t[0];
}

fn main() {}

use phidiff::differentiate;

#[differentiate(forward, cuda)]
fn k(i: usize, x: &[f64], y: &mut [f64]) {
    y[i] = x[i].sin();
}

fn main() {}

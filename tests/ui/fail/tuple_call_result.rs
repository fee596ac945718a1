use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn mean_and_spread(x: &[f64]) -> (f64, f64) {
    (x[0] + x[1], x[0] - x[1])
}

// A call returning a tuple (several outputs) cannot be taken apart inside a differentiated
// function yet.
#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    let (m, s) = mean_and_spread(x);
    m * s
}

fn main() {}

use phidiff::differentiate;

// A function with several results returns a tuple of floats.
#[differentiate(forward, reverse)]
fn argmax_and_value(x: &[f64]) -> (f64, usize) {
    (x[0], 0)
}

fn main() {}

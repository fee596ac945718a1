use phidiff::differentiate;

fn pair(a: f64) -> (f64, f64) {
    (a, 2.0 * a)
}

// A function returning a tuple ends in a tuple (or branches that do).
#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> (f64, f64) {
    pair(x[0])
}

fn main() {}

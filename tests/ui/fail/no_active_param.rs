use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(n: usize) -> f64 {
    n as f64
}

fn main() {}

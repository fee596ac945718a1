use phidiff::differentiate;

const LIMIT: usize = 3;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, n: usize) -> f64 {
    match n {
        LIMIT => a * x[0],
        _ => a,
    }
}

fn main() {}

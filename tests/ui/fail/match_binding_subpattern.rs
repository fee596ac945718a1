use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, n: usize) -> f64 {
    match n {
        k @ 1..=3 => a * x[k],
        _ => a,
    }
}

fn main() {}

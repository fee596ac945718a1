use phidiff::differentiate;

// Helpers without attributes are inlined where they are called; a cycle cannot be.
fn even_sum(x: &[f64], n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        x[n] + odd_sum(x, n - 1)
    }
}

fn odd_sum(x: &[f64], n: usize) -> f64 {
    if n == 0 {
        x[0]
    } else {
        x[n] * even_sum(x, n - 1)
    }
}

#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    even_sum(x, x.len() - 1)
}

fn main() {}

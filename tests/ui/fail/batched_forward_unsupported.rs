use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(forward, reverse)]
fn g(a: f64) -> f64 {
    a.sin()
}

// A call of a function with active arguments: its `_fwd` has one tangent.
#[differentiate(forward(width = 2))]
fn calls(x: &[f64]) -> f64 {
    g(x[0]) * x[1]
}

#[differentiate(forward(width = 2))]
fn parallel(x: &[f64], n: usize) -> f64 {
    (0..n).into_par_iter().map(|i| x[i] * x[i]).sum()
}

#[differentiate(forward(width = 2))]
fn checkpointed(x: &[f64], steps: usize) -> f64 {
    let mut u = x[0];
    #[checkpoint(revolve(snapshots = 4))]
    for _ in 0..steps {
        u = u * 0.9 + 0.1 * u.sin();
    }
    u
}

fn main() {}

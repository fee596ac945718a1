use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(reverse)]
fn f(x: &[f64], n: usize) -> f64 {
    (0..n).into_par_iter().rev().map(|i| x[i] * x[i]).sum()
}

fn main() {}

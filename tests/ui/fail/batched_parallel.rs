use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(reverse(width = 2))]
fn f(x: &[f64], n: usize) -> f64 {
    (0..n).into_par_iter().map(|i| x[i] * x[i]).sum()
}

fn main() {}

use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(reverse)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    x.par_iter().for_each(|v| {
        s += v * v;
    });
    s
}

fn main() {}

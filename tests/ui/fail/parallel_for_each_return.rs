use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(reverse)]
fn f(x: &[f64], y: &mut [f64]) {
    y.par_iter_mut().enumerate().for_each(|(i, yi)| {
        if x[i] < 0.0 {
            return;
        }
        *yi = x[i].sqrt();
    });
}

fn main() {}

use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(reverse)]
fn f(x: &[f64], y: &mut [f64]) {
    y.par_iter_mut().enumerate().for_each(|(i, yi)| {
        let mut s = x[i];
        for _ in 0..3 {
            s = s.sin() * s;
        }
        *yi = s;
    });
}

fn main() {}

use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(forward, reverse)]
fn f(x: &[f32], a: f64, y: &mut [f64]) {
    y.par_chunks_mut(1).enumerate().for_each(|(i, row)| {
        row[0] = a * x[i] as f64;
    });
}

fn main() {}

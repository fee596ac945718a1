use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(forward, reverse)]
pub fn rotate(x: f64, y: f64, a: f64) -> (f64, f64) {
    (x * a.cos() - y * a.sin(), x * a.sin() + y * a.cos())
}

// Several results of a call taken apart inside a rayon closure are not supported yet.
#[differentiate(forward, reverse)]
pub fn rotated_products(xs: &[f64], ys: &[f64], a: f64, out: &mut [f64]) {
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let (u, v) = rotate(xs[i], ys[i], a);
        *o = u * v;
    });
}

fn main() {}

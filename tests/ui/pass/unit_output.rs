//! A `()` function with a `&mut [f64]` output: `_fwd` updates the output's tangent in place
//! and returns `()`; `_rev` takes no seed (the output's shadow holds the seed) and returns
//! the adjoint of the scalar parameter; there is no `_grad`.
use phidiff::differentiate;

#[differentiate(forward, reverse)]
pub fn scale(x: &[f64], k: f64, out: &mut [f64]) {
    for i in 0..x.len() {
        out[i] = k * x[i] * x[i];
    }
}

fn main() {
    let _: fn(&[f64], &[f64], f64, f64, &mut [f64], &mut [f64]) = scale_fwd;
    let _: fn(&[f64], &mut [f64], f64, &mut [f64], &mut [f64]) -> f64 = scale_rev;

    let x = [1.0, 2.0];
    let mut out = [0.0; 2];
    let mut dout = [0.0; 2];
    scale_fwd(&x, &[0.0, 0.0], 3.0, 1.0, &mut out, &mut dout);
    assert_eq!(out, [3.0, 12.0]);
    assert_eq!(dout, [1.0, 4.0]);

    let mut dx = [0.0; 2];
    let mut out = [0.0; 2];
    let mut dout = [1.0, 1.0];
    let dk = scale_rev(&x, &mut dx, 3.0, &mut out, &mut dout);
    assert_eq!(dk, 5.0);
    assert_eq!(dx, [6.0, 12.0]);
}

//! `wrt(..)` restricts the active parameters: only they get tangents, shadows and gradients.
use phidiff::differentiate;

#[differentiate(forward, reverse, wrt(k))]
pub fn only_k(x: &[f64], k: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += (k * x[i]).sin();
    }
    s
}

#[differentiate(forward, reverse, wrt(x))]
pub fn only_x(x: &[f64], k: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += (k * x[i]).sin();
    }
    s
}

fn main() {
    let _: fn(&[f64], f64, f64, usize) -> (f64, f64) = only_k_fwd;
    let _: fn(&[f64], f64, usize, f64) -> (f64, f64) = only_k_rev;
    let _: fn(&[f64], f64, usize) -> (f64, f64) = only_k_grad;

    let _: fn(&[f64], &[f64], f64, usize) -> (f64, f64) = only_x_fwd;
    let _: fn(&[f64], &mut [f64], f64, usize, f64) -> f64 = only_x_rev;
    let _: fn(&[f64], f64, usize) -> (f64, Vec<f64>) = only_x_grad;

    let x = [0.5, 1.5];
    let (_, t) = only_k_fwd(&x, 0.3, 1.0, 2);
    let (_, g) = only_k_grad(&x, 0.3, 2);
    assert!((t - g).abs() < 1e-12);
    let (_, gx) = only_x_grad(&x, 0.3, 2);
    assert!((gx[0] - 0.3 * (0.3f64 * 0.5).cos()).abs() < 1e-12);
}

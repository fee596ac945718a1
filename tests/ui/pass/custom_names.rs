//! `forward(name = ..)` / `reverse(name = ..)`: custom names; `_grad` keeps the function's name.
use phidiff::differentiate;

#[differentiate(forward(name = e_tan), reverse(name = e_adj))]
pub fn energy(x: &[f64], k: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += k * x[i] * x[i];
    }
    s
}

fn main() {
    let _: fn(&[f64], &[f64], f64, f64, usize) -> (f64, f64) = e_tan;
    let _: fn(&[f64], &mut [f64], f64, usize, f64) -> (f64, f64) = e_adj;
    let _: fn(&[f64], f64, usize) -> (f64, (Vec<f64>, f64)) = energy_grad;

    let x = [1.0, 2.0, 3.0];
    let (v, t) = e_tan(&x, &[1.0, 0.0, 0.0], 2.0, 0.0, 3);
    assert_eq!(v, energy(&x, 2.0, 3));
    assert!((t - 4.0).abs() < 1e-12); // d/dx0 of 2·x0² at x0 = 1
    let mut dx = [0.0; 3];
    let (v2, dk) = e_adj(&x, &mut dx, 2.0, 3, 1.0);
    assert_eq!(v, v2);
    assert!((dk - 14.0).abs() < 1e-12);
    assert!((dx[2] - 12.0).abs() < 1e-12);
    let (v3, (gx, gk)) = energy_grad(&x, 2.0, 3);
    assert_eq!(v, v3);
    assert_eq!(gx.len(), 3);
    assert!((gk - dk).abs() < 1e-12);
}

//! Hessian-vector products by forward-over-reverse: the generic `_rev` instantiated with
//! `Dual<f64>` (primal inputs carry the direction v in `eps`, shadows start at dual zero,
//! the seed is the constant 1), so the `eps` parts of the adjoints are H·v. Checked
//! against Hessians derived by hand.

use super::classic::{himmelblau, himmelblau_rev, rosenbrock, rosenbrock_rev};
use super::statistics::log_sum_exp_rev;
use crate::common::*;
use phidiff::check::random_vector;
use phidiff::Dual;

fn dual(re: f64, eps: f64) -> Dual<f64> {
    Dual { re, eps }
}

/// Extended Rosenbrock gradient, by hand.
fn rosenbrock_gradient(x: &[f64]) -> Vec<f64> {
    let mut g = zeros(x.len());
    for i in 0..x.len() - 1 {
        let r = x[i + 1] - x[i] * x[i];
        g[i] += -400.0 * x[i] * r - 2.0 * (1.0 - x[i]);
        g[i + 1] += 200.0 * r;
    }
    g
}

/// Extended Rosenbrock Hessian, by hand: term i contributes
/// ∂²/∂xᵢ² = 1200xᵢ² − 400xᵢ₊₁ + 2, ∂²/∂xᵢ∂xᵢ₊₁ = −400xᵢ, ∂²/∂xᵢ₊₁² = 200.
fn rosenbrock_hessian(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut h = vec![zeros(n); n];
    for i in 0..n - 1 {
        h[i][i] += 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0;
        h[i][i + 1] += -400.0 * x[i];
        h[i + 1][i] += -400.0 * x[i];
        h[i + 1][i + 1] += 200.0;
    }
    h
}

/// Asserts `got ≈ H v` row by row, each to 1e-12 of Σⱼ |Hᵢⱼ vⱼ| (the rounding scale of the
/// row's sum).
fn assert_hv(what: &str, got: &[f64], h: &[Vec<f64>], v: &[f64]) {
    assert_eq!(got.len(), h.len(), "{what}: length");
    for (i, row) in h.iter().enumerate() {
        let want: f64 = row.iter().zip(v).map(|(a, b)| a * b).sum();
        let scale: f64 = row.iter().zip(v).map(|(a, b)| (a * b).abs()).sum();
        assert_close(
            &format!("{what}[{i}]"),
            got[i],
            want,
            0.0,
            1e-12 * scale + 1e-300,
        );
    }
}

fn rosenbrock_hvp(x: &[f64], v: &[f64]) -> (Dual<f64>, Vec<Dual<f64>>) {
    let xd: Vec<Dual<f64>> = x.iter().zip(v).map(|(&a, &b)| dual(a, b)).collect();
    let mut shadow = vec![dual(0.0, 0.0); x.len()];
    let value = rosenbrock_rev::<Dual<f64>>(&xd, &mut shadow, Dual::constant(1.0));
    (value, shadow)
}

pub fn rosenbrock_hessian_columns_at_published_point() {
    let x = [-1.2, 1.0, -1.2, 1.0];
    let h = rosenbrock_hessian(&x);
    for k in 0..4 {
        let mut e = zeros(4);
        e[k] = 1.0;
        let (value, shadow) = rosenbrock_hvp(&x, &e);
        assert_rel("value", &[value.re], &[532.4], 1e-12);
        let re: Vec<f64> = shadow.iter().map(|d| d.re).collect();
        assert_rel("gradient part", &re, &[-215.6, 792.0, -655.6, -88.0], 1e-12);
        let column: Vec<f64> = shadow.iter().map(|d| d.eps).collect();
        assert_hv(&format!("H e{k}"), &column, &h, &e);
    }
}

pub fn rosenbrock_hessian_vector_products() {
    let x = [0.3, -0.7, 1.1, 0.9, -1.4, 0.2];
    let g = rosenbrock_gradient(&x);
    let h = rosenbrock_hessian(&x);
    for seed in 0..3 {
        let v = random_vector((7 + seed) as _, x.len());
        let (value, shadow) = rosenbrock_hvp(&x, &v);
        assert_rel("value", &[value.re], &[rosenbrock(&x)], 1e-14);
        // the value's eps is the directional derivative ∇f·v
        let gv: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        let gv_scale: f64 = g.iter().zip(&v).map(|(a, b)| (a * b).abs()).sum();
        assert_close("∇f·v", value.eps, gv, 0.0, 1e-12 * gv_scale);
        let re: Vec<f64> = shadow.iter().map(|d| d.re).collect();
        assert_all_close("∇f", &re, &g, 1e-12, 1e-12);
        let hv: Vec<f64> = shadow.iter().map(|d| d.eps).collect();
        assert_hv("H v", &hv, &h, &v);
    }
}

pub fn himmelblau_hessian_vector_products() {
    // a = x² + y − 11, b = x + y² − 7:
    // fxx = 4a + 8x² + 2, fxy = 4x + 4y, fyy = 4b + 8y² + 2
    for (x, y) in [(0.0, 0.0), (-1.3, 2.7), (3.0, 2.0)] {
        let a = x * x + y - 11.0;
        let b = x + y * y - 7.0;
        let h = vec![
            vec![4.0 * a + 8.0 * x * x + 2.0, 4.0 * x + 4.0 * y],
            vec![4.0 * x + 4.0 * y, 4.0 * b + 8.0 * y * y + 2.0],
        ];
        for v in [[1.0, 0.0], [0.0, 1.0], [0.6, -1.7]] {
            let (value, gx, gy) =
                himmelblau_rev::<Dual<f64>>(dual(x, v[0]), dual(y, v[1]), Dual::constant(1.0));
            assert_rel("value", &[value.re], &[himmelblau(x, y)], 1e-14);
            let g = [4.0 * x * a + 2.0 * b, 2.0 * a + 4.0 * y * b];
            assert_all_close("∇f", &[gx.re, gy.re], &g, 1e-12, 1e-12);
            assert_hv("H v", &[gx.eps, gy.eps], &h, &v);
        }
    }
}

pub fn log_sum_exp_hessian_vector_products() {
    // H = diag(p) − p pᵀ with p = softmax(x)
    let x: [f64; 5] = [0.3, -1.2, 2.0, 0.7, 1.1];
    let z: f64 = x.iter().map(|v| v.exp()).sum();
    let p: Vec<f64> = x.iter().map(|v| v.exp() / z).collect();
    let h: Vec<Vec<f64>> = (0..5)
        .map(|i| {
            (0..5)
                .map(|j| if i == j { p[i] } else { 0.0 } - p[i] * p[j])
                .collect()
        })
        .collect();
    for seed in 0..3 {
        let v = random_vector((17 + seed) as _, 5);
        let xd: Vec<Dual<f64>> = x.iter().zip(&v).map(|(&a, &b)| dual(a, b)).collect();
        let mut shadow = vec![dual(0.0, 0.0); 5];
        log_sum_exp_rev::<Dual<f64>>(&xd, &mut shadow, Dual::constant(1.0));
        let re: Vec<f64> = shadow.iter().map(|d| d.re).collect();
        assert_all_close("∇ = p", &re, &p, 1e-13, 0.0);
        let hv: Vec<f64> = shadow.iter().map(|d| d.eps).collect();
        assert_hv("H v", &hv, &h, &v);
    }
}

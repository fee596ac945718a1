//! What the derivative tests share: tolerances, the finite-difference and dot-product
//! checks, and seeded vectors.
//!
//! Tolerances: finite differences `|g − fd| ≤ 1e-8 + 1e-6·max(|g|, |fd|)` (central
//! differences with step control reach ~1e-9 relative on these smooth functions); the
//! dot-product identity to 1e-12 relative (no truncation error, only rounding).
#![allow(dead_code)]

use phidiff::check::{self, Tolerance};

pub const FD: Tolerance = Tolerance {
    rel: 1e-6,
    abs: 1e-8,
};
pub const DOT_REL: f64 = 1e-12;
pub const TRIALS: usize = 4;

pub fn check_fd(name: &str, x: &[f64], f: impl Fn(&[f64]) -> f64, g: &[f64], tol: Tolerance) {
    check::gradient(f, x, g, tol).unwrap_or_else(|e| panic!("{name}: {e:?}"));
}

pub fn check_dot(
    name: &str,
    n_in: usize,
    n_out: usize,
    jvp: impl FnMut(&[f64]) -> Vec<f64>,
    vjp: impl FnMut(&[f64]) -> Vec<f64>,
) {
    check::dot_product(n_in, n_out, jvp, vjp, TRIALS, DOT_REL)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
}

pub fn seeded(seed: u64, n: usize, scale: f64) -> Vec<f64> {
    check::random_vector(seed, n)
        .iter()
        .map(|v| v * scale)
        .collect()
}

//! The parallel programs of the rayon benchmark (`benches/parallel.rs`) and its report
//! (`examples/parallel_report.rs`), each written three ways: with rayon and the default
//! summation-aware adjoint (`*_par`), with rayon and every shared adjoint addition atomic
//! (`*_atomic`, `parallel_adjoint = atomic`: ParDiff's "atomics everywhere" baseline), and
//! as serial loops (`*_serial`: the serial counter-indexed tape).
#![allow(dead_code)]
#![allow(clippy::needless_range_loop)]

use phidiff::differentiate;
use rayon::prelude::*;

/// One explicit heat step with a nonlinear conductivity, then `Σ out²`.
macro_rules! heat1d {
    ($name:ident, [$($opt:tt)*], par) => {
        #[differentiate(reverse $($opt)*)]
        pub fn $name(u: &[f64], out: &mut [f64], r: f64) -> f64 {
            let n = u.len();
            out.par_iter_mut().enumerate().for_each(|(i, o)| {
                if i > 0 && i < n - 1 {
                    *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.1 * u[i] * u[i]);
                } else {
                    *o = u[i];
                }
            });
            out.par_iter().map(|v| v * v).sum()
        }
    };
}
heat1d!(heat1d_par, [], par);
heat1d!(heat1d_atomic, [, parallel_adjoint = atomic], par);

#[differentiate(reverse)]
pub fn heat1d_serial(u: &[f64], out: &mut [f64], r: f64) -> f64 {
    let n = u.len();
    for i in 0..n {
        if i > 0 && i < n - 1 {
            out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.1 * u[i] * u[i]);
        } else {
            out[i] = u[i];
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        s += out[i] * out[i];
    }
    s
}

/// One 2-D heat step on rows of width `n` (parallel over rows), then `Σ out²`.
macro_rules! heat2d {
    ($name:ident, [$($opt:tt)*]) => {
        #[differentiate(reverse $($opt)*)]
        pub fn $name(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
            let m = u.len() / n;
            out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                for j in 0..row.len() {
                    if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                        let c = u[i * n + j];
                        let lap = u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1]
                            + u[i * n + j + 1]
                            - 4.0 * c;
                        row[j] = c + r * lap * (1.0 + 0.1 * c * c);
                    } else {
                        row[j] = u[i * n + j];
                    }
                }
            });
            out.par_iter().map(|v| v * v).sum()
        }
    };
}
heat2d!(heat2d_par, []);
heat2d!(heat2d_atomic, [, parallel_adjoint = atomic]);
// The same step differentiated over the field `u` alone (`out` is where it is written):
// the scoreboard's stencil, whose peers all take the gradient over the field only.
heat2d!(heat2d_field, [, wrt(u, out)]);

#[differentiate(reverse)]
pub fn heat2d_serial(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
    let m = u.len() / n;
    for i in 0..m {
        for j in 0..n {
            if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                let c = u[i * n + j];
                let lap =
                    u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]
                        - 4.0 * c;
                out[i * n + j] = c + r * lap * (1.0 + 0.1 * c * c);
            } else {
                out[i * n + j] = u[i * n + j];
            }
        }
    }
    let mut s = 0.0;
    for i in 0..m * n {
        s += out[i] * out[i];
    }
    s
}

/// `Σᵢ sin(0.3·x[idx[i]])·x[i]`: a gather whose adjoint scatters at computed indices.
macro_rules! gather {
    ($name:ident, [$($opt:tt)*]) => {
        #[differentiate(reverse, wrt(x) $($opt)*)]
        pub fn $name(x: &[f64], idx: &[usize]) -> f64 {
            (0..idx.len())
                .into_par_iter()
                .map(|i| (0.3 * x[idx[i]]).sin() * x[i])
                .sum::<f64>()
        }
    };
}
gather!(gather_par, []);
gather!(gather_atomic, [, parallel_adjoint = atomic]);

#[differentiate(reverse, wrt(x))]
pub fn gather_serial(x: &[f64], idx: &[usize]) -> f64 {
    let mut s = 0.0;
    for i in 0..idx.len() {
        s += (0.3 * x[idx[i]]).sin() * x[i];
    }
    s
}

/// A Gaussian-mixture log-likelihood (isotropic, unit variance) parallel over points.
macro_rules! gmm {
    ($name:ident, [$($opt:tt)*]) => {
        #[differentiate(reverse, wrt(means, w) $($opt)*)]
        pub fn $name(x: &[f64], means: &[f64], w: &[f64], d: usize) -> f64 {
            let k = w.len();
            let n = x.len() / d;
            (0..n)
                .into_par_iter()
                .map(|i| {
                    let mut total = 0.0;
                    for c in 0..k {
                        let mut s = 0.0;
                        for j in 0..d {
                            let t = x[i * d + j] - means[c * d + j];
                            s += t * t;
                        }
                        total += w[c].exp() * (-0.5 * s).exp();
                    }
                    total.ln()
                })
                .sum::<f64>()
        }
    };
}
gmm!(gmm_par, []);
gmm!(gmm_atomic, [, parallel_adjoint = atomic]);

#[differentiate(reverse, wrt(means, w))]
pub fn gmm_serial(x: &[f64], means: &[f64], w: &[f64], d: usize) -> f64 {
    let k = w.len();
    let n = x.len() / d;
    let mut ll = 0.0;
    for i in 0..n {
        let mut total = 0.0;
        for c in 0..k {
            let mut s = 0.0;
            for j in 0..d {
                let t = x[i * d + j] - means[c * d + j];
                s += t * t;
            }
            total += w[c].exp() * (-0.5 * s).exp();
        }
        ll += total.ln();
    }
    ll
}

/// Deterministic pseudo-random indices below `m`.
pub fn indices(n: usize, m: usize) -> Vec<usize> {
    let mut s = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % m as u64) as usize
        })
        .collect()
}

/// A smooth field of `n` values.
pub fn field(n: usize) -> Vec<f64> {
    (0..n).map(|k| (k as f64 * 1e-3).sin() + 1.0).collect()
}

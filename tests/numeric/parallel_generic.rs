//! Generic rayon loops (issue 45, D3): a `T: Float` parallel loop that reads at computed
//! indices adds its adjoints there through per-lane copies (`for_each_owned_scatter_copies`),
//! since a generic `T` may be `Dual<f64>`, which has no atomic add. Checked with `f64`
//! against finite differences and the dot-product test (`TOLS`), and with `Dual<f64>`
//! (Hessian-vector products, forward over reverse) against central differences of the
//! `f64` gradient (rel 1e-6, abs 1e-8: one more finite-difference step than `TOLS`
//! allows for, on gradients of size about 1).

use super::differentiate;
use crate::common::*;
use phidiff::{Dual, Float};
use rayon::prelude::*;

/// Reads the mirrored element, the next one around the ring and a gathered one.
#[differentiate(forward, reverse, wrt(u, out))]
pub fn mirror_ring<T: Float>(u: &[T], idx: &[usize], out: &mut [T]) -> T {
    let n = u.len();
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        *o = u[n - 1 - i] * u[i] + (u[(i + 1) % n] * u[idx[i]]).sin();
    });
    out.par_iter().map(|v| *v * *v).sum::<T>()
}

/// A parallel sum of gathered squares inside a time loop that rescales the state.
#[differentiate(forward, reverse, wrt(u0))]
pub fn gathered_steps<T: Float>(u0: &[T], idx: &[usize], steps: usize) -> T {
    let n = u0.len();
    let mut u = u0.to_vec();
    for _ in 0..steps {
        let e = (0..idx.len())
            .into_par_iter()
            .map(|i| u[idx[i]] * u[idx[i]])
            .sum::<T>();
        for i in 0..n {
            u[i] = (u[i] * e).tanh();
        }
    }
    let mut s = T::zero();
    for i in 0..n {
        s += u[i];
    }
    s
}

fn indices(n: usize) -> Vec<usize> {
    (0..n).map(|i| (i * 7 + 3) % n).collect()
}

fn point(n: usize) -> Vec<f64> {
    (0..n).map(|i| 0.4 + 0.3 * (1.3 * i as f64).sin()).collect()
}

/// `f`'s gradient at `x` by `grad`, and `H v` by `hvp`, against central differences of
/// the gradient along `v`.
fn check_hvp(
    name: &str,
    x: &[f64],
    grad: &dyn Fn(&[f64]) -> Vec<f64>,
    hvp: &dyn Fn(&[f64], &[f64]) -> (Vec<f64>, Vec<f64>),
) {
    for trial in 0..2 {
        let v = phidiff::check::random_vector(300 + trial, x.len());
        let (g, hv) = hvp(x, &v);
        assert_all_close(&format!("{name}: Dual's real part"), &g, &grad(x), 1e-13, 1e-14);
        let h = 1e-5;
        let at = |t: f64| grad(&x.iter().zip(&v).map(|(a, b)| a + t * b).collect::<Vec<_>>());
        let (gp, gm) = (at(h), at(-h));
        let fd: Vec<f64> = gp.iter().zip(&gm).map(|(p, m)| (p - m) / (2.0 * h)).collect();
        assert_all_close(&format!("{name}: H·v (trial {trial})"), &hv, &fd, 1e-6, 1e-8);
    }
}

pub fn generic_ring_gather_with_duals() {
    let n = 9;
    let idx = indices(n);
    let x = point(n);
    let primal = |u: &[f64]| mirror_ring(u, &idx, &mut zeros(n));
    check_grad(
        "mirror_ring",
        &x,
        &primal,
        &|u| {
            let (mut du, mut out, mut dout) = (zeros(n), zeros(n), zeros(n));
            let v = mirror_ring_rev(u, &mut du, &idx, &mut out, &mut dout, 1.0);
            (v, du)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "mirror_ring",
        x: &x,
        primal: &|u| {
            let mut out = zeros(n);
            let s = mirror_ring(u, &idx, &mut out);
            out.push(s);
            out
        },
        jvp: &|u, d| {
            let (mut out, mut dout) = (zeros(n), zeros(n));
            let (s, ds) = mirror_ring_fwd(u, d, &idx, &mut out, &mut dout);
            out.push(s);
            dout.push(ds);
            (out, dout)
        },
        vjp: &|u, w| {
            let (mut du, mut out, mut dout) = (zeros(n), zeros(n), w[..n].to_vec());
            let s = mirror_ring_rev(u, &mut du, &idx, &mut out, &mut dout, w[n]);
            out.push(s);
            (out, du)
        },
        tols: TOLS,
    });
    let grad = |u: &[f64]| {
        let (mut du, mut out, mut dout) = (zeros(n), zeros(n), zeros(n));
        mirror_ring_rev(u, &mut du, &idx, &mut out, &mut dout, 1.0);
        du
    };
    check_hvp("mirror_ring", &x, &grad, &|u, v| {
        let ud: Vec<Dual<f64>> = u.iter().zip(v).map(|(&a, &b)| Dual { re: a, eps: b }).collect();
        let zero = Dual::constant(0.0);
        let (mut du, mut out, mut dout) = (vec![zero; n], vec![zero; n], vec![zero; n]);
        mirror_ring_rev(&ud, &mut du, &idx, &mut out, &mut dout, Dual::constant(1.0));
        (du.iter().map(|d| d.re).collect(), du.iter().map(|d| d.eps).collect())
    });
}

pub fn generic_gathered_steps_with_duals() {
    let n = 6;
    let idx = indices(n);
    let x: Vec<f64> = point(n).iter().map(|v| 0.5 * v).collect();
    check_grad(
        "gathered_steps",
        &x,
        &|u| gathered_steps(u, &idx, 3),
        &|u| gathered_steps_grad(u, &idx, 3),
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "gathered_steps",
        x: &x,
        primal: &|u| vec![gathered_steps(u, &idx, 3)],
        jvp: &|u, d| {
            let (v, t) = gathered_steps_fwd(u, d, &idx, 3);
            (vec![v], vec![t])
        },
        vjp: &|u, s| {
            let mut du = zeros(n);
            let v = gathered_steps_rev(u, &mut du, &idx, 3, s[0]);
            (vec![v], du)
        },
        tols: TOLS,
    });
    check_hvp("gathered_steps", &x, &|u| gathered_steps_grad(u, &idx, 3).1, &|u, v| {
        let ud: Vec<Dual<f64>> = u.iter().zip(v).map(|(&a, &b)| Dual { re: a, eps: b }).collect();
        let mut du = vec![Dual::constant(0.0); n];
        gathered_steps_rev(&ud, &mut du, &idx, 3, Dual::constant(1.0));
        (du.iter().map(|d| d.re).collect(), du.iter().map(|d| d.eps).collect())
    });
}

//! Parallel sums over what a parallel loop just wrote: the sum moves into the writing
//! loop (`lower::fuse_sums_into_writers`), and `_rev` reverses each element right after
//! computing it. Checked against the same computation as serial loops, finite differences
//! and the dot-product test. (`parallel_rows.rs` has the same for rows of a 2-D grid.)

use super::differentiate;
use super::parallel::input;
use crate::common::*;
use rayon::prelude::*;

/// A parallel stencil with a gather, then a parallel sum over what it wrote: the sum moves
/// into the writer (`lower::fuse_sums_into_writers`) and each element's adjoint runs right
/// after the element, reading the user's shadow of `out` as it comes in.
#[differentiate(forward, reverse)]
pub fn smooth_par(u: &[f64], out: &mut [f64], r: f64, idx: &[usize]) -> f64 {
    let n = u.len();
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        if i > 0 && i < n - 1 {
            *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[idx[i]];
        } else {
            *o = u[i];
        }
    });
    out.par_iter().map(|v| v * v).sum()
}

/// [`smooth_par`] as serial loops.
#[differentiate(forward, reverse)]
pub fn smooth_serial(u: &[f64], out: &mut [f64], r: f64, idx: &[usize]) -> f64 {
    let n = u.len();
    for i in 0..n {
        if i > 0 && i < n - 1 {
            out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[idx[i]];
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

pub fn writer_then_sum_with_gather() {
    let n = 10;
    let u = input(n);
    let idx: Vec<usize> = (0..n).map(|i| (7 * i + 3) % n).collect();
    let idx = &idx[..];
    let r = 0.3;
    // Outputs: the value and the final `out`; inputs: `u` and `r`.
    type Rev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, &[usize], f64) -> (f64, f64);
    let vjp_of = |rev: Rev| {
        move |p: &[f64], w: &[f64]| {
            let (mut du, mut out, mut dout) = (zeros(n), zeros(n), w[1..].to_vec());
            let (v, dr) = rev(&p[..n], &mut du, &mut out, &mut dout, p[n], idx, w[0]);
            let mut y = vec![v];
            y.extend(out);
            du.push(dr);
            (y, du)
        }
    };
    let point = cat(&[&u, &[r]]);
    let w: Vec<f64> = (0..=n).map(|k| 0.5 + 0.1 * k as f64).collect();
    let (y_p, g_p) = vjp_of(smooth_par_rev)(&point, &w);
    let (y_s, g_s) = vjp_of(smooth_serial_rev)(&point, &w);
    let mut out = zeros(n);
    assert_close(
        "smooth_par: primal",
        smooth_par(&u, &mut out, r, idx),
        smooth_serial(&u, &mut zeros(n), r, idx),
        1e-12,
        0.0,
    );
    assert_all_close("smooth_par: value and out", &y_p, &y_s, 1e-12, 1e-15);
    assert_all_close("smooth_par: adjoint", &g_p, &g_s, 1e-12, 1e-15);
    check_fwd_rev(&Case {
        name: "smooth_par",
        x: &point,
        primal: &|p| {
            let mut out = zeros(n);
            let v = smooth_par(&p[..n], &mut out, p[n], idx);
            cat(&[&[v], &out])
        },
        jvp: &|p, d| {
            let (mut out, mut dout) = (zeros(n), zeros(n));
            let (v, t) = smooth_par_fwd(&p[..n], &d[..n], &mut out, &mut dout, p[n], d[n], idx);
            (cat(&[&[v], &out]), cat(&[&[t], &dout]))
        },
        vjp: &vjp_of(smooth_par_rev),
        tols: TOLS,
    });
}

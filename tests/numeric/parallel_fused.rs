//! Parallel sums over what a parallel loop just wrote: the sum moves into the writing
//! loop (`lower::fuse_sums_into_writers`), and `_rev` reverses each element right after
//! computing it. Checked against the same computation as serial loops, finite differences
//! and the dot-product test. (`parallel_rows.rs` has the same for rows of a 2-D grid.)
//!
//! Rows written other than by one loop over the row (its interior and its ends apart,
//! elements skipped, read back in the row) have their sum added by a loop of its own at
//! the end of the row's iteration.

use super::differentiate;
use super::parallel::{input, same_on_1_2_8_threads, Across};
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

/// The 2-D heat step of `parallel_rows::heat2d_par` written as a user tuning it would: the
/// boundary rows copied, and each inner row's two ends stored apart from its interior
/// loop, which then has no branch. The rows are written in two branches and three
/// places, so the sum is added by a loop at the end of each row's iteration.
#[differentiate(forward, reverse)]
pub fn heat2d_split_par(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
    let m = u.len() / n;
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        if i == 0 || i == m - 1 {
            for j in 0..n {
                row[j] = u[i * n + j];
            }
        } else {
            row[0] = u[i * n];
            for j in 1..n - 1 {
                let c = u[i * n + j];
                let lap = u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1]
                    + u[i * n + j + 1]
                    - 4.0 * c;
                row[j] = c + r * lap * (1.0 + 0.1 * c * c);
            }
            row[n - 1] = u[i * n + n - 1];
        }
    });
    out.par_iter().map(|v| v * v).sum()
}

/// Rows that keep their first element (the caller's value: its adjoint passes through
/// to `dout`) and read back what the row just wrote (a damped running sum), then a sum
/// of cubes.
#[differentiate(forward, reverse)]
pub fn row_scan_par(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for j in 1..row.len() {
            row[j] = 0.5 * row[j - 1] + r * u[i * n + j].sin();
        }
    });
    out.par_iter().map(|v| v * v * v).sum()
}

/// [`row_scan_par`] as serial loops.
#[differentiate(forward, reverse)]
pub fn row_scan_serial(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
    let m = (u.len() + n - 1) / n;
    for i in 0..m {
        let w = if n <= u.len() - i * n { n } else { u.len() - i * n };
        for j in 1..w {
            out[i * n + j] = 0.5 * out[i * n + j - 1] + r * u[i * n + j].sin();
        }
    }
    let mut s = 0.0;
    for i in 0..u.len() {
        s += out[i] * out[i] * out[i];
    }
    s
}

type RowsRev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64);
type RowsFwd = fn(&[f64], &[f64], &mut [f64], &mut [f64], f64, f64, usize) -> (f64, f64);
type RowsPrimal = fn(&[f64], &mut [f64], f64, usize) -> f64;

/// `par` against `serial` (values, the written buffer, `ū`, `r̄` and `dout` on exit: the
/// adjoint of `out`'s initial value), then `par`'s `_fwd` and `_rev` against finite
/// differences and each other, on the point `(u, out₀, r)` with outputs `(out, value)`.
/// Rows of `n`, `len` elements: a short last row when `n` does not divide `len`.
fn check_whole_rows(
    name: &str,
    (par, par_fwd, par_rev): (RowsPrimal, RowsFwd, RowsRev),
    (serial, serial_rev): (RowsPrimal, RowsRev),
    len: usize,
    n: usize,
) {
    let u: Vec<f64> = (0..len).map(|k| (k as f64 * 0.37).sin() + 1.0).collect();
    let out0: Vec<f64> = (0..len).map(|k| (k as f64 * 0.53).cos()).collect();
    let w: Vec<f64> = (0..len).map(|k| ((k % 5) as f64) * 0.25 - 0.5).collect();
    let rev = |f: RowsRev| {
        let (mut du, mut out, mut dout) = (zeros(len), out0.clone(), w.clone());
        let (v, dr) = f(&u, &mut du, &mut out, &mut dout, 0.2, n, 0.7);
        (v, dr, du, out, dout)
    };
    let (v_p, dr_p, du_p, out_p, dout_p) = rev(par_rev);
    let (v_s, dr_s, du_s, out_s, dout_s) = rev(serial_rev);
    let (mut out, mut out_serial) = (out0.clone(), out0.clone());
    let v = par(&u, &mut out, 0.2, n);
    assert_close(&format!("{name}: primal"), v, serial(&u, &mut out_serial, 0.2, n), 1e-12, 0.0);
    assert_all_close(&format!("{name}: primal out"), &out, &out_serial, 0.0, 0.0);
    assert_close(&format!("{name}: primal against _rev"), v, v_s, 1e-12, 0.0);
    assert_all_close(&format!("{name}: out"), &out_p, &out_s, 1e-15, 0.0);
    assert_close(&format!("{name}: value"), v_p, v_s, 1e-12, 0.0);
    assert_all_close(&format!("{name}: ū"), &du_p, &du_s, 1e-12, 1e-14);
    assert_all_close(&format!("{name}: dout on exit"), &dout_p, &dout_s, 1e-12, 1e-14);
    assert_close(&format!("{name}: r̄"), dr_p, dr_s, 1e-12, 1e-14);
    let point = cat(&[&u, &out0, &[0.2]]);
    let split = |p: &[f64]| (p[..len].to_vec(), p[len..2 * len].to_vec(), p[2 * len]);
    check_fwd_rev(&Case {
        name,
        x: &point,
        primal: &|p| {
            let (u, mut out, r) = split(p);
            let s = par(&u, &mut out, r, n);
            cat(&[&out, &[s]])
        },
        jvp: &|p, d| {
            let (u, mut out, r) = split(p);
            let (du, mut dout, dr) = split(d);
            let (s, ds) = par_fwd(&u, &du, &mut out, &mut dout, r, dr, n);
            (cat(&[&out, &[s]]), cat(&[&dout, &[ds]]))
        },
        vjp: &|p, wt| {
            let (u, mut out, r) = split(p);
            let (mut du, mut dout) = (zeros(len), wt[..len].to_vec());
            let (s, dr) = par_rev(&u, &mut du, &mut out, &mut dout, r, n, wt[len]);
            (cat(&[&out, &[s]]), cat(&[&du, &dout, &[dr]]))
        },
        tols: TOLS,
    });
}

pub fn whole_rows_then_sum() {
    use super::parallel_rows::{heat2d_serial, heat2d_serial_rev};
    // 6 rows of 5; `row_scan_par` also with a short last row (23 = 4·5 + 3).
    check_whole_rows(
        "heat2d_split_par",
        (heat2d_split_par, heat2d_split_par_fwd, heat2d_split_par_rev),
        (heat2d_serial, heat2d_serial_rev),
        30,
        5,
    );
    for len in [30, 23] {
        check_whole_rows(
            "row_scan_par",
            (row_scan_par, row_scan_par_fwd, row_scan_par_rev),
            (row_scan_serial, row_scan_serial_rev),
            len,
            5,
        );
    }
    // 700 rows of 37, more than one block of rows: the value and adjoints do not depend
    // on the thread count.
    let (m, n) = (700, 37);
    let u: Vec<f64> = (0..m * n).map(|k| (k as f64 * 0.37).sin() + 1.0).collect();
    for (name, rev) in [
        ("heat2d_split_par", heat2d_split_par_rev as RowsRev),
        ("row_scan_par", row_scan_par_rev),
    ] {
        same_on_1_2_8_threads(name, Across::Bitwise, || {
            let (mut du, mut out, mut dout) = (zeros(m * n), zeros(m * n), zeros(m * n));
            let (v, dr) = rev(&u, &mut du, &mut out, &mut dout, 0.2, n, 1.0);
            (v, dr, du)
        });
    }
}

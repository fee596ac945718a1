//! The user's rayon loops over the rows of a flat 2-D grid (`par_chunks_mut(n)`): a heat
//! step and a periodic Burgers step, each beside the same computation as serial loops,
//! with the checks of `parallel.rs` (equal gradients, 1/2/8 threads, finite differences,
//! the dot-product test); and a parallel loop whose body walks a packed triangle with a
//! counter.

use super::differentiate;
use super::parallel::{same_on_1_2_8_threads, Across};
use crate::common::*;
use rayon::prelude::*;

/// One step of the 2-D heat equation on an `m × n` grid stored by rows, parallel over
/// the rows (`par_chunks_mut`): the adjoint adds into the rows above and below (a row
/// gather) and into the neighbours in the row (its own row).
#[differentiate(forward, reverse)]
pub fn heat2d_par(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
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

/// [`heat2d_par`] as serial loops.
#[differentiate(forward, reverse)]
pub fn heat2d_serial(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
    let m = u.len() / n;
    for i in 0..m {
        for j in 0..n {
            if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                let c = u[i * n + j];
                let lap = u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1]
                    + u[i * n + j + 1]
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

pub fn heat2d_rows_parallel_equal_serial() {
    type Rev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64);
    // 700 rows of 37: more rows than one block of iterations.
    let (m, n) = (700, 37);
    let u: Vec<f64> = (0..m * n).map(|k| (k as f64 * 0.37).sin() + 1.0).collect();
    let seed: Vec<f64> = (0..m * n).map(|k| ((k % 5) as f64) * 0.25 - 0.5).collect();
    let rev = |f: Rev| {
        let (mut du, mut out, mut dout) = (zeros(m * n), zeros(m * n), seed.clone());
        let (v, dr) = f(&u, &mut du, &mut out, &mut dout, 0.2, n, 1.0);
        (v, dr, du, out)
    };
    let (v_p, dr_p, du_p, out_p) = rev(heat2d_par_rev);
    let (v_s, dr_s, du_s, out_s) = rev(heat2d_serial_rev);
    assert_all_close("heat2d: step", &out_p, &out_s, 0.0, 0.0);
    let (mut a, mut b) = (zeros(m * n), zeros(m * n));
    let pa = heat2d_par(&u, &mut a, 0.2, n);
    let pb = heat2d_serial(&u, &mut b, 0.2, n);
    assert_all_close("heat2d: primal step", &a, &b, 0.0, 0.0);
    assert_close("heat2d: primal", pa, pb, 1e-12, 0.0);
    assert_close("heat2d: value", v_p, v_s, 1e-12, 0.0);
    assert_all_close("heat2d: ū", &du_p, &du_s, 1e-12, 1e-14);
    assert_close("heat2d: r̄", dr_p, dr_s, 1e-12, 1e-14);
    same_on_1_2_8_threads("heat2d", Across::Bitwise, || {
        let (v, dr, du, _) = rev(heat2d_par_rev);
        (v, dr, du)
    });
    // A grid whose width does not divide the length: a short last row.
    let (m, n) = (5, 4);
    let mut point: Vec<f64> = (0..m * n + 2).map(|k| (k as f64 * 0.9).cos() + 1.2).collect();
    point.push(0.15);
    let len = m * n + 2;
    check_fwd_rev(&Case {
        name: "heat2d_par",
        x: &point,
        primal: &|p| {
            let mut out = zeros(len);
            let s = heat2d_par(&p[..len], &mut out, p[len], n);
            out.push(s);
            out
        },
        jvp: &|p, d| {
            let (mut out, mut dout) = (zeros(len), zeros(len));
            let (s, ds) = heat2d_par_fwd(&p[..len], &d[..len], &mut out, &mut dout, p[len], d[len], n);
            out.push(s);
            dout.push(ds);
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut du, mut out, mut dout) = (zeros(len), zeros(len), w[..len].to_vec());
            let (s, dr) = heat2d_par_rev(&p[..len], &mut du, &mut out, &mut dout, p[len], n, w[len]);
            out.push(s);
            du.push(dr);
            (out, du)
        },
        tols: TOLS,
    });
}

/// Per output element, in parallel: a packed lower triangle walked by a counter `li` from
/// `p % 3`, through a chain of `tanh`s. The coarse reverse sweep runs `li` backwards from
/// its final value in each element's adjoint (`analysis::reuse::Backward`).
#[differentiate(forward, reverse)]
pub fn packed_rows_par(l: &[f64], x: &[f64], out: &mut [f64]) -> f64 {
    let d = x.len();
    out.par_iter_mut().enumerate().for_each(|(p, o)| {
        let mut li = p % 3;
        let mut acc = 0.0;
        for c in 0..d {
            for r in c + 1..d {
                acc += l[li] * x[c] * x[r].cos();
                li += 1;
            }
            acc = acc.tanh();
        }
        *o = acc;
    });
    out.par_iter().map(|v| v * v).sum()
}

pub fn packed_rows_par_matches_finite_differences() {
    // `li` reaches 2 + d(d − 1)/2 − 1 = 11.
    let (nl, d, m) = (12, 5, 6);
    let point: Vec<f64> = (0..nl + d).map(|k| (0.37 * k as f64).sin() + 0.2).collect();
    let primal = |p: &[f64]| {
        let mut out = zeros(m);
        let s = packed_rows_par(&p[..nl], &p[nl..], &mut out);
        out.push(s);
        out
    };
    check_fwd_rev(&Case {
        name: "packed_rows_par",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut out, mut dout) = (zeros(m), zeros(m));
            let (s, ds) = packed_rows_par_fwd(&p[..nl], &v[..nl], &p[nl..], &v[nl..], &mut out, &mut dout);
            out.push(s);
            dout.push(ds);
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut gl, mut gx, mut out, mut dout) = (zeros(nl), zeros(d), zeros(m), w[..m].to_vec());
            packed_rows_par_rev(&p[..nl], &mut gl, &p[nl..], &mut gx, &mut out, &mut dout, w[m]);
            (primal(p), cat(&[&gl, &gx]))
        },
        tols: TOLS,
    });
    same_on_1_2_8_threads("packed_rows_par", Across::Bitwise, || {
        let (mut gl, mut gx, mut out, mut dout) = (zeros(nl), zeros(d), zeros(m), vec![0.5; m]);
        let v = packed_rows_par_rev(&point[..nl], &mut gl, &point[nl..], &mut gx, &mut out, &mut dout, 1.0);
        (v, gl, gx)
    });
}

/// One explicit step of 2-D viscous Burgers on a periodic `m × n` grid stored by rows,
/// parallel over the rows, upwinded by the sign of the velocity in each direction: the
/// neighbours `((i ± 1) mod m)·n + j` and `i·n + (j ± 1) mod n` are computed indices.
#[differentiate(forward, reverse)]
pub fn burgers2d_par(u: &[f64], next: &mut [f64], nu: f64, n: usize) -> f64 {
    let m = u.len() / n;
    let h = 1.0 / n as f64;
    next.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for j in 0..n {
            let c = u[i * n + j];
            let w = u[i * n + (j + n - 1) % n];
            let e = u[i * n + (j + 1) % n];
            let s = u[((i + m - 1) % m) * n + j];
            let no = u[((i + 1) % m) * n + j];
            let adv = if c >= 0.0 { c * (c - w) + c * (c - s) } else { c * (e - c) + c * (no - c) };
            row[j] = c + 1e-3 * (nu * (w + e + s + no - 4.0 * c) / (h * h) - adv / h);
        }
    });
    next.par_iter().map(|v| v * v).sum()
}

/// [`burgers2d_par`] as serial loops.
#[differentiate(forward, reverse)]
pub fn burgers2d_serial(u: &[f64], next: &mut [f64], nu: f64, n: usize) -> f64 {
    let m = u.len() / n;
    let h = 1.0 / n as f64;
    for i in 0..m {
        for j in 0..n {
            let c = u[i * n + j];
            let w = u[i * n + (j + n - 1) % n];
            let e = u[i * n + (j + 1) % n];
            let s = u[((i + m - 1) % m) * n + j];
            let no = u[((i + 1) % m) * n + j];
            let adv = if c >= 0.0 { c * (c - w) + c * (c - s) } else { c * (e - c) + c * (no - c) };
            next[i * n + j] = c + 1e-3 * (nu * (w + e + s + no - 4.0 * c) / (h * h) - adv / h);
        }
    }
    let mut t = 0.0;
    for k in 0..m * n {
        t += next[k] * next[k];
    }
    t
}

pub fn burgers2d_rows_parallel_equal_serial() {
    type Rev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64);
    let (m, n) = (600, 24);
    let u: Vec<f64> = (0..m * n)
        .map(|k| ((k / n) as f64 * 0.05).sin() + ((k % n) as f64 * 0.3).cos() * 0.5)
        .collect();
    let rev = |f: Rev| {
        let (mut du, mut next, mut dnext) = (zeros(m * n), zeros(m * n), zeros(m * n));
        let (v, dnu) = f(&u, &mut du, &mut next, &mut dnext, 0.01, n, 1.0);
        (v, dnu, du, next)
    };
    let (v_p, dnu_p, du_p, next_p) = rev(burgers2d_par_rev);
    let (v_s, dnu_s, du_s, next_s) = rev(burgers2d_serial_rev);
    assert_all_close("burgers2d: step", &next_p, &next_s, 0.0, 0.0);
    let (mut a, mut b) = (zeros(m * n), zeros(m * n));
    let pa = burgers2d_par(&u, &mut a, 0.01, n);
    let pb = burgers2d_serial(&u, &mut b, 0.01, n);
    assert_all_close("burgers2d: primal step", &a, &b, 0.0, 0.0);
    assert_close("burgers2d: primal", pa, pb, 1e-12, 0.0);
    assert_close("burgers2d: value", v_p, v_s, 1e-12, 0.0);
    assert_all_close("burgers2d: ū", &du_p, &du_s, 1e-12, 1e-14);
    assert_close("burgers2d: ν̄", dnu_p, dnu_s, 1e-12, 1e-14);
    same_on_1_2_8_threads("burgers2d", Across::Rounding, || {
        let (v, dnu, du, _) = rev(burgers2d_par_rev);
        (v, dnu, du)
    });
    // Velocities away from 0: the upwind switch is a kink that finite differences straddle.
    let (m, n) = (4, 3);
    let mut point: Vec<f64> = (0..m * n)
        .map(|k| (k as f64 * 0.9).sin() * 0.5 + if k % 2 == 0 { 0.9 } else { -0.9 })
        .collect();
    point.push(0.02);
    let len = m * n;
    check_fwd_rev(&Case {
        name: "burgers2d_par",
        x: &point,
        primal: &|p| {
            let mut next = zeros(len);
            let s = burgers2d_par(&p[..len], &mut next, p[len], n);
            next.push(s);
            next
        },
        jvp: &|p, d| {
            let (mut next, mut dnext) = (zeros(len), zeros(len));
            let (s, ds) =
                burgers2d_par_fwd(&p[..len], &d[..len], &mut next, &mut dnext, p[len], d[len], n);
            next.push(s);
            dnext.push(ds);
            (next, dnext)
        },
        vjp: &|p, w| {
            let (mut du, mut next, mut dnext) = (zeros(len), zeros(len), w[..len].to_vec());
            let (s, dnu) = burgers2d_par_rev(&p[..len], &mut du, &mut next, &mut dnext, p[len], n, w[len]);
            next.push(s);
            du.push(dnu);
            (next, du)
        },
        tols: TOLS,
    });
}

/// Issue 45, D2: row `i` reads the row above as `u[i·w + j − w]` (a `− w` the adjoint must
/// see as the row before, not as a column of row `i`).
#[differentiate(forward, reverse)]
pub fn rows_up_par(u: &[f64], out: &mut [f64], w: usize) {
    out.par_chunks_mut(w).enumerate().for_each(|(i, row)| {
        for j in 0..row.len() {
            let up = if i > 0 { u[i * w + j - w] } else { 0.0 };
            row[j] = up * u[i * w + j];
        }
    });
}

/// [`rows_up_par`] as a serial loop.
#[differentiate(forward, reverse)]
pub fn rows_up_serial(u: &[f64], out: &mut [f64], w: usize) {
    for k in 0..out.len() {
        let up = if k >= w { u[k - w] } else { 0.0 };
        out[k] = up * u[k];
    }
}

/// Row `i` reads the row below as `u[i·w + j + w]` and the next element as `u[c + 1]`,
/// which at the row's end is the first element of the next row.
#[differentiate(forward, reverse)]
pub fn rows_down_par(u: &[f64], out: &mut [f64], w: usize) {
    let n = u.len();
    out.par_chunks_mut(w).enumerate().for_each(|(i, row)| {
        for j in 0..row.len() {
            let down = if i * w + j + w < n { u[i * w + j + w] } else { 0.0 };
            let c = i * w + j;
            let next = if c + 1 < n { u[c + 1] } else { 0.0 };
            row[j] = down * u[c] + next.sin();
        }
    });
}

/// [`rows_down_par`] as a serial loop.
#[differentiate(forward, reverse)]
pub fn rows_down_serial(u: &[f64], out: &mut [f64], w: usize) {
    let n = u.len();
    for c in 0..out.len() {
        let down = if c + w < n { u[c + w] } else { 0.0 };
        let next = if c + 1 < n { u[c + 1] } else { 0.0 };
        out[c] = down * u[c] + next.sin();
    }
}

type NeighbourRev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], usize);
type NeighbourFwd = fn(&[f64], &[f64], &mut [f64], &mut [f64], usize);
type NeighbourPrimal = fn(&[f64], &mut [f64], usize);

/// A row-parallel function of `u` into `out` against its serial twin (6000 elements in
/// rows of 3: four blocks of 512 rows, where a wrong row claim panicked even without
/// debug assertions), on 1, 2 and 8 threads, and against finite differences and the
/// dot-product test (14 elements, a short last row).
fn neighbour_rows_match_serial(
    name: &str,
    (primal, fwd, rev): (NeighbourPrimal, NeighbourFwd, NeighbourRev),
    (primal_s, rev_s): (NeighbourPrimal, NeighbourRev),
) {
    let (len, w) = (6000, 3);
    let u: Vec<f64> = (0..len).map(|k| (k as f64 * 0.37).sin() + 0.2).collect();
    let seed: Vec<f64> = (0..len).map(|k| ((k % 7) as f64) * 0.25 - 0.5).collect();
    let run = |f: NeighbourRev| {
        let (mut du, mut out, mut dout) = (zeros(len), zeros(len), seed.clone());
        f(&u, &mut du, &mut out, &mut dout, w);
        (du, out, dout)
    };
    let (du_p, out_p, dout_p) = run(rev);
    let (du_s, out_s, dout_s) = run(rev_s);
    let (mut a, mut b) = (zeros(len), zeros(len));
    primal(&u, &mut a, w);
    primal_s(&u, &mut b, w);
    assert_all_close(&format!("{name}: primal vs serial"), &a, &b, 0.0, 0.0);
    assert_all_close(&format!("{name}: _rev's output"), &out_p, &out_s, 0.0, 0.0);
    assert_all_close(&format!("{name}: ū vs serial"), &du_p, &du_s, 1e-12, 1e-14);
    assert_all_close(&format!("{name}: dout on exit"), &dout_p, &dout_s, 0.0, 0.0);
    same_on_1_2_8_threads(name, Across::Bitwise, || run(rev).0);
    let (len, w) = (14, 3);
    let x: Vec<f64> = (0..len).map(|k| (k as f64 * 0.9).cos() + 0.3).collect();
    check_fwd_rev(&Case {
        name,
        x: &x,
        primal: &|u| {
            let mut out = zeros(len);
            primal(u, &mut out, w);
            out
        },
        jvp: &|u, d| {
            let (mut out, mut dout) = (zeros(len), zeros(len));
            fwd(u, d, &mut out, &mut dout, w);
            (out, dout)
        },
        vjp: &|u, s| {
            let (mut du, mut out, mut dout) = (zeros(len), zeros(len), s.to_vec());
            rev(u, &mut du, &mut out, &mut dout, w);
            (out, du)
        },
        tols: TOLS,
    });
}

pub fn rows_reading_neighbour_rows_match_serial() {
    neighbour_rows_match_serial(
        "rows_up_par",
        (rows_up_par, rows_up_par_fwd, rows_up_par_rev),
        (rows_up_serial, rows_up_serial_rev),
    );
    neighbour_rows_match_serial(
        "rows_down_par",
        (rows_down_par, rows_down_par_fwd, rows_down_par_rev),
        (rows_down_serial, rows_down_serial_rev),
    );
}

//! Loops whose affine accesses go through index windows (`ad-macros/src/codegen/window.rs`:
//! the range an access reaches is sliced once before the loop): bases that leave the range
//! of `usize` at the first row, loop-carried counters (`li += 1`), ranges that start above
//! zero or are empty, written buffers, and an index out of range, which must still panic.
//! Each function is checked against finite differences and with the dot-product identity.

use super::differentiate;
use crate::common::*;

/// Neighbours along rows of width `n`: `x[i·n + j − 1]` has the base `i·n − 1`, below zero
/// at `i = 0` (wrapping arithmetic), though every index it reaches is in range.
#[differentiate(forward, reverse)]
pub fn shifted_rows(x: &[f64], n: usize) -> f64 {
    let m = x.len() / n;
    let mut s = 0.0;
    for i in 0..m {
        for j in 1..n {
            s += x[i * n + j - 1] * x[i * n + j] + (0.5 * x[i * n + j]).sin();
        }
    }
    s
}

/// `z = (diag(e^q) + L) x`, `L` strictly lower, its entries by columns through a counter
/// `li` that grows by one per inner iteration (GMM's triangular product), then `Σ z²`; the
/// inner ranges `c + 1..d` start above zero and the last one is empty.
#[differentiate(forward, reverse, wrt(q, l, x))]
pub fn triangular(q: &[f64], l: &[f64], x: &[f64], d: usize) -> f64 {
    let mut z = vec![0.0; d];
    for j in 0..d {
        z[j] = q[j].exp() * x[j];
    }
    let mut li = 0;
    for c in 0..d {
        for r in c + 1..d {
            z[r] += l[li] * x[c];
            li += 1;
        }
    }
    let mut s = 0.0;
    for j in (0..d).rev() {
        s += z[j] * z[j];
    }
    s
}

/// A range starting at 2 with the offsets −2 and −1, a written local buffer (one window,
/// written and read back at the same index), and a buffer added into at two offsets (no
/// window: one loop may hold only one mutable window of a buffer).
#[differentiate(forward, reverse)]
pub fn offsets_and_writes(x: &[f64]) -> f64 {
    let n = x.len();
    let mut y = vec![0.0; n];
    for i in 2..n {
        y[i] = x[i - 2] * x[i] - x[i - 1];
        y[i] = y[i] * y[i] + x[i];
    }
    let mut w = vec![0.0; n + 1];
    for i in 0..n {
        w[i] += y[i];
        w[i + 1] += 0.5 * y[i];
    }
    let mut s = 0.0;
    for i in 0..n + 1 {
        s += w[i] * w[i];
    }
    s
}

/// Reads `x[i + k]` for every `i < x.len()`: out of range for `k > 0`.
#[differentiate(forward, reverse)]
pub fn overrun(x: &[f64], k: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i + k] * x[i];
    }
    s
}

fn point(n: usize, shift: f64) -> Vec<f64> {
    (0..n)
        .map(|k| 0.4 + 0.6 * ((k as f64) * 0.7 + shift).sin())
        .collect()
}

pub fn rows_with_a_base_below_zero() {
    for (m, n) in [(1, 1), (3, 4), (2, 1)] {
        let x = point(m * n, 0.3);
        check_fwd_rev(&Case {
            name: "shifted_rows",
            x: &x,
            primal: &|p| vec![shifted_rows(p, n)],
            jvp: &|p, v| {
                let (y, dy) = shifted_rows_fwd(p, v, n);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(p.len());
                let y = shifted_rows_rev(p, &mut g, n, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn triangular_counter_and_empty_ranges() {
    for d in [1, 2, 5] {
        let nl = d * (d - 1) / 2;
        let x = cat(&[&point(d, 0.1), &point(nl, 1.1), &point(d, 2.3)]);
        check_fwd_rev(&Case {
            name: "triangular",
            x: &x,
            primal: &|p| vec![triangular(&p[..d], &p[d..d + nl], &p[d + nl..], d)],
            jvp: &|p, v| {
                let (y, dy) = triangular_fwd(
                    &p[..d],
                    &v[..d],
                    &p[d..d + nl],
                    &v[d..d + nl],
                    &p[d + nl..],
                    &v[d + nl..],
                    d,
                );
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let (mut gq, mut gl, mut gx) = (zeros(d), zeros(nl), zeros(d));
                let y = triangular_rev(
                    &p[..d],
                    &mut gq,
                    &p[d..d + nl],
                    &mut gl,
                    &p[d + nl..],
                    &mut gx,
                    d,
                    w[0],
                );
                (vec![y], cat(&[&gq, &gl, &gx]))
            },
            tols: TOLS,
        });
    }
}

pub fn offsets_and_written_buffers() {
    for n in [1, 2, 3, 7] {
        let x = point(n, 0.8);
        check_fwd_rev(&Case {
            name: "offsets_and_writes",
            x: &x,
            primal: &|p| vec![offsets_and_writes(p)],
            jvp: &|p, v| {
                let (y, dy) = offsets_and_writes_fwd(p, v);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(p.len());
                let y = offsets_and_writes_rev(p, &mut g, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn in_range_reads_pass() {
    let x = point(5, 0.2);
    check_fwd_rev(&Case {
        name: "overrun",
        x: &x,
        primal: &|p| vec![overrun(p, 0)],
        jvp: &|p, v| {
            let (y, dy) = overrun_fwd(p, v, 0);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let mut g = zeros(p.len());
            let y = overrun_rev(p, &mut g, 0, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

/// `#[should_panic(expected = "out of")]`: Rust's "index out of bounds" or the window's
/// "range end index … out of range".
pub fn reverse_panics_on_an_overrun() {
    let x = point(4, 0.2);
    let mut g = zeros(4);
    overrun_rev(&x, &mut g, 1, 1.0);
}

/// `#[should_panic(expected = "out of")]`.
pub fn forward_panics_on_an_overrun() {
    let x = point(4, 0.2);
    overrun_fwd(&x, &x, 1);
}

/// Counters (`usize`) stepped by a loop over an `i32` range that may start below zero:
/// `li` by 1 (its reads go through a window whose range is converted to `usize`), `lj` by 2
/// (no window). The reverse sweep rebuilds both as `init + (k − a)·step`, with `k − a`
/// converted to the counters' type.
#[differentiate(forward, reverse)]
pub fn counters_in_an_i32_loop(x: &[f64], a: i32, m: i32) -> f64 {
    let mut s = 0.0;
    let mut li = 0;
    let mut lj = 1;
    for k in a..m {
        s += x[li] * x[lj] * (k as f64 + 0.5);
        li += 1;
        lj += 2;
    }
    s
}

pub fn counters_stepped_by_an_i32_loop() {
    let x = point(9, 0.6);
    for (a, m) in [(0, 0), (1, 1), (0, 1), (-2, 2), (3, 7)] {
        check_fwd_rev(&Case {
            name: "counters_in_an_i32_loop",
            x: &x,
            primal: &|p| vec![counters_in_an_i32_loop(p, a, m)],
            jvp: &|p, v| {
                let (y, dy) = counters_in_an_i32_loop_fwd(p, v, a, m);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(p.len());
                let y = counters_in_an_i32_loop_rev(p, &mut g, a, m, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

//! Sums whose adjoint is the seed, reversed iteration by iteration in the forward sweep
//! (`ad-macros/src/derivative/reverse/fuse.rs`), and look-alikes that must not be: each
//! function is checked against finite differences and with the dot-product identity, whose
//! random weights make the seed differ from 1.

use super::differentiate;
use super::parallel::{same_on_1_2_8_threads, Across};
use crate::common::*;
use rayon::prelude::*;

/// `c − Σ term`: the sum reaches the result with coefficient −1; the loop reads the
/// active scalar `w`, defined before it, whose adjoint the fused iterations add into.
#[differentiate(forward, reverse, wrt(x, p))]
pub fn negated_sum(x: &[f64], p: &[f64]) -> f64 {
    let w = p[0] * p[1];
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w * x[i].sin() + x[i] * x[i] * p[1];
    }
    p[0].cos() - s
}

/// A sum of terms each computed by an inner loop that tapes (a nonlinear recurrence), the
/// sum updated by subtraction, then read once more after the loop through `+`.
#[differentiate(forward, reverse, wrt(x))]
pub fn inner_recurrence_sum(x: &[f64], m: usize) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let mut t = x[i];
        for j in 0..m {
            t = (0.5 * t).sin() + x[(i + j) % n] * t;
        }
        s -= t * t;
    }
    let mut tail = 0.0;
    for i in 0..n {
        tail += x[i];
    }
    s + tail
}

/// The loop reads `y`, which a later loop overwrites: the fused reverse reads it before
/// the overwrite, as the forward sweep did.
#[differentiate(forward, reverse, wrt(x))]
pub fn read_then_overwritten(x: &[f64]) -> f64 {
    let n = x.len();
    let mut y = x.to_vec();
    for i in 0..n {
        y[i] = y[i] * y[i] + 0.5;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * x[(i + 1) % n];
    }
    for i in 0..n {
        y[i] = (y[i] * x[i]).sin();
    }
    let mut t = 0.0;
    for i in 0..n {
        t += y[i] * y[i];
    }
    s - t
}

/// One sum scaled by a literal (`2 a`, fused with the adjoint `2 · seed`), and look-alikes
/// that are not fused: a sum scaled by a value, squared after the loop, read inside a
/// later branch, and a loop carrying a second active value.
#[differentiate(forward, reverse, wrt(x))]
pub fn sums_used_otherwise(x: &[f64], flag: bool) -> f64 {
    let n = x.len();
    let mut a = 0.0;
    for i in 0..n {
        a += x[i].exp();
    }
    let mut b = 0.0;
    for i in 0..n {
        b += x[i] * x[i];
    }
    let mut c = 0.0;
    for i in 0..n {
        c += x[i].cos();
    }
    let mut d = 0.0;
    let mut e = 1.0;
    for i in 0..n {
        d += e * x[i];
        e *= 0.9 + 0.01 * x[i];
    }
    let mut out = 2.0 * a + b * b + d * x[0];
    if flag {
        out += c * c;
    } else {
        out -= c;
    }
    out
}

/// Σₚ log Σ_c exp(−½‖L_c(xₚ − μ_c)‖²), shaped like ADBench's GMM: the scratch rows
/// `centered`, `z` and `terms` are refilled whole in every iteration before they are read,
/// so nothing flows from one point to the next except the sum.
#[differentiate(forward, reverse, wrt(means, lower))]
pub fn mixture_like(x: &[f64], means: &[f64], lower: &[f64], d: usize) -> f64 {
    let k = means.len() / d;
    let n = x.len() / d;
    let mut centered = vec![0.0; d];
    let mut z = vec![0.0; d];
    let mut terms = vec![0.0; k];
    let mut total = 0.0;
    for p in 0..n {
        for c in 0..k {
            for j in 0..d {
                centered[j] = x[p * d + j] - means[c * d + j];
            }
            for j in 0..d {
                z[j] = centered[j];
            }
            let mut l = c * d * d;
            for col in 0..d {
                for row in col + 1..d {
                    z[row] += lower[l] * centered[col];
                    l += 1;
                }
            }
            let mut sq = 0.0;
            for j in 0..d {
                sq += z[j] * z[j];
            }
            terms[c] = -0.5 * sq;
        }
        let mut mx = terms[0];
        for c in 1..k {
            mx = mx.max(terms[c]);
        }
        let mut se = 0.0;
        for c in 0..k {
            se += (terms[c] - mx).exp();
        }
        total += se.ln() + mx;
    }
    total
}

/// A row carried from one point to the next (`row[j]` is read before the iteration
/// writes it): the iterations cannot be reversed out of order, so it is not fused.
#[differentiate(forward, reverse, wrt(x))]
pub fn carried_row(x: &[f64], d: usize) -> f64 {
    let n = x.len() / d;
    let mut row = vec![0.0; d];
    let mut total = 0.0;
    for p in 0..n {
        for j in 0..d {
            row[j] = (row[j] + x[p * d + j]).sin();
        }
        let mut s = 0.0;
        for j in 0..d {
            s += row[j] * row[j];
        }
        total += s;
    }
    total
}

/// A chain energy: iteration `i` adds into `dx[i − 1]`, `dx[i]` and `dx[i + 1]`, so the
/// fused loop keeps the additions for `dx[i]` and `dx[i + 1]` in registers and writes
/// `dx[i − 1]` once (`reverse/carry.rs`), flushing the last two after the loop.
#[differentiate(forward, reverse)]
pub fn chain_energy(x: &[f64]) -> f64 {
    let n = x.len();
    let mut e = 0.0;
    for i in 1..n - 1 {
        let lap = x[i + 1] - 2.0 * x[i] + x[i - 1];
        e += lap * lap + 0.1 * x[i] * x[i] * x[i] * x[i];
    }
    e
}

/// The fused adjoint reads what its iteration computed (`Rev::from_iteration` in
/// `ad-macros/src/derivative/reverse/adjoint.rs`): reads of a scratch buffer that the
/// iteration overwrites afterwards (taped per iteration without fusion), an `exp` and
/// reads defined inside the branches (kept in cells declared at the start of the
/// iteration), and values defined before the branch (read as they are).
#[differentiate(forward, reverse, wrt(x, p))]
pub fn branch_values_from_the_iteration(x: &[f64], p: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let mut tmp = vec![0.0; 2];
        tmp[0] = x[i] * p[0];
        tmp[1] = x[(i + 1) % n];
        let a = tmp[0] * tmp[1];
        tmp[0] = a.sin();
        let mut t = tmp[0] * p[1];
        if x[i] > 0.5 {
            let k = (i + 2) % n;
            let b = x[k] * x[k] * p[1];
            let c = b.exp();
            t += c * a;
        } else {
            t -= a * a * x[i];
        }
        s += t;
    }
    s
}

/// Adjacent loops over one range run as one (`lower::fuse_adjacent_loops`): the first
/// three inner loops become one whose iteration `j` fills `xc[j]`, reads it into `z[j]`
/// and overwrites it; the sum loop after them carries `t` and stays apart. The outer sum
/// is then reversed as it runs, with `xc` and `z` refilled in each iteration.
#[differentiate(forward, reverse, wrt(x, m, q))]
pub fn adjacent_inner_loops(x: &[f64], m: &[f64], q: &[f64], d: usize) -> f64 {
    let n = x.len() / d;
    let mut xc = vec![0.0; d];
    let mut z = vec![0.0; d];
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..d {
            xc[j] = x[i * d + j] - m[j];
        }
        for j in 0..d {
            z[j] = q[j].exp() * xc[j];
        }
        for j in 0..d {
            xc[j] = z[j] * xc[j] + x[i * d + j].sin();
        }
        let mut t = 0.0;
        for j in 0..d {
            t += z[j] * xc[j];
        }
        s += (0.1 * t).exp();
    }
    s
}

fn point(n: usize, shift: f64) -> Vec<f64> {
    (0..n)
        .map(|k| 0.3 + 0.7 * ((k as f64) * 1.3 + shift).sin())
        .collect()
}

pub fn negated_sum_with_outer_scalar() {
    let n = 7;
    let x = cat(&[&point(n, 0.1), &[0.8, -1.3]]);
    check_fwd_rev(&Case {
        name: "negated_sum",
        x: &x,
        primal: &|p| vec![negated_sum(&p[..n], &p[n..])],
        jvp: &|p, v| {
            let (y, dy) = negated_sum_fwd(&p[..n], &v[..n], &p[n..], &v[n..]);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let (mut gx, mut gp) = (zeros(n), zeros(2));
            let y = negated_sum_rev(&p[..n], &mut gx, &p[n..], &mut gp, w[0]);
            (vec![y], cat(&[&gx, &gp]))
        },
        tols: TOLS,
    });
}

pub fn inner_recurrence_sum_tapes_per_iteration() {
    let n = 6;
    let x = point(n, 0.4);
    for m in [0, 1, 4] {
        check_fwd_rev(&Case {
            name: "inner_recurrence_sum",
            x: &x,
            primal: &|p| vec![inner_recurrence_sum(p, m)],
            jvp: &|p, v| {
                let (y, dy) = inner_recurrence_sum_fwd(p, v, m);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(n);
                let y = inner_recurrence_sum_rev(p, &mut g, m, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn read_then_overwritten_buffer() {
    let n = 5;
    let x = point(n, 0.9);
    check_fwd_rev(&Case {
        name: "read_then_overwritten",
        x: &x,
        primal: &|p| vec![read_then_overwritten(p)],
        jvp: &|p, v| {
            let (y, dy) = read_then_overwritten_fwd(p, v);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let mut g = zeros(n);
            let y = read_then_overwritten_rev(p, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn branch_values_read_from_the_iteration() {
    let n = 7;
    let x = cat(&[&point(n, 0.6), &[0.9, -0.7]]);
    // Both arms run: some points lie above 0.5, some below.
    assert!(x[..n].iter().any(|v| *v > 0.5) && x[..n].iter().any(|v| *v < 0.5));
    check_fwd_rev(&Case {
        name: "branch_values_from_the_iteration",
        x: &x,
        primal: &|p| vec![branch_values_from_the_iteration(&p[..n], &p[n..])],
        jvp: &|p, v| {
            let (y, dy) = branch_values_from_the_iteration_fwd(&p[..n], &v[..n], &p[n..], &v[n..]);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let (mut gx, mut gp) = (zeros(n), zeros(2));
            let y = branch_values_from_the_iteration_rev(&p[..n], &mut gx, &p[n..], &mut gp, w[0]);
            (vec![y], cat(&[&gx, &gp]))
        },
        tols: TOLS,
    });
}

pub fn adjacent_inner_loops_fused() {
    let (d, n) = (3, 4);
    let x = cat(&[&point(n * d, 0.2), &point(d, 1.1), &point(d, 2.3)]);
    let (nx, nm) = (n * d, d);
    check_fwd_rev(&Case {
        name: "adjacent_inner_loops",
        x: &x,
        primal: &|p| {
            let (x, rest) = p.split_at(nx);
            let (m, q) = rest.split_at(nm);
            vec![adjacent_inner_loops(x, m, q, d)]
        },
        jvp: &|p, v| {
            let (x, rest) = p.split_at(nx);
            let (m, q) = rest.split_at(nm);
            let (dx, drest) = v.split_at(nx);
            let (dm, dq) = drest.split_at(nm);
            let (y, dy) = adjacent_inner_loops_fwd(x, dx, m, dm, q, dq, d);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let (x, rest) = p.split_at(nx);
            let (m, q) = rest.split_at(nm);
            let (mut gx, mut gm, mut gq) = (zeros(nx), zeros(nm), zeros(d));
            let y = adjacent_inner_loops_rev(x, &mut gx, m, &mut gm, q, &mut gq, d, w[0]);
            (vec![y], cat(&[&gx, &gm, &gq]))
        },
        tols: TOLS,
    });
}

pub fn look_alike_sums() {
    let n = 6;
    let x = point(n, 1.7);
    for flag in [false, true] {
        check_fwd_rev(&Case {
            name: "sums_used_otherwise",
            x: &x,
            primal: &|p| vec![sums_used_otherwise(p, flag)],
            jvp: &|p, v| {
                let (y, dy) = sums_used_otherwise_fwd(p, v, flag);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(n);
                let y = sums_used_otherwise_rev(p, &mut g, flag, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn mixture_like_scratch_rows() {
    let (d, k, n) = (3, 2, 4);
    let x = point(n * d, 0.2);
    let lens = [k * d, k * d * d];
    let p0 = cat(&[&point(lens[0], 1.1), &point(lens[1], 2.3)]);
    check_fwd_rev(&Case {
        name: "mixture_like",
        x: &p0,
        primal: &|p| {
            let s = split(p, &lens);
            vec![mixture_like(&x, s[0], s[1], d)]
        },
        jvp: &|p, v| {
            let (s, t) = (split(p, &lens), split(v, &lens));
            let (y, dy) = mixture_like_fwd(&x, s[0], t[0], s[1], t[1], d);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut gm, mut gl) = (zeros(lens[0]), zeros(lens[1]));
            let y = mixture_like_rev(&x, s[0], &mut gm, s[1], &mut gl, d, w[0]);
            (vec![y], cat(&[&gm, &gl]))
        },
        tols: TOLS,
    });
}

pub fn carried_row_is_not_fused() {
    let d = 3;
    let x = point(4 * d, 0.6);
    check_fwd_rev(&Case {
        name: "carried_row",
        x: &x,
        primal: &|p| vec![carried_row(p, d)],
        jvp: &|p, v| {
            let (y, dy) = carried_row_fwd(p, v, d);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let mut g = zeros(p.len());
            let y = carried_row_rev(p, &mut g, d, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn chain_energy_shifted_adds() {
    for n in [2, 3, 4, 9] {
        let x = point(n, 0.35);
        check_fwd_rev(&Case {
            name: "chain_energy",
            x: &x,
            primal: &|p| vec![chain_energy(p)],
            jvp: &|p, v| {
                let (y, dy) = chain_energy_fwd(p, v);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(p.len());
                let y = chain_energy_rev(p, &mut g, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

/// Parallel sums whose adjoint is a constant times the seed, reversed as they run
/// (`reverse/fuse.rs`): `Σ sin(a·xᵢ)` reads the outer active scalar `a` (its adjoint is
/// a reduction over the fused iterations), `Σ xᵢxᵢ₊₁` adds into `dx` one row ahead (a
/// halo), `Σ p[i mod 2]·x[3i mod n]·xᵢ` at computed indices (private copies per thread).
/// `p₁·Σ xᵢ²`, scaled by a value, keeps its reversed loop.
#[differentiate(forward, reverse, wrt(x, p))]
pub fn fused_parallel_sums(x: &[f64], p: &[f64]) -> f64 {
    let n = x.len();
    let a = p[0] * p[1];
    let s1: f64 = x.par_iter().map(|v| (a * v).sin()).sum();
    let s2 = (0..n - 1)
        .into_par_iter()
        .map(|i| x[i] * x[i + 1])
        .sum::<f64>();
    let s3 = (0..n)
        .into_par_iter()
        .map(|i| p[i % 2] * x[(3 * i) % n] * x[i])
        .sum::<f64>();
    let s4: f64 = x.par_iter().map(|v| v * v).sum();
    0.5 * s1 - s2 + s3 + p[1] * s4
}

/// [`fused_parallel_sums`] as serial loops.
#[differentiate(reverse, wrt(x, p))]
pub fn fused_serial_sums(x: &[f64], p: &[f64]) -> f64 {
    let n = x.len();
    let a = p[0] * p[1];
    let mut s1 = 0.0;
    let mut s2 = 0.0;
    let mut s3 = 0.0;
    let mut s4 = 0.0;
    for i in 0..n {
        s1 += (a * x[i]).sin();
    }
    for i in 0..n - 1 {
        s2 += x[i] * x[i + 1];
    }
    for i in 0..n {
        s3 += p[i % 2] * x[(3 * i) % n] * x[i];
    }
    for i in 0..n {
        s4 += x[i] * x[i];
    }
    0.5 * s1 - s2 + s3 + p[1] * s4
}

pub fn fused_parallel_sums_equal_serial() {
    // Sizes around the block length, so that blocks split the halo's rows.
    for n in [2, 5, 517, 1100] {
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.6 * ((i as f64) * 0.7).sin()).collect();
        let p = [0.8, -1.1];
        let run = || {
            let (mut gx, mut gp) = (zeros(n), zeros(2));
            let y = fused_parallel_sums_rev(&x, &mut gx, &p, &mut gp, 1.5);
            (y, gx, gp)
        };
        same_on_1_2_8_threads(&format!("fused sums n={n}"), Across::Rounding, run);
        let (y, gx, gp) = run();
        let (mut sx, mut sp) = (zeros(n), zeros(2));
        let ys = fused_serial_sums_rev(&x, &mut sx, &p, &mut sp, 1.5);
        assert_close(&format!("fused sums n={n}: value"), y, ys, 1e-12, 1e-14);
        assert_eq!(ys, fused_serial_sums(&x, &p), "fused sums n={n}: serial primal");
        assert_all_close(&format!("fused sums n={n}: x̄"), &gx, &sx, 1e-12, 1e-14);
        assert_all_close(&format!("fused sums n={n}: p̄"), &gp, &sp, 1e-12, 1e-14);
        if n <= 5 {
            let point = cat(&[&x, &p]);
            check_fwd_rev(&Case {
                name: "fused_parallel_sums",
                x: &point,
                primal: &|q| vec![fused_parallel_sums(&q[..n], &q[n..])],
                jvp: &|q, v| {
                    let (y, dy) = fused_parallel_sums_fwd(&q[..n], &v[..n], &q[n..], &v[n..]);
                    (vec![y], vec![dy])
                },
                vjp: &|q, w| {
                    let (mut gx, mut gp) = (zeros(n), zeros(2));
                    let y = fused_parallel_sums_rev(&q[..n], &mut gx, &q[n..], &mut gp, w[0]);
                    (vec![y], cat(&[&gx, &gp]))
                },
                tols: TOLS,
            });
        }
    }
}

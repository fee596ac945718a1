//! Values the coarse reverse sweep rebuilds instead of taping them: loads of a scratch
//! buffer that an earlier loop filled (re-evaluated at the reader's index), loads of what
//! the same iteration just stored, re-reads of a local buffer nothing writes any more, and
//! integer counters stepped by an invariant amount (also counters that an inner loop steps,
//! run backwards in the reverse sweep), and values that are the same in every iteration
//! (saved once). The `fine` copy tapes all of them; both
//! are checked against finite differences, the dot-product identity and each other.
//!
//! The last two functions look like fills but are not (the refill skips an element, or a
//! write comes between fill and read): reusing the fill there would give a wrong
//! derivative, which the finite-difference check would catch.

use super::differentiate;
use crate::common::*;

/// Σₚ Σ_c ‖L_c (xₚ − μ_c)‖² with each L_c lower triangular: diagonal `exp(log_diag)`, the
/// strictly lower entries packed column by column in `lower` and walked by a counter, as in
/// ADBench's GMM. `centered` is a scratch row refilled for every (point, component).
#[differentiate(forward, reverse, wrt(means, log_diag, lower))]
pub fn triangular_forms(
    x: &[f64],
    means: &[f64],
    log_diag: &[f64],
    lower: &[f64],
    d: usize,
) -> f64 {
    let k = means.len() / d;
    let n = x.len() / d;
    let packed = d * (d - 1) / 2;
    let mut diag = vec![0.0; k * d];
    for c in 0..k {
        for j in 0..d {
            diag[c * d + j] = log_diag[c * d + j].exp();
        }
    }
    let mut centered = vec![0.0; d];
    let mut scaled = vec![0.0; d];
    let mut total = 0.0;
    for p in 0..n {
        for c in 0..k {
            for j in 0..d {
                centered[j] = x[p * d + j] - means[c * d + j];
                scaled[j] = diag[c * d + j] * centered[j];
            }
            let mut l = c * packed;
            for col in 0..d {
                for row in col + 1..d {
                    scaled[row] += lower[l] * centered[col];
                    l += 1;
                }
            }
            for j in 0..d {
                total += scaled[j] * scaled[j];
            }
        }
    }
    total
}

/// Σⱼ w[j]·v[n−1−j]² with the mirrored index counted down, plus the packed lower
/// triangle Σᵢ (Σ_{j≤i} tri[l]·v[j])² with `l` counted up by `stride` from `offset`.
#[differentiate(forward, reverse, wrt(tri, v, w))]
pub fn counted_indices(tri: &[f64], v: &[f64], w: &[f64], offset: usize, stride: usize) -> f64 {
    let n = v.len();
    let mut back = n;
    let mut mirrored = 0.0;
    for j in 0..n {
        back -= 1;
        mirrored += w[j] * v[back] * v[back];
    }
    let mut l = offset;
    let mut total = 0.0;
    for i in 0..n {
        let mut acc = 0.0;
        for j in 0..i + 1 {
            acc += tri[l] * v[j];
            l += stride;
        }
        total += acc * acc;
    }
    mirrored + total
}

/// Rows read from the end of `band`: the counter `l` goes down by 2 in inner loops of
/// 0 to 3 iterations (some read nothing), and each row's result goes to `out`. The coarse
/// reverse sweep runs `l` backwards from its final value instead of taping it per row.
#[differentiate(forward, reverse)]
pub fn countdown_bands(band: &[f64], x: &[f64], out: &mut [f64]) {
    let n = x.len();
    for p in 0..out.len() {
        let mut l = band.len();
        let mut acc = x[p % n];
        for i in 0..n {
            for j in 0..(i + p) % 4 {
                l -= 2;
                acc += band[l] * x[(i + j) % n] * acc.sin();
            }
        }
        out[p] = acc * acc;
    }
}

/// A packed-triangle update redone in every round from the same start, each round's sum
/// stored in `out`: the counter's final value, where the reverse sweep of each round starts
/// it backwards, is the same in every round, so the coarse copy saves it once (one slot)
/// instead of once per round.
#[differentiate(forward, reverse)]
pub fn repeated_triangles(l: &[f64], x: &[f64], out: &mut [f64]) {
    let d = x.len();
    let mut z = vec![0.0; d];
    for i in 0..out.len() {
        for j in 0..d {
            z[j] = x[j] * (i as f64 + 1.0);
        }
        let mut li = 0;
        for c in 0..d {
            for r in c + 1..d {
                z[r] += l[li] * x[c];
                li += 1;
            }
        }
        let mut s = out[i];
        for j in 0..d {
            s += (z[j] * z[j]).sin();
        }
        out[i] = s;
    }
}

/// Each output scaled by a weight that an inner loop sums over a fixed range: the weight
/// is the same in every iteration, and the coarse copy saves it once.
#[differentiate(forward, reverse)]
pub fn fixed_weights(x: &[f64], out: &mut [f64], m: usize) {
    for i in 0..x.len() {
        let mut w = 0.0;
        for j in 0..m {
            w += ((j + 1) as f64).sqrt() * 0.5;
        }
        out[i] = w * x[i].sin() + out[i] * x[i];
    }
}

/// Steps of a packed-triangle update under `revolve(snapshots = 2)`: each step's counter
/// `li` runs backwards in the reverse sweep of the step as it is replayed.
#[differentiate(forward, reverse)]
pub fn checkpointed_triangles(l: &[f64], x0: &[f64], steps: usize) -> f64 {
    let d = x0.len();
    let mut x = x0.to_vec();
    let mut z = vec![0.0; d];
    #[checkpoint(revolve(snapshots = 2))]
    for step in 0..steps {
        let mut li = step % 2;
        for c in 0..d {
            for r in c + 1..d {
                z[r] += l[li] * x[c];
                li += 1;
            }
        }
        for j in 0..d {
            x[j] = (x[j] + 0.1 * z[j]).sin();
            z[j] = 0.5 * z[j];
        }
    }
    let mut s = 0.0;
    for j in 0..d {
        s += x[j] * x[j];
    }
    s
}

/// A scratch buffer refilled every round except its first element, then read in full:
/// `buf[0]` still holds the first fill's value.
#[differentiate(forward, reverse, wrt(x, w))]
pub fn partial_refill(x: &[f64], w: f64, rounds: usize) -> f64 {
    let n = x.len();
    let mut buf = vec![0.0; n];
    for j in 0..n {
        buf[j] = w * x[j];
    }
    let mut total = 0.0;
    for r in 0..rounds {
        let s = w * (r as f64 + 2.0);
        for j in 1..n {
            buf[j] = s * x[j];
        }
        for k in 0..n {
            total += buf[k] * buf[k] * x[k];
        }
    }
    total
}

/// A filled scratch buffer whose first element is overwritten before it is read.
#[differentiate(forward, reverse, wrt(x, w))]
pub fn overwritten_fill(x: &[f64], w: f64, rounds: usize) -> f64 {
    let n = x.len();
    let mut buf = vec![0.0; n];
    let mut total = 0.0;
    for r in 0..rounds {
        for j in 0..n {
            buf[j] = w * x[j] + r as f64;
        }
        buf[0] = w * w;
        for k in 0..n {
            total += (buf[k] * x[k]).sin();
        }
    }
    total
}

/// A fill with a value loaded before the fill loop from a buffer that changes later: the
/// rebuilt load must use the value of its round, not read `acc` again.
#[differentiate(forward, reverse, wrt(x, w))]
pub fn fill_from_outside(x: &[f64], w: f64, rounds: usize) -> f64 {
    let n = x.len();
    let mut buf = vec![0.0; n];
    let mut acc = vec![w; 1];
    let mut total = 0.0;
    for r in 0..rounds {
        let a = acc[0];
        for j in 0..n {
            buf[j] = a;
        }
        acc[0] = acc[0].sin() * x[r % n] + w;
        for k in 0..n {
            total += buf[k] * buf[k] * x[k];
        }
    }
    total
}

fn data(n: usize, phase: f64) -> Vec<f64> {
    (0..n)
        .map(|i| 0.3 + 0.5 * (0.9 * i as f64 + phase).sin())
        .collect()
}

pub fn triangular_forms_match_finite_differences() {
    let (d, k, n) = (4, 3, 5);
    let x = data(n * d, 0.0);
    let lens = [k * d, k * d, k * d * (d - 1) / 2];
    let point = cat(&[
        &data(lens[0], 1.0),
        &data(lens[1], 2.0),
        &data(lens[2], 3.0),
    ]);
    let f = |p: &[f64]| {
        let s = split(p, &lens);
        triangular_forms(&x, s[0], s[1], s[2], d)
    };
    check_fwd_rev(&Case {
        name: "triangular_forms",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (s, t) = (split(p, &lens), split(v, &lens));
            let (y, dy) = triangular_forms_fwd(&x, s[0], t[0], s[1], t[1], s[2], t[2], d);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut gm, mut gd, mut gl) = (zeros(lens[0]), zeros(lens[1]), zeros(lens[2]));
            let y = triangular_forms_rev(&x, s[0], &mut gm, s[1], &mut gd, s[2], &mut gl, d, w[0]);
            (vec![y], cat(&[&gm, &gd, &gl]))
        },
        tols: TOLS,
    });
}

pub fn counted_indices_match_finite_differences() {
    let n = 5;
    let (offset, stride) = (3, 2);
    let lens = [offset + stride * n * (n + 1) / 2, n, n];
    let point = cat(&[&data(lens[0], 0.5), &data(n, 1.5), &data(n, 2.5)]);
    let f = |p: &[f64]| {
        let s = split(p, &lens);
        counted_indices(s[0], s[1], s[2], offset, stride)
    };
    check_fwd_rev(&Case {
        name: "counted_indices",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (s, t) = (split(p, &lens), split(v, &lens));
            let (y, dy) = counted_indices_fwd(s[0], t[0], s[1], t[1], s[2], t[2], offset, stride);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut gt, mut gv, mut gw) = (zeros(lens[0]), zeros(n), zeros(n));
            let y = counted_indices_rev(
                s[0], &mut gt, s[1], &mut gv, s[2], &mut gw, offset, stride, w[0],
            );
            (vec![y], cat(&[&gt, &gv, &gw]))
        },
        tols: TOLS,
    });
}

pub fn countdown_bands_match_finite_differences() {
    // Rows p = 0..4 read 6 to 9 pairs from the end of `band` (2·9 = 18 < 20).
    let (nb, n, m) = (20, 5, 4);
    let lens = [nb, n, m];
    let point = cat(&[&data(nb, 0.5), &data(n, 1.5), &data(m, 2.5)]);
    let primal = |p: &[f64]| {
        let s = split(p, &lens);
        let mut out = s[2].to_vec();
        countdown_bands(s[0], s[1], &mut out);
        out
    };
    check_fwd_rev(&Case {
        name: "countdown_bands",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (s, t) = (split(p, &lens), split(v, &lens));
            let (mut out, mut dout) = (s[2].to_vec(), t[2].to_vec());
            countdown_bands_fwd(s[0], t[0], s[1], t[1], &mut out, &mut dout);
            (out, dout)
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut gb, mut gx, mut gout) = (zeros(nb), zeros(n), w.to_vec());
            let mut out = s[2].to_vec();
            countdown_bands_rev(s[0], &mut gb, s[1], &mut gx, &mut out, &mut gout);
            (primal(p), cat(&[&gb, &gx, &gout]))
        },
        tols: TOLS,
    });
}

pub fn repeated_triangles_match_finite_differences() {
    let d = 5;
    let nl = d * (d - 1) / 2;
    for rounds in [0, 1, 3] {
        let lens = [nl, d, rounds];
        let point = cat(&[&data(nl, 0.5), &data(d, 1.5), &data(rounds, 2.5)]);
        let primal = |p: &[f64]| {
            let s = split(p, &lens);
            let mut out = s[2].to_vec();
            repeated_triangles(s[0], s[1], &mut out);
            out
        };
        check_fwd_rev(&Case {
            name: "repeated_triangles",
            x: &point,
            primal: &primal,
            jvp: &|p, v| {
                let (s, t) = (split(p, &lens), split(v, &lens));
                let (mut out, mut dout) = (s[2].to_vec(), t[2].to_vec());
                repeated_triangles_fwd(s[0], t[0], s[1], t[1], &mut out, &mut dout);
                (out, dout)
            },
            vjp: &|p, w| {
                let s = split(p, &lens);
                let (mut gl, mut gx, mut gout) = (zeros(nl), zeros(d), w.to_vec());
                let mut out = s[2].to_vec();
                repeated_triangles_rev(s[0], &mut gl, s[1], &mut gx, &mut out, &mut gout);
                (primal(p), cat(&[&gl, &gx, &gout]))
            },
            tols: TOLS,
        });
    }
}

pub fn fixed_weights_match_finite_differences() {
    let n = 6;
    let point = cat(&[&data(n, 0.5), &data(n, 1.5)]);
    for m in [0, 1, 4] {
        let primal = |p: &[f64]| {
            let mut out = p[n..].to_vec();
            fixed_weights(&p[..n], &mut out, m);
            out
        };
        check_fwd_rev(&Case {
            name: "fixed_weights",
            x: &point,
            primal: &primal,
            jvp: &|p, v| {
                let (mut out, mut dout) = (p[n..].to_vec(), v[n..].to_vec());
                fixed_weights_fwd(&p[..n], &v[..n], &mut out, &mut dout, m);
                (out, dout)
            },
            vjp: &|p, w| {
                let (mut gx, mut gout) = (zeros(n), w.to_vec());
                let mut out = p[n..].to_vec();
                fixed_weights_rev(&p[..n], &mut gx, &mut out, &mut gout, m);
                (primal(p), cat(&[&gx, &gout]))
            },
            tols: TOLS,
        });
    }
}

pub fn checkpointed_triangles_match_finite_differences() {
    let (nl, d, steps) = (11, 5, 7);
    let point = cat(&[&data(nl, 0.5), &data(d, 1.5)]);
    check_fwd_rev(&Case {
        name: "checkpointed_triangles",
        x: &point,
        primal: &|p| vec![checkpointed_triangles(&p[..nl], &p[nl..], steps)],
        jvp: &|p, v| {
            let (y, dy) =
                checkpointed_triangles_fwd(&p[..nl], &v[..nl], &p[nl..], &v[nl..], steps);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let (mut gl, mut gx) = (zeros(nl), zeros(d));
            let y = checkpointed_triangles_rev(&p[..nl], &mut gl, &p[nl..], &mut gx, steps, w[0]);
            (vec![y], cat(&[&gl, &gx]))
        },
        tols: TOLS,
    });
}

pub fn partial_refill_matches_finite_differences() {
    let n = 6;
    let point = cat(&[&data(n, 0.2), &[0.8]]);
    for rounds in [0, 1, 3] {
        check_fwd_rev(&Case {
            name: "partial_refill",
            x: &point,
            primal: &|p| vec![partial_refill(&p[..n], p[n], rounds)],
            jvp: &|p, v| {
                let (y, dy) = partial_refill_fwd(&p[..n], &v[..n], p[n], v[n], rounds);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut gx = zeros(n);
                let (y, gw) = partial_refill_rev(&p[..n], &mut gx, p[n], rounds, w[0]);
                (vec![y], cat(&[&gx, &[gw]]))
            },
            tols: TOLS,
        });
    }
}

pub fn overwritten_fill_matches_finite_differences() {
    let n = 6;
    let point = cat(&[&data(n, 0.7), &[0.6]]);
    for rounds in [1, 3] {
        check_fwd_rev(&Case {
            name: "overwritten_fill",
            x: &point,
            primal: &|p| vec![overwritten_fill(&p[..n], p[n], rounds)],
            jvp: &|p, v| {
                let (y, dy) = overwritten_fill_fwd(&p[..n], &v[..n], p[n], v[n], rounds);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut gx = zeros(n);
                let (y, gw) = overwritten_fill_rev(&p[..n], &mut gx, p[n], rounds, w[0]);
                (vec![y], cat(&[&gx, &[gw]]))
            },
            tols: TOLS,
        });
    }
}

pub fn fill_from_outside_matches_finite_differences() {
    let n = 5;
    let point = cat(&[&data(n, 1.1), &[0.9]]);
    for rounds in [1, 4] {
        check_fwd_rev(&Case {
            name: "fill_from_outside",
            x: &point,
            primal: &|p| vec![fill_from_outside(&p[..n], p[n], rounds)],
            jvp: &|p, v| {
                let (y, dy) = fill_from_outside_fwd(&p[..n], &v[..n], p[n], v[n], rounds);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut gx = zeros(n);
                let (y, gw) = fill_from_outside_rev(&p[..n], &mut gx, p[n], rounds, w[0]);
                (vec![y], cat(&[&gx, &[gw]]))
            },
            tols: TOLS,
        });
    }
}

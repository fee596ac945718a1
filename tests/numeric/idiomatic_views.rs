//! Issue 46's corpus, views of more than one dimension: a plane of a 3-D buffer (`&t[i]`,
//! `for image in stack.iter()`), a range of the rows of a 2-D one (`&states[warmup..]`),
//! rows of a 3-D buffer passed to calls (`smooth_row(&mut t[l][i], w)`), and rows walked
//! as one sequence by `.flatten()`. Each is checked by finite differences, the dot-product
//! test and values derived by hand; the generic one against num-dual too.

use super::differentiate;
use crate::common::*;
use num_traits::Float;
use rayon::prelude::*;
use std::iter::Sum;

/// The contrast of an image stack (one image per plane): planes as views (`let reference
/// = &stack[0];`, `for image in stack.iter()`), their rows walked by `for row in image`
/// and zipped (`image.iter().zip(reference.iter())`), and a range of rows (`&image[1..]`).
#[differentiate(forward, reverse)]
pub fn stack_contrast(stack: &[Vec<Vec<f64>>], gamma: f64) -> f64 {
    let reference = &stack[0];
    let cols = reference[0].len();
    let mut total = 0.0;
    for image in stack.iter() {
        let mut mean = 0.0;
        for row in image {
            mean += row.iter().sum::<f64>();
        }
        mean /= (image.len() * cols) as f64;
        // Vertical differences: every row but the first against the one above it.
        let below = &image[1..];
        for i in 0..below.len() {
            for j in 0..cols {
                let d = below[i][j] - image[i][j];
                total += (gamma * d).tanh() * d;
            }
        }
        total += image
            .iter()
            .zip(reference.iter())
            .map(|(r, q)| r.iter().zip(q).map(|(a, b)| (a - b - mean) * (a - b - mean)).sum::<f64>())
            .sum::<f64>();
    }
    total
}

/// The misfit of a simulated trajectory (one state per row) against observations of its
/// first component after a warm-up: a range of rows (`&states[warmup..]`) zipped with the
/// observations, and its last row bound by name.
#[differentiate(forward, reverse)]
pub fn trajectory_misfit(states: &[Vec<f64>], obs: &[f64], warmup: usize) -> f64 {
    let kept = &states[warmup..];
    let mut misfit = 0.0;
    for (state, &o) in kept.iter().zip(obs) {
        let r = state[0] - o;
        misfit += r * r;
    }
    let last = &kept[kept.len() - 1];
    misfit + 0.5 * last.iter().map(|v| v * v).sum::<f64>()
}

/// One row smoothed in place by a three-point average of weight `w`.
#[differentiate(forward, reverse)]
pub fn smooth_row(row: &mut [f64], w: f64) {
    let n = row.len();
    let mut prev = row[0];
    for j in 1..n - 1 {
        let here = row[j];
        row[j] = (1.0 - w) * here + 0.5 * w * (prev + row[j + 1]);
        prev = here;
    }
}

/// The layers of a 3-D grid relaxed in place: each row of a layer passed to a helper
/// (`smooth_row(&mut t[l][i], w)`: a row of a 3-D buffer as a call argument, written by
/// the call), then the layer scaled through a mutable plane (`let layer = &mut t[l];`,
/// `layer.iter_mut()`).
#[differentiate(forward, reverse)]
pub fn relax_layers(t: &mut [Vec<Vec<f64>>], w: f64, decay: f64) {
    for l in 0..t.len() {
        for i in 0..t[l].len() {
            smooth_row(&mut t[l][i], w);
        }
        let layer = &mut t[l];
        for row in layer.iter_mut() {
            for v in row.iter_mut() {
                *v *= decay;
            }
        }
    }
}

/// The energy of the middle planes of a field (`&t[1..t.len() - 1]`, a range of planes of
/// a 3-D buffer), each row handed to a helper by name (`row_energy(row, k)`).
#[differentiate(forward, reverse)]
pub fn inner_energy(t: &[Vec<Vec<f64>>], k: f64) -> f64 {
    let inner = &t[1..t.len() - 1];
    let mut e = 0.0;
    for p in 0..inner.len() {
        let plane = &inner[p];
        for row in plane.iter() {
            e += row_energy(row, k);
        }
    }
    e
}

/// `Σ k·v²` over one row.
#[differentiate(forward, reverse)]
pub fn row_energy(row: &[f64], k: f64) -> f64 {
    row.iter().map(|v| k * v * v).sum()
}

/// The Frobenius norm of a matrix stored by rows, generic over the float type:
/// `m.iter().flatten()`.
#[differentiate(forward, reverse)]
pub fn frobenius<T: Float + Sum>(m: &[Vec<T>]) -> T {
    m.iter().flatten().map(|&v| v * v).sum::<T>().sqrt()
}

/// A position-weighted moment of a voxel grid plus a rectified part: the voxels as one
/// sequence (`t.iter().flatten().flatten()`), enumerated in a `for` loop and filtered in a
/// sum.
#[differentiate(forward, reverse)]
pub fn voxel_moment(t: &[Vec<Vec<f64>>], k: f64) -> f64 {
    let mut s = 0.0;
    for (i, &v) in t.iter().flatten().flatten().enumerate() {
        s += (i as f64 + k) * v;
    }
    s + t.iter().flatten().flatten().filter(|v| **v > 0.0).map(|v| v.sin()).sum::<f64>()
}

/// Every entry of a ragged matrix scaled in place (`m.iter_mut().flatten()`).
#[differentiate(forward, reverse)]
pub fn scale_entries(m: &mut [Vec<f64>], a: f64) {
    for v in m.iter_mut().flatten() {
        *v *= a;
    }
}

/// The positive entries of a ragged matrix pushed into a `Vec` from a flattened loop, and a
/// `fold` over all of them.
#[differentiate(forward, reverse)]
pub fn positive_energy(m: &[Vec<f64>]) -> f64 {
    let mut out = Vec::new();
    for &v in m.iter().flatten() {
        if v > 0.0 {
            out.push(v);
        }
    }
    out.iter().map(|v| v * v).sum::<f64>() + m.iter().flatten().fold(0.0, |a, &v| a + v.cos())
}

/// Per-row features computed in parallel: inside a rayon closure, a row bound as a view
/// (`let row = &m[i];`), a sub-slice of it (`&row[1..]`), a `map`/`sum` and a `zip`/`fold`
/// over the views.
#[differentiate(forward, reverse)]
pub fn row_features(m: &[Vec<f64>], out: &mut [f64]) {
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let row = &m[i];
        let tail = &row[1..];
        *o = row[0] * row[0]
            + tail.iter().map(|v| v.sin()).sum::<f64>()
            + tail.iter().zip(row.iter()).fold(0.0, |a, (x, y)| a + x * y);
    });
}

/// A parallel sum over the rows of a matrix, each row a view walked by an iterator.
#[differentiate(forward, reverse)]
pub fn parallel_row_energy(m: &[Vec<f64>], k: f64) -> f64 {
    (0..m.len())
        .into_par_iter()
        .map(|i| {
            let r = &m[i];
            r.iter().map(|v| k * v * v).sum::<f64>()
        })
        .sum()
}

/// The energy of a track of states plus its jumps: a range of rows zipped row by row
/// with the rows before them (`let prev = &m[k];`), the jumps above a threshold pushed into
/// a `Vec` from the nested loop, and the whole matrix flattened.
#[differentiate(forward, reverse)]
pub fn track_energy(m: &[Vec<f64>], w: f64) -> f64 {
    let later = &m[1..];
    let mut jumps = Vec::new();
    for (k, row) in later.iter().enumerate() {
        let prev = &m[k];
        for (a, b) in row.iter().zip(prev) {
            if (a - b).abs() > 0.1 {
                jumps.push(a - b);
            }
        }
    }
    let energy: f64 = m.iter().flatten().map(|v| v * v).sum();
    w * energy + jumps.iter().map(|d| d * d).sum::<f64>()
}

/// A 2-D state relaxed over a Revolve-checkpointed time loop through views: a row borrowed
/// `&mut m[i]` and walked by `iter_mut()`, a range of rows `&mut m[1..]` written, and the
/// final state flattened.
#[differentiate(forward, reverse)]
pub fn relaxed_rows(x: &[f64], k: f64, steps: usize) -> f64 {
    let n = 3;
    let mut m = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..n {
            m[i][j] = x[i * n + j];
        }
    }
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        for i in 1..n {
            let prev = m[i - 1][0];
            let row = &mut m[i];
            for v in row.iter_mut() {
                *v = (k * *v).sin() + 0.1 * prev;
            }
        }
        let tail = &mut m[1..];
        tail[0][0] += 0.01 * tail[1][2];
    }
    m.iter().flatten().map(|v| v * v).sum::<f64>()
}

fn to3(p: &[f64], b: usize, c: usize) -> Vec<Vec<Vec<f64>>> {
    p.chunks(b * c).map(|plane| plane.chunks(c).map(|r| r.to_vec()).collect()).collect()
}

fn from3(t: &[Vec<Vec<f64>>]) -> Vec<f64> {
    t.iter().flatten().flatten().copied().collect()
}

pub fn planes_and_row_ranges() {
    // A stack of two 3×2 images, flattened (image, row, column).
    let s0: Vec<f64> = (0..12).map(|q| (q as f64 * 0.7).sin()).collect();
    let gamma = 0.8;
    let p = cat(&[&s0, &[gamma]]);
    check_point(
        "stack_contrast",
        &p,
        &|p| stack_contrast(&to3(&p[..12], 3, 2), p[12]),
        &|p| {
            let (v, (g, gg)) = stack_contrast_grad(&to3(&p[..12], 3, 2), p[12]);
            (v, cat(&[&from3(&g), &[gg]]))
        },
        &|p, d| stack_contrast_fwd(&to3(&p[..12], 3, 2), &to3(&d[..12], 3, 2), p[12], d[12]),
        &|p, s| {
            let mut g = to3(&zeros(12), 3, 2);
            let (v, gg) = stack_contrast_rev(&to3(&p[..12], 3, 2), &mut g, p[12], s);
            (v, cat(&[&from3(&g), &[gg]]))
        },
    );
    // By hand: ∂/∂γ = Σ d² sech²(γ d) over the vertical differences d of each image.
    let stack = to3(&s0, 3, 2);
    let mut want = 0.0;
    for image in &stack {
        for i in 1..3 {
            for j in 0..2 {
                let d = image[i][j] - image[i - 1][j];
                want += d * d / (gamma * d).cosh().powi(2);
            }
        }
    }
    assert_rel("stack_contrast: ∂/∂γ by hand", &[stack_contrast_grad(&stack, gamma).1 .1], &[want], 1e-13);

    // Five states of two components, three observations after a warm-up of two.
    let x0: Vec<f64> = (0..10).map(|q| 0.3 * q as f64 - 1.0).collect();
    let obs = [0.5, 0.4, 1.2];
    let x = cat(&[&x0, &obs]);
    check_point(
        "trajectory_misfit",
        &x,
        &|x| trajectory_misfit(&to_rows(&x[..10], 2), &x[10..], 2),
        &|x| {
            let (v, (gs, go)) = trajectory_misfit_grad(&to_rows(&x[..10], 2), &x[10..], 2);
            (v, cat(&[&from_rows(&gs), &go]))
        },
        &|x, d| trajectory_misfit_fwd(&to_rows(&x[..10], 2), &to_rows(&d[..10], 2), &x[10..], &d[10..], 2),
        &|x, s| {
            let (mut gs, mut go) = (to_rows(&zeros(10), 2), zeros(3));
            let v = trajectory_misfit_rev(&to_rows(&x[..10], 2), &mut gs, &x[10..], &mut go, 2, s);
            (v, cat(&[&from_rows(&gs), &go]))
        },
    );
    // By hand: 2 r_k on the first component of state 2 + k, the last state's own values
    // added; the rows before the warm-up get nothing.
    let states = to_rows(&x0, 2);
    let (_, (gs, go)) = trajectory_misfit_grad(&states, &obs, 2);
    let r: Vec<f64> = (0..3).map(|k| states[2 + k][0] - obs[k]).collect();
    let want = [
        0.0,
        0.0,
        0.0,
        0.0,
        2.0 * r[0],
        0.0,
        2.0 * r[1],
        0.0,
        2.0 * r[2] + states[4][0],
        states[4][1],
    ];
    assert_rel("trajectory_misfit: gradient by hand", &from_rows(&gs), &want, 1e-14);
    assert_rel("trajectory_misfit: ∂/∂obs by hand", &go, &[-2.0 * r[0], -2.0 * r[1], -2.0 * r[2]], 1e-14);
    // A warm-up past the end panics naming the range, as slicing does.
    let past = std::panic::catch_unwind(|| trajectory_misfit_grad(&states, &obs, 7));
    let msg = panic_message(past.expect_err("a range past the rows panics"));
    assert!(msg.contains("states[warmup..]") && msg.contains("out of its bounds"), "{msg}");
}

pub fn rows_of_planes_in_calls() {
    // Two layers of 2×4, relaxed in place.
    let t0: Vec<f64> = (0..16).map(|q| (q as f64 * 0.9).cos()).collect();
    let x = cat(&[&t0, &[0.3, 0.9]]);
    check_fwd_rev(&Case {
        name: "relax_layers",
        x: &x,
        primal: &|x| {
            let mut t = to3(&x[..16], 2, 4);
            relax_layers(&mut t, x[16], x[17]);
            from3(&t)
        },
        jvp: &|x, d| {
            let (mut t, mut dt) = (to3(&x[..16], 2, 4), to3(&d[..16], 2, 4));
            relax_layers_fwd(&mut t, &mut dt, x[16], d[16], x[17], d[17]);
            (from3(&t), from3(&dt))
        },
        vjp: &|x, y| {
            let (mut t, mut dt) = (to3(&x[..16], 2, 4), to3(y, 2, 4));
            let (dw, dd) = relax_layers_rev(&mut t, &mut dt, x[16], x[17]);
            (from3(&t), cat(&[&from3(&dt), &[dw, dd]]))
        },
        tols: TOLS,
    });
    // By hand: with w = 0 the rows are only scaled, so ∂t[l][i][j]/∂decay = t0[l][i][j].
    let mut t = to3(&t0, 2, 4);
    let mut dt = to3(&zeros(16), 2, 4);
    dt[1][0][2] = 1.0;
    let (_, dd) = relax_layers_rev(&mut t, &mut dt, 0.0, 0.9);
    assert_rel("relax_layers: ∂/∂decay by hand", &[dd], &[t0[10]], 1e-14);

    // Three planes of 2×3; the middle one only.
    let f0: Vec<f64> = (0..18).map(|q| 0.1 * q as f64 - 0.8).collect();
    let p = cat(&[&f0, &[1.7]]);
    check_point(
        "inner_energy",
        &p,
        &|p| inner_energy(&to3(&p[..18], 2, 3), p[18]),
        &|p| {
            let (v, (g, gk)) = inner_energy_grad(&to3(&p[..18], 2, 3), p[18]);
            (v, cat(&[&from3(&g), &[gk]]))
        },
        &|p, d| inner_energy_fwd(&to3(&p[..18], 2, 3), &to3(&d[..18], 2, 3), p[18], d[18]),
        &|p, s| {
            let mut g = to3(&zeros(18), 2, 3);
            let (v, gk) = inner_energy_rev(&to3(&p[..18], 2, 3), &mut g, p[18], s);
            (v, cat(&[&from3(&g), &[gk]]))
        },
    );
    // By hand: 2 k t on the middle plane, nothing elsewhere; ∂/∂k = Σ t² there.
    let (_, (g, gk)) = inner_energy_grad(&to3(&f0, 2, 3), 1.7);
    let want: Vec<f64> = (0..18).map(|q| if (6..12).contains(&q) { 2.0 * 1.7 * f0[q] } else { 0.0 }).collect();
    assert_rel("inner_energy: gradient by hand", &from3(&g), &want, 1e-14);
    let sq: f64 = f0[6..12].iter().map(|v| v * v).sum();
    assert_rel("inner_energy: ∂/∂k by hand", &[gk], &[sq], 1e-14);
}

pub fn flattened_rows() {
    // A ragged 2 + 3 matrix, flattened by rows.
    let p = [0.7, -1.2, 0.4, 2.1, -0.3];
    let rows = |p: &[f64]| vec![p[..2].to_vec(), p[2..].to_vec()];
    check_generic(&Generic {
        name: "frobenius",
        x: &p,
        f: &|p| frobenius(&rows(p)),
        f_dual: &|p| frobenius(&[p[..2].to_vec(), p[2..].to_vec()]),
        f_hyper: &|p| frobenius(&[p[..2].to_vec(), p[2..].to_vec()]),
        grad: &|p| {
            let (v, g) = frobenius_grad(&rows(p));
            (v, from_rows(&g))
        },
        fwd: &|p, d| frobenius_fwd(&rows(p), &rows(d)),
        rev: &|p, s| {
            let mut g = rows(&zeros(5));
            let v = frobenius_rev(&rows(p), &mut g, s);
            (v, from_rows(&g))
        },
        hvp: &|p, v| {
            let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
            let xs: Vec<_> = (0..5).map(|i| d(p[i], v[i])).collect();
            let x = vec![xs[..2].to_vec(), xs[2..].to_vec()];
            let mut g = vec![vec![d(0.0, 0.0); 2], vec![d(0.0, 0.0); 3]];
            frobenius_rev(&x, &mut g, phidiff::Dual::constant(1.0));
            g.iter().flatten().map(|z| z.eps).collect()
        },
    });
    // By hand: m / ‖m‖.
    let norm = p.iter().map(|v| v * v).sum::<f64>().sqrt();
    let want: Vec<f64> = p.iter().map(|v| v / norm).collect();
    assert_rel("frobenius: gradient by hand", &from_rows(&frobenius_grad(&rows(&p)).1), &want, 1e-14);

    // Voxels: planes of 2×2 and 1×2 (ragged), flattened in (plane, row, column) order.
    let v0 = [1.0, -2.0, 0.5, 0.3, -0.4, 0.7];
    let grid = |p: &[f64]| vec![vec![p[..2].to_vec(), p[2..4].to_vec()], vec![p[4..6].to_vec()]];
    let x = cat(&[&v0, &[0.5]]);
    check_point(
        "voxel_moment",
        &x,
        &|x| voxel_moment(&grid(x), x[6]),
        &|x| {
            let (v, (g, gk)) = voxel_moment_grad(&grid(x), x[6]);
            (v, cat(&[&g.iter().flatten().flatten().copied().collect::<Vec<_>>(), &[gk]]))
        },
        &|x, d| voxel_moment_fwd(&grid(x), &grid(d), x[6], d[6]),
        &|x, s| {
            let mut g = grid(&zeros(6));
            let (v, gk) = voxel_moment_rev(&grid(x), &mut g, x[6], s);
            (v, cat(&[&g.iter().flatten().flatten().copied().collect::<Vec<_>>(), &[gk]]))
        },
    );
    // By hand: (i + k) + cos(v) where v > 0; ∂/∂k = Σ v.
    let (_, (g, gk)) = voxel_moment_grad(&grid(&v0), 0.5);
    let want: Vec<f64> =
        v0.iter().enumerate().map(|(i, &v)| i as f64 + 0.5 + if v > 0.0 { v.cos() } else { 0.0 }).collect();
    let got: Vec<f64> = g.iter().flatten().flatten().copied().collect();
    assert_rel("voxel_moment: gradient by hand", &got, &want, 1e-14);
    assert_rel("voxel_moment: ∂/∂k by hand", &[gk], &[v0.iter().sum::<f64>()], 1e-14);

    // In place, and pushed from a flattened loop.
    let x = cat(&[&p, &[1.7]]);
    check_fwd_rev(&Case {
        name: "scale_entries",
        x: &x,
        primal: &|x| {
            let mut m = rows(&x[..5]);
            scale_entries(&mut m, x[5]);
            from_rows(&m)
        },
        jvp: &|x, d| {
            let (mut m, mut dm) = (rows(&x[..5]), rows(&d[..5]));
            scale_entries_fwd(&mut m, &mut dm, x[5], d[5]);
            (from_rows(&m), from_rows(&dm))
        },
        vjp: &|x, y| {
            let (mut m, mut dm) = (rows(&x[..5]), rows(y));
            let da = scale_entries_rev(&mut m, &mut dm, x[5]);
            (from_rows(&m), cat(&[&from_rows(&dm), &[da]]))
        },
        tols: TOLS,
    });
    check_point(
        "positive_energy",
        &p,
        &|p| positive_energy(&rows(p)),
        &|p| {
            let (v, g) = positive_energy_grad(&rows(p));
            (v, from_rows(&g))
        },
        &|p, d| positive_energy_fwd(&rows(p), &rows(d)),
        &|p, s| {
            let mut g = rows(&zeros(5));
            let v = positive_energy_rev(&rows(p), &mut g, s);
            (v, from_rows(&g))
        },
    );
    // By hand: 2v on the positive entries, −sin v on all.
    let want: Vec<f64> = p.iter().map(|&v| if v > 0.0 { 2.0 * v } else { 0.0 } - v.sin()).collect();
    assert_rel("positive_energy: gradient by hand", &from_rows(&positive_energy_grad(&rows(&p)).1), &want, 1e-14);
}

pub fn views_in_rayon_closures() {
    let p = [1.0, 2.0, 0.5, 0.3, -1.0, 0.25, 0.8, -0.6, 1.1];
    check_fwd_rev(&Case {
        name: "row_features",
        x: &p,
        primal: &|x| {
            let mut out = zeros(3);
            row_features(&to_rows(x, 3), &mut out);
            out
        },
        jvp: &|x, d| {
            let (mut out, mut dout) = (zeros(3), zeros(3));
            row_features_fwd(&to_rows(x, 3), &to_rows(d, 3), &mut out, &mut dout);
            (out, dout)
        },
        vjp: &|x, y| {
            let (mut out, mut dout) = (zeros(3), y.to_vec());
            let mut dm = to_rows(&zeros(9), 3);
            row_features_rev(&to_rows(x, 3), &mut dm, &mut out, &mut dout);
            (out, from_rows(&dm))
        },
        tols: TOLS,
    });
    // By hand, row 0 seeded: ∂/∂r0 = 2 r0 + r1, ∂/∂r1 = cos r1 + r0 + r2, ∂/∂r2 = cos r2 + r1.
    let m = to_rows(&p, 3);
    let (mut out, mut dout) = (zeros(3), vec![1.0, 0.0, 0.0]);
    let mut dm = to_rows(&zeros(9), 3);
    row_features_rev(&m, &mut dm, &mut out, &mut dout);
    let r = &m[0];
    let want = [2.0 * r[0] + r[1], r[1].cos() + r[0] + r[2], r[2].cos() + r[1]];
    assert_rel("row_features: row 0 by hand", &dm[0], &want, 1e-14);

    let x = cat(&[&p, &[0.7]]);
    check_point(
        "parallel_row_energy",
        &x,
        &|x| parallel_row_energy(&to_rows(&x[..9], 3), x[9]),
        &|x| {
            let (v, (g, gk)) = parallel_row_energy_grad(&to_rows(&x[..9], 3), x[9]);
            (v, cat(&[&from_rows(&g), &[gk]]))
        },
        &|x, d| parallel_row_energy_fwd(&to_rows(&x[..9], 3), &to_rows(&d[..9], 3), x[9], d[9]),
        &|x, s| {
            let mut g = to_rows(&zeros(9), 3);
            let (v, gk) = parallel_row_energy_rev(&to_rows(&x[..9], 3), &mut g, x[9], s);
            (v, cat(&[&from_rows(&g), &[gk]]))
        },
    );
    // By hand: 2 k v, and Σ v² for k.
    let (_, (g, gk)) = parallel_row_energy_grad(&m, 0.7);
    let want: Vec<f64> = p.iter().map(|v| 1.4 * v).collect();
    assert_rel("parallel_row_energy: gradient by hand", &from_rows(&g), &want, 1e-14);
    assert_rel("parallel_row_energy: ∂/∂k by hand", &[gk], &[p.iter().map(|v| v * v).sum::<f64>()], 1e-14);
}

pub fn nested_pushes_after_lets() {
    // Three states of two components; one jump is below the threshold.
    let p = [0.5, 1.0, 0.55, -1.0, 2.0, -0.5, 0.25];
    check_point(
        "track_energy",
        &p,
        &|p| track_energy(&to_rows(&p[..6], 2), p[6]),
        &|p| {
            let (v, (g, gw)) = track_energy_grad(&to_rows(&p[..6], 2), p[6]);
            (v, cat(&[&from_rows(&g), &[gw]]))
        },
        &|p, d| track_energy_fwd(&to_rows(&p[..6], 2), &to_rows(&d[..6], 2), p[6], d[6]),
        &|p, s| {
            let mut g = to_rows(&zeros(6), 2);
            let (v, gw) = track_energy_rev(&to_rows(&p[..6], 2), &mut g, p[6], s);
            (v, cat(&[&from_rows(&g), &[gw]]))
        },
    );
    // By hand: 2 w m, plus 2 (m[i][j] − m[i−1][j]) into m[i][j] and out of m[i−1][j] for
    // each jump above 0.1 (all but m[1][0] − m[0][0] = 0.05).
    let m = to_rows(&p[..6], 2);
    let w = p[6];
    let mut want: Vec<Vec<f64>> = m.iter().map(|r| r.iter().map(|v| 2.0 * w * v).collect()).collect();
    for i in 1..3 {
        for j in 0..2 {
            let d = m[i][j] - m[i - 1][j];
            if d.abs() > 0.1 {
                want[i][j] += 2.0 * d;
                want[i - 1][j] -= 2.0 * d;
            }
        }
    }
    let (_, (g, gw)) = track_energy_grad(&m, w);
    assert_rel("track_energy: gradient by hand", &from_rows(&g), &from_rows(&want), 1e-14);
    assert_rel("track_energy: ∂/∂w by hand", &[gw], &[p[..6].iter().map(|v| v * v).sum::<f64>()], 1e-14);
}

pub fn views_in_checkpointed_loops() {
    let x: Vec<f64> = (0..9).map(|q| 0.1 * q as f64 - 0.3).collect();
    let p = cat(&[&x, &[0.8]]);
    check_point(
        "relaxed_rows",
        &p,
        &|p| relaxed_rows(&p[..9], p[9], 5),
        &|p| {
            let (v, (g, gk)) = relaxed_rows_grad(&p[..9], p[9], 5);
            (v, cat(&[&g, &[gk]]))
        },
        &|p, d| relaxed_rows_fwd(&p[..9], &d[..9], p[9], d[9], 5),
        &|p, s| {
            let mut g = zeros(9);
            let (v, gk) = relaxed_rows_rev(&p[..9], &mut g, p[9], 5, s);
            (v, cat(&[&g, &[gk]]))
        },
    );
}

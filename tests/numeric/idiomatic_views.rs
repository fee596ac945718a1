//! Issue 46's corpus, views of more than one dimension: a plane of a 3-D buffer (`&t[i]`,
//! `for image in stack.iter()`), a range of the rows of a 2-D one (`&states[warmup..]`),
//! and rows of a 3-D buffer passed to calls (`smooth_row(&mut t[l][i], w)`). Each is
//! checked by finite differences, the dot-product test and values derived by hand.

use super::differentiate;
use crate::common::*;

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

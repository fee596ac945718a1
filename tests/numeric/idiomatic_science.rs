//! Issue 46's corpus, statistics, ODE right-hand sides, small physics and geometry, and
//! f32 kernels: written as numerical crates write them (module constants and constant
//! tables, iterator chains, closures, `&f64` inputs and `&mut f64` outputs, casts between
//! f32 and f64), with only `#[differentiate]` added. Generic ones are checked by
//! `check_generic` (num-dual, finite differences, the dot-product test, hyper-dual H·v);
//! `f64`/`f32` ones by finite differences and the dot-product test, and by hand-derived
//! values where they are short.

use super::differentiate;
use crate::common::*;
use num_traits::{Float, FromPrimitive};
use std::iter::Sum;

/// ln √(2π).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
/// Lorenz-63's parameters.
const SIGMA: f64 = 10.0;
const RHO: f64 = 28.0;
const BETA: f64 = 8.0 / 3.0;
/// Bodies of the small gravitational system below, and its constant.
const N_BODIES: usize = 3;
const G: f64 = 4.0 * std::f64::consts::PI * std::f64::consts::PI;
/// Abramowitz–Stegun 7.1.26 coefficients of `erf`.
const ERF_P: f64 = 0.327_591_1;
const ERF_A: [f64; 5] = [0.254_829_592, -0.284_496_736, 1.421_413_741, -1.453_152_027, 1.061_405_429];

/// The log-likelihood of `data` under N(μ, σ²), σ = e^{log σ}.
#[differentiate(forward, reverse)]
pub fn normal_log_likelihood<T: Float + FromPrimitive + Sum>(data: &[T], mu: T, log_sigma: T) -> T {
    let sigma = log_sigma.exp();
    let n = T::from_usize(data.len()).unwrap();
    let squares: T = data.iter().map(|&x| ((x - mu) / sigma).powi(2)).sum();
    -n * (T::from_f64(LN_SQRT_2PI).unwrap() + log_sigma) - T::from_f64(0.5).unwrap() * squares
}

/// `ln Σ eˣ`, shifted by the maximum (a `fold` with `Float::max`).
#[differentiate(forward, reverse)]
pub fn log_sum_exp<T: Float + Sum>(x: &[T]) -> T {
    let m = x.iter().copied().fold(T::neg_infinity(), T::max);
    m + x.iter().map(|&v| (v - m).exp()).sum::<T>().ln()
}

/// A weighted variance: weights and values zipped, the mean first.
#[differentiate(forward, reverse)]
pub fn weighted_variance<T: Float + Sum>(x: &[T], w: &[T]) -> T {
    let total: T = w.iter().copied().sum();
    let mean = x.iter().zip(w).map(|(&a, &b)| a * b).sum::<T>() / total;
    x.iter()
        .zip(w.iter())
        .map(|(&a, &b)| b * (a - mean) * (a - mean))
        .sum::<T>()
        / total
}

/// Softmax cross-entropy of `logits` against class `target`, through a local closure.
#[differentiate(forward, reverse)]
pub fn softmax_cross_entropy(logits: &[f64], target: usize) -> f64 {
    let lse = |v: &[f64]| {
        let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        m + v.iter().map(|&z| (z - m).exp()).sum::<f64>().ln()
    };
    lse(logits) - logits[target]
}

/// Logistic regression's mean loss over rows of `d` features (`chunks_exact`), labels ±1.
#[differentiate(forward, reverse, wrt(w))]
pub fn logistic_loss(w: &[f64], features: &[f64], labels: &[f64], d: usize) -> f64 {
    let n = labels.len() as f64;
    features
        .chunks_exact(d)
        .zip(labels)
        .map(|(row, &y)| {
            let z: f64 = row.iter().zip(w).map(|(a, b)| a * b).sum();
            (1.0 + (-y * z).exp()).ln()
        })
        .sum::<f64>()
        / n
}

/// The Huber loss through a closure that branches.
#[differentiate(forward, reverse)]
pub fn huber_loss(residuals: &[f64], delta: f64) -> f64 {
    let h = |e: f64| {
        if e.abs() <= delta {
            0.5 * e * e
        } else {
            delta * (e.abs() - 0.5 * delta)
        }
    };
    residuals.iter().map(|&e| h(e)).sum()
}

/// Horner's rule with the coefficients reversed and folded.
#[differentiate(forward, reverse)]
pub fn horner(coeffs: &[f64], x: f64) -> f64 {
    coeffs.iter().rev().fold(0.0, |acc, &c| acc * x + c)
}

/// `erf(x)` by Abramowitz–Stegun 7.1.26, its coefficients a constant table, for `x ≥ 0`.
#[differentiate(forward, reverse)]
pub fn erf_approx(x: f64) -> f64 {
    let t = 1.0 / (1.0 + ERF_P * x);
    let mut poly = 0.0;
    for k in (0..5).rev() {
        poly = poly * t + ERF_A[k];
    }
    1.0 - poly * t * (-x * x).exp()
}

/// The Lorenz-63 right-hand side, the state destructured.
#[differentiate(forward, reverse)]
pub fn lorenz_rhs(state: &[f64; 3], dstate: &mut [f64; 3]) {
    let [x, y, z] = *state;
    dstate[0] = SIGMA * (y - x);
    dstate[1] = x * (RHO - z) - y;
    dstate[2] = x * y - BETA * z;
}

/// The energy of `N_BODIES` bodies in the plane: kinetic, and pairwise potential over
/// `chunks_exact(2)` of the positions.
#[differentiate(forward, reverse, wrt(pos, vel))]
pub fn nbody_energy(pos: &[f64], vel: &[f64], mass: &[f64]) -> f64 {
    let mut e = 0.0;
    for (i, v) in vel.chunks_exact(2).enumerate() {
        e += 0.5 * mass[i] * (v[0] * v[0] + v[1] * v[1]);
    }
    for i in 0..N_BODIES {
        for j in i + 1..N_BODIES {
            let dx = pos[2 * i] - pos[2 * j];
            let dy = pos[2 * i + 1] - pos[2 * j + 1];
            e -= G * mass[i] * mass[j] / (dx * dx + dy * dy).sqrt();
        }
    }
    e
}

/// One symplectic Euler step of a pendulum, state in/out through `&mut f64`.
#[differentiate(forward, reverse)]
pub fn pendulum_step(theta: &mut f64, omega: &mut f64, dt: f64) {
    const GRAVITY: f64 = 9.81;
    *omega -= dt * GRAVITY * theta.sin();
    *theta += dt * *omega;
}

/// The distance from a point given by reference to a segment's nearer end, into `out`.
#[differentiate(forward, reverse)]
pub fn nearest_end(px: &f64, py: &f64, seg: &[f64; 4], out: &mut f64) {
    let [ax, ay, bx, by] = *seg;
    let da = ((px - ax).powi(2) + (py - ay).powi(2)).sqrt();
    let db = ((px - bx).powi(2) + (py - by).powi(2)).sqrt();
    *out = da.min(db);
}

/// The shoelace area of a polygon: neighbouring pairs by `windows(2)`, and the closing edge.
#[differentiate(forward, reverse)]
pub fn polygon_area(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len();
    let inner: f64 = xs
        .windows(2)
        .zip(ys.windows(2))
        .map(|(x, y)| x[0] * y[1] - x[1] * y[0])
        .sum();
    0.5 * (inner + xs[n - 1] * ys[0] - xs[0] * ys[n - 1]).abs()
}

/// The trapezoid rule over samples `y` at spacing `h`.
#[differentiate(forward, reverse)]
pub fn trapezoid(y: &[f64], h: f64) -> f64 {
    y.windows(2).map(|w| 0.5 * h * (w[0] + w[1])).sum()
}

/// An f32 kernel: `y ← a·x + y`, then the norm of `y`.
#[differentiate(forward, reverse)]
pub fn saxpy_norm(x: &[f32], y: &mut [f32], a: f32) -> f32 {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
    y.iter().map(|v| v * v).sum::<f32>().sqrt()
}

/// The mean of f32 samples accumulated in f64.
#[differentiate(forward, reverse)]
pub fn mean_in_f64(x: &[f32]) -> f32 {
    let total: f64 = x.iter().map(|&v| v as f64).sum();
    (total / x.len() as f64) as f32
}


pub fn statistics_against_num_dual() {
    // (data…, μ, log σ)
    let p = [1.2, -0.4, 0.8, 2.1, 0.3, 0.1];
    let m = 4;
    let hvp = |x: &[f64], v: &[f64]| {
        let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
        let data: Vec<_> = (0..m).map(|k| d(x[k], v[k])).collect();
        let mut dd = vec![d(0.0, 0.0); m];
        let (_, dmu, ds) = normal_log_likelihood_rev(&data, &mut dd, d(x[m], v[m]), d(x[m + 1], v[m + 1]), phidiff::Dual::constant(1.0));
        let mut out: Vec<f64> = dd.iter().map(|a| a.eps).collect();
        out.extend([dmu.eps, ds.eps]);
        out
    };
    check_generic(&Generic {
        name: "normal_log_likelihood",
        x: &p,
        f: &|x| normal_log_likelihood(&x[..m], x[m], x[m + 1]),
        f_dual: &|x| normal_log_likelihood(&x[..m], x[m], x[m + 1]),
        f_hyper: &|x| normal_log_likelihood(&x[..m], x[m], x[m + 1]),
        grad: &|x| {
            let (v, (mut g, gm, gs)) = normal_log_likelihood_grad(&x[..m], x[m], x[m + 1]);
            g.extend([gm, gs]);
            (v, g)
        },
        fwd: &|x, d| normal_log_likelihood_fwd(&x[..m], &d[..m], x[m], d[m], x[m + 1], d[m + 1]),
        rev: &|x, s| {
            let mut g = zeros(m);
            let (v, gm, gs) = normal_log_likelihood_rev(&x[..m], &mut g, x[m], x[m + 1], s);
            g.extend([gm, gs]);
            (v, g)
        },
        hvp: &hvp,
    });
    let x = [0.4, -1.3, 2.2, 0.9, -0.1];
    crate::check_slice_fn!(log_sum_exp, log_sum_exp_fwd, log_sum_exp_rev, log_sum_exp_grad, x);
    // (x…, w…)
    let q = [0.4, -1.3, 2.2, 0.9, 1.0, 2.0, 0.5, 1.5];
    let k = 4;
    check_generic(&Generic {
        name: "weighted_variance",
        x: &q,
        f: &|p| weighted_variance(&p[..k], &p[k..]),
        f_dual: &|p| weighted_variance(&p[..k], &p[k..]),
        f_hyper: &|p| weighted_variance(&p[..k], &p[k..]),
        grad: &|p| {
            let (v, (mut a, b)) = weighted_variance_grad(&p[..k], &p[k..]);
            a.extend(b);
            (v, a)
        },
        fwd: &|p, d| weighted_variance_fwd(&p[..k], &d[..k], &p[k..], &d[k..]),
        rev: &|p, s| {
            let (mut a, mut b) = (zeros(k), zeros(k));
            let v = weighted_variance_rev(&p[..k], &mut a, &p[k..], &mut b, s);
            a.extend(b);
            (v, a)
        },
        hvp: &|p, v| {
            let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
            let xs: Vec<_> = (0..k).map(|i| d(p[i], v[i])).collect();
            let ws: Vec<_> = (k..2 * k).map(|i| d(p[i], v[i])).collect();
            let (mut a, mut b) = (vec![d(0.0, 0.0); k], vec![d(0.0, 0.0); k]);
            weighted_variance_rev(&xs, &mut a, &ws, &mut b, phidiff::Dual::constant(1.0));
            a.iter().chain(&b).map(|z| z.eps).collect()
        },
    });
}

pub fn losses_and_series() {
    let logits = [0.3, -1.2, 2.0, 0.7];
    // ∂/∂z = softmax(z) − e_target.
    let (_, g) = softmax_cross_entropy_grad(&logits, 2);
    let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = logits.iter().map(|v| (v - m).exp()).sum();
    let want: Vec<f64> = (0..4).map(|i| (logits[i] - m).exp() / z - f64::from(i == 2)).collect();
    assert_all_close("softmax_cross_entropy: gradient", &g, &want, 1e-14, 1e-15);
    check_point(
        "softmax_cross_entropy",
        &logits,
        &|x| softmax_cross_entropy(x, 2),
        &|x| softmax_cross_entropy_grad(x, 2),
        &|x, d| softmax_cross_entropy_fwd(x, d, 2),
        &|x, s| {
            let mut g = zeros(x.len());
            let v = softmax_cross_entropy_rev(x, &mut g, 2, s);
            (v, g)
        },
    );
    let features = [0.5, -1.0, 2.0, 0.3, 1.5, -0.7, -0.2, 0.8, 1.1];
    let labels = [1.0, -1.0, 1.0];
    let w = [0.2, -0.4, 0.9];
    check_point(
        "logistic_loss",
        &w,
        &|w| logistic_loss(w, &features, &labels, 3),
        &|w| logistic_loss_grad(w, &features, &labels, 3),
        &|w, d| logistic_loss_fwd(w, d, &features, &labels, 3),
        &|w, s| {
            let mut g = zeros(3);
            let v = logistic_loss_rev(w, &mut g, &features, &labels, 3, s);
            (v, g)
        },
    );
    // Both sides of Huber's kink (|e| ≤ δ and beyond).
    let r = [0.3, -2.0, 1.4, -0.5, 0.8];
    let (_, (g, gd)) = huber_loss_grad(&r, 1.0);
    assert_rel("huber_loss: ∂/∂r", &g, &[0.3, -1.0, 1.0, -0.5, 0.8], 1e-15);
    assert_rel("huber_loss: ∂/∂δ", &[gd], &[(2.0 - 1.0) + (1.4 - 1.0)], 1e-15);
    let mut p = r.to_vec();
    p.push(1.0);
    check_point(
        "huber_loss",
        &p,
        &|p| huber_loss(&p[..5], p[5]),
        &|p| {
            let (v, (mut g, gd)) = huber_loss_grad(&p[..5], p[5]);
            g.push(gd);
            (v, g)
        },
        &|p, d| huber_loss_fwd(&p[..5], &d[..5], p[5], d[5]),
        &|p, s| {
            let mut g = zeros(5);
            let (v, gd) = huber_loss_rev(&p[..5], &mut g, p[5], s);
            g.push(gd);
            (v, g)
        },
    );
    // Horner: ∂/∂c_k = x^k, ∂/∂x = p'(x).
    let c = [1.0, -2.0, 0.5, 3.0];
    let x = 0.7;
    let (v, (gc, gx)) = horner_grad(&c, x);
    assert_rel("horner: value", &[v, horner(&c, x)], &[1.0 - 2.0 * x + 0.5 * x * x + 3.0 * x * x * x; 2], 1e-15);
    assert_rel("horner: ∂/∂c", &gc, &[1.0, x, x * x, x * x * x], 1e-15);
    assert_rel("horner: ∂/∂x", &[gx], &[-2.0 + x + 9.0 * x * x], 1e-14);
    // erf: the approximation's derivative is close to 2/√π e^{−x²} (its error is 1.5e-7).
    for x in [0.2, 0.9, 1.7] {
        let (_, g) = erf_approx_grad(x);
        let exact = 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp();
        assert_close("erf_approx: derivative vs 2/√π e^{−x²}", g, exact, 0.0, 2e-6);
        check_point(
            "erf_approx",
            &[x],
            &|p| erf_approx(p[0]),
            &|p| {
                let (v, g) = erf_approx_grad(p[0]);
                (v, vec![g])
            },
            &|p, d| erf_approx_fwd(p[0], d[0]),
            &|p, s| {
                let (v, g) = erf_approx_rev(p[0], s);
                (v, vec![g])
            },
        );
    }
    let y = [0.1, 0.4, 0.35, 0.8, 0.2];
    let (v, (gy, gh)) = trapezoid_grad(&y, 0.5);
    assert_rel("trapezoid: value", &[v], &[trapezoid(&y, 0.5)], 1e-15);
    assert_rel("trapezoid: ∂/∂y", &gy, &[0.25, 0.5, 0.5, 0.5, 0.25], 1e-15);
    assert_rel("trapezoid: ∂/∂h", &[gh], &[0.5 * (0.1 + 0.2) + 0.4 + 0.35 + 0.8], 1e-15);
}

pub fn ode_and_physics() {
    // Lorenz: the Jacobian by hand, each row by `_rev`, each column by `_fwd`.
    let s = [1.2, -0.7, 20.5];
    let jac = [
        [-SIGMA, SIGMA, 0.0],
        [RHO - s[2], -1.0, -s[0]],
        [s[1], s[0], -BETA],
    ];
    let mut rhs = [0.0; 3];
    lorenz_rhs(&s, &mut rhs);
    assert_rel("lorenz_rhs: value", &rhs, &[SIGMA * (s[1] - s[0]), s[0] * (RHO - s[2]) - s[1], s[0] * s[1] - BETA * s[2]], 1e-15);
    for (r, row) in jac.iter().enumerate() {
        let (mut ds, mut out, mut dout) = ([0.0; 3], [0.0; 3], [0.0; 3]);
        dout[r] = 1.0;
        lorenz_rhs_rev(&s, &mut ds, &mut out, &mut dout);
        assert_rel(&format!("lorenz_rhs: row {r}"), &ds, row, 1e-15);
    }
    for c in 0..3 {
        let mut ts = [0.0; 3];
        ts[c] = 1.0;
        let (mut out, mut tout) = ([0.0; 3], [0.0; 3]);
        lorenz_rhs_fwd(&s, &ts, &mut out, &mut tout);
        let col: Vec<f64> = jac.iter().map(|row| row[c]).collect();
        assert_rel(&format!("lorenz_rhs: column {c}"), &tout, &col, 1e-15);
    }
    // The n-body energy: positions and velocities of 3 bodies, fixed masses.
    let mass = [1.0, 0.01, 0.002];
    let pv = [0.0, 0.0, 1.0, 0.1, -0.3, 2.0, 0.01, -0.02, 0.1, 6.2, -3.0, -0.5];
    check_point(
        "nbody_energy",
        &pv,
        &|p| nbody_energy(&p[..6], &p[6..], &mass),
        &|p| {
            let (v, (mut a, b)) = nbody_energy_grad(&p[..6], &p[6..], &mass);
            a.extend(b);
            (v, a)
        },
        &|p, d| nbody_energy_fwd(&p[..6], &d[..6], &p[6..], &d[6..], &mass),
        &|p, s| {
            let (mut a, mut b) = (zeros(6), zeros(6));
            let v = nbody_energy_rev(&p[..6], &mut a, &p[6..], &mut b, &mass, s);
            a.extend(b);
            (v, a)
        },
    );
    // The pendulum step, in/out state through `&mut f64`: its Jacobian by hand.
    let (th, om, dt) = (0.4_f64, -0.3, 0.05);
    let g = 9.81;
    // ω' = ω − dt g sin θ, θ' = θ + dt ω'.
    let d_om_d = [-dt * g * th.cos(), 1.0, -g * th.sin()];
    let d_th_d = [1.0 + dt * d_om_d[0], dt, om - dt * g * th.sin() + dt * d_om_d[2]];
    for (seed, want) in [((1.0, 0.0), d_th_d), ((0.0, 1.0), d_om_d)] {
        let (mut t, mut o) = (th, om);
        let (mut dth, mut dom) = seed;
        let ddt = pendulum_step_rev(&mut t, &mut dth, &mut o, &mut dom, dt);
        assert_rel("pendulum_step: adjoint", &[dth, dom, ddt], &want, 1e-14);
        assert_rel("pendulum_step: state", &[o], &[om - dt * g * th.sin()], 1e-15);
    }
    let (mut t, mut o) = (th, om);
    pendulum_step(&mut t, &mut o, dt);
    assert_rel("pendulum_step: primal", &[t, o], &[th + dt * (om - dt * g * th.sin()), om - dt * g * th.sin()], 1e-15);
    let (mut t, mut o, mut tt, mut to) = (th, om, 0.3, -0.7);
    pendulum_step_fwd(&mut t, &mut tt, &mut o, &mut to, dt, 0.0);
    let want = d_th_d[0] * 0.3 + d_th_d[1] * -0.7;
    assert_rel("pendulum_step: tangent", &[tt], &[want], 1e-14);
    // The nearest end: a point by reference, the result through `&mut f64`.
    let seg = [0.0, 0.0, 3.0, 4.0];
    for (px, py) in [(0.6, 0.8), (2.0, 3.5)] {
        let (mut out, mut dout) = (0.0, 1.0);
        let (mut dpx, mut dpy, mut dseg) = (0.0, 0.0, [0.0; 4]);
        nearest_end_rev(&px, &mut dpx, &py, &mut dpy, &seg, &mut dseg, &mut out, &mut dout);
        let (ex, ey) = if px * px + py * py < (px - 3.0f64).powi(2) + (py - 4.0f64).powi(2) {
            (px, py)
        } else {
            (px - 3.0, py - 4.0)
        };
        let r = (ex * ex + ey * ey).sqrt();
        let mut primal = 0.0;
        nearest_end(&px, &py, &seg, &mut primal);
        assert_rel("nearest_end: value", &[out, primal], &[r, r], 1e-15);
        assert_rel("nearest_end: ∂/∂p", &[dpx, dpy], &[ex / r, ey / r], 1e-14);
        assert_rel("nearest_end: dout on exit", &[dout], &[0.0], 0.0);
        let (mut o, mut to) = (0.0, 0.0);
        nearest_end_fwd(&px, &1.0, &py, &0.0, &seg, &[0.0; 4], &mut o, &mut to);
        assert_rel("nearest_end: tangent", &[to], &[ex / r], 1e-14);
    }
    // The shoelace area: ∂A/∂x_i = ½ (y_{i+1} − y_{i−1}) for a counter-clockwise polygon.
    let xs = [0.0, 2.0, 2.5, 0.3];
    let ys = [0.0, 0.1, 1.8, 1.5];
    let (v, (gx, gy)) = polygon_area_grad(&xs, &ys);
    assert_rel("polygon_area: value", &[v], &[polygon_area(&xs, &ys)], 1e-15);
    let n = 4;
    let want_x: Vec<f64> = (0..n).map(|i| 0.5 * (ys[(i + 1) % n] - ys[(i + n - 1) % n])).collect();
    let want_y: Vec<f64> = (0..n).map(|i| 0.5 * (xs[(i + n - 1) % n] - xs[(i + 1) % n])).collect();
    assert_rel("polygon_area: ∂/∂x", &gx, &want_x, 1e-14);
    assert_rel("polygon_area: ∂/∂y", &gy, &want_y, 1e-14);
}

pub fn f32_kernels() {
    let x = [1.0f32, -2.0, 0.5];
    let y0 = [0.3f32, 0.8, -1.1];
    let a = 0.7f32;
    // ∂‖a x + y‖/∂a = (x·(a x + y)) / ‖a x + y‖.
    let yn: Vec<f32> = x.iter().zip(&y0).map(|(p, q)| a * p + q).collect();
    let norm = yn.iter().map(|v| v * v).sum::<f32>().sqrt();
    let mut y1 = y0;
    assert!((saxpy_norm(&x, &mut y1, a) - norm).abs() <= 1e-6 * norm);
    let mut y = y0;
    let (mut dx, mut dy) = ([0.0f32; 3], [0.0f32; 3]);
    let (v, da) = saxpy_norm_rev(&x, &mut dx, &mut y, &mut dy, a, 1.0);
    assert!((v - norm).abs() <= 1e-6 * norm, "saxpy_norm: value {v} vs {norm}");
    let want = x.iter().zip(&yn).map(|(p, q)| p * q).sum::<f32>() / norm;
    assert!((da - want).abs() <= 1e-6, "saxpy_norm: ∂/∂a {da} vs {want}");
    for i in 0..3 {
        assert!((dx[i] - a * yn[i] / norm).abs() <= 1e-6, "saxpy_norm: ∂/∂x[{i}]");
        assert!((dy[i] - yn[i] / norm).abs() <= 1e-6, "saxpy_norm: ∂/∂y[{i}]");
    }
    let (m, g) = mean_in_f64_grad(&x);
    assert_eq!(m, mean_in_f64(&x));
    assert!((m - (-0.5 / 3.0)).abs() < 1e-7, "mean_in_f64: value {m}");
    assert!(g.iter().all(|&d| (d - 1.0 / 3.0).abs() < 1e-7), "mean_in_f64: gradient {g:?}");
}

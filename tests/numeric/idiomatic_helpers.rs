//! Issue 48, calls as users write them: helpers without attributes. Only the functions
//! called from outside carry `#[differentiate]`; the helpers below them are plain Rust
//! (scalar helpers, slice helpers with `&mut` outputs, a generic helper, a chain three
//! deep) and are differentiated where they are called: in loops, iterator chains, a
//! Revolve-checkpointed loop and rayon closures, from two differentiated functions each.
//!
//! Helpers of other modules are inlined too, with what they name there: `numerics` (a file
//! of its own) calls `act::deep::gate` (an inline module) calling `act::softsign` and
//! `act::leaky`, which reads `act`'s private `LEAK`; the caller's module has a `LEAK` of
//! its own, which the inlined body must not read.
//!
//! Each is checked by finite differences and the dot-product test (`TOLS`); the generic
//! one also against num-dual and its `Dual` H·v against hyper-dual numbers
//! (`check_generic`). A helper with a hand-written `_rev` keeps it (counted).

use super::differentiate;
use crate::common::*;
use num_traits::Float;
use phidiff::Differentiable;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// ln(1 + eᵛ), stable for both signs.
fn softplus(v: f64) -> f64 {
    if v > 0.0 {
        v + (-v).exp().ln_1p()
    } else {
        v.exp().ln_1p()
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// One neuron: softplus of an affine map (a chain: neuron → dot, softplus).
fn neuron(w: &[f64], x: &[f64], b: f64) -> f64 {
    softplus(dot(w, x) + b)
}

/// A layer of `out.len()` neurons reading the rows of `w` (a chain three deep:
/// layer → neuron → dot / softplus).
fn layer(w: &[f64], x: &[f64], b: &[f64], out: &mut [f64]) {
    let n = x.len();
    for k in 0..out.len() {
        out[k] = neuron(&w[k * n..(k + 1) * n], x, b[k]);
    }
}

/// Parameters named like the caller's arguments, in the other order.
fn lerp(x: f64, y: f64, t: f64) -> f64 {
    x + t * (y - x)
}

/// Two layers and a logistic read-out: every helper called from one function.
#[differentiate(forward, reverse)]
pub fn mlp(w1: &[f64], b1: &[f64], w2: &[f64], x: &[f64]) -> f64 {
    let mut h = vec![0.0; b1.len()];
    layer(w1, x, b1, &mut h);
    let z = dot(w2, &h);
    let y = sigmoid(z);
    lerp(y, z, 0.25)
}

/// The same helpers from a second differentiated function, in an iterator chain and
/// with sub-slices.
#[differentiate(forward, reverse)]
pub fn scores(x: &[f64], a: f64) -> f64 {
    let head = dot(&x[..2], &x[1..3]);
    let s: f64 = x.iter().map(|&v| sigmoid(a * v)).sum();
    let mut t = 0.0;
    for i in 0..x.len() {
        let y = x[x.len() - 1 - i];
        t += lerp(y, x[i], a);
    }
    head * s + softplus(t - 1.0)
}

pub fn helper_chains() {
    let (w1, b1, w2, x) = (
        [0.3, -0.2, 0.5, 0.1, 0.7, -0.4],
        [0.05, -0.1],
        [0.8, -0.6],
        [0.9, -1.1, 0.4],
    );
    let flat = cat(&[&w1, &b1, &w2, &x]);
    let lens = [6, 2, 2, 3];
    check_grad(
        "mlp",
        &flat,
        &|p| {
            let s = split(p, &lens);
            mlp(s[0], s[1], s[2], s[3])
        },
        &|p| {
            let s = split(p, &lens);
            let (v, g) = mlp_grad(s[0], s[1], s[2], s[3]);
            (v, cat(&[&g.0, &g.1, &g.2, &g.3]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "mlp",
        x: &flat,
        primal: &|p| {
            let s = split(p, &lens);
            vec![mlp(s[0], s[1], s[2], s[3])]
        },
        jvp: &|p, d| {
            let (s, t) = (split(p, &lens), split(d, &lens));
            let (v, dv) = mlp_fwd(s[0], t[0], s[1], t[1], s[2], t[2], s[3], t[3]);
            (vec![v], vec![dv])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let mut g: Vec<Vec<f64>> = lens.iter().map(|&n| zeros(n)).collect();
            let [g0, g1, g2, g3] = &mut g[..] else {
                unreachable!()
            };
            let v = mlp_rev(s[0], g0, s[1], g1, s[2], g2, s[3], g3, w[0]);
            (vec![v], g.concat())
        },
        tols: TOLS,
    });
    let x = [0.4, -0.3, 1.2, 0.8, -0.9];
    let p = cat(&[&x, &[0.7]]);
    check_grad(
        "scores",
        &p,
        &|p| scores(&p[..5], p[5]),
        &|p| {
            let (v, (dx, da)) = scores_grad(&p[..5], p[5]);
            (v, cat(&[&dx, &[da]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "scores",
        x: &p,
        primal: &|p| vec![scores(&p[..5], p[5])],
        jvp: &|p, d| {
            let (v, t) = scores_fwd(&p[..5], &d[..5], p[5], d[5]);
            (vec![v], vec![t])
        },
        vjp: &|p, w| {
            let mut dx = zeros(5);
            let (v, da) = scores_rev(&p[..5], &mut dx, p[5], w[0]);
            (vec![v], cat(&[&dx, &[da]]))
        },
        tols: TOLS,
    });
}

/// A generic helper at the caller's float type, also at `Dual<f64>` (H·v).
fn smooth_abs<T: Float>(v: T, eps: T) -> T {
    (v * v + eps * eps).sqrt() - eps
}

/// A generic helper calling a generic helper.
fn penalty<T: Float>(x: &[T], k: usize) -> T {
    let eps = T::from(0.1).unwrap();
    let mut s = T::zero();
    for i in 0..x.len() - k {
        s = s + smooth_abs(x[i + k] - x[i], eps);
    }
    s
}

#[differentiate(forward, reverse)]
pub fn total_variation<T: Float>(x: &[T]) -> T {
    let half = T::from(0.5).unwrap();
    penalty(x, 1) + half * penalty::<T>(x, 2) + smooth_abs(x[0], half)
}

pub fn generic_helpers() {
    let x = [0.3, 1.2, -0.7, 0.4, 0.45];
    check_generic(&Generic {
        name: "total_variation",
        x: &x,
        f: &|x| total_variation(x),
        f_dual: &|x| total_variation(x),
        f_hyper: &|x| total_variation(x),
        grad: &|x| total_variation_grad(x),
        fwd: &|x, d| total_variation_fwd(x, d),
        rev: &|x, seed| {
            let mut dx = zeros(x.len());
            let v = total_variation_rev(x, &mut dx, seed);
            (v, dx)
        },
        hvp: &|x, v| hvp_of(&|x, dx, s| total_variation_rev(x, dx, s), x, v),
    });
}

/// One explicit Euler step of a logistic growth law, written into `next`.
fn growth_step(u: &[f64], rate: f64, dt: f64, next: &mut [f64]) {
    for i in 0..u.len() {
        next[i] = u[i] + dt * rate * u[i] * (1.0 - sigmoid(u[i]));
    }
}

/// Helpers in each step of a Revolve-checkpointed loop.
#[differentiate(forward, reverse)]
pub fn grown(u0: &[f64], rate: f64, steps: usize) -> f64 {
    let mut u = u0.to_vec();
    let mut next = vec![0.0; u0.len()];
    #[checkpoint(revolve(snapshots = 3))]
    for _ in 0..steps {
        growth_step(&u, rate, 0.05, &mut next);
        u.copy_from_slice(&next);
    }
    dot(&u, &u)
}

/// Helpers in rayon closures, inside a time loop.
#[differentiate(forward, reverse)]
pub fn relaxed(x: &[f64], a: f64, sweeps: usize) -> f64 {
    let mut u = x.to_vec();
    let mut v = vec![0.0; x.len()];
    for _ in 0..sweeps {
        v.par_iter_mut().enumerate().for_each(|(i, vi)| {
            *vi = lerp(u[i], sigmoid(a * u[i]), 0.5);
        });
        u.copy_from_slice(&v);
    }
    u.par_iter().map(|&w| softplus(w)).sum::<f64>()
}

pub fn helpers_in_loops() {
    let u0 = [0.2, 0.5, 0.9, 1.4];
    let (rate, steps) = (0.8, 13);
    let p = cat(&[&u0, &[rate]]);
    check_fwd_rev(&Case {
        name: "grown",
        x: &p,
        primal: &|p| vec![grown(&p[..4], p[4], steps)],
        jvp: &|p, d| {
            let (v, t) = grown_fwd(&p[..4], &d[..4], p[4], d[4], steps);
            (vec![v], vec![t])
        },
        vjp: &|p, w| {
            let mut du = zeros(4);
            let (v, dr) = grown_rev(&p[..4], &mut du, p[4], steps, w[0]);
            (vec![v], cat(&[&du, &[dr]]))
        },
        tols: TOLS,
    });
    let x = [0.3, -0.8, 1.1, 0.05, 0.6];
    let p = cat(&[&x, &[1.3]]);
    check_fwd_rev(&Case {
        name: "relaxed",
        x: &p,
        primal: &|p| vec![relaxed(&p[..5], p[5], 4)],
        jvp: &|p, d| {
            let (v, t) = relaxed_fwd(&p[..5], &d[..5], p[5], d[5], 4);
            (vec![v], vec![t])
        },
        vjp: &|p, w| {
            let mut dx = zeros(5);
            let (v, da) = relaxed_rev(&p[..5], &mut dx, p[5], 4, w[0]);
            (vec![v], cat(&[&dx, &[da]]))
        },
        tols: TOLS,
    });
}

static CLAMPED_REV_CALLS: AtomicUsize = AtomicUsize::new(0);
static CLAMPED_FWD_CALLS: AtomicUsize = AtomicUsize::new(0);

/// A helper with hand-written derivatives: they are called, its body is not inlined.
fn clamped_log(v: f64) -> f64 {
    v.max(1e-3).ln()
}

fn clamped_log_fwd(v: f64, dv: f64) -> (f64, f64) {
    CLAMPED_FWD_CALLS.fetch_add(1, Ordering::Relaxed);
    let d = if v > 1e-3 { dv / v } else { 0.0 };
    (clamped_log(v), d)
}

fn clamped_log_rev(v: f64, seed: f64) -> (f64, f64) {
    CLAMPED_REV_CALLS.fetch_add(1, Ordering::Relaxed);
    let d = if v > 1e-3 { seed / v } else { 0.0 };
    (clamped_log(v), d)
}

#[differentiate(forward, reverse)]
pub fn log_likelihood(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += clamped_log(sigmoid(x[i]));
    }
    s
}

pub fn custom_rules_beat_inlining() {
    let x = [0.3, -1.2, 2.0];
    let (rev0, fwd0) = (
        CLAMPED_REV_CALLS.load(Ordering::Relaxed),
        CLAMPED_FWD_CALLS.load(Ordering::Relaxed),
    );
    check_grad(
        "log_likelihood",
        &x,
        &|x| log_likelihood(x),
        &|x| log_likelihood_grad(x),
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "log_likelihood",
        x: &x,
        primal: &|x| vec![log_likelihood(x)],
        jvp: &|x, d| {
            let (v, t) = log_likelihood_fwd(x, d);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let mut dx = zeros(x.len());
            let v = log_likelihood_rev(x, &mut dx, w[0]);
            (vec![v], dx)
        },
        tols: TOLS,
    });
    assert!(CLAMPED_REV_CALLS.load(Ordering::Relaxed) > rev0);
    assert!(CLAMPED_FWD_CALLS.load(Ordering::Relaxed) > fwd0);
}

/// Activations in an inline module.
mod act {
    const LEAK: f64 = 0.01;

    pub fn softsign(v: f64) -> f64 {
        v / (1.0 + v.abs())
    }

    pub fn leaky(v: f64) -> f64 {
        if v > 0.0 {
            v
        } else {
            LEAK * v
        }
    }

    pub mod deep {
        pub fn gate(a: f64, b: f64) -> f64 {
            super::softsign(a) * super::leaky(b)
        }
    }
}

mod numerics;

/// Not `act`'s: an inlined `leaky` must read its own module's.
#[allow(dead_code)]
const LEAK: f64 = 100.0;

#[differentiate(forward, reverse)]
pub fn coupled(x: &[f64]) -> f64 {
    let n = x.len() / 2;
    numerics::pair_energy(&x[..n], &x[n..]) + act::leaky(x[0] - 1.0)
}

pub fn helpers_across_modules() {
    let x = [0.4, -1.3, 2.1, -0.6, 0.9, -0.2];
    // `leaky` with `act`'s LEAK: written out, as a value that shares no generated code.
    let leaky = |v: f64| if v > 0.0 { v } else { 0.01 * v };
    let softsign = |v: f64| v / (1.0 + v.abs());
    let by_hand: f64 = 0.5 * (0..3).map(|i| softsign(x[i]) * leaky(x[i + 3])).sum::<f64>()
        + leaky(x[0] - 1.0);
    assert_close("coupled", coupled(&x), by_hand, 1e-15, 1e-15);
    check_grad("coupled", &x, &|x| coupled(x), &|x| coupled_grad(x), TOLS);
    check_fwd_rev(&Case {
        name: "coupled",
        x: &x,
        primal: &|x| vec![coupled(x)],
        jvp: &|x, d| {
            let (v, t) = coupled_fwd(x, d);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let mut dx = zeros(x.len());
            let v = coupled_rev(x, &mut dx, w[0]);
            (vec![v], dx)
        },
        tols: TOLS,
    });
    // x[0] - 1.0 < 0: the derivative of leaky there is act's LEAK, 0.01, not 100.
    let (_, g) = coupled_grad(&x);
    let d_softsign = 1.0 / (1.0 + x[0].abs()).powi(2);
    assert_close("∂coupled/∂x0", g[0], 0.5 * d_softsign * leaky(x[3]) + 0.01, 1e-14, 1e-15);
}

/// Mean and variance: a tuple result, taken apart by the caller's `let`.
fn mean_var<T: Float>(y: &[T]) -> (T, T) {
    let n = T::from(y.len()).unwrap();
    let m = y.iter().fold(T::zero(), |a, &b| a + b) / n;
    let mut v = T::zero();
    for &a in y {
        v = v + (a - m) * (a - m);
    }
    (m, v / n)
}

/// An array result.
fn cross(a: &[f64], b: &[f64]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Early returns (guards), as numerical code writes them.
fn huber(r: f64, delta: f64) -> f64 {
    let a = r.abs();
    if a <= delta {
        return 0.5 * r * r;
    }
    delta * (a - 0.5 * delta)
}

fn safe_ratio(a: f64, b: f64) -> f64 {
    if b.abs() < 1e-12 {
        return 0.0;
    }
    a / b
}

/// Tuple, array and guarded helpers in one objective, also bound whole (`t.0`).
#[differentiate(forward, reverse)]
pub fn robust_fit(x: &[f64], delta: f64) -> f64 {
    let (m, v) = mean_var(x);
    let t = mean_var(&x[1..]);
    let c: [f64; 3] = cross(&x[..3], &x[3..6]);
    let mut loss = 0.0;
    for i in 0..x.len() {
        loss += huber(x[i] - m, delta);
    }
    loss + v * t.0 + t.1 + c[0] * c[2] + safe_ratio(c[1], m)
}

pub fn helpers_with_results_and_returns() {
    // Residuals on both sides of delta, so both branches of `huber` are taken.
    let x = [0.3, 1.5, -0.9, -0.4, 0.7, 2.2, 0.05];
    let p = cat(&[&x, &[0.6]]);
    check_grad(
        "robust_fit",
        &p,
        &|p| robust_fit(&p[..7], p[7]),
        &|p| {
            let (v, (dx, dd)) = robust_fit_grad(&p[..7], p[7]);
            (v, cat(&[&dx, &[dd]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "robust_fit",
        x: &p,
        primal: &|p| vec![robust_fit(&p[..7], p[7])],
        jvp: &|p, d| {
            let (v, t) = robust_fit_fwd(&p[..7], &d[..7], p[7], d[7]);
            (vec![v], vec![t])
        },
        vjp: &|p, w| {
            let mut dx = zeros(7);
            let (v, dd) = robust_fit_rev(&p[..7], &mut dx, p[7], w[0]);
            (vec![v], cat(&[&dx, &[dd]]))
        },
        tols: TOLS,
    });
}

/// A particle with methods and no attributes on them.
#[derive(Differentiable, Clone, Debug)]
pub struct Particle<T> {
    pub pos: [T; 2],
    pub vel: [T; 2],
    pub mass: T,
}

impl<T: Float> Particle<T> {
    fn kinetic(&self) -> T {
        let half = T::from(0.5).unwrap();
        half * self.mass * (self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1])
    }

    /// Calls an associated function through `Self`.
    fn potential(&self, g: T) -> T {
        self.mass * g * self.pos[1] + Self::soft(self.pos[0])
    }

    fn soft(v: T) -> T {
        (v * v + T::one()).sqrt()
    }

    /// A method calling methods.
    fn energy(&self, g: T) -> T {
        self.kinetic() + self.potential(g)
    }

    /// A differentiated method calling the plain ones on `self`.
    #[differentiate(forward, reverse)]
    pub fn lagrangian(&self, g: T) -> T {
        self.kinetic() - self.potential(g)
    }
}

/// Methods called on a struct parameter, on the elements of a slice of them by index and
/// as loop elements.
#[differentiate(forward, reverse)]
pub fn system_energy<T: Float>(p: &Particle<T>, others: &[Particle<T>], g: T) -> T {
    let mut s = p.energy(g);
    for i in 0..others.len() {
        s = s + others[i].kinetic() * Particle::soft(others[i].pos[1]);
    }
    // Loop-bound elements: the method's receiver is the element.
    for o in others.iter() {
        s = s + o.potential(g) * p.mass;
    }
    for (k, o) in others.iter().enumerate() {
        s = s + T::from(k + 1).unwrap() * o.energy(g).sin();
    }
    s
}

fn particle(x: &[f64]) -> Particle<f64> {
    Particle {
        pos: [x[0], x[1]],
        vel: [x[2], x[3]],
        mass: x[4],
    }
}

fn flat(p: &Particle<f64>) -> Vec<f64> {
    vec![p.pos[0], p.pos[1], p.vel[0], p.vel[1], p.mass]
}

pub fn methods_without_attributes() {
    // Three particles and g, flattened.
    let x = [
        0.3, 1.2, 0.5, -0.4, 2.0, 1.0, 0.2, 0.1, 0.9, 1.5, -0.7, 0.4, -0.3, 0.6, 0.8, 9.8,
    ];
    let split3 = |x: &[f64]| (particle(&x[..5]), vec![particle(&x[5..10]), particle(&x[10..15])], x[15]);
    check_grad(
        "system_energy",
        &x,
        &|x| {
            let (p, o, g) = split3(x);
            system_energy(&p, &o, g)
        },
        &|x| {
            let (p, o, g) = split3(x);
            let (v, (dp, dos, dg)) = system_energy_grad(&p, &o, g);
            (v, cat(&[&flat(&dp), &flat(&dos[0]), &flat(&dos[1]), &[dg]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "system_energy",
        x: &x,
        primal: &|x| {
            let (p, o, g) = split3(x);
            vec![system_energy(&p, &o, g)]
        },
        jvp: &|x, d| {
            let (p, o, g) = split3(x);
            let (dp, dos, dg) = split3(d);
            let (v, t) = system_energy_fwd(&p, &dp, &o, &dos, g, dg);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let (p, o, g) = split3(x);
            let mut dp = Differentiable::zero_like(&p);
            let mut dos: Vec<Particle<f64>> = o.iter().map(Differentiable::zero_like).collect();
            let (v, dg) = system_energy_rev(&p, &mut dp, &o, &mut dos, g, w[0]);
            (vec![v], cat(&[&flat(&dp), &flat(&dos[0]), &flat(&dos[1]), &[dg]]))
        },
        tols: TOLS,
    });
    let y = [0.3, 1.2, 0.5, -0.4, 2.0, 9.8];
    check_grad(
        "lagrangian",
        &y,
        &|y| particle(&y[..5]).lagrangian(y[5]),
        &|y| {
            let p = particle(&y[..5]);
            let (v, (dp, dg)) = p.lagrangian_grad(y[5]);
            (v, cat(&[&flat(&dp), &[dg]]))
        },
        TOLS,
    );
}

/// `x = A⁻¹ b` (or `A⁻ᵀ b`) for a dense row-major `n × n` matrix, by Gaussian elimination
/// with partial pivoting on copies. Only the rules below call it.
fn gauss(a: &[f64], b: &[f64], x: &mut [f64], transpose: bool) {
    let n = b.len();
    let mut m: Vec<f64> = (0..n * n)
        .map(|k| if transpose { a[(k % n) * n + k / n] } else { a[k] })
        .collect();
    x.copy_from_slice(b);
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| m[i * n + c].abs().total_cmp(&m[j * n + c].abs()))
            .expect("a row");
        if p != c {
            for j in 0..n {
                m.swap(p * n + j, c * n + j);
            }
            x.swap(p, c);
        }
        for r in c + 1..n {
            let f = m[r * n + c] / m[c * n + c];
            for j in c..n {
                m[r * n + j] -= f * m[c * n + j];
            }
            x[r] -= f * x[c];
        }
    }
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|j| m[r * n + j] * x[j]).sum();
        x[r] = (x[r] - s) / m[r * n + r];
    }
}

/// Solves `A x = b`. Its derivatives are the custom rules below (a solve's adjoint is a
/// transposed solve), so phidiff never reads this body.
pub fn solve(a: &[f64], b: &[f64], x: &mut [f64]) {
    gauss(a, b, x, false);
}

static SOLVE_REV_CALLS: AtomicUsize = AtomicUsize::new(0);

/// `ẋ = A⁻¹ (ḃ − Ȧ x)`.
pub fn solve_fwd(a: &[f64], da: &[f64], b: &[f64], db: &[f64], x: &mut [f64], dx: &mut [f64]) {
    let n = b.len();
    gauss(a, b, x, false);
    let rhs: Vec<f64> = (0..n)
        .map(|i| db[i] - (0..n).map(|j| da[i * n + j] * x[j]).sum::<f64>())
        .collect();
    gauss(a, &rhs, dx, false);
}

/// `λ = A⁻ᵀ x̄`, `b̄ += λ`, `Ā −= λ xᵀ`; `x` is overwritten, so its adjoint before the call
/// is zero.
pub fn solve_rev(a: &[f64], da: &mut [f64], b: &[f64], db: &mut [f64], x: &mut [f64], dx: &mut [f64]) {
    SOLVE_REV_CALLS.fetch_add(1, Ordering::Relaxed);
    let n = b.len();
    gauss(a, b, x, false);
    let mut lambda = vec![0.0; n];
    gauss(a, dx, &mut lambda, true);
    for i in 0..n {
        db[i] += lambda[i];
        for j in 0..n {
            da[i * n + j] -= lambda[i] * x[j];
        }
    }
    dx.fill(0.0);
}

/// A stiffness matrix `K = K0 + diag(k)` (a helper without attributes).
fn stiffness(k0: &[f64], k: &[f64], out: &mut [f64]) {
    let n = k.len();
    for i in 0..n {
        for j in 0..n {
            out[i * n + j] = k0[i * n + j];
        }
        out[i * n + i] += k[i];
    }
}

/// Displacements under loads `f`: a helper calling the custom-rule `solve`.
fn displacement(kmat: &[f64], f: &[f64], u: &mut [f64]) {
    solve(kmat, f, u);
}

/// The compliance `fᵀ u` with `K u = f`: helpers without attributes around a custom rule.
#[differentiate(forward, reverse)]
pub fn compliance(k0: &[f64], k: &[f64], f: &[f64]) -> f64 {
    let n = k.len();
    let mut kmat = vec![0.0; n * n];
    stiffness(k0, k, &mut kmat);
    let mut u = vec![0.0; n];
    displacement(&kmat, f, &mut u);
    f.iter().zip(&u).map(|(a, b)| a * b).sum()
}

pub fn custom_solve_in_a_helper_chain() {
    let k0 = [4.0, 1.0, 0.5, 1.0, 3.0, -0.2, 0.5, -0.2, 5.0];
    let (k, f) = ([0.3, 0.7, 0.2], [1.0, -0.5, 0.8]);
    let p = cat(&[&k0, &k, &f]);
    let lens = [9, 3, 3];
    let calls = SOLVE_REV_CALLS.load(Ordering::Relaxed);
    check_grad(
        "compliance",
        &p,
        &|p| {
            let s = split(p, &lens);
            compliance(s[0], s[1], s[2])
        },
        &|p| {
            let s = split(p, &lens);
            let (v, g) = compliance_grad(s[0], s[1], s[2]);
            (v, cat(&[&g.0, &g.1, &g.2]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "compliance",
        x: &p,
        primal: &|p| {
            let s = split(p, &lens);
            vec![compliance(s[0], s[1], s[2])]
        },
        jvp: &|p, d| {
            let (s, t) = (split(p, &lens), split(d, &lens));
            let (v, dv) = compliance_fwd(s[0], t[0], s[1], t[1], s[2], t[2]);
            (vec![v], vec![dv])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut g0, mut g1, mut g2) = (zeros(9), zeros(3), zeros(3));
            let v = compliance_rev(s[0], &mut g0, s[1], &mut g1, s[2], &mut g2, w[0]);
            (vec![v], cat(&[&g0, &g1, &g2]))
        },
        tols: TOLS,
    });
    assert!(SOLVE_REV_CALLS.load(Ordering::Relaxed) > calls);
}

/// A damped oscillator stepped in place by plain functions and a method without
/// attributes.
#[derive(Differentiable, Clone, Debug)]
pub struct Oscillator<T> {
    pub x: [T; 2],
    pub k: T,
    pub damping: T,
}

impl<T: Float> Oscillator<T> {
    /// One semi-implicit Euler step, in place.
    fn step(&mut self, dt: T) {
        let a = -self.k * self.x[0] - self.damping * self.x[1];
        self.x[1] = self.x[1] + dt * a;
        self.x[0] = self.x[0] + dt * self.x[1];
    }
}

/// A helper taking the struct by shared reference.
fn spring_energy<T: Float>(o: &Oscillator<T>) -> T {
    let half = T::from(0.5).unwrap();
    half * (o.k * o.x[0] * o.x[0] + o.x[1] * o.x[1])
}

/// A helper taking it mutably, which passes it on to the method by its path and to a
/// helper.
fn kick<T: Float>(o: &mut Oscillator<T>, f: T, dt: T) -> T {
    o.x[1] = o.x[1] + f;
    Oscillator::step(o, dt);
    spring_energy(o)
}

/// Structs passed to plain helpers and methods, mutably and not, in a loop.
#[differentiate(forward, reverse)]
pub fn settle<T: Float>(osc: &mut Oscillator<T>, kicks: &[T], dt: T) -> T {
    let mut e = T::zero();
    for i in 0..kicks.len() {
        e = e + kick(osc, kicks[i], dt) * dt;
        osc.step(dt);
        Oscillator::step(osc, dt);
    }
    e + spring_energy(osc)
}

/// [`settle`]'s loop Revolve-checkpointed, the struct helper and method inside it.
#[differentiate(forward, reverse)]
pub fn settle_checkpointed(osc: &mut Oscillator<f64>, kicks: &[f64], dt: f64) -> f64 {
    let mut e = 0.0;
    #[checkpoint(revolve(snapshots = 2))]
    for i in 0..kicks.len() {
        e += kick(osc, kicks[i], dt) * dt;
        osc.step(dt);
    }
    e + spring_energy(osc)
}

fn oscillator<T: Copy>(x: &[T]) -> Oscillator<T> {
    Oscillator {
        x: [x[0], x[1]],
        k: x[2],
        damping: x[3],
    }
}

fn flat_osc(o: &Oscillator<f64>) -> Vec<f64> {
    vec![o.x[0], o.x[1], o.k, o.damping]
}

/// Two particles' interaction: called below with the arguments named like its
/// parameters in the other order.
fn pair_energy<T: Float>(p: &Particle<T>, q: &Particle<T>) -> T {
    let dx = p.pos[0] - q.pos[0];
    let dy = p.pos[1] - q.pos[1];
    p.mass * q.mass / (dx * dx + dy * dy + T::one()).sqrt()
}

/// A helper taking a slice of structs, calling a method on its loop-bound elements.
fn total_kinetic<T: Float>(ps: &[Particle<T>]) -> T {
    let mut s = T::zero();
    for q in ps.iter() {
        s = s + q.kinetic();
    }
    s
}

/// Structs and slices of them passed to plain helpers (an element by index, a loop-bound
/// element, the slice) and methods called by their paths.
#[differentiate(forward, reverse)]
pub fn cluster_energy<T: Float>(p: &Particle<T>, others: &[Particle<T>], g: T) -> T {
    let mut e = pair_energy(&others[0], p) + Particle::kinetic(p) * g;
    for q in others.iter() {
        e = e + pair_energy(p, q);
    }
    e + total_kinetic(others) + Particle::potential(&others[1], g)
}

/// Two particles held by a struct, for methods on its fields.
#[derive(Differentiable, Clone, Debug)]
pub struct Binary<T> {
    pub a: Particle<T>,
    pub b: Particle<T>,
    pub spring: T,
}

impl<T: Float> Particle<T> {
    /// Momentum: a method returning a tuple.
    fn momentum(&self) -> (T, T) {
        (self.mass * self.vel[0], self.mass * self.vel[1])
    }
}

/// Methods on fields (`s.b.potential(g)`), on a local borrowing a field (`first`), and
/// returning tuples taken apart by a `let`; a field passed to a helper.
#[differentiate(forward, reverse)]
pub fn binary_energy<T: Float>(s: &Binary<T>, g: T) -> T {
    let first = &s.a;
    let (px, py) = s.b.momentum();
    let (qx, qy) = first.momentum();
    first.kinetic() + s.b.potential(g) + s.spring * pair_energy(first, &s.b) + px * qx + py * qy
}

pub fn structs_to_helpers() {
    // The oscillator's fields, three kicks, dt.
    let x = [0.6, -0.2, 1.7, 0.3, 0.4, -0.25, 0.1, 0.15];
    let settle_at = |x: &[f64]| {
        let mut o = oscillator(&x[..4]);
        let e = settle(&mut o, &x[4..7], x[7]);
        (e, o)
    };
    check_fwd_rev(&Case {
        name: "settle",
        x: &x,
        primal: &|x| {
            let (e, o) = settle_at(x);
            cat(&[&[e], &flat_osc(&o)])
        },
        jvp: &|x, d| {
            let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&d[..4]));
            let (e, de) = settle_fwd(&mut o, &mut d_o, &x[4..7], &d[4..7], x[7], d[7]);
            (cat(&[&[e], &flat_osc(&o)]), cat(&[&[de], &flat_osc(&d_o)]))
        },
        vjp: &|x, w| {
            let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&w[1..5]));
            let mut dk = zeros(3);
            let (e, ddt) = settle_rev(&mut o, &mut d_o, &x[4..7], &mut dk, x[7], w[0]);
            (
                cat(&[&[e], &flat_osc(&o)]),
                cat(&[&flat_osc(&d_o), &dk, &[ddt]]),
            )
        },
        tols: TOLS,
    });
    // The same in a checkpointed loop, five kicks.
    let xc = [0.6, -0.2, 1.7, 0.3, 0.4, -0.25, 0.1, 0.3, -0.1, 0.15];
    let nk = 5;
    check_fwd_rev(&Case {
        name: "settle_checkpointed",
        x: &xc,
        primal: &|x| {
            let mut o = oscillator(&x[..4]);
            let e = settle_checkpointed(&mut o, &x[4..4 + nk], x[4 + nk]);
            cat(&[&[e], &flat_osc(&o)])
        },
        jvp: &|x, d| {
            let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&d[..4]));
            let (e, de) = settle_checkpointed_fwd(
                &mut o,
                &mut d_o,
                &x[4..4 + nk],
                &d[4..4 + nk],
                x[4 + nk],
                d[4 + nk],
            );
            (cat(&[&[e], &flat_osc(&o)]), cat(&[&[de], &flat_osc(&d_o)]))
        },
        vjp: &|x, w| {
            let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&w[1..5]));
            let mut dk = zeros(nk);
            let (e, ddt) =
                settle_checkpointed_rev(&mut o, &mut d_o, &x[4..4 + nk], &mut dk, x[4 + nk], w[0]);
            (
                cat(&[&[e], &flat_osc(&o)]),
                cat(&[&flat_osc(&d_o), &dk, &[ddt]]),
            )
        },
        tols: TOLS,
    });
    // The value alone, against num-dual, and H·v through `_rev` at `Dual<f64>`.
    let rev = |x: &[f64], seed: f64| {
        let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&[0.0; 4]));
        let mut dk = zeros(3);
        let (e, ddt) = settle_rev(&mut o, &mut d_o, &x[4..7], &mut dk, x[7], seed);
        (e, cat(&[&flat_osc(&d_o), &dk, &[ddt]]))
    };
    check_generic(&Generic {
        name: "settle",
        x: &x,
        f: &|x| settle_at(x).0,
        f_dual: &|x| settle(&mut oscillator(&x[..4]), &x[4..7], x[7]),
        f_hyper: &|x| settle(&mut oscillator(&x[..4]), &x[4..7], x[7]),
        grad: &|x| rev(x, 1.0),
        fwd: &|x, d| {
            let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&d[..4]));
            settle_fwd(&mut o, &mut d_o, &x[4..7], &d[4..7], x[7], d[7])
        },
        rev: &rev,
        hvp: &|x, v| {
            hvp_of(
                &|x, dx, s| {
                    let zero = phidiff::Dual::constant(0.0);
                    let (mut o, mut d_o) = (oscillator(&x[..4]), oscillator(&[zero; 4]));
                    let mut dk = vec![zero; 3];
                    let (e, ddt) = settle_rev(&mut o, &mut d_o, &x[4..7], &mut dk, x[7], s);
                    dx[..4].copy_from_slice(&[d_o.x[0], d_o.x[1], d_o.k, d_o.damping]);
                    dx[4..7].copy_from_slice(&dk);
                    dx[7] = ddt;
                    e
                },
                x,
                v,
            )
        },
    });

    // Three particles and g, flattened.
    let y = [
        0.3, 1.2, 0.5, -0.4, 2.0, 1.0, 0.2, 0.1, 0.9, 1.5, -0.7, 0.4, -0.3, 0.6, 0.8, 9.8,
    ];
    let split3 = |x: &[f64]| (particle(&x[..5]), vec![particle(&x[5..10]), particle(&x[10..15])], x[15]);
    check_fwd_rev(&Case {
        name: "cluster_energy",
        x: &y,
        primal: &|x| {
            let (p, o, g) = split3(x);
            vec![cluster_energy(&p, &o, g)]
        },
        jvp: &|x, d| {
            let (p, o, g) = split3(x);
            let (dp, dos, dg) = split3(d);
            let (v, t) = cluster_energy_fwd(&p, &dp, &o, &dos, g, dg);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let (p, o, g) = split3(x);
            let mut dp = Differentiable::zero_like(&p);
            let mut dos: Vec<Particle<f64>> = o.iter().map(Differentiable::zero_like).collect();
            let (v, dg) = cluster_energy_rev(&p, &mut dp, &o, &mut dos, g, w[0]);
            (vec![v], cat(&[&flat(&dp), &flat(&dos[0]), &flat(&dos[1]), &[dg]]))
        },
        tols: TOLS,
    });
}

pub fn methods_on_fields_and_locals() {
    // Two particles, the spring and g.
    let z = [0.3, 1.2, 0.5, -0.4, 2.0, 1.0, 0.2, 0.1, 0.9, 1.5, 0.7, 9.8];
    let binary = |x: &[f64]| Binary {
        a: particle(&x[..5]),
        b: particle(&x[5..10]),
        spring: x[10],
    };
    let flat_binary = |s: &Binary<f64>| cat(&[&flat(&s.a), &flat(&s.b), &[s.spring]]);
    check_fwd_rev(&Case {
        name: "binary_energy",
        x: &z,
        primal: &|x| vec![binary_energy(&binary(x), x[11])],
        jvp: &|x, d| {
            let (v, t) = binary_energy_fwd(&binary(x), &binary(d), x[11], d[11]);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let s = binary(x);
            let mut ds = Differentiable::zero_like(&s);
            let (v, dg) = binary_energy_rev(&s, &mut ds, x[11], w[0]);
            (vec![v], cat(&[&flat_binary(&ds), &[dg]]))
        },
        tols: TOLS,
    });
}

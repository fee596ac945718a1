//! The benchmarked functions, shared by `benches/rosenbrock_lorenz.rs` (criterion) and
//! `examples/bench_report.rs` (one-process ratio table): each differentiated function,
//! its hand-written adjoint (what a person would write without AD), one-direction
//! central finite differences, and the pre-timing check that the generated gradient
//! equals the hand-written one.
#![allow(dead_code)]

use phidiff::differentiate;

// ---------------------------------------------------------------------------------------
// Extended Rosenbrock
// ---------------------------------------------------------------------------------------

/// Σᵢ 100 (x[i+1] − x[i]²)² + (1 − x[i])².
#[differentiate(forward, reverse)]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut f = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        f += 100.0 * a * a + b * b;
    }
    f
}

/// [`rosenbrock`] as an iterator chain (issue 46: it must cost what the index loop costs).
#[differentiate(forward, reverse)]
pub fn rosenbrock_zip(x: &[f64]) -> f64 {
    x.iter()
        .zip(x.iter().skip(1))
        .map(|(&a, &b)| 100.0 * (b - a * a) * (b - a * a) + (1.0 - a) * (1.0 - a))
        .sum()
}

/// `Σ sin(xᵢ)·xᵢ` with a `fold`, and as the `for` loop it stands for.
#[differentiate(forward, reverse)]
pub fn sin_weighted_fold(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |acc, &v| acc + v.sin() * v)
}

#[differentiate(forward, reverse)]
pub fn sin_weighted_loop(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() {
        acc += x[i].sin() * x[i];
    }
    acc
}

/// `Σ sin(xᵢ)·xᵢ` through a `Vec` filled by `push` (issue 46), and through the buffer of
/// known length it stands for.
#[differentiate(forward, reverse)]
pub fn sin_weighted_pushed(x: &[f64]) -> f64 {
    let mut terms = Vec::with_capacity(x.len());
    for &v in x {
        terms.push(v.sin() * v);
    }
    terms.iter().sum()
}

#[differentiate(forward, reverse)]
pub fn sin_weighted_buffer(x: &[f64]) -> f64 {
    let mut terms = vec![0.0; x.len()];
    for i in 0..x.len() {
        terms[i] = x[i].sin() * x[i];
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += terms[i];
    }
    s
}

/// `xᵀ M x` of a `Vec<Vec<f64>>` matrix by its rows as views (`m.iter().zip(x)`,
/// `row.iter().zip(x)`; issue 46), and by the index loops they stand for.
#[differentiate(forward, reverse)]
pub fn quad_rows_iter(m: &[Vec<f64>], x: &[f64]) -> f64 {
    m.iter()
        .zip(x)
        .map(|(row, xi)| xi * row.iter().zip(x).map(|(a, b)| a * b).sum::<f64>())
        .sum()
}

#[differentiate(forward, reverse)]
pub fn quad_rows_index(m: &[Vec<f64>], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..m.len() {
        let mut r = 0.0;
        for j in 0..m[i].len() {
            r += m[i][j] * x[j];
        }
        s += x[i] * r;
    }
    s
}

/// Hand-written adjoint of [`rosenbrock`]: one fused loop computing the value and adding
/// `seed · ∇f` into `g` (same convention as `rosenbrock_rev`). Term i touches g[i] and
/// g[i+1]; the g[i+1] part is carried in a register to the next iteration, so every g[i]
/// is read and written once.
pub fn rosenbrock_hand(x: &[f64], g: &mut [f64], seed: f64) -> f64 {
    let n = x.len();
    assert_eq!(n, g.len());
    let mut f = 0.0;
    let mut carry = 0.0; // term i−1's contribution to g[i]
    for i in 0..n - 1 {
        let xi = x[i];
        let a = x[i + 1] - xi * xi;
        let b = 1.0 - xi;
        f += 100.0 * a * a + b * b;
        g[i] += carry + seed * (-400.0 * a * xi - 2.0 * b);
        carry = seed * (200.0 * a);
    }
    g[n - 1] += carry;
    f
}

/// The same fused loop written the first way that comes to mind, `g[i] += …; g[i+1] += …`.
/// Every g[i+1] written in iteration i is read back in iteration i+1, a dependence through
/// memory that (measured) makes this ~4–5× slower than [`rosenbrock_hand`]; timed as a
/// second hand-written baseline.
pub fn rosenbrock_hand_naive(x: &[f64], g: &mut [f64], seed: f64) -> f64 {
    assert_eq!(x.len(), g.len());
    let mut f = 0.0;
    for i in 0..x.len() - 1 {
        let xi = x[i];
        let a = x[i + 1] - xi * xi;
        let b = 1.0 - xi;
        f += 100.0 * a * a + b * b;
        g[i] += seed * (-400.0 * a * xi - 2.0 * b);
        g[i + 1] += seed * (200.0 * a);
    }
    f
}

/// Central difference of `rosenbrock` along `v` (2 primal evaluations); `xp`, `xm` are
/// preallocated work vectors.
pub fn rosenbrock_fd(x: &[f64], v: &[f64], xp: &mut [f64], xm: &mut [f64]) -> f64 {
    let h = fd_step(x);
    for i in 0..x.len() {
        xp[i] = x[i] + h * v[i];
        xm[i] = x[i] - h * v[i];
    }
    (rosenbrock(xp) - rosenbrock(xm)) / (2.0 * h)
}

// ---------------------------------------------------------------------------------------
// Lorenz-63, classical RK4 with scalar locals
// ---------------------------------------------------------------------------------------

/// z after `steps` RK4 steps (dt 0.01, σ 10, ρ 28, β 8/3) from `x0`.
#[differentiate(forward, reverse)]
pub fn lorenz(x0: &[f64], steps: usize) -> f64 {
    let dt = 0.01;
    let sigma = 10.0;
    let rho = 28.0;
    let beta = 8.0 / 3.0;
    let mut x = x0[0];
    let mut y = x0[1];
    let mut z = x0[2];
    for _ in 0..steps {
        let k1x = sigma * (y - x);
        let k1y = x * (rho - z) - y;
        let k1z = x * y - beta * z;
        let x1 = x + 0.5 * dt * k1x;
        let y1 = y + 0.5 * dt * k1y;
        let z1 = z + 0.5 * dt * k1z;
        let k2x = sigma * (y1 - x1);
        let k2y = x1 * (rho - z1) - y1;
        let k2z = x1 * y1 - beta * z1;
        let x2 = x + 0.5 * dt * k2x;
        let y2 = y + 0.5 * dt * k2y;
        let z2 = z + 0.5 * dt * k2z;
        let k3x = sigma * (y2 - x2);
        let k3y = x2 * (rho - z2) - y2;
        let k3z = x2 * y2 - beta * z2;
        let x3 = x + dt * k3x;
        let y3 = y + dt * k3y;
        let z3 = z + dt * k3z;
        let k4x = sigma * (y3 - x3);
        let k4y = x3 * (rho - z3) - y3;
        let k4z = x3 * y3 - beta * z3;
        x += dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
        y += dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y);
        z += dt / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z);
    }
    z
}

const SIGMA: f64 = 10.0;
const RHO: f64 = 28.0;
const BETA: f64 = 8.0 / 3.0;
const DT: f64 = 0.01;

#[inline(always)]
fn lorenz_f(x: f64, y: f64, z: f64) -> (f64, f64, f64) {
    (SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z)
}

/// Jᵀ w for the Lorenz right-hand side at (x, y, z):
/// J = [[−σ, σ, 0], [ρ−z, −1, −x], [y, x, −β]].
#[inline(always)]
fn lorenz_jt(x: f64, y: f64, z: f64, w: (f64, f64, f64)) -> (f64, f64, f64) {
    (
        -SIGMA * w.0 + (RHO - z) * w.1 + y * w.2,
        SIGMA * w.0 - w.1 + x * w.2,
        -x * w.1 - BETA * w.2,
    )
}

/// Hand-written adjoint of [`lorenz`]: the forward sweep stores the state at the start of
/// each step (3 values per step); the reverse loop recomputes that step's stages and
/// applies the transposed RK4 Jacobian-vector products. Adds `seed · ∂z/∂x0` into `g`.
pub fn lorenz_hand(x0: &[f64], g: &mut [f64], steps: usize, seed: f64) -> f64 {
    assert_eq!(g.len(), 3);
    let mut traj = Vec::with_capacity(3 * steps);
    let (mut x, mut y, mut z) = (x0[0], x0[1], x0[2]);
    // Forward: the same expressions as the primal, so the trajectory is bit-identical.
    for _ in 0..steps {
        traj.extend_from_slice(&[x, y, z]);
        let (k1x, k1y, k1z) = lorenz_f(x, y, z);
        let (x1, y1, z1) = (x + 0.5 * DT * k1x, y + 0.5 * DT * k1y, z + 0.5 * DT * k1z);
        let (k2x, k2y, k2z) = lorenz_f(x1, y1, z1);
        let (x2, y2, z2) = (x + 0.5 * DT * k2x, y + 0.5 * DT * k2y, z + 0.5 * DT * k2z);
        let (k3x, k3y, k3z) = lorenz_f(x2, y2, z2);
        let (x3, y3, z3) = (x + DT * k3x, y + DT * k3y, z + DT * k3z);
        let (k4x, k4y, k4z) = lorenz_f(x3, y3, z3);
        x += DT / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
        y += DT / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y);
        z += DT / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z);
    }
    let value = z;
    // Reverse: a = adjoint of the state after the step.
    let mut a = (0.0, 0.0, seed);
    for s in traj.chunks_exact(3).rev() {
        let (x, y, z) = (s[0], s[1], s[2]);
        let (k1x, k1y, k1z) = lorenz_f(x, y, z);
        let (x1, y1, z1) = (x + 0.5 * DT * k1x, y + 0.5 * DT * k1y, z + 0.5 * DT * k1z);
        let (k2x, k2y, k2z) = lorenz_f(x1, y1, z1);
        let (x2, y2, z2) = (x + 0.5 * DT * k2x, y + 0.5 * DT * k2y, z + 0.5 * DT * k2z);
        let (k3x, k3y, k3z) = lorenz_f(x2, y2, z2);
        let (x3, y3, z3) = (x + DT * k3x, y + DT * k3y, z + DT * k3z);
        let c6 = DT / 6.0;
        let c3 = DT / 3.0;
        // k̄4 = dt/6 ā → s̄3 = J(s3)ᵀ k̄4
        let s3 = lorenz_jt(x3, y3, z3, (c6 * a.0, c6 * a.1, c6 * a.2));
        // k̄3 = dt/3 ā + dt s̄3 → s̄2 = J(s2)ᵀ k̄3
        let k3 = (
            c3 * a.0 + DT * s3.0,
            c3 * a.1 + DT * s3.1,
            c3 * a.2 + DT * s3.2,
        );
        let s2 = lorenz_jt(x2, y2, z2, k3);
        // k̄2 = dt/3 ā + dt/2 s̄2 → s̄1 = J(s1)ᵀ k̄2
        let h = 0.5 * DT;
        let k2 = (
            c3 * a.0 + h * s2.0,
            c3 * a.1 + h * s2.1,
            c3 * a.2 + h * s2.2,
        );
        let s1 = lorenz_jt(x1, y1, z1, k2);
        // k̄1 = dt/6 ā + dt/2 s̄1 → J(s0)ᵀ k̄1
        let k1 = (
            c6 * a.0 + h * s1.0,
            c6 * a.1 + h * s1.1,
            c6 * a.2 + h * s1.2,
        );
        let s0 = lorenz_jt(x, y, z, k1);
        a = (
            a.0 + s3.0 + s2.0 + s1.0 + s0.0,
            a.1 + s3.1 + s2.1 + s1.1 + s0.1,
            a.2 + s3.2 + s2.2 + s1.2 + s0.2,
        );
    }
    g[0] += a.0;
    g[1] += a.1;
    g[2] += a.2;
    value
}

/// Central difference of `lorenz` along `v` (2 primal evaluations).
pub fn lorenz_fd(x0: &[f64], v: &[f64], steps: usize) -> f64 {
    let h = fd_step(x0);
    let xp = [x0[0] + h * v[0], x0[1] + h * v[1], x0[2] + h * v[2]];
    let xm = [x0[0] - h * v[0], x0[1] - h * v[1], x0[2] - h * v[2]];
    (lorenz(&xp, steps) - lorenz(&xm, steps)) / (2.0 * h)
}

// ---------------------------------------------------------------------------------------
// Heat equation, explicit (FTCS) stepper with two buffers and std::mem::swap
// ---------------------------------------------------------------------------------------

/// Explicit heat equation with zero Dirichlet ends and mesh ratio `r`; returns
/// Σᵢ (i+1)·uᵢ² of the field after `steps` steps.
#[differentiate(forward, reverse)]
pub fn heat(u0: &[f64], r: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut next = vec![0.0; n];
    for _ in 0..steps {
        next[0] = 0.0;
        next[n - 1] = 0.0;
        for i in 1..n - 1 {
            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut u, &mut next);
    }
    let mut s = 0.0;
    for i in 0..n {
        s += (i + 1) as f64 * u[i] * u[i];
    }
    s
}

/// Hand-written adjoint of [`heat`]: the forward sweep writes every field into one
/// history array (`(steps+1)·n` values, no swap); the reverse sweep is one gather loop per
/// step computing the adjoint field and accumulating r̄ = Σ λᵢ (uᵢ₋₁ − 2uᵢ + uᵢ₊₁).
/// Adds `seed · ∂s/∂u0` into `g` and returns `(s, seed · ∂s/∂r)` like `heat_rev`.
pub fn heat_hand(u0: &[f64], g: &mut [f64], r: f64, steps: usize, seed: f64) -> (f64, f64) {
    let n = u0.len();
    assert_eq!(g.len(), n);
    let mut hist = vec![0.0; (steps + 1) * n];
    hist[..n].copy_from_slice(u0);
    for t in 0..steps {
        let (prev, cur) = hist.split_at_mut((t + 1) * n);
        let u = &prev[t * n..];
        let next = &mut cur[..n];
        next[0] = 0.0;
        next[n - 1] = 0.0;
        for i in 1..n - 1 {
            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
    }
    let last = &hist[steps * n..];
    let mut s = 0.0;
    let mut lam = vec![0.0; n];
    for i in 0..n {
        s += (i + 1) as f64 * last[i] * last[i];
        lam[i] = seed * 2.0 * (i + 1) as f64 * last[i];
    }
    let mut prev_lam = vec![0.0; n];
    let mut rbar = 0.0;
    for t in (0..steps).rev() {
        let u = &hist[t * n..(t + 1) * n];
        // The boundary entries of the new field were overwritten with constants.
        lam[0] = 0.0;
        lam[n - 1] = 0.0;
        prev_lam[0] = r * lam[1];
        prev_lam[n - 1] = r * lam[n - 2];
        for i in 1..n - 1 {
            prev_lam[i] = lam[i] + r * (lam[i - 1] - 2.0 * lam[i] + lam[i + 1]);
            rbar += lam[i] * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut lam, &mut prev_lam);
    }
    for i in 0..n {
        g[i] += lam[i];
    }
    (s, rbar)
}

/// Central difference of `heat` along (`v`, `vr`) (2 primal evaluations).
pub fn heat_fd(
    u0: &[f64],
    v: &[f64],
    r: f64,
    vr: f64,
    steps: usize,
    up: &mut [f64],
    um: &mut [f64],
) -> f64 {
    let h = 1e-6;
    for i in 0..u0.len() {
        up[i] = u0[i] + h * v[i];
        um[i] = u0[i] - h * v[i];
    }
    (heat(up, r + h * vr, steps) - heat(um, r - h * vr, steps)) / (2.0 * h)
}

// ---------------------------------------------------------------------------------------
// Inputs and checks
// ---------------------------------------------------------------------------------------

pub const ROSEN_N: usize = 1_000_000;
pub const LORENZ_STEPS: usize = 10_000;
pub const HEAT_N: usize = 1000;
pub const HEAT_STEPS: usize = 1000;
pub const HEAT_R: f64 = 0.25;

fn fd_step(x: &[f64]) -> f64 {
    let scale = x.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
    1e-6 * scale
}

pub fn rosen_input() -> Vec<f64> {
    phidiff::check::random_vector(1, ROSEN_N)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect()
}

pub fn lorenz_input() -> Vec<f64> {
    vec![1.0, 1.0, 1.0]
}

pub fn heat_input() -> Vec<f64> {
    let n = HEAT_N;
    let noise = phidiff::check::random_vector(2, n);
    (0..n)
        .map(|i| {
            let s = (std::f64::consts::PI * i as f64 / (n - 1) as f64).sin();
            s + 0.1 * noise[i]
        })
        .collect()
}

/// A direction for the one-direction forward / FD benchmarks.
pub fn direction(n: usize) -> Vec<f64> {
    phidiff::check::random_vector(7, n)
}

/// max |a − b| / max |b| (0 when both are 0).
pub fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let err = a
        .iter()
        .zip(b)
        .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
    if scale == 0.0 {
        err
    } else {
        err / scale
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

const TOL: f64 = 1e-10;

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    let e = rel_err(got, want);
    assert!(e <= tol, "{what}: relative error {e:e} > {tol:e}");
}

/// Before timing: the generated gradient equals the hand-written adjoint (1e-10
/// relative), the values agree with the primal, and `_fwd` agrees with gradient·v.
pub fn verify_rosenbrock(x: &[f64]) {
    let v = direction(x.len());
    let f = rosenbrock(x);
    let mut g_gen = vec![0.0; x.len()];
    let f_rev = rosenbrock_rev(x, &mut g_gen, 1.0);
    let mut g_hand = vec![0.0; x.len()];
    let f_hand = rosenbrock_hand(x, &mut g_hand, 1.0);
    let mut g_naive = vec![0.0; x.len()];
    let f_naive = rosenbrock_hand_naive(x, &mut g_naive, 1.0);
    let (f_grad, g_grad) = rosenbrock_grad(x);
    assert_close("rosenbrock: _rev vs hand gradient", &g_gen, &g_hand, TOL);
    assert_close(
        "rosenbrock: naive vs carried hand gradient",
        &g_naive,
        &g_hand,
        TOL,
    );
    assert_close("rosenbrock: _grad vs hand gradient", &g_grad, &g_hand, TOL);
    assert_close(
        "rosenbrock: values",
        &[f_rev, f_hand, f_naive, f_grad],
        &[f, f, f, f],
        1e-12,
    );
    let (f_fwd, t) = rosenbrock_fwd(x, &v);
    assert_close("rosenbrock: _fwd value", &[f_fwd], &[f], 1e-12);
    assert_close("rosenbrock: _fwd vs ∇f·v", &[t], &[dot(&g_hand, &v)], 1e-10);
    let mut xp = vec![0.0; x.len()];
    let mut xm = vec![0.0; x.len()];
    let fd = rosenbrock_fd(x, &v, &mut xp, &mut xm);
    // A sanity check only: f sums 10⁶ terms, so cancellation in f(x+hv) − f(x−hv) costs
    // several digits.
    assert_close("rosenbrock: FD vs ∇f·v", &[fd], &[t], 1e-3);
}

pub fn verify_lorenz(x0: &[f64], steps: usize) {
    let z = lorenz(x0, steps);
    let mut g_gen = vec![0.0; 3];
    let z_rev = lorenz_rev(x0, &mut g_gen, steps, 1.0);
    let mut g_hand = vec![0.0; 3];
    let z_hand = lorenz_hand(x0, &mut g_hand, steps, 1.0);
    assert_close("lorenz: _rev vs hand gradient", &g_gen, &g_hand, TOL);
    assert_close("lorenz: values", &[z_rev, z_hand], &[z, z], 1e-12);
    for k in 0..3 {
        let mut e = [0.0; 3];
        e[k] = 1.0;
        let (z_fwd, t) = lorenz_fwd(x0, &e, steps);
        assert_close("lorenz: _fwd value", &[z_fwd], &[z], 1e-12);
        assert_close("lorenz: _fwd vs hand gradient", &[t], &[g_hand[k]], TOL);
    }
    // Finite differences only mean something over a short horizon (the flow is chaotic).
    let v = direction(3);
    let mut g_short = vec![0.0; 3];
    lorenz_hand(x0, &mut g_short, 100, 1.0);
    assert_close(
        "lorenz: FD vs hand (100 steps)",
        &[lorenz_fd(x0, &v, 100)],
        &[dot(&g_short, &v)],
        1e-5,
    );
}

pub fn verify_heat(u0: &[f64], r: f64, steps: usize) {
    let n = u0.len();
    let s = heat(u0, r, steps);
    let mut g_gen = vec![0.0; n];
    let (s_rev, r_gen) = heat_rev(u0, &mut g_gen, r, steps, 1.0);
    let mut g_hand = vec![0.0; n];
    let (s_hand, r_hand) = heat_hand(u0, &mut g_hand, r, steps, 1.0);
    assert_close("heat: _rev vs hand ∂/∂u0", &g_gen, &g_hand, TOL);
    assert_close("heat: _rev vs hand ∂/∂r", &[r_gen], &[r_hand], TOL);
    assert_close("heat: values", &[s_rev, s_hand], &[s, s], 1e-12);
    let v = direction(n);
    let vr = 0.3;
    let (s_fwd, t) = heat_fwd(u0, &v, r, vr, steps);
    assert_close("heat: _fwd value", &[s_fwd], &[s], 1e-12);
    let want = dot(&g_hand, &v) + r_hand * vr;
    assert_close("heat: _fwd vs gradient·v", &[t], &[want], TOL);
    let mut up = vec![0.0; n];
    let mut um = vec![0.0; n];
    let fd = heat_fd(u0, &v, r, vr, steps, &mut up, &mut um);
    assert_close("heat: FD vs gradient·v", &[fd], &[want], 1e-5);
}

// ---------------------------------------------------------------------------------------
// Issue 47: structs against the flat parameters they stand for
// ---------------------------------------------------------------------------------------

/// A polynomial model kept in a struct.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Poly {
    pub bias: f64,
    pub coef: Vec<f64>,
}

/// The least-squares loss of a `Poly` (`p.bias`, `p.coef[k]`) over data points.
#[differentiate(forward, reverse, wrt(p))]
pub fn poly_loss(p: &Poly, ts: &[f64], ys: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..ts.len() {
        let mut pred = p.bias;
        let mut tk = 1.0;
        for k in 0..p.coef.len() {
            tk *= ts[i];
            pred += p.coef[k] * tk;
        }
        let r = pred - ys[i];
        total += r * r;
    }
    total
}

/// [`poly_loss`] with the fields as parameters.
#[differentiate(forward, reverse, wrt(bias, coef))]
pub fn poly_loss_flat(bias: f64, coef: &[f64], ts: &[f64], ys: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..ts.len() {
        let mut pred = bias;
        let mut tk = 1.0;
        for k in 0..coef.len() {
            tk *= ts[i];
            pred += coef[k] * tk;
        }
        let r = pred - ys[i];
        total += r * r;
    }
    total
}

/// A body of an n-body system.
#[derive(phidiff::Differentiable, Clone, Copy, Debug)]
pub struct Body {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
}

/// The energy of a system as a slice of structs (`bodies[i].pos[k]`, `for b in ..`).
#[differentiate(forward, reverse)]
pub fn system_energy(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for (i, b) in bodies.iter().enumerate() {
        e += 0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1] + b.vel[2] * b.vel[2]);
        for other in &bodies[i + 1..] {
            let dx = b.pos[0] - other.pos[0];
            let dy = b.pos[1] - other.pos[1];
            let dz = b.pos[2] - other.pos[2];
            e -= b.mass * other.mass / (dx * dx + dy * dy + dz * dz).sqrt();
        }
    }
    e
}

/// [`system_energy`] with one slice per field, as a user without struct support writes it.
#[differentiate(forward, reverse)]
pub fn system_energy_flat(pos: &[[f64; 3]], vel: &[[f64; 3]], mass: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..mass.len() {
        e +=
            0.5 * mass[i] * (vel[i][0] * vel[i][0] + vel[i][1] * vel[i][1] + vel[i][2] * vel[i][2]);
        for j in i + 1..mass.len() {
            let dx = pos[i][0] - pos[j][0];
            let dy = pos[i][1] - pos[j][1];
            let dz = pos[i][2] - pos[j][2];
            e -= mass[i] * mass[j] / (dx * dx + dy * dy + dz * dz).sqrt();
        }
    }
    e
}

impl Body {
    /// Kinetic energy: a method without attributes (issue 48).
    fn kinetic(&self) -> f64 {
        0.5 * self.mass
            * (self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1] + self.vel[2] * self.vel[2])
    }
}

/// The potential of two bodies: a helper taking structs, without attributes (issue 48).
fn pair_potential(b: &Body, other: &Body) -> f64 {
    let dx = b.pos[0] - other.pos[0];
    let dy = b.pos[1] - other.pos[1];
    let dz = b.pos[2] - other.pos[2];
    b.mass * other.mass / (dx * dx + dy * dy + dz * dz).sqrt()
}

/// [`system_energy`] through a method and a helper taking structs, both inlined.
#[differentiate(reverse)]
pub fn system_energy_helpers(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for (i, b) in bodies.iter().enumerate() {
        e += b.kinetic();
        for other in &bodies[i + 1..] {
            e -= pair_potential(b, other);
        }
    }
    e
}

// ---------------------------------------------------------------------------------------
// Helpers on `Copy` structs by value (issue 48): a triangle mesh's area through `Vec3`
// values (`Vec3::at`, `vsub`, `vcross`, `n.norm()`), and the same written out.
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, phidiff::Differentiable)]
pub struct Vec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl Vec3 {
    fn at(p: &[f64], k: usize) -> Self {
        Vec3 {
            x: p[3 * k],
            y: p[3 * k + 1],
            z: p[3 * k + 2],
        }
    }

    fn dot(self, o: Self) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    fn norm(self) -> f64 {
        self.dot(self).sqrt()
    }
}

fn vsub(a: Vec3, b: Vec3) -> Vec3 {
    Vec3 {
        x: a.x - b.x,
        y: a.y - b.y,
        z: a.z - b.z,
    }
}

fn vcross(a: Vec3, b: Vec3) -> Vec3 {
    Vec3 {
        x: a.y * b.z - a.z * b.y,
        y: a.z * b.x - a.x * b.z,
        z: a.x * b.y - a.y * b.x,
    }
}

/// The area of the triangles `tris` (point indices) of the points `p` (x, y, z each).
#[differentiate(reverse)]
pub fn mesh_area_values(p: &[f64], tris: &[usize]) -> f64 {
    let mut e = 0.0;
    for t in 0..tris.len() / 3 {
        let a = Vec3::at(p, tris[3 * t]);
        let b = Vec3::at(p, tris[3 * t + 1]);
        let c = Vec3::at(p, tris[3 * t + 2]);
        let n = vcross(vsub(b, a), vsub(c, a));
        e += 0.5 * n.norm();
    }
    e
}

/// [`mesh_area_values`] written out with scalars.
#[differentiate(reverse)]
pub fn mesh_area_inline(p: &[f64], tris: &[usize]) -> f64 {
    let mut e = 0.0;
    for t in 0..tris.len() / 3 {
        let (ia, ib, ic) = (3 * tris[3 * t], 3 * tris[3 * t + 1], 3 * tris[3 * t + 2]);
        let (ux, uy, uz) = (p[ib] - p[ia], p[ib + 1] - p[ia + 1], p[ib + 2] - p[ia + 2]);
        let (vx, vy, vz) = (p[ic] - p[ia], p[ic + 1] - p[ia + 1], p[ic + 2] - p[ia + 2]);
        let nx = uy * vz - uz * vy;
        let ny = uz * vx - ux * vz;
        let nz = ux * vy - uy * vx;
        e += 0.5 * (nx * nx + ny * ny + nz * nz).sqrt();
    }
    e
}

/// A wavy `n × n` grid of points and its `2 (n − 1)²` triangles.
pub fn mesh_grid(n: usize) -> (Vec<f64>, Vec<usize>) {
    let mut p = Vec::with_capacity(3 * n * n);
    for i in 0..n {
        for j in 0..n {
            let (x, y) = (i as f64 / n as f64, j as f64 / n as f64);
            p.extend([x, y, 0.1 * (6.0 * x).sin() * (5.0 * y).cos()]);
        }
    }
    let mut tris = Vec::new();
    for i in 0..n - 1 {
        for j in 0..n - 1 {
            let k = i * n + j;
            tris.extend([k, k + 1, k + n, k + 1, k + n + 1, k + n]);
        }
    }
    (p, tris)
}

// ---------------------------------------------------------------------------------------
// Helpers without attributes (issue 48): a two-layer network written with three small
// helpers, and the same network written out in one function.
// ---------------------------------------------------------------------------------------

fn sigmoid_helper(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

fn dot_helper(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

fn layer_helper(w: &[f64], x: &[f64], out: &mut [f64]) {
    let n = x.len();
    for k in 0..out.len() {
        out[k] = sigmoid_helper(dot_helper(&w[k * n..(k + 1) * n], x));
    }
}

/// Σₖ w2[k] σ(w1[k, :] · x), through the helpers.
#[differentiate(reverse)]
pub fn two_layer_helpers(w1: &[f64], w2: &[f64], x: &[f64]) -> f64 {
    let mut h = vec![0.0; w2.len()];
    layer_helper(w1, x, &mut h);
    dot_helper(w2, &h)
}

/// The same, written out as one function.
#[differentiate(reverse)]
pub fn two_layer_inline(w1: &[f64], w2: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; w2.len()];
    for k in 0..h.len() {
        let mut s = 0.0;
        for i in 0..n {
            s += w1[k * n + i] * x[i];
        }
        h[k] = 1.0 / (1.0 + (-s).exp());
    }
    let mut y = 0.0;
    for k in 0..h.len() {
        y += w2[k] * h[k];
    }
    y
}

//! The benchmark programs written once more, generically, for the operator-overloading
//! peers of the scoreboard (`examples/scoreboard.rs`): echidna's tape-based reverse mode
//! (`echidna::Reverse64`, and its bytecode tape `echidna::BReverse<f64>`) and num-dual's
//! forward mode (`num_dual::Dual64`), with `f64` for the plain primal. This is what a user
//! of those crates writes: the same loops as the `#[differentiate]` programs of `gmm.rs`,
//! `lstm.rs`, `functions.rs`, `burgers2d.rs`, `parallel_programs.rs` and the GradBench
//! tool's `ht.rs`, over a number type instead of `f64`.
//!
//! [`Real`] is the small interface the programs need; constants enter through
//! [`Real::cst`], so they are never recorded as variables.
#![allow(dead_code)]

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// The number type of a peer's program.
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
{
    /// A constant (never an independent variable).
    fn cst(v: f64) -> Self;
    /// The primal value.
    fn value(self) -> f64;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn tanh(self) -> Self;
    fn sqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    /// The larger of the two by value (the derivative follows the one chosen).
    fn max(self, o: Self) -> Self {
        if o.value() > self.value() {
            o
        } else {
            self
        }
    }
}

impl Real for f64 {
    fn cst(v: f64) -> Self {
        v
    }
    fn value(self) -> f64 {
        self
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
}

/// [`Real`] for echidna's variables, through `num_traits::Float`.
macro_rules! echidna_real {
    ($($t:ty: $doc:literal),*) => {$(
        #[doc = $doc]
        impl Real for $t {
            fn cst(v: f64) -> Self {
                <$t>::constant(v)
            }
            fn value(self) -> f64 {
                echidna::Scalar::value(&self)
            }
            fn exp(self) -> Self {
                num_traits::Float::exp(self)
            }
            fn ln(self) -> Self {
                num_traits::Float::ln(self)
            }
            fn tanh(self) -> Self {
                num_traits::Float::tanh(self)
            }
            fn sqrt(self) -> Self {
                num_traits::Float::sqrt(self)
            }
            fn sin(self) -> Self {
                num_traits::Float::sin(self)
            }
            fn cos(self) -> Self {
                num_traits::Float::cos(self)
            }
        }
    )*};
}

echidna_real!(
    echidna::Reverse64: "echidna's tape-based reverse mode (`echidna::grad`, `echidna::vjp`).",
    echidna::BReverse<f64>: "echidna's bytecode tape: recorded once (`echidna::record_multi`), \
        then swept as often as needed (the hand-tracking Jacobian: forward, once per column)."
);

impl Real for num_dual::Dual64 {
    fn cst(v: f64) -> Self {
        num_dual::Dual64::from_re(v)
    }
    fn value(self) -> f64 {
        self.re
    }
    fn exp(self) -> Self {
        num_dual::DualNum::exp(&self)
    }
    fn ln(self) -> Self {
        num_dual::DualNum::ln(&self)
    }
    fn tanh(self) -> Self {
        num_dual::DualNum::tanh(&self)
    }
    fn sqrt(self) -> Self {
        num_dual::DualNum::sqrt(&self)
    }
    fn sin(self) -> Self {
        num_dual::DualNum::sin(&self)
    }
    fn cos(self) -> Self {
        num_dual::DualNum::cos(&self)
    }
}

/// num-dual's directional derivative of `f` at `x` along `v` (one forward pass).
pub fn dual_tangent(
    f: impl FnOnce(&[num_dual::Dual64]) -> num_dual::Dual64,
    x: &[f64],
    v: &[f64],
) -> f64 {
    let xs: Vec<num_dual::Dual64> = x
        .iter()
        .zip(v)
        .map(|(&a, &b)| num_dual::Dual64::new(a, b))
        .collect();
    f(&xs).eps
}

/// ADBench's GMM objective (`gmm.rs`), over `T`.
#[allow(clippy::too_many_arguments)]
pub fn gmm<T: Real>(
    alphas: &[T],
    means: &[T],
    icf: &[T],
    x: &[f64],
    d: usize,
    k: usize,
    n: usize,
    gamma: f64,
    m: usize,
    log_gamma_term: f64,
) -> T {
    let icf_sz = d * (d + 1) / 2;
    let zero = T::cst(0.0);
    let sum_qs: Vec<T> = (0..k)
        .map(|ik| {
            let mut s = zero;
            for j in 0..d {
                s += icf[ik * icf_sz + j];
            }
            s
        })
        .collect();
    let qdiags: Vec<T> = (0..k * d)
        .map(|i| icf[(i / d) * icf_sz + i % d].exp())
        .collect();
    let mut xc = vec![zero; d];
    let mut qxc = vec![zero; d];
    let mut main_term = vec![zero; k];
    let mut slse = zero;
    for ix in 0..n {
        for ik in 0..k {
            for j in 0..d {
                xc[j] = T::cst(x[ix * d + j]) - means[ik * d + j];
            }
            for j in 0..d {
                qxc[j] = qdiags[ik * d + j] * xc[j];
            }
            let mut li = d;
            for c in 0..d {
                for r in c + 1..d {
                    qxc[r] += icf[ik * icf_sz + li] * xc[c];
                    li += 1;
                }
            }
            let mut sq = zero;
            for j in 0..d {
                sq += qxc[j] * qxc[j];
            }
            main_term[ik] = alphas[ik] + sum_qs[ik] - T::cst(0.5) * sq;
        }
        let mut mx = main_term[0];
        for ik in 1..k {
            mx = mx.max(main_term[ik]);
        }
        let mut se = zero;
        for ik in 0..k {
            se += (main_term[ik] - mx).exp();
        }
        slse += se.ln() + mx;
    }
    let mut amx = alphas[0];
    for ik in 1..k {
        amx = amx.max(alphas[ik]);
    }
    let mut ase = zero;
    for ik in 0..k {
        ase += (alphas[ik] - amx).exp();
    }
    let lse_alphas = ase.ln() + amx;
    let (nf, df) = (n as f64, d as f64);
    let constant = -nf * df * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let mut err = T::cst(constant) + slse - T::cst(nf) * lse_alphas;
    let dof = (d + m + 1) as f64;
    let c = dof * df * (gamma.ln() - 0.5 * std::f64::consts::LN_2) - log_gamma_term;
    let mut prior = zero;
    for ik in 0..k {
        let mut fro = zero;
        for j in 0..d {
            let q = qdiags[ik * d + j];
            fro += q * q;
        }
        for j in d..icf_sz {
            let l = icf[ik * icf_sz + j];
            fro += l * l;
        }
        prior += T::cst(0.5 * gamma * gamma) * fro - T::cst(m as f64) * sum_qs[ik];
    }
    err += prior - T::cst(k as f64 * c);
    err
}

/// ADBench's LSTM objective (`lstm.rs`), over `T`; `state` is overwritten.
pub fn lstm<T: Real>(
    main_params: &[T],
    extra_params: &[T],
    state: &mut [T],
    sequence: &[f64],
    l: usize,
    c: usize,
    b: usize,
) -> T {
    let one = T::cst(1.0);
    let mut x = vec![T::cst(0.0); b];
    let mut ypred = vec![T::cst(0.0); b];
    let mut total = T::cst(0.0);
    let sigmoid = |z: T| one / (one + (-z).exp());
    for t in 0..c - 1 {
        for i in 0..b {
            x[i] = T::cst(sequence[t * b + i]) * extra_params[i];
        }
        for layer in 0..l {
            let w = layer * 8 * b;
            let s = layer * 2 * b;
            for i in 0..b {
                let forget = sigmoid(x[i] * main_params[w + i] + main_params[w + 4 * b + i]);
                let ingate =
                    sigmoid(state[s + i] * main_params[w + b + i] + main_params[w + 5 * b + i]);
                let outgate =
                    sigmoid(x[i] * main_params[w + 2 * b + i] + main_params[w + 6 * b + i]);
                let change =
                    (state[s + i] * main_params[w + 3 * b + i] + main_params[w + 7 * b + i]).tanh();
                let cell = state[s + b + i] * forget + ingate * change;
                state[s + b + i] = cell;
                state[s + i] = outgate * cell.tanh();
                x[i] = state[s + i];
            }
        }
        for i in 0..b {
            ypred[i] = x[i] * extra_params[b + i] + extra_params[2 * b + i];
        }
        let mut se = T::cst(0.0);
        for i in 0..b {
            se += ypred[i].exp();
        }
        let lse = (se + T::cst(2.0)).ln();
        for i in 0..b {
            total += T::cst(sequence[(t + 1) * b + i]) * (ypred[i] - lse);
        }
    }
    -total / T::cst(((c - 1) * b) as f64)
}

/// The extended Rosenbrock function (`functions.rs`), over `T`.
pub fn rosenbrock<T: Real>(x: &[T]) -> T {
    let mut s = T::cst(0.0);
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = T::cst(1.0) - x[i];
        s += T::cst(100.0) * a * a + b * b;
    }
    s
}

/// The 2-D Burgers energy (`burgers2d.rs`), over `T`: every step kept (no checkpointing;
/// the peers have none).
pub fn burgers2d<T: Real>(u0: &[T], n: usize, nu: f64, dt: f64, steps: usize) -> T {
    let m = u0.len() / n;
    let mut u = u0.to_vec();
    let mut next = u0.to_vec();
    let (dt_c, nudt) = (T::cst(dt), T::cst(nu * dt));
    for _ in 0..steps {
        for i in 0..m {
            for j in 0..n {
                let c = u[i * n + j];
                let w = u[i * n + (j + n - 1) % n];
                let e = u[i * n + (j + 1) % n];
                let no = u[((i + m - 1) % m) * n + j];
                let so = u[((i + 1) % m) * n + j];
                let adv = if c.value() > 0.0 {
                    c * (c - w) + c * (c - no)
                } else {
                    c * (e - c) + c * (so - c)
                };
                next[i * n + j] = c - dt_c * adv + nudt * (w + e + no + so - T::cst(4.0) * c);
            }
        }
        std::mem::swap(&mut u, &mut next);
    }
    let mut s = T::cst(0.0);
    for v in &u {
        s += *v * *v;
    }
    T::cst(0.5) * s
}

/// The nonlinear 2-D heat step of `parallel_programs.rs` (`heat2d_*`), over `T`, serial.
pub fn heat2d<T: Real>(u: &[T], r: f64, n: usize) -> T {
    let m = u.len() / n;
    let mut s = T::cst(0.0);
    for i in 0..m {
        for j in 0..n {
            let v = if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                let c = u[i * n + j];
                let lap =
                    u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]
                        - T::cst(4.0) * c;
                c + T::cst(r) * lap * (T::cst(1.0) + T::cst(0.1) * c * c)
            } else {
                u[i * n + j]
            };
            s += v * v;
        }
    }
    s
}

/// ADBench's BA reprojection error (`ba.rs`, `reproj_error`), over `T`.
pub fn ba_reproj<T: Real>(cam: &[T], x: &[T], w: T, feat: &[f64]) -> [T; 2] {
    let p = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let sqtheta = cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2];
    let q = if sqtheta.value() != 0.0 {
        let theta = sqtheta.sqrt();
        let (costheta, sintheta) = (theta.cos(), theta.sin());
        let a = [cam[0] / theta, cam[1] / theta, cam[2] / theta];
        let along = (a[0] * p[0] + a[1] * p[1] + a[2] * p[2]) * (T::cst(1.0) - costheta);
        [
            p[0] * costheta + (a[1] * p[2] - a[2] * p[1]) * sintheta + a[0] * along,
            p[1] * costheta + (a[2] * p[0] - a[0] * p[2]) * sintheta + a[1] * along,
            p[2] * costheta + (a[0] * p[1] - a[1] * p[0]) * sintheta + a[2] * along,
        ]
    } else {
        [
            p[0] + (cam[1] * p[2] - cam[2] * p[1]),
            p[1] + (cam[2] * p[0] - cam[0] * p[2]),
            p[2] + (cam[0] * p[1] - cam[1] * p[0]),
        ]
    };
    let (u, v) = (q[0] / q[2], q[1] / q[2]);
    let rsq = u * u + v * v;
    let distortion = T::cst(1.0) + cam[9] * rsq + cam[10] * rsq * rsq;
    [
        w * (u * distortion * cam[6] + cam[7] - T::cst(feat[0])),
        w * (v * distortion * cam[6] + cam[8] - T::cst(feat[1])),
    ]
}

/// The model of GradBench's hand-tracking residuals, as `ht_objective` takes it
/// (`gradbench/src/evals/ht.rs`: 4 × 4 row-major blocks per bone, vertices as rows of 4,
/// weights by bone).
pub struct HandModel<'a> {
    pub parents: &'a [usize],
    pub base_relatives: &'a [f64],
    pub inverse_base_absolutes: &'a [f64],
    pub base_positions: &'a [f64],
    pub weights: &'a [f64],
    pub mirrored: bool,
    pub triangles: &'a [usize],
    pub correspondences: &'a [usize],
    pub points: &'a [f64],
}

/// GradBench's hand-tracking residuals `point − model point` (the `3n` values of
/// `ht_objective`): the pose from `theta`, bones posed by Euler angles and chained, linear
/// blend skinning, the global angle-axis rotation and translation; `us` empty for simple
/// inputs, else each point's barycentric coordinates on its triangle.
pub fn ht<T: Real>(theta: &[T], us: &[T], m: &HandModel) -> Vec<T> {
    let zero = T::cst(0.0);
    let bones = m.parents.len();
    let vertices = m.base_positions.len() / 4;
    // Each bone's Euler angles (x, z, y): a finger's first joint takes two of its four
    // parameters, the next two one each, the last none.
    let mut angles = vec![[zero; 3]; bones];
    for finger in 0..5 {
        let (at, b) = (6 + 4 * finger, 2 + 4 * finger);
        angles[b][0] = theta[at];
        angles[b][1] = theta[at + 1];
        angles[b + 1][0] = theta[at + 2];
        angles[b + 2][0] = theta[at + 3];
    }
    let mut absolutes = vec![zero; 16 * bones];
    let mut transforms = vec![zero; 16 * bones];
    for b in 0..bones {
        let [tx, tz, ty] = angles[b];
        let (cx, sx, cy, sy, cz, sz) = (tx.cos(), tx.sin(), ty.cos(), ty.sin(), tz.cos(), tz.sin());
        let rot = [
            cz * cy,
            cz * sy * sx - sz * cx,
            cz * sy * cx + sz * sx,
            sz * cy,
            sz * sy * sx + cz * cx,
            sz * sy * cx - cz * sx,
            -sy,
            cy * sx,
            cy * cx,
        ];
        let mut relative = [zero; 16];
        for r in 0..4 {
            for c in 0..3 {
                let mut s = zero;
                for k in 0..3 {
                    s += T::cst(m.base_relatives[16 * b + 4 * r + k]) * rot[3 * k + c];
                }
                relative[4 * r + c] = s;
            }
            relative[4 * r + 3] = T::cst(m.base_relatives[16 * b + 4 * r + 3]);
        }
        let p = m.parents[b];
        for r in 0..4 {
            for c in 0..4 {
                absolutes[16 * b + 4 * r + c] = if p == b {
                    relative[4 * r + c]
                } else {
                    let mut s = zero;
                    for k in 0..4 {
                        s += absolutes[16 * p + 4 * r + k] * relative[4 * k + c];
                    }
                    s
                };
            }
        }
        for r in 0..4 {
            for c in 0..4 {
                let mut s = zero;
                for k in 0..4 {
                    s += absolutes[16 * b + 4 * r + k]
                        * T::cst(m.inverse_base_absolutes[16 * b + 4 * k + c]);
                }
                transforms[16 * b + 4 * r + c] = s;
            }
        }
    }
    let mut skinned = vec![zero; 3 * vertices];
    for b in 0..bones {
        for v in 0..vertices {
            let w = T::cst(m.weights[b * vertices + v]);
            for r in 0..3 {
                let mut s = zero;
                for k in 0..4 {
                    s += transforms[16 * b + 4 * r + k] * T::cst(m.base_positions[4 * v + k]);
                }
                skinned[3 * v + r] += s * w;
            }
        }
    }
    if m.mirrored {
        for v in 0..vertices {
            skinned[3 * v] = -skinned[3 * v];
        }
    }
    let norm = (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]).sqrt();
    let one = T::cst(1.0);
    let global = if norm.value() < 0.0001 {
        [one, zero, zero, zero, one, zero, zero, zero, one]
    } else {
        let (x, y, z) = (theta[0] / norm, theta[1] / norm, theta[2] / norm);
        let (s, c) = (norm.sin(), norm.cos());
        [
            x * x + (one - x * x) * c,
            x * y * (one - c) - z * s,
            x * z * (one - c) + y * s,
            x * y * (one - c) + z * s,
            y * y + (one - y * y) * c,
            y * z * (one - c) - x * s,
            x * z * (one - c) - y * s,
            z * y * (one - c) + x * s,
            z * z + (one - z * z) * c,
        ]
    };
    let position = |v: usize, r: usize| {
        let mut s = zero;
        for k in 0..3 {
            s += global[3 * r + k] * skinned[3 * v + k];
        }
        s + theta[3 + r]
    };
    let mut err = Vec::with_capacity(3 * m.correspondences.len());
    for (i, &c) in m.correspondences.iter().enumerate() {
        for j in 0..3 {
            let on_hand = if us.is_empty() {
                position(c, j)
            } else {
                let t = &m.triangles[3 * c..3 * c + 3];
                let (u0, u1) = (us[2 * i], us[2 * i + 1]);
                u0 * position(t[0], j)
                    + u1 * position(t[1], j)
                    + (one - u0 - u1) * position(t[2], j)
            };
            err.push(T::cst(m.points[3 * i + j]) - on_hand);
        }
    }
    err
}

//! The coarsening benchmark programs (after Shen et al., OOPSLA'21, §7), shared by
//! `benches/coarsening.rs` (criterion), `examples/coarsen_report.rs` (one-process table)
//! and `tests/coarsening.rs` (gradient checks).
//!
//! Each program is written once inside [`both_modes!`], which compiles it twice: in
//! [`coarse`] with the default `#[differentiate(..)]` (coarsened segments) and in [`fine`]
//! with `coarsen = off` (one operation per segment, every intermediate taped). Both
//! modules hold the same primal and the same `_fwd`/`_rev`/`_grad` names, so a caller picks
//! the mode by path: `coarse::bgd_rmse_grad(..)` vs `fine::bgd_rmse_grad(..)`.
//!
//! Below the programs: deterministic inputs for each of them (shared by all three users,
//! so the tests check the same kind of point the benchmarks time).
#![allow(dead_code)]
// The programs index their arrays the way the paper writes them (and the coarsening
// analysis reads them); iterator rewrites would hide the loops being benchmarked.
#![allow(clippy::needless_range_loop)]

/// Emits the items given to it twice: as `pub mod coarse`, where `#[differentiate(ARGS)]`
/// is phidiff's attribute, and as `pub mod fine`, where the same name is phidiff's
/// hidden `differentiate_coarsen_off`, which is `#[differentiate(ARGS, coarsen = off)]`.
///
/// Why the swap of the name in scope rather than writing out
/// `#[phidiff::differentiate($args, coarsen = off)]`: the generated code names the
/// function's parameters with the attribute's call-site span, so an attribute whose `#[…]`
/// tokens come from this macro's definition (as any rewritten one would) gets a
/// macro_rules hygiene context, and every parameter reference fails to resolve ("cannot
/// find value `x` in this scope"). Passing each item through untouched keeps the user's
/// own attribute tokens.
macro_rules! both_modes {
    ($($item:item)*) => {
        /// The programs as `#[differentiate]` compiles them by default (coarsened).
        pub mod coarse {
            #[allow(unused_imports)]
            use super::*;
            use phidiff::differentiate;
            $($item)*
        }
        /// The same programs with `coarsen = off` (the fine-grained baseline).
        pub mod fine {
            #[allow(unused_imports)]
            use super::*;
            use phidiff::__private::differentiate_coarsen_off as differentiate;
            $($item)*
        }
    };
}

both_modes! {
    /// BGDHyperOpt: fits y ≈ w·x + b to the records `(x[i], y[i])` by batch gradient
    /// descent on the mean squared error with learning rate `r`, from w = b = 0, until one
    /// step moves (w, b) by less than `tol` (1-norm) or `max_iter` steps were taken; returns
    /// the root-mean-square error of the fit. Differentiated with respect to `r` only.
    #[differentiate(forward, reverse, wrt(r))]
    pub fn bgd_rmse(x: &[f64], y: &[f64], r: f64, tol: f64, max_iter: usize) -> f64 {
        let m = x.len();
        let inv_m = 1.0 / m as f64;
        let mut w = 0.0;
        let mut b = 0.0;
        let mut iter = 0;
        loop {
            let mut gw = 0.0;
            let mut gb = 0.0;
            for i in 0..m {
                let e = w * x[i] + b - y[i];
                gw += e * x[i];
                gb += e;
            }
            let dw = r * gw * inv_m;
            let db = r * gb * inv_m;
            w -= dw;
            b -= db;
            iter += 1;
            if dw.abs() + db.abs() < tol || iter >= max_iter {
                break;
            }
        }
        let mut sq = 0.0;
        for i in 0..m {
            let e = w * x[i] + b - y[i];
            sq += e * e;
        }
        (sq * inv_m).sqrt()
    }

    /// HMC potential: the negative log-posterior of Bayesian logistic regression with a
    /// N(0, σ²) prior on every coefficient, U(β) = Σᵢ [ln(1 + e^{tᵢ}) − yᵢ tᵢ] + ½ Σⱼ βⱼ²/σ²
    /// with tᵢ = xᵢ·β, `x` holding the n records of d = β.len() features row-major and
    /// `y` the 0/1 labels.
    #[differentiate(forward, reverse, wrt(beta))]
    pub fn hmc_potential<T: phidiff::Float>(beta: &[T], x: &[T], y: &[T], sigma: T) -> T {
        let d = beta.len();
        let n = y.len();
        let mut u = T::zero();
        for i in 0..n {
            let mut t = T::zero();
            for j in 0..d {
                t += x[i * d + j] * beta[j];
            }
            u += (T::one() + t.exp()).ln() - y[i] * t;
        }
        let mut prior = T::zero();
        for j in 0..d {
            prior += beta[j] * beta[j];
        }
        u + T::from(0.5).unwrap() * prior / (sigma * sigma)
    }

    /// A Hookean spring (mass `mass`, stiffness `k`) from position `x0` and velocity `v0`,
    /// integrated by velocity Verlet with step `dt` for `obs.len()` steps; returns half the
    /// squared misfit Σₙ (xₙ − obsₙ)² of the positions after each step.
    #[differentiate(forward, reverse, wrt(k, x0, v0))]
    pub fn spring_misfit(k: f64, x0: f64, v0: f64, obs: &[f64], mass: f64, dt: f64) -> f64 {
        let mut x = x0;
        let mut v = v0;
        let mut a = -k * x / mass;
        let mut misfit = 0.0;
        for n in 0..obs.len() {
            x += dt * v + 0.5 * dt * dt * a;
            let a_next = -k * x / mass;
            v += 0.5 * dt * (a + a_next);
            a = a_next;
            let r = x - obs[n];
            misfit += r * r;
        }
        0.5 * misfit
    }

    /// Brachistochrone-style travel time of a bead sliding without friction (g = 9.81)
    /// along the polyline through (0, `y_start`), (h, y[0]), …, (n h, y[n−1]),
    /// (`length`, `y_end`) with h = length / (n + 1), starting with speed `v_start`: the
    /// speed at height y is √(v_start² + 2g(y_start − y)) and each segment takes
    /// ds / (mean of its end speeds). Differentiated with respect to the heights `y`.
    #[differentiate(forward, reverse, wrt(y))]
    pub fn brachistochrone_time(
        y: &[f64],
        y_start: f64,
        y_end: f64,
        length: f64,
        v_start: f64,
    ) -> f64 {
        let g = 9.81;
        let n = y.len();
        let h = length / (n + 1) as f64;
        let energy = v_start * v_start + 2.0 * g * y_start;
        let mut time = 0.0;
        let mut y_prev = y_start;
        let mut v_prev = v_start;
        for i in 0..n + 1 {
            let y_next = if i < n { y[i] } else { y_end };
            let v_next = (energy - 2.0 * g * y_next).sqrt();
            let dy = y_next - y_prev;
            let ds = (h * h + dy * dy).sqrt();
            time += 2.0 * ds / (v_prev + v_next);
            y_prev = y_next;
            v_prev = v_next;
        }
        time
    }

    /// Extended Rosenbrock, Σᵢ 100 (x[i+1] − x[i]²)² + (1 − x[i])².
    #[differentiate(forward, reverse)]
    pub fn rosenbrock<T: phidiff::Float>(x: &[T]) -> T {
        let hundred = T::from(100.0).unwrap();
        let mut f = T::zero();
        for i in 0..x.len() - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = T::one() - x[i];
            f += hundred * a * a + b * b;
        }
        f
    }

    /// log Σ exp(vᵢ), shifted by the maximum (called by [`gmm_objective`]).
    #[differentiate(forward, reverse)]
    pub fn log_sum_exp(v: &[f64]) -> f64 {
        let mut mx = v[0];
        for i in 1..v.len() {
            mx = mx.max(v[i]);
        }
        let mut s = 0.0;
        for i in 0..v.len() {
            s += (v[i] - mx).exp();
        }
        mx + s.ln()
    }

    /// ADBench's Gaussian mixture objective for the n points `x` (n × d, row-major) and
    /// K = `alphas.len()` full-covariance components with log-weights softmax(`alphas`),
    /// `means` (K × d) and inverse Cholesky factors Qₖ given by `icf` (K rows of d
    /// log-diagonal entries followed by the d(d−1)/2 strictly-lower entries, column by
    /// column): Σᵢ lse_k(αₖ + Σ log diag Qₖ − ½‖Qₖ(xᵢ − μₖ)‖²) − n lse(α) − ½nd ln 2π plus
    /// the Wishart prior Σₖ ½γ²‖Qₖ‖²_F − m Σ log diag Qₖ. ADBench's parameter-free term
    /// −K·C(d, m) (a multivariate log-gamma) is left out: it has no derivative, and std
    /// has no lgamma.
    #[differentiate(forward, reverse, wrt(alphas, means, icf))]
    pub fn gmm_objective(
        alphas: &[f64],
        means: &[f64],
        icf: &[f64],
        x: &[f64],
        d: usize,
        wishart_gamma: f64,
        wishart_m: usize,
    ) -> f64 {
        let k = alphas.len();
        let n = x.len() / d;
        let icf_len = d * (d + 1) / 2;
        let mut diag = vec![0.0; k * d];
        let mut sum_log_diag = vec![0.0; k];
        for c in 0..k {
            for j in 0..d {
                diag[c * d + j] = icf[c * icf_len + j].exp();
                sum_log_diag[c] += icf[c * icf_len + j];
            }
        }
        let mut centered = vec![0.0; d];
        let mut q_centered = vec![0.0; d];
        let mut main_term = vec![0.0; k];
        let mut slse = 0.0;
        for p in 0..n {
            for c in 0..k {
                for j in 0..d {
                    centered[j] = x[p * d + j] - means[c * d + j];
                    q_centered[j] = diag[c * d + j] * centered[j];
                }
                let mut l = c * icf_len + d;
                for col in 0..d {
                    for row in col + 1..d {
                        q_centered[row] += icf[l] * centered[col];
                        l += 1;
                    }
                }
                let mut sq = 0.0;
                for j in 0..d {
                    sq += q_centered[j] * q_centered[j];
                }
                main_term[c] = alphas[c] + sum_log_diag[c] - 0.5 * sq;
            }
            slse += log_sum_exp(&main_term);
        }
        let log_2pi = (2.0 * std::f64::consts::PI).ln();
        let constant = -0.5 * (n * d) as f64 * log_2pi;
        let mut prior = 0.0;
        for c in 0..k {
            let mut frobenius = 0.0;
            for j in 0..d {
                frobenius += diag[c * d + j] * diag[c * d + j];
            }
            for l in c * icf_len + d..(c + 1) * icf_len {
                frobenius += icf[l] * icf[l];
            }
            prior += 0.5 * wishart_gamma * wishart_gamma * frobenius
                - wishart_m as f64 * sum_log_diag[c];
        }
        constant + slse - n as f64 * log_sum_exp(alphas) + prior
    }
}

// ---------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------

/// Records of the noisy line y = 2x + 0.5 + 0.1·noise with x uniform in [1, 2].
pub struct BgdData {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// Learning rate, convergence tolerance and iteration cap of [`bgd_rmse`](coarse::bgd_rmse).
///
/// With x uniform in [1, 2] the Hessian of the (halved) mean squared error has eigenvalues
/// ≈ 0.025 and ≈ 3.3, so r = 0.5 is stable and contracts the slow direction by ≈ 0.987
/// per step: tol = 1e-3 stops after 190–250 steps, while (w, b) still depends on r (a
/// tighter tolerance makes d rmse / d r vanish: converged descent forgets its learning
/// rate). The trip count is a step function of r; `tests/coarsening.rs` checks it is
/// constant within the finite-difference steps at the test's data set.
pub const BGD_R: f64 = 0.5;
pub const BGD_TOL: f64 = 1e-3;
pub const BGD_MAX_ITER: usize = 100_000;

pub fn bgd_data(m: usize) -> BgdData {
    let u = phidiff::check::random_vector(11 + m as u64, m);
    let noise = phidiff::check::random_vector(12 + m as u64, m);
    let x: Vec<f64> = u.iter().map(|v| 1.5 + 0.5 * v).collect();
    let y = x
        .iter()
        .zip(&noise)
        .map(|(xi, e)| 2.0 * xi + 0.5 + 0.1 * e)
        .collect();
    BgdData { x, y }
}

/// Logistic-regression records: n × d features in [-1, 1] and 0/1 labels drawn from a
/// fixed coefficient vector, plus the point β at which the potential is evaluated.
pub struct HmcData {
    pub beta: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub sigma: f64,
}

pub fn hmc_data(n: usize, d: usize) -> HmcData {
    let x = phidiff::check::random_vector(21, n * d);
    let truth = phidiff::check::random_vector(22, d);
    let coin = phidiff::check::random_vector(23, n);
    let y = (0..n)
        .map(|i| {
            let t: f64 = (0..d).map(|j| x[i * d + j] * 2.0 * truth[j]).sum();
            let p = 1.0 / (1.0 + (-t).exp());
            if 0.5 * (coin[i] + 1.0) < p {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let beta = phidiff::check::random_vector(24, d);
    HmcData {
        beta,
        x,
        y,
        sigma: 2.0,
    }
}

/// A spring run: the parameters at which the misfit is evaluated and observations from a
/// slightly different spring (k = 4, x0 = 1, v0 = 0), so the misfit is not at its minimum.
pub struct SpringData {
    pub k: f64,
    pub x0: f64,
    pub v0: f64,
    pub obs: Vec<f64>,
    pub mass: f64,
    pub dt: f64,
}

pub fn spring_data(steps: usize) -> SpringData {
    let (mass, dt) = (1.0, 0.01);
    let (k_true, x_true, v_true) = (4.0_f64, 1.0, 0.0);
    let omega = (k_true / mass).sqrt();
    let obs = (1..=steps)
        .map(|n| {
            let t = n as f64 * dt;
            x_true * (omega * t).cos() + v_true / omega * (omega * t).sin()
        })
        .collect();
    SpringData {
        k: 3.7,
        x0: 0.9,
        v0: 0.2,
        obs,
        mass,
        dt,
    }
}

/// A brachistochrone path: `n` interior heights on the straight chute from (0, 1) to
/// (2, 0), sagged by 0.2·sin(πs) and perturbed by ±0.01, so every point lies below the
/// start (the speeds stay real) and no two neighbours coincide.
pub struct BrachistochroneData {
    pub y: Vec<f64>,
    pub y_start: f64,
    pub y_end: f64,
    pub length: f64,
    pub v_start: f64,
}

pub fn brachistochrone_data(n: usize) -> BrachistochroneData {
    let (y_start, y_end, length) = (1.0, 0.0, 2.0);
    let noise = phidiff::check::random_vector(31, n);
    let y = (0..n)
        .map(|i| {
            let s = (i + 1) as f64 / (n + 1) as f64;
            let line = y_start + (y_end - y_start) * s;
            line - 0.2 * (std::f64::consts::PI * s).sin() + 0.01 * noise[i]
        })
        .collect();
    BrachistochroneData {
        y,
        y_start,
        y_end,
        length,
        v_start: 0.5,
    }
}

/// The extended Rosenbrock point 1 + 0.5·noise (n variables).
pub fn rosenbrock_data(n: usize) -> Vec<f64> {
    phidiff::check::random_vector(41, n)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect()
}

/// An ADBench-style GMM instance (d dimensions, K components, n points), all entries
/// pseudo-random in the ranges ADBench's generator uses (icf and alphas in [-1, 1]).
pub struct GmmData {
    pub alphas: Vec<f64>,
    pub means: Vec<f64>,
    pub icf: Vec<f64>,
    pub x: Vec<f64>,
    pub d: usize,
    pub wishart_gamma: f64,
    pub wishart_m: usize,
}

pub fn gmm_data(d: usize, k: usize, n: usize) -> GmmData {
    let icf_len = d * (d + 1) / 2;
    GmmData {
        alphas: phidiff::check::random_vector(51, k),
        means: phidiff::check::random_vector(52, k * d),
        icf: phidiff::check::random_vector(53, k * icf_len)
            .iter()
            .map(|v| 0.5 * v)
            .collect(),
        x: phidiff::check::random_vector(54, n * d),
        d,
        wishart_gamma: 1.0,
        wishart_m: 0,
    }
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

// ---------------------------------------------------------------------------------------
// Benchmark instances (shared by the criterion bench and the report)
// ---------------------------------------------------------------------------------------

/// A closure timed by the benchmarks; returns the value so the work cannot be dropped.
pub type Run = Box<dyn FnMut() -> f64>;
/// `_grad` on the instance's data: (value, gradient flattened in parameter order).
pub type Gradient = Box<dyn Fn() -> (f64, Vec<f64>)>;

/// One program at one size, ready to time. `rev` calls `_rev` with seed 1, adding into
/// shadows the closure owns and does not re-zero (adding into a non-zero shadow costs the
/// same, and both modes are treated alike); `grad` calls `_grad` (fresh zeroed buffers)
/// and is what [`verify`] compares.
pub struct Instance {
    pub program: &'static str,
    pub size: String,
    pub primal: Run,
    /// `[coarse, fine]`.
    pub rev: [Run; 2],
    /// `[coarse, fine]`.
    pub grad: [Gradient; 2],
}

/// Before timing: coarse and fine gradients agree to 1e-10 relative to the largest
/// component, and the values equal the primal's (fine: 1e-12 relative; coarse: 1e-10,
/// because a closed loop evaluates its sum as Σₘ Aₘ·Hₘ, e.g. Σ(w·xᵢ + b − yᵢ)² as
/// w²Σx² + 2wbΣx + …, which rounds differently), so the benchmarks never time code that
/// computes something else.
pub fn verify(instance: &mut Instance) {
    let name = format!("{} {}", instance.program, instance.size);
    let f = (instance.primal)();
    let (f_coarse, g_coarse) = (instance.grad[0])();
    let (f_fine, g_fine) = (instance.grad[1])();
    assert!(
        g_coarse.iter().chain(&g_fine).all(|g| g.is_finite()),
        "{name}: non-finite gradient"
    );
    let e = rel_err(&g_coarse, &g_fine);
    assert!(
        e <= 1e-10,
        "{name}: coarse vs fine gradient: rel error {e:e}"
    );
    for (mode, value, tol) in [("coarse", f_coarse, 1e-10), ("fine", f_fine, 1e-12)] {
        let e = rel_err(&[value], &[f]);
        assert!(
            e <= tol,
            "{name}: {mode} _grad value vs primal: rel error {e:e}"
        );
    }
    for ((mode, tol), rev) in [("coarse", 1e-10), ("fine", 1e-12)]
        .iter()
        .zip(&mut instance.rev)
    {
        let e = rel_err(&[rev()], &[f]);
        assert!(
            e <= *tol,
            "{name}: {mode} _rev value vs primal: rel error {e:e}"
        );
    }
}

pub fn bgd_instance(m: usize) -> Instance {
    let d = std::rc::Rc::new(bgd_data(m));
    let (r, tol, cap) = (BGD_R, BGD_TOL, BGD_MAX_ITER);
    let (d0, d1, d2, d3, d4) = (d.clone(), d.clone(), d.clone(), d.clone(), d);
    Instance {
        program: "BGDHyperOpt",
        size: format!("M={m}"),
        primal: Box::new(move || coarse::bgd_rmse(&d0.x, &d0.y, r, tol, cap)),
        rev: [
            Box::new(move || coarse::bgd_rmse_rev(&d1.x, &d1.y, r, tol, cap, 1.0).0),
            Box::new(move || fine::bgd_rmse_rev(&d2.x, &d2.y, r, tol, cap, 1.0).0),
        ],
        grad: [
            Box::new(move || {
                let (v, g) = coarse::bgd_rmse_grad(&d3.x, &d3.y, r, tol, cap);
                (v, vec![g])
            }),
            Box::new(move || {
                let (v, g) = fine::bgd_rmse_grad(&d4.x, &d4.y, r, tol, cap);
                (v, vec![g])
            }),
        ],
    }
}

pub fn hmc_instance(n: usize, dim: usize) -> Instance {
    let d = std::rc::Rc::new(hmc_data(n, dim));
    let (d0, d1, d2, d3, d4) = (d.clone(), d.clone(), d.clone(), d.clone(), d);
    let mut s1 = vec![0.0; dim];
    let mut s2 = vec![0.0; dim];
    Instance {
        program: "HMC potential",
        size: format!("n={n} d={dim}"),
        primal: Box::new(move || coarse::hmc_potential(&d0.beta, &d0.x, &d0.y, d0.sigma)),
        rev: [
            Box::new(move || {
                coarse::hmc_potential_rev(&d1.beta, &mut s1, &d1.x, &d1.y, d1.sigma, 1.0)
            }),
            Box::new(move || {
                fine::hmc_potential_rev(&d2.beta, &mut s2, &d2.x, &d2.y, d2.sigma, 1.0)
            }),
        ],
        grad: [
            Box::new(move || coarse::hmc_potential_grad(&d3.beta, &d3.x, &d3.y, d3.sigma)),
            Box::new(move || fine::hmc_potential_grad(&d4.beta, &d4.x, &d4.y, d4.sigma)),
        ],
    }
}

pub fn spring_instance(steps: usize) -> Instance {
    let d = std::rc::Rc::new(spring_data(steps));
    let (d0, d1, d2, d3, d4) = (d.clone(), d.clone(), d.clone(), d.clone(), d);
    Instance {
        program: "Hookean spring",
        size: format!("steps={steps}"),
        primal: Box::new(move || {
            coarse::spring_misfit(d0.k, d0.x0, d0.v0, &d0.obs, d0.mass, d0.dt)
        }),
        rev: [
            Box::new(move || {
                coarse::spring_misfit_rev(d1.k, d1.x0, d1.v0, &d1.obs, d1.mass, d1.dt, 1.0).0
            }),
            Box::new(move || {
                fine::spring_misfit_rev(d2.k, d2.x0, d2.v0, &d2.obs, d2.mass, d2.dt, 1.0).0
            }),
        ],
        grad: [
            Box::new(move || {
                let (v, (a, b, c)) =
                    coarse::spring_misfit_grad(d3.k, d3.x0, d3.v0, &d3.obs, d3.mass, d3.dt);
                (v, vec![a, b, c])
            }),
            Box::new(move || {
                let (v, (a, b, c)) =
                    fine::spring_misfit_grad(d4.k, d4.x0, d4.v0, &d4.obs, d4.mass, d4.dt);
                (v, vec![a, b, c])
            }),
        ],
    }
}

pub fn brachistochrone_instance(n: usize) -> Instance {
    let d = std::rc::Rc::new(brachistochrone_data(n));
    let (d0, d1, d2, d3, d4) = (d.clone(), d.clone(), d.clone(), d.clone(), d);
    let mut s1 = vec![0.0; n];
    let mut s2 = vec![0.0; n];
    Instance {
        program: "Brachistochrone",
        size: format!("n={n}"),
        primal: Box::new(move || {
            coarse::brachistochrone_time(&d0.y, d0.y_start, d0.y_end, d0.length, d0.v_start)
        }),
        rev: [
            Box::new(move || {
                let d = &d1;
                coarse::brachistochrone_time_rev(
                    &d.y, &mut s1, d.y_start, d.y_end, d.length, d.v_start, 1.0,
                )
            }),
            Box::new(move || {
                let d = &d2;
                fine::brachistochrone_time_rev(
                    &d.y, &mut s2, d.y_start, d.y_end, d.length, d.v_start, 1.0,
                )
            }),
        ],
        grad: [
            Box::new(move || {
                let d = &d3;
                coarse::brachistochrone_time_grad(&d.y, d.y_start, d.y_end, d.length, d.v_start)
            }),
            Box::new(move || {
                let d = &d4;
                fine::brachistochrone_time_grad(&d.y, d.y_start, d.y_end, d.length, d.v_start)
            }),
        ],
    }
}

pub fn rosenbrock_instance(n: usize) -> Instance {
    let x = std::rc::Rc::new(rosenbrock_data(n));
    let (x0, x1, x2, x3, x4) = (x.clone(), x.clone(), x.clone(), x.clone(), x);
    let mut s1 = vec![0.0; n];
    let mut s2 = vec![0.0; n];
    Instance {
        program: "Rosenbrock",
        size: format!("n={n}"),
        primal: Box::new(move || coarse::rosenbrock(&x0)),
        rev: [
            Box::new(move || coarse::rosenbrock_rev(&x1, &mut s1, 1.0)),
            Box::new(move || fine::rosenbrock_rev(&x2, &mut s2, 1.0)),
        ],
        grad: [
            Box::new(move || coarse::rosenbrock_grad(&x3)),
            Box::new(move || fine::rosenbrock_grad(&x4)),
        ],
    }
}

/// What `gmm_objective_grad` returns: (value, (∂/∂alphas, ∂/∂means, ∂/∂icf)).
type GmmGrad = (f64, (Vec<f64>, Vec<f64>, Vec<f64>));

pub fn gmm_instance(dim: usize, k: usize, n: usize) -> Instance {
    let d = std::rc::Rc::new(gmm_data(dim, k, n));
    let (d0, d1, d2, d3, d4) = (d.clone(), d.clone(), d.clone(), d.clone(), d);
    let shadows = || {
        (
            vec![0.0; d0.alphas.len()],
            vec![0.0; d0.means.len()],
            vec![0.0; d0.icf.len()],
        )
    };
    let (mut a1, mut m1, mut i1) = shadows();
    let (mut a2, mut m2, mut i2) = shadows();
    let flat = |(v, (a, m, i)): GmmGrad| (v, [a, m, i].concat());
    Instance {
        program: "GMM (ADBench)",
        size: format!("d={dim} K={k} n={n}"),
        primal: Box::new(move || {
            let d = &d0;
            coarse::gmm_objective(
                &d.alphas,
                &d.means,
                &d.icf,
                &d.x,
                d.d,
                d.wishart_gamma,
                d.wishart_m,
            )
        }),
        rev: [
            Box::new(move || {
                let d = &d1;
                coarse::gmm_objective_rev(
                    &d.alphas,
                    &mut a1,
                    &d.means,
                    &mut m1,
                    &d.icf,
                    &mut i1,
                    &d.x,
                    d.d,
                    d.wishart_gamma,
                    d.wishart_m,
                    1.0,
                )
            }),
            Box::new(move || {
                let d = &d2;
                fine::gmm_objective_rev(
                    &d.alphas,
                    &mut a2,
                    &d.means,
                    &mut m2,
                    &d.icf,
                    &mut i2,
                    &d.x,
                    d.d,
                    d.wishart_gamma,
                    d.wishart_m,
                    1.0,
                )
            }),
        ],
        grad: [
            Box::new(move || {
                let d = &d3;
                flat(coarse::gmm_objective_grad(
                    &d.alphas,
                    &d.means,
                    &d.icf,
                    &d.x,
                    d.d,
                    d.wishart_gamma,
                    d.wishart_m,
                ))
            }),
            Box::new(move || {
                let d = &d4;
                flat(fine::gmm_objective_grad(
                    &d.alphas,
                    &d.means,
                    &d.icf,
                    &d.x,
                    d.d,
                    d.wishart_gamma,
                    d.wishart_m,
                ))
            }),
        ],
    }
}

/// Every benchmarked instance, in report order.
pub fn instances() -> Vec<Instance> {
    vec![
        bgd_instance(200),
        bgd_instance(1000),
        bgd_instance(2000),
        hmc_instance(1000, 10),
        hmc_instance(5000, 50),
        spring_instance(1_000),
        spring_instance(100_000),
        brachistochrone_instance(1_000),
        brachistochrone_instance(100_000),
        rosenbrock_instance(1_000),
        rosenbrock_instance(100_000),
        gmm_instance(2, 5, 1000),
        gmm_instance(10, 25, 1000),
    ]
}

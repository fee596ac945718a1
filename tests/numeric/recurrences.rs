//! Recurrences that coarsening closes. Linear ones (φ-calculus C7/C8): an exponential
//! moving average with a constant factor, compound interest with a rate per period, a
//! product of data, and a discounted return inside an outer loop; in the `coarse` copy
//! each is replaced by hoisted recurrences. Repeated application of a nonlinear map (C5):
//! a fixed number of Newton steps and of the logistic map; in the `coarse` copy their
//! tangents are carried forward. The `fine` copy keeps every loop and tapes it; both are
//! checked against finite differences and each other.

use super::differentiate;
use crate::common::*;

/// Exponential moving average of the model values `w·x[i] + b` with smoothing `alpha`,
/// started at `m0`: `m ← (1 − α)·m + α·(w·x[i] + b)`.
#[differentiate(forward, reverse, wrt(m0, w, b))]
pub fn moving_average(x: &[f64], alpha: f64, m0: f64, w: f64, b: f64) -> f64 {
    let mut m = m0;
    for i in 0..x.len() {
        m = (1.0 - alpha) * m + alpha * (w * x[i] + b);
    }
    m * m
}

/// The balance after saving `deposit` each period at the period's `rates[i]`, from
/// `start`, and the product of the growth factors times `start`.
#[differentiate(forward, reverse, wrt(start, deposit))]
pub fn compound_balance(rates: &[f64], start: f64, deposit: f64) -> f64 {
    let mut balance = start;
    let mut growth = start;
    for i in 0..rates.len() {
        balance = balance * (1.0 + rates[i]) + deposit;
        growth *= 1.0 + rates[i];
    }
    balance - 0.5 * growth
}

/// Returns discounted by `gamma`, summed backwards over the `rewards` of each of `epochs`
/// policies `theta·(1 + k/10)`; the inner recurrence is closed once, outside the outer loop.
#[differentiate(forward, reverse, wrt(theta))]
pub fn discounted_returns(rewards: &[f64], gamma: f64, theta: f64, epochs: usize) -> f64 {
    let mut total = 0.0;
    for k in 0..epochs {
        let scale = theta * (1.0 + 0.1 * k as f64);
        let mut g = 0.0;
        for t in (0..rewards.len()).rev() {
            g = rewards[t] * scale + gamma * g;
        }
        total += g * g;
    }
    total
}

/// `steps` Newton steps for the cube root of `a` from `x0`, scaled by `c`.
#[differentiate(forward, reverse)]
pub fn newton_cube_root(a: f64, x0: f64, c: f64, steps: usize) -> f64 {
    let mut x = x0;
    for _ in 0..steps {
        x = x - (x * x * x - a) / (3.0 * x * x);
    }
    c * x
}

/// `n` steps of the logistic map `d ← r·d·(1 − d)` from `d0`.
#[differentiate(forward, reverse)]
pub fn logistic_map(d0: f64, r: f64, n: usize) -> f64 {
    let mut d = d0;
    for _ in 0..n {
        d = r * d * (1.0 - d);
    }
    d
}

fn data(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.4 + 0.3 * (0.7 * i as f64).sin())
        .collect()
}

pub fn moving_average_matches_finite_differences() {
    let x = data(50);
    let alpha = 0.15;
    let f = |p: &[f64]| moving_average(&x, alpha, p[0], p[1], p[2]);
    for point in [[0.0, 1.0, 0.5], [2.0, -0.7, 0.1]] {
        check_fwd_rev(&Case {
            name: "moving_average",
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, v| {
                let (y, t) =
                    moving_average_fwd(&x, alpha, p[0], v[0], p[1], v[1], p[2], v[2]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, g0, g1, g2) = moving_average_rev(&x, alpha, p[0], p[1], p[2], w[0]);
                (vec![y], vec![g0, g1, g2])
            },
            tols: TOLS,
        });
        // ∂m/∂m0 = (1 − α)ⁿ, so ∂(m²)/∂m0 = 2m(1 − α)ⁿ.
        let (_, g0, _, _) = moving_average_rev(&x, alpha, point[0], point[1], point[2], 1.0);
        let m = {
            let mut m = point[0];
            for xi in &x {
                m = (1.0 - alpha) * m + alpha * (point[1] * xi + point[2]);
            }
            m
        };
        assert_close("∂/∂m0", g0, 2.0 * m * (1.0 - alpha).powi(50), 1e-12, 1e-15);
    }
}

pub fn compound_balance_matches_finite_differences() {
    let rates: Vec<f64> = (0..40).map(|i| 0.01 + 0.002 * (i % 7) as f64).collect();
    let f = |p: &[f64]| compound_balance(&rates, p[0], p[1]);
    let point = [100.0, 12.5];
    check_fwd_rev(&Case {
        name: "compound_balance",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = compound_balance_fwd(&rates, p[0], v[0], p[1], v[1]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let (y, g0, g1) = compound_balance_rev(&rates, p[0], p[1], w[0]);
            (vec![y], vec![g0, g1])
        },
        tols: TOLS,
    });
    // The balance is linear in (start, deposit): ∂/∂start = ½Π(1 + r), ∂/∂deposit =
    // Σₖ Π_{j>k}(1 + r_j).
    let prod: f64 = rates.iter().map(|r| 1.0 + r).product();
    let annuity: f64 = (0..rates.len())
        .map(|k| rates[k + 1..].iter().map(|r| 1.0 + r).product::<f64>())
        .sum();
    let (_, g0, g1) = compound_balance_rev(&rates, point[0], point[1], 1.0);
    assert_close("∂/∂start", g0, 0.5 * prod, 1e-13, 0.0);
    assert_close("∂/∂deposit", g1, annuity, 1e-13, 0.0);
}

pub fn discounted_returns_matches_finite_differences() {
    let rewards = data(30);
    for epochs in [0, 1, 4] {
        let f = |p: &[f64]| discounted_returns(&rewards, 0.9, p[0], epochs);
        let point = [0.8];
        check_fwd_rev(&Case {
            name: "discounted_returns",
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, v| {
                let (y, t) = discounted_returns_fwd(&rewards, 0.9, p[0], v[0], epochs);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, g) = discounted_returns_rev(&rewards, 0.9, p[0], epochs, w[0]);
                (vec![y], vec![g])
            },
            tols: TOLS,
        });
        // total = θ² Σₖ (1 + k/10)² G², with G the discounted return of the rewards.
        let g_ret: f64 = (0..rewards.len())
            .map(|t| rewards[t] * 0.9f64.powi(t as i32))
            .sum();
        let s: f64 = (0..epochs).map(|k| (1.0 + 0.1 * k as f64).powi(2)).sum();
        let (_, g) = discounted_returns_rev(&rewards, 0.9, 0.8, epochs, 1.0);
        assert_close("∂/∂θ", g, 2.0 * 0.8 * s * g_ret * g_ret, 1e-12, 1e-15);
    }
}

pub fn newton_steps_match_finite_differences() {
    for steps in [0, 1, 3, 8] {
        let f = |p: &[f64]| newton_cube_root(p[0], p[1], p[2], steps);
        let point = [5.0, 1.5, 0.7];
        check_fwd_rev(&Case {
            name: "newton_cube_root",
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, v| {
                let (y, t) = newton_cube_root_fwd(p[0], v[0], p[1], v[1], p[2], v[2], steps);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, ga, gx, gc) = newton_cube_root_rev(p[0], p[1], p[2], steps, w[0]);
                (vec![y], vec![ga, gx, gc])
            },
            tols: TOLS,
        });
    }
    // Converged: x = ∛a, so ∂(c·x)/∂a = c/(3a^{2/3}) and the start no longer matters.
    let (y, ga, gx, gc) = newton_cube_root_rev(5.0, 1.5, 0.7, 40, 1.0);
    let root = 5.0f64.cbrt();
    assert_close("value", y, 0.7 * root, 1e-14, 0.0);
    assert_close("∂/∂a", ga, 0.7 / (3.0 * root * root), 1e-12, 0.0);
    assert_close("∂/∂x0", gx, 0.0, 0.0, 1e-14);
    assert_close("∂/∂c", gc, root, 1e-14, 0.0);
}

pub fn logistic_map_matches_finite_differences() {
    // r = 2.8 converges to the fixed point 1 − 1/r; r = 3.3 to a 2-cycle. Short horizons
    // keep the sensitivities moderate for finite differences.
    for (r, n) in [(2.8, 12), (3.3, 9)] {
        let point = [0.3, r];
        check_fwd_rev(&Case {
            name: "logistic_map",
            x: &point,
            primal: &|p| vec![logistic_map(p[0], p[1], n)],
            jvp: &|p, v| {
                let (y, t) = logistic_map_fwd(p[0], v[0], p[1], v[1], n);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, g0, gr) = logistic_map_rev(p[0], p[1], n, w[0]);
                (vec![y], vec![g0, gr])
            },
            tols: TOLS,
        });
    }
    // One step: d = r·d0·(1 − d0), ∂/∂d0 = r(1 − 2d0), ∂/∂r = d0(1 − d0).
    let (_, g0, gr) = logistic_map_rev(0.3, 2.8, 1, 1.0);
    assert_close("∂/∂d0", g0, 2.8 * 0.4, 1e-15, 0.0);
    assert_close("∂/∂r", gr, 0.3 * 0.7, 1e-15, 0.0);
}

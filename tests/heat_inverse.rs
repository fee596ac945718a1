//! The differentiated functions of the README's main job (`examples/heat_inverse`), on a
//! small plate: the gradient of the checkpointed objective against central finite
//! differences, and `_fwd` against `_rev` by the dot-product identity, with time loops
//! shorter than, as long as and longer than Revolve's 8 snapshots; and the same objective
//! with the rayon step written inside the checkpointed loop (not called) gives the same
//! gradient (rel 1e-12). Tolerances are `common::TOLS` (FD: rel 1e-6, abs 1e-8; dot
//! product: rel 1e-12).

mod common;

#[path = "../examples/heat_inverse/model.rs"]
mod model;

use common::*;
use rayon::prelude::*;

// A 6 × 7 plate; r·(1 + ½u²) stays below 0.25 for |u| ≤ 1.15 (a stable explicit step).
const M: usize = 6;
const N: usize = 7;
const R: f64 = 0.15;
const SMOOTHING: f64 = 0.03;

/// A field of both signs and size ~1, so the conductivity's u² term matters.
fn field(seed: f64) -> Vec<f64> {
    (0..M * N)
        .map(|k| (seed * k as f64).sin() * 0.8 + 0.2 * (0.37 * k as f64).cos())
        .collect()
}

#[test]
fn heat_step_passes_finite_differences_and_the_dot_product_test() {
    let u = field(0.9);
    let mut point = u.clone();
    point.push(R);
    let len = M * N;
    check_fwd_rev(&Case {
        name: "heat_step",
        x: &point,
        primal: &|p| {
            let mut next = zeros(len);
            model::heat_step(&p[..len], &mut next, p[len], N);
            next
        },
        jvp: &|p, d| {
            let (mut next, mut dnext) = (zeros(len), zeros(len));
            model::heat_step_fwd(
                &p[..len],
                &d[..len],
                &mut next,
                &mut dnext,
                p[len],
                d[len],
                N,
            );
            (next, dnext)
        },
        vjp: &|p, w| {
            let (mut du, mut next, mut dnext) = (zeros(len), zeros(len), w.to_vec());
            let dr = model::heat_step_rev(&p[..len], &mut du, &mut next, &mut dnext, p[len], N);
            du.push(dr);
            (next, du)
        },
        tols: TOLS,
    });
}

#[test]
fn checkpointed_objective_passes_finite_differences_and_the_dot_product_test() {
    let u0 = field(0.9);
    let obs = field(1.7);
    for steps in [3, 8, 30] {
        let name = format!("objective ({steps} steps)");
        let f = |u: &[f64]| model::objective(u, &obs, N, R, steps, SMOOTHING);
        check_grad(
            &name,
            &u0,
            &f,
            &|u| model::objective_grad(u, &obs, N, R, steps, SMOOTHING),
            TOLS,
        );
        check_fwd_rev(&Case {
            name: &name,
            x: &u0,
            primal: &|u| vec![f(u)],
            jvp: &|u, du| {
                let (v, dv) = model::objective_fwd(u, du, &obs, N, R, steps, SMOOTHING);
                (vec![v], vec![dv])
            },
            vjp: &|u, w| {
                let mut du = zeros(u.len());
                let v = model::objective_rev(u, &mut du, &obs, N, R, steps, SMOOTHING, w[0]);
                (vec![v], du)
            },
            tols: TOLS,
        });
    }
}

#[test]
fn objective_is_the_misfit_of_simulate_plus_the_penalty() {
    let (u0, obs, steps) = (field(0.9), field(1.7), 30);
    let u_t = model::simulate(&u0, N, R, steps);
    let misfit: f64 = u_t.iter().zip(&obs).map(|(a, b)| (a - b) * (a - b)).sum();
    let mut roughness = 0.0;
    for i in 0..M {
        for j in 0..N {
            let c = u0[i * N + j];
            if j + 1 < N {
                roughness += (u0[i * N + j + 1] - c).powi(2);
            }
            if i + 1 < M {
                roughness += (u0[(i + 1) * N + j] - c).powi(2);
            }
        }
    }
    let want = 0.5 * misfit + 0.5 * SMOOTHING * roughness;
    let got = model::objective(&u0, &obs, N, R, steps, SMOOTHING);
    assert_close("objective", got, want, 1e-12, 0.0);
}

/// [`model::objective`] with the parallel step written inside the checkpointed loop instead
/// of called: the same gradient.
#[phidiff::differentiate(reverse, wrt(u0))]
fn objective_inline(
    u0: &[f64],
    obs: &[f64],
    n: usize,
    r: f64,
    steps: usize,
    smoothing: f64,
) -> f64 {
    let m = u0.len() / n;
    let mut u = u0.to_vec();
    let mut next = vec![0.0; m * n];
    #[checkpoint(revolve(snapshots = 8))]
    for _ in 0..steps {
        next.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            for j in 0..n {
                if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                    let c = u[i * n + j];
                    let laplacian = u[(i - 1) * n + j]
                        + u[(i + 1) * n + j]
                        + u[i * n + j - 1]
                        + u[i * n + j + 1]
                        - 4.0 * c;
                    row[j] = c + r * (1.0 + 0.5 * c * c) * laplacian;
                } else {
                    row[j] = 0.0;
                }
            }
        });
        std::mem::swap(&mut u, &mut next);
    }
    let misfit: f64 = (0..m * n)
        .into_par_iter()
        .map(|k| (u[k] - obs[k]) * (u[k] - obs[k]))
        .sum();
    let roughness: f64 = (0..m * n)
        .into_par_iter()
        .map(|k| {
            let right = if k % n + 1 < n {
                u0[k + 1] - u0[k]
            } else {
                0.0
            };
            let down = if k + n < m * n {
                u0[k + n] - u0[k]
            } else {
                0.0
            };
            right * right + down * down
        })
        .sum();
    0.5 * misfit + 0.5 * smoothing * roughness
}

#[test]
fn inline_step_gives_the_same_gradient() {
    let (u0, obs) = (field(0.9), field(1.7));
    for steps in [3, 8, 30] {
        let (v, g) = model::objective_grad(&u0, &obs, N, R, steps, SMOOTHING);
        let (vi, gi) = objective_inline_grad(&u0, &obs, N, R, steps, SMOOTHING);
        let primal = objective_inline(&u0, &obs, N, R, steps, SMOOTHING);
        assert_close("inline primal", primal, v, 1e-13, 0.0);
        assert_close("inline value", vi, v, 1e-13, 0.0);
        assert_rel("inline gradient", &gi, &g, 1e-12);
    }
}

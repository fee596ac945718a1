//! The forward model of `heat_inverse` and the objective it minimizes: heat diffusing on an
//! `m × n` plate stored by rows, with a conductivity that grows with temperature, run for
//! `steps` explicit steps; the objective is the misfit of the final temperature to the
//! observation plus a small smoothness penalty on the initial temperature.
//!
//! `tests/heat_inverse.rs` includes this file too and checks the generated derivatives
//! against finite differences and the dot-product identity.
// The example calls `objective`, `objective_grad` and `simulate`; the test the rest.
#![allow(dead_code)]

use phidiff::differentiate;
use rayon::prelude::*;

/// One explicit step of `u_t = κ(u) Δu` with the conductivity κ(u) = κ₀ (1 + ½u²) and the
/// plate's edge held at 0, parallel over the rows of the plate. `r = κ₀ dt / h²` must stay
/// below 0.25 / (1 + ½ max u²) for stability.
#[differentiate(forward, reverse)]
pub fn heat_step(u: &[f64], next: &mut [f64], r: f64, n: usize) {
    let m = u.len() / n;
    next.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for j in 0..n {
            if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                let c = u[i * n + j];
                let laplacian =
                    u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]
                        - 4.0 * c;
                row[j] = c + r * (1.0 + 0.5 * c * c) * laplacian;
            } else {
                row[j] = 0.0;
            }
        }
    });
}

/// `½‖u_T(u0) − obs‖² + ½ smoothing ‖∇u0‖²`: the misfit of the temperature after `steps`
/// steps from `u0`, plus a penalty on the differences between neighbouring cells of `u0`.
///
/// The time loop is reversed by Revolve with 8 snapshots of its state (`u` and `next`), so
/// the gradient's memory does not grow with `steps`; the price is recomputing some steps.
#[differentiate(forward, reverse, wrt(u0))]
pub fn objective(u0: &[f64], obs: &[f64], n: usize, r: f64, steps: usize, smoothing: f64) -> f64 {
    let m = u0.len() / n;
    let mut u = u0.to_vec();
    let mut next = vec![0.0; m * n];
    #[checkpoint(revolve(snapshots = 8))]
    for _ in 0..steps {
        heat_step(&u, &mut next, r, n);
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

/// The temperature after `steps` steps from `u0` (the primal of [`objective`]'s time loop).
pub fn simulate(u0: &[f64], n: usize, r: f64, steps: usize) -> Vec<f64> {
    let mut u = u0.to_vec();
    let mut next = vec![0.0; u0.len()];
    for _ in 0..steps {
        heat_step(&u, &mut next, r, n);
        std::mem::swap(&mut u, &mut next);
    }
    u
}

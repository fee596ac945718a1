//! Rayon loops and sums inside serial loops (issue 45, D1): the time loop around a
//! parallel step, the most common HPC shape. Each entry of the parallel loop saves into
//! its own slots of the tape; before the fix, every entry wrote slots `0..n` again and the
//! reverse sweep of every time step read the last step's values. Each function is checked
//! against its serial twin (rel 1e-12), finite differences and the dot-product test
//! (`TOLS`), and on 1, 2 and 8 threads.

use super::differentiate;
use super::parallel::{same_on_1_2_8_threads, Across};
use crate::common::*;
use rayon::prelude::*;

/// The reproducer: `u ↦ u²` twice, double-buffered with `swap`: `u⁴`.
#[differentiate(forward, reverse)]
pub fn squares_swapped(u0: &[f64], steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    for _ in 0..steps {
        v.par_iter_mut().enumerate().for_each(|(i, vi)| {
            *vi = u[i] * u[i];
        });
        std::mem::swap(&mut u, &mut v);
    }
    u[0]
}

/// A rayon sum inside a `for` whose result scales the state: `x⁹` after two steps.
#[differentiate(forward, reverse)]
pub fn energy_scaled(u0: &[f64], steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    for _ in 0..steps {
        let e: f64 = u.par_iter().map(|a| a * a).sum();
        for i in 0..n {
            u[i] *= e;
        }
    }
    u[0]
}

/// A periodic neighbour read in the parallel step (a gather at `(i + 1) % n`), state
/// swapped, then a sum over the state.
#[differentiate(forward, reverse)]
pub fn ring_steps_par(u0: &[f64], a: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    for _ in 0..steps {
        v.par_iter_mut().enumerate().for_each(|(i, vi)| {
            *vi = (a * u[i] * u[i]).sin() + 0.5 * u[(i + 1) % n];
        });
        std::mem::swap(&mut u, &mut v);
    }
    u.iter().map(|x| x * x).sum()
}

/// [`ring_steps_par`] with a serial step.
#[differentiate(forward, reverse)]
pub fn ring_steps_serial(u0: &[f64], a: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    for _ in 0..steps {
        for i in 0..n {
            v[i] = (a * u[i] * u[i]).sin() + 0.5 * u[(i + 1) % n];
        }
        std::mem::swap(&mut u, &mut v);
    }
    u.iter().map(|x| x * x).sum()
}

/// A `while` loop whose trip count depends on the state, stepping with a parallel loop and
/// `copy_from_slice`, and a parallel sum over a range in every step.
#[differentiate(forward, reverse, wrt(u0, a))]
pub fn damped_while_par(u0: &[f64], a: f64, tol: f64) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    let mut s = 0.0;
    let mut k = 0;
    while k < 6 && u[0].abs() > tol {
        v.par_iter_mut().enumerate().for_each(|(i, vi)| {
            *vi = 0.9 * u[i] * (a * u[i]).cos();
        });
        u.copy_from_slice(&v);
        s += (0..n).into_par_iter().map(|i| u[i] * v[i]).sum::<f64>();
        k += 1;
    }
    s
}

/// [`damped_while_par`] with serial loops.
#[differentiate(forward, reverse, wrt(u0, a))]
pub fn damped_while_serial(u0: &[f64], a: f64, tol: f64) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    let mut s = 0.0;
    let mut k = 0;
    while k < 6 && u[0].abs() > tol {
        for i in 0..n {
            v[i] = 0.9 * u[i] * (a * u[i]).cos();
        }
        u.copy_from_slice(&v);
        for i in 0..n {
            s += u[i] * v[i];
        }
        k += 1;
    }
    s
}

/// A checkpointed time loop whose step runs the parallel loop twice (an inner serial loop
/// around it), and a recurrence nested in the parallel loop (a 2-D tape row per slot).
#[differentiate(forward, reverse)]
pub fn substeps_par(u0: &[f64], a: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        for _ in 0..2 {
            v.par_iter_mut().enumerate().for_each(|(i, vi)| {
                let mut acc = 0.0;
                for j in 0..(i % 3 + 1) {
                    acc += (a * u[(i + j) % n] * u[i]).sin();
                }
                *vi = 0.5 * acc + 0.25 * u[i];
            });
            std::mem::swap(&mut u, &mut v);
        }
    }
    u.iter().map(|x| x * x).sum()
}

/// [`substeps_par`] with serial loops and no checkpointing.
#[differentiate(forward, reverse)]
pub fn substeps_serial(u0: &[f64], a: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut v = vec![0.0; n];
    for _ in 0..steps {
        for _ in 0..2 {
            for i in 0..n {
                let mut acc = 0.0;
                for j in 0..(i % 3 + 1) {
                    acc += (a * u[(i + j) % n] * u[i]).sin();
                }
                v[i] = 0.5 * acc + 0.25 * u[i];
            }
            std::mem::swap(&mut u, &mut v);
        }
    }
    u.iter().map(|x| x * x).sum()
}

/// The point `(u₀, a)` of `n` cells.
fn point(n: usize, a: f64) -> Vec<f64> {
    let mut p: Vec<f64> = (0..n).map(|i| 0.3 + 0.4 * (1.7 * i as f64).sin()).collect();
    p.push(a);
    p
}

/// The functions of `(u₀, a, k)`, `k` a constant parameter of type `K` (a step count, a
/// tolerance).
type Grad<K> = fn(&[f64], f64, K) -> (f64, (Vec<f64>, f64));
type Rev<K> = fn(&[f64], &mut [f64], f64, K, f64) -> (f64, f64);
type Fwd<K> = fn(&[f64], &[f64], f64, f64, K) -> (f64, f64);
type Primal<K> = fn(&[f64], f64, K) -> f64;
type Fns<K> = (Primal<K>, Fwd<K>, Rev<K>, Grad<K>);

/// A parallel function of `(u₀, a, k)` against its serial twin, on 1, 2 and 8 threads
/// and, where `n` cells are few, against finite differences and the dot-product test.
fn check_against_twin<K: Copy + Sync>(
    name: &str,
    (primal, fwd, rev, grad): Fns<K>,
    (twin_primal, twin): (Primal<K>, Grad<K>),
    n: usize,
    k: K,
) {
    let p = point(n, 0.8);
    let (u0, a) = (&p[..n], p[n]);
    let (v_p, (g_p, ga_p)) = grad(u0, a, k);
    let (v_s, (g_s, ga_s)) = twin(u0, a, k);
    assert_close(&format!("{name}: value vs serial"), v_p, v_s, 1e-12, 0.0);
    let primal_s = twin_primal(u0, a, k);
    assert_close(&format!("{name}: primal vs serial"), primal(u0, a, k), primal_s, 1e-12, 0.0);
    assert_all_close(&format!("{name}: ∂/∂u0 vs serial"), &g_p, &g_s, 1e-12, 1e-14);
    assert_close(&format!("{name}: ∂/∂a vs serial"), ga_p, ga_s, 1e-12, 1e-14);
    // The reads at `(i + j) % n` scatter their adjoints through a private copy per
    // thread, so the sums depend on the thread count to rounding.
    same_on_1_2_8_threads(name, Across::Rounding, || grad(u0, a, k));
    if n > 8 {
        return;
    }
    check_grad(
        name,
        &p,
        &|p| primal(&p[..n], p[n], k),
        &|p| {
            let (v, (mut g, ga)) = grad(&p[..n], p[n], k);
            g.push(ga);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name,
        x: &p,
        primal: &|p| vec![primal(&p[..n], p[n], k)],
        jvp: &|p, d| {
            let (v, t) = fwd(&p[..n], &d[..n], p[n], d[n], k);
            (vec![v], vec![t])
        },
        vjp: &|p, s| {
            let mut g = zeros(n);
            let (v, ga) = rev(&p[..n], &mut g, p[n], k, s[0]);
            g.push(ga);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

pub fn squares_swapped_is_u_to_the_fourth() {
    // d(u⁴)/du at 0.5 is 4·0.125.
    let (v, g) = squares_swapped_grad(&[0.5], 2);
    assert_rel("squares_swapped: value", &[v], &[0.0625], 1e-15);
    assert_rel("squares_swapped: gradient", &g, &[0.5], 1e-15);
    let u: Vec<f64> = (0..5).map(|i| 0.6 + 0.1 * i as f64).collect();
    check_grad(
        "squares_swapped",
        &u,
        &|u| squares_swapped(u, 3),
        &|u| squares_swapped_grad(u, 3),
        TOLS,
    );
}

pub fn energy_scaled_is_x_to_the_ninth() {
    // One cell: e = x², u ← x³, then e = x⁶, u ← x⁹; d/dx = 9x⁸.
    let x: f64 = 1.1;
    let (v, g) = energy_scaled_grad(&[x], 2);
    assert_rel("energy_scaled: value", &[v], &[x.powi(9)], 1e-14);
    assert_rel("energy_scaled: gradient", &g, &[9.0 * x.powi(8)], 1e-14);
    let u: Vec<f64> = (0..4).map(|i| 0.5 + 0.1 * i as f64).collect();
    check_grad(
        "energy_scaled",
        &u,
        &|u| energy_scaled(u, 2),
        &|u| energy_scaled_grad(u, 2),
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "energy_scaled",
        x: &u,
        primal: &|u| vec![energy_scaled(u, 2)],
        jvp: &|u, d| {
            let (v, t) = energy_scaled_fwd(u, d, 2);
            (vec![v], vec![t])
        },
        vjp: &|u, s| {
            let mut g = zeros(u.len());
            let v = energy_scaled_rev(u, &mut g, 2, s[0]);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

pub fn ring_steps_match_serial() {
    let par: Fns<usize> = (ring_steps_par, ring_steps_par_fwd, ring_steps_par_rev, ring_steps_par_grad);
    let twin: (Primal<usize>, Grad<usize>) = (ring_steps_serial, ring_steps_serial_grad);
    // More than one 512-iteration block, then few enough cells for finite differences.
    for n in [1100, 6] {
        check_against_twin("ring_steps_par", par, twin, n, 3);
    }
}

pub fn substeps_checkpointed_match_serial() {
    let par: Fns<usize> = (substeps_par, substeps_par_fwd, substeps_par_rev, substeps_par_grad);
    let twin: (Primal<usize>, Grad<usize>) = (substeps_serial, substeps_serial_grad);
    for n in [1100, 5] {
        check_against_twin("substeps_par", par, twin, n, 4);
    }
}

pub fn damped_while_matches_serial() {
    let par: Fns<f64> = (
        damped_while_par,
        damped_while_par_fwd,
        damped_while_par_rev,
        damped_while_par_grad,
    );
    let twin: (Primal<f64>, Grad<f64>) = (damped_while_serial, damped_while_serial_grad);
    for n in [1100, 5] {
        check_against_twin("damped_while_par", par, twin, n, 1e-3);
    }
}

//! The 2-D viscous Burgers program of the scoreboard (`examples/scoreboard.rs`): the
//! one-process form of `examples/mpi_burgers` (periodic `m × n` grid, upwind advection by
//! the sign of `u`, central diffusion, explicit Euler), its time loop reversed by Revolve
//! ([`burgers2d_revolve`]) or fully taped ([`burgers2d_full`]), and hand-written adjoints
//! for each: one that stores every state ([`burgers2d_hand`], what a person writes without
//! AD when the states fit in memory) and one under Revolve's snapshot budget
//! ([`burgers2d_hand_revolve`]).
#![allow(dead_code)]
#![allow(clippy::needless_range_loop)]

use phidiff::differentiate;

macro_rules! burgers2d {
    ($(#[doc = $doc:literal])* $name:ident($($extra:ident: $ty:ty),*) $(#[$ck:meta])?) => {
        $(#[doc = $doc])*
        #[differentiate(reverse, wrt(u0))]
        pub fn $name(u0: &[f64], n: usize, nu: f64, dt: f64, steps: usize $(, $extra: $ty)*) -> f64 {
            let m = u0.len() / n;
            let mut u = u0.to_vec();
            let mut next = vec![0.0; m * n];
            $(#[$ck])?
            for _ in 0..steps {
                for i in 0..m {
                    for j in 0..n {
                        let c = u[i * n + j];
                        let w = u[i * n + (j + n - 1) % n];
                        let e = u[i * n + (j + 1) % n];
                        let no = u[((i + m - 1) % m) * n + j];
                        let so = u[((i + 1) % m) * n + j];
                        let adv = if c > 0.0 {
                            c * (c - w) + c * (c - no)
                        } else {
                            c * (e - c) + c * (so - c)
                        };
                        next[i * n + j] = c - dt * adv + nu * dt * (w + e + no + so - 4.0 * c);
                    }
                }
                std::mem::swap(&mut u, &mut next);
            }
            let mut s = 0.0;
            for k in 0..m * n {
                s += u[k] * u[k];
            }
            0.5 * s
        }
    };
}

burgers2d!(
    /// `½ Σ u²` after `steps` steps from `u0` (`m × n`), the time loop reversed by Revolve
    /// with `snaps` snapshots in memory.
    burgers2d_revolve(snaps: usize) #[checkpoint(revolve(snapshots = snaps))]
);
burgers2d!(
    /// [`burgers2d_revolve`] with every step taped (no checkpointing).
    burgers2d_full()
);

/// A smooth periodic initial field on the `m × n` grid, both signs (so both upwind
/// branches run).
pub fn initial(m: usize, n: usize) -> Vec<f64> {
    let tau = 2.0 * std::f64::consts::PI;
    (0..m * n)
        .map(|k| {
            let (x, y) = ((k % n) as f64 / n as f64, (k / n) as f64 / m as f64);
            0.2 + 0.6 * (tau * x).sin() * (tau * y).sin() + 0.1 * (2.0 * tau * x).cos()
        })
        .collect()
}

/// One hand-written Burgers step `u → next` on the periodic `m × n` grid (the loop body
/// of [`burgers2d_full`]).
fn hand_step(u: &[f64], next: &mut [f64], n: usize, nu: f64, dt: f64) {
    let m = u.len() / n;
    for i in 0..m {
        let (up, down) = ((i + m - 1) % m, (i + 1) % m);
        for j in 0..n {
            let (jw, je) = ((j + n - 1) % n, (j + 1) % n);
            let c = u[i * n + j];
            let (w, e, no, so) = (u[i * n + jw], u[i * n + je], u[up * n + j], u[down * n + j]);
            let adv = if c > 0.0 {
                c * (c - w) + c * (c - no)
            } else {
                c * (e - c) + c * (so - c)
            };
            next[i * n + j] = c - dt * adv + nu * dt * (w + e + no + so - 4.0 * c);
        }
    }
}

/// The transposed Jacobian of [`hand_step`] at the state `u` applied to `bar`, written
/// into `prev`: the adjoint of one step needs only the state before it.
fn hand_step_adjoint(u: &[f64], bar: &[f64], prev: &mut [f64], n: usize, nu: f64, dt: f64) {
    let m = u.len() / n;
    let nudt = nu * dt;
    prev.iter_mut().for_each(|v| *v = 0.0);
    for i in 0..m {
        let (up, down) = ((i + m - 1) % m, (i + 1) % m);
        for j in 0..n {
            let (jw, je) = ((j + n - 1) % n, (j + 1) % n);
            let a = bar[i * n + j];
            let c = u[i * n + j];
            let (w, e, no, so) = (u[i * n + jw], u[i * n + je], u[up * n + j], u[down * n + j]);
            prev[i * n + jw] += a * nudt;
            prev[i * n + je] += a * nudt;
            prev[up * n + j] += a * nudt;
            prev[down * n + j] += a * nudt;
            if c > 0.0 {
                // adv = 2c² − c·w − c·no
                prev[i * n + j] += a * (1.0 - dt * (4.0 * c - w - no) - 4.0 * nudt);
                prev[i * n + jw] += a * dt * c;
                prev[up * n + j] += a * dt * c;
            } else {
                // adv = c·e + c·so − 2c²
                prev[i * n + j] += a * (1.0 - dt * (e + so - 4.0 * c) - 4.0 * nudt);
                prev[i * n + je] -= a * dt * c;
                prev[down * n + j] -= a * dt * c;
            }
        }
    }
}

fn check_shadow(name: &str, g: &[f64], size: usize) {
    assert_eq!(
        g.len(),
        size,
        "{name}: g has {} entries, u0 has {size}",
        g.len()
    );
}

/// The hand-written adjoint of [`burgers2d_full`]: the forward sweep keeps every state,
/// the reverse sweep applies each step's transposed Jacobian. Adds `seed · ∇J` into `g`
/// and returns `J`.
pub fn burgers2d_hand(
    u0: &[f64],
    g: &mut [f64],
    n: usize,
    nu: f64,
    dt: f64,
    steps: usize,
    seed: f64,
) -> f64 {
    let size = u0.len();
    check_shadow("burgers2d_hand", g, size);
    let mut states = Vec::with_capacity((steps + 1) * size);
    states.extend_from_slice(u0);
    let mut next = vec![0.0; size];
    for t in 0..steps {
        hand_step(&states[t * size..], &mut next, n, nu, dt);
        states.extend_from_slice(&next);
    }
    let last = &states[steps * size..];
    let value = 0.5 * last.iter().map(|v| v * v).sum::<f64>();
    // ū = seed · u at the end, then back through the steps.
    let mut bar: Vec<f64> = last.iter().map(|v| seed * v).collect();
    let mut prev = vec![0.0; size];
    for t in (0..steps).rev() {
        hand_step_adjoint(
            &states[t * size..(t + 1) * size],
            &bar,
            &mut prev,
            n,
            nu,
            dt,
        );
        std::mem::swap(&mut bar, &mut prev);
    }
    for (gi, b) in g.iter_mut().zip(&bar) {
        *gi += b;
    }
    value
}

/// The hand-written adjoint of [`burgers2d_revolve`] under the same memory budget: the
/// step and its adjoint of [`burgers2d_hand`], driven by the Revolve schedule with `snaps`
/// snapshots (`phidiff::checkpoint::Scheme`, the binomial algorithm a person would take
/// from a library) and the snapshots kept in plain vectors. Where the schedule says to
/// reverse a step, the hand adjoint reads the state before it; it needs no tape, so it
/// does not run the step. Adds `seed · ∇J` into `g` and returns `J`.
#[allow(clippy::too_many_arguments)]
pub fn burgers2d_hand_revolve(
    u0: &[f64],
    g: &mut [f64],
    n: usize,
    nu: f64,
    dt: f64,
    steps: usize,
    snaps: usize,
    seed: f64,
) -> f64 {
    use phidiff::checkpoint::{Action, Scheme, StepMode};
    let size = u0.len();
    check_shadow("burgers2d_hand_revolve", g, size);
    let mut schedule = Scheme::Revolve { snapshots: snaps }
        .schedule(Some(steps))
        .unwrap_or_else(|e| panic!("burgers2d_hand_revolve: {e}"));
    let mut slots: Vec<Vec<f64>> = vec![Vec::new(); snaps];
    let store = |slots: &mut Vec<Vec<f64>>, slot: usize, u: &[f64]| {
        slots[slot].clear();
        slots[slot].extend_from_slice(u);
    };
    let mut u = u0.to_vec();
    let mut next = vec![0.0; size];
    // The state before the step the forward phase runs taped (the last one).
    let mut before_last = Vec::new();
    for t in 0..steps {
        let step = schedule.forward_step(t);
        if let Some(slot) = step.store {
            store(&mut slots, slot, &u);
        }
        if step.mode == StepMode::Taped {
            before_last.clone_from(&u);
        }
        hand_step(&u, &mut next, n, nu, dt);
        std::mem::swap(&mut u, &mut next);
    }
    schedule.end_forward(steps);
    let value = 0.5 * u.iter().map(|v| v * v).sum::<f64>();
    let mut bar: Vec<f64> = u.iter().map(|v| seed * v).collect();
    let mut prev = vec![0.0; size];
    loop {
        match schedule.next_reverse() {
            Action::Store { slot, .. } => store(&mut slots, slot, &u),
            Action::Restore { slot, .. } => u.copy_from_slice(&slots[slot]),
            Action::Advance { from, to } => {
                for _ in from..to {
                    hand_step(&u, &mut next, n, nu, dt);
                    std::mem::swap(&mut u, &mut next);
                }
            }
            Action::Reverse { .. } => {
                hand_step_adjoint(&u, &bar, &mut prev, n, nu, dt);
                std::mem::swap(&mut bar, &mut prev);
            }
            Action::Adjoint { .. } => {
                hand_step_adjoint(&before_last, &bar, &mut prev, n, nu, dt);
                std::mem::swap(&mut bar, &mut prev);
            }
            Action::Done => break,
        }
    }
    for (gi, b) in g.iter_mut().zip(&bar) {
        *gi += b;
    }
    value
}

/// The hand-written adjoint of the nonlinear 2-D heat step (`parallel_programs.rs`,
/// `heat2d_*`): `out` receives the step, `g` receives `seed · ∇(Σ out²)`.
pub fn heat2d_hand(u: &[f64], out: &mut [f64], g: &mut [f64], r: f64, n: usize, seed: f64) -> f64 {
    let m = u.len() / n;
    let mut s = 0.0;
    for i in 0..m {
        for j in 0..n {
            let p = i * n + j;
            if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                let c = u[p];
                let lap = u[p - n] + u[p + n] + u[p - 1] + u[p + 1] - 4.0 * c;
                let k = 1.0 + 0.1 * c * c;
                let o = c + r * lap * k;
                out[p] = o;
                s += o * o;
                let a = 2.0 * seed * o;
                let rk = a * r * k;
                g[p - n] += rk;
                g[p + n] += rk;
                g[p - 1] += rk;
                g[p + 1] += rk;
                g[p] += a * (1.0 - 4.0 * r * k + r * lap * 0.2 * c);
            } else {
                out[p] = u[p];
                s += u[p] * u[p];
                g[p] += 2.0 * seed * u[p];
            }
        }
    }
    s
}

//! Checkpointed loops whose trip count or state the loop itself decides: a `while` loop
//! (and the same loop as `loop`/`break`) with a data-dependent trip count, and a `&mut`
//! state evolved in place. Checked as in `checkpoint.rs`, with its helpers: every variant
//! against the fully taped reference (rel 1e-12) and its schedule's counts, and
//! `check_grad`/`check_fwd_rev` on each.

use super::checkpoint::{check_reports, ck, compare_variants, Kind};
use super::differentiate;
use crate::common::*;
use phidiff::checkpoint::record;

// ---------------------------------------------------------------------------------------
// A `while` loop with a data-dependent trip count: a damped, forced pendulum by symplectic
// Euler with the adaptive step dt = h / (1 + ω²) until t ≥ t_end. The trip count depends
// on the input but is locally constant: at the finite-difference point (t_end = 3.05, 242
// steps) the last t overshoots t_end by 9.2e-3 and the one before falls 5.0e-3 short, far
// more than the finite-difference steps move t (≤ 4e-4). The forcing reads an integer step
// counter, so the counter is loop-carried state too. The `loop` form enters its body once
// more than the `while` form runs it (the last entry only breaks), and its schedule counts
// that entry as a step.

/// One variant of the pendulum problem.
#[derive(Clone, Copy)]
pub struct Pendulum {
    pub name: &'static str,
    pub kind: Option<Kind>,
    pub f: fn(&[f64], f64, f64, usize) -> f64,
    pub grad: fn(&[f64], f64, f64, usize) -> (f64, (Vec<f64>, f64, f64)),
    pub fwd: fn(&[f64], &[f64], f64, f64, f64, f64, usize) -> (f64, f64),
    pub rev: fn(&[f64], &mut [f64], f64, f64, usize, f64) -> (f64, f64, f64),
}

macro_rules! pendulum_variants {
    ($($variant:ident($snaps:ident) $kind:expr, [$($ck:tt)*];)*) => {
        $(
            pub mod $variant {
                use super::differentiate;

                /// θ² + ω² at the first t ≥ `t_end`, from (θ, ω) = `x0`, stiffness `k`.
                #[differentiate(forward, reverse)]
                pub fn pendulum(x0: &[f64], k: f64, t_end: f64, $snaps: usize) -> f64 {
                    let h = 0.02;
                    let mut x = x0.to_vec();
                    let mut t = 0.0;
                    let mut count = 0;
                    $($ck)*
                    while t < t_end {
                        let dt = h / (1.0 + x[1] * x[1]);
                        let force = 0.3 * (0.05 * count as f64).cos();
                        let a = force - k * x[0].sin() - 0.1 * x[1];
                        x[1] += dt * a;
                        x[0] += dt * x[1];
                        t += dt;
                        count += 1;
                    }
                    x[0] * x[0] + x[1] * x[1]
                }
            }
        )*
        pub const PENDULUM_WHILE: &[Pendulum] = &[$(Pendulum {
            name: stringify!($variant),
            kind: $kind,
            f: $variant::pendulum,
            grad: $variant::pendulum_grad,
            fwd: $variant::pendulum_fwd,
            rev: $variant::pendulum_rev,
        }),*];
    };
}

pendulum_variants! {
    pendulum_taped(_snaps) None, [];
    pendulum_online_memory(snaps) ck("online", "memory"),
        [#[checkpoint(online(snapshots = snaps))]];
    pendulum_online_disk(snaps) ck("online", "disk"),
        [#[checkpoint(online(snapshots = snaps), storage = disk)]];
    pendulum_revolve_memory(snaps) ck("revolve", "memory"),
        [#[checkpoint(revolve(snapshots = snaps), storage = memory)]];
    pendulum_revolve_disk(snaps) ck("revolve", "disk"),
        [#[checkpoint(revolve(snapshots = snaps), storage = disk)]];
    pendulum_periodic_memory(snaps) ck("periodic", "memory"),
        [#[checkpoint(periodic(every = snaps))]];
    pendulum_periodic_disk(snaps) ck("periodic", "disk"),
        [#[checkpoint(periodic(every = snaps), storage = disk)]];
}

/// The same loop written as `loop` with a `break` at its top.
pub mod pendulum_loop_online {
    use super::differentiate;

    #[differentiate(forward, reverse)]
    pub fn pendulum(x0: &[f64], k: f64, t_end: f64, snaps: usize) -> f64 {
        let h = 0.02;
        let mut x = x0.to_vec();
        let mut t = 0.0;
        let mut count = 0;
        #[checkpoint(online(snapshots = snaps))]
        loop {
            if t >= t_end {
                break;
            }
            let dt = h / (1.0 + x[1] * x[1]);
            let force = 0.3 * (0.05 * count as f64).cos();
            let a = force - k * x[0].sin() - 0.1 * x[1];
            x[1] += dt * a;
            x[0] += dt * x[1];
            t += dt;
            count += 1;
        }
        x[0] * x[0] + x[1] * x[1]
    }
}

fn pendulums() -> Vec<Pendulum> {
    let mut all = PENDULUM_WHILE.to_vec();
    all.push(Pendulum {
        name: "pendulum_loop_online",
        kind: Some(Kind {
            breaking_steps: 1,
            ..ck("online", "memory").unwrap()
        }),
        f: pendulum_loop_online::pendulum,
        grad: pendulum_loop_online::pendulum_grad,
        fwd: pendulum_loop_online::pendulum_fwd,
        rev: pendulum_loop_online::pendulum_rev,
    });
    all
}

/// The trip count of the pendulum loop (the same loop, undifferentiated).
fn pendulum_steps(x0: &[f64], k: f64, t_end: f64) -> usize {
    let h = 0.02;
    let mut x = x0.to_vec();
    let (mut t, mut count) = (0.0, 0usize);
    while t < t_end {
        let dt = h / (1.0 + x[1] * x[1]);
        let force = 0.3 * (0.05 * count as f64).cos();
        let a = force - k * x[0].sin() - 0.1 * x[1];
        x[1] += dt * a;
        x[0] += dt * x[1];
        t += dt;
        count += 1;
    }
    count
}

const PENDULUM_STIFFNESS: f64 = 2.0;

pub fn while_loop_every_scheme() {
    let variants = pendulums();
    let names: Vec<_> = variants.iter().map(|v| (v.name, v.kind)).collect();
    let (x0, k) = ([0.9, 0.3], PENDULUM_STIFFNESS);
    // 242 steps: 5 snapshots recompute; 300 snapshots exceed the steps
    for (t_end, snaps) in [(3.05, 5), (3.05, 300), (1.0, 2)] {
        let steps = pendulum_steps(&x0, k, t_end);
        assert!(steps > 60, "{steps} steps");
        let (j, g) = compare_variants("pendulum", &names, snaps, steps, false, &|i| {
            let (j, (mut g, gk, gt)) = (variants[i].grad)(&x0, k, t_end, snaps);
            g.extend([gk, gt]);
            (j, g)
        });
        // the trip count is locally constant, so t_end has no derivative
        assert_eq!(g[3], 0.0, "∂J/∂t_end");
        for v in &variants {
            assert_rel(
                &format!("{} primal", v.name),
                &[(v.f)(&x0, k, t_end, snaps)],
                &[j],
                1e-12,
            );
        }
    }
}

pub fn while_loop_against_finite_differences() {
    let point = [0.9, 0.3, PENDULUM_STIFFNESS, 3.05];
    let snaps = 4;
    for v in &pendulums() {
        let name = format!("pendulum/{} (k = {snaps})", v.name);
        let f = |p: &[f64]| (v.f)(&p[..2], p[2], p[3], snaps);
        check_grad(
            &name,
            &point,
            &f,
            &|p| {
                let (j, (mut g, gk, gt)) = (v.grad)(&p[..2], p[2], p[3], snaps);
                g.extend([gk, gt]);
                (j, g)
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: &name,
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, d| {
                let (y, t) = (v.fwd)(&p[..2], &d[..2], p[2], d[2], p[3], d[3], snaps);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(2);
                let (y, gk, gt) = (v.rev)(&p[..2], &mut g, p[2], p[3], snaps, w[0]);
                g.extend([gk, gt]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

// ---------------------------------------------------------------------------------------
// A `&mut` state evolved in place by a checkpointed loop (with a source that reads the
// loop index); after `_rev` it must hold what the primal leaves. The snapshot count is an
// expression of a parameter.

/// One variant of the in-place heat problem.
pub struct InPlace {
    pub name: &'static str,
    pub kind: Option<Kind>,
    pub f: fn(&mut [f64], f64, usize) -> f64,
    pub grad: fn(&mut [f64], f64, usize) -> (f64, (Vec<f64>, f64)),
    pub fwd: fn(&mut [f64], &mut [f64], f64, f64, usize) -> (f64, f64),
    pub rev: fn(&mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64),
}

macro_rules! in_place_variants {
    ($($variant:ident($steps:ident) $kind:expr, [$($ck:tt)*];)*) => {
        $(
            pub mod $variant {
                use super::differentiate;

                /// `steps` FTCS steps of `u` in place with a small source; returns Σ u².
                #[differentiate(forward, reverse)]
                pub fn heat_in_place(u: &mut [f64], r: f64, $steps: usize) -> f64 {
                    let n = u.len();
                    let mut next = vec![0.0; n];
                    $($ck)*
                    for step in 0..$steps {
                        let source = 0.01 * (0.3 * step as f64).sin();
                        for i in 1..n - 1 {
                            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + source;
                        }
                        for i in 1..n - 1 {
                            u[i] = next[i];
                        }
                    }
                    let mut j = 0.0;
                    for i in 0..n {
                        j += u[i] * u[i];
                    }
                    j
                }
            }
        )*
        pub const IN_PLACE: &[InPlace] = &[$(InPlace {
            name: stringify!($variant),
            kind: $kind,
            f: $variant::heat_in_place,
            grad: $variant::heat_in_place_grad,
            fwd: $variant::heat_in_place_fwd,
            rev: $variant::heat_in_place_rev,
        }),*];
    };
}

in_place_variants! {
    in_place_taped(steps) None, [];
    in_place_revolve_memory(steps) ck("revolve", "memory"),
        [#[checkpoint(revolve(snapshots = steps / 8 + 1))]];
    in_place_periodic_disk(steps) ck("periodic", "disk"),
        [#[checkpoint(periodic(every = steps / 8 + 1), storage = disk)]];
    in_place_online_memory(steps) ck("online", "memory"),
        [#[checkpoint(online(snapshots = steps / 8 + 1))]];
}

pub fn in_place_state_restored_after_rev() {
    let n = 10;
    let u0: Vec<f64> = (0..n).map(|i| (0.7 * i as f64).sin() + 0.2).collect();
    let r = 0.3;
    let point = cat(&[&u0, &[r]]);
    for steps in [40, 3] {
        let k = steps / 8 + 1;
        let mut reference: Option<(Vec<f64>, Vec<f64>)> = None;
        for v in IN_PLACE {
            let name = format!("heat_in_place/{} ({steps} steps, k = {k})", v.name);
            // outputs: J, then the final u
            let primal = |p: &[f64]| {
                let mut u = p[..n].to_vec();
                let j = (v.f)(&mut u, p[n], steps);
                cat(&[&[j], &u])
            };
            let y = primal(&point);
            // _rev with the adjoint of J and of the final u
            let w: Vec<f64> = (0..=n).map(|i| 1.0 + 0.1 * i as f64).collect();
            let mut u = u0.clone();
            let mut adj_u = w[1..].to_vec();
            let ((j, gr), reports) = record(|| (v.rev)(&mut u, &mut adj_u, r, steps, w[0]));
            check_reports(&name, v.kind, k, steps, true, &reports);
            assert_eq!(j, y[0], "{name}: value from _rev");
            assert_eq!(u, y[1..], "{name}: u after _rev is the primal's final u");
            let adjoint = cat(&[&adj_u, &[gr]]);
            // _grad: the gradient of J alone (zero adjoint of the final u), u left as the
            // primal leaves it
            let mut u = u0.clone();
            let ((j, (g, gr)), reports) = record(|| (v.grad)(&mut u, r, steps));
            check_reports(&name, v.kind, k, steps, true, &reports);
            assert_eq!(j, y[0], "{name}: value from _grad");
            assert_eq!(u, y[1..], "{name}: u after _grad is the primal's final u");
            let mut u = u0.clone();
            let mut adj_j = zeros(n);
            let (_, gr_j) = (v.rev)(&mut u, &mut adj_j, r, steps, 1.0);
            assert_eq!(
                (&g, gr),
                (&adj_j, gr_j),
                "{name}: _grad is _rev with seed 1"
            );
            check_grad(
                &name,
                &point,
                &|p| (v.f)(&mut p[..n].to_vec(), p[n], steps),
                &|p| {
                    let (j, (mut g, gr)) = (v.grad)(&mut p[..n].to_vec(), p[n], steps);
                    g.push(gr);
                    (j, g)
                },
                TOLS,
            );
            match &reference {
                Some((y0, a0)) => {
                    assert_rel(&format!("{name}: outputs"), &y, y0, 1e-12);
                    assert_all_close(&format!("{name}: adjoint"), &adjoint, a0, 1e-12, 1e-15);
                }
                None => reference = Some((y.clone(), adjoint)),
            }
            check_fwd_rev(&Case {
                name: &name,
                x: &point,
                primal: &primal,
                jvp: &|p, d| {
                    let mut u = p[..n].to_vec();
                    let mut du = d[..n].to_vec();
                    let (j, dj) = (v.fwd)(&mut u, &mut du, p[n], d[n], steps);
                    (cat(&[&[j], &u]), cat(&[&[dj], &du]))
                },
                vjp: &|p, w| {
                    let mut u = p[..n].to_vec();
                    let mut adj_u = w[1..].to_vec();
                    let (j, gr) = (v.rev)(&mut u, &mut adj_u, p[n], steps, w[0]);
                    (cat(&[&[j], &u]), cat(&[&adj_u, &[gr]]))
                },
                tols: TOLS,
            });
        }
    }
}

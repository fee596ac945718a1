//! Checkpointed loops (`#[checkpoint(revolve | periodic | online, storage = memory | disk)]`):
//! an explicit heat equation, Lorenz-63 with RK4, viscous Burgers. A `while` loop whose trip
//! count depends on the input and a `&mut` state evolved in place are in
//! `checkpoint_loops.rs`, with the helpers here.
//!
//! Every problem is written once in a `macro_rules!` that emits one module per variant: the
//! function taped in full (no `#[checkpoint]`, the reference) and the same body with each
//! scheme and storage. For every variant:
//! - `_grad` equals the reference's value and gradient to rel 1e-12 (the same operations
//!   run, only in a different order of recomputation);
//! - the published values (heat, Lorenz, Burgers) hold to rel 1e-10;
//! - `phidiff::checkpoint::record` sees exactly one report per `_grad` call, whose counts
//!   are those of the schedule itself driven for the same trip count (Revolve's forward
//!   steps also against `revolve_forward_steps`), with recomputation where the snapshots
//!   are fewer than the steps;
//! - `check_grad` (finite differences) and `check_fwd_rev` (FD on `_fwd`, dot product) on a
//!   smaller configuration, including snapshots ≥ steps.

use super::differentiate;
use crate::common::*;
use phidiff::checkpoint::{record, revolve_forward_steps, Action, Report, Scheme, Stats};

/// What a variant's `#[checkpoint]` says.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// `"revolve"`, `"periodic"` or `"online"`.
    pub scheme: &'static str,
    /// `"memory"` or `"disk"`.
    pub storage: &'static str,
    /// The `snapshots`/`every` written as a literal; `None`: it comes from the arguments.
    pub fixed: Option<usize>,
    /// Steps the schedule sees beyond the trip count: 1 for a `loop` whose last iteration
    /// only breaks (its body is entered once more than the equivalent `while` runs).
    pub breaking_steps: usize,
}

pub(super) const fn ck(scheme: &'static str, storage: &'static str) -> Option<Kind> {
    Some(Kind {
        scheme,
        storage,
        fixed: None,
        breaking_steps: 0,
    })
}

const fn ck_fixed(scheme: &'static str, storage: &'static str, k: usize) -> Option<Kind> {
    Some(Kind {
        scheme,
        storage,
        fixed: Some(k),
        breaking_steps: 0,
    })
}

/// The schedule's own counts for `steps` steps (the trip count given to it up front when
/// `known`), driven as generated code drives it, and its name.
fn schedule_counts(scheme: Scheme, steps: usize, known: bool) -> (&'static str, Stats) {
    let mut schedule = scheme
        .schedule(known.then_some(steps))
        .expect("valid scheme");
    for i in 0..steps {
        schedule.forward_step(i);
    }
    schedule.end_forward(steps);
    while schedule.next_reverse() != Action::Done {}
    (schedule.name(), schedule.stats())
}

/// Checks the reports of one `_grad` call: none for the reference, else one report with
/// the schedule's counts for `steps` steps of a loop whose trip count is `known` (or not).
pub(super) fn check_reports(
    what: &str,
    kind: Option<Kind>,
    k_arg: usize,
    steps: usize,
    known: bool,
    reports: &[Report],
) {
    let Some(kind) = kind else {
        assert!(
            reports.is_empty(),
            "{what}: reports without #[checkpoint]: {reports:?}"
        );
        return;
    };
    assert_eq!(
        reports.len(),
        1,
        "{what}: one report per _grad call: {reports:?}"
    );
    let report = &reports[0];
    let k = kind.fixed.unwrap_or(k_arg);
    let steps = steps + kind.breaking_steps;
    let scheme = match kind.scheme {
        "revolve" => Scheme::Revolve { snapshots: k },
        "periodic" => Scheme::Periodic { every: k },
        "online" => Scheme::Online { snapshots: k },
        other => panic!("unknown scheme {other}"),
    };
    let (name, stats) = schedule_counts(scheme, steps, known);
    // revolve on a loop of unknown trip count runs online
    assert_eq!(report.scheme, name, "{what}: scheme");
    assert_eq!(report.storage, kind.storage, "{what}: storage");
    assert_eq!(report.stats.steps, steps, "{what}: steps");
    assert_eq!(report.stats.taped_steps, steps, "{what}: taped steps");
    if kind.scheme == "revolve" && known {
        assert_eq!(
            report.stats.forward_steps,
            revolve_forward_steps(steps, k),
            "{what}: Revolve's forward steps"
        );
    }
    if kind.scheme != "periodic" {
        assert!(report.stats.max_live_snapshots <= k, "{what}: {report:?}");
        if k + 1 < steps {
            assert!(
                report.stats.recomputed_steps > 0,
                "{what}: nothing recomputed: {report:?}"
            );
        }
    }
    assert_eq!(report.stats, stats, "{what}: counts of the schedule");
    assert_eq!(
        report.peak_snapshot_bytes > 0,
        report.stats.stores > 0,
        "{what}: snapshot bytes held: {report:?}"
    );
}

/// Runs `grad(i)` (variant `i`'s `_grad`, flattened) under `record` for every variant,
/// checks its reports and compares value and gradient with variant 0 (the taped
/// reference) to rel 1e-12. Returns the reference's result.
pub(super) fn compare_variants(
    problem: &str,
    variants: &[(&'static str, Option<Kind>)],
    k_arg: usize,
    steps: usize,
    known: bool,
    grad: &dyn Fn(usize) -> (f64, Vec<f64>),
) -> (f64, Vec<f64>) {
    assert!(variants[0].1.is_none(), "variant 0 is the reference");
    let mut reference = None;
    for (i, &(name, kind)) in variants.iter().enumerate() {
        let what = format!("{problem}/{name} (k = {k_arg}, {steps} steps)");
        let ((value, g), reports) = record(|| grad(i));
        check_reports(&what, kind, k_arg, steps, known, &reports);
        match &reference {
            None => reference = Some((value, g)),
            Some((v0, g0)) => {
                let scale = g0.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
                assert_close(&format!("{what}: value"), value, *v0, 1e-12, 0.0);
                assert_all_close(&format!("{what}: gradient"), &g, g0, 1e-12, 1e-15 * scale);
            }
        }
    }
    reference.unwrap()
}

// ---------------------------------------------------------------------------------------
// Heat equation, FTCS, zero Dirichlet ends; J = Σ u² of the final field.

/// One variant of the heat problem (the functions `#[differentiate]` generated).
pub struct Heat {
    pub name: &'static str,
    pub kind: Option<Kind>,
    pub f: fn(&[f64], f64, usize, usize) -> f64,
    pub grad: fn(&[f64], f64, usize, usize) -> (f64, (Vec<f64>, f64)),
    pub fwd: fn(&[f64], &[f64], f64, f64, usize, usize) -> (f64, f64),
    pub rev: fn(&[f64], &mut [f64], f64, usize, usize, f64) -> (f64, f64),
}

macro_rules! heat_variants {
    ($($variant:ident($snaps:ident) $kind:expr, [$($ck:tt)*];)*) => {
        $(
            pub mod $variant {
                use super::differentiate;

                /// `steps` FTCS steps with mesh ratio `r`; returns Σ u² of the final field.
                #[differentiate(forward, reverse)]
                pub fn heat(u0: &[f64], r: f64, steps: usize, $snaps: usize) -> f64 {
                    let n = u0.len();
                    let mut u = u0.to_vec();
                    let mut next = vec![0.0; n];
                    $($ck)*
                    for _ in 0..steps {
                        next[0] = 0.0;
                        next[n - 1] = 0.0;
                        for i in 1..n - 1 {
                            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
                        }
                        std::mem::swap(&mut u, &mut next);
                    }
                    let mut j = 0.0;
                    for i in 0..n {
                        j += u[i] * u[i];
                    }
                    j
                }
            }
        )*
        pub const HEAT: &[Heat] = &[$(Heat {
            name: stringify!($variant),
            kind: $kind,
            f: $variant::heat,
            grad: $variant::heat_grad,
            fwd: $variant::heat_fwd,
            rev: $variant::heat_rev,
        }),*];
    };
}

heat_variants! {
    heat_taped(_snaps) None, [];
    heat_revolve_memory(snaps) ck("revolve", "memory"),
        [#[checkpoint(revolve(snapshots = snaps), storage = memory)]];
    heat_revolve_disk(snaps) ck("revolve", "disk"),
        [#[checkpoint(revolve(snapshots = snaps), storage = disk)]];
    heat_periodic_memory(snaps) ck("periodic", "memory"),
        [#[checkpoint(periodic(every = snaps), storage = memory)]];
    heat_periodic_disk(snaps) ck("periodic", "disk"),
        [#[checkpoint(periodic(every = snaps), storage = disk)]];
    heat_online_memory(snaps) ck("online", "memory"),
        [#[checkpoint(online(snapshots = snaps), storage = memory)]];
    heat_online_disk(snaps) ck("online", "disk"),
        [#[checkpoint(online(snapshots = snaps), storage = disk)]];
}

fn heat_names() -> Vec<(&'static str, Option<Kind>)> {
    HEAT.iter().map(|v| (v.name, v.kind)).collect()
}

/// `u0 = sin(πx)` on `n` nodes of [0, 1].
fn sine_profile(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (std::f64::consts::PI * i as f64 / (n - 1) as f64).sin())
        .collect()
}

pub fn heat_published_every_scheme() {
    // 51 nodes, r = 0.4, 500 steps, 5 snapshots (periodic: every 5 steps)
    let (u0, r, steps, snaps) = (sine_profile(51), 0.4, 500, 5);
    let (j, g) = compare_variants("heat", &heat_names(), snaps, steps, true, &|i| {
        let (j, (mut g, gr)) = (HEAT[i].grad)(&u0, r, steps, snaps);
        g.push(gr);
        (j, g)
    });
    assert_rel("heat J", &[j], &[5.150074797653916], 1e-10);
    assert_rel("heat ∂J/∂u0[25]", &[g[25]], &[0.41200598381231324], 1e-10);
    for v in HEAT {
        assert_rel(
            &format!("{} primal", v.name),
            &[(v.f)(&u0, r, steps, snaps)],
            &[j],
            1e-12,
        );
    }
}

pub fn heat_against_finite_differences() {
    let n = 12;
    let u0: Vec<f64> = (0..n)
        .map(|i| {
            let s = i as f64 / (n - 1) as f64;
            (std::f64::consts::PI * s).sin() + 0.3 * (5.0 * s).cos()
        })
        .collect();
    let r = 0.4;
    let point = cat(&[&u0, &[r]]);
    // few snapshots (recomputation), as many as the steps, more than the steps; the
    // trivial loops of 0, 1 and 2 steps
    for (steps, snaps) in [(30, 3), (30, 30), (30, 45), (0, 2), (1, 2), (2, 1)] {
        compare_variants("heat (small)", &heat_names(), snaps, steps, true, &|i| {
            let (j, (mut g, gr)) = (HEAT[i].grad)(&u0, r, steps, snaps);
            g.push(gr);
            (j, g)
        });
        if steps < 30 {
            continue;
        }
        for v in HEAT {
            let name = format!("heat/{} ({steps} steps, k = {snaps})", v.name);
            let f = |p: &[f64]| (v.f)(&p[..n], p[n], steps, snaps);
            check_grad(
                &name,
                &point,
                &f,
                &|p| {
                    let (j, (mut g, gr)) = (v.grad)(&p[..n], p[n], steps, snaps);
                    g.push(gr);
                    (j, g)
                },
                TOLS,
            );
            check_fwd_rev(&Case {
                name: &name,
                x: &point,
                primal: &|p| vec![f(p)],
                jvp: &|p, d| {
                    let (y, t) = (v.fwd)(&p[..n], &d[..n], p[n], d[n], steps, snaps);
                    (vec![y], vec![t])
                },
                vjp: &|p, w| {
                    let mut g = zeros(n);
                    let (y, gr) = (v.rev)(&p[..n], &mut g, p[n], steps, snaps, w[0]);
                    g.push(gr);
                    (vec![y], g)
                },
                tols: TOLS,
            });
        }
    }
}

// ---------------------------------------------------------------------------------------
// Lorenz-63 with classical RK4 (dt = 0.01); output z(T). Snapshot counts as literals.

/// Lorenz-63 right-hand side (σ = 10, ρ = 28, β = 8/3), written into `ds`.
#[differentiate(forward, reverse)]
pub fn lorenz_rhs(s: &[f64], ds: &mut [f64]) {
    let sigma = 10.0;
    let rho = 28.0;
    let beta = 8.0 / 3.0;
    ds[0] = sigma * (s[1] - s[0]);
    ds[1] = s[0] * (rho - s[2]) - s[1];
    ds[2] = s[0] * s[1] - beta * s[2];
}

/// One variant of the Lorenz problem.
pub struct Lorenz {
    pub name: &'static str,
    pub kind: Option<Kind>,
    pub f: fn(&[f64], usize) -> f64,
    pub grad: fn(&[f64], usize) -> (f64, Vec<f64>),
    pub fwd: fn(&[f64], &[f64], usize) -> (f64, f64),
    pub rev: fn(&[f64], &mut [f64], usize, f64) -> f64,
}

macro_rules! lorenz_variants {
    ($($variant:ident $kind:expr, [$($ck:tt)*];)*) => {
        $(
            pub mod $variant {
                use super::*;

                /// z after `steps` RK4 steps of size 0.01 from `x0`.
                #[differentiate(forward, reverse)]
                pub fn lorenz(x0: &[f64], steps: usize) -> f64 {
                    let dt = 0.01;
                    let mut y = x0.to_vec();
                    let mut stage = vec![0.0; 3];
                    let mut k1 = vec![0.0; 3];
                    let mut k2 = vec![0.0; 3];
                    let mut k3 = vec![0.0; 3];
                    let mut k4 = vec![0.0; 3];
                    $($ck)*
                    for _ in 0..steps {
                        lorenz_rhs(&y, &mut k1);
                        for i in 0..3 {
                            stage[i] = y[i] + 0.5 * dt * k1[i];
                        }
                        lorenz_rhs(&stage, &mut k2);
                        for i in 0..3 {
                            stage[i] = y[i] + 0.5 * dt * k2[i];
                        }
                        lorenz_rhs(&stage, &mut k3);
                        for i in 0..3 {
                            stage[i] = y[i] + dt * k3[i];
                        }
                        lorenz_rhs(&stage, &mut k4);
                        for i in 0..3 {
                            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
                        }
                    }
                    y[2]
                }
            }
        )*
        pub const LORENZ: &[Lorenz] = &[$(Lorenz {
            name: stringify!($variant),
            kind: $kind,
            f: $variant::lorenz,
            grad: $variant::lorenz_grad,
            fwd: $variant::lorenz_fwd,
            rev: $variant::lorenz_rev,
        }),*];
    };
}

lorenz_variants! {
    lorenz_taped None, [];
    lorenz_revolve_memory ck_fixed("revolve", "memory", 4),
        [#[checkpoint(revolve(snapshots = 4))]];
    lorenz_revolve_disk ck_fixed("revolve", "disk", 4),
        [#[checkpoint(revolve(snapshots = 4), storage = disk)]];
    lorenz_periodic_memory ck_fixed("periodic", "memory", 50),
        [#[checkpoint(periodic(every = 50))]];
    lorenz_periodic_disk ck_fixed("periodic", "disk", 7),
        [#[checkpoint(periodic(every = 7), storage = disk)]];
    lorenz_online_memory ck_fixed("online", "memory", 4),
        [#[checkpoint(online(snapshots = 4))]];
    lorenz_online_disk ck_fixed("online", "disk", 9),
        [#[checkpoint(online(snapshots = 9), storage = disk)]];
}

fn lorenz_names() -> Vec<(&'static str, Option<Kind>)> {
    LORENZ.iter().map(|v| (v.name, v.kind)).collect()
}

pub fn lorenz_published_every_scheme() {
    // x0 = (1, 1, 1), 1000 steps (T = 10)
    let x0 = [1.0, 1.0, 1.0];
    let steps = 1000;
    let (z, g) = compare_variants("lorenz", &lorenz_names(), 0, steps, true, &|i| {
        (LORENZ[i].grad)(&x0, steps)
    });
    let want = [-1.6567135357971066, -1.5070734183049141, 4.984752068526361];
    assert_rel("∂z(T)/∂x0 after 1000 steps", &g, &want, 1e-10);
    for v in LORENZ {
        assert_rel(
            &format!("{} primal", v.name),
            &[(v.f)(&x0, steps)],
            &[z],
            1e-12,
        );
    }
}

pub fn lorenz_against_finite_differences() {
    let x0 = [1.0, 1.0, 1.0];
    // 100 steps: 4 snapshots recompute; 9 and 7 give several segments; 1 step is trivial
    for steps in [100, 1] {
        compare_variants("lorenz (short)", &lorenz_names(), 0, steps, true, &|i| {
            (LORENZ[i].grad)(&x0, steps)
        });
    }
    let steps = 100;
    for v in LORENZ {
        let name = format!("lorenz/{} ({steps} steps)", v.name);
        check_grad(
            &name,
            &x0,
            &|x| (v.f)(x, steps),
            &|x| (v.grad)(x, steps),
            TOLS,
        );
        check_fwd_rev(&Case {
            name: &name,
            x: &x0,
            primal: &|x| vec![(v.f)(x, steps)],
            jvp: &|x, d| {
                let (y, t) = (v.fwd)(x, d, steps);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut g = zeros(3);
                let y = (v.rev)(x, &mut g, steps, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

// ---------------------------------------------------------------------------------------
// Viscous Burgers, periodic, explicit Euler: first-order upwind of the non-conservative
// advection u·∂u/∂x (backward difference where u ≥ 0, forward where u < 0) and central
// diffusion ν ∂²u/∂x²; dt = 1e-3, dx = 1/N; J = ½ Σ u² / N.

/// One variant of the Burgers problem.
pub struct Burgers {
    pub name: &'static str,
    pub kind: Option<Kind>,
    pub f: fn(&[f64], f64, usize, usize) -> f64,
    pub grad: fn(&[f64], f64, usize, usize) -> (f64, (Vec<f64>, f64)),
    pub fwd: fn(&[f64], &[f64], f64, f64, usize, usize) -> (f64, f64),
    pub rev: fn(&[f64], &mut [f64], f64, usize, usize, f64) -> (f64, f64),
}

macro_rules! burgers_variants {
    ($($variant:ident($snaps:ident) $kind:expr, [$($ck:tt)*];)*) => {
        $(
            pub mod $variant {
                use super::differentiate;

                /// `steps` explicit steps of viscous Burgers with viscosity `nu`.
                #[differentiate(forward, reverse)]
                pub fn burgers(u0: &[f64], nu: f64, steps: usize, $snaps: usize) -> f64 {
                    let n = u0.len();
                    let dx = 1.0 / n as f64;
                    let dt = 1e-3;
                    let mut u = u0.to_vec();
                    let mut next = vec![0.0; n];
                    $($ck)*
                    for _ in 0..steps {
                        for i in 0..n {
                            let l = u[(i + n - 1) % n];
                            let c = u[i];
                            let r = u[(i + 1) % n];
                            let adv = if c >= 0.0 {
                                c * (c - l) / dx
                            } else {
                                c * (r - c) / dx
                            };
                            next[i] = c + dt * (nu * (l - 2.0 * c + r) / (dx * dx) - adv);
                        }
                        std::mem::swap(&mut u, &mut next);
                    }
                    let mut j = 0.0;
                    for i in 0..n {
                        j += u[i] * u[i];
                    }
                    0.5 * j / n as f64
                }
            }
        )*
        pub const BURGERS: &[Burgers] = &[$(Burgers {
            name: stringify!($variant),
            kind: $kind,
            f: $variant::burgers,
            grad: $variant::burgers_grad,
            fwd: $variant::burgers_fwd,
            rev: $variant::burgers_rev,
        }),*];
    };
}

burgers_variants! {
    burgers_taped(_snaps) None, [];
    burgers_revolve_memory(snaps) ck("revolve", "memory"),
        [#[checkpoint(revolve(snapshots = snaps))]];
    burgers_revolve_disk(snaps) ck("revolve", "disk"),
        [#[checkpoint(revolve(snapshots = snaps), storage = disk)]];
    burgers_periodic_memory(snaps) ck("periodic", "memory"),
        [#[checkpoint(periodic(every = snaps))]];
    burgers_periodic_disk(snaps) ck("periodic", "disk"),
        [#[checkpoint(periodic(every = snaps), storage = disk)]];
    burgers_online_memory(snaps) ck("online", "memory"),
        [#[checkpoint(online(snapshots = snaps))]];
    burgers_online_disk(snaps) ck("online", "disk"),
        [#[checkpoint(online(snapshots = snaps), storage = disk)]];
}

fn burgers_names() -> Vec<(&'static str, Option<Kind>)> {
    BURGERS.iter().map(|v| (v.name, v.kind)).collect()
}

/// `u0 = sin(2πx) + 0.5` at `x = i/N`.
fn burgers_profile(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (2.0 * std::f64::consts::PI * i as f64 / n as f64).sin() + 0.5)
        .collect()
}

pub fn burgers_published_every_scheme() {
    // 64 cells, ν = 0.01, 200 steps, 6 snapshots (periodic: every 6 steps)
    let (u0, nu, steps, snaps) = (burgers_profile(64), 0.01, 200, 6);
    let (j, _) = compare_variants("burgers", &burgers_names(), snaps, steps, true, &|i| {
        let (j, (mut g, gnu)) = (BURGERS[i].grad)(&u0, nu, steps, snaps);
        g.push(gnu);
        (j, g)
    });
    assert_rel("burgers J", &[j], &[0.290632302892329], 1e-10);
    for v in BURGERS {
        assert_rel(
            &format!("{} primal", v.name),
            &[(v.f)(&u0, nu, steps, snaps)],
            &[j],
            1e-12,
        );
    }
}

pub fn burgers_against_finite_differences() {
    // 16 cells, 25 steps: the upwind switch is a kink at u = 0, and no cell comes within
    // the finite-difference steps of it here
    let n = 16;
    let (u0, nu) = (burgers_profile(n), 0.01);
    let point = cat(&[&u0, &[nu]]);
    for (steps, snaps) in [(25, 4), (25, 25)] {
        compare_variants(
            "burgers (small)",
            &burgers_names(),
            snaps,
            steps,
            true,
            &|i| {
                let (j, (mut g, gnu)) = (BURGERS[i].grad)(&u0, nu, steps, snaps);
                g.push(gnu);
                (j, g)
            },
        );
    }
    let (steps, snaps) = (25, 4);
    for v in BURGERS {
        let name = format!("burgers/{} ({steps} steps, k = {snaps})", v.name);
        let f = |p: &[f64]| (v.f)(&p[..n], p[n], steps, snaps);
        check_grad(
            &name,
            &point,
            &f,
            &|p| {
                let (j, (mut g, gnu)) = (v.grad)(&p[..n], p[n], steps, snaps);
                g.push(gnu);
                (j, g)
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: &name,
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, d| {
                let (y, t) = (v.fwd)(&p[..n], &d[..n], p[n], d[n], steps, snaps);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(n);
                let (y, gnu) = (v.rev)(&p[..n], &mut g, p[n], steps, snaps, w[0]);
                g.push(gnu);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

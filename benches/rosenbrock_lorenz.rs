//! phidiff's first benchmark: the generated `_fwd`/`_rev` against the primal, one-direction
//! central finite differences and a hand-written adjoint, for
//! - extended Rosenbrock, n = 10⁶ (a reduction over a read-only slice),
//! - Lorenz-63 with RK4, 10 000 steps of scalar locals (a long loop-carried recurrence),
//! - the explicit heat equation, n = 1000, 1000 steps (two `vec!` buffers and
//!   `std::mem::swap`).
//!
//! Every group first checks that the generated gradient equals the hand-written adjoint to
//! 1e-10 relative (and `_fwd` to ∇f·v), so the timings compare the same computation.
//!
//! Shadow zeroing: `_rev` and the hand adjoint *add* into a preallocated shadow. The timed
//! closures do not re-zero it (adding into a non-zero shadow costs the same); zeroing is
//! timed on its own as `zero shadow`. `_grad` includes allocating its zeroed buffers.
//! (Lorenz's shadow has 3 entries and is re-zeroed inside the timed closure.)
//!
//! Rosenbrock has two hand-written adjoints: the fused loop with the g[i+1] contribution
//! carried in a register (the baseline of the ratios) and the naive fused loop
//! `g[i] += …; g[i+1] += …`, which is several times slower because every g[i+1] it
//! stores is loaded again by the next iteration.
//!
//! Finite differences are timed for ONE directional derivative (2 primal evaluations plus
//! forming x ± h·v); a full FD gradient would cost 2n primal evaluations (2·10⁶ for
//! Rosenbrock, 6 for Lorenz, 2002 for heat).
//!
//! The ratio table (interleaved repetitions in one process, medians) is printed by
//! `cargo run --release --example bench_report`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::time::Duration;

#[path = "support/functions.rs"]
mod functions;
use functions::*;

fn rosenbrock_group(c: &mut Criterion) {
    let x = rosen_input();
    let n = x.len();
    verify_rosenbrock(&x);
    let v = direction(n);
    let mut shadow = vec![0.0; n];
    let mut xp = vec![0.0; n];
    let mut xm = vec![0.0; n];

    let mut g = c.benchmark_group("rosenbrock_n1e6");
    g.sample_size(20);
    g.bench_function("primal", |b| b.iter(|| rosenbrock(black_box(&x))));
    g.bench_function("fwd (1 direction)", |b| {
        b.iter(|| rosenbrock_fwd(black_box(&x), black_box(&v)))
    });
    g.bench_function("rev (into shadow, no re-zeroing)", |b| {
        b.iter(|| rosenbrock_rev(black_box(&x), black_box(&mut shadow), 1.0))
    });
    g.bench_function("zero shadow (fill 0)", |b| {
        b.iter(|| black_box(&mut shadow).fill(0.0))
    });
    g.bench_function("grad (allocates)", |b| {
        b.iter(|| rosenbrock_grad(black_box(&x)))
    });
    g.bench_function("hand adjoint (into shadow)", |b| {
        b.iter(|| rosenbrock_hand(black_box(&x), black_box(&mut shadow), 1.0))
    });
    g.bench_function("hand adjoint, naive g[i+1] += (into shadow)", |b| {
        b.iter(|| rosenbrock_hand_naive(black_box(&x), black_box(&mut shadow), 1.0))
    });
    g.bench_function("FD (1 direction, 2 primals)", |b| {
        b.iter(|| rosenbrock_fd(black_box(&x), black_box(&v), &mut xp, &mut xm))
    });
    g.finish();
}

fn lorenz_group(c: &mut Criterion) {
    let x0 = lorenz_input();
    let steps = LORENZ_STEPS;
    verify_lorenz(&x0, steps);
    let v = direction(3);
    let mut shadow = vec![0.0; 3];

    let mut g = c.benchmark_group("lorenz_rk4_10k_steps");
    g.sample_size(30);
    g.bench_function("primal", |b| {
        b.iter(|| lorenz(black_box(&x0), black_box(steps)))
    });
    g.bench_function("fwd (1 direction)", |b| {
        b.iter(|| lorenz_fwd(black_box(&x0), black_box(&v), black_box(steps)))
    });
    g.bench_function("rev", |b| {
        b.iter(|| {
            shadow.fill(0.0);
            lorenz_rev(
                black_box(&x0),
                black_box(&mut shadow),
                black_box(steps),
                1.0,
            )
        })
    });
    g.bench_function("hand adjoint", |b| {
        b.iter(|| {
            shadow.fill(0.0);
            lorenz_hand(
                black_box(&x0),
                black_box(&mut shadow),
                black_box(steps),
                1.0,
            )
        })
    });
    g.bench_function("FD (1 direction, 2 primals)", |b| {
        b.iter(|| lorenz_fd(black_box(&x0), black_box(&v), black_box(steps)))
    });
    g.finish();
}

fn heat_group(c: &mut Criterion) {
    let u0 = heat_input();
    let n = u0.len();
    let (r, steps) = (HEAT_R, HEAT_STEPS);
    verify_heat(&u0, r, steps);
    let v = direction(n);
    let mut shadow = vec![0.0; n];
    let mut up = vec![0.0; n];
    let mut um = vec![0.0; n];

    let mut g = c.benchmark_group("heat_n1000_1000_steps");
    g.sample_size(20);
    g.bench_function("primal", |b| {
        b.iter(|| heat(black_box(&u0), black_box(r), black_box(steps)))
    });
    g.bench_function("fwd (1 direction)", |b| {
        b.iter(|| {
            heat_fwd(
                black_box(&u0),
                black_box(&v),
                black_box(r),
                0.3,
                black_box(steps),
            )
        })
    });
    g.bench_function("rev (into shadow, no re-zeroing)", |b| {
        b.iter(|| {
            heat_rev(
                black_box(&u0),
                black_box(&mut shadow),
                black_box(r),
                black_box(steps),
                1.0,
            )
        })
    });
    g.bench_function("hand adjoint (into shadow)", |b| {
        b.iter(|| {
            heat_hand(
                black_box(&u0),
                black_box(&mut shadow),
                black_box(r),
                black_box(steps),
                1.0,
            )
        })
    });
    g.bench_function("FD (1 direction, 2 primals)", |b| {
        b.iter(|| {
            heat_fd(
                black_box(&u0),
                black_box(&v),
                black_box(r),
                0.3,
                black_box(steps),
                &mut up,
                &mut um,
            )
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = rosenbrock_group, lorenz_group, heat_group
}
criterion_main!(benches);

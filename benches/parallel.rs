//! Parallel adjoint benchmark (issue 5): the programs of `support/parallel_programs.rs`
//! (a 1-D and a 2-D heat step, a gather at random indices, a Gaussian mixture over points),
//! each as the primal and as the gradient in ParDiff's three variants: serial loops, every
//! shared adjoint addition atomic, and summation-aware (the default), on rayon's default
//! pool. `cargo run --release --example parallel_report` prints the same programs on 1 and
//! 2 threads with the speedups side by side.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;

#[path = "support/parallel_programs.rs"]
mod programs;
use programs::*;

fn parallel(c: &mut Criterion) {
    let n = 1 << 18;
    let u = field(n);
    let mut g = c.benchmark_group(format!("parallel/heat 1-D {n} cells"));
    g.sample_size(10);
    let mut out = vec![0.0; n];
    g.bench_function("primal", |b| {
        b.iter(|| heat1d_par(black_box(&u), &mut out, 0.2))
    });
    type Rev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, f64) -> (f64, f64);
    for (name, f) in [
        ("grad serial", heat1d_serial_rev as Rev),
        ("grad atomics everywhere", heat1d_atomic_rev),
        ("grad summation-aware", heat1d_par_rev),
    ] {
        let (mut du, mut out, mut dout) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        g.bench_function(name, |b| {
            b.iter(|| f(black_box(&u), &mut du, &mut out, &mut dout, 0.2, 1.0))
        });
    }
    g.finish();

    let (m, w) = (512, 512);
    let u = field(m * w);
    let mut g = c.benchmark_group(format!("parallel/heat 2-D {m}x{w}"));
    g.sample_size(10);
    let mut out = vec![0.0; m * w];
    g.bench_function("primal", |b| {
        b.iter(|| heat2d_par(black_box(&u), &mut out, 0.2, w))
    });
    type Rev2 = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64);
    for (name, f) in [
        ("grad serial", heat2d_serial_rev as Rev2),
        ("grad atomics everywhere", heat2d_atomic_rev),
        ("grad summation-aware", heat2d_par_rev),
    ] {
        let (mut du, mut out, mut dout) = (vec![0.0; m * w], vec![0.0; m * w], vec![0.0; m * w]);
        g.bench_function(name, |b| {
            b.iter(|| f(black_box(&u), &mut du, &mut out, &mut dout, 0.2, w, 1.0))
        });
    }
    g.finish();

    let n = 1 << 18;
    let (x, idx) = (field(n), indices(n, n));
    let mut g = c.benchmark_group(format!("parallel/gather {n}"));
    g.sample_size(10);
    g.bench_function("primal", |b| b.iter(|| gather_par(black_box(&x), &idx)));
    type RevG = fn(&[f64], &mut [f64], &[usize], f64) -> f64;
    for (name, f) in [
        ("grad serial", gather_serial_rev as RevG),
        ("grad atomics everywhere", gather_atomic_rev),
        ("grad summation-aware", gather_par_rev),
    ] {
        let mut dx = vec![0.0; n];
        g.bench_function(name, |b| b.iter(|| f(black_box(&x), &mut dx, &idx, 1.0)));
    }
    g.finish();

    let (np, k, d) = (20_000, 8, 4);
    let xp: Vec<f64> = (0..np * d)
        .map(|q| (q as f64 * 0.618).sin() * 2.0)
        .collect();
    let means: Vec<f64> = (0..k * d).map(|q| (q as f64 * 1.3).cos()).collect();
    let wts: Vec<f64> = (0..k).map(|c| 0.1 * c as f64 - 0.2).collect();
    let mut g = c.benchmark_group(format!("parallel/gmm n={np} k={k} d={d}"));
    g.sample_size(10);
    g.bench_function("primal", |b| {
        b.iter(|| gmm_par(black_box(&xp), &means, &wts, d))
    });
    type RevM = fn(&[f64], &[f64], &mut [f64], &[f64], &mut [f64], usize, f64) -> f64;
    for (name, f) in [
        ("grad serial", gmm_serial_rev as RevM),
        ("grad atomics everywhere", gmm_atomic_rev),
        ("grad summation-aware", gmm_par_rev),
    ] {
        let (mut gm, mut gw) = (vec![0.0; k * d], vec![0.0; k]);
        g.bench_function(name, |b| {
            b.iter(|| f(black_box(&xp), &means, &mut gm, &wts, &mut gw, d, 1.0))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = parallel
}
criterion_main!(benches);

//! Coarsening benchmark (issue 3): each program of `support/coarsening.rs` compiled by
//! default (coarsened) and with `coarsen = off`, timing the primal and one `_rev` call
//! (seed 1, into preallocated shadows that are not re-zeroed) in each mode, for
//! - BGDHyperOpt (d rmse / d learning rate through a `loop` of batch gradient descent),
//!   M = 200, 1000, 2000 records;
//! - the HMC potential of Bayesian logistic regression, n × d = 1000 × 10, 5000 × 50;
//! - a Hookean spring by velocity Verlet, 10³ and 10⁵ steps;
//! - a brachistochrone travel time, 10³ and 10⁵ nodes;
//! - extended Rosenbrock, n = 10³, 10⁵;
//! - ADBench's GMM objective, (d, K) = (2, 5), (10, 25), n = 1000.
//!
//! Every instance first checks that the coarse and fine gradients agree to 1e-10 relative
//! and the values equal the primal, so both timings are of correct code.
//!
//! The ratio table (speedup off/coarse, gradient/primal, tape bytes, interleaved
//! repetitions in one process) is printed by
//! `cargo run --release --example coarsen_report`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

#[path = "support/coarsening.rs"]
mod programs;
use programs::*;

fn coarsening(c: &mut Criterion) {
    for mut instance in instances() {
        verify(&mut instance);
        let Instance {
            program,
            size,
            mut primal,
            rev: [mut coarse, mut fine],
            ..
        } = instance;
        let mut g = c.benchmark_group(format!("coarsening/{program} {size}"));
        g.sample_size(20);
        g.bench_function("primal", |b| b.iter(&mut primal));
        g.bench_function("rev coarse", |b| b.iter(&mut coarse));
        g.bench_function("rev coarsen=off", |b| b.iter(&mut fine));
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = coarsening
}
criterion_main!(benches);

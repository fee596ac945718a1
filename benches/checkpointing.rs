//! Checkpointing benchmark (issue 4): the explicit heat equation of
//! `support/heat_checkpoint.rs` and the viscous Burgers equation of
//! `support/burgers_checkpoint.rs`, 200 cells, 10 000 steps: the primal, the
//! un-checkpointed (full-tape) gradient, and the gradient with its loop reversed by Revolve
//! at a few snapshot counts, with snapshots in memory and on disk. Each "gradient" is one `_grad`
//! call. Disk snapshots go to files under the temporary directory (`TMPDIR`); where
//! creating and truncating small files is slow, the disk variants dominate the run.
//!
//! Before timing, every checkpointed gradient is checked against the full-tape one (1e-12
//! relative). The ratio table over more snapshot counts, with the theoretical curve and a
//! plot, is printed by `cargo run --release --example checkpoint_report`.

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use std::hint::black_box;
use std::time::Duration;

#[path = "support/burgers_checkpoint.rs"]
mod burgers;
#[path = "support/heat_checkpoint.rs"]
mod heat;
use burgers::*;
use heat::*;

const STEPS: usize = 10_000;
const CELLS: usize = 200;
const SNAPSHOTS: [usize; 3] = [10, 100, 1000];

fn checkpointing(c: &mut Criterion) {
    let u0 = heat_input(CELLS);
    let (_, (g_full, r_full)) = heat_full_grad(&u0, R, STEPS);
    for s in SNAPSHOTS {
        for (storage, (_, (g, r_bar))) in [
            ("memory", heat_mem_grad(&u0, R, STEPS, s)),
            ("disk", heat_disk_grad(&u0, R, STEPS, s)),
        ] {
            let diff = max_rel_diff(&g, &g_full).max((r_bar - r_full).abs() / r_full.abs());
            assert!(
                diff <= 1e-12,
                "{storage} s={s}: gradient differs by {diff:e}"
            );
        }
    }

    let mut g = c.benchmark_group(format!("checkpointing/heat {CELLS} cells {STEPS} steps"));
    // Flat sampling: a disk-snapshot gradient takes up to seconds on a slow file system.
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    g.bench_function("primal", |b| b.iter(|| heat_full(black_box(&u0), R, STEPS)));
    g.bench_function("grad full tape", |b| {
        b.iter(|| heat_full_grad(black_box(&u0), R, STEPS))
    });
    for s in SNAPSHOTS {
        g.bench_function(format!("grad revolve memory s={s}"), |b| {
            b.iter(|| heat_mem_grad(black_box(&u0), R, STEPS, s))
        });
        g.bench_function(format!("grad revolve disk s={s}"), |b| {
            b.iter(|| heat_disk_grad(black_box(&u0), R, STEPS, s))
        });
    }
    g.finish();

    let u0 = burgers_input(CELLS);
    let (_, (g_full, nu_full)) = burgers_full_grad(&u0, NU, STEPS);
    for s in SNAPSHOTS {
        for (storage, (_, (g, nu_bar))) in [
            ("memory", burgers_mem_grad(&u0, NU, STEPS, s)),
            ("disk", burgers_disk_grad(&u0, NU, STEPS, s)),
        ] {
            let diff = max_rel_diff(&g, &g_full).max((nu_bar - nu_full).abs() / nu_full.abs());
            assert!(
                diff <= 1e-12,
                "burgers {storage} s={s}: gradient differs by {diff:e}"
            );
        }
    }
    let mut g = c.benchmark_group(format!("checkpointing/burgers {CELLS} cells {STEPS} steps"));
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    g.bench_function("primal", |b| {
        b.iter(|| burgers_full(black_box(&u0), NU, STEPS))
    });
    g.bench_function("grad full tape", |b| {
        b.iter(|| burgers_full_grad(black_box(&u0), NU, STEPS))
    });
    for s in SNAPSHOTS {
        g.bench_function(format!("grad revolve memory s={s}"), |b| {
            b.iter(|| burgers_mem_grad(black_box(&u0), NU, STEPS, s))
        });
        g.bench_function(format!("grad revolve disk s={s}"), |b| {
            b.iter(|| burgers_disk_grad(black_box(&u0), NU, STEPS, s))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = checkpointing
}
criterion_main!(benches);

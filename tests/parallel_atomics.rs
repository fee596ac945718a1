//! Atomic additions in parallel adjoints, counted (`--features count-atomics`; without the
//! feature the file is empty). Owned elements and rows, stencil gathers (1-D and over
//! rows) and private scatters add without atomics; only a scatter into a target too large
//! to privatize (`phidiff::par::private_fits`: on 8 threads, 7 copies × 1.3 M floats >
//! 64 MiB) adds atomically, once per addition executed.
#![cfg(feature = "count-atomics")]

use phidiff::differentiate;
use phidiff::par::{atomic_ops, reset_atomic_ops};
use rayon::prelude::*;

#[allow(dead_code)] // only its `_rev` is called
#[differentiate(reverse)]
fn stencil(u: &[f64], out: &mut [f64], r: f64) -> f64 {
    let n = u.len();
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        if i > 0 && i < n - 1 {
            *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[i];
        } else {
            *o = u[i];
        }
    });
    out.par_iter().map(|v| v * v).sum()
}

#[allow(dead_code)]
#[differentiate(reverse)]
fn stencil_rows(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
    let m = u.len() / n;
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for j in 0..row.len() {
            if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                let c = u[i * n + j];
                row[j] = c + r
                    * (u[(i - 1) * n + j]
                        + u[(i + 1) * n + j]
                        + u[i * n + j - 1]
                        + u[i * n + j + 1]
                        - 4.0 * c)
                    * c;
            } else {
                row[j] = u[i * n + j];
            }
        }
    });
    out.par_iter().map(|v| v * v).sum()
}

#[allow(dead_code)]
#[differentiate(reverse, wrt(x))]
fn gather(x: &[f64], idx: &[usize], n: usize) -> f64 {
    (0..n)
        .into_par_iter()
        .map(|i| x[idx[i]] * x[idx[i]])
        .sum::<f64>()
}

fn indices(n: usize, m: usize) -> Vec<usize> {
    (0..n).map(|i| (i * 7919 + 13) % m).collect()
}

#[test]
fn atomics_only_where_the_target_is_too_large_to_privatize() {
    // Owned stores, the ±1 gather and the sum: no atomics.
    let n = 5000;
    let u: Vec<f64> = (0..n).map(|i| (i as f64 * 0.01).sin()).collect();
    let (mut du, mut out, mut dout) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    reset_atomic_ops();
    stencil_rev(&u, &mut du, &mut out, &mut dout, 0.2, 1.0);
    assert_eq!(atomic_ops(), 0, "stencil: atomic adds");
    assert!(du.iter().any(|g| *g != 0.0));

    // The 2-D stencil over rows: own rows and row gathers, no atomics.
    let (m, n) = (300, 40);
    let u: Vec<f64> = (0..m * n).map(|k| (k as f64 * 0.01).sin()).collect();
    let (mut du, mut out, mut dout) = (vec![0.0; m * n], vec![0.0; m * n], vec![0.0; m * n]);
    reset_atomic_ops();
    stencil_rows_rev(&u, &mut du, &mut out, &mut dout, 0.2, n, 1.0);
    assert_eq!(atomic_ops(), 0, "2-D stencil: atomic adds");
    assert!(du.iter().any(|g| *g != 0.0));

    // A scatter into a small target: private copies, no atomics (integer values: every
    // order of addition gives the same sums).
    let x: Vec<f64> = (0..100).map(|i| i as f64).collect();
    let idx = indices(3000, x.len());
    let mut dx = vec![0.0; x.len()];
    reset_atomic_ops();
    gather_rev(&x, &mut dx, &idx, idx.len(), 1.0);
    assert_eq!(atomic_ops(), 0, "small scatter: atomic adds");
    let mut want = vec![0.0; x.len()];
    for &j in &idx {
        want[j] += 2.0 * x[j];
    }
    assert_eq!(dx, want, "small scatter: gradient");

    // A scatter into 1.3 M elements on 8 threads: atomic adds.
    let m = 1_300_000;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(8)
        .build()
        .unwrap();
    assert!(pool.install(|| !phidiff::par::private_fits(m, 8)));
    let x: Vec<f64> = (0..m).map(|i| (i % 1000) as f64).collect();
    let idx = indices(3000, m);
    let mut dx = vec![0.0; m];
    reset_atomic_ops();
    pool.install(|| gather_rev(&x, &mut dx, &idx, idx.len(), 1.0));
    // `x[idx[i]] * x[idx[i]]`: two reads, so two adds into x̄ per iteration.
    assert_eq!(atomic_ops(), 2 * idx.len(), "large scatter: atomic adds");
    for &j in &idx[..20] {
        let count = idx.iter().filter(|k| **k == j).count() as f64;
        assert_eq!(dx[j], count * 2.0 * x[j], "large scatter: x̄[{j}]");
    }
}

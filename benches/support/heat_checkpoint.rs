//! The checkpointed heat equation of issue 4, shared by `benches/checkpointing.rs`
//! (criterion), `examples/checkpoint_report.rs` (overhead table and plot) and
//! `examples/checkpoint_memory.rs` (10⁶ steps in bounded memory).
//!
//! One explicit (FTCS) heat step with zero Dirichlet ends and mesh ratio `r` (stable for
//! `r ≤ 1/2`), repeated `steps` times; the result is `J = Σᵢ uᵢ²` of the final field. The
//! same function is written three times, because the checkpointing scheme and its storage
//! are fixed per function: [`heat_mem`] (Revolve, snapshots in memory), [`heat_disk`]
//! (Revolve, snapshots in files) and [`heat_full`] (no checkpointing: the full tape, the
//! reference).
//!
//! `u0 ↦ u_steps` is linear, so `J` is a quadratic form in `u0` and Euler's theorem for
//! homogeneous functions gives `Σᵢ u0ᵢ · ∂J/∂u0ᵢ = 2J` exactly: a check of the whole
//! `u0` gradient that costs nothing (see [`euler_residual`]).
#![allow(dead_code)]
// The stencil indexes its arrays the way the numerics are written; an iterator rewrite
// would hide the loop being differentiated.
#![allow(clippy::needless_range_loop)]

use phidiff::differentiate;

/// One heat function per checkpointing attribute (the scheme and storage are fixed per
/// function); the extra parameters are those the attribute reads.
macro_rules! heat {
    ($(#[doc = $doc:literal])* $name:ident($($extra:ident: $ty:ty),*) $(#[$ck:meta])?) => {
        $(#[doc = $doc])*
        #[differentiate(reverse)]
        pub fn $name(u0: &[f64], r: f64, steps: usize $(, $extra: $ty)*) -> f64 {
            let n = u0.len();
            let mut u = u0.to_vec();
            let mut next = vec![0.0; n];
            $(#[$ck])?
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
    };
}

heat!(
    /// The heat problem, its loop reversed by Revolve with `snaps` snapshots held in memory.
    heat_mem(snaps: usize) #[checkpoint(revolve(snapshots = snaps))]
);
heat!(
    /// The heat problem, its loop reversed by Revolve with `snaps` snapshots stored in files.
    heat_disk(snaps: usize) #[checkpoint(revolve(snapshots = snaps), storage = disk)]
);
heat!(
    /// The heat problem without checkpointing: every step is taped (the reference).
    heat_full()
);

/// Mesh ratio used by the examples and the benchmark (FTCS is stable for `r ≤ 0.5`).
pub const R: f64 = 0.4;

/// A smooth deterministic initial field on `cells ≥ 3` points, zero at both ends: a bump
/// with a few higher modes, so the reversal has something to carry.
pub fn heat_input(cells: usize) -> Vec<f64> {
    assert!(cells >= 3, "the stencil needs at least 3 cells");
    let pi = std::f64::consts::PI;
    (0..cells)
        .map(|i| {
            let x = i as f64 / (cells - 1) as f64;
            (pi * x).sin() + 0.3 * (3.0 * pi * x).sin() + 0.1 * (7.0 * pi * x).sin()
        })
        .collect()
}

/// `|Σᵢ u0ᵢ gᵢ − 2J| / (2|J|)`: zero up to rounding when `g = ∂J/∂u0` (Euler's theorem
/// for the quadratic form `J`).
pub fn euler_residual(u0: &[f64], g: &[f64], j: f64) -> f64 {
    let dot: f64 = u0.iter().zip(g).map(|(a, b)| a * b).sum();
    (dot - 2.0 * j).abs() / (2.0 * j.abs())
}

/// Largest relative difference between two gradients, against the larger of their norms.
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = a
        .iter()
        .chain(b)
        .fold(f64::MIN_POSITIVE, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
        / scale
}

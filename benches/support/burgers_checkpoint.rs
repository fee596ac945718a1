//! The checkpointed viscous Burgers equation shared by `benches/checkpointing.rs` and
//! `examples/checkpoint_report.rs`: a nonlinear step (upwinded by the sign of `uᵢ`, so the
//! adjoint needs the state), where the heat equation of `heat_checkpoint.rs` is linear.
//!
//! Periodic 1-D `∂u/∂t + u ∂u/∂x = ν ∂²u/∂x²` on `n` cells of `[0, 1)`, explicit Euler with
//! `dt = 1e-4` (stable and CFL-bounded for `n ≤ 1000`, `ν ≤ 0.01`, `|u| ≤ 2`), repeated
//! `steps` times; the result is `J = ½ Σᵢ uᵢ² / n`. As with the heat functions, the same
//! body is written three times because the checkpointing attribute is fixed per function:
//! [`burgers_mem`], [`burgers_disk`] and [`burgers_full`] (no checkpointing).
#![allow(dead_code)]
#![allow(clippy::needless_range_loop)]

use phidiff::differentiate;

macro_rules! burgers {
    ($(#[doc = $doc:literal])* $name:ident($($extra:ident: $ty:ty),*) $(#[$ck:meta])?) => {
        $(#[doc = $doc])*
        #[differentiate(reverse)]
        pub fn $name(u0: &[f64], nu: f64, steps: usize $(, $extra: $ty)*) -> f64 {
            let n = u0.len();
            let dx = 1.0 / n as f64;
            let dt = 1e-4;
            let mut u = u0.to_vec();
            let mut next = vec![0.0; n];
            $(#[$ck])?
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
    };
}

burgers!(
    /// Burgers, its loop reversed by Revolve with `snaps` snapshots held in memory.
    burgers_mem(snaps: usize) #[checkpoint(revolve(snapshots = snaps))]
);
burgers!(
    /// Burgers, its loop reversed by Revolve with `snaps` snapshots stored in files.
    burgers_disk(snaps: usize) #[checkpoint(revolve(snapshots = snaps), storage = disk)]
);
burgers!(
    /// Burgers without checkpointing: every step is taped (the reference).
    burgers_full()
);

/// Viscosity used by the examples and the benchmark.
pub const NU: f64 = 0.01;

/// `u0 = sin 2πx + 0.5` at `x = i/n` (both signs of `u`, so both upwind branches run).
pub fn burgers_input(cells: usize) -> Vec<f64> {
    (0..cells)
        .map(|i| (2.0 * std::f64::consts::PI * i as f64 / cells as f64).sin() + 0.5)
        .collect()
}

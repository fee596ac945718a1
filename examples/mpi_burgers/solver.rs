//! The distributed 2-D viscous Burgers solver of `examples/mpi_burgers` (also used by
//! `tests/mpi_programs.rs`), and the same computation on one process without MPI.
//!
//! The periodic `m × n` grid is cut into strips of whole rows, one per rank: rank `r`
//! owns rows `[r·m/P, (r+1)·m/P)`, stored with a ghost row above and below. Every step
//! exchanges the edge rows with the ranks above and below (`sendrecv`), then updates
//! `u_t + u u_x + u u_y = ν Δu` explicitly: upwind advection by the sign of `u`, central
//! diffusion. The time loop is checkpointed with Revolve.

use phidiff::differentiate;
use phidiff::mpi::Comm;

/// `½ Σ u²` over the whole grid after `steps` steps from this rank's rows `u0` (`rows ×
/// n`, flattened), the same on every rank.
#[differentiate(forward, reverse)]
#[allow(clippy::too_many_arguments)]
pub fn burgers_energy(
    comm: &Comm,
    u0: &[f64],
    n: usize,
    nu: f64,
    dt: f64,
    steps: usize,
    snapshots: usize,
) -> f64 {
    let rows = u0.len() / n;
    let p = comm.size();
    let r = comm.rank();
    let up = (r + p - 1) % p;
    let down = (r + 1) % p;
    let mut u = vec![0.0; (rows + 2) * n];
    for k in 0..rows * n {
        u[n + k] = u0[k];
    }
    let mut next = vec![0.0; (rows + 2) * n];
    let mut top = vec![0.0; n];
    let mut bottom = vec![0.0; n];
    let mut above = vec![0.0; n];
    let mut below = vec![0.0; n];
    #[checkpoint(revolve(snapshots = snapshots))]
    for _ in 0..steps {
        for j in 0..n {
            top[j] = u[n + j];
            bottom[j] = u[rows * n + j];
        }
        // My top row goes up while the top row of the rank below arrives, and back.
        comm.sendrecv(&top, up, &mut below, down, 0);
        comm.sendrecv(&bottom, down, &mut above, up, 1);
        for j in 0..n {
            u[j] = above[j];
            u[(rows + 1) * n + j] = below[j];
        }
        for i in 1..rows + 1 {
            for j in 0..n {
                let c = u[i * n + j];
                let w = u[i * n + (j + n - 1) % n];
                let e = u[i * n + (j + 1) % n];
                let no = u[(i - 1) * n + j];
                let so = u[(i + 1) * n + j];
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
    for k in n..(rows + 1) * n {
        s += u[k] * u[k];
    }
    comm.allreduce_sum_scalar(0.5 * s)
}

/// [`burgers_energy`] on the whole `m × n` grid `u0`, one process, no MPI.
#[differentiate(reverse)]
pub fn burgers_energy_serial(u0: &[f64], n: usize, nu: f64, dt: f64, steps: usize) -> f64 {
    let m = u0.len() / n;
    let mut u = u0.to_vec();
    let mut next = vec![0.0; m * n];
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

/// A smooth initial field on the `m × n` grid, values in about (-0.6, 0.8).
pub fn initial(m: usize, n: usize) -> Vec<f64> {
    let mut u = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (x, y) = (j as f64 / n as f64, i as f64 / m as f64);
            u[i * n + j] = 0.1
                + 0.5
                    * (2.0 * std::f64::consts::PI * x).sin()
                    * (2.0 * std::f64::consts::PI * y).cos()
                + 0.2 * (4.0 * std::f64::consts::PI * (x + y)).sin();
        }
    }
    u
}

/// This rank's rows of an `m`-row grid.
pub fn strip(comm: &Comm, m: usize) -> std::ops::Range<usize> {
    let (r, p) = (comm.rank(), comm.size());
    r * m / p..(r + 1) * m / p
}

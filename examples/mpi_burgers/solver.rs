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

#[path = "../../benches/support/burgers2d.rs"]
mod burgers2d;

/// [`burgers_energy`] on the whole `m × n` grid on one process, without MPI (the same
/// scheme: the scoreboard's 2-D Burgers program), and a smooth initial field with both
/// signs. (The example uses only the gradient; the tests use both.)
#[allow(unused_imports)]
pub use burgers2d::{
    burgers2d_full as burgers_energy_serial, burgers2d_full_rev as burgers_energy_serial_rev,
    initial,
};

/// This rank's rows of an `m`-row grid.
pub fn strip(comm: &Comm, m: usize) -> std::ops::Range<usize> {
    let (r, p) = (comm.rank(), comm.size());
    r * m / p..(r + 1) * m / p
}

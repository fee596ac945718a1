//! The gradient of a distributed energy with `ad_mpi::Comm`'s `_rev` methods, written out by
//! hand in the order `#[differentiate]` would generate them for a function that takes
//! `comm: &Comm` (see `examples/mpi_burgers` in the repository root for the macro doing it).
//!
//! Each of P ranks owns `N_LOCAL` values of a periodic field `u`. The energy is
//! `E(u) = Σ_i ν·(u_i − u_{i−1})² + Σ_i sin(u_i)`, where the left neighbour of a rank's
//! first value lives on the previous rank and comes by a halo exchange (`sendrecv`), and
//! the sum over ranks is an all-reduce. The gradient is checked against central finite
//! differences of the distributed energy and against the same computation on one
//! process; the program exits non-zero if either check fails.
//!
//! ```sh
//! cargo build --release -p ad-mpi --example distributed_gradient
//! mpirun -n 4 target/release/examples/distributed_gradient
//! ```

use ad_mpi::{initialize, Comm};

const N_LOCAL: usize = 5;
const NU: f64 = 0.7;

/// This rank's part of the energy, given its left neighbour value `left`.
fn local_energy(u: &[f64], left: f64) -> f64 {
    let mut e = 0.0;
    for i in 0..u.len() {
        let l = if i == 0 { left } else { u[i - 1] };
        e += NU * (u[i] - l) * (u[i] - l) + u[i].sin();
    }
    e
}

/// The energy of the whole field (the same value on every rank).
fn energy(comm: &Comm, u: &[f64]) -> f64 {
    let (r, p) = (comm.rank(), comm.size());
    let last = [u[u.len() - 1]];
    let mut left = [0.0];
    comm.sendrecv(&last, (r + 1) % p, &mut left, (r + p - 1) % p, 0);
    comm.allreduce_sum_scalar(local_energy(u, left[0]))
}

/// `(E, ∂E/∂u on this rank)`: the forward sweep of `energy`, then its adjoint in reverse.
/// The energy is replicated on every rank; the seed goes on rank 0 only, so the result
/// is the gradient of E (a seed on every rank would give P times it).
fn energy_grad(comm: &Comm, u: &[f64]) -> (f64, Vec<f64>) {
    let (r, p) = (comm.rank(), comm.size());
    // Forward sweep.
    let last = [u[u.len() - 1]];
    let mut left = [0.0];
    comm.sendrecv(&last, (r + 1) % p, &mut left, (r + p - 1) % p, 0);
    let e_local = local_energy(u, left[0]);

    // Reverse sweep: the all-reduce first (its adjoint is an all-reduce of the seeds).
    let seed = if r == 0 { 1.0 } else { 0.0 };
    let (e, e_local_bar) = comm.allreduce_sum_scalar_rev(e_local, seed);
    // The adjoint of local_energy, by hand.
    let mut u_bar = vec![0.0; u.len()];
    let mut left_bar = [0.0];
    for i in (0..u.len()).rev() {
        let l = if i == 0 { left[0] } else { u[i - 1] };
        let d = 2.0 * NU * (u[i] - l) * e_local_bar;
        u_bar[i] += d + u[i].cos() * e_local_bar;
        if i == 0 {
            left_bar[0] -= d;
        } else {
            u_bar[i - 1] -= d;
        }
    }
    // The adjoint of the halo exchange: `left`'s adjoint goes back to the previous rank
    // and arrives in the adjoint of `last` of this rank from the next one.
    let mut last_bar = [0.0];
    let mut left_copy = left;
    comm.sendrecv_rev(
        &last,
        &mut last_bar,
        (r + 1) % p,
        &mut left_copy,
        &mut left_bar,
        (r + p - 1) % p,
        0,
    );
    u_bar[u.len() - 1] += last_bar[0];
    (e, u_bar)
}

/// The same energy and gradient on one process, for the whole field.
fn energy_grad_serial(u: &[f64]) -> (f64, Vec<f64>) {
    let n = u.len();
    let mut e = 0.0;
    let mut g = vec![0.0; n];
    for i in 0..n {
        let l = (i + n - 1) % n;
        let d = u[i] - u[l];
        e += NU * d * d + u[i].sin();
        g[i] += 2.0 * NU * d + u[i].cos();
        g[l] -= 2.0 * NU * d;
    }
    (e, g)
}

fn main() {
    let universe = initialize().expect("MPI is initialized once");
    let comm = Comm::world(&universe);
    let (r, p) = (comm.rank(), comm.size());
    // This rank's values of a deterministic global field.
    let global = |g: usize| (0.37 * g as f64).sin() + 0.1 * g as f64;
    let u: Vec<f64> = (0..N_LOCAL).map(|i| global(r * N_LOCAL + i)).collect();

    let (e, grad) = energy_grad(&comm, &u);
    let mut failures = 0;

    // 1. Central finite differences of the distributed energy: every rank evaluates the
    //    energy for every global perturbation (the calls are collective), the owner of
    //    the perturbed value compares.
    let h = 1e-6;
    for g in 0..p * N_LOCAL {
        let (owner, i) = (g / N_LOCAL, g % N_LOCAL);
        let shifted = |s: f64| {
            let mut v = u.clone();
            if owner == r {
                v[i] += s * h;
            }
            energy(&comm, &v)
        };
        let fd = (shifted(1.0) - shifted(-1.0)) / (2.0 * h);
        if owner == r && (fd - grad[i]).abs() > 1e-6 * (1.0 + fd.abs()) {
            eprintln!(
                "rank {r}: ∂E/∂u[{g}] = {} but finite differences give {fd}",
                grad[i]
            );
            failures += 1;
        }
    }

    // 2. The one-process computation on the gathered field.
    let mut field = vec![0.0; p * N_LOCAL];
    comm.allgather(&u, &mut field);
    let (e_serial, g_serial) = energy_grad_serial(&field);
    if (e - e_serial).abs() > 1e-12 * e_serial.abs() {
        eprintln!("rank {r}: E = {e} but one process gives {e_serial}");
        failures += 1;
    }
    for i in 0..N_LOCAL {
        let want = g_serial[r * N_LOCAL + i];
        if (grad[i] - want).abs() > 1e-12 * (1.0 + want.abs()) {
            eprintln!(
                "rank {r}: ∂E/∂u[{}] = {} but one process gives {want}",
                r * N_LOCAL + i,
                grad[i]
            );
            failures += 1;
        }
    }

    let failures = comm.allreduce_sum_scalar(failures as f64);
    if r == 0 {
        println!(
            "E = {e:.12} on {p} rank(s); gradient of {} values",
            p * N_LOCAL
        );
        println!(
            "checks: finite differences and the one-process gradient: {}",
            if failures == 0.0 { "ok" } else { "FAILED" }
        );
    }
    if failures > 0.0 {
        drop(comm);
        drop(universe);
        std::process::exit(1);
    }
}

//! Whole programs with `#[differentiate]` and MPI (`--features mpi`): the test binary
//! launches itself under `mpirun` with 1, 2 and 4 processes (each run under a time limit).
//! On every run:
//! - the known values: `x_r = r + 1`, `y = allreduce_sum(x²)`;
//! - a periodic 1-D stencil decomposed in chunks with halo exchanges (`sendrecv`, and
//!   `isend`/`irecv`/`wait_*` in a second version) and an all-reduce: its gradient on P ranks, gathered, equals the gradient of the same
//!   computation on one process without MPI (rel 1e-12), with one seed on rank 0;
//! - the same program and one with `bcast` and `allreduce_max_scalar`: `_fwd` against
//!   central finite differences (rel 1e-6) and the dot-product test summed over ranks
//!   (rel 1e-12).

#[path = "../ad-mpi/tests/common/mod.rs"]
mod common;
#[path = "../examples/mpi_burgers/solver.rs"]
mod solver;

use common::{dot, launch, under_mpirun, values};
use phidiff::differentiate;
use phidiff::mpi::mpi::collective::SystemOperation;
use phidiff::mpi::mpi::traits::*;
use phidiff::mpi::{Comm, Op};

#[differentiate(forward, reverse)]
fn sum_of_squares(comm: &Comm, x: f64) -> f64 {
    comm.allreduce_sum_scalar(x * x)
}

/// One explicit step of a nonlinear periodic stencil on this rank's chunk `u`, then the
/// global `Σ v² sin(v)`; the neighbours' edge values come by halo exchange.
#[differentiate(forward, reverse)]
fn stencil_energy(comm: &Comm, u: &[f64], nu: f64) -> f64 {
    let n = u.len();
    let p = comm.size();
    let r = comm.rank();
    let next = (r + 1) % p;
    let prev = (r + p - 1) % p;
    let mut first = vec![0.0; 1];
    let mut last = vec![0.0; 1];
    let mut left = vec![0.0; 1];
    let mut right = vec![0.0; 1];
    first[0] = u[0];
    last[0] = u[n - 1];
    comm.sendrecv(&last, next, &mut left, prev, 0);
    comm.sendrecv(&first, prev, &mut right, next, 1);
    let mut s = 0.0;
    for i in 0..n {
        let l = if i == 0 { left[0] } else { u[i - 1] };
        let rr = if i == n - 1 { right[0] } else { u[i + 1] };
        let v = u[i] + nu * (l - 2.0 * u[i] + rr) * (1.0 + u[i] * u[i]);
        s += v * v * v.sin();
    }
    comm.allreduce_sum_scalar(s)
}

/// [`stencil_energy`] with nonblocking halo exchanges: both receives posted, then both
/// sends, then the waits.
#[differentiate(forward, reverse)]
fn stencil_energy_nonblocking(comm: &Comm, u: &[f64], nu: f64) -> f64 {
    let n = u.len();
    let p = comm.size();
    let r = comm.rank();
    let next = (r + 1) % p;
    let prev = (r + p - 1) % p;
    let mut first = vec![0.0; 1];
    let mut last = vec![0.0; 1];
    let mut left = vec![0.0; 1];
    let mut right = vec![0.0; 1];
    first[0] = u[0];
    last[0] = u[n - 1];
    comm.irecv(&mut left, prev, 0);
    comm.irecv(&mut right, next, 1);
    comm.isend(&last, next, 0);
    comm.isend(&first, prev, 1);
    comm.wait_recv(&mut left, prev, 0);
    comm.wait_recv(&mut right, next, 1);
    comm.wait_send(&last, next, 0);
    comm.wait_send(&first, prev, 1);
    let mut s = 0.0;
    for i in 0..n {
        let l = if i == 0 { left[0] } else { u[i - 1] };
        let rr = if i == n - 1 { right[0] } else { u[i + 1] };
        let v = u[i] + nu * (l - 2.0 * u[i] + rr) * (1.0 + u[i] * u[i]);
        s += v * v * v.sin();
    }
    comm.allreduce_sum_scalar(s)
}

/// [`stencil_energy`] on the whole vector, one process, no MPI.
#[differentiate(reverse)]
fn stencil_energy_serial(u: &[f64], nu: f64) -> f64 {
    let n = u.len();
    let mut s = 0.0;
    for i in 0..n {
        let l = if i == 0 { u[n - 1] } else { u[i - 1] };
        let rr = if i == n - 1 { u[0] } else { u[i + 1] };
        let v = u[i] + nu * (l - 2.0 * u[i] + rr) * (1.0 + u[i] * u[i]);
        s += v * v * v.sin();
    }
    s
}

/// Weights broadcast from rank 0, a local score, the global maximum.
#[differentiate(forward, reverse)]
fn peak_score(comm: &Comm, w: &mut [f64], x: &[f64]) -> f64 {
    comm.bcast(w, 0);
    let mut s = 0.0;
    for k in 0..x.len() {
        s += (w[k % w.len()] * x[k]).tanh();
    }
    comm.allreduce_max_scalar(s)
}

/// `‖Σ_ranks x‖²` through `allreduce(.., Op::Sum)`: the operation is an argument.
#[differentiate(forward, reverse)]
fn norm_of_sum(comm: &Comm, x: &[f64]) -> f64 {
    let mut total = vec![0.0; x.len()];
    comm.allreduce(x, &mut total, Op::Sum);
    let mut s = 0.0;
    for k in 0..total.len() {
        s += total[k] * total[k];
    }
    s
}

/// `Π_ranks x[0]`: the product reduction has no derivative, so `_rev` panics.
#[differentiate(reverse)]
fn product_all(comm: &Comm, x: &[f64]) -> f64 {
    let mut p = vec![0.0; x.len()];
    comm.allreduce(x, &mut p, Op::Prod);
    p[0]
}

fn reduction_as_argument(comm: &Comm) {
    let rank = comm.rank();
    let x = values(rank, 11, 3);
    let mut total = vec![0.0; 3];
    comm.allreduce_sum(&x, &mut total);
    // Seed on rank 0: x̄_r = 2 Σx on every rank.
    let mut xbar = vec![0.0; 3];
    let value = norm_of_sum_rev(comm, &x, &mut xbar, if rank == 0 { 1.0 } else { 0.0 });
    assert_eq!(value, norm_of_sum(comm, &x));
    for k in 0..3 {
        assert!(
            (xbar[k] - 2.0 * total[k]).abs() <= 1e-14,
            "x̄[{k}] = {} vs 2Σx = {}",
            xbar[k],
            2.0 * total[k]
        );
    }
    let dx = values(rank, 12, 3);
    let (_, tangent) = norm_of_sum_fwd(comm, &x, &dx);
    let mut dtotal = vec![0.0; 3];
    comm.allreduce_sum(&dx, &mut dtotal);
    let want = 2.0 * dot(&total, &dtotal);
    assert!(
        (tangent - want).abs() <= 1e-12 * want.abs().max(1.0),
        "tangent {tangent} vs {want}"
    );
    // The product: a value, and a panic naming the operation for the adjoint.
    assert_eq!(
        product_all(comm, &[2.0, 1.0]),
        2f64.powi(comm.size() as i32)
    );
    std::panic::set_hook(Box::new(|_| {}));
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        product_all_rev(comm, &[2.0, 1.0], &mut [0.0; 2], 1.0)
    }))
    .expect_err("the product's adjoint panics");
    let _ = std::panic::take_hook();
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("`Op::Prod` has no derivative"),
        "panic message: {msg:?}"
    );
}

fn sum_over_ranks(comm: &Comm, x: f64) -> f64 {
    let mut y = 0.0;
    comm.raw()
        .all_reduce_into(&x, &mut y, SystemOperation::sum());
    y
}

fn known_values(comm: &Comm) {
    let x = comm.rank() as f64 + 1.0;
    let y =
        comm.size() as f64 * (comm.size() as f64 + 1.0) * (2.0 * comm.size() as f64 + 1.0) / 6.0;
    let seed0 = if comm.rank() == 0 { 1.0 } else { 0.0 };
    let (value, dx) = sum_of_squares_rev(comm, x, seed0);
    assert_eq!(value, y, "Σ (r+1)²");
    assert_eq!(sum_of_squares(comm, x), y, "the primal");
    assert_eq!(dx, 2.0 * x, "seed on rank 0 only: x̄_r = 2 x_r");
    let (_, dx) = sum_of_squares_rev(comm, x, 1.0);
    assert_eq!(
        dx,
        2.0 * x * comm.size() as f64,
        "seeds on all ranks: x̄_r = 2 P x_r"
    );
    if comm.size() == 4 {
        assert_eq!([2.0, 4.0, 6.0, 8.0][comm.rank()], 2.0 * x);
    }
}

/// The global vector of the stencil test and this rank's chunk of it.
const GLOBAL: usize = 24;

fn chunk(comm: &Comm) -> std::ops::Range<usize> {
    let (r, p) = (comm.rank(), comm.size());
    r * GLOBAL / p..(r + 1) * GLOBAL / p
}

fn global_u() -> Vec<f64> {
    (0..GLOBAL)
        .map(|i| 0.4 * (0.7 * i as f64).sin() + 0.1)
        .collect()
}

type Primal = fn(&Comm, &[f64], f64) -> f64;
type Fwd = fn(&Comm, &[f64], &[f64], f64, f64) -> (f64, f64);
type Rev = fn(&Comm, &[f64], &mut [f64], f64, f64) -> (f64, f64);

fn distributed_equals_serial(comm: &Comm, rev: Rev) {
    let (u, nu) = (global_u(), 0.15);
    let mine = chunk(comm);
    let seed0 = if comm.rank() == 0 { 1.0 } else { 0.0 };
    let mut du = vec![0.0; mine.len()];
    let (value, dnu) = rev(comm, &u[mine.clone()], &mut du, nu, seed0);
    let mut du_serial = vec![0.0; GLOBAL];
    let (value_serial, dnu_serial) = stencil_energy_serial_rev(&u, &mut du_serial, nu, 1.0);
    assert_eq!(
        value_serial,
        stencil_energy_serial(&u, nu),
        "the serial primal"
    );
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0);
    assert!(
        close(value, value_serial),
        "energy: {value} on {} ranks vs {value_serial}",
        comm.size()
    );
    for (k, i) in mine.enumerate() {
        assert!(
            close(du[k], du_serial[i]),
            "ū[{i}]: {} vs serial {}",
            du[k],
            du_serial[i]
        );
    }
    // `nu` is an input of every rank: its adjoint is the sum of the ranks' adjoints.
    let dnu_total = sum_over_ranks(comm, dnu);
    assert!(
        close(dnu_total, dnu_serial),
        "ν̄: {dnu_total} vs serial {dnu_serial}"
    );
}

fn stencil_fd_and_dot(comm: &Comm, primal: Primal, fwd: Fwd, rev: Rev) {
    let rank = comm.rank();
    let u = global_u()[chunk(comm)].to_vec();
    let nu = 0.15;
    let (du, dnu) = (values(rank, 1, u.len()), 0.3);
    let (_, tangent) = fwd(comm, &u, &du, nu, dnu);
    let h = 1e-6;
    let at = |s: f64| {
        let v: Vec<f64> = u.iter().zip(&du).map(|(x, d)| x + s * h * d).collect();
        primal(comm, &v, nu + s * h * dnu)
    };
    let fd = (at(1.0) - at(-1.0)) / (2.0 * h);
    assert!(
        (fd - tangent).abs() <= 1e-6 * fd.abs().max(1.0),
        "stencil: _fwd {tangent} vs FD {fd}"
    );
    // Every rank's copy of the value is an output with its own seed.
    let ybar = values(rank, 2, 1)[0];
    let mut ubar = vec![0.0; u.len()];
    let (_, nubar) = rev(comm, &u, &mut ubar, nu, ybar);
    let lhs = sum_over_ranks(comm, ybar * tangent);
    let rhs = sum_over_ranks(comm, dot(&ubar, &du) + nubar * dnu);
    assert!(
        (lhs - rhs).abs() <= 1e-12 * lhs.abs().max(1.0),
        "stencil dot product: {lhs} vs {rhs}"
    );
}

fn peak_fd_and_dot(comm: &Comm) {
    let rank = comm.rank();
    let w0 = values(rank, 3, 3);
    let x = values(rank, 4, 7);
    let (dw, dx) = (values(rank, 5, 3), values(rank, 6, 7));
    let (mut w, mut dw_out) = (w0.clone(), dw.clone());
    let (_, tangent) = peak_score_fwd(comm, &mut w, &mut dw_out, &x, &dx);
    let h = 1e-6;
    let at = |s: f64| {
        let mut w: Vec<f64> = w0.iter().zip(&dw).map(|(a, d)| a + s * h * d).collect();
        let x: Vec<f64> = x.iter().zip(&dx).map(|(a, d)| a + s * h * d).collect();
        peak_score(comm, &mut w, &x)
    };
    let fd = (at(1.0) - at(-1.0)) / (2.0 * h);
    assert!(
        (fd - tangent).abs() <= 1e-6 * fd.abs().max(1.0),
        "peak: _fwd {tangent} vs FD {fd}"
    );
    // `w` is overwritten by the broadcast: its final value is an output too.
    let ybar = values(rank, 7, 1)[0];
    let wbar_final = values(rank, 8, 3);
    let (mut w, mut wbar, mut xbar) = (w0.clone(), wbar_final.clone(), vec![0.0; 7]);
    peak_score_rev(comm, &mut w, &mut wbar, &x, &mut xbar, ybar);
    let lhs = sum_over_ranks(comm, ybar * tangent + dot(&wbar_final, &dw_out));
    let rhs = sum_over_ranks(comm, dot(&wbar, &dw) + dot(&xbar, &dx));
    assert!(
        (lhs - rhs).abs() <= 1e-12 * lhs.abs().max(1.0),
        "peak dot product: {lhs} vs {rhs}"
    );
}

/// The distributed Burgers solver with its Revolve-checkpointed time loop: the gradient on
/// P ranks, gathered on rank 0, equals the one-process gradient without MPI; `_fwd`
/// against finite differences, and the dot-product test.
fn burgers_equals_serial(comm: &Comm) {
    let (m, n, nu, dt, steps) = (8, 6, 0.08, 0.1, 12);
    let u0 = solver::initial(m, n);
    let rows = solver::strip(comm, m);
    let mine = &u0[rows.start * n..rows.end * n];
    let seed0 = if comm.rank() == 0 { 1.0 } else { 0.0 };
    let mut du = vec![0.0; mine.len()];
    let (value, _, _) = solver::burgers_energy_rev(comm, mine, &mut du, n, nu, dt, steps, 3, seed0);
    let mut all = if comm.rank() == 0 {
        vec![0.0; m * n]
    } else {
        Vec::new()
    };
    comm.gather(&du, &mut all, 0);
    let value_serial = solver::burgers_energy_serial(&u0, n, nu, dt, steps);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0);
    assert!(
        close(value, value_serial),
        "Burgers energy {value} vs serial {value_serial}"
    );
    if comm.rank() == 0 {
        let mut du_serial = vec![0.0; m * n];
        let v = solver::burgers_energy_serial_rev(&u0, &mut du_serial, n, nu, dt, steps, 1.0);
        assert!(close(v, value_serial));
        for k in 0..m * n {
            assert!(
                close(all[k], du_serial[k]),
                "Burgers ū0[{k}]: {} vs serial {}",
                all[k],
                du_serial[k]
            );
        }
    }
    // Tangent against central differences, and the dot product over ranks.
    let rank = comm.rank();
    let (dmine, dnu, ddt) = (values(rank, 9, mine.len()), 0.2, 0.0);
    let (_, tangent) =
        solver::burgers_energy_fwd(comm, mine, &dmine, n, nu, dnu, dt, ddt, steps, 3);
    let h = 1e-6;
    let at = |s: f64| {
        let v: Vec<f64> = mine
            .iter()
            .zip(&dmine)
            .map(|(x, d)| x + s * h * d)
            .collect();
        solver::burgers_energy(comm, &v, n, nu + s * h * dnu, dt, steps, 3)
    };
    let fd = (at(1.0) - at(-1.0)) / (2.0 * h);
    assert!(
        (fd - tangent).abs() <= 1e-6 * fd.abs().max(1.0),
        "Burgers: _fwd {tangent} vs FD {fd}"
    );
    let ybar = values(rank, 10, 1)[0];
    let mut ubar = vec![0.0; mine.len()];
    let (_, nubar, _) =
        solver::burgers_energy_rev(comm, mine, &mut ubar, n, nu, dt, steps, 3, ybar);
    let lhs = sum_over_ranks(comm, ybar * tangent);
    let rhs = sum_over_ranks(comm, dot(&ubar, &dmine) + nubar * dnu);
    assert!(
        (lhs - rhs).abs() <= 1e-12 * lhs.abs().max(1.0),
        "Burgers dot product: {lhs} vs {rhs}"
    );
}

fn main() {
    if !under_mpirun() {
        launch("MPI programs");
        return;
    }
    let universe = phidiff::mpi::initialize().expect("MPI initializes once");
    let comm = Comm::world(&universe);
    known_values(&comm);
    distributed_equals_serial(&comm, stencil_energy_rev);
    stencil_fd_and_dot(
        &comm,
        stencil_energy,
        stencil_energy_fwd,
        stencil_energy_rev,
    );
    distributed_equals_serial(&comm, stencil_energy_nonblocking_rev);
    stencil_fd_and_dot(
        &comm,
        stencil_energy_nonblocking,
        stencil_energy_nonblocking_fwd,
        stencil_energy_nonblocking_rev,
    );
    peak_fd_and_dot(&comm);
    burgers_equals_serial(&comm);
    reduction_as_argument(&comm);
    comm.barrier();
    println!("ok rank {} of {}", comm.rank(), comm.size());
}

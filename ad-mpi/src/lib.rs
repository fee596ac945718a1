//! Differentiable MPI for phidiff: [`Comm`] wraps an rsmpi communicator, and each of its
//! communication methods comes with a `_fwd`/`_rev` pair in the calling convention of
//! `#[differentiate]`, so a differentiated function that takes `comm: &Comm` is
//! differentiated through its communication with no MPI knowledge in the macro.
//!
//! The adjoint rules are Enzyme's (Moses et al., SC'22, "Scalable automatic
//! differentiation of multiple parallel paradigms through compiler augmentation"):
//!
//! | primal | adjoint (`_rev`) |
//! |---|---|
//! | `send(buf → dest)` | receive the adjoint from `dest`, add into `dbuf` |
//! | `recv(buf ← source)` | send `dbuf` to `source`, then `dbuf = 0` |
//! | `sendrecv` (halo exchange) | the reverse exchange |
//! | `isend` / `wait_send` | complete the adjoint receive and accumulate / post a receive of the adjoint |
//! | `irecv` / `wait_recv` | complete the adjoint send / post a send of `dbuf`, then `dbuf = 0` |
//! | `allreduce_sum` | `allreduce_sum` of the adjoints |
//! | `allreduce_max` / `_min` | the adjoint sum goes to the owner of the extremum (lowest rank on ties) |
//! | `reduce_sum` to a root | broadcast of the root's adjoint |
//! | `bcast` from a root | reduction of the adjoints to the root |
//! | `gather` ↔ `scatter` | `scatter` ↔ `gather` of the adjoints |
//! | `allgather` | reduce-scatter of the adjoint sums |
//! | `alltoall` | `alltoall` of the adjoints back |
//!
//! Scalars have their own methods (`allreduce_sum_scalar(x) -> T`, ...), slices of `f32`
//! or `f64` the others. Every rank must make the same collective calls with the same
//! lengths, as MPI requires; a length that does not fit panics with a message naming
//! the method and the parameter.
//!
//! # Example
//!
//! The methods are what `#[differentiate]` calls for `comm.m(..)` in a function that
//! takes `comm: &Comm`; here the same chain is written by hand. This runs on one process
//! (Open MPI starts a singleton without `mpirun`) and under `mpirun -n P` alike;
//! `ad-mpi/examples/distributed_gradient.rs` is a complete program.
//!
//! ```
//! use ad_mpi::{initialize, Comm};
//!
//! let universe = initialize().expect("MPI is initialized once");
//! let comm = Comm::world(&universe);
//! let (rank, size) = (comm.rank() as f64, comm.size() as f64);
//!
//! // J = Σ_ranks a·x_r², with x_r = rank + 1 on each rank.
//! let (x, a) = (rank + 1.0, 0.5);
//! let j = comm.allreduce_sum_scalar(a * x * x);
//! assert_eq!(j, a * size * (size + 1.0) * (2.0 * size + 1.0) / 6.0);
//!
//! // Reverse: J is replicated, one copy per rank; seed one copy (rank 0) to get the
//! // gradient of J. The adjoint of an all-reduce is an all-reduce of the adjoints, so
//! // every rank's term gets Σ_ranks seed = 1, and ∂J/∂x_r = 2·a·x_r.
//! let seed = if comm.rank() == 0 { 1.0 } else { 0.0 };
//! let (value, term_bar) = comm.allreduce_sum_scalar_rev(a * x * x, seed);
//! assert_eq!((value, term_bar), (j, 1.0));
//! let x_bar = term_bar * 2.0 * a * x;
//! assert_eq!(x_bar, 2.0 * a * x);
//! ```
//!
//! A seed on every rank differentiates the sum of the P copies: P times the gradient.

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

mod collective;
mod comm;
mod nonblocking;
mod p2p;

pub use collective::Op;
pub use comm::{Comm, CommFloat};
pub use mpi;

/// Initializes MPI (rsmpi's [`mpi::initialize`]); `None` if it was initialized before.
/// MPI is finalized when the returned universe is dropped.
pub fn initialize() -> Option<mpi::environment::Universe> {
    mpi::initialize()
}

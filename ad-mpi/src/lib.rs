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

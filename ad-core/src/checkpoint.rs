//! Checkpointing of loops in reverse mode: a loop marked
//! `#[checkpoint(revolve(snapshots = S))]`, `#[checkpoint(periodic(every =
//! K))]` or `#[checkpoint(online(snapshots = S))]` (each with optional
//! `storage = memory | disk`) keeps snapshots of its loop-carried state
//! instead of a tape of every iteration, and recomputes between them in the
//! reverse sweep.
//!
//! This module owns the [`Schedule`]s ([`Revolve`], [`Periodic`],
//! [`Online`]), the [`Snapshot`] of a state, its [`Storage`] ([`Memory`],
//! [`Disk`]), and the [`Checkpointer`] that generated code drives, which
//! reports to [`record`] and [`with_progress`].
//!
//! The loop body appears in generated code in three forms: *plain* (primal
//! step), *taped* (primal step recording one iteration's tape) and
//! *adjoint* (consumes that tape). Here is a hand-written checkpointed
//! adjoint of `x_{i+1} = sin(x_i)·a`, in the shape the macro generates:
//!
//! ```
//! use ad_core::checkpoint::{record, Action, Checkpointer, Scheme, StepMode, StorageKind};
//!
//! /// Returns `(x_n, ∂x_n/∂x_0, ∂x_n/∂a)`.
//! fn recurrence_rev(x0: f64, a: f64, n: usize, scheme: Scheme, storage: StorageKind) -> (f64, f64, f64) {
//!     let mut ck = Checkpointer::<f64>::new(scheme, storage, Some(n));
//!     let mut x = x0;
//!     let mut tape = 0.0; // one iteration's tape: x before the step
//!     // Forward sweep: the primal loop.
//!     for i in 0..n {
//!         match ck.forward_step(i, |snap| snap.push_float(x)) {
//!             StepMode::Plain => x = x.sin() * a,
//!             StepMode::Taped => {
//!                 tape = x;
//!                 x = x.sin() * a;
//!             }
//!         }
//!     }
//!     ck.end_forward(n);
//!     let value = x;
//!     // ... arbitrary code may run here ...
//!     // Reverse sweep.
//!     let (mut x_bar, mut a_bar) = (1.0, 0.0);
//!     loop {
//!         match ck.next_reverse() {
//!             Action::Store { slot, .. } => ck.store(slot, |snap| snap.push_float(x)),
//!             Action::Restore { slot, .. } => ck.restore(slot, |r| x = r.float()),
//!             Action::Advance { from, to } => {
//!                 for _ in from..to {
//!                     x = x.sin() * a;
//!                 }
//!             }
//!             Action::Reverse { .. } => {
//!                 tape = x; // taped step (its primal result is not needed)
//!                 a_bar += x_bar * tape.sin(); // adjoint step
//!                 x_bar *= tape.cos() * a;
//!             }
//!             Action::Adjoint { .. } => {
//!                 a_bar += x_bar * tape.sin();
//!                 x_bar *= tape.cos() * a;
//!             }
//!             Action::Done => break,
//!         }
//!     }
//!     (value, x_bar, a_bar)
//! }
//!
//! // Reference: tape every x_i, then sweep back.
//! let (x0, a, n) = (0.4_f64, 1.3_f64, 200);
//! let mut xs = vec![x0];
//! for i in 0..n {
//!     xs.push(xs[i].sin() * a);
//! }
//! let (mut x_bar, mut a_bar) = (1.0, 0.0);
//! for i in (0..n).rev() {
//!     a_bar += x_bar * xs[i].sin();
//!     x_bar *= xs[i].cos() * a;
//! }
//!
//! for scheme in [
//!     Scheme::Revolve { snapshots: 5 },
//!     Scheme::Periodic { every: 16 },
//!     Scheme::Online { snapshots: 5 },
//! ] {
//!     for storage in [StorageKind::Memory, StorageKind::Disk] {
//!         let (got, reports) = record(|| recurrence_rev(x0, a, n, scheme, storage));
//!         assert_eq!(got, (xs[n], x_bar, a_bar)); // same operations, same bits
//!         let stats = reports[0].stats;
//!         assert_eq!(stats.taped_steps, n);
//!         if let Scheme::Revolve { snapshots } = scheme {
//!             assert_eq!(stats.forward_steps, ad_core::checkpoint::revolve_forward_steps(n, snapshots));
//!             assert!(stats.max_live_snapshots <= snapshots);
//!         }
//!     }
//! }
//! ```
//!
//! For a `while` loop the trip count is unknown: construct with `None`,
//! count the iterations, and call `end_forward` with the count; every
//! forward step is then [`StepMode::Plain`] and the reverse phase never
//! emits [`Action::Adjoint`].

mod binomial;
mod checkpointer;
mod codec;
mod disk;
mod error;
mod observe;
mod online;
mod periodic;
mod reversal;
mod revolve;
mod schedule;
#[cfg(test)]
mod simulate;
mod snapshot;
mod storage;

pub use binomial::{revolve_forward_steps, revolve_stores};
pub use checkpointer::Checkpointer;
pub use disk::Disk;
pub use error::CheckpointError;
pub use observe::{record, with_progress, Progress, Report};
pub use online::Online;
pub use periodic::Periodic;
pub use revolve::Revolve;
pub use schedule::{Action, ForwardStep, Schedule, Scheme, Stats, StepMode};
pub use snapshot::{Snapshot, SnapshotReader};
pub use storage::{Memory, Storage, StorageKind};

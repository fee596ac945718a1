//! Nonblocking point-to-point messages and their derivatives.
//!
//! Requests are not values here: `isend`/`irecv` post an operation, and `wait_send` /
//! `wait_recv` complete the oldest pending one with the same peer and tag (MPI's own
//! matching order). So every call carries its buffer, and the macro's calling convention
//! reaches each of them with its shadow. The adjoints follow Enzyme: the reverse of a
//! wait posts the opposite nonblocking operation on the adjoint, and the reverse of the
//! post completes it and accumulates:
//!
//! | primal | `_rev` |
//! |---|---|
//! | `isend(buf, dest, tag)` | complete the adjoint receive, `dbuf += ` it |
//! | `wait_send(buf, dest, tag)` | post a receive of the adjoint from `dest` |
//! | `irecv(buf, source, tag)` | complete the adjoint send |
//! | `wait_recv(buf, source, tag)` | post a send of `dbuf` to `source`, then `dbuf = 0` |
//!
//! `irecv` only posts: `buf` is filled by `wait_recv`, which takes the same buffer.

use std::any::Any;
use std::collections::VecDeque;

use mpi::request::{Request, StaticScope};
use mpi::traits::*;

use crate::comm::{add_into, check_dbuf, to_c_int, zero, Comm, CommFloat};

/// What a pending operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Send,
    Recv,
}

/// Whose message it is: the primal's, a tangent (`_fwd`), or an adjoint (`_rev`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Value,
    Tangent,
    Adjoint,
}

/// A nonblocking operation in flight.
pub(crate) struct Pending {
    kind: Kind,
    role: Role,
    peer: usize,
    tag: usize,
    len: usize,
    op: Box<dyn Complete>,
}

/// The pending operations of a communicator, oldest first.
#[derive(Default)]
pub(crate) struct Requests {
    pending: VecDeque<Pending>,
}

impl Requests {
    /// Leaves every pending operation to MPI without completing it (their buffers are
    /// leaked, since MPI may still use them) and describes them.
    pub(crate) fn abandon(&mut self) -> Vec<String> {
        self.pending
            .drain(..)
            .map(|p| {
                let what = format!(
                    "{:?} {:?} with peer {} tag {}",
                    p.role, p.kind, p.peer, p.tag
                );
                p.op.abandon();
                what
            })
            .collect()
    }
}

/// Completing an operation in flight, whatever its element type.
trait Complete {
    /// Waits for the operation; returns the buffer (a `Vec<T>`).
    fn complete(self: Box<Self>) -> Box<dyn Any>;
    /// Forgets the request and leaks the buffer (MPI may still be using it).
    fn abandon(self: Box<Self>);
}

/// An operation in flight on a buffer of its own, which MPI reads or writes until the
/// request completes.
struct InFlight<T: CommFloat> {
    request: Request<'static, [T], StaticScope>,
    buf: *mut [T],
}

impl<T: CommFloat> Complete for InFlight<T> {
    fn complete(self: Box<Self>) -> Box<dyn Any> {
        let InFlight { request, buf } = *self;
        request.wait_without_status();
        // SAFETY: `buf` comes from `Box::into_raw` in `post`; the only reference made
        // from it was moved into `request`, which `wait_without_status` consumed after
        // MPI finished with the memory. Nothing else can reach the buffer, so it is
        // returned to a `Box` exactly once.
        let data = unsafe { Box::from_raw(buf) };
        Box::new(data.into_vec())
    }

    fn abandon(self: Box<Self>) {
        // The request is not complete: dropping it would panic, and freeing the buffer
        // while MPI may write it would be unsound. Both are leaked.
        std::mem::forget(self.request);
    }
}

impl Comm {
    /// Posts `data` (copied into a buffer of its own) as a send or receive buffer.
    fn post<T: CommFloat>(
        &self,
        kind: Kind,
        role: Role,
        data: Vec<T>,
        peer: usize,
        tag: usize,
        method: &str,
    ) {
        let len = data.len();
        let t = to_c_int(tag, method, "tag");
        let param = if kind == Kind::Send { "dest" } else { "source" };
        let process = self.process(peer, method, param);
        let buf: *mut [T] = Box::into_raw(data.into_boxed_slice());
        let request = match kind {
            // SAFETY (both arms): `buf` is a live allocation owned by this operation
            // alone until `InFlight::complete` turns it back into a `Box`; this is the
            // only reference made from it, and it lives inside the request.
            Kind::Send => process.immediate_send_with_tag(StaticScope, unsafe { &*buf }, t),
            Kind::Recv => {
                process.immediate_receive_into_with_tag(StaticScope, unsafe { &mut *buf }, t)
            }
        };
        self.requests.borrow_mut().pending.push_back(Pending {
            kind,
            role,
            peer,
            tag,
            len,
            op: Box::new(InFlight { request, buf }),
        });
    }

    /// Posts a receive of `len` elements into a zeroed buffer of its own.
    fn post_recv<T: CommFloat>(
        &self,
        role: Role,
        len: usize,
        peer: usize,
        tag: usize,
        method: &str,
    ) {
        self.post(Kind::Recv, role, vec![T::zero(); len], peer, tag, method);
    }

    /// Completes the oldest pending operation of this kind, role, peer and tag, whose
    /// buffer has `len` elements; returns its buffer.
    fn complete<T: CommFloat>(
        &self,
        kind: Kind,
        role: Role,
        peer: usize,
        tag: usize,
        len: usize,
        method: &str,
    ) -> Vec<T> {
        let pending = {
            let mut requests = self.requests.borrow_mut();
            let at = requests
                .pending
                .iter()
                .position(|p| p.kind == kind && p.role == role && p.peer == peer && p.tag == tag);
            let Some(at) = at else {
                let what = match (kind, role) {
                    (Kind::Send, Role::Value) => "isend",
                    (Kind::Send, Role::Tangent) => "isend of the tangent (isend_fwd)",
                    (Kind::Send, Role::Adjoint) => {
                        "adjoint send (posted by wait_recv_rev, which must run first)"
                    }
                    (Kind::Recv, Role::Value) => "irecv",
                    (Kind::Recv, Role::Tangent) => "irecv of the tangent (irecv_fwd)",
                    (Kind::Recv, Role::Adjoint) => {
                        "adjoint receive (posted by wait_send_rev, which must run first)"
                    }
                };
                panic!("ad_mpi::Comm::{method}: no pending {what} with peer {peer} and tag {tag}");
            };
            requests.pending.remove(at).expect("position is in range")
        };
        if pending.len != len {
            let _ = pending.op.complete();
            panic!(
                "ad_mpi::Comm::{method}: the buffer has length {len}, but the pending operation with peer {peer} and tag {tag} has {}",
                pending.len
            );
        }
        *pending
            .op
            .complete()
            .downcast::<Vec<T>>()
            .unwrap_or_else(|_| panic!("ad_mpi::Comm::{method}: the pending operation with peer {peer} and tag {tag} has another element type"))
    }

    /// Starts sending a copy of `buf` to `dest` with `tag`; [`wait_send`](Self::wait_send)
    /// completes it.
    ///
    /// The reverse of a post–wait program runs the waits' adjoints first, then the posts':
    ///
    /// ```
    /// use ad_mpi::{initialize, Comm};
    ///
    /// let universe = initialize().unwrap();
    /// let comm = Comm::world(&universe);
    /// let (r, p) = (comm.rank(), comm.size());
    /// let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    ///
    /// // Primal: the ring shift, nonblocking.
    /// let (last, mut left) = ([1.0 + r as f64], [0.0]);
    /// comm.irecv(&mut left, prev, 0);
    /// comm.isend(&last, next, 0);
    /// comm.wait_recv(&mut left, prev, 0);
    /// comm.wait_send(&last, next, 0);
    /// assert_eq!(left, [1.0 + prev as f64]);
    ///
    /// // Adjoint, in reverse order: the adjoint of `left` goes back to `prev`.
    /// let (mut dlast, mut dleft) = ([0.0], [5.0 + r as f64]);
    /// comm.wait_send_rev(&last, &mut dlast, next, 0);
    /// comm.wait_recv_rev(&mut left, &mut dleft, prev, 0);
    /// comm.isend_rev(&last, &mut dlast, next, 0);
    /// comm.irecv_rev(&mut left, &mut dleft, prev, 0);
    /// assert_eq!((dlast, dleft), ([5.0 + next as f64], [0.0]));
    /// ```
    pub fn isend<T: CommFloat>(&self, buf: &[T], dest: usize, tag: usize) {
        self.post(Kind::Send, Role::Value, buf.to_vec(), dest, tag, "isend");
    }

    /// [`isend`](Self::isend) of the value and the tangent.
    pub fn isend_fwd<T: CommFloat>(&self, buf: &[T], dbuf: &[T], dest: usize, tag: usize) {
        check_dbuf("isend_fwd", buf.len(), dbuf.len());
        self.post(
            Kind::Send,
            Role::Value,
            buf.to_vec(),
            dest,
            tag,
            "isend_fwd",
        );
        self.post(
            Kind::Send,
            Role::Tangent,
            dbuf.to_vec(),
            dest,
            tag,
            "isend_fwd",
        );
    }

    /// The adjoint of [`isend`](Self::isend): completes the adjoint receive that
    /// [`wait_send_rev`](Self::wait_send_rev) posted and adds it into `dbuf`.
    ///
    /// # Panics
    /// If no adjoint receive from `dest` with `tag` is pending (`wait_send_rev` did not
    /// run first, as the reverse of a program runs its waits before their posts).
    pub fn isend_rev<T: CommFloat>(&self, buf: &[T], dbuf: &mut [T], dest: usize, tag: usize) {
        check_dbuf("isend_rev", buf.len(), dbuf.len());
        let adjoint: Vec<T> =
            self.complete(Kind::Recv, Role::Adjoint, dest, tag, buf.len(), "isend_rev");
        add_into(dbuf, &adjoint);
    }

    /// Completes the oldest pending [`isend`](Self::isend) to `dest` with `tag`; `buf`
    /// is the buffer that was sent (same length).
    ///
    /// # Panics
    /// If no such isend is pending, or its length differs.
    pub fn wait_send<T: CommFloat>(&self, buf: &[T], dest: usize, tag: usize) {
        let _: Vec<T> = self.complete(Kind::Send, Role::Value, dest, tag, buf.len(), "wait_send");
    }

    /// [`wait_send`](Self::wait_send) of the value and the tangent.
    pub fn wait_send_fwd<T: CommFloat>(&self, buf: &[T], dbuf: &[T], dest: usize, tag: usize) {
        check_dbuf("wait_send_fwd", buf.len(), dbuf.len());
        let _: Vec<T> = self.complete(
            Kind::Send,
            Role::Value,
            dest,
            tag,
            buf.len(),
            "wait_send_fwd",
        );
        let _: Vec<T> = self.complete(
            Kind::Send,
            Role::Tangent,
            dest,
            tag,
            buf.len(),
            "wait_send_fwd",
        );
    }

    /// The adjoint of [`wait_send`](Self::wait_send): posts the receive of the message's
    /// adjoint from `dest`, which [`isend_rev`](Self::isend_rev) completes.
    pub fn wait_send_rev<T: CommFloat>(&self, buf: &[T], dbuf: &mut [T], dest: usize, tag: usize) {
        check_dbuf("wait_send_rev", buf.len(), dbuf.len());
        self.post_recv::<T>(Role::Adjoint, buf.len(), dest, tag, "wait_send_rev");
    }

    /// Starts receiving `buf.len()` elements from `source` with `tag`;
    /// [`wait_recv`](Self::wait_recv) on the same buffer fills it. `buf` is not touched
    /// here.
    pub fn irecv<T: CommFloat>(&self, buf: &mut [T], source: usize, tag: usize) {
        self.post_recv::<T>(Role::Value, buf.len(), source, tag, "irecv");
    }

    /// [`irecv`](Self::irecv) of the value and the tangent.
    pub fn irecv_fwd<T: CommFloat>(
        &self,
        buf: &mut [T],
        dbuf: &mut [T],
        source: usize,
        tag: usize,
    ) {
        check_dbuf("irecv_fwd", buf.len(), dbuf.len());
        self.post_recv::<T>(Role::Value, buf.len(), source, tag, "irecv_fwd");
        self.post_recv::<T>(Role::Tangent, buf.len(), source, tag, "irecv_fwd");
    }

    /// The adjoint of [`irecv`](Self::irecv): completes the adjoint send that
    /// [`wait_recv_rev`](Self::wait_recv_rev) posted. `dbuf` is left as it is (`irecv`
    /// does not write `buf`).
    pub fn irecv_rev<T: CommFloat>(
        &self,
        buf: &mut [T],
        dbuf: &mut [T],
        source: usize,
        tag: usize,
    ) {
        check_dbuf("irecv_rev", buf.len(), dbuf.len());
        let _: Vec<T> = self.complete(
            Kind::Send,
            Role::Adjoint,
            source,
            tag,
            buf.len(),
            "irecv_rev",
        );
    }

    /// Completes the oldest pending [`irecv`](Self::irecv) from `source` with `tag` and
    /// copies the message into `buf`.
    ///
    /// # Panics
    /// If no such irecv is pending, or its length differs from `buf`'s.
    pub fn wait_recv<T: CommFloat>(&self, buf: &mut [T], source: usize, tag: usize) {
        let data: Vec<T> =
            self.complete(Kind::Recv, Role::Value, source, tag, buf.len(), "wait_recv");
        buf.copy_from_slice(&data);
    }

    /// [`wait_recv`](Self::wait_recv) of the value and the tangent.
    pub fn wait_recv_fwd<T: CommFloat>(
        &self,
        buf: &mut [T],
        dbuf: &mut [T],
        source: usize,
        tag: usize,
    ) {
        check_dbuf("wait_recv_fwd", buf.len(), dbuf.len());
        self.wait_recv(buf, source, tag);
        let data: Vec<T> = self.complete(
            Kind::Recv,
            Role::Tangent,
            source,
            tag,
            buf.len(),
            "wait_recv_fwd",
        );
        dbuf.copy_from_slice(&data);
    }

    /// The adjoint of [`wait_recv`](Self::wait_recv): posts a send of `dbuf` back to
    /// `source` (completed by [`irecv_rev`](Self::irecv_rev)), then sets `dbuf` to 0 (the
    /// wait overwrote `buf`).
    pub fn wait_recv_rev<T: CommFloat>(
        &self,
        buf: &mut [T],
        dbuf: &mut [T],
        source: usize,
        tag: usize,
    ) {
        check_dbuf("wait_recv_rev", buf.len(), dbuf.len());
        self.post(
            Kind::Send,
            Role::Adjoint,
            dbuf.to_vec(),
            source,
            tag,
            "wait_recv_rev",
        );
        zero(dbuf);
    }
}

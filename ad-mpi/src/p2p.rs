//! Point-to-point messages and their derivatives: the adjoint of a send is a receive of
//! the adjoint, added into the sent buffer's shadow; the adjoint of a receive is a send of
//! the received buffer's adjoint, which then becomes 0 (the receive overwrote the buffer).

use mpi::point_to_point::send_receive_into_with_tags;
use mpi::traits::*;

use crate::comm::{
    add_into, check_dbuf, check_len, check_shadows, to_c_int, zero, Comm, CommFloat,
};

impl Comm {
    /// Sends `buf` to rank `dest` with `tag` (a blocking standard send).
    pub fn send<T: CommFloat>(&self, buf: &[T], dest: usize, tag: usize) {
        let tag = to_c_int(tag, "send", "tag");
        self.process(dest, "send", "dest").send_with_tag(buf, tag);
    }

    /// [`send`](Self::send) with the tangent: `buf`, then `dbuf`, same tag.
    pub fn send_fwd<T: CommFloat>(&self, buf: &[T], dbuf: &[T], dest: usize, tag: usize) {
        check_dbuf("send_fwd", buf.len(), dbuf.len());
        self.send(buf, dest, tag);
        self.send(dbuf, dest, tag);
    }

    /// The adjoint of [`send`](Self::send): receives the adjoint of the message from
    /// `dest` (sent by its [`recv_rev`](Self::recv_rev)) and adds it into `dbuf`.
    pub fn send_rev<T: CommFloat>(&self, buf: &[T], dbuf: &mut [T], dest: usize, tag: usize) {
        check_dbuf("send_rev", buf.len(), dbuf.len());
        let mut adjoint = vec![T::zero(); buf.len()];
        self.recv(&mut adjoint, dest, tag);
        add_into(dbuf, &adjoint);
    }

    /// Receives into `buf` from rank `source` with `tag`; the message must have exactly
    /// `buf.len()` elements.
    ///
    /// # Panics
    /// If the message has another length.
    pub fn recv<T: CommFloat>(&self, buf: &mut [T], source: usize, tag: usize) {
        let tag = to_c_int(tag, "recv", "tag");
        let status = self
            .process(source, "recv", "source")
            .receive_into_with_tag(buf, tag);
        let count = status.count(T::equivalent_datatype()) as usize;
        check_len(
            "recv",
            "the message",
            count,
            "the length of `buf`",
            buf.len(),
        );
    }

    /// [`recv`](Self::recv) with the tangent (the second message of
    /// [`send_fwd`](Self::send_fwd)).
    pub fn recv_fwd<T: CommFloat>(&self, buf: &mut [T], dbuf: &mut [T], source: usize, tag: usize) {
        check_dbuf("recv_fwd", buf.len(), dbuf.len());
        self.recv(buf, source, tag);
        self.recv(dbuf, source, tag);
    }

    /// The adjoint of [`recv`](Self::recv): sends `dbuf` back to `source` (received by
    /// its [`send_rev`](Self::send_rev)), then sets it to 0.
    pub fn recv_rev<T: CommFloat>(&self, buf: &mut [T], dbuf: &mut [T], source: usize, tag: usize) {
        check_dbuf("recv_rev", buf.len(), dbuf.len());
        self.send(&*dbuf, source, tag);
        zero(dbuf);
    }

    /// Sends `send` to `dest` and receives `recv` from `source` in one call (a halo
    /// exchange: no deadlock whatever the order of the ranks).
    pub fn sendrecv<T: CommFloat>(
        &self,
        send: &[T],
        dest: usize,
        recv: &mut [T],
        source: usize,
        tag: usize,
    ) {
        let t = to_c_int(tag, "sendrecv", "tag");
        let to = self.process(dest, "sendrecv", "dest");
        let from = self.process(source, "sendrecv", "source");
        let status = send_receive_into_with_tags(send, &to, t, recv, &from, t);
        let count = status.count(T::equivalent_datatype()) as usize;
        check_len(
            "sendrecv",
            "the message",
            count,
            "the length of `recv`",
            recv.len(),
        );
    }

    /// [`sendrecv`](Self::sendrecv) with tangents.
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        dest: usize,
        recv: &mut [T],
        drecv: &mut [T],
        source: usize,
        tag: usize,
    ) {
        check_shadows(
            "sendrecv_fwd",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        self.sendrecv(send, dest, recv, source, tag);
        self.sendrecv(dsend, dest, drecv, source, tag);
    }

    /// The adjoint of [`sendrecv`](Self::sendrecv): the reverse exchange, `drecv` back to
    /// `source` while the adjoint of `send` comes from `dest` into `dsend` (added); then
    /// `drecv = 0`.
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        dest: usize,
        recv: &mut [T],
        drecv: &mut [T],
        source: usize,
        tag: usize,
    ) {
        check_shadows(
            "sendrecv_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let mut adjoint = vec![T::zero(); send.len()];
        self.sendrecv(&*drecv, source, &mut adjoint, dest, tag);
        add_into(dsend, &adjoint);
        zero(drecv);
    }
}

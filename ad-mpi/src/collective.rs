//! Collectives and their derivatives (Enzyme's MPI adjoint rules): the adjoint of an
//! all-reduce sum is an all-reduce sum of the adjoints, of a broadcast a reduction to the
//! root, of a reduction a broadcast, of a gather a scatter and back, of an all-gather a
//! reduce-scatter, of an all-to-all an all-to-all; a maximum or minimum sends the whole
//! adjoint to the one rank that owned the extremum (the lowest such rank on ties).

use mpi::collective::SystemOperation;
use mpi::traits::*;

use crate::comm::{add_into, check_dbuf, check_len, check_shadows, zero, Comm, CommFloat};

impl Comm {
    // ----- all-reduce: sum -------------------------------------------------------------

    /// `recv[k] = Σ_ranks send[k]` on every rank.
    ///
    /// # Panics
    /// If `recv` and `send` differ in length.
    ///
    /// ```
    /// use ad_mpi::{initialize, Comm};
    ///
    /// let universe = initialize().unwrap();
    /// let comm = Comm::world(&universe);
    /// let p = comm.size() as f64;
    /// let (x, dx) = ([1.0, 2.0], [0.5, 0.0]);
    ///
    /// let (mut sum, mut dsum) = ([0.0; 2], [0.0; 2]);
    /// comm.allreduce_sum_fwd(&x, &dx, &mut sum, &mut dsum);
    /// assert_eq!((sum, dsum), ([p, 2.0 * p], [0.5 * p, 0.0]));
    ///
    /// // Reverse: every rank's x gets the sum of all ranks' adjoints of `sum`.
    /// let (mut xbar, mut sumbar) = ([0.0; 2], [1.0, 10.0]);
    /// comm.allreduce_sum_rev(&x, &mut xbar, &mut sum, &mut sumbar);
    /// assert_eq!((xbar, sumbar), ([p, 10.0 * p], [0.0; 2]));
    /// ```
    pub fn allreduce_sum<T: CommFloat>(&self, send: &[T], recv: &mut [T]) {
        check_len(
            "allreduce_sum",
            "recv",
            recv.len(),
            "the length of `send`",
            send.len(),
        );
        self.raw()
            .all_reduce_into(send, recv, SystemOperation::sum());
    }

    /// [`allreduce_sum`](Self::allreduce_sum) with tangents: `drecv = Σ_ranks dsend`.
    pub fn allreduce_sum_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.linear_fwd("allreduce_sum_fwd", send, dsend, recv, drecv, |c, s, r| {
            c.allreduce_sum(s, r)
        });
    }

    /// The adjoint of [`allreduce_sum`](Self::allreduce_sum): `dsend += Σ_ranks drecv`,
    /// then `drecv = 0` (the call overwrote `recv`).
    pub fn allreduce_sum_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        check_len(
            "allreduce_sum_rev",
            "recv",
            recv.len(),
            "the length of `send`",
            send.len(),
        );
        check_shadows(
            "allreduce_sum_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let mut total = vec![T::zero(); drecv.len()];
        self.raw()
            .all_reduce_into(&*drecv, &mut total[..], SystemOperation::sum());
        add_into(dsend, &total);
        zero(drecv);
    }

    /// `Σ_ranks x` on every rank.
    pub fn allreduce_sum_scalar<T: CommFloat>(&self, x: T) -> T {
        let mut y = T::zero();
        self.raw()
            .all_reduce_into(&x, &mut y, SystemOperation::sum());
        y
    }

    /// [`allreduce_sum_scalar`](Self::allreduce_sum_scalar) with its tangent (one
    /// all-reduce of the pair).
    pub fn allreduce_sum_scalar_fwd<T: CommFloat>(&self, x: T, dx: T) -> (T, T) {
        let mut out = [T::zero(); 2];
        self.raw()
            .all_reduce_into(&[x, dx][..], &mut out[..], SystemOperation::sum());
        (out[0], out[1])
    }

    /// The value and the adjoint of `x`: `Σ_ranks seed` (one all-reduce of the pair).
    pub fn allreduce_sum_scalar_rev<T: CommFloat>(&self, x: T, seed: T) -> (T, T) {
        self.allreduce_sum_scalar_fwd(x, seed)
    }

    // ----- all-reduce: max and min -----------------------------------------------------

    /// `recv[k] = max_ranks send[k]` on every rank.
    pub fn allreduce_max<T: CommFloat>(&self, send: &[T], recv: &mut [T]) {
        check_len(
            "allreduce_max",
            "recv",
            recv.len(),
            "the length of `send`",
            send.len(),
        );
        self.raw()
            .all_reduce_into(send, recv, SystemOperation::max());
    }

    /// [`allreduce_max`](Self::allreduce_max) with tangents: `drecv[k]` is the tangent of
    /// the rank that owns the maximum of element `k` (the lowest rank on ties).
    pub fn allreduce_max_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.extremum_fwd("allreduce_max_fwd", Extremum::Max, send, dsend, recv, drecv);
    }

    /// The adjoint of [`allreduce_max`](Self::allreduce_max): the rank that owns the
    /// maximum of element `k` (the lowest on ties) gets `dsend[k] += Σ_ranks drecv[k]`;
    /// then `drecv = 0`.
    ///
    /// ```
    /// use ad_mpi::{initialize, Comm};
    ///
    /// let universe = initialize().unwrap();
    /// let comm = Comm::world(&universe);
    /// // Element 0: every rank ties, rank 0 owns it. Element 1: the last rank owns it.
    /// let x = [1.0, comm.rank() as f64];
    /// let mut max = [0.0; 2];
    /// comm.allreduce_max(&x, &mut max);
    /// let (mut xbar, mut maxbar) = ([0.0; 2], [1.0, 1.0]);
    /// comm.allreduce_max_rev(&x, &mut xbar, &mut max, &mut maxbar);
    /// let p = comm.size() as f64;
    /// let owns = |yes: bool| if yes { p } else { 0.0 };
    /// assert_eq!(xbar, [owns(comm.rank() == 0), owns(comm.rank() + 1 == comm.size())]);
    /// ```
    pub fn allreduce_max_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.extremum_rev("allreduce_max_rev", Extremum::Max, send, dsend, recv, drecv);
    }

    /// `recv[k] = min_ranks send[k]` on every rank.
    pub fn allreduce_min<T: CommFloat>(&self, send: &[T], recv: &mut [T]) {
        check_len(
            "allreduce_min",
            "recv",
            recv.len(),
            "the length of `send`",
            send.len(),
        );
        self.raw()
            .all_reduce_into(send, recv, SystemOperation::min());
    }

    /// [`allreduce_min`](Self::allreduce_min) with tangents, as
    /// [`allreduce_max_fwd`](Self::allreduce_max_fwd).
    pub fn allreduce_min_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.extremum_fwd("allreduce_min_fwd", Extremum::Min, send, dsend, recv, drecv);
    }

    /// The adjoint of [`allreduce_min`](Self::allreduce_min), as
    /// [`allreduce_max_rev`](Self::allreduce_max_rev).
    pub fn allreduce_min_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.extremum_rev("allreduce_min_rev", Extremum::Min, send, dsend, recv, drecv);
    }

    /// `max_ranks x` on every rank.
    pub fn allreduce_max_scalar<T: CommFloat>(&self, x: T) -> T {
        let mut y = [T::zero()];
        self.allreduce_max(&[x], &mut y);
        y[0]
    }

    /// [`allreduce_max_scalar`](Self::allreduce_max_scalar) with the owner's tangent.
    pub fn allreduce_max_scalar_fwd<T: CommFloat>(&self, x: T, dx: T) -> (T, T) {
        let (mut y, mut dy) = ([T::zero()], [T::zero()]);
        self.allreduce_max_fwd(&[x], &[dx], &mut y, &mut dy);
        (y[0], dy[0])
    }

    /// The value, and the adjoint of `x`: `Σ_ranks seed` on the owner of the maximum,
    /// 0 elsewhere.
    pub fn allreduce_max_scalar_rev<T: CommFloat>(&self, x: T, seed: T) -> (T, T) {
        self.extremum_scalar_rev("allreduce_max_scalar_rev", Extremum::Max, x, seed)
    }

    /// `min_ranks x` on every rank.
    pub fn allreduce_min_scalar<T: CommFloat>(&self, x: T) -> T {
        let mut y = [T::zero()];
        self.allreduce_min(&[x], &mut y);
        y[0]
    }

    /// [`allreduce_min_scalar`](Self::allreduce_min_scalar) with the owner's tangent.
    pub fn allreduce_min_scalar_fwd<T: CommFloat>(&self, x: T, dx: T) -> (T, T) {
        let (mut y, mut dy) = ([T::zero()], [T::zero()]);
        self.allreduce_min_fwd(&[x], &[dx], &mut y, &mut dy);
        (y[0], dy[0])
    }

    /// The value, and the adjoint of `x`, as
    /// [`allreduce_max_scalar_rev`](Self::allreduce_max_scalar_rev).
    pub fn allreduce_min_scalar_rev<T: CommFloat>(&self, x: T, seed: T) -> (T, T) {
        self.extremum_scalar_rev("allreduce_min_scalar_rev", Extremum::Min, x, seed)
    }

    /// The value and the owner's adjoint of a scalar extremum.
    fn extremum_scalar_rev<T: CommFloat>(
        &self,
        method: &str,
        which: Extremum,
        x: T,
        seed: T,
    ) -> (T, T) {
        let mut y = [T::zero()];
        let owns = self.extremum_owners(method, which, &[x], &mut y);
        let total = self.allreduce_sum_scalar(seed);
        (y[0], if owns[0] { total } else { T::zero() })
    }

    /// Per element, the extremum and the lowest rank that holds it.
    fn extremum_owners<T: CommFloat>(
        &self,
        method: &str,
        which: Extremum,
        send: &[T],
        recv: &mut [T],
    ) -> Vec<bool> {
        check_len(
            method,
            "recv",
            recv.len(),
            "the length of `send`",
            send.len(),
        );
        let op = match which {
            Extremum::Max => SystemOperation::max(),
            Extremum::Min => SystemOperation::min(),
        };
        self.raw().all_reduce_into(send, recv, op);
        let (me, size) = (self.rank() as i32, self.size() as i32);
        let mine: Vec<i32> = send
            .iter()
            .zip(recv.iter())
            .map(|(x, y)| if x == y { me } else { size })
            .collect();
        let mut owner = vec![0_i32; mine.len()];
        self.raw()
            .all_reduce_into(&mine[..], &mut owner[..], SystemOperation::min());
        owner.iter().map(|&o| o == me).collect()
    }

    fn extremum_fwd<T: CommFloat>(
        &self,
        method: &str,
        which: Extremum,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        check_len(
            method,
            "dsend",
            dsend.len(),
            "the length of `send`",
            send.len(),
        );
        check_len(
            method,
            "drecv",
            drecv.len(),
            "the length of `recv`",
            recv.len(),
        );
        let owns = self.extremum_owners(method, which, send, recv);
        let part: Vec<T> = dsend
            .iter()
            .zip(&owns)
            .map(|(d, own)| if *own { *d } else { T::zero() })
            .collect();
        self.raw()
            .all_reduce_into(&part[..], drecv, SystemOperation::sum());
    }

    fn extremum_rev<T: CommFloat>(
        &self,
        method: &str,
        which: Extremum,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        check_len(
            method,
            "dsend",
            dsend.len(),
            "the length of `send`",
            send.len(),
        );
        check_len(
            method,
            "drecv",
            drecv.len(),
            "the length of `recv`",
            recv.len(),
        );
        let mut values = vec![T::zero(); send.len()];
        let owns = self.extremum_owners(method, which, send, &mut values);
        let mut total = vec![T::zero(); drecv.len()];
        self.raw()
            .all_reduce_into(&*drecv, &mut total[..], SystemOperation::sum());
        for ((d, t), own) in dsend.iter_mut().zip(&total).zip(&owns) {
            if *own {
                *d = *d + *t;
            }
        }
        zero(drecv);
    }

    // ----- reduce to a root, broadcast from it -----------------------------------------

    /// `recv[k] = Σ_ranks send[k]` on `root`; `recv` is not touched on other ranks (it may
    /// be empty there).
    pub fn reduce_sum<T: CommFloat>(&self, send: &[T], recv: &mut [T], root: usize) {
        let process = self.process(root, "reduce_sum", "root");
        if self.rank() == root {
            check_len(
                "reduce_sum",
                "recv",
                recv.len(),
                "the length of `send`, on the root",
                send.len(),
            );
            process.reduce_into_root(send, recv, SystemOperation::sum());
        } else {
            process.reduce_into(send, SystemOperation::sum());
        }
    }

    /// [`reduce_sum`](Self::reduce_sum) with tangents.
    pub fn reduce_sum_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
        root: usize,
    ) {
        self.linear_fwd("reduce_sum_fwd", send, dsend, recv, drecv, |c, s, r| {
            c.reduce_sum(s, r, root)
        });
    }

    /// The adjoint of [`reduce_sum`](Self::reduce_sum): the root broadcasts its `drecv`,
    /// every rank adds it into `dsend`, and the root's `drecv` becomes 0.
    pub fn reduce_sum_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
        root: usize,
    ) {
        check_shadows(
            "reduce_sum_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let process = self.process(root, "reduce_sum_rev", "root");
        let mut seed = if self.rank() == root {
            check_len(
                "reduce_sum_rev",
                "recv",
                recv.len(),
                "the length of `send`, on the root",
                send.len(),
            );
            drecv.to_vec()
        } else {
            vec![T::zero(); send.len()]
        };
        process.broadcast_into(&mut seed[..]);
        add_into(dsend, &seed);
        if self.rank() == root {
            zero(drecv);
        }
    }

    /// `buf` on every rank becomes `root`'s `buf`.
    pub fn bcast<T: CommFloat>(&self, buf: &mut [T], root: usize) {
        self.process(root, "bcast", "root").broadcast_into(buf);
    }

    /// [`bcast`](Self::bcast) with tangents.
    pub fn bcast_fwd<T: CommFloat>(&self, buf: &mut [T], dbuf: &mut [T], root: usize) {
        check_dbuf("bcast_fwd", buf.len(), dbuf.len());
        self.bcast(buf, root);
        self.bcast(dbuf, root);
    }

    /// The adjoint of [`bcast`](Self::bcast): the root's `dbuf` becomes `Σ_ranks dbuf`
    /// (a reduction to the root), the other ranks' `dbuf` becomes 0 (the call overwrote
    /// their `buf`).
    ///
    /// ```
    /// use ad_mpi::{initialize, Comm};
    ///
    /// let universe = initialize().unwrap();
    /// let comm = Comm::world(&universe);
    /// let mut buf = [if comm.rank() == 0 { 3.0 } else { 0.0 }];
    /// comm.bcast(&mut buf, 0);
    /// assert_eq!(buf, [3.0]);
    /// // Each rank's copy is used with weight 2: the root's value gets 2·P.
    /// let mut dbuf = [2.0];
    /// comm.bcast_rev(&mut buf, &mut dbuf, 0);
    /// let want = if comm.rank() == 0 { 2.0 * comm.size() as f64 } else { 0.0 };
    /// assert_eq!(dbuf, [want]);
    /// ```
    pub fn bcast_rev<T: CommFloat>(&self, buf: &mut [T], dbuf: &mut [T], root: usize) {
        check_dbuf("bcast_rev", buf.len(), dbuf.len());
        let process = self.process(root, "bcast_rev", "root");
        if self.rank() == root {
            let mut total = vec![T::zero(); dbuf.len()];
            process.reduce_into_root(&*dbuf, &mut total[..], SystemOperation::sum());
            dbuf.copy_from_slice(&total);
        } else {
            process.reduce_into(&*dbuf, SystemOperation::sum());
            zero(dbuf);
        }
    }

    /// `root`'s `x` on every rank.
    pub fn bcast_scalar<T: CommFloat>(&self, x: T, root: usize) -> T {
        let mut buf = [x];
        self.bcast(&mut buf, root);
        buf[0]
    }

    /// [`bcast_scalar`](Self::bcast_scalar) with its tangent (one broadcast of the pair).
    pub fn bcast_scalar_fwd<T: CommFloat>(&self, x: T, dx: T, root: usize) -> (T, T) {
        let mut buf = [x, dx];
        self.bcast(&mut buf, root);
        (buf[0], buf[1])
    }

    /// The value, and the adjoint of `x`: `Σ_ranks seed` on the root, 0 elsewhere.
    pub fn bcast_scalar_rev<T: CommFloat>(&self, x: T, seed: T, root: usize) -> (T, T) {
        let y = self.bcast_scalar(x, root);
        let mut d = [seed];
        self.bcast_rev(&mut [y], &mut d, root);
        (y, d[0])
    }

    // ----- gather, scatter, all-gather, all-to-all -------------------------------------

    /// `root`'s `recv` becomes the ranks' `send`s in rank order (`recv.len() = size ·
    /// send.len()` there); `recv` is not touched on other ranks.
    pub fn gather<T: CommFloat>(&self, send: &[T], recv: &mut [T], root: usize) {
        let process = self.process(root, "gather", "root");
        if self.rank() == root {
            check_len(
                "gather",
                "recv",
                recv.len(),
                "size · the length of `send`, on the root",
                self.size() * send.len(),
            );
            process.gather_into_root(send, recv);
        } else {
            process.gather_into(send);
        }
    }

    /// [`gather`](Self::gather) with tangents.
    pub fn gather_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
        root: usize,
    ) {
        self.linear_fwd("gather_fwd", send, dsend, recv, drecv, |c, s, r| {
            c.gather(s, r, root)
        });
    }

    /// The adjoint of [`gather`](Self::gather): the root scatters its `drecv`, every rank
    /// adds its part into `dsend`, and the root's `drecv` becomes 0.
    ///
    /// ```
    /// use ad_mpi::{initialize, Comm};
    ///
    /// let universe = initialize().unwrap();
    /// let comm = Comm::world(&universe);
    /// let (r, p) = (comm.rank(), comm.size());
    /// let root = 0;
    /// let send = [r as f64; 2];
    /// // Only the root's `recv` is used; elsewhere it may be empty.
    /// let n = if r == root { 2 * p } else { 0 };
    /// let mut recv = vec![0.0; n];
    /// comm.gather(&send, &mut recv, root);
    /// if r == root {
    ///     assert_eq!(recv[2 * (p - 1)], (p - 1) as f64);
    /// }
    /// // Adjoint: the root's weights (part q of drecv = q + 1) come back to rank q.
    /// let mut drecv: Vec<f64> = (0..n).map(|k| (k / 2 + 1) as f64).collect();
    /// let mut dsend = [0.0; 2];
    /// comm.gather_rev(&send, &mut dsend, &mut recv, &mut drecv, root);
    /// assert_eq!(dsend, [(r + 1) as f64; 2]);
    /// ```
    pub fn gather_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
        root: usize,
    ) {
        check_shadows(
            "gather_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let mut part = vec![T::zero(); send.len()];
        self.scatter(&*drecv, &mut part, root);
        add_into(dsend, &part);
        if self.rank() == root {
            zero(drecv);
        }
    }

    /// Every rank's `recv` becomes part `rank` of `root`'s `send` (`send.len() = size ·
    /// recv.len()` on the root; `send` is not read elsewhere and may be empty).
    pub fn scatter<T: CommFloat>(&self, send: &[T], recv: &mut [T], root: usize) {
        let process = self.process(root, "scatter", "root");
        if self.rank() == root {
            check_len(
                "scatter",
                "send",
                send.len(),
                "size · the length of `recv`, on the root",
                self.size() * recv.len(),
            );
            process.scatter_into_root(send, recv);
        } else {
            process.scatter_into(recv);
        }
    }

    /// [`scatter`](Self::scatter) with tangents.
    pub fn scatter_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
        root: usize,
    ) {
        self.linear_fwd("scatter_fwd", send, dsend, recv, drecv, |c, s, r| {
            c.scatter(s, r, root)
        });
    }

    /// The adjoint of [`scatter`](Self::scatter): the root gathers every `drecv` and adds
    /// them into its `dsend`; every `drecv` becomes 0.
    pub fn scatter_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
        root: usize,
    ) {
        check_shadows(
            "scatter_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let mut all = if self.rank() == root {
            vec![T::zero(); send.len()]
        } else {
            Vec::new()
        };
        self.gather(&*drecv, &mut all, root);
        if self.rank() == root {
            add_into(dsend, &all);
        }
        zero(drecv);
    }

    /// Every rank's `recv` becomes all ranks' `send`s in rank order (`recv.len() = size ·
    /// send.len()`).
    pub fn allgather<T: CommFloat>(&self, send: &[T], recv: &mut [T]) {
        check_len(
            "allgather",
            "recv",
            recv.len(),
            "size · the length of `send`",
            self.size() * send.len(),
        );
        self.raw().all_gather_into(send, recv);
    }

    /// [`allgather`](Self::allgather) with tangents.
    pub fn allgather_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.linear_fwd("allgather_fwd", send, dsend, recv, drecv, |c, s, r| {
            c.allgather(s, r)
        });
    }

    /// The adjoint of [`allgather`](Self::allgather): a reduce-scatter of the sums, `dsend
    /// += Σ_ranks drecv[rank·n .. (rank+1)·n]`; every `drecv` becomes 0.
    pub fn allgather_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        check_len(
            "allgather_rev",
            "recv",
            recv.len(),
            "size · the length of `send`",
            self.size() * send.len(),
        );
        check_shadows(
            "allgather_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let mut part = vec![T::zero(); send.len()];
        self.raw()
            .reduce_scatter_block_into(&*drecv, &mut part[..], SystemOperation::sum());
        add_into(dsend, &part);
        zero(drecv);
    }

    /// Part `q` of every rank's `send` goes to rank `q`, which stores it as part `rank`
    /// of its `recv` (`send` and `recv` of the same length, a multiple of the size).
    pub fn alltoall<T: CommFloat>(&self, send: &[T], recv: &mut [T]) {
        check_len(
            "alltoall",
            "recv",
            recv.len(),
            "the length of `send`",
            send.len(),
        );
        if send.len() % self.size() != 0 {
            panic!(
                "ad_mpi::Comm::alltoall: `send` has length {}, not a multiple of the size {}",
                send.len(),
                self.size()
            );
        }
        self.raw().all_to_all_into(send, recv);
    }

    /// [`alltoall`](Self::alltoall) with tangents.
    pub fn alltoall_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        self.linear_fwd("alltoall_fwd", send, dsend, recv, drecv, |c, s, r| {
            c.alltoall(s, r)
        });
    }

    /// The adjoint of [`alltoall`](Self::alltoall): an all-to-all of the adjoints back,
    /// added into `dsend`; `drecv` becomes 0.
    pub fn alltoall_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
    ) {
        check_shadows(
            "alltoall_rev",
            send.len(),
            dsend.len(),
            recv.len(),
            drecv.len(),
        );
        let mut back = vec![T::zero(); send.len()];
        self.alltoall(&*drecv, &mut back);
        add_into(dsend, &back);
        zero(drecv);
    }
}

impl Comm {
    /// The tangent of a linear communication is the same communication: `op` on the
    /// values, then on the tangents.
    fn linear_fwd<T: CommFloat>(
        &self,
        method: &str,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
        op: impl Fn(&Self, &[T], &mut [T]),
    ) {
        check_shadows(method, send.len(), dsend.len(), recv.len(), drecv.len());
        op(self, send, recv);
        op(self, dsend, drecv);
    }
}

/// Which extremum an all-reduce takes.
#[derive(Clone, Copy)]
enum Extremum {
    Max,
    Min,
}

/// A reduction operation for [`Comm::allreduce`], chosen at run time.
///
/// ```
/// use ad_mpi::{initialize, Comm, Op};
///
/// let universe = initialize().unwrap();
/// let comm = Comm::world(&universe);
/// let x = [2.0, -1.0];
/// let (mut y, mut ybar, mut xbar) = ([0.0; 2], [1.0; 2], [0.0; 2]);
/// comm.allreduce(&x, &mut y, Op::Max);
/// comm.allreduce_rev(&x, &mut xbar, &mut y, &mut ybar, Op::Max);
/// if comm.size() == 1 {
///     assert_eq!((y, xbar), (x, [1.0, 1.0]));
/// }
/// // A product has a value but no derivative here: its `_rev` panics and says so.
/// let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
///     comm.allreduce_rev(&x, &mut [0.0; 2], &mut [0.0; 2], &mut [1.0; 2], Op::Prod)
/// }));
/// let message = panic.unwrap_err().downcast::<String>().unwrap();
/// assert!(message.contains("`Op::Prod` has no derivative here"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Sum: differentiable.
    Sum,
    /// Maximum: differentiable (the adjoint goes to the owner, lowest rank on ties).
    Max,
    /// Minimum: differentiable, as `Max`.
    Min,
    /// Product: the primal only; its `_fwd` and `_rev` panic.
    Prod,
}

impl Comm {
    /// `recv[k] = op_ranks send[k]` on every rank, for an operation chosen by value.
    pub fn allreduce<T: CommFloat>(&self, send: &[T], recv: &mut [T], op: Op) {
        match op {
            Op::Sum => self.allreduce_sum(send, recv),
            Op::Max => self.allreduce_max(send, recv),
            Op::Min => self.allreduce_min(send, recv),
            Op::Prod => {
                check_len(
                    "allreduce",
                    "recv",
                    recv.len(),
                    "the length of `send`",
                    send.len(),
                );
                self.raw()
                    .all_reduce_into(send, recv, SystemOperation::product());
            }
        }
    }

    /// [`allreduce`](Self::allreduce) with tangents.
    ///
    /// # Panics
    /// For [`Op::Prod`], which has no derivative here.
    pub fn allreduce_fwd<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &[T],
        recv: &mut [T],
        drecv: &mut [T],
        op: Op,
    ) {
        match op {
            Op::Sum => self.allreduce_sum_fwd(send, dsend, recv, drecv),
            Op::Max => self.allreduce_max_fwd(send, dsend, recv, drecv),
            Op::Min => self.allreduce_min_fwd(send, dsend, recv, drecv),
            Op::Prod => unsupported("allreduce_fwd"),
        }
    }

    /// The adjoint of [`allreduce`](Self::allreduce).
    ///
    /// # Panics
    /// For [`Op::Prod`], which has no derivative here.
    pub fn allreduce_rev<T: CommFloat>(
        &self,
        send: &[T],
        dsend: &mut [T],
        recv: &mut [T],
        drecv: &mut [T],
        op: Op,
    ) {
        match op {
            Op::Sum => self.allreduce_sum_rev(send, dsend, recv, drecv),
            Op::Max => self.allreduce_max_rev(send, dsend, recv, drecv),
            Op::Min => self.allreduce_min_rev(send, dsend, recv, drecv),
            Op::Prod => unsupported("allreduce_rev"),
        }
    }
}

/// The panic of a derivative of an operation that has none.
fn unsupported(method: &str) -> ! {
    panic!(
        "ad_mpi::Comm::{method}: the reduction `Op::Prod` has no derivative here \
         (supported: Op::Sum, Op::Max, Op::Min); for a product of positive values, \
         all-reduce the sum of their logarithms and take `exp`"
    )
}

//! The communicator, its plain methods, and the checks every method shares.

use mpi::datatype::Equivalence;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use num_traits::Float;

/// A float that [`Comm`] can communicate and differentiate: `f32` or `f64`.
pub trait CommFloat: Float + Equivalence + Send + Sync + std::fmt::Debug + 'static {}

impl CommFloat for f32 {}
impl CommFloat for f64 {}

/// A communicator whose methods have derivatives: each communication method `m` comes
/// with `m_fwd` (tangents travel with the values) and `m_rev` (the adjoint
/// communication, Enzyme's rules), in the calling convention of `#[differentiate]`, so a
/// differentiated function that takes `comm: &Comm` and calls `comm.m(..)` gets
/// `comm.m_fwd(..)` and `comm.m_rev(..)` in its derivatives.
///
/// The `_rev` methods update the shadows only: the primal buffers they are passed (the
/// values at the time of the call) are read where the adjoint needs them and left as
/// they are. Ranks are `usize`; every rank must call a collective with the same lengths
/// and root, as MPI requires.
///
/// # Example
///
/// A shift around the ring of ranks (each rank's `x` goes to the next rank), its tangent
/// and its adjoint, checked by the dot-product test `Σ_r ȳ·ẏ = Σ_r x̄·ẋ`. Runs on one
/// process (the ring is the rank itself) and under `mpirun -n P`.
///
/// ```
/// use ad_mpi::{initialize, Comm};
///
/// let universe = initialize().unwrap();
/// let comm = Comm::world(&universe);
/// let (r, p) = (comm.rank(), comm.size());
/// let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
///
/// let x = [r as f64, 1.0 + r as f64];
/// let x_dot = [0.5, -1.0 + r as f64];
/// let (mut y, mut y_dot) = ([0.0; 2], [0.0; 2]);
/// comm.sendrecv_fwd(&x, &x_dot, next, &mut y, &mut y_dot, prev, 7);
/// assert_eq!(y, [prev as f64, 1.0 + prev as f64]);
///
/// let y_bar = [2.0 + r as f64, 3.0];
/// let (mut x_bar, mut y_bar_left) = ([0.0; 2], y_bar);
/// comm.sendrecv_rev(&x, &mut x_bar, next, &mut y, &mut y_bar_left, prev, 7);
/// assert_eq!(y_bar_left, [0.0; 2]); // the exchange overwrote y
///
/// let dot = |a: &[f64; 2], b: &[f64; 2]| a[0] * b[0] + a[1] * b[1];
/// let forward = comm.allreduce_sum_scalar(dot(&y_bar, &y_dot));
/// let reverse = comm.allreduce_sum_scalar(dot(&x_bar, &x_dot));
/// assert!((forward - reverse).abs() <= 1e-12 * forward.abs().max(1.0));
/// ```
pub struct Comm {
    raw: SimpleCommunicator,
    /// Nonblocking operations posted and not yet completed, oldest first.
    pub(crate) requests: std::cell::RefCell<crate::nonblocking::Requests>,
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

impl Comm {
    /// Wraps an rsmpi communicator.
    pub fn new(raw: SimpleCommunicator) -> Self {
        Comm {
            raw,
            requests: Default::default(),
        }
    }

    /// `MPI_COMM_WORLD` of an initialized MPI ([`crate::initialize`]).
    pub fn world(universe: &mpi::environment::Universe) -> Self {
        Comm::new(universe.world())
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.raw.rank() as usize
    }

    /// The number of processes.
    pub fn size(&self) -> usize {
        self.raw.size() as usize
    }

    /// The communicator of the processes that pass the same `color`, ranked by `key`
    /// (ties by rank here), as `MPI_Comm_split`.
    ///
    /// ```
    /// let universe = ad_mpi::initialize().unwrap();
    /// let world = ad_mpi::Comm::world(&universe);
    /// // Even and odd ranks in two communicators.
    /// let half = world.split(world.rank() % 2, world.rank());
    /// assert_eq!(half.rank(), world.rank() / 2);
    /// assert_eq!(half.size(), (world.size() + 1 - world.rank() % 2) / 2);
    /// ```
    pub fn split(&self, color: usize, key: usize) -> Comm {
        let color = Color::with_value(to_c_int(color, "split", "color"));
        let raw = self
            .raw
            .split_by_color_with_key(color, to_c_int(key, "split", "key"))
            .expect("a process with a color gets a communicator");
        Comm::new(raw)
    }

    /// Waits until every process has called it. No floats move, so it has no derivative:
    /// a differentiated function's derivatives call `barrier` itself where the function
    /// does.
    pub fn barrier(&self) {
        self.raw.barrier();
    }

    /// The rsmpi communicator, for calls this type does not wrap.
    pub fn raw(&self) -> &SimpleCommunicator {
        &self.raw
    }

    /// The process of `rank`, checked against the size.
    pub(crate) fn process(
        &self,
        rank: usize,
        method: &str,
        param: &str,
    ) -> mpi::topology::Process<'_> {
        let size = self.size();
        if rank >= size {
            panic!("ad_mpi::Comm::{method}: `{param}` = {rank} is not a rank (size {size})");
        }
        self.raw.process_at_rank(rank as i32)
    }
}

/// A communicator must not end with nonblocking operations in flight: MPI may still read
/// or write their buffers. They are leaked, and the drop panics naming them (unless the
/// thread is already panicking).
impl Drop for Comm {
    fn drop(&mut self) {
        let left = self.requests.get_mut().abandon();
        if !left.is_empty() && !std::thread::panicking() {
            panic!(
                "ad_mpi::Comm dropped with {} nonblocking operation(s) never completed: {}",
                left.len(),
                left.join(", ")
            );
        }
    }
}

/// `value` as a C int, or a panic naming the method and parameter.
pub(crate) fn to_c_int(value: usize, method: &str, param: &str) -> i32 {
    i32::try_from(value).unwrap_or_else(|_| {
        panic!("ad_mpi::Comm::{method}: `{param}` = {value} does not fit an MPI int")
    })
}

/// Panics unless `got == want`, naming the method and both lengths.
pub(crate) fn check_len(method: &str, param: &str, got: usize, what: &str, want: usize) {
    if got != want {
        panic!("ad_mpi::Comm::{method}: `{param}` has length {got}, expected {want} ({what})");
    }
}

/// Panics unless the shadow `dbuf` has the length of `buf`.
pub(crate) fn check_dbuf(method: &str, buf: usize, dbuf: usize) {
    check_len(method, "dbuf", dbuf, "the length of `buf`", buf);
}

/// Panics unless the shadows `dsend` and `drecv` have the lengths of `send` and `recv`.
pub(crate) fn check_shadows(method: &str, send: usize, dsend: usize, recv: usize, drecv: usize) {
    check_len(method, "dsend", dsend, "the length of `send`", send);
    check_len(method, "drecv", drecv, "the length of `recv`", recv);
}

/// `acc[k] += add[k]`.
pub(crate) fn add_into<T: CommFloat>(acc: &mut [T], add: &[T]) {
    for (a, b) in acc.iter_mut().zip(add) {
        *a = *a + *b;
    }
}

/// Sets every element to zero.
pub(crate) fn zero<T: CommFloat>(buf: &mut [T]) {
    buf.iter_mut().for_each(|x| *x = T::zero());
}

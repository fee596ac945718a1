//! Fixed-size blocks of iterations: the parallel `for_each` and the
//! deterministic `sum` built on them.

use std::ops::{Add, Range};

use num_traits::Zero;
use rayon::prelude::*;

/// Iterations per block.
///
/// Fixed, not derived from the thread count, so that the partition of a range
/// into blocks — and therefore the order in which floating-point partial sums
/// are formed and combined — is the same on 1 thread and on 64. 512 iterations
/// amortize rayon's per-task cost while leaving many blocks for load balance.
pub const BLOCK: usize = 512;

/// Number of blocks covering `range` (0 for an empty range).
pub fn block_count(range: &Range<usize>) -> usize {
    range.len().div_ceil(BLOCK)
}

/// The iterations of block `k` of `range`:
/// `[start + k*BLOCK, min(end, start + (k+1)*BLOCK))`.
///
/// ```
/// use ad_rayon::{block_count, block_range, BLOCK};
///
/// let range = 10..(10 + 2 * BLOCK + 3);
/// assert_eq!(block_count(&range), 3);
/// assert_eq!(block_range(&range, 1), (10 + BLOCK)..(10 + 2 * BLOCK));
/// assert_eq!(block_range(&range, 2).len(), 3); // the last block is short
/// ```
pub fn block_range(range: &Range<usize>, k: usize) -> Range<usize> {
    let lo = range.start + k * BLOCK;
    lo..range.end.min(lo + BLOCK)
}

/// Runs `body(i)` for every `i` in `range`: blocks in parallel, the
/// iterations of a block serially in increasing order. An empty range does
/// nothing.
///
/// Used for the adjoint of `(a..b).into_par_iter().for_each(..)` whose body
/// writes nothing shared (or only through [`AtomicF64Slice`](crate::AtomicF64Slice)).
///
/// ```
/// use ad_rayon::for_each;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let visited: Vec<AtomicUsize> = (0..2000).map(|_| AtomicUsize::new(0)).collect();
/// for_each(0..2000, |i| {
///     visited[i].fetch_add(1, Ordering::Relaxed);
/// });
/// assert!(visited.iter().all(|v| v.load(Ordering::Relaxed) == 1));
/// ```
pub fn for_each<F>(range: Range<usize>, body: F)
where
    F: Fn(usize) + Sync + Send,
{
    (0..block_count(&range))
        .into_par_iter()
        .for_each(|k| block_range(&range, k).for_each(&body));
}

/// Sums `f(i)` over `range`, componentwise, bitwise independent of the
/// number of threads: each block is summed left to right from zero, then the
/// block partials are added serially in block order. An empty range gives
/// zeros.
///
/// Used for `.par_iter().map(..).sum()` and for scalar adjoints accumulated
/// inside a parallel loop (`K` of them at once).
///
/// ```
/// use ad_rayon::sum;
///
/// // Σ 1/i² over 1..10⁵ in parallel; the same bits as on a single thread.
/// let [s] = sum(1..100_000, |i| [1.0 / (i as f64 * i as f64)]);
/// let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let [s1] = one_thread.install(|| sum(1..100_000, |i| [1.0 / (i as f64 * i as f64)]));
/// assert_eq!(s.to_bits(), s1.to_bits());
/// assert!((s - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-4);
/// ```
pub fn sum<T, const K: usize, F>(range: Range<usize>, f: F) -> [T; K]
where
    T: Copy + Send + Sync + Add<Output = T> + Zero,
    F: Fn(usize) -> [T; K] + Sync,
{
    let partials: Vec<[T; K]> = (0..block_count(&range))
        .into_par_iter()
        .map(|k| block_range(&range, k).fold(zeros(), |acc, i| add_into(acc, f(i))))
        .collect();
    combine_in_order(partials)
}

/// `[0; K]` for any [`Zero`] type.
pub(crate) fn zeros<T: Copy + Zero, const K: usize>() -> [T; K] {
    [T::zero(); K]
}

/// `acc + terms`, componentwise.
pub(crate) fn add_into<T, const K: usize>(mut acc: [T; K], terms: [T; K]) -> [T; K]
where
    T: Copy + Add<Output = T>,
{
    for (a, t) in acc.iter_mut().zip(terms) {
        *a = *a + t;
    }
    acc
}

/// Adds block partials serially in block order (the deterministic second stage).
pub(crate) fn combine_in_order<T, const K: usize>(partials: Vec<[T; K]>) -> [T; K]
where
    T: Copy + Add<Output = T> + Zero,
{
    partials.into_iter().fold(zeros(), add_into)
}

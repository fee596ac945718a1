//! Private accumulators: a deterministic scatter for adjoint `+=` at
//! unknown indices, into `lanes` zeroed copies of the target that are
//! reduced in lane order at the end.

use std::ops::{Add, Range};
use std::sync::OnceLock;

use num_traits::Zero;
use rayon::prelude::*;

use crate::blocks::{block_count, block_range, BLOCK};

/// Default memory limit for private copies: generated code privatizes only
/// when `(threads - 1) * len * elem_bytes` is at most this (`threads` of the
/// current rayon pool; lane 0 adds into the target itself), and falls back
/// to atomics ([`AtomicF64Slice`](crate::AtomicF64Slice)) above it.
/// Overridden by [`PRIVATE_MAX_BYTES_ENV`].
pub const PRIVATE_MAX_BYTES: usize = 64 << 20;

/// Environment variable overriding [`PRIVATE_MAX_BYTES`] (a byte count,
/// e.g. `PHIDIFF_PRIVATE_MAX_BYTES=0` forces atomics). Read once, at the
/// first [`private_max_bytes`] call.
pub const PRIVATE_MAX_BYTES_ENV: &str = "PHIDIFF_PRIVATE_MAX_BYTES";

/// The memory limit in force: [`PRIVATE_MAX_BYTES_ENV`] if set, else
/// [`PRIVATE_MAX_BYTES`].
///
/// # Panics
/// If the environment variable is set but not a non-negative integer.
pub fn private_max_bytes() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| match std::env::var(PRIVATE_MAX_BYTES_ENV) {
        Ok(text) => text.trim().parse().unwrap_or_else(|_| {
            panic!("{PRIVATE_MAX_BYTES_ENV}={text:?} is not a byte count (non-negative integer)")
        }),
        Err(_) => PRIVATE_MAX_BYTES,
    })
}

/// Whether the private copies of a scatter target of `len` elements of
/// `elem_bytes` bytes each fit in [`private_max_bytes`]: one copy per thread
/// of the current rayon pool but the first, so on one thread always.
/// [`for_each_owned_scatter`](crate::for_each_owned_scatter) privatizes when
/// true and adds atomically when false.
///
/// ```
/// use ad_rayon::private_fits;
///
/// let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert!(one_thread.install(|| private_fits(usize::MAX / 8, 8))); // no copy needed
/// let two_threads = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// assert!(!two_threads.install(|| private_fits(usize::MAX / 8, 8)));
/// ```
pub fn private_fits(len: usize, elem_bytes: usize) -> bool {
    (rayon::current_num_threads().max(1) - 1)
        .checked_mul(len)
        .and_then(|n| n.checked_mul(elem_bytes))
        .is_some_and(|bytes| bytes <= private_max_bytes())
}

/// One lane's private copy, as the [`scatter_private`] body sees it.
#[derive(Debug)]
pub struct Acc<'a, T> {
    data: &'a mut [T],
}

impl<T: Copy + Add<Output = T>> Acc<'_, T> {
    /// `private[index] += value`.
    ///
    /// # Panics
    /// If `index` is out of bounds of the target.
    pub fn add(&mut self, index: usize, value: T) {
        let len = self.data.len();
        let Some(cell) = self.data.get_mut(index) else {
            panic!("scatter_private: index {index} out of bounds for target length {len}");
        };
        *cell = *cell + value;
    }
}

/// Runs `f(i, acc)` for every `i` in `range`, where `acc.add(j, v)` adds
/// into a private zeroed copy of `target`; then `target[j] += lane_0[j] +
/// lane_1[j] + ...` in lane order.
///
/// Blocks of `range` are dealt round-robin to the lanes (lane `l` gets
/// blocks `l, l + lanes, ...`, serially in order; lanes run in parallel),
/// so for a fixed `lanes` the result is bitwise independent of the thread
/// count. Lanes beyond the number of blocks are not allocated.
///
/// # Panics
/// If `lanes` is 0, or `f` adds outside `target`.
///
/// ```
/// use ad_rayon::scatter_private;
///
/// // The adjoint of a gather y_i = x[idx_i]: x̄[idx_i] += ȳ_i, at computed indices.
/// let idx: Vec<usize> = (0..10_000).map(|i| (i * 7919) % 100).collect();
/// let ybar = vec![1.0_f64; 10_000];
/// let mut xbar = vec![0.0_f64; 100];
/// scatter_private(0..10_000, &mut xbar, 4, |i, acc| acc.add(idx[i], ybar[i]));
/// assert_eq!(xbar, vec![100.0; 100]); // 7919 is prime: every index 100 times
/// ```
pub fn scatter_private<T, F>(range: Range<usize>, target: &mut [T], lanes: usize, f: F)
where
    T: Copy + Send + Sync + Add<Output = T> + Zero,
    F: Fn(usize, &mut Acc<'_, T>) + Sync,
{
    assert!(lanes > 0, "scatter_private: lanes must be at least 1");
    let n_blocks = block_count(&range);
    if n_blocks == 0 {
        return;
    }
    let lanes = lanes.min(n_blocks);
    let mut copies = vec![T::zero(); lanes * target.len()];
    if target.is_empty() {
        // Every add would panic; run the bodies serially to report it.
        let mut acc = Acc {
            data: &mut copies[..],
        };
        range.for_each(|i| f(i, &mut acc));
        return;
    }
    copies
        .par_chunks_mut(target.len())
        .enumerate()
        .for_each(|(lane, data)| {
            let mut acc = Acc { data };
            for k in (lane..n_blocks).step_by(lanes) {
                block_range(&range, k).for_each(|i| f(i, &mut acc));
            }
        });
    reduce_lanes(target, &copies);
}

/// `target[j] += copies[0][j] + copies[1][j] + ...` (copies of
/// `target.len()` each), in lane order, parallel over `j`.
fn reduce_lanes<T>(target: &mut [T], copies: &[T])
where
    T: Copy + Send + Sync + Add<Output = T>,
{
    let len = target.len();
    target
        .par_iter_mut()
        .with_min_len(BLOCK)
        .enumerate()
        .for_each(|(j, t)| {
            let mut lanes = copies[j..].iter().step_by(len).copied();
            let first = lanes.next().expect("at least one lane");
            *t = *t + lanes.fold(first, |s, x| s + x);
        });
}

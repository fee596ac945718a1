//! The CPU launcher: an element function run for every index, in parallel with rayon.

use rayon::prelude::*;

/// Runs `kernel(i)` for every `i` in `0..n`, in parallel (the CPU counterpart of a kernel
/// launch with one thread per element). Like a kernel, the body writes shared memory only
/// through types safe to share (atomics, or `phidiff::par`'s owned buffers in generated
/// code).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// // Σ i over 0..10⁴ by "threads" that each add their index.
/// let total = AtomicU64::new(0);
/// ad_cuda::cpu::for_each(10_000, |i| {
///     total.fetch_add(i as u64, Ordering::Relaxed);
/// });
/// assert_eq!(total.into_inner(), 49_995_000);
/// ```
pub fn for_each(n: usize, kernel: impl Fn(usize) + Sync + Send) {
    (0..n).into_par_iter().for_each(kernel);
}

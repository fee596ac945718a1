//! The CPU launcher: an element function run for every index, in parallel with rayon.

use rayon::prelude::*;

/// Runs `kernel(i)` for every `i` in `0..n`, in parallel (the CPU counterpart of a kernel
/// launch with one thread per element).
pub fn for_each(n: usize, kernel: impl Fn(usize) + Sync + Send) {
    (0..n).into_par_iter().for_each(kernel);
}

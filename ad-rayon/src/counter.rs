//! Count of atomic float adds executed, behind the `count-atomics` feature,
//! so tests and benchmarks can check "zero atomics where the index is owned".

#[cfg(feature = "count-atomics")]
static ATOMIC_OPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Records one atomic add (compiles to nothing without `count-atomics`).
#[inline(always)]
pub(crate) fn count_atomic_op() {
    #[cfg(feature = "count-atomics")]
    ATOMIC_OPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Atomic float adds executed since the start or the last
/// [`reset_atomic_ops`]; always 0 without the `count-atomics` feature.
///
/// ```
/// use ad_rayon::{atomic_ops, for_each_owned, reset_atomic_ops};
///
/// // An owned loop adds without atomics, with or without the feature.
/// reset_atomic_ops();
/// let mut grad = vec![0.0_f64; 100];
/// for_each_owned(0..100, (&mut grad,), |i, (g,)| g.add(i, 1.0));
/// assert_eq!(atomic_ops(), 0);
/// ```
pub fn atomic_ops() -> usize {
    #[cfg(feature = "count-atomics")]
    return ATOMIC_OPS.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(feature = "count-atomics"))]
    0
}

/// Sets the [`atomic_ops`] count back to 0 (does nothing without `count-atomics`).
pub fn reset_atomic_ops() {
    #[cfg(feature = "count-atomics")]
    ATOMIC_OPS.store(0, std::sync::atomic::Ordering::Relaxed);
}

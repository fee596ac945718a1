//! Atomic float adds into a slice: the scatter of last resort, for adjoint
//! `+=` at unknown indices into arrays too large to privatize. The only
//! path whose result may depend on the thread count (addition order).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::counter::count_atomic_op;

macro_rules! atomic_float_slice {
    ($(#[$doc:meta])* $name:ident, $float:ty, $atomic:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'a> {
            cells: &'a [$atomic],
        }

        impl<'a> $name<'a> {
            /// Views `data` as atomics for as long as it is borrowed.
            ///
            /// # Panics
            /// If `data` is not aligned for the atomic type (only possible on
            /// targets where the float's alignment is smaller than its size).
            pub fn new(data: &'a mut [$float]) -> Self {
                assert!(
                    data.as_ptr().align_offset(std::mem::align_of::<$atomic>()) == 0,
                    "{}::new: data is not aligned for {}",
                    stringify!($name),
                    stringify!($atomic)
                );
                // SAFETY: the atomic has the same size and bit validity as the
                // float's bits (std docs), alignment was checked above, and the
                // exclusive borrow of `data` is held for 'a, so every access
                // during 'a goes through these atomics.
                let cells = unsafe { &*(data as *mut [$float] as *const [$atomic]) };
                Self { cells }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                self.cells.len()
            }

            /// Whether the slice has no elements.
            pub fn is_empty(&self) -> bool {
                self.cells.is_empty()
            }

            /// `data[index] += value`, atomically (compare-exchange loop on
            /// the bits). Relaxed ordering: rayon's join at the end of the
            /// parallel loop orders these adds before any later read.
            ///
            /// # Panics
            /// If `index` is out of bounds.
            pub fn add(&self, index: usize, value: $float) {
                let Some(cell) = self.cells.get(index) else {
                    panic!(
                        "{}::add: index {index} out of bounds for length {}",
                        stringify!($name),
                        self.cells.len()
                    );
                };
                count_atomic_op();
                let mut bits = cell.load(Ordering::Relaxed);
                loop {
                    let sum = (<$float>::from_bits(bits) + value).to_bits();
                    match cell.compare_exchange_weak(bits, sum, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) => return,
                        Err(now) => bits = now,
                    }
                }
            }
        }
    };
}

atomic_float_slice!(
    /// A `&mut [f64]` shared between threads for atomic `+=`.
    ///
    /// ```
    /// use ad_rayon::{for_each, AtomicF64Slice};
    ///
    /// // A histogram filled from every iteration of a parallel loop.
    /// let mut counts = vec![0.0_f64; 4];
    /// let cells = AtomicF64Slice::new(&mut counts);
    /// for_each(0..1000, |i| cells.add(i % 4, 1.0));
    /// assert_eq!(cells.len(), 4);
    /// assert_eq!(counts, [250.0; 4]);
    /// ```
    AtomicF64Slice,
    f64,
    AtomicU64
);

atomic_float_slice!(
    /// A `&mut [f32]` shared between threads for atomic `+=`.
    ///
    /// ```
    /// use ad_rayon::{for_each, AtomicF32Slice};
    ///
    /// let mut total = [0.0_f32];
    /// let cell = AtomicF32Slice::new(&mut total);
    /// for_each(0..100, |_| cell.add(0, 0.5));
    /// assert_eq!(total, [50.0]); // exact: every partial sum is representable
    /// ```
    AtomicF32Slice,
    f32,
    AtomicU32
);

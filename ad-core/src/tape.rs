//! The direct-indexed tape: values saved by the forward sweep for the reverse
//! sweep, addressed by loop iteration.

use core::ops::{Index, IndexMut};
use std::cell::Cell;

thread_local! {
    /// Bytes of tape capacity allocated on this thread, ever (see [`TapeMeter`]).
    static TAPE_BYTES_ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn record_growth(bytes: usize) {
    TAPE_BYTES_ALLOCATED.with(|c| c.set(c.get().wrapping_add(bytes)));
}

/// Counts the bytes of [`Tape`] memory allocated on the current thread while it lives:
/// how benchmarks report the tape size of a generated `_rev` call.
///
/// ```
/// use ad_core::{Tape, TapeMeter};
///
/// let meter = TapeMeter::start();
/// let mut tape = Tape::<f64>::new();
/// tape.ensure(1000);
/// assert!(meter.bytes() >= 8000);
/// ```
#[derive(Debug)]
pub struct TapeMeter {
    start: usize,
}

impl TapeMeter {
    /// Starts counting from now.
    pub fn start() -> Self {
        TapeMeter {
            start: TAPE_BYTES_ALLOCATED.with(Cell::get),
        }
    }

    /// Bytes of tape allocated on this thread since [`start`](Self::start) (growth of
    /// capacity; memory freed meanwhile is not subtracted).
    pub fn bytes(&self) -> usize {
        TAPE_BYTES_ALLOCATED
            .with(Cell::get)
            .wrapping_sub(self.start)
    }
}

/// A direct-indexed tape of saved values.
///
/// Generated reverse code writes the value it needs later into the slot of
/// the iteration that produced it — `tape.set(i, v)` in a loop over `i`,
/// `tape.set(i * m + j, v)` for a nest flattened row-major — and reads it
/// back with `tape.get(i)` in the reversed loop. Slots are never pushed or
/// popped, so the reverse loop may run in any order or in parallel.
///
/// Where the trip count is known the tape is sized once at loop entry
/// ([`ensure`](Self::ensure) with the count); `while`/`loop` call `ensure`
/// as iterations go, which grows with amortized doubling.
///
/// ```
/// use ad_core::Tape;
///
/// let x = [0.5_f64, 1.0, 1.5];
/// let mut tape = Tape::new();
/// tape.ensure(x.len());
/// let mut y = 1.0;
/// for (i, &xi) in x.iter().enumerate() {
///     tape.set(i, y); // y before the update, needed by the adjoint of y *= xi
///     y *= xi;
/// }
/// // Reverse sweep: ∂y/∂x_i is the product of the other x_j.
/// let (mut y_bar, mut x_bar) = (1.0, [0.0; 3]);
/// for i in (0..x.len()).rev() {
///     x_bar[i] += y_bar * tape.get(i);
///     y_bar *= x[i];
/// }
/// assert_eq!(x_bar, [1.5, 0.75, 0.5]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Tape<T> {
    data: Vec<T>,
}

impl<T: Copy + Default> Tape<T> {
    /// An empty tape; allocates nothing.
    pub fn new() -> Self {
        Tape { data: Vec::new() }
    }

    /// An empty tape with room for `capacity` slots before reallocating.
    ///
    /// ```
    /// let tape = ad_core::Tape::<f64>::with_capacity(100);
    /// assert_eq!(tape.len(), 0);
    /// assert!(tape.bytes() >= 800);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        let data = Vec::with_capacity(capacity);
        record_growth(data.capacity() * core::mem::size_of::<T>());
        Tape { data }
    }

    /// Makes slots `0..len` addressable, filling new ones with
    /// `T::default()`; never shrinks. Growth is amortized (capacity at
    /// least doubles), so calling it once per iteration is cheap.
    ///
    /// ```
    /// let mut tape = ad_core::Tape::<f64>::new();
    /// tape.ensure(4);
    /// tape.ensure(2);
    /// assert_eq!(tape.len(), 4);
    /// assert_eq!(tape.get(3), 0.0);
    /// ```
    #[inline]
    pub fn ensure(&mut self, len: usize) {
        if len > self.data.len() {
            let before = self.data.capacity();
            self.data.resize(len, T::default());
            record_growth((self.data.capacity() - before) * core::mem::size_of::<T>());
        }
    }

    /// All slots, for a parallel loop whose iteration `i` writes slot `i` (the
    /// direct-indexed tape of ParDiff: iterations own their slots).
    #[inline]
    pub fn slots_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// Stores `value` in slot `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn set(&mut self, i: usize, value: T) {
        self.data[i] = value;
    }

    /// The value in slot `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn get(&self, i: usize) -> T {
        self.data[i]
    }

    /// The number of addressable slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tape has no slots.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Memory held by the tape in bytes (allocated capacity, not just the
    /// slots in use), for benchmarks' tape-size reports.
    pub fn bytes(&self) -> usize {
        self.data.capacity() * core::mem::size_of::<T>()
    }

    /// All slots, in index order.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// All slots, mutably (e.g. to split among threads).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }
}

impl<T> Index<usize> for Tape<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.data[i]
    }
}

impl<T> IndexMut<usize> for Tape<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.data[i]
    }
}

#[cfg(test)]
mod tests {
    use super::Tape;
    use crate::Dual;

    #[test]
    fn ensure_grows_with_defaults_and_never_shrinks() {
        let mut tape = Tape::<f64>::new();
        assert!(tape.is_empty());
        assert_eq!(tape.bytes(), 0);
        tape.ensure(3);
        assert_eq!(tape.len(), 3);
        assert_eq!(tape.as_slice(), &[0.0; 3]);
        tape.set(2, 5.0);
        tape.ensure(1);
        assert_eq!((tape.len(), tape.get(2)), (3, 5.0));
        tape.ensure(10);
        assert_eq!((tape.len(), tape.get(2), tape.get(9)), (10, 5.0, 0.0));
        assert!(tape.bytes() >= 10 * 8);
    }

    #[test]
    fn growth_one_slot_at_a_time_is_amortized() {
        let mut tape = Tape::<u32>::new();
        let mut reallocations = 0;
        let mut capacity = tape.bytes();
        for i in 0..10_000 {
            tape.ensure(i + 1);
            tape.set(i, i as u32);
            if tape.bytes() != capacity {
                reallocations += 1;
                capacity = tape.bytes();
            }
        }
        assert!(reallocations < 20, "{reallocations} reallocations");
        assert!((0..10_000).all(|i| tape.get(i) == i as u32));
    }

    #[test]
    fn flattened_nest_slots_and_indexing() {
        let (n, m) = (3, 4);
        let mut tape = Tape::<Dual<f64>>::with_capacity(n * m);
        tape.ensure(n * m);
        for i in 0..n {
            for j in 0..m {
                tape.set(i * m + j, Dual::new(i as f64, j as f64));
            }
        }
        tape[5].eps += 10.0;
        assert_eq!((tape[5].re, tape[5].eps), (1.0, 11.0));
        assert_eq!(tape.get(2 * m + 3).eps, 3.0);
        tape.as_mut_slice()[0] = Dual::new(-1.0, -1.0);
        assert_eq!(tape.get(0).re, -1.0);
    }

    #[test]
    #[should_panic]
    fn reading_past_the_end_panics() {
        let tape = Tape::<f64>::new();
        let _ = tape.get(0);
    }
}

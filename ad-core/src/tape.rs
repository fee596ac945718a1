//! The direct-indexed tape: values saved by the forward sweep for the reverse
//! sweep, addressed by loop iteration.

use core::ops::{Index, IndexMut};
use core::ptr::NonNull;
use core::slice::SliceIndex;
use std::alloc::Layout;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// Bytes of the blocks held by this thread's live tapes.
    static TAPE_BYTES_LIVE: Cell<usize> = const { Cell::new(0) };
    /// The most `TAPE_BYTES_LIVE` has been since the innermost live [`TapeMeter`] started.
    static TAPE_BYTES_PEAK: Cell<usize> = const { Cell::new(0) };
}

/// A tape took a block of `add` bytes and gave back one of `sub` bytes.
fn record_blocks(add: usize, sub: usize) {
    TAPE_BYTES_LIVE.with(|live| {
        // Saturating: a tape moved to another thread is dropped there.
        let now = live.get().saturating_add(add).saturating_sub(sub);
        live.set(now);
        TAPE_BYTES_PEAK.with(|peak| peak.set(peak.get().max(now)));
    });
}

/// Measures the tape memory of the current thread while it lives: the most bytes its
/// [`Tape`]s held at once, above what they held when the meter started. That is how
/// benchmarks report the tape size of a generated `_rev` call: a call that calls another
/// differentiated function in a loop counts the callee's tapes once, not once per call.
///
/// ```
/// use ad_core::{Tape, TapeMeter};
///
/// let meter = TapeMeter::start();
/// let mut tape = Tape::<f64>::new();
/// tape.ensure(1000);
/// assert!(meter.bytes() >= 8000);
/// drop(tape);
/// for _ in 0..10 {
///     let mut again = Tape::<f64>::new();
///     again.ensure(1000);
/// }
/// // Ten more tapes of that size, one at a time: the peak is still about one tape's.
/// assert!(meter.bytes() < 2 * 8000);
/// ```
#[derive(Debug)]
pub struct TapeMeter {
    start: usize,
    /// The enclosing meter's peak, restored (with this one's) when this one ends.
    outer_peak: usize,
}

impl TapeMeter {
    /// Starts measuring from now.
    pub fn start() -> Self {
        let start = TAPE_BYTES_LIVE.with(Cell::get);
        let outer_peak = TAPE_BYTES_PEAK.with(|p| p.replace(start));
        TapeMeter { start, outer_peak }
    }

    /// The most bytes of tape held on this thread at once since [`start`](Self::start),
    /// above what was held then (the sizes of the blocks held: a tape's capacity, or the
    /// larger pooled block it reuses).
    pub fn bytes(&self) -> usize {
        TAPE_BYTES_PEAK.with(Cell::get).saturating_sub(self.start)
    }
}

impl Drop for TapeMeter {
    fn drop(&mut self) {
        let outer = self.outer_peak;
        TAPE_BYTES_PEAK.with(|p| p.set(p.get().max(outer)));
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
/// Memory comes from a per-thread pool of released tapes (see [`release_pool`]):
/// a gradient called in a loop (an optimizer, a time series) reuses the
/// previous call's memory instead of asking the system for fresh pages every
/// time. A tape made with [`with_hint`](Self::with_hint) also remembers its
/// final length, so the next call's tape is sized once and never copied.
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
pub struct Tape<T> {
    /// `cap` slots, the first `len` initialized; dangling while `cap == 0` (or for a
    /// zero-sized `T`).
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
    /// The size of the allocation holding the slots (a pooled block may be larger than
    /// `cap` slots); it is given back with exactly this size.
    block: usize,
    /// Where the final length is remembered for the next tape of the same site.
    hint: Option<&'static AtomicUsize>,
}

// A tape owns its slots like a `Vec<T>`.
unsafe impl<T: Send> Send for Tape<T> {}
unsafe impl<T: Sync> Sync for Tape<T> {}

impl<T: Copy + Default> Default for Tape<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default> Clone for Tape<T> {
    fn clone(&self) -> Self {
        let mut t = Tape::new();
        t.ensure(self.len);
        t.as_mut_slice().copy_from_slice(self.as_slice());
        t
    }
}

impl<T: Copy + Default + core::fmt::Debug> core::fmt::Debug for Tape<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tape")
            .field("data", &self.as_slice())
            .finish()
    }
}

impl<T> Tape<T> {
    /// The layout the slots' block was allocated with.
    fn block_layout(&self) -> Layout {
        Layout::from_size_align(self.block, core::mem::align_of::<T>())
            .expect("a tape's block has a valid layout")
    }
}

impl<T> Drop for Tape<T> {
    fn drop(&mut self) {
        if let Some(h) = self.hint {
            h.store(self.len, Ordering::Relaxed);
        }
        if self.cap > 0 && core::mem::size_of::<T>() > 0 {
            record_blocks(0, self.block);
            pool::give(self.ptr.cast(), self.block_layout());
        }
    }
}

impl<T: Copy + Default> Tape<T> {
    /// An empty tape; allocates nothing.
    pub fn new() -> Self {
        Tape {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
            block: 0,
            hint: None,
        }
    }

    /// An empty tape that takes its capacity, when it first needs one, from the final
    /// length recorded in `hint` by the previous tape of the same site, and records its
    /// own final length there when dropped. Generated code declares one `static` hint per
    /// tape.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// static HINT: AtomicUsize = AtomicUsize::new(0);
    /// for _ in 0..2 {
    ///     let mut tape = ad_core::Tape::<f64>::with_hint(&HINT);
    ///     for i in 0..1000 {
    ///         tape.ensure(i + 1); // grows on the first call only
    ///         tape.set(i, i as f64);
    ///     }
    /// }
    /// assert_eq!(HINT.load(Ordering::Relaxed), 1000);
    /// ```
    pub fn with_hint(hint: &'static AtomicUsize) -> Self {
        Tape {
            hint: Some(hint),
            ..Tape::new()
        }
    }

    /// An empty tape with room for `capacity` slots before reallocating.
    ///
    /// ```
    /// let tape = ad_core::Tape::<f64>::with_capacity(100);
    /// assert_eq!(tape.len(), 0);
    /// assert!(tape.bytes() >= 800);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        let mut t = Tape::new();
        t.grow_to(capacity);
        t
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
        if len > self.len {
            self.extend_to(len);
        }
    }

    #[cold]
    #[inline(never)]
    fn extend_to(&mut self, len: usize) {
        if len > self.cap {
            let hinted = self
                .hint
                .filter(|_| self.cap == 0)
                .map_or(0, |h| h.load(Ordering::Relaxed));
            self.grow_to(len.max(self.cap.saturating_mul(2)).max(hinted));
        }
        // SAFETY: slots `self.len..len` are within the capacity; writing initializes them.
        unsafe {
            for k in self.len..len {
                self.ptr.as_ptr().add(k).write(T::default());
            }
        }
        self.len = len;
    }

    /// Capacity for at least `cap` slots, keeping the initialized ones.
    fn grow_to(&mut self, cap: usize) {
        let size = core::mem::size_of::<T>();
        if size == 0 {
            self.cap = usize::MAX;
            return;
        }
        if cap <= self.cap {
            return;
        }
        let layout = Layout::array::<T>(cap).expect("tape length overflows the address space");
        let (block, bytes) = pool::take(layout);
        let ptr: NonNull<T> = block.cast();
        // The meter sees the tape's new block in place of its old one (not both for the
        // moment of the copy).
        record_blocks(bytes, if self.cap > 0 { self.block } else { 0 });
        if self.cap > 0 {
            // SAFETY: both blocks hold at least `self.len` slots of `T` and are distinct.
            unsafe { core::ptr::copy_nonoverlapping(self.ptr.as_ptr(), ptr.as_ptr(), self.len) };
            pool::give(self.ptr.cast(), self.block_layout());
        }
        let new_cap = bytes / size;
        self.ptr = ptr;
        self.cap = new_cap;
        self.block = bytes;
    }

    /// All slots, for a parallel loop whose iteration `i` writes slot `i` (the
    /// direct-indexed tape of ParDiff: iterations own their slots).
    #[inline]
    pub fn slots_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }

    /// Stores `value` in slot `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn set(&mut self, i: usize, value: T) {
        self.as_mut_slice()[i] = value;
    }

    /// The value in slot `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn get(&self, i: usize) -> T {
        self.as_slice()[i]
    }

    /// The number of addressable slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tape has no slots.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory held by the tape in bytes (allocated capacity, not just the
    /// slots in use), for benchmarks' tape-size reports.
    pub fn bytes(&self) -> usize {
        if core::mem::size_of::<T>() == 0 {
            0
        } else {
            self.cap * core::mem::size_of::<T>()
        }
    }

    /// All slots, in index order.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` slots are initialized and owned by the tape.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// All slots, mutably (e.g. to split among threads).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access unique.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Frees the tape memory the current thread keeps for reuse (see [`Tape`]). The pool
/// holds at most [`POOL_BYTES`] per thread and is freed when the thread ends; call this
/// after a one-off gradient of a large program to give the memory back at once.
///
/// ```
/// let mut tape = ad_core::Tape::<f64>::new();
/// tape.ensure(1 << 16);
/// drop(tape); // its memory waits in the pool for the next tape
/// assert!(ad_core::tape::pooled_bytes() >= 8 << 16);
/// ad_core::tape::release_pool();
/// assert_eq!(ad_core::tape::pooled_bytes(), 0);
/// ```
pub fn release_pool() {
    pool::release();
}

/// Bytes of released tape memory the current thread keeps for its next tapes.
pub fn pooled_bytes() -> usize {
    pool::bytes()
}

/// The most bytes of released tape memory one thread keeps for reuse.
pub const POOL_BYTES: usize = 256 << 20;

mod pool {
    //! Released tape blocks of this thread, for the next tapes.
    use std::alloc::{self, Layout};
    use std::cell::RefCell;
    use std::ptr::NonNull;

    /// The most blocks kept.
    const BLOCKS: usize = 32;

    struct Pool {
        blocks: Vec<(NonNull<u8>, Layout)>,
        bytes: usize,
    }

    impl Pool {
        fn free_all(&mut self) {
            for (p, l) in self.blocks.drain(..) {
                // SAFETY: every pooled block came from `alloc::alloc` with layout `l`.
                unsafe { alloc::dealloc(p.as_ptr(), l) };
            }
            self.bytes = 0;
        }
    }

    impl Drop for Pool {
        fn drop(&mut self) {
            self.free_all();
        }
    }

    thread_local! {
        static POOL: RefCell<Pool> = const {
            RefCell::new(Pool { blocks: Vec::new(), bytes: 0 })
        };
    }

    /// A block for `want` (non-zero size): the smallest pooled one with its alignment that
    /// is large enough, else a fresh one. Returns the block and its size in bytes.
    pub(super) fn take(want: Layout) -> (NonNull<u8>, usize) {
        let reused = POOL
            .try_with(|p| {
                let mut p = p.borrow_mut();
                let best = p
                    .blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, l))| l.align() == want.align() && l.size() >= want.size())
                    .min_by_key(|(_, (_, l))| l.size())
                    .map(|(k, _)| k)?;
                let (ptr, l) = p.blocks.swap_remove(best);
                p.bytes -= l.size();
                Some((ptr, l.size()))
            })
            .ok()
            .flatten();
        reused.unwrap_or_else(|| {
            // SAFETY: `want` has a non-zero size (callers skip zero-sized slots).
            let p = unsafe { alloc::alloc(want) };
            match NonNull::new(p) {
                Some(p) => (p, want.size()),
                None => alloc::handle_alloc_error(want),
            }
        })
    }

    /// Returns a block (allocated with `layout`) for reuse, or frees it when the pool is
    /// full: the smallest blocks leave first.
    pub(super) fn give(ptr: NonNull<u8>, layout: Layout) {
        let kept = layout.size() <= super::POOL_BYTES
            && POOL
                .try_with(|p| {
                    let mut p = p.borrow_mut();
                    while !p.blocks.is_empty()
                        && (p.bytes + layout.size() > super::POOL_BYTES || p.blocks.len() >= BLOCKS)
                    {
                        let k = p
                            .blocks
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, (_, l))| l.size())
                            .map(|(k, _)| k)
                            .expect("a block");
                        let (q, l) = p.blocks.swap_remove(k);
                        p.bytes -= l.size();
                        // SAFETY: pooled blocks came from `alloc::alloc` with layout `l`.
                        unsafe { alloc::dealloc(q.as_ptr(), l) };
                    }
                    p.blocks.push((ptr, layout));
                    p.bytes += layout.size();
                })
                .is_ok();
        if !kept {
            // SAFETY: the caller allocated `ptr` with `layout` and gives it up.
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }

    pub(super) fn release() {
        let _ = POOL.try_with(|p| p.borrow_mut().free_all());
    }

    pub(super) fn bytes() -> usize {
        POOL.try_with(|p| p.borrow().bytes).unwrap_or(0)
    }
}

/// Slots by position (`tape[k]`) or by range (`&mut tape[a..b]`, the index windows of the
/// generated code), as in a slice of the first `len()` slots.
impl<T, I: SliceIndex<[T]>> Index<I> for Tape<T> {
    type Output = I::Output;
    #[inline]
    fn index(&self, i: I) -> &I::Output {
        // SAFETY: the first `len` slots are initialized and owned by the tape.
        unsafe { &core::slice::from_raw_parts(self.ptr.as_ptr(), self.len)[i] }
    }
}

impl<T, I: SliceIndex<[T]>> IndexMut<I> for Tape<T> {
    #[inline]
    fn index_mut(&mut self, i: I) -> &mut I::Output {
        // SAFETY: as in `index`, and `&mut self` makes the access unique.
        unsafe { &mut core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len)[i] }
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

    /// The index windows of the generated code: `&mut tape[a..b]` while saving a loop's
    /// slots, `&tape[a..b]` while reading them back; a range past `len()` panics like a
    /// slice's.
    #[test]
    fn range_windows_read_and_write_the_slots() {
        let mut tape = Tape::<f64>::new();
        tape.ensure(6);
        let w = &mut tape[2..5];
        for (t, x) in w.iter_mut().enumerate() {
            *x = t as f64 + 0.5;
        }
        assert_eq!(tape.as_slice(), &[0.0, 0.0, 0.5, 1.5, 2.5, 0.0]);
        assert_eq!(&tape[3..], &[1.5, 2.5, 0.0]);
        assert!(tape[..0].is_empty());
        let past = std::panic::catch_unwind(|| tape[4..7].len());
        assert!(past.is_err(), "a window past the slots panics");
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
    fn pooled_memory_is_reused_across_types_and_fully_initialized() {
        super::release_pool();
        let mut a = Tape::<f64>::new();
        a.ensure(1000);
        a.as_mut_slice().fill(7.5);
        let bytes = a.bytes();
        drop(a);
        assert_eq!(super::pooled_bytes(), bytes);
        // Same alignment: the block is reused, and the new slots read as the default.
        let mut b = Tape::<u64>::new();
        b.ensure(10);
        assert_eq!(super::pooled_bytes(), 0);
        assert_eq!(b.as_slice(), &[0; 10]);
        assert!(b.bytes() >= bytes);
        b.ensure(999);
        assert!(b.as_slice().iter().all(|&v| v == 0));
        // Growth past a reused block keeps the values.
        for i in 0..999 {
            b.set(i, i as u64);
        }
        b.ensure(10_000);
        assert!((0..999).all(|i| b.get(i) == i as u64));
        assert!((999..10_000).all(|i| b.get(i) == 0));
        drop(b);
        super::release_pool();
        assert_eq!(super::pooled_bytes(), 0);
    }

    #[test]
    fn a_reused_block_goes_back_whole() {
        super::release_pool();
        let mut wide = Tape::<[u64; 3]>::new();
        wide.ensure(1);
        drop(wide);
        assert_eq!(super::pooled_bytes(), 24);
        // 24 bytes hold one 16-byte slot; the block returns with its 24 bytes.
        let mut narrow = Tape::<[u64; 2]>::new();
        narrow.ensure(1);
        assert_eq!((narrow.len(), narrow.bytes()), (1, 16));
        drop(narrow);
        assert_eq!(super::pooled_bytes(), 24);
        super::release_pool();
    }

    #[test]
    fn the_pool_is_bounded() {
        super::release_pool();
        let big = Tape::<u8>::with_capacity(super::POOL_BYTES + 1);
        drop(big);
        assert_eq!(super::pooled_bytes(), 0, "a block over the limit is freed");
        let tapes: Vec<Tape<f64>> = (0..100).map(|k| Tape::with_capacity(k + 1)).collect();
        drop(tapes);
        let kept = super::pooled_bytes();
        assert!(kept > 0 && kept <= super::POOL_BYTES);
        super::release_pool();
    }

    #[test]
    fn hints_size_the_next_tape_once_and_clones_are_independent() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static HINT: AtomicUsize = AtomicUsize::new(0);
        let mut first = Tape::<f32>::with_hint(&HINT);
        for i in 0..300 {
            first.ensure(i + 1);
            first.set(i, i as f32);
        }
        let copy = first.clone();
        drop(first);
        assert_eq!(HINT.load(Ordering::Relaxed), 300);
        let mut second = Tape::<f32>::with_hint(&HINT);
        second.ensure(1);
        assert!(second.bytes() >= 300 * 4, "sized from the hint at once");
        assert_eq!((copy.len(), copy.get(299)), (300, 299.0));
        // A tape dropped on another thread goes to that thread's pool.
        std::thread::spawn(move || drop(copy)).join().unwrap();
        let zst = {
            let mut t = Tape::<()>::new();
            t.ensure(5);
            t.len()
        };
        assert_eq!(zst, 5);
    }

    #[test]
    #[should_panic]
    fn reading_past_the_end_panics() {
        let tape = Tape::<f64>::new();
        let _ = tape.get(0);
    }
}

//! Owned writes: parallel loops in which iteration `i` writes only element
//! `i` (or row `i`) of some buffers, split safely with `chunks_mut`.

use std::ops::{Add, Range};

use num_traits::Zero;
use rayon::prelude::*;

use crate::blocks::{add_into, block_count, block_range, combine_in_order, zeros, BLOCK};
use crate::window::Window;

/// A buffer written row by row: iteration `i` owns the elements
/// `[i*width, (i+1)*width)` of `data` (`width == 1`: element `i`).
///
/// ```
/// use ad_rayon::{for_each_owned, Rows};
///
/// // Row i of a 3-wide matrix gets (i, 2i, 3i).
/// let mut m = vec![0.0_f64; 3 * 700];
/// for_each_owned(0..700, (Rows { data: &mut m, width: 3 },), |i, (m,)| {
///     let x = i as f64;
///     m.row(i).copy_from_slice(&[x, 2.0 * x, 3.0 * x]);
/// });
/// assert_eq!(&m[3 * 600..3 * 601], &[600.0, 1200.0, 1800.0]);
/// ```
#[derive(Debug)]
pub struct Rows<'a, T> {
    /// The whole buffer; it may be longer than the loop's range needs.
    pub data: &'a mut [T],
    /// Elements per iteration; at least 1.
    pub width: usize,
}

/// What the loop body sees of one owned buffer: the rows of the current
/// iteration only. Indices are global (as in the user's code); any access
/// outside the current iteration's row panics, so a wrong ownership claim
/// by the generator cannot become a silent data race or a thread-count
/// dependent result.
///
/// ```
/// use ad_rayon::{for_each_owned, Rows};
///
/// let mut u = vec![1.0_f64; 8];
/// let mut pairs = vec![0_u32; 16];
/// for_each_owned(0..8, (&mut u, Rows { data: &mut pairs, width: 2 }), |i, (u, pairs)| {
///     assert_eq!(u.owned(), i..i + 1);
///     u[i] *= 3.0; // `Index`/`IndexMut` with the global index
///     u.add(i, u.get(i)); // u[i] += u[i]
///     assert_eq!(pairs.owned(), 2 * i..2 * i + 2);
///     pairs.set(2 * i + 1, i as u32);
/// });
/// assert_eq!(u, [6.0; 8]);
/// assert_eq!(pairs[2 * 5 + 1], 5);
/// ```
///
/// An access outside the iteration's own element panics:
///
/// ```should_panic
/// use ad_rayon::for_each_owned;
///
/// let mut u = vec![0.0_f64; 4];
/// for_each_owned(0..4, (&mut u,), |i, (u,)| u[(i + 1) % 4] = 1.0);
/// ```
#[derive(Debug)]
pub struct OwnedChunk<'a, T> {
    /// The block's rows: global elements `[base, end)`.
    data: &'a mut [T],
    width: usize,
    /// Global element of row 0 (0, or a [`Shifted`] buffer's `from`).
    shift: usize,
    /// Global element of `data[0]` (the block's first row times the width), and one past
    /// `data`'s last.
    base: usize,
    end: usize,
    /// The iteration running now; only its row is accessible. The loop sets only this
    /// field per iteration: the row's bounds are derived where they are used.
    current: usize,
}

/// `chunk[j]` reads element `j` (global index) of the current iteration, so
/// generated code indexes an owned buffer as it indexed the whole one.
impl<T> std::ops::Index<usize> for OwnedChunk<'_, T> {
    type Output = T;
    #[inline]
    fn index(&self, j: usize) -> &T {
        let at = self.local(j, "read");
        // SAFETY: `local` returns `j - base` only for `lo <= j < hi`, and `bounds` keeps
        // `base <= lo` and `hi <= end = base + data.len()`.
        unsafe { self.data.get_unchecked(at) }
    }
}

/// `chunk[j] = v`, `chunk[j] += v` on element `j` (global index).
impl<T> std::ops::IndexMut<usize> for OwnedChunk<'_, T> {
    #[inline]
    fn index_mut(&mut self, j: usize) -> &mut T {
        let at = self.local(j, "wrote");
        // SAFETY: as in `index`.
        unsafe { self.data.get_unchecked_mut(at) }
    }
}

impl<'a, T> OwnedChunk<'a, T> {
    /// Global element range owned by the current iteration.
    pub fn owned(&self) -> Range<usize> {
        let (lo, hi) = self.bounds();
        lo..hi
    }

    /// Makes iteration `i` the current one.
    #[inline]
    fn set_current(&mut self, i: usize) {
        self.current = i;
    }

    /// The current row's global elements `[lo, hi)`, inside `[base, end)`.
    #[inline]
    fn bounds(&self) -> (usize, usize) {
        let lo = (self.current * self.width + self.shift).max(self.base);
        // The last row of a buffer whose length the width does not divide is shorter.
        let hi = (lo + self.width).min(self.end);
        (lo.min(hi), hi)
    }

    /// Position in `data` of global element `j`, or a panic naming `verb`.
    #[inline]
    fn local(&self, j: usize, verb: &str) -> usize {
        let (lo, hi) = self.bounds();
        // One unsigned comparison: below `lo` wraps to a large number.
        if j.wrapping_sub(lo) >= hi - lo {
            outside(verb, j, lo, hi);
        }
        j - self.base
    }

    /// Element `j` (global index) of the current iteration's row.
    pub fn get(&self, j: usize) -> T
    where
        T: Copy,
    {
        self.data[self.local(j, "read")]
    }

    /// Stores `value` at element `j` (global index).
    pub fn set(&mut self, j: usize, value: T) {
        let at = self.local(j, "wrote");
        self.data[at] = value;
    }

    /// Adds `value` to element `j` (global index): the adjoint `+=`.
    pub fn add(&mut self, j: usize, value: T)
    where
        T: Copy + Add<Output = T>,
    {
        let at = self.local(j, "wrote");
        self.data[at] = self.data[at] + value;
    }

    /// The current iteration's elements as a [`Window`]: what generated loop bodies
    /// index, taken once per iteration, so that its bounds live in locals instead of being
    /// reloaded after every store. With debug assertions the window is the current row,
    /// so an access outside it panics; without, it is the block's rows, the same for every
    /// iteration, so the optimizer keeps it out of the loop: every access is still in
    /// bounds and no other block's, so there is neither a race nor a result that depends
    /// on the thread count.
    #[inline]
    pub fn iteration(&mut self) -> Window<'_, T> {
        let (data, base) = match cfg!(debug_assertions) {
            true => {
                let (lo, hi) = self.bounds();
                (&mut self.data[lo - self.base..hi - self.base], lo)
            }
            false => (&mut self.data[..], self.base),
        };
        Window {
            data,
            base,
            halo: false,
        }
    }

    /// Row `i` (global row index), which must be the current iteration.
    pub fn row(&mut self, i: usize) -> &mut [T] {
        if i != self.current {
            panic!(
                "parallel iteration wrote outside its own row: row {i}, owned row {}",
                self.current
            );
        }
        // The current row, already cut at the buffer's end.
        let (lo, hi) = self.bounds();
        &mut self.data[lo - self.base..hi - self.base]
    }
}

/// The panic of an access outside the iteration's own element (kept out of line).
#[cold]
#[inline(never)]
fn outside(verb: &str, j: usize, lo: usize, hi: usize) -> ! {
    panic!("parallel iteration {verb} outside its own element: index {j}, owned {lo}..{hi}")
}

/// One buffer spec of [`for_each_owned`]: [`Rows`], `(&mut [T], width)`,
/// `&mut [T]` or `&mut Vec<T>` (the last two: width 1), or a [`Halo`](crate::Halo).
///
/// ```
/// use ad_rayon::for_each_owned;
///
/// let (mut a, mut b, mut c) = (vec![0.0_f64; 4], vec![0.0_f64; 8], vec![0.0_f64; 4]);
/// // A slice, a (slice, width) pair and a &mut Vec in one loop.
/// for_each_owned(0..4, (&mut a[..], (&mut b[..], 2), &mut c), |i, (a, b, c)| {
///     a[i] = 1.0;
///     b.row(i).fill(2.0);
///     c[i] = 3.0;
/// });
/// assert_eq!((a[3], b[7], c[0]), (1.0, 2.0, 3.0));
/// ```
pub trait Owned {
    /// The per-block view handed to the loop body.
    type Chunk: Send;

    /// Splits the rows of `range` into one chunk per block of `range`.
    /// `position` (the spec's place in the tuple) only names it in panics.
    fn split_blocks(self, range: &Range<usize>, position: usize) -> Vec<Self::Chunk>;

    /// Restricts `chunk` to the row of iteration `i`.
    fn focus(chunk: &mut Self::Chunk, i: usize);

    /// Called once after the loop with every block's chunk, in block order (a
    /// [`Halo`](crate::Halo) adds its halos into the buffer here).
    fn finish(_chunks: Vec<Self::Chunk>) {}
}

impl<'a, T: Send> Owned for Rows<'a, T> {
    type Chunk = OwnedChunk<'a, T>;

    fn split_blocks(self, range: &Range<usize>, position: usize) -> Vec<Self::Chunk> {
        let width = self.width;
        assert!(
            width > 0,
            "owned buffer {position}: width must be at least 1"
        );
        // Every row must start inside the buffer; the last one may be short (the rows of
        // `chunks_mut(width)` on a length the width does not divide).
        let needed = match range.end {
            0 => 0,
            end => (end - 1) * width + 1,
        };
        assert!(
            range.is_empty() || self.data.len() >= needed,
            "owned buffer {position}: has {} elements, range {}..{} with width {width} needs {needed}",
            self.data.len(),
            range.start,
            range.end
        );
        split_rows(self.data, width, 0, range)
    }

    fn focus(chunk: &mut Self::Chunk, i: usize) {
        chunk.set_current(i);
    }
}

/// The chunks of rows `range` of `data`, row `r` starting at global element
/// `shift + r·width` (`data` holds the global elements from `shift` on).
fn split_rows<'a, T: Send>(
    data: &'a mut [T],
    width: usize,
    shift: usize,
    range: &Range<usize>,
) -> Vec<OwnedChunk<'a, T>> {
    let end = (range.end * width).min(data.len());
    let start = (range.start * width).min(end);
    data[start..end]
        .chunks_mut(BLOCK * width)
        .enumerate()
        .map(|(k, data)| {
            let first_row = block_range(range, k).start;
            let base = first_row * width + shift;
            OwnedChunk {
                end: base + data.len(),
                data,
                width,
                shift,
                base,
                current: first_row,
            }
        })
        .collect()
}

/// A buffer whose element `from + i` belongs to iteration `i`: the slots of one entry of
/// a parallel loop into a tape that a loop around it fills entry after entry (slots
/// `from..from + range.end`; generated code indexes it by global element `from + i`).
///
/// ```
/// use ad_rayon::{for_each_owned, Shifted};
///
/// // The second entry of a 4-iteration loop writes slots 4..8.
/// let mut tape = vec![0.0_f64; 8];
/// for_each_owned(0..4, (Shifted { data: &mut tape, from: 4 },), |i, (t,)| {
///     t[4 + i] = i as f64;
/// });
/// assert_eq!(tape, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0]);
/// ```
#[derive(Debug)]
pub struct Shifted<'a, T> {
    /// The whole buffer; it must hold at least `from + range.end` elements.
    pub data: &'a mut [T],
    /// The global element of iteration 0.
    pub from: usize,
}

impl<'a, T: Send> Owned for Shifted<'a, T> {
    type Chunk = OwnedChunk<'a, T>;

    fn split_blocks(self, range: &Range<usize>, position: usize) -> Vec<Self::Chunk> {
        let needed = self.from + range.end;
        assert!(
            range.is_empty() || self.data.len() >= needed,
            "owned buffer {position}: has {} elements, range {}..{} from element {} needs {needed}",
            self.data.len(),
            range.start,
            range.end,
            self.from
        );
        let from = self.from.min(self.data.len());
        split_rows(&mut self.data[from..], 1, from, range)
    }

    fn focus(chunk: &mut Self::Chunk, i: usize) {
        chunk.set_current(i);
    }
}

impl<'a, T: Send> Owned for (&'a mut [T], usize) {
    type Chunk = OwnedChunk<'a, T>;

    fn split_blocks(self, range: &Range<usize>, position: usize) -> Vec<Self::Chunk> {
        Rows {
            data: self.0,
            width: self.1,
        }
        .split_blocks(range, position)
    }

    fn focus(chunk: &mut Self::Chunk, i: usize) {
        chunk.set_current(i);
    }
}

impl<'a, T: Send> Owned for &'a mut [T] {
    type Chunk = OwnedChunk<'a, T>;

    fn split_blocks(self, range: &Range<usize>, position: usize) -> Vec<Self::Chunk> {
        Rows {
            data: self,
            width: 1,
        }
        .split_blocks(range, position)
    }

    fn focus(chunk: &mut Self::Chunk, i: usize) {
        chunk.set_current(i);
    }
}

impl<'a, T: Send> Owned for &'a mut Vec<T> {
    type Chunk = OwnedChunk<'a, T>;

    fn split_blocks(self, range: &Range<usize>, position: usize) -> Vec<Self::Chunk> {
        self.as_mut_slice().split_blocks(range, position)
    }

    fn focus(chunk: &mut Self::Chunk, i: usize) {
        chunk.set_current(i);
    }
}

/// A tuple of 1 to 16 [`Owned`] specs (or `()` for none); the body sees the
/// tuple of their chunks (`views.0`, `views.1`, ...). See [`Owned`] for an
/// example.
pub trait Parts {
    /// Tuple of the specs' chunks for one block.
    type Views: Send;

    /// One `Views` per block of `range`, in block order.
    fn split_blocks(self, range: &Range<usize>) -> Vec<Self::Views>;

    /// Restricts every chunk of `views` to the row of iteration `i`.
    fn focus(views: &mut Self::Views, i: usize);

    /// After the loop: every block's views, in block order ([`Owned::finish`] of each spec).
    fn finish(views: Vec<Self::Views>);
}

macro_rules! impl_parts {
    ($(($spec:ident, $chunks:ident, $idx:tt)),+) => {
        impl<$($spec: Owned),+> Parts for ($($spec,)+) {
            type Views = ($($spec::Chunk,)+);

            fn split_blocks(self, range: &Range<usize>) -> Vec<Self::Views> {
                $(let mut $chunks = self.$idx.split_blocks(range, $idx).into_iter();)+
                (0..block_count(range))
                    .map(|_| ($($chunks.next().expect("one chunk per block"),)+))
                    .collect()
            }

            fn focus(views: &mut Self::Views, i: usize) {
                $($spec::focus(&mut views.$idx, i);)+
            }

            fn finish(views: Vec<Self::Views>) {
                $(let mut $chunks = Vec::with_capacity(views.len());)+
                for v in views {
                    $($chunks.push(v.$idx);)+
                }
                $($spec::finish($chunks);)+
            }
        }
    };
}

/// `impl_parts!` for every prefix of the list: tuples of 1 to 16 owned buffers.
macro_rules! impl_prefixes {
    (@done [$($done:tt),*]) => { impl_parts!($($done),*); };
    (@done [$($done:tt),*] $next:tt $(, $rest:tt)*) => {
        impl_parts!($($done),*);
        impl_prefixes!(@done [$($done,)* $next] $($rest),*);
    };
    ($first:tt $(, $rest:tt)*) => { impl_prefixes!(@done [$first] $($rest),*); };
}

impl_prefixes!(
    (A, a, 0),
    (B, b, 1),
    (C, c, 2),
    (D, d, 3),
    (E, e, 4),
    (G, g, 5),
    (H, h, 6),
    (I, i, 7),
    (J, j, 8),
    (K, k, 9),
    (L, l, 10),
    (M, m, 11),
    (N, n, 12),
    (O, o, 13),
    (P, p, 14),
    (Q, q, 15)
);

/// Runs `body(i, &mut views)` for every `i` in `range` (blocks in parallel,
/// iterations of a block serially in order), where `views` gives iteration
/// `i` write access to its own element/row of every buffer in `parts`.
/// Buffers may be longer than `range` needs; an empty range does nothing.
///
/// Used where the generator proved that an adjoint `+=` (or a primal store)
/// targets the parallel index: plain stores instead of atomics.
///
/// # Panics
/// If a buffer is shorter than `range.end * width`, a width is 0, or the
/// body accesses an element outside its own row.
///
/// ```
/// use ad_rayon::for_each_owned;
///
/// // The adjoint of y_i = x_i² (seeds ȳ): x̄_i += 2·x_i·ȳ_i, at the loop's own index.
/// let x: Vec<f64> = (0..5000).map(|i| i as f64 * 1e-3).collect();
/// let ybar = vec![1.0; 5000];
/// let mut xbar = vec![0.0; 5000];
/// for_each_owned(0..5000, (&mut xbar,), |i, (xbar,)| xbar[i] += 2.0 * x[i] * ybar[i]);
/// assert_eq!(xbar[1234], 2.0 * 1.234);
/// ```
pub fn for_each_owned<P, F>(range: Range<usize>, parts: P, body: F)
where
    P: Parts,
    F: Fn(usize, &mut P::Views) + Sync,
{
    let _: [f64; 0] = for_each_owned_sum(range, parts, |i, views| {
        body(i, views);
        []
    });
}

/// [`for_each_owned`] whose body also returns `K` terms, summed like
/// [`sum`](crate::sum) (per block left to right, then blocks in order), so
/// the result does not depend on the thread count.
///
/// Used for a parallel adjoint loop that both writes owned elements and
/// accumulates scalar adjoints.
///
/// ```
/// use ad_rayon::for_each_owned_sum;
///
/// // y_i = a·x_i: the adjoint adds a·ȳ_i into x̄_i and sums ā = Σ x_i·ȳ_i.
/// let (a, x, ybar) = (2.0_f64, vec![1.0_f64; 3000], vec![0.5_f64; 3000]);
/// let mut xbar = vec![0.0; 3000];
/// let [abar] = for_each_owned_sum(0..3000, (&mut xbar,), |i, (xbar,)| {
///     xbar[i] += a * ybar[i];
///     [x[i] * ybar[i]]
/// });
/// assert_eq!((abar, xbar[2999]), (1500.0, 1.0));
/// ```
pub fn for_each_owned_sum<P, T, const K: usize, F>(range: Range<usize>, parts: P, body: F) -> [T; K]
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero,
    F: Fn(usize, &mut P::Views) -> [T; K] + Sync,
{
    owned_blocks::<P, T, K, F, false>(range, parts, body)
}

/// [`for_each_owned`] with the iterations taken last to first where they run serially
/// (the blocks, and the iterations of each block): a reverse sweep then starts on what
/// its forward sweep touched last, still in cache. Each iteration owns the same elements.
///
/// ```
/// use ad_rayon::for_each_owned_rev;
///
/// let mut order = vec![0_usize; 4];
/// let next = std::sync::atomic::AtomicUsize::new(0);
/// let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// one_thread.install(|| {
///     for_each_owned_rev(0..4, (&mut order,), |i, (o,)| {
///         o[i] = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///     })
/// });
/// assert_eq!(order, [3, 2, 1, 0]);
/// ```
pub fn for_each_owned_rev<P, F>(range: Range<usize>, parts: P, body: F)
where
    P: Parts,
    F: Fn(usize, &mut P::Views) + Sync,
{
    let _: [f64; 0] = for_each_owned_sum_rev(range, parts, |i, views| {
        body(i, views);
        []
    });
}

/// [`for_each_owned_sum`] in the order of [`for_each_owned_rev`]: each block's terms are
/// summed from its last iteration to its first, then the blocks' partials in block
/// order, so the result still does not depend on the thread count.
///
/// ```
/// use ad_rayon::for_each_owned_sum_rev;
///
/// let x: Vec<f64> = (0..3000).map(|i| 1.0 / (1.0 + i as f64)).collect();
/// let mut y = vec![0.0; 3000];
/// let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let body = |i: usize, (y,): &mut (ad_rayon::OwnedChunk<f64>,)| {
///     y[i] = 2.0 * x[i];
///     [x[i]]
/// };
/// let [s1] = one_thread.install(|| for_each_owned_sum_rev(0..3000, (&mut y,), body));
/// let [s] = for_each_owned_sum_rev(0..3000, (&mut y,), body);
/// assert_eq!(s.to_bits(), s1.to_bits());
/// assert_eq!(y[2999], 2.0 * x[2999]);
/// ```
pub fn for_each_owned_sum_rev<P, T, const K: usize, F>(
    range: Range<usize>,
    parts: P,
    body: F,
) -> [T; K]
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero,
    F: Fn(usize, &mut P::Views) -> [T; K] + Sync,
{
    owned_blocks::<P, T, K, F, true>(range, parts, body)
}

/// The blocks of [`for_each_owned_sum`] (`DESCENDING`: of [`for_each_owned_sum_rev`]).
/// A const parameter, so that each instance calls `body` from one place only.
fn owned_blocks<P, T, const K: usize, F, const DESCENDING: bool>(
    range: Range<usize>,
    parts: P,
    body: F,
) -> [T; K]
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero,
    F: Fn(usize, &mut P::Views) -> [T; K] + Sync,
{
    if range.is_empty() {
        return zeros();
    }
    let block = |(k, mut views): (usize, P::Views)| {
        let partial =
            block_iterations::<P, T, K, F, DESCENDING>(block_range(&range, k), &mut views, &body);
        (partial, views)
    };
    let blocks = parts.split_blocks(&range).into_par_iter().enumerate();
    let (mut partials, mut views): (Vec<[T; K]>, Vec<P::Views>) = match DESCENDING {
        false => blocks.map(block).unzip(),
        true => blocks.rev().map(block).unzip(),
    };
    if DESCENDING {
        partials.reverse();
        views.reverse();
    }
    P::finish(views);
    combine_in_order(partials)
}

/// The iterations of one block, serially (`DESCENDING`: last to first), and the sum of
/// their terms in that order. A plain loop with one call of `body`, so that the body is
/// inlined into it: a `fold` over a closure left each iteration a call, which on loops
/// of one element per iteration cost more than the body.
#[inline]
fn block_iterations<P, T, const K: usize, F, const DESCENDING: bool>(
    iterations: Range<usize>,
    views: &mut P::Views,
    body: &F,
) -> [T; K]
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero,
    F: Fn(usize, &mut P::Views) -> [T; K] + Sync,
{
    let mut acc = zeros();
    let (first, n) = (iterations.start, iterations.len());
    for t in 0..n {
        let i = if DESCENDING {
            first + n - 1 - t
        } else {
            first + t
        };
        P::focus(views, i);
        acc = add_into(acc, body(i, views));
    }
    acc
}

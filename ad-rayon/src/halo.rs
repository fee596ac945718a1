//! Halo writes: parallel loops in which iteration `i` adds into rows `i − reach ..= i +
//! reach` of a buffer (the adjoint of a stencil that reads its neighbours), with no
//! atomics and no buffer as large as the target.

use std::ops::{Add, Index, IndexMut};

use num_traits::Zero;

use crate::blocks::{block_range, BLOCK};
use crate::owned::Owned;
use crate::window::{HaloWindow, Window};

/// A buffer that iteration `i` adds into at rows `i − reach ..= i + reach` (rows of
/// `width` elements; `width == 1`: elements), e.g. `du[(i ± 1)·n + j] += …` in the adjoint
/// of a 2-D stencil over rows.
///
/// Block `k` of the loop (rows `[a, b)`, [`BLOCK`] rows each) adds into its own rows in
/// place, and into rows `[a − reach, a)` and `[b, b + reach)` through a zeroed halo of its
/// own. After the loop the halos are added into the buffer serially, block by block in
/// order (the rows above a block, then those below it). The blocks never depend on the
/// thread count, so neither does any sum: an element gets the adds of its own block in
/// iteration order, then the halos of the neighbouring blocks in block order. On one
/// thread this is the serial loop, plus `2·reach` rows of halo per [`BLOCK`] rows.
///
/// ```
/// use ad_rayon::{for_each_owned, Halo};
///
/// // The adjoint of the smoothing y_i = u_{i-1} + u_i + u_{i+1} (1 ≤ i < n-1):
/// // iteration i adds ȳ_i into ū_{i-1}, ū_i and ū_{i+1}.
/// let n = 2000;
/// let ybar: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
/// let mut ubar = vec![0.0; n];
/// for_each_owned(1..n - 1, (Halo { data: &mut ubar, width: 1, reach: 1 },), |i, (ub,)| {
///     ub[i - 1] += ybar[i];
///     ub[i] += ybar[i];
///     ub[i + 1] += ybar[i];
/// });
/// // The same as the serial loop.
/// let mut serial = vec![0.0; n];
/// for i in 1..n - 1 {
///     for j in i - 1..=i + 1 {
///         serial[j] += ybar[i];
///     }
/// }
/// assert_eq!(ubar, serial);
/// ```
#[derive(Debug)]
pub struct Halo<'a, T> {
    /// The whole buffer; it may be longer than the loop's range needs.
    pub data: &'a mut [T],
    /// Elements per row (per iteration); at least 1.
    pub width: usize,
    /// How many rows above and below its own an iteration may add into.
    pub reach: usize,
}

/// What the loop body sees of a [`Halo`] buffer: the block's rows and its halo, indexed
/// by global element. An access outside rows `i − reach ..= i + reach` of the current
/// iteration `i` panics, so a wrong claim by the generator cannot become a data race or
/// a thread-count dependent result.
#[derive(Debug)]
pub struct HaloChunk<'a, T> {
    /// The block's rows: global elements `[start, start + rows.len())`.
    rows: &'a mut [T],
    start: usize,
    /// The rows above the block (global elements `[above_start, start)`), then those
    /// below it (from `start + rows.len()`).
    halo: Vec<T>,
    above_start: usize,
    /// The iteration running now. The loop sets only this field per iteration: the
    /// bounds of its rows are derived where they are used ([`HaloChunk::reach_of`]).
    current: usize,
    width: usize,
    reach: usize,
    /// The target's length.
    len: usize,
    /// The copy behind a window that reaches into a halo ([`HaloChunk::iteration`]).
    scratch: Vec<T>,
    /// The elements before the loop's rows (first block only) and after them (last block
    /// only): the halos may add there, in `finish`.
    before: &'a mut [T],
    after: &'a mut [T],
}

impl<T> HaloChunk<'_, T> {
    /// The current iteration's rows `i − reach ..= i + reach` as global elements
    /// `[lo, hi)`.
    #[inline]
    fn reach_of(&self) -> (usize, usize) {
        let i = self.current;
        let lo = i.saturating_sub(self.reach) * self.width;
        let hi = ((i + self.reach + 1) * self.width).min(self.len);
        (lo, hi)
    }

    /// Position in the block's rows of global element `j`; elsewhere, the halo
    /// ([`HaloChunk::halo_slot`]).
    #[inline]
    fn local(&self, j: usize) -> Option<usize> {
        let (lo, hi) = self.reach_of();
        // The part of the reach in the block's rows.
        let in_lo = lo.max(self.start);
        let in_hi = hi.min(self.start + self.rows.len());
        // One unsigned comparison: below `in_lo` wraps to a large number.
        if j.wrapping_sub(in_lo) >= in_hi.saturating_sub(in_lo) {
            return None;
        }
        Some(j - self.start)
    }

    /// Position in the halo of global element `j`, or a panic naming `verb` when `j` lies
    /// outside the current iteration's reach.
    #[inline]
    fn halo_slot(&self, j: usize, verb: &str) -> usize {
        // Scalars only: a cold call that took `&self` would make every field a reload
        // after each store of the hot loop.
        halo_position(
            verb,
            j,
            self.reach_of(),
            (self.above_start, self.start, self.rows.len()),
        )
    }

    /// The current iteration's rows `i − reach ..= i + reach` as one contiguous
    /// [`HaloWindow`]: what generated loop bodies index, taken once per iteration, so
    /// that its bounds live in locals instead of being reloaded after every store. Where
    /// those rows all lie in the block's own rows (all iterations but the `reach` first
    /// and last of a block), the window is in place: with debug assertions exactly those
    /// rows, so an access outside the reach panics; without, the block's rows, the same
    /// for every such iteration, so the optimizer keeps it out of the loop (every access
    /// still in bounds and no other block's: neither a race nor a thread-count dependent
    /// result). Otherwise it is a copy of exactly those rows, gathered from the block's
    /// rows and its halos and written back on drop.
    #[inline]
    pub fn iteration(&mut self) -> HaloWindow<'_, T>
    where
        T: Copy,
    {
        let (lo, hi) = self.reach_of();
        let start = self.start;
        if lo >= start && hi <= start + self.rows.len() {
            let (data, base) = match cfg!(debug_assertions) {
                true => (&mut self.rows[lo - start..hi - start], lo),
                false => (&mut self.rows[..], start),
            };
            return HaloWindow {
                window: Window {
                    data,
                    base,
                    halo: true,
                },
                back: None,
            };
        }
        self.gathered(lo, hi)
    }

    /// [`HaloChunk::iteration`] where the window reaches into a halo (kept out of line).
    #[inline(never)]
    fn gathered(&mut self, lo: usize, hi: usize) -> HaloWindow<'_, T>
    where
        T: Copy,
    {
        let start = self.start;
        let end = start + self.rows.len();
        let (above, below) = self.halo.split_at_mut(start - self.above_start);
        // The window's pieces: in the halo above, in the rows, in the halo below.
        let a = lo.min(start)..hi.min(start);
        let r = lo.max(start).min(end)..hi.min(end).max(start);
        let b = lo.max(end)..hi.max(end);
        let pieces = [
            &mut above[a.start - self.above_start..a.end - self.above_start],
            &mut self.rows[r.start - start..r.end - start],
            &mut below[b.start - end..b.end - end],
        ];
        self.scratch.clear();
        for piece in &pieces {
            self.scratch.extend_from_slice(piece);
        }
        HaloWindow {
            window: Window {
                data: &mut self.scratch[..],
                base: lo,
                halo: true,
            },
            back: Some(pieces),
        }
    }

    /// Global element range the current iteration may touch.
    ///
    /// ```
    /// use ad_rayon::{for_each_owned, Halo};
    ///
    /// let mut rows = vec![0.0_f64; 5 * 4]; // 5 rows of width 4
    /// for_each_owned(0..5, (Halo { data: &mut rows, width: 4, reach: 1 },), |i, (r,)| {
    ///     assert_eq!(r.window(), i.saturating_sub(1) * 4..((i + 2) * 4).min(20));
    /// });
    /// ```
    pub fn window(&self) -> std::ops::Range<usize> {
        let (lo, hi) = self.reach_of();
        lo..hi
    }
}

/// `chunk[j]` reads global element `j`.
impl<T> Index<usize> for HaloChunk<'_, T> {
    type Output = T;
    #[inline]
    fn index(&self, j: usize) -> &T {
        match self.local(j) {
            // SAFETY: `local` returns `j - start` only for `start <= j < start +
            // rows.len()` (the part of the reach in the block's rows).
            Some(at) => unsafe { self.rows.get_unchecked(at) },
            None => &self.halo[self.halo_slot(j, "read")],
        }
    }
}

/// `chunk[j] += v` on global element `j`.
impl<T> IndexMut<usize> for HaloChunk<'_, T> {
    #[inline]
    fn index_mut(&mut self, j: usize) -> &mut T {
        match self.local(j) {
            // SAFETY: as in `index`.
            Some(at) => unsafe { self.rows.get_unchecked_mut(at) },
            None => {
                let at = self.halo_slot(j, "wrote");
                &mut self.halo[at]
            }
        }
    }
}

/// Position in the halo of global element `j` (see [`HaloChunk::halo_slot`]): `window`
/// is the iteration's `[lo, hi)`, `block` is `(above_start, start, rows)`.
#[cold]
#[inline(never)]
fn halo_position(
    verb: &str,
    j: usize,
    window: (usize, usize),
    block: (usize, usize, usize),
) -> usize {
    let (lo, hi) = window;
    let (above_start, start, rows) = block;
    if j < lo || j >= hi {
        outside(verb, j, lo, hi);
    }
    if j < start {
        j - above_start
    } else {
        start - above_start + (j - start - rows)
    }
}

/// The panic of an access outside the iteration's reach (kept out of line).
#[cold]
#[inline(never)]
fn outside(verb: &str, j: usize, lo: usize, hi: usize) -> ! {
    panic!("parallel iteration {verb} outside the rows it may reach: index {j}, reach {lo}..{hi}")
}

impl<'a, T> Owned for Halo<'a, T>
where
    T: Copy + Send + Zero + Add<Output = T>,
{
    type Chunk = HaloChunk<'a, T>;

    fn split_blocks(self, range: &std::ops::Range<usize>, position: usize) -> Vec<Self::Chunk> {
        let Halo { data, width, reach } = self;
        assert!(
            width > 0,
            "owned buffer {position}: width must be at least 1"
        );
        let needed = match range.end {
            0 => 0,
            end => (end - 1) * width + 1,
        };
        assert!(
            range.is_empty() || data.len() >= needed,
            "owned buffer {position}: has {} elements, range {}..{} with width {width} needs {needed}",
            data.len(),
            range.start,
            range.end
        );
        let len = data.len();
        let end = (range.end * width).min(len);
        let start = (range.start * width).min(end);
        let (mut before, rest) = data.split_at_mut(start);
        let (rows, mut after) = rest.split_at_mut(end - start);
        let n_blocks = rows.len().div_ceil(BLOCK * width);
        rows.chunks_mut(BLOCK * width)
            .enumerate()
            .map(|(k, rows)| {
                let first_row = block_range(range, k).start;
                let start = first_row * width;
                let above_start = first_row.saturating_sub(reach) * width;
                let below_end = (start + rows.len() + reach * width).min(len);
                let halo_len = (start - above_start) + (below_end - start - rows.len());
                let mut chunk = HaloChunk {
                    rows,
                    start,
                    halo: vec![T::zero(); halo_len],
                    scratch: Vec::with_capacity((2 * reach + 1) * width),
                    above_start,
                    current: first_row,
                    width,
                    reach,
                    len,
                    before: &mut [],
                    after: &mut [],
                };
                if k == 0 {
                    chunk.before = std::mem::take(&mut before);
                }
                if k + 1 == n_blocks {
                    chunk.after = std::mem::take(&mut after);
                }
                chunk
            })
            .collect()
    }

    #[inline]
    fn focus(chunk: &mut Self::Chunk, i: usize) {
        chunk.current = i;
    }

    /// Adds the halos into the buffer: block by block in order, each block's rows above
    /// it, then those below it.
    fn finish(chunks: Vec<Self::Chunk>) {
        // The buffer's pieces by their first global element, in order, and the halos.
        let mut pieces: Vec<(usize, &mut [T])> = Vec::with_capacity(chunks.len() + 2);
        // Each block's halo: its rows above from `above_start`, those below from `end`.
        let mut halos: Vec<(usize, usize, usize, Vec<T>)> = Vec::with_capacity(chunks.len());
        for c in chunks {
            if !c.before.is_empty() {
                pieces.push((0, c.before));
            }
            let end = c.start + c.rows.len();
            pieces.push((c.start, c.rows));
            if !c.after.is_empty() {
                pieces.push((end, c.after));
            }
            halos.push((c.above_start, c.start, end, c.halo));
        }
        for (above_start, start, end, values) in halos {
            let (above, below) = values.split_at(start - above_start);
            add_run(&mut pieces, above_start, above);
            add_run(&mut pieces, end, below);
        }
    }
}

/// Adds `values` into the elements from global `first` on, across `pieces` (contiguous,
/// in order, each named by its first global element).
fn add_run<T: Copy + Add<Output = T>>(
    pieces: &mut [(usize, &mut [T])],
    first: usize,
    values: &[T],
) {
    let mut g = first;
    let mut rest = values;
    while !rest.is_empty() {
        let k = pieces.partition_point(|(s, _)| *s <= g) - 1;
        let (s, piece) = &mut pieces[k];
        let piece = &mut piece[g - *s..];
        let n = piece.len().min(rest.len());
        assert!(n > 0, "halo element {g} lies outside the buffer");
        for (o, &v) in piece[..n].iter_mut().zip(&rest[..n]) {
            *o = *o + v;
        }
        g += n;
        rest = &rest[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::for_each_owned;

    /// A 1-D three-point adjoint on `n` cells: iteration `i` adds `w[i]` into cells
    /// `i − 1`, `i`, `i + 1`.
    fn stencil(n: usize, target: &mut [f64], w: &[f64]) {
        for_each_owned(
            0..n,
            (Halo {
                data: target,
                width: 1,
                reach: 1,
            },),
            |i, (t,)| {
                if i > 0 {
                    t[i - 1] += w[i];
                }
                t[i] += 2.0 * w[i];
                if i + 1 < t.len {
                    t[i + 1] += w[i];
                }
            },
        );
    }

    #[test]
    fn matches_the_serial_loop_across_blocks_and_threads() {
        let n = 3 * BLOCK + 17;
        let w: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 101) as f64 * 0.37 - 11.0)
            .collect();
        let mut want = vec![0.5; n];
        for i in 0..n {
            if i > 0 {
                want[i - 1] += w[i];
            }
            want[i] += 2.0 * w[i];
            if i + 1 < n {
                want[i + 1] += w[i];
            }
        }
        let mut bits = Vec::new();
        for threads in [1, 2, 5] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut got = vec![0.5; n];
            pool.install(|| stencil(n, &mut got, &w));
            for (g, e) in got.iter().zip(&want) {
                assert!((g - e).abs() <= 1e-12 * e.abs().max(1.0), "{g} vs {e}");
            }
            bits.push(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
        assert!(
            bits.windows(2).all(|p| p[0] == p[1]),
            "thread counts differ"
        );
    }

    #[test]
    fn rows_reach_past_the_loop() {
        // 3 rows of width 2 over a target of 5 rows: iteration i adds 1 into rows i, i + 2.
        let mut target = vec![0.0_f64; 10];
        for_each_owned(
            0..3,
            (Halo {
                data: &mut target,
                width: 2,
                reach: 2,
            },),
            |i, (t,)| {
                for j in 0..2 {
                    t[i * 2 + j] += 1.0;
                    t[(i + 2) * 2 + j] += 10.0;
                }
            },
        );
        assert_eq!(
            target,
            [1.0, 1.0, 1.0, 1.0, 11.0, 11.0, 10.0, 10.0, 10.0, 10.0]
        );
    }

    #[test]
    #[should_panic(expected = "outside the rows it may reach")]
    fn an_add_past_the_reach_panics() {
        let mut target = vec![0.0_f64; 8];
        for_each_owned(
            0..8,
            (Halo {
                data: &mut target,
                width: 1,
                reach: 1,
            },),
            |i, (t,)| t[(i + 2) % 8] += 1.0,
        );
    }
}

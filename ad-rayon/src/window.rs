//! The current iteration's elements of an owned or halo buffer as one contiguous slice,
//! indexed by global element: what a generated loop body indexes.
//!
//! A chunk ([`OwnedChunk`](crate::OwnedChunk), [`HaloChunk`](crate::HaloChunk)) lives in
//! memory that the body's stores may alias as far as the optimizer can tell, so an
//! access through it reloads the chunk's fields after every store. A window is taken once
//! per iteration and lives in locals (a pointer, a length, a base): an access costs a
//! subtraction and one comparison. With debug assertions a window is exactly what the
//! iteration may touch (its row; for a halo, rows `i − reach ..= i + reach`), so any other
//! access panics. Without them, an owned window is the whole block's rows, and a halo
//! window too while the reach lies inside them: the same window for every iteration, which
//! the optimizer keeps out of the loop. Every access is still bounds-checked and inside
//! the block's own rows, so there is no race and no result that depends on the thread
//! count; what is not checked then is the generator's claim that iteration `i` touches
//! only its own row, which the debug builds of the test suite check.
//!
//! A window also slices by a range of global elements (`w[a..b]`, checked once): a
//! generated loop over a row takes its elements as a plain slice before the loop
//! (`codegen::window` in `ad-macros`), so the accesses inside need no check of their own.
//!
//! Measured on one thread (min over interleaved runs): the 2-D stencil's gradient
//! (1000×1000) 9.1 → 7.5 ms, the 1-D three-point one (2²⁰ cells) 16 → 9.4 ms.

use std::ops::{Index, IndexMut, Range, RangeTo};

/// The elements `[base, base + data.len())` of an owned buffer that the current iteration
/// may index: its row (with debug assertions) or its block's rows. An access outside them
/// panics.
///
/// ```
/// use ad_rayon::{for_each_owned, Rows};
///
/// let mut m = vec![0.0_f64; 3 * 4];
/// for_each_owned(0..4, (Rows { data: &mut m, width: 3 },), |i, (m,)| {
///     let m = &mut m.iteration();
///     for j in 0..3 {
///         m[3 * i + j] = (10 * i + j) as f64; // global indices, as in the user's loop
///     }
/// });
/// assert_eq!(&m[6..9], &[20.0, 21.0, 22.0]);
/// ```
#[derive(Debug)]
pub struct Window<'a, T> {
    pub(crate) data: &'a mut [T],
    pub(crate) base: usize,
    /// Whose window this is: an owned buffer's or a halo's (only words the panic).
    pub(crate) halo: bool,
}

impl<T> Window<'_, T> {
    /// The global elements this window covers.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.base..self.base + self.data.len()
    }

    /// `j − base` where it is below the length; else a panic naming `verb`.
    #[inline]
    fn position(&self, j: usize, verb: &'static str) -> usize {
        // One unsigned comparison: below `base` wraps to a large number.
        let k = j.wrapping_sub(self.base);
        if k >= self.data.len() {
            outside(verb, self.halo, j, self.range());
        }
        k
    }
}

impl<T> Index<usize> for Window<'_, T> {
    type Output = T;
    #[inline]
    fn index(&self, j: usize) -> &T {
        let k = self.position(j, "read");
        // SAFETY: `position` returns `k < data.len()` or panics.
        unsafe { self.data.get_unchecked(k) }
    }
}

impl<T> IndexMut<usize> for Window<'_, T> {
    #[inline]
    fn index_mut(&mut self, j: usize) -> &mut T {
        let k = self.position(j, "wrote");
        // SAFETY: as in `index`.
        unsafe { self.data.get_unchecked_mut(k) }
    }
}

impl<T> Window<'_, T> {
    /// `r` as positions in `data`, checked once for the whole range (what generated code
    /// slices before a loop instead of checking each access: `codegen::window`); a range
    /// reaching outside the window panics as an access there would.
    #[inline]
    fn positions(&self, r: Range<usize>, verb: &'static str) -> Range<usize> {
        if r.start > r.end {
            outside(verb, self.halo, r.start, self.range());
        }
        if r.start == r.end {
            return 0..0;
        }
        let a = self.position(r.start, verb);
        let b = self.position(r.end - 1, verb);
        a..b + 1
    }
}

impl<T> Index<Range<usize>> for Window<'_, T> {
    type Output = [T];
    #[inline]
    fn index(&self, r: Range<usize>) -> &[T] {
        let p = self.positions(r, "read");
        &self.data[p]
    }
}

impl<T> IndexMut<Range<usize>> for Window<'_, T> {
    #[inline]
    fn index_mut(&mut self, r: Range<usize>) -> &mut [T] {
        let p = self.positions(r, "wrote");
        &mut self.data[p]
    }
}

/// `..end` as `0..end`: generated code takes `..0`, the empty range, where its loop does
/// not run.
impl<T> Index<RangeTo<usize>> for Window<'_, T> {
    type Output = [T];
    #[inline]
    fn index(&self, r: RangeTo<usize>) -> &[T] {
        &self[0..r.end]
    }
}

impl<T> IndexMut<RangeTo<usize>> for Window<'_, T> {
    #[inline]
    fn index_mut(&mut self, r: RangeTo<usize>) -> &mut [T] {
        &mut self[0..r.end]
    }
}

/// Iteration `i`'s rows `i − reach ..= i + reach` of a [`Halo`](crate::Halo) buffer,
/// contiguous. Where they all lie in the block's own rows (all iterations but the `reach`
/// first and last of a block), the window is in place: those rows (with debug assertions)
/// or the block's rows. Otherwise it is a copy of those rows, gathered from the block's
/// rows and its halos and written back when the window is dropped (also when the body
/// panics).
///
/// ```
/// use ad_rayon::{for_each_owned, Halo};
///
/// // Iteration i adds into elements i − 1, i and i + 1, across block boundaries.
/// let n = 2000;
/// let mut t = vec![0.0_f64; n];
/// for_each_owned(0..n, (Halo { data: &mut t, width: 1, reach: 1 },), |i, (t,)| {
///     let t = &mut t.iteration();
///     for k in i.saturating_sub(1)..(i + 2).min(n) {
///         t[k] += 1.0;
///     }
/// });
/// assert!(t[1..n - 1].iter().all(|&v| v == 3.0));
/// assert_eq!((t[0], t[n - 1]), (2.0, 2.0));
/// ```
#[derive(Debug)]
pub struct HaloWindow<'a, T: Copy> {
    pub(crate) window: Window<'a, T>,
    /// Where a gathered window goes back: the halo above the block, the block's rows,
    /// the halo below it (each possibly empty), in global order.
    pub(crate) back: Option<[&'a mut [T]; 3]>,
}

impl<T: Copy> HaloWindow<'_, T> {
    /// The global elements this window covers.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.window.range()
    }
}

impl<T: Copy> Drop for HaloWindow<'_, T> {
    fn drop(&mut self) {
        if let Some(pieces) = self.back.take() {
            let mut from = &self.window.data[..];
            for piece in pieces {
                let (head, rest) = from.split_at(piece.len());
                piece.copy_from_slice(head);
                from = rest;
            }
        }
    }
}

impl<T: Copy> Index<usize> for HaloWindow<'_, T> {
    type Output = T;
    #[inline]
    fn index(&self, j: usize) -> &T {
        &self.window[j]
    }
}

impl<T: Copy> IndexMut<usize> for HaloWindow<'_, T> {
    #[inline]
    fn index_mut(&mut self, j: usize) -> &mut T {
        &mut self.window[j]
    }
}

impl<T: Copy> Index<Range<usize>> for HaloWindow<'_, T> {
    type Output = [T];
    #[inline]
    fn index(&self, r: Range<usize>) -> &[T] {
        &self.window[r]
    }
}

impl<T: Copy> IndexMut<Range<usize>> for HaloWindow<'_, T> {
    #[inline]
    fn index_mut(&mut self, r: Range<usize>) -> &mut [T] {
        &mut self.window[r]
    }
}

impl<T: Copy> Index<RangeTo<usize>> for HaloWindow<'_, T> {
    type Output = [T];
    #[inline]
    fn index(&self, r: RangeTo<usize>) -> &[T] {
        &self.window[r]
    }
}

impl<T: Copy> IndexMut<RangeTo<usize>> for HaloWindow<'_, T> {
    #[inline]
    fn index_mut(&mut self, r: RangeTo<usize>) -> &mut [T] {
        &mut self.window[r]
    }
}

/// The panic of an access outside a window (kept out of line), worded as the chunks'.
#[cold]
#[inline(never)]
fn outside(verb: &str, halo: bool, j: usize, window: std::ops::Range<usize>) -> ! {
    let (what, label) = match halo {
        false => ("its own element", "owned"),
        true => ("the rows it may reach", "reach"),
    };
    panic!(
        "parallel iteration {verb} outside {what}: index {j}, {label} {}..{}",
        window.start, window.end
    )
}

#[cfg(test)]
mod tests {
    use crate::{for_each_owned, for_each_owned_sum_rev, Halo, Rows, BLOCK};

    /// The 1-D three-point adjoint of `halo.rs`'s tests, on chunks (`windows` false) or
    /// on windows: blocks of several sizes, in both orders, on 1 to 5 threads.
    fn three_point(n: usize, w: &[f64], windows: bool, threads: usize) -> Vec<f64> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut t: Vec<f64> = (0..n).map(|i| 0.5 + (i % 3) as f64).collect();
        let halo = Halo {
            data: &mut t,
            width: 1,
            reach: 1,
        };
        let [s] = pool.install(|| {
            for_each_owned_sum_rev(0..n, (halo,), |i, (t,)| {
                let terms = [(i.wrapping_sub(1), w[i]), (i, 2.0 * w[i]), (i + 1, w[i])];
                if windows {
                    let t = &mut t.iteration();
                    for (k, v) in terms.into_iter().filter(|(k, _)| *k < n) {
                        t[k] += v;
                    }
                } else {
                    for (k, v) in terms.into_iter().filter(|(k, _)| *k < n) {
                        t[k] += v;
                    }
                }
                [w[i]]
            })
        });
        t.push(s);
        t
    }

    #[test]
    fn halo_windows_add_as_the_chunk_does_bitwise() {
        for n in [1, 2, BLOCK, BLOCK + 1, 3 * BLOCK + 17] {
            let w: Vec<f64> = (0..n)
                .map(|i| ((i * 7919) % 101) as f64 * 0.37 - 11.0)
                .collect();
            let want = three_point(n, &w, false, 1);
            for threads in [1, 2, 5] {
                let got = three_point(n, &w, true, threads);
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(g, e)| g.to_bits() == e.to_bits()),
                    "n = {n}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn a_window_gathers_the_halo_above_the_rows_and_the_halo_below() {
        // Rows 1..3 of a 5-row target (width 2, reach 2): iteration 1's window is row 0
        // (the halo above), rows 1 and 2 (the block) and row 3 (the halo below);
        // iteration 2's is rows 0 to 4.
        let mut target = vec![0.0_f64; 10];
        for_each_owned(
            1..3,
            (Halo {
                data: &mut target,
                width: 2,
                reach: 2,
            },),
            |i, (t,)| {
                let t = &mut t.iteration();
                assert_eq!(t.range(), i.saturating_sub(2) * 2..((i + 3) * 2).min(10));
                for k in t.range() {
                    t[k] += (i * 10) as f64 + k as f64;
                }
            },
        );
        let mut want = vec![0.0_f64; 10];
        for i in 1..3 {
            for (k, v) in want.iter_mut().enumerate().take(((i + 3) * 2).min(10)) {
                *v += (i * 10) as f64 + k as f64;
            }
        }
        assert_eq!(target, want);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "wrote outside the rows it may reach: index 4, reach 0..2")]
    fn a_halo_window_panics_past_the_reach() {
        adds_past_the_reach(8, 4);
    }

    /// Iterations `0..8` of a reach-1 halo over `len` elements, each adding into element
    /// `i + shift` through its window.
    fn adds_past_the_reach(len: usize, shift: usize) {
        let mut target = vec![0.0_f64; len];
        for_each_owned(
            0..8,
            (Halo {
                data: &mut target,
                width: 1,
                reach: 1,
            },),
            |i, (t,)| {
                let t = &mut t.iteration();
                t[i + shift] += 1.0;
            },
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "read outside its own element: index 4, owned 0..2")]
    fn an_owned_window_panics_outside_the_row() {
        let mut rows = vec![0.0_f64; 8];
        for_each_owned(
            0..4,
            (Rows {
                data: &mut rows,
                width: 2,
            },),
            |i, (r,)| {
                let r = &mut r.iteration();
                r[2 * i] = r[2 * i + 4];
            },
        );
    }

    #[test]
    #[should_panic(expected = "wrote outside the rows it may reach: index")]
    fn a_halo_window_panics_past_the_block_and_its_halos() {
        // With debug assertions the first add (element 2 from iteration 0) is past the
        // reach; without, iteration 6's add into element 8 is past the block's rows, and
        // iteration 7's window (rows 6..=8, gathered) ends before element 9.
        adds_past_the_reach(10, 2);
    }

    #[test]
    #[should_panic(expected = "wrote outside its own element: index 0, owned 1..")]
    fn an_owned_window_panics_past_the_block() {
        // Iterations 1 and 2 own elements 1 and 2: element 0 lies before the loop's rows,
        // outside every window.
        let mut v = vec![0.0_f64; 3];
        for_each_owned(1..3, (&mut v[..],), |i, (v,)| {
            let v = &mut v.iteration();
            v[i - 1] = 1.0;
        });
    }

    #[test]
    fn windows_slice_by_global_ranges() {
        // Rows of 4, a reach-1 halo: each iteration slices its row of `rows` and the
        // three rows around it of `halo` by global indices, as generated loops do.
        let (mut rows, mut halo) = (vec![0.0_f64; 16], vec![0.0_f64; 16]);
        for_each_owned(
            0..4,
            (
                Rows {
                    data: &mut rows,
                    width: 4,
                },
                Halo {
                    data: &mut halo,
                    width: 4,
                    reach: 1,
                },
            ),
            |i, (r, h)| {
                let (r, h) = (&mut r.iteration(), &mut h.iteration());
                let row = &mut r[4 * i + 1..4 * i + 3];
                row.copy_from_slice(&[i as f64, 10.0 + i as f64]);
                assert!(r[..0].is_empty() && h[..0].is_empty());
                assert_eq!(r[4 * i..4 * i + 4].len(), 4);
                let below = (4 * i + 4).min(16);
                for v in &mut h[4 * i..below] {
                    *v += 1.0;
                }
                assert_eq!(h[4 * i..4 * i].len(), 0);
            },
        );
        let want: Vec<f64> = (0..4)
            .flat_map(|i| [0.0, i as f64, 10.0 + i as f64, 0.0])
            .collect();
        assert_eq!(rows, want);
        assert!(halo.iter().all(|v| *v == 1.0));
    }

    #[test]
    #[should_panic(expected = "wrote outside its own element: index 8, owned")]
    fn a_range_past_the_window_panics_naming_its_end() {
        let mut v = vec![0.0_f64; 8];
        for_each_owned(0..2, ((&mut v[..], 4),), |i, (v,)| {
            let v = &mut v.iteration();
            v[4 * i + 1..4 * i + 9].fill(1.0);
        });
    }

    #[test]
    fn the_last_row_of_a_buffer_the_width_does_not_divide_is_short() {
        // 7 elements in rows of 3: the third row has one element.
        let mut v = vec![0_u32; 7];
        for_each_owned(0..3, ((&mut v[..], 3),), |i, (v,)| {
            let v = &mut v.iteration();
            let row = 3 * i..(3 * i + 3).min(7);
            // Without debug assertions the window is the block's rows (here all of them).
            let want = if cfg!(debug_assertions) {
                row.clone()
            } else {
                0..7
            };
            assert_eq!(v.range(), want);
            for k in row {
                v[k] = i as u32 + 1;
            }
        });
        assert_eq!(v, [1, 1, 1, 2, 2, 2, 3]);
    }
}

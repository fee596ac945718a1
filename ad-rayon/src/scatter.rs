//! Owned writes, partial sums and scatters in one parallel loop: the adjoint
//! of a loop that `+=`s at its own index, accumulates scalar adjoints, and
//! `+=`s at unknown indices of other arrays (from anywhere in its body,
//! inner loops included).

use std::fmt;
use std::ops::{Add, Range};

use num_traits::Zero;
use rayon::prelude::*;

use crate::atomic::{AtomicF32Slice, AtomicF64Slice};
use crate::blocks::{add_into, block_count, block_range, combine_in_order, zeros, BLOCK};
use crate::owned::Parts;
use crate::private::private_fits;
use crate::scratch::Scratch;

/// Elements of a target reduced per parallel task when the lanes are added
/// into it (the per-element order, target then lanes 0, 1, ..., is fixed).
const REDUCE_CHUNK: usize = 8 * BLOCK;

/// A float type that [`for_each_owned_scatter`] can scatter into: it needs
/// a zero for the private copies of the lanes mode and an atomic
/// compare-exchange add for the atomic mode. Implemented for `f64` (through
/// [`AtomicF64Slice`]) and `f32` (through [`AtomicF32Slice`]).
pub trait ScatterFloat: Copy + Send + Sync + Add<Output = Self> + Zero + 'static {
    /// A target viewed as atomics for as long as it is borrowed.
    type Atomic<'a>: Sync;

    /// Views `data` as atomics (the atomic mode's shared target).
    fn atomic(data: &mut [Self]) -> Self::Atomic<'_>;

    /// `cells[index] += value` by a compare-exchange loop, counted by
    /// [`atomic_ops`](crate::atomic_ops) under the `count-atomics` feature.
    ///
    /// # Panics
    /// If `index` is out of bounds.
    fn atomic_add(cells: &Self::Atomic<'_>, index: usize, value: Self);
}

impl ScatterFloat for f64 {
    type Atomic<'a> = AtomicF64Slice<'a>;

    fn atomic(data: &mut [f64]) -> AtomicF64Slice<'_> {
        AtomicF64Slice::new(data)
    }

    fn atomic_add(cells: &AtomicF64Slice<'_>, index: usize, value: f64) {
        cells.add(index, value);
    }
}

impl ScatterFloat for f32 {
    type Atomic<'a> = AtomicF32Slice<'a>;

    fn atomic(data: &mut [f32]) -> AtomicF32Slice<'_> {
        AtomicF32Slice::new(data)
    }

    fn atomic_add(cells: &AtomicF32Slice<'_>, index: usize, value: f32) {
        cells.add(index, value);
    }
}

/// The scatter targets of [`for_each_owned_scatter`] as one iteration sees
/// them: `add(target, j, v)` adds `v` to element `j` of target number
/// `target` (its position in the `targets` vector): into the running lane's
/// cells (copies mode: the target itself for lane 0, a private copy for the
/// others) or atomically into the shared target (atomic mode, for targets
/// too large to privatize). See [`for_each_owned_scatter`] for an example.
pub struct Scatter<'a, T> {
    /// Per target, this lane's cells: the target or a private copy. Empty
    /// in atomic mode.
    cells: Vec<&'a mut [T]>,
    /// Where an add outside `cells` goes.
    miss: Miss<'a, T>,
}

/// What [`Scatter::add`] does with an add outside the lane's cells.
enum Miss<'a, T> {
    /// Nothing can be outside: it is out of bounds.
    Panic,
    /// Atomic mode: the checked atomic add `(target, j, v)` into the shared
    /// targets.
    Atomic(&'a (dyn Fn(usize, usize, T) + Sync + 'a)),
}

impl<T> fmt::Debug for Scatter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.miss {
            Miss::Panic => "Scatter::Copies",
            Miss::Atomic(_) => "Scatter::Atomic",
        };
        f.debug_struct(mode)
            .field("targets", &self.cells.len())
            .finish_non_exhaustive()
    }
}

impl<T: Copy + Add<Output = T>> Scatter<'_, T> {
    /// `targets[target][j] += value`: the adjoint `+=` at an index the
    /// generator could not prove owned. See
    /// [`for_each_owned_scatter`] for an example.
    ///
    /// # Panics
    /// If there is no target number `target`, or `j` is out of its bounds.
    #[inline(always)]
    pub fn add(&mut self, target: usize, j: usize, value: T) {
        // The path into the lane's own cells is the whole inner loop of a
        // scatter, so it is kept to two bounds checks; the rest is out of line.
        let cell = self
            .cells
            .get_mut(target)
            .and_then(|cells| cells.get_mut(j));
        match cell {
            Some(cell) => *cell = *cell + value,
            None => self.add_elsewhere(target, j, value),
        }
    }

    /// An add outside the lane's cells: atomic, or the panic of an add
    /// outside the targets.
    #[cold]
    #[inline(never)]
    fn add_elsewhere(&mut self, target: usize, j: usize, value: T) {
        match &mut self.miss {
            Miss::Atomic(add) => add(target, j, value),
            Miss::Panic => {
                let count = self.cells.len();
                match self.cells.get(target) {
                    None => no_such_target(target, count),
                    Some(cells) => out_of_bounds(target, j, cells.len()),
                }
            }
        }
    }
}

/// The panic of an add into a target number that does not exist.
fn no_such_target(target: usize, count: usize) -> ! {
    panic!("for_each_owned_scatter: no scatter target {target} (there are {count})");
}

/// The panic of an add outside its target.
fn out_of_bounds(target: usize, j: usize, len: usize) -> ! {
    panic!(
        "for_each_owned_scatter: index {j} out of bounds for scatter target {target} of length {len}"
    );
}

/// No owned buffers: one empty view per block, so loops that only scatter
/// or sum can use [`for_each_owned_scatter`] (and
/// [`for_each_owned_sum`](crate::for_each_owned_sum)) with `parts = ()`.
impl Parts for () {
    type Views = ();

    fn split_blocks(self, range: &Range<usize>) -> Vec<()> {
        vec![(); block_count(range)]
    }

    fn focus(_views: &mut (), _i: usize) {}

    fn finish(_views: Vec<()>) {}
}

/// [`for_each_owned_sum`](crate::for_each_owned_sum) whose body can also
/// `+=` at arbitrary indices of the shared `targets`, through the
/// [`Scatter`] it receives: `body(i, &mut views, &mut scatter)` writes the
/// owned rows of iteration `i` in `views`, calls `scatter.add(t, j, v)` for
/// `targets[t][j] += v` as often as it likes, and returns `K` terms summed
/// like [`sum`](crate::sum) (each block left to right, then the blocks in
/// order), so the returned sums never depend on the thread count.
///
/// The targets are updated in one of two modes:
/// - **Lanes**, when [`private_fits`] the total length of all targets: one
///   lane per thread of the current rayon pool (at most one per block),
///   lane `l` running the contiguous blocks `[l*n/lanes, (l+1)*n/lanes)`
///   serially in order. Lane 0 adds straight into the targets, every other
///   lane into its own zeroed copy of them (taken from the [`Scratch`]
///   pool); then `target[j] = target[j] + lane_1[j] + lane_2[j] + ...` in
///   lane order. On one thread this is the serial loop, with no copy. The
///   targets are bitwise the same from run to run on the same number of
///   threads, and equal to rounding across thread counts.
/// - **Atomic**, when the copies would not fit: the blocks run in parallel
///   as in [`for_each_owned_sum`](crate::for_each_owned_sum) and every add
///   is a compare-exchange on the shared target (counted by
///   [`atomic_ops`](crate::atomic_ops)); the targets' rounding then depends
///   on the threads' order, the returned sums still do not.
///
/// Targets of total length 0 (none, or all empty) need no copies and run
/// like the atomic mode without any atomic add. An empty range calls no
/// body, leaves the targets untouched and returns zeros.
///
/// Used for a parallel adjoint loop with both owned and computed-index
/// `+=`s, so one pass over the range serves both.
///
/// ```
/// use ad_rayon::for_each_owned_scatter;
///
/// // The adjoint of y_i = w·x_i·z[idx_i] (seeds ȳ_i = 1): x̄_i at the own index,
/// // z̄ at computed indices, w̄ as a sum.
/// let n = 4000;
/// let (w, x) = (0.5_f64, vec![2.0_f64; n]);
/// let (z, idx): (Vec<f64>, Vec<usize>) = (vec![3.0; 10], (0..n).map(|i| i % 10).collect());
/// let (mut xbar, mut zbar) = (vec![0.0; n], vec![0.0; 10]);
/// let [wbar] = for_each_owned_scatter(0..n, (&mut xbar,), vec![&mut zbar[..]], |i, (xbar,), scatter| {
///     xbar[i] += w * z[idx[i]];
///     scatter.add(0, idx[i], w * x[i]); // target 0 is `zbar`
///     [x[i] * z[idx[i]]]
/// });
/// assert_eq!((wbar, xbar[17], zbar[3]), (6.0 * n as f64, 1.5, 400.0));
/// ```
///
/// # Panics
/// As [`for_each_owned`](crate::for_each_owned) for the owned buffers; if
/// the body adds to a target number that does not exist or outside a target.
pub fn for_each_owned_scatter<P, T, const K: usize, F>(
    range: Range<usize>,
    parts: P,
    targets: Vec<&mut [T]>,
    body: F,
) -> [T; K]
where
    P: Parts,
    T: ScatterFloat,
    F: Fn(usize, &mut P::Views, &mut Scatter<'_, T>) -> [T; K] + Sync,
{
    if range.is_empty() {
        return zeros();
    }
    let total: usize = targets.iter().map(|t| t.len()).sum();
    if total > 0 && private_fits(total, std::mem::size_of::<T>()) {
        let lanes = lane_count(block_count(&range));
        copies_mode(range, parts, targets, body, lanes)
    } else {
        atomic_mode(range, parts, targets, body)
    }
}

/// [`for_each_owned_scatter`] for any number type, atomic adds or not (a generic `T`,
/// which may be a dual number): the lanes mode when the copies fit, else one lane, which
/// runs the blocks serially in order and adds straight into the targets. The targets and
/// sums are those of [`for_each_owned_scatter`] whenever its lanes mode applies.
///
/// ```
/// use ad_rayon::for_each_owned_scatter_copies;
///
/// // A histogram of (value, tangent) pairs: no atomic add exists for them.
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Pair(f64, f64);
/// impl std::ops::Add for Pair {
///     type Output = Pair;
///     fn add(self, o: Pair) -> Pair { Pair(self.0 + o.0, self.1 + o.1) }
/// }
/// impl num_traits::Zero for Pair {
///     fn zero() -> Pair { Pair(0.0, 0.0) }
///     fn is_zero(&self) -> bool { *self == Pair(0.0, 0.0) }
/// }
/// let mut hist = vec![Pair(0.0, 0.0); 3];
/// let [] = for_each_owned_scatter_copies(0..3000, (), vec![&mut hist[..]], |i, (), s| {
///     s.add(0, i % 3, Pair(1.0, 0.5));
///     []
/// });
/// assert_eq!(hist, [Pair(1000.0, 500.0); 3]);
/// ```
///
/// # Panics
/// As [`for_each_owned_scatter`].
pub fn for_each_owned_scatter_copies<P, T, const K: usize, F>(
    range: Range<usize>,
    parts: P,
    targets: Vec<&mut [T]>,
    body: F,
) -> [T; K]
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero + 'static,
    F: Fn(usize, &mut P::Views, &mut Scatter<'_, T>) -> [T; K] + Sync,
{
    if range.is_empty() {
        return zeros();
    }
    let total: usize = targets.iter().map(|t| t.len()).sum();
    let lanes = match private_fits(total, std::mem::size_of::<T>()) {
        true => lane_count(block_count(&range)),
        false => 1,
    };
    copies_mode(range, parts, targets, body, lanes)
}

/// [`for_each_owned_scatter`] with every scatter an atomic add, whatever the size of
/// the targets: the "atomics everywhere" baseline of the summation-aware adjoint
/// (`#[differentiate(parallel_adjoint = atomic)]`), for benchmarks.
///
/// ```
/// use ad_rayon::for_each_owned_scatter_atomic;
///
/// let mut hist = vec![0.0_f64; 3];
/// let [] = for_each_owned_scatter_atomic(0..3000, (), vec![&mut hist[..]], |i, (), s| {
///     s.add(0, i % 3, 1.0);
///     []
/// });
/// assert_eq!(hist, [1000.0; 3]);
/// ```
pub fn for_each_owned_scatter_atomic<P, T, const K: usize, F>(
    range: Range<usize>,
    parts: P,
    targets: Vec<&mut [T]>,
    body: F,
) -> [T; K]
where
    P: Parts,
    T: ScatterFloat,
    F: Fn(usize, &mut P::Views, &mut Scatter<'_, T>) -> [T; K] + Sync,
{
    if range.is_empty() {
        return zeros();
    }
    atomic_mode(range, parts, targets, body)
}

/// The copies mode of [`for_each_owned_scatter`] (non-empty `range`) on `lanes` lanes
/// (at least 1, at most one per block).
fn copies_mode<P, T, const K: usize, F>(
    range: Range<usize>,
    parts: P,
    mut targets: Vec<&mut [T]>,
    body: F,
    lanes: usize,
) -> [T; K]
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero + 'static,
    F: Fn(usize, &mut P::Views, &mut Scatter<'_, T>) -> [T; K] + Sync,
{
    let n_blocks = block_count(&range);
    // Lane `l` gets the contiguous blocks `[l*n/lanes, (l+1)*n/lanes)`.
    let mut dealt: Vec<Vec<(usize, P::Views)>> = (0..lanes).map(|_| Vec::new()).collect();
    for (k, views) in parts.split_blocks(&range).into_iter().enumerate() {
        dealt[k * lanes / n_blocks].push((k, views));
    }
    let lens: Vec<usize> = targets.iter().map(|t| t.len()).collect();
    // Lane 0 adds straight into the targets; the others into zeroed copies
    // taken from the scratch pool by the lane itself (so pages are touched
    // first by the thread that uses them).
    let mut first: Option<Vec<&mut [T]>> = Some(targets.iter_mut().map(|t| &mut **t).collect());
    let work: Vec<_> = dealt
        .into_iter()
        .enumerate()
        .map(|(lane, blocks)| (if lane == 0 { first.take() } else { None }, blocks))
        .collect();
    let run_lane = |(direct, blocks): (Option<Vec<&mut [T]>>, Vec<(usize, P::Views)>)| {
        let mut copies: Vec<Scratch<T>> = Vec::new();
        let cells: Vec<&mut [T]> = match direct {
            Some(direct) => direct,
            None => {
                copies = lens
                    .iter()
                    .map(|&len| Scratch::filled(T::zero(), len))
                    .collect();
                copies.iter_mut().map(|c| &mut **c).collect()
            }
        };
        let mut scatter = Scatter {
            cells,
            miss: Miss::Panic,
        };
        let partials = run_blocks::<P, T, K, F>(&range, blocks, &body, &mut scatter);
        drop(scatter);
        (copies, partials)
    };
    let results: Vec<(Vec<Scratch<T>>, Vec<(usize, [T; K], P::Views)>)> =
        work.into_par_iter().map(run_lane).collect();

    let mut partials = vec![zeros(); n_blocks];
    let mut views = Vec::with_capacity(n_blocks);
    let mut copies = Vec::with_capacity(lanes - 1);
    for (lane_copies, lane_partials) in results {
        // Lanes hold contiguous runs of blocks in order, so the views come back in order.
        for (k, partial, block_views) in lane_partials {
            partials[k] = partial;
            views.push(block_views);
        }
        if !lane_copies.is_empty() {
            copies.push(lane_copies);
        }
    }
    if !copies.is_empty() {
        for (t, target) in targets.iter_mut().enumerate() {
            target
                .par_chunks_mut(REDUCE_CHUNK)
                .enumerate()
                .for_each(|(c, out)| {
                    let lo = c * REDUCE_CHUNK;
                    for lane in &copies {
                        for (o, &x) in out.iter_mut().zip(&lane[t][lo..]) {
                            *o = *o + x;
                        }
                    }
                });
        }
    }
    P::finish(views);
    combine_in_order(partials)
}

/// Runs `blocks` (each with its owned views) in order, each block's
/// iterations in order, and returns each block's partial sums and its views.
fn run_blocks<P, T, const K: usize, F>(
    range: &Range<usize>,
    blocks: Vec<(usize, P::Views)>,
    body: &F,
    scatter: &mut Scatter<'_, T>,
) -> Vec<(usize, [T; K], P::Views)>
where
    P: Parts,
    T: Copy + Send + Sync + Add<Output = T> + Zero + 'static,
    F: Fn(usize, &mut P::Views, &mut Scatter<'_, T>) -> [T; K],
{
    let mut partials = Vec::with_capacity(blocks.len());
    for (k, mut views) in blocks {
        let mut partial = zeros();
        for i in block_range(range, k) {
            P::focus(&mut views, i);
            partial = add_into(partial, body(i, &mut views, scatter));
        }
        partials.push((k, partial, views));
    }
    partials
}

/// The lanes of a scatter over `n_blocks` (≥ 1) blocks: one per thread of
/// the current rayon pool, at most one per block.
pub(crate) fn lane_count(n_blocks: usize) -> usize {
    rayon::current_num_threads().clamp(1, n_blocks)
}

/// The atomic mode of [`for_each_owned_scatter`] (non-empty `range`).
fn atomic_mode<P, T, const K: usize, F>(
    range: Range<usize>,
    parts: P,
    targets: Vec<&mut [T]>,
    body: F,
) -> [T; K]
where
    P: Parts,
    T: ScatterFloat,
    F: Fn(usize, &mut P::Views, &mut Scatter<'_, T>) -> [T; K] + Sync,
{
    let lens: Vec<usize> = targets.iter().map(|t| t.len()).collect();
    let cells: Vec<T::Atomic<'_>> = targets.into_iter().map(T::atomic).collect();
    let add = |target: usize, j: usize, value: T| {
        let Some(target_cells) = cells.get(target) else {
            no_such_target(target, cells.len());
        };
        if j >= lens[target] {
            out_of_bounds(target, j, lens[target]);
        }
        T::atomic_add(target_cells, j, value);
    };
    let add: &(dyn Fn(usize, usize, T) + Sync) = &add;
    let (partials, views): (Vec<[T; K]>, Vec<P::Views>) = parts
        .split_blocks(&range)
        .into_par_iter()
        .enumerate()
        .map(|(k, mut views)| {
            let mut scatter = Scatter {
                cells: Vec::new(),
                miss: Miss::Atomic(add),
            };
            let partial = block_range(&range, k).fold(zeros(), |acc, i| {
                P::focus(&mut views, i);
                add_into(acc, body(i, &mut views, &mut scatter))
            });
            (partial, views)
        })
        .unzip();
    P::finish(views);
    combine_in_order(partials)
}

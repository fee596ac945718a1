//! `for_each_owned_scatter`: owned writes, partial sums and scatters at
//! computed indices in one loop, in the copies and the atomic mode.
mod common;

use std::sync::Mutex;

use ad_rayon::{
    block_count, block_range, for_each_owned_scatter, for_each_owned_scatter_atomic, private_fits,
    sum, ScatterFloat, BLOCK,
};
use common::{bits, hash, on_threads, random_f64, same_on_all_threads, THREADS};

/// Held by every test that runs the atomic mode, so the `count-atomics`
/// test sees only its own atomic adds.
static ATOMIC_MODE: Mutex<()> = Mutex::new(());

fn atomic_mode_lock() -> std::sync::MutexGuard<'static, ()> {
    ATOMIC_MODE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Inner steps per iteration.
const STEPS: usize = 3;

/// The scatter of step `s` of iteration `i` into targets of lengths `lens`:
/// (target number, index).
fn scatter_at(i: usize, s: usize, lens: &[usize]) -> (usize, usize) {
    let h = hash(i * STEPS + s);
    let t = (h % lens.len() as u64) as usize;
    (t, ((h >> 16) % lens[t] as u64) as usize)
}

/// Integer value in -3..=3, exact in f32 and f64 sums of this size.
fn int_value<T: From<i16>>(i: usize) -> T {
    T::from((hash(i + 7) % 7) as i16 - 3)
}

/// The histogram-like loop: `y[i] = 2 * v(i)`, returns `[v(i)]`, and adds
/// `v(i*STEPS + s)` into `targets` at `scatter_at(i, s)` for 3 inner steps.
fn histogram<T>(n: usize, y: &mut [T], targets: Vec<&mut [T]>, value: fn(usize) -> T) -> [T; 1]
where
    T: ScatterFloat + Send,
{
    histogram_with(false, n, y, targets, value)
}

/// [`histogram`] through `for_each_owned_scatter_atomic` when `atomic`.
fn histogram_with<T>(
    atomic: bool,
    n: usize,
    y: &mut [T],
    targets: Vec<&mut [T]>,
    value: fn(usize) -> T,
) -> [T; 1]
where
    T: ScatterFloat + Send,
{
    let lens: Vec<usize> = targets.iter().map(|t| t.len()).collect();
    macro_rules! run {
        ($scatter_fn:ident) => {
            $scatter_fn(0..n, (y,), targets, |i, (y,), scatter| {
                let v = value(i);
                y.set(i, v + v);
                for s in 0..STEPS {
                    let (t, j) = scatter_at(i, s, &lens);
                    scatter.add(t, j, value(i * STEPS + s));
                }
                [v]
            })
        };
    }
    if atomic {
        run!(for_each_owned_scatter_atomic)
    } else {
        run!(for_each_owned_scatter)
    }
}

/// The serial reference of [`histogram`]: plain loop, plain sums.
fn histogram_serial<T>(n: usize, y: &mut [T], targets: &mut [Vec<T>], value: fn(usize) -> T) -> T
where
    T: ScatterFloat,
{
    let lens: Vec<usize> = targets.iter().map(|t| t.len()).collect();
    let mut total = T::zero();
    for (i, y) in y.iter_mut().enumerate().take(n) {
        let v = value(i);
        *y = v + v;
        for s in 0..STEPS {
            let (t, j) = scatter_at(i, s, &lens);
            targets[t][j] = targets[t][j] + value(i * STEPS + s);
        }
        total = total + v;
    }
    total
}

/// The copies mode emulated serially on `threads` threads: `lanes =
/// min(threads, blocks)`; lane `l` runs the blocks `[l*n/lanes,
/// (l+1)*n/lanes)` in order, lane 0 adding into the targets themselves and
/// the others into their own zeroed copies; then `target + lane_1 + lane_2 +
/// ...`; the sum per block, then the blocks in order.
fn histogram_copies_emulated(n: usize, threads: usize, targets: &mut [Vec<f64>]) -> f64 {
    let lens: Vec<usize> = targets.iter().map(|t| t.len()).collect();
    let range = 0..n;
    let blocks = block_count(&range);
    let lanes = threads.min(blocks);
    let mut copies: Vec<Vec<Vec<f64>>> =
        vec![lens.iter().map(|&l| vec![0.0; l]).collect(); lanes - 1];
    let mut total = 0.0;
    for k in 0..blocks {
        let lane = k * lanes / blocks;
        let mut partial = 0.0;
        for i in block_range(&range, k) {
            for s in 0..STEPS {
                let (t, j) = scatter_at(i, s, &lens);
                let cells = if lane == 0 {
                    &mut targets[t]
                } else {
                    &mut copies[lane - 1][t]
                };
                cells[j] += random_f64(i * STEPS + s);
            }
            partial += random_f64(i);
        }
        total += partial;
    }
    for (t, target) in targets.iter_mut().enumerate() {
        for (j, x) in target.iter_mut().enumerate() {
            for lane in &copies {
                *x += lane[t][j];
            }
        }
    }
    total
}

fn matches_serial_reference<T>(threads: usize)
where
    T: ScatterFloat + From<i16> + PartialEq + std::fmt::Debug,
{
    let n = 5000;
    let lens = [37, 101];
    assert!(private_fits(lens.iter().sum(), std::mem::size_of::<T>()));
    let init =
        |len: usize, salt: usize| -> Vec<T> { (0..len).map(|j| int_value(j + salt)).collect() };
    let (mut a, mut b) = (init(lens[0], 1000), init(lens[1], 2000));
    let mut y = vec![T::zero(); n + 3];
    let [s] = on_threads(threads, || {
        histogram(n, &mut y, vec![&mut a, &mut b], int_value)
    });

    let mut expected = vec![init(lens[0], 1000), init(lens[1], 2000)];
    let mut y_expected = vec![T::zero(); n + 3];
    let s_expected = histogram_serial(n, &mut y_expected, &mut expected, int_value);
    assert_eq!(y, y_expected, "owned output on {threads} threads");
    assert_eq!(a, expected[0], "target 0 on {threads} threads");
    assert_eq!(b, expected[1], "target 1 on {threads} threads");
    assert_eq!(s, s_expected, "sum on {threads} threads");
}

#[test]
fn copies_match_serial_reference_for_integers_f64() {
    for threads in THREADS {
        matches_serial_reference::<f64>(threads);
    }
}

#[test]
fn copies_match_serial_reference_for_integers_f32() {
    for threads in THREADS {
        matches_serial_reference::<f32>(threads);
    }
}

#[test]
fn copies_follow_the_documented_order() {
    // 700: 2 blocks, fewer lanes than 8 threads; 5000: 10 blocks, uneven lanes;
    // 20_000: 40 blocks.
    for n in [700, 5000, 20_000] {
        let lens = [53, 4099];
        let init = |len: usize, salt: usize| -> Vec<f64> {
            (0..len).map(|j| random_f64(j + salt)).collect()
        };
        let run = || {
            let (mut a, mut b) = (init(lens[0], 10_000), init(lens[1], 20_000));
            let mut y = vec![0.0; n];
            let [s] = histogram(n, &mut y, vec![&mut a, &mut b], random_f64);
            (bits(&a), bits(&b), bits(&y), s.to_bits())
        };
        // The sums and the owned output do not depend on the thread count.
        let (_, _, y, s) = same_on_all_threads(|| {
            let (_, _, y, s) = run();
            ((), (), y, s)
        });
        let [s_sum] = sum(0..n, |i| [random_f64(i)]);
        assert_eq!(s, s_sum.to_bits(), "sum as ad_rayon::sum, n = {n}");
        let y_expected: Vec<f64> = (0..n).map(|i| 2.0 * random_f64(i)).collect();
        assert_eq!(y, bits(&y_expected), "owned output, n = {n}");
        // The targets: the documented order for the thread count, bit for bit, run
        // after run.
        for threads in THREADS {
            let (a, b, _, _) = on_threads(threads, run);
            let (a2, b2, _, _) = on_threads(threads, run);
            assert_eq!((&a, &b), (&a2, &b2), "rerun on {threads} threads, n = {n}");
            let mut expected = vec![init(lens[0], 10_000), init(lens[1], 20_000)];
            let s_expected = histogram_copies_emulated(n, threads, &mut expected);
            assert_eq!(
                a,
                bits(&expected[0]),
                "target 0, {threads} threads, n = {n}"
            );
            assert_eq!(
                b,
                bits(&expected[1]),
                "target 1, {threads} threads, n = {n}"
            );
            assert_eq!(s, s_expected.to_bits(), "sum, {threads} threads, n = {n}");
        }
    }
}

/// A target of 1_300_000 f64: on 8 threads, 7 copies of 10.4 MB, above the 64 MiB limit.
const BIG: usize = 1_300_000;

#[test]
fn atomic_mode_matches_serial_reference_for_integers() {
    let _lock = atomic_mode_lock();
    let n = 5000;
    let expected = || {
        let mut expected = vec![vec![0.0_f64; BIG], vec![1.0_f64; 37]];
        let mut y_expected = vec![0.0_f64; n];
        let s = histogram_serial(n, &mut y_expected, &mut expected, int_value);
        (expected, y_expected, s)
    };
    let (expected, y_expected, s_expected) = expected();
    // Chosen for the size on 8 threads, and forced on every thread count.
    for (threads, forced) in [(8, false), (1, true), (2, true), (8, true)] {
        let mut big = vec![0.0_f64; BIG];
        let mut small = vec![1.0_f64; 37];
        let mut y = vec![0.0_f64; n];
        let [s] = on_threads(threads, || {
            assert!(forced || !private_fits(BIG + 37, 8));
            histogram_with(forced, n, &mut y, vec![&mut big, &mut small], int_value)
        });
        assert_eq!(y, y_expected, "owned output on {threads} threads");
        assert!(big == expected[0], "big target on {threads} threads");
        assert_eq!(small, expected[1], "small target on {threads} threads");
        assert_eq!(s, s_expected, "sum on {threads} threads");
    }
}

#[test]
fn atomic_mode_sums_are_bitwise_the_same_on_1_2_8_threads() {
    let _lock = atomic_mode_lock();
    let n = 5000;
    let s = same_on_all_threads(|| {
        let mut big = vec![0.0_f64; BIG];
        let [s] = for_each_owned_scatter_atomic(0..n, (), vec![&mut big], |i, (), scatter| {
            scatter.add(0, hash(i) as usize % BIG, random_f64(i));
            [random_f64(i)]
        });
        s.to_bits()
    });
    let [s_sum] = sum(0..n, |i| [random_f64(i)]);
    assert_eq!(s, s_sum.to_bits());
}

#[cfg(feature = "count-atomics")]
#[test]
fn atomic_mode_counts_its_adds_and_copies_mode_none() {
    use ad_rayon::{atomic_ops, reset_atomic_ops};

    let _lock = atomic_mode_lock();
    let n = 5000;
    reset_atomic_ops();
    let mut small = vec![0.0_f64; 37];
    let mut y = vec![0.0_f64; n];
    on_threads(8, || histogram(n, &mut y, vec![&mut small], int_value));
    assert_eq!(atomic_ops(), 0, "the copies mode uses no atomics");

    let mut big = vec![0.0_f64; BIG];
    on_threads(8, || {
        histogram(n, &mut y, vec![&mut big, &mut small], int_value)
    });
    assert_eq!(atomic_ops(), n * STEPS, "one atomic add per scatter");
    reset_atomic_ops();
}

#[test]
fn no_owned_buffers_and_no_targets() {
    let n = 3000;
    // `parts = ()`, one target.
    let mut hist = vec![0.0_f64; 10];
    let [count, half] = for_each_owned_scatter(0..n, (), vec![&mut hist], |i, (), scatter| {
        scatter.add(0, i % 10, 1.0);
        [1.0, 0.5]
    });
    assert_eq!(hist, [300.0; 10]);
    assert_eq!((count, half), (3000.0, 1500.0));

    // No targets at all: a deterministic sum with owned writes.
    let mut y = vec![0.0_f32; n];
    let [s] = for_each_owned_scatter(0..n, (&mut y,), Vec::new(), |i, (y,), _| {
        y.set(i, 1.0);
        [i as f32]
    });
    assert_eq!(s.to_bits(), sum(0..n, |i| [i as f32])[0].to_bits());
    assert!(y.iter().all(|&v| v == 1.0));

    // Only empty targets: nothing to privatize.
    let mut empty: Vec<f64> = Vec::new();
    let [s] = for_each_owned_scatter(0..n, (), vec![&mut empty], |_, (), _| [1.0]);
    assert_eq!(s, n as f64);
}

#[test]
fn empty_range_calls_nothing_and_returns_zeros() {
    let mut hist = vec![2.0_f64; 4];
    let mut y: Vec<f64> = Vec::new();
    let sums: [f64; 2] = for_each_owned_scatter(10..10, (&mut y,), vec![&mut hist], |_, _, _| {
        panic!("body called on an empty range")
    });
    assert_eq!(sums, [0.0, 0.0]);
    assert_eq!(hist, [2.0; 4]);
}

#[test]
fn range_not_starting_at_zero_with_rows() {
    // Rows of width 2 from row 100, a range of 3 blocks that does not start at 0.
    let range = 100..100 + 2 * BLOCK + 7;
    let mut grid = vec![0_i64; 2 * range.end];
    let mut hist = vec![0.0_f32; 5];
    let [s] = for_each_owned_scatter(
        range.clone(),
        (ad_rayon::Rows {
            data: &mut grid,
            width: 2,
        },),
        vec![&mut hist],
        |i, (rows,), scatter| {
            rows.row(i).copy_from_slice(&[i as i64, 1]);
            scatter.add(0, i % 5, 1.0);
            [1.0_f32]
        },
    );
    assert_eq!(s, range.len() as f32);
    assert_eq!(hist.iter().sum::<f32>(), range.len() as f32);
    for i in range.clone() {
        assert_eq!(&grid[2 * i..2 * i + 2], &[i as i64, 1]);
    }
    assert!(grid[..2 * range.start].iter().all(|&v| v == 0));
}

#[test]
#[should_panic(expected = "index 10 out of bounds for scatter target 1 of length 10")]
fn copies_add_out_of_bounds_panics() {
    let (mut a, mut b) = (vec![0.0_f64; 3], vec![0.0_f64; 10]);
    let _: [f64; 0] = for_each_owned_scatter(0..100, (), vec![&mut a, &mut b], |i, (), scatter| {
        scatter.add(1, i % 11, 1.0);
        []
    });
}

#[test]
#[should_panic(expected = "no scatter target 2 (there are 2)")]
fn copies_add_to_missing_target_panics() {
    let (mut a, mut b) = (vec![0.0_f64; 3], vec![0.0_f64; 10]);
    let _: [f64; 0] = for_each_owned_scatter(0..100, (), vec![&mut a, &mut b], |_, (), scatter| {
        scatter.add(2, 0, 1.0);
        []
    });
}

#[test]
#[should_panic(expected = "index 1300000 out of bounds for scatter target 0 of length 1300000")]
fn atomic_add_out_of_bounds_panics() {
    let _lock = atomic_mode_lock();
    let mut big = vec![0.0_f64; BIG];
    let _: [f64; 0] = for_each_owned_scatter_atomic(0..1, (), vec![&mut big], |_, (), scatter| {
        scatter.add(0, BIG, 1.0);
        []
    });
}

#[test]
#[should_panic(expected = "no scatter target 0 (there are 0)")]
fn add_without_targets_panics() {
    let _: [f64; 0] = for_each_owned_scatter(0..1, (), Vec::new(), |_, (), scatter| {
        scatter.add(0, 0, 1.0);
        []
    });
}

/// A number type without an atomic add (as a dual number): a value and a tangent.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pair(f64, f64);

impl std::ops::Add for Pair {
    type Output = Pair;
    fn add(self, o: Pair) -> Pair {
        Pair(self.0 + o.0, self.1 + o.1)
    }
}

impl num_traits::Zero for Pair {
    fn zero() -> Pair {
        Pair(0.0, 0.0)
    }
    fn is_zero(&self) -> bool {
        *self == Pair(0.0, 0.0)
    }
}

/// `for_each_owned_scatter_copies` on a type without atomics: the histogram of `n`
/// iterations into one target of `len` elements, against the serial loop (integer
/// values: exact in any order).
fn copies_of_any_type(threads: usize, n: usize, len: usize) {
    let value = |k: usize| Pair(int_value::<f64>(k), int_value::<f64>(k + 1));
    let at = |i: usize, s: usize| (hash(i * STEPS + s) % len as u64) as usize;
    let mut target = vec![Pair(1.0, 0.0); len];
    let mut y = vec![Pair(0.0, 0.0); n];
    let [s] = on_threads(threads, || {
        ad_rayon::for_each_owned_scatter_copies(
            0..n,
            (&mut y,),
            vec![&mut target[..]],
            |i, (y,), scatter| {
                y[i] = value(i) + value(i);
                for s in 0..STEPS {
                    scatter.add(0, at(i, s), value(i * STEPS + s));
                }
                [value(i)]
            },
        )
    });
    let mut expected = vec![Pair(1.0, 0.0); len];
    let mut s_expected = Pair(0.0, 0.0);
    for i in 0..n {
        assert_eq!(
            y[i],
            value(i) + value(i),
            "owned output {i} on {threads} threads"
        );
        for s in 0..STEPS {
            let j = at(i, s);
            expected[j] = expected[j] + value(i * STEPS + s);
        }
        s_expected = s_expected + value(i);
    }
    assert!(target == expected, "target of {len} on {threads} threads");
    assert_eq!(s, s_expected, "sum on {threads} threads");
}

#[test]
fn copies_of_a_type_without_atomics_match_serial() {
    for threads in THREADS {
        copies_of_any_type(threads, 5000, 101);
    }
    // Too large to copy on 8 threads: one lane, adding straight into the target.
    let len = 700_000;
    assert!(!on_threads(8, || private_fits(
        len,
        std::mem::size_of::<Pair>()
    )));
    copies_of_any_type(8, 3000, len);
}

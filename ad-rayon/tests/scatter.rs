//! Scatters at unknown indices: atomic slices and private accumulators.
mod common;

use ad_rayon::{for_each, private_fits, scatter_private, AtomicF32Slice, AtomicF64Slice, BLOCK};
use common::{bits, hash, on_threads, random_f64, same_on_all_threads};

#[test]
fn atomic_adds_from_many_threads_sum_exactly_for_integers() {
    let mut grad = vec![0.0_f64; 7];
    let mut grad32 = vec![0.0_f32; 7];
    let n = 100_000;
    on_threads(8, || {
        let cells = AtomicF64Slice::new(&mut grad);
        let cells32 = AtomicF32Slice::new(&mut grad32);
        for_each(0..n, |i| {
            cells.add(i % 7, (i % 5) as f64);
            cells32.add(i % 7, 1.0);
        });
    });
    let mut expected = [0.0_f64; 7];
    (0..n).for_each(|i| expected[i % 7] += (i % 5) as f64);
    assert_eq!(grad, expected);
    assert_eq!(grad32.iter().sum::<f32>(), n as f32);
}

#[test]
#[should_panic(expected = "AtomicF64Slice::add: index 3 out of bounds for length 3")]
fn atomic_add_out_of_bounds_panics() {
    let mut grad = vec![0.0_f64; 3];
    AtomicF64Slice::new(&mut grad).add(3, 1.0);
}

#[cfg(not(feature = "count-atomics"))]
#[test]
fn atomic_counter_is_zero_without_the_feature() {
    let mut grad = vec![0.0_f64; 1];
    AtomicF64Slice::new(&mut grad).add(0, 1.0);
    assert_eq!(ad_rayon::atomic_ops(), 0);
}

/// Unknown index of iteration `i` into a target of `len`.
fn index(i: usize, len: usize) -> usize {
    (hash(i) % len as u64) as usize
}

#[test]
fn private_scatter_equals_serial_scatter_for_integers() {
    let range = 3..3 + 9 * BLOCK + 100;
    let mut target: Vec<f64> = (0..100).map(|j| j as f64).collect();
    let mut serial = target.clone();
    for i in range.clone() {
        serial[index(i, 100)] += (i % 13) as f64;
        serial[index(i + 1, 100)] -= 1.0;
    }
    on_threads(8, || {
        scatter_private(range.clone(), &mut target, 8, |i, acc| {
            acc.add(index(i, 100), (i % 13) as f64);
            acc.add(index(i + 1, 100), -1.0);
        })
    });
    assert_eq!(target, serial);
}

#[test]
fn private_scatter_is_bitwise_independent_of_threads() {
    let range = 1..1 + 20 * BLOCK + 7;
    for lanes in [1, 3, 8, 64] {
        same_on_all_threads(|| {
            let mut target: Vec<f64> = (0..37).map(random_f64).collect();
            scatter_private(range.clone(), &mut target, lanes, |i, acc| {
                acc.add(index(i, 37), random_f64(i) * 1e9);
            });
            bits(&target)
        });
    }
}

#[test]
fn private_scatter_on_empty_range_leaves_target() {
    let mut target = vec![1.5_f64; 4];
    scatter_private(2..2, &mut target, 8, |i, _| panic!("called for {i}"));
    assert_eq!(target, [1.5; 4]);
}

#[test]
#[should_panic(expected = "scatter_private: index 4 out of bounds for target length 4")]
fn private_add_out_of_bounds_panics() {
    let mut target = vec![0.0_f64; 4];
    scatter_private(0..1, &mut target, 2, |_, acc| acc.add(4, 1.0));
}

#[test]
#[should_panic(expected = "scatter_private: lanes must be at least 1")]
fn zero_lanes_panics() {
    scatter_private(0..1, &mut [0.0_f64], 0, |_, _| {});
}

#[test]
fn private_fits_compares_copies_times_bytes() {
    // 8 threads: 7 copies.
    on_threads(8, || {
        assert!(private_fits(1000, 8));
        assert!(private_fits((64 << 20) / 56, 8));
        assert!(!private_fits((64 << 20) / 56 + 1, 8));
        assert!(!private_fits(usize::MAX / 2, 8), "overflow must not fit");
        assert!(!private_fits(1 << 40, 8));
    });
    // One thread adds into the target itself: no copy.
    on_threads(1, || assert!(private_fits(1 << 40, 8)));
}

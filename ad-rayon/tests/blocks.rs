//! Blocked `for_each` and the deterministic `sum`.
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use ad_rayon::{block_count, block_range, for_each, sum, BLOCK};
use common::{on_threads, random_f64, same_on_all_threads};

#[test]
fn blocks_tile_a_range_not_starting_at_zero() {
    let range = 7..7 + 3 * BLOCK + 5;
    assert_eq!(block_count(&range), 4);
    assert_eq!(block_range(&range, 0), 7..7 + BLOCK);
    assert_eq!(block_range(&range, 3), 7 + 3 * BLOCK..range.end);
    assert_eq!(block_count(&(4..4)), 0);
}

#[test]
fn for_each_visits_every_index_once() {
    let range = 13..13 + 4 * BLOCK + 77;
    let visits: Vec<AtomicUsize> = (0..range.end + 10).map(|_| AtomicUsize::new(0)).collect();
    on_threads(8, || {
        for_each(range.clone(), |i| {
            visits[i].fetch_add(1, Ordering::Relaxed);
        })
    });
    for (i, v) in visits.iter().enumerate() {
        assert_eq!(
            v.load(Ordering::Relaxed),
            usize::from(range.contains(&i)),
            "index {i}"
        );
    }
}

#[test]
fn for_each_on_empty_range_does_nothing() {
    for_each(5..5, |i| panic!("called for {i}"));
    #[allow(clippy::reversed_empty_ranges)]
    for_each(9..3, |i| panic!("called for {i}"));
}

/// Order-sensitive terms: 1.0 is lost or kept depending on when ±1e16 come.
fn cancelling(i: usize) -> f64 {
    match i % 7 {
        0 => 1e16,
        3 => -1e16,
        5 => random_f64(i),
        _ => 1.0,
    }
}

#[test]
fn sum_is_bitwise_independent_of_threads() {
    let range = 3..10_003;
    let forward: f64 = range.clone().map(cancelling).sum();
    let backward: f64 = range.clone().rev().map(cancelling).sum();
    assert_ne!(
        forward.to_bits(),
        backward.to_bits(),
        "terms must be order-sensitive"
    );

    let [s] = same_on_all_threads(|| sum(range.clone(), |i| [cancelling(i)]).map(f64::to_bits))
        .map(f64::from_bits);
    // Reference: each block left to right from zero, then blocks in order.
    let expected = (0..block_count(&range))
        .map(|k| block_range(&range, k).fold(0.0, |a, i| a + cancelling(i)))
        .fold(0.0, |a, p| a + p);
    assert_eq!(s.to_bits(), expected.to_bits());
}

#[test]
fn sum_of_several_components_in_f32() {
    let [count, half] =
        same_on_all_threads(|| sum(0..2 * BLOCK + 1, |i| [1.0_f32, i as f32 * 0.5]));
    assert_eq!(count, (2 * BLOCK + 1) as f32);
    assert_eq!(half, (2 * BLOCK * (2 * BLOCK + 1) / 4) as f32);
}

#[test]
fn sum_of_empty_range_is_zero() {
    assert_eq!(sum(8..8, |i| [i as f64; 3]), [0.0; 3]);
}

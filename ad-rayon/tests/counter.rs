//! The atomic-add counter (`--features count-atomics`); its own test binary
//! so no other test moves the global count.
#![cfg(feature = "count-atomics")]

use ad_rayon::{
    atomic_ops, for_each, for_each_owned, reset_atomic_ops, scatter_private, AtomicF64Slice,
};

#[test]
fn counts_atomic_adds_and_only_them() {
    reset_atomic_ops();
    let mut grad = vec![0.0_f64; 5];
    let cells = AtomicF64Slice::new(&mut grad);
    for_each(0..1234, |i| cells.add(i % 5, 1.0));
    assert_eq!(atomic_ops(), 1234);

    let mut y = vec![0.0_f64; 100];
    for_each_owned(0..100, (&mut y,), |i, (y,)| y.add(i, 1.0));
    scatter_private(0..100, &mut y, 8, |i, acc| acc.add(i % 7, 1.0));
    assert_eq!(atomic_ops(), 1234, "owned and private loops use no atomics");

    reset_atomic_ops();
    assert_eq!(atomic_ops(), 0);
}

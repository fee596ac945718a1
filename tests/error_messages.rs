//! Run-time misuse of generated functions: the panic names the parameter, both lengths
//! and the fix. (Compile-time messages are the trybuild cases in `tests/ui/fail`.)

use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn weighted_sum(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += k * x[i] * x[i];
    }
    s
}

#[test]
#[should_panic(
    expected = "phidiff: `dx` has length 2 but `x` has length 3; the derivative \
                           buffer passed after `x` (its tangent in `_fwd`, its shadow in \
                           `_rev`) must have the same length: allocate it with \
                           `vec![0.0; x.len()]`"
)]
fn reverse_with_a_short_shadow_names_the_parameter() {
    let x = [1.0, 2.0, 3.0];
    let mut dx = vec![0.0; 2];
    weighted_sum_rev(&x, &mut dx, 0.5, 1.0);
}

#[test]
#[should_panic(expected = "phidiff: `dx` has length 4 but `x` has length 3")]
fn forward_with_a_long_tangent_names_the_parameter() {
    let x = [1.0, 2.0, 3.0];
    let dx = [1.0, 0.0, 0.0, 0.0];
    weighted_sum_fwd(&x, &dx, 0.5, 0.0);
}

#[test]
fn matching_lengths_pass() {
    let x = [1.0, 2.0, 3.0];
    let mut dx = vec![0.0; x.len()];
    let (value, dk) = weighted_sum_rev(&x, &mut dx, 0.5, 1.0);
    assert_eq!(value, weighted_sum(&x, 0.5));
    assert_eq!(dk, 14.0);
    assert_eq!(dx, [1.0, 2.0, 3.0]);
}

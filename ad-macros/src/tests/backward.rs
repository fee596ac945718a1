//! Backward counters (`analysis::reuse::Backward`): an integer loop parameter that an
//! inner loop steps is run backwards in the reverse sweep instead of being taped. Which
//! counters qualify, and that the reverse program computes the same bits as the one that
//! tapes them (through the IR interpreter). The derivatives of such counters' programs are
//! checked against finite differences and the dot-product test in `tests/numeric`
//! (`reuse::triangular_forms`, `counted_indices`, `countdown_bands`).

use super::twin_if::same_bits_fewer_tapes;
use crate::pipeline::Pass;

#[test]
fn counters_run_backwards_and_compute_the_same_bits() {
    // (tapes removed, buffer lengths in parameter order, source).
    let cases: [(usize, &[usize], &str); 6] = [
        // A packed triangle walked column by column (ADBench's GMM), at the top level:
        // the counter's final value is at hand, so its tape goes.
        (
            1,
            &[10, 5],
            "fn f(l: &[f64], x: &[f64], d: usize) -> f64 {
                let mut z = vec![0.0; d];
                let mut li = 0;
                for c in 0..d {
                    for r in c + 1..d {
                        z[r] += l[li] * x[c];
                        li += 1;
                    }
                }
                let mut s = 0.0;
                for j in 0..d {
                    s += z[j] * z[j] * x[j];
                }
                s
            }",
        ),
        // Counted down by 2, by inner loops of 0 to 3 iterations, in every term of a sum
        // (reversed as it runs, so the final value is at hand in the term's adjoint).
        (
            1,
            &[24, 5],
            "fn f(band: &[f64], x: &[f64]) -> f64 {
                let n = x.len();
                let mut total = 0.0;
                for p in 0..3 {
                    let mut l = band.len();
                    let mut acc = 0.0;
                    for i in 0..n {
                        for j in 0..(i + p) % 4 {
                            l -= 2;
                            acc += band[l] * x[(i + j) % n];
                        }
                    }
                    total += acc * acc;
                }
                total
            }",
        ),
        // Not a backward counter: the inner loop runs in a branch.
        (
            0,
            &[10, 5],
            "fn f(l: &[f64], x: &[f64], d: usize) -> f64 {
                let mut z = vec![0.0; d];
                let mut li = 0;
                for c in 0..d {
                    if x[c] > 0.0 {
                        for r in c + 1..d {
                            z[r] += l[li] * x[c];
                            li += 1;
                        }
                    }
                }
                z[d - 1] * z[d - 2]
            }",
        ),
        // A counter of a sum reversed as it runs (`fuse`): taped, as before.
        (
            0,
            &[10, 5],
            "fn f(l: &[f64], x: &[f64], d: usize) -> f64 {
                let mut s = 0.0;
                let mut li = 0;
                for c in 0..d {
                    for r in c + 1..d {
                        s += l[li] * x[c] * x[r];
                        li += 1;
                    }
                }
                s
            }",
        ),
        // Not one either: the inner loop's length depends on the counter.
        (
            0,
            &[40, 5],
            "fn f(l: &[f64], x: &[f64], d: usize) -> f64 {
                let mut z = vec![0.0; d];
                let mut li = 0;
                for c in 0..d {
                    for r in 0..li % 3 + 1 {
                        z[c] += l[li] * x[r];
                        li += 1;
                    }
                }
                z[0] * z[d - 1]
            }",
        ),
        // Not one either: two inner loops step it.
        (
            0,
            &[20, 5],
            "fn f(l: &[f64], x: &[f64], d: usize) -> f64 {
                let mut z = vec![0.0; d];
                let mut li = 0;
                for c in 0..d {
                    for r in c + 1..d {
                        z[c] += l[li] * x[r];
                        li += 1;
                    }
                    for r in 0..c {
                        z[r] += l[li] * x[c];
                        li += 1;
                    }
                }
                z[0] * z[d - 1]
            }",
        ),
    ];
    same_bits_fewer_tapes(
        &cases,
        ["backward", "taped"],
        &[5, 4, 2],
        "not a backward counter",
        Pass::BackwardCounters,
    );
}

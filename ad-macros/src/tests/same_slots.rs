//! Values that are the same in every iteration of their loops (`analysis::reuse::
//! same_every_time`) are saved in one slot instead of a tape per iteration: which values
//! qualify, and that the reverse program computes the same bits as the one that tapes them
//! (through the IR interpreter). The derivatives of such programs are checked against
//! finite differences and the dot-product test in `tests/numeric` (`reuse::fixed_weights`,
//! `reuse::repeated_triangles` and the ADBench GMM tests).

use super::twin_if::same_bits_fewer_tapes;
use crate::pipeline::Pass;

#[test]
fn values_fixed_across_iterations_take_one_slot_and_compute_the_same_bits() {
    // (tapes removed, buffer lengths in parameter order, source).
    let cases: [(usize, &[usize], &str); 7] = [
        // GMM's packed triangle, redone in each round from the same start: the counter's
        // final value (where its reverse sweep starts) is the same every round.
        (
            1,
            &[10, 5, 3],
            "fn f(l: &[f64], x: &[f64], out: &mut [f64], d: usize) -> f64 {
                let mut z = vec![0.0; d];
                for i in 0..out.len() {
                    for j in 0..d {
                        z[j] = x[j] * (i as f64 + 1.0);
                    }
                    let mut li = 0;
                    for c in 0..d {
                        for r in c + 1..d {
                            z[r] += l[li] * x[c];
                            li += 1;
                        }
                    }
                    let mut s = 0.0;
                    for j in 0..d {
                        s += z[j] * z[j];
                    }
                    out[i] = s;
                }
                out[0] * out[2]
            }",
        ),
        // A float weight summed by an inner loop over a fixed range: the same in every
        // iteration of the outer loop, where the reverse sweep reads it as a coefficient.
        (
            1,
            &[6, 6],
            "fn f(x: &[f64], out: &mut [f64], m: usize) -> f64 {
                for i in 0..x.len() {
                    let mut w = 0.0;
                    for j in 0..m {
                        w += ((j + 1) as f64).sqrt() * 0.5;
                    }
                    out[i] = w * x[i].sin();
                }
                out[0] * out[x.len() - 1]
            }",
        ),
        // Not one: the inner range depends on the outer index.
        (
            0,
            &[6, 6],
            "fn f(x: &[f64], out: &mut [f64], m: usize) -> f64 {
                for i in 0..x.len() {
                    let mut w = 0.0;
                    for j in 0..m + i {
                        w += ((j + 1) as f64).sqrt() * 0.5;
                    }
                    out[i] = w * x[i].sin();
                }
                out[0] * out[x.len() - 1]
            }",
        ),
        // Not one: the sum reads a buffer.
        (
            0,
            &[6, 6, 8],
            "fn f(x: &[f64], out: &mut [f64], idx: &[usize], m: usize) -> f64 {
                for i in 0..x.len() {
                    let mut t = 0;
                    for j in 0..m {
                        t += idx[j] % 3;
                    }
                    out[i] = (t as f64 + 0.5) * x[i].sin();
                }
                out[0] * out[x.len() - 1]
            }",
        ),
        // Not one: the inner loop may stop early.
        (
            0,
            &[6, 6],
            "fn f(x: &[f64], out: &mut [f64], m: usize) -> f64 {
                for i in 0..x.len() {
                    let mut w = 0.0;
                    for j in 0..m {
                        if j * j > m {
                            break;
                        }
                        w += ((j + 1) as f64).sqrt() * 0.5;
                    }
                    out[i] = w * x[i].sin();
                }
                out[0] * out[x.len() - 1]
            }",
        ),
        // Not one: a parameter of the inner loop that the kept one reads is stepped by a
        // value of the outer loop.
        (
            0,
            &[6, 6],
            "fn f(x: &[f64], out: &mut [f64], m: usize) -> f64 {
                for i in 0..x.len() {
                    let mut w = 0.0;
                    let mut v = 1.0;
                    for j in 0..m {
                        w += v * 0.5;
                        v += i as f64;
                    }
                    out[i] = w * x[i].sin();
                }
                out[0] * out[x.len() - 1]
            }",
        ),
        // Not one: in a rayon loop, whose iterations run on several threads.
        (
            0,
            &[6, 6],
            "fn f(x: &[f64], out: &mut [f64], m: usize) -> f64 {
                out.par_iter_mut().enumerate().for_each(|(i, o)| {
                    let mut w = 0.0;
                    for j in 0..m {
                        w += ((j + 1) as f64).sqrt() * 0.5;
                    }
                    *o = w * x[i].sin();
                });
                out[0] * out[x.len() - 1]
            }",
        ),
    ];
    same_bits_fewer_tapes(
        &cases,
        ["one slot", "taped"],
        &[5, 4, 0],
        "nothing is the same in every iteration",
        Pass::SameSlots,
    );
}

//! Index-set splitting (`derivative::reverse::split`): which loops are split, and that the
//! split program computes bitwise what the unsplit one computes (through the IR
//! interpreter) for lengths and integer parameters that empty each of the three loops in
//! turn. The derivatives themselves are checked against finite differences and the
//! dot-product test in `tests/numeric` (`parallel.rs`: the rayon stencils; `split.rs`).

use super::twin_if::{args_of, loops, reverse_pair};
use crate::ir::interp::{run, RtArg};
use crate::ir::Function;
use crate::pipeline::Pass;

/// The results and buffers afterwards as bits, or the error (an index out of range, a
/// division by zero), which the split program must give exactly where the whole one does.
fn outcome(f: &Function, args: &[RtArg]) -> Result<(Vec<u64>, Vec<Vec<u64>>), String> {
    let mut a = args.to_vec();
    // Without the instruction the message starts with (`i24: index 3 out of bounds ..`):
    // the copies of an access are other instructions.
    let results =
        run(f, &mut a).map_err(|e| e.split_once(": ").map_or(e.clone(), |(_, m)| m.into()))?;
    let bits = |v: &[f64]| v.iter().map(|y| y.to_bits()).collect::<Vec<u64>>();
    Ok((
        results
            .iter()
            .map(|v| v.as_float().expect("float result").to_bits())
            .collect(),
        a.iter()
            .filter_map(|x| match x {
                RtArg::Buf(v) => Some(bits(v)),
                _ => None,
            })
            .collect(),
    ))
}

#[test]
fn interval_branches_are_split_and_compute_the_same_bits() {
    // (loops added, source): each split loop adds two.
    let cases: [(usize, &str); 8] = [
        // A 1-D stencil with its boundary in a branch (serial).
        (
            2,
            "fn f(u: &[f64], out: &mut [f64], r: f64) -> f64 {
                let n = u.len();
                let mut s = 0.0;
                for j in 0..n {
                    if j > 0 && j < n - 1 {
                        out[j] = u[j] + r * (u[j - 1] - 2.0 * u[j] + u[j + 1]) * (1.0 + 0.1 * u[j] * u[j]);
                    } else {
                        out[j] = u[j];
                    }
                    s += out[j] * out[j];
                }
                s
            }",
        ),
        // The rayon 2-D stencil of the benchmarks: rows in parallel, the invariant row
        // test and the column test in one condition.
        (
            2,
            "fn f(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
                let m = u.len() / n;
                out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                    for j in 0..row.len() {
                        if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
                            let c = u[i * n + j];
                            let lap = u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1]
                                + u[i * n + j + 1] - 4.0 * c;
                            row[j] = c + r * lap * (1.0 + 0.1 * c * c);
                        } else {
                            row[j] = u[i * n + j];
                        }
                    }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
        ),
        // Inclusive bounds, the index on the right, and an integer parameter.
        (
            2,
            "fn f(u: &[f64], k: usize) -> f64 {
                let mut s = 0.0;
                for j in 1..u.len() {
                    let t = if k > 0 && 2 <= j && u.len() - 2 >= j && j <= k + 2 {
                        u[j] * u[j - 1]
                    } else {
                        u[j].sin()
                    };
                    s += t;
                }
                s
            }",
        ),
        // An inner loop bounded by the outer index: `j < i` is invariant in it.
        (
            2,
            "fn f(u: &[f64], n: usize) -> f64 {
                let mut s = 0.0;
                for i in 0..n {
                    for j in 0..n {
                        let t = if j < i { u[i * n + j] * u[j * n + i] } else { u[i * n + j] };
                        s += t * t;
                    }
                }
                s
            }",
        ),
        // Not split: the condition reads the data.
        (
            0,
            "fn f(u: &[f64]) -> f64 {
                let mut s = 0.0;
                for j in 1..u.len() {
                    let t = if j > 1 && u[j] > 0.0 { u[j] * u[j - 1] } else { u[j] };
                    s += t;
                }
                s
            }",
        ),
        // Not split: not an interval of the index.
        (
            0,
            "fn f(u: &[f64]) -> f64 {
                let mut s = 0.0;
                for j in 0..u.len() {
                    let t = if j % 2 == 0 { u[j] * u[j] } else { u[j] };
                    s += t;
                }
                s
            }",
        ),
        // Not split: an `||` (two intervals).
        (
            0,
            "fn f(u: &[f64]) -> f64 {
                let n = u.len();
                let mut s = 0.0;
                for j in 0..n {
                    let t = if j < 1 || j > n - 2 { u[j] } else { u[j] * u[j - 1] };
                    s += t;
                }
                s
            }",
        ),
        // Not split: a loop in the branch.
        (
            0,
            "fn f(u: &[f64]) -> f64 {
                let n = u.len();
                let mut s = 0.0;
                for j in 0..n {
                    if j > 0 {
                        for k in 0..j {
                            s += u[k] * u[j];
                        }
                    } else {
                        s += u[j];
                    }
                }
                s
            }",
        ),
    ];
    for (added, src) in cases {
        let (split, whole, shown) =
            reverse_pair("reverse", src, ["split", "whole"], Pass::IndexSets);
        assert_eq!(loops(&split), loops(&whole) + added, "{shown}");
        if added == 0 {
            assert_eq!(
                crate::ir::printer::print(&split),
                crate::ir::printer::print(&whole),
                "nothing to split, so nothing changes: {shown}"
            );
        }
        // Lengths 0..=9 (the rayon stencil: 0..=9 rows of 4, then rows of 1, 2 and 3), with
        // the integer parameter below, at and above the lengths.
        let lens: Vec<usize> = (0..=9).chain([12, 16]).collect();
        let mut ran = 0;
        for len in lens {
            for k in [0, 1, 3, 7] {
                let args = args_of(&split, &[len, len], k);
                let got = outcome(&split, &args);
                assert_eq!(
                    got,
                    outcome(&whole, &args),
                    "length {len}, integer {k}: {shown}"
                );
                ran += usize::from(got.is_ok());
            }
        }
        assert!(ran >= 10, "only {ran} runs without an error: {shown}");
    }
}

//! Max and min reductions reversed through the element that won
//! (`derivative::reverse::extremum`): which loops are rewritten, and that the rewritten
//! reverse program computes what the reduction's own reverse loop computes (through the
//! IR interpreter), on elements with ties, NaNs, the initial value winning, and no
//! iteration at all. Derivatives that depend on the winner are checked against finite
//! differences and the dot-product test in `tests/numeric` (`statistics::odd_extremes`,
//! `row_peaks`, `row_peak_sum`).

use super::twin_if::{loops, reverse_pair, run_bits};
use crate::ir::interp::{RtArg, RtVal};
use crate::pipeline::Pass;

#[test]
fn reductions_lose_their_reverse_loop_and_compute_the_same_bits() {
    // (reverse loops removed, searches for the winner added, source): the search stops at
    // the first equal element for `m.max(v)` and runs to the end for `v.min(m)`.
    let cases = [
        // Two reductions in one loop, the second written `v.min(m)`, at `2i + 1`.
        (
            1,
            2,
            "fn f(x: &[f64]) -> f64 {
                let mut hi = x[1];
                let mut lo = x[1];
                for i in 1..x.len() / 2 {
                    hi = hi.max(x[2 * i + 1]);
                    lo = x[2 * i + 1].min(lo);
                }
                hi * hi - 3.0 * lo
            }",
        ),
        // A reduction per row, below a loop that is not a sum: the winner is saved per row.
        (
            1,
            1,
            "fn f(a: &[f64], n: usize, peaks: &mut [f64]) {
                for r in 0..peaks.len() {
                    let mut m = a[r * n];
                    for j in 1..n {
                        m = m.max(a[r * n + j]);
                    }
                    peaks[r] = m * m;
                }
            }",
        ),
        // The reduction's result read inside a later loop, and an active initial value.
        // (`y` has no NaN: a NaN adjoint reaching the reduction would give NaN to every
        // element through the loop's own reverse, which multiplies it by the zero
        // derivatives of the elements that lost, and to the winner alone here.)
        (
            1,
            1,
            "fn f(x: &[f64], y: &[f64]) -> f64 {
                let mut m = y[0] * 2.0;
                for i in 0..x.len() {
                    m = x[i].max(m);
                }
                let mut s = 0.0;
                for i in 0..y.len() {
                    s += (y[i] - m).exp() * m;
                }
                s
            }",
        ),
        // Not a read: the loop keeps its own reverse.
        (
            0,
            0,
            "fn f(x: &[f64]) -> f64 {
                let mut m = x[0];
                for i in 1..x.len() {
                    m = m.max(x[i] * x[i]);
                }
                m
            }",
        ),
        // The loop writes the buffer it reads: left alone.
        (
            0,
            0,
            "fn f(x: &[f64], w: &mut [f64]) -> f64 {
                let mut m = w[0];
                for i in 1..w.len() {
                    m = m.max(w[i]);
                    w[i] = x[i] * m;
                }
                m
            }",
        ),
    ];
    let nan = f64::NAN;
    let inputs: [&[f64]; 6] = [
        &[0.3, 0.9, 0.9, nan, -0.2, 0.9, 1.2, 1.2, nan, -0.5, 0.4, 1.2],
        // A NaN initial value (`x[1]`): the first number beats it.
        &[0.2, nan, 0.5, 0.1, -0.3, 0.7, 0.0, nan, 0.4, -0.8],
        &[nan, 0.1, -0.3, 2.0, 0.7, 0.7, -1.0, 0.2, 0.5, 0.5],
        &[2.0, -1.0, 0.5, 0.3, -0.4, 1.1, 0.8, -0.6],
        &[0.0, -0.0, 0.6, -0.6, 0.0, 0.2],
        &[0.4, -0.3],
    ];
    for (removed, searches, src) in cases {
        let (routed, plain, shown) =
            reverse_pair("reverse", src, ["routed", "plain"], Pass::Extrema);
        assert_eq!(
            loops(&routed) + removed,
            loops(&plain) + searches,
            "{}",
            shown
        );
        for x in inputs {
            let n = x.len();
            let names: Vec<&str> = routed.params.iter().map(|p| p.name.as_str()).collect();
            let args: Vec<RtArg> = match names[..] {
                [_, _, _] => vec![
                    RtArg::Buf(x.to_vec()),
                    RtArg::Buf(vec![0.0; n]),
                    RtArg::Scalar(RtVal::F(1.7)),
                ],
                // The rows are pairs; the shadow of `peaks` holds the seeds.
                [_, _, "n", _, _] => vec![
                    RtArg::Buf(x[..n / 2 * 2].to_vec()),
                    RtArg::Buf(vec![0.0; n / 2 * 2]),
                    RtArg::Scalar(RtVal::I(2)),
                    RtArg::Buf(vec![9.0; n / 2]),
                    RtArg::Buf((0..n / 2).map(|k| 0.5 + k as f64).collect()),
                ],
                // x, dx, y, dy, seed or x, dx, w, dw, seed
                _ => vec![
                    RtArg::Buf(x.to_vec()),
                    RtArg::Buf(vec![0.0; n]),
                    RtArg::Buf(
                        x.iter()
                            .map(|v| if v.is_nan() { 0.1 } else { v - 0.25 })
                            .collect(),
                    ),
                    RtArg::Buf(vec![0.5; n]),
                    RtArg::Scalar(RtVal::F(1.7)),
                ],
            };
            assert_eq!(
                run_bits(&routed, &args),
                run_bits(&plain, &args),
                "x = {x:?}: {}",
                shown
            );
        }
    }
}

//! Fused sums strip-mined by eight (`derivative::reverse::strip`): which loops are, and
//! that the strip-mined program computes bitwise what the single loop computes, for trip
//! counts around multiples of eight (through the IR interpreter), in both modes. The derivatives
//! themselves are checked against finite differences and the dot-product test in
//! `tests/numeric` (`classic::rosenbrock_strips`: 19 iterations, two strips and three more).

use super::twin_if::{floats, loops, reverse_pair, run_bits};
use crate::ir::interp::{RtArg, RtVal};
use crate::pipeline::Pass;

#[test]
fn straight_fused_sums_are_strip_mined_and_compute_the_same_bits() {
    // (strips, source): a strip-mined loop adds two loops (the strips and the lanes).
    let cases = [
        (
            true,
            "fn f(x: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() - 1 {
                    let a = x[i + 1] - x[i] * x[i];
                    let b = 1.0 - x[i];
                    s += 100.0 * a * a + b * b;
                }
                s
            }",
        ),
        // A scalar active (its adjoint accumulates across iterations) and a start ≠ 0.
        (
            true,
            "fn f(x: &[f64], y: &[f64], r: f64) -> f64 {
                let mut s = 0.0;
                for i in 1..x.len() {
                    let d = r * x[i] - y[i - 1];
                    s += d * d;
                }
                0.5 * s
            }",
        ),
        // A branch in the body: left as one loop.
        (
            false,
            "fn f(x: &[f64], y: &[f64], r: f64) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    let t = if x[i] > 0.0 { r * x[i] } else { x[i] * y[i] };
                    s += t;
                }
                s
            }",
        ),
    ];
    let modes = ["reverse", "reverse, coarsen = off"];
    for ((strips, src), mode) in cases.iter().flat_map(|c| modes.map(|m| (*c, m))) {
        let (stripped, single, shown) =
            reverse_pair(mode, src, ["strip-mined", "single"], Pass::StripMining);
        let added = if strips { 2 } else { 0 };
        assert_eq!(loops(&stripped), loops(&single) + added, "{}", shown);
        for n in [1, 2, 3, 7, 8, 9, 10, 15, 16, 17, 25] {
            // x, dx, y, dy, r, seed (as many as the program takes).
            let args = [
                RtArg::Buf(floats(n, 0.7)),
                RtArg::Buf(floats(n, 0.2)),
                RtArg::Buf(floats(n, 1.3)),
                RtArg::Buf(floats(n, 0.5)),
                RtArg::Scalar(RtVal::F(0.8)),
                RtArg::Scalar(RtVal::F(1.7)),
            ];
            let args: Vec<RtArg> = if stripped.params.len() == 3 {
                vec![args[0].clone(), args[1].clone(), args[5].clone()]
            } else {
                args.to_vec()
            };
            assert_eq!(
                run_bits(&stripped, &args),
                run_bits(&single, &args),
                "n = {n}: {}",
                shown
            );
        }
    }
}

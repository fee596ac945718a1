//! The reverse sweep's two `if`s on one condition merged into one
//! (`derivative::reverse::twin_if`): where it applies, and that the merged program computes
//! bitwise what the unmerged one computes (through the IR interpreter). The derivatives
//! themselves are checked against finite differences in `tests/numeric` (the stencils of
//! `parallel.rs` and the fused sums of `fused.rs` take this path).

use crate::derivative::reverse::twin_if::merge_twin_ifs;
use crate::expand::compile_with_for_tests;
use crate::ir::interp::{run, RtArg, RtVal};
use crate::ir::{Block, BufKind, Function, InstKind, ParamKind, Ty, Value};
use crate::pipeline::{Pass, Passes};

pub(super) fn item(src: &str) -> syn::ItemFn {
    syn::parse_str(src).expect("test source parses")
}

/// The reverse program of `src` in `mode` with every pass on, and with pass `off` ruled
/// out (`skip_passes(..)`), the first checked by the IR verifier; and a text showing both,
/// named by `names`, for assertion messages.
pub(super) fn reverse_pair(
    mode: &str,
    src: &str,
    names: [&str; 2],
    off: Pass,
) -> (Function, Function, String) {
    let it = item(src);
    let compile = |args: &str| compile_with_for_tests(args, &it).expect("compiles").reverse;
    let skipped = format!("{mode}, skip_passes({})", Passes::name_of(off));
    let (on, other) = (compile(mode), compile(&skipped));
    let shown = format!(
        "{mode}: {src}\n{}:\n{}\n{}:\n{}",
        names[0],
        crate::ir::printer::print(&on),
        names[1],
        crate::ir::printer::print(&other)
    );
    crate::ir::verify::verify(&on).unwrap_or_else(|e| panic!("{e}: {shown}"));
    (on, other, shown)
}

/// The blocks of `f` with two `if`s on the same condition.
fn twin_ifs(f: &Function) -> usize {
    let mut blocks = vec![f.body];
    f.walk(f.body, &mut |i| blocks.extend(f.child_blocks(i)));
    blocks
        .iter()
        .filter(|b: &&Block| {
            let conds: Vec<Value> = f
                .block(**b)
                .insts
                .iter()
                .filter_map(|i| match f.inst(*i).kind {
                    InstKind::If { cond, .. } => Some(cond),
                    _ => None,
                })
                .collect();
            (1..conds.len()).any(|k| conds[..k].contains(&conds[k]))
        })
        .count()
}

/// Runs a reverse program; returns its results and its buffer arguments afterwards
/// (shadows included), as bits.
pub(super) fn run_bits(f: &Function, args: &[RtArg]) -> (Vec<u64>, Vec<Vec<u64>>) {
    let mut a = args.to_vec();
    let results = run(f, &mut a).expect("reverse program runs");
    let results = results
        .iter()
        .map(|v| v.as_float().expect("float result").to_bits())
        .collect();
    let bufs = a
        .iter()
        .filter_map(|x| match x {
            RtArg::Buf(v) => Some(v.iter().map(|y| y.to_bits()).collect()),
            _ => None,
        })
        .collect();
    (results, bufs)
}

/// How many `for` loops `f` has.
pub(super) fn loops(f: &Function) -> usize {
    let mut n = 0;
    f.walk(f.body, &mut |i| {
        n += usize::from(matches!(f.inst(i).kind, InstKind::For { .. }));
    });
    n
}

pub(super) fn floats(n: usize, k: f64) -> Vec<f64> {
    (0..n).map(|i| (k * i as f64 + 0.3).sin()).collect()
}

/// The arguments of reverse program `f`: each float buffer and its shadow get
/// `lens[k / 2]` elements (the k-th float buffer parameter; the shadows start nonzero,
/// since they accumulate), each integer buffer `lens.last()` small integers, each integer
/// scalar `int`, each float scalar 1.3.
pub(super) fn args_of(f: &Function, lens: &[usize], int: i64) -> Vec<RtArg> {
    let mut args = Vec::new();
    let mut k = 0;
    for p in &f.params {
        match p.kind {
            ParamKind::Buffer { buf, .. } if f.buf(buf).elem == Ty::Int => {
                let n = lens[lens.len() - 1] as i64;
                args.push(RtArg::IntBuf((0..n).map(|j| j * 7 % 5).collect()));
            }
            ParamKind::Buffer { .. } => {
                args.push(RtArg::Buf(floats(lens[k / 2], 0.7 + k as f64)));
                k += 1;
            }
            ParamKind::Scalar(Ty::Int) => args.push(RtArg::Scalar(RtVal::I(int))),
            _ => args.push(RtArg::Scalar(RtVal::F(1.3))),
        }
    }
    args
}

/// Checks a pass that saves values without tapes on each case (tapes it removes, buffer
/// lengths for [`args_of`], source): the reverse program with the pass on and off
/// (pass `off` ruled out, as in [`reverse_pair`]) has that many tapes fewer, is printed identically where
/// it removes none (`unchanged` says why), and computes the same bits for the value, the
/// returned adjoints and every shadow with each integer scalar in `ints`.
pub(super) fn same_bits_fewer_tapes(
    cases: &[(usize, &[usize], &str)],
    names: [&str; 2],
    ints: &[i64],
    unchanged: &str,
    off: Pass,
) {
    let tapes = |f: &Function| f.bufs.iter().filter(|b| b.kind == BufKind::Tape).count();
    for &(removed, lens, src) in cases {
        let (on, other, shown) = reverse_pair("reverse", src, names, off);
        assert_eq!(tapes(&on) + removed, tapes(&other), "{}", shown);
        if removed == 0 {
            assert_eq!(
                crate::ir::printer::print(&on),
                crate::ir::printer::print(&other),
                "{unchanged}, so nothing changes: {shown}"
            );
        }
        for &n in ints {
            let args = args_of(&on, lens, n);
            assert_eq!(
                run_bits(&on, &args),
                run_bits(&other, &args),
                "{n}: {shown}"
            );
        }
    }
}

/// A fused sum whose term is computed in a branch (both modes) and a rayon stencil whose
/// boundary test becomes a twin pair in its reverse sweep: no twin `if` after the merge,
/// and the same bits as the unmerged program for the value, the returned adjoints and
/// every shadow (with nonzero seeds in the shadows of `&mut` buffers, which must come back as
/// the adjoints of their initial values).
#[test]
fn twin_ifs_merge_and_compute_the_same_bits() {
    let branch_term = "fn f(u: &[f64], w: &mut [f64], r: f64) -> f64 {
        let mut s = 0.0;
        for i in 0..u.len() {
            let t = if u[i] > 0.0 { r * u[i].sin() } else { u[i] * u[i] };
            s += t;
        }
        s
    }";
    let cases = [
        ("reverse", branch_term),
        ("reverse, coarsen = off", branch_term),
        (
            "reverse",
            "fn f(u: &[f64], out: &mut [f64], r: f64) -> f64 {
                let n = u.len();
                out.par_iter_mut().enumerate().for_each(|(i, o)| {
                    if i > 0 && i < n - 1 {
                        *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.1 * u[i] * u[i]);
                    } else {
                        *o = u[i];
                    }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
        ),
    ];
    for (mode, src) in cases {
        let (merged, apart, shown) = reverse_pair(mode, src, ["merged", "apart"], Pass::TwinIfs);
        assert!(twin_ifs(&apart) > 0, "no twin `if`s to merge: {shown}");
        assert_eq!(twin_ifs(&merged), 0, "twin `if`s left: {shown}");
        let n = 9;
        let args = [
            RtArg::Buf(floats(n, 0.7)),
            RtArg::Buf(floats(n, 0.2)),
            RtArg::Buf(floats(n, 1.3)),
            RtArg::Buf(floats(n, 0.5)),
            RtArg::Scalar(RtVal::F(0.21)),
            RtArg::Scalar(RtVal::F(1.7)),
        ];
        assert_eq!(
            run_bits(&merged, &args),
            run_bits(&apart, &args),
            "{}",
            shown
        );
    }
}

/// The pass on its own, on primal programs: twins around straight-line code merge (also
/// where the first `if` yields a value read between and after them), and the program
/// computes the same bits; `if`s with a loop between them, or on different conditions,
/// stay apart.
#[test]
fn only_twins_around_straight_line_code_merge() {
    let cases = [
        (
            true,
            "fn f(x: &[f64], y: &mut [f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    let c = x[i] > 0.0;
                    if c {
                        y[i] = x[i] * 2.0;
                    } else {
                        y[i] = x[i].sin();
                    }
                    let t = y[i] * y[i];
                    if c {
                        s += t;
                    } else {
                        s -= t;
                    }
                }
                s
            }",
        ),
        (
            true,
            "fn f(x: &[f64]) -> f64 {
                let c = x[0] > x[1];
                let v = if c { x[2] * x[3] } else { x[2] - x[3] };
                let w = v * v + x[4];
                let z = if c { w + v } else { w * v };
                z + w * v
            }",
        ),
        (
            false,
            "fn f(x: &[f64], y: &mut [f64]) -> f64 {
                let c = x[0] > 0.0;
                if c {
                    y[0] = x[1];
                }
                let mut t = 0.0;
                for k in 0..x.len() {
                    t += x[k];
                }
                if c {
                    y[1] = t;
                }
                y[0] + y[1]
            }",
        ),
        (
            false,
            "fn f(x: &[f64], y: &mut [f64]) -> f64 {
                if x[0] > 0.0 {
                    y[0] = x[1];
                }
                let t = x[2] * x[3];
                if x[0] > 0.0 {
                    y[1] = t;
                }
                y[0] + y[1]
            }",
        ),
    ];
    for (merges, src) in cases {
        let primal = compile_with_for_tests("reverse", &item(src))
            .expect("compiles")
            .primal;
        let mut merged = primal.clone();
        merge_twin_ifs(&mut merged);
        crate::ir::verify::verify(&merged)
            .unwrap_or_else(|e| panic!("{src}: {e}\n{}", crate::ir::printer::print(&merged)));
        let (a, b) = (
            crate::ir::printer::print(&primal),
            crate::ir::printer::print(&merged),
        );
        assert_eq!(a != b, merges, "{src}\nbefore:\n{a}\nafter:\n{b}");
        if merges {
            assert_eq!(twin_ifs(&merged), 0, "{src}\nafter:\n{b}");
        }
        for x0 in [-0.4, 0.4] {
            let mut x = floats(7, 0.9);
            x[0] = x0;
            let args = [RtArg::Buf(x), RtArg::Buf(floats(7, 0.4))];
            let args = &args[..primal.params.len()];
            assert_eq!(run_bits(&merged, args), run_bits(&primal, args), "{src}");
        }
    }
}

//! Sums reversed as they run (`derivative::reverse::fuse`): which loops of a reverse
//! program are fused, in both modes. `tests/numeric/fused.rs` checks the derivatives of the
//! same shapes against finite differences and with the dot-product identity.

use crate::expand::compile_with_for_tests;
use crate::ir::{Function, InstKind};

fn item(src: &str) -> syn::ItemFn {
    syn::parse_str(src).expect("test source parses")
}

/// The reversed loops (`for _rev_t in (0..trip).rev()`) of a reverse program.
fn reversed_loops(f: &Function) -> usize {
    let mut n = 0;
    f.walk(f.body, &mut |i| {
        if let InstKind::For { range, index, .. } = &f.inst(i).kind {
            if range.rev && f.value(*index).name.as_deref() == Some("rev_t") {
                n += 1;
            }
        }
    });
    n
}

/// Sums whose adjoint is a constant times the seed are reversed iteration by iteration in
/// the forward sweep (`derivative::reverse::fuse`): no reversed loop is left for
/// `½(c − Σ term)` (a term reading an outer active scalar) nor for `(s − Σ t²)/4` with an
/// inner recurrence; a sum scaled by a value, squared, read in a branch, or carried with a
/// second active value keeps its reversed loop. `tests/numeric/fused.rs` checks the derivatives of the same shapes.
#[test]
fn sums_with_the_seed_as_adjoint_are_fused() {
    let fused = item(
        "fn f(x: &[f64], p: &[f64], m: usize) -> f64 {
            let w = p[0] * p[1];
            let mut s = 0.0;
            for i in 0..x.len() {
                s += w * x[i].sin();
            }
            let mut r = 0.0;
            for i in 0..x.len() {
                let mut t = x[i];
                for _ in 0..m {
                    t = (0.5 * t).sin() * t;
                }
                r -= t * t;
            }
            0.5 * (p[0].cos() - s) + r / 4.0
        }",
    );
    for mode in ["reverse, wrt(x, p)", "reverse, wrt(x, p), coarsen = off"] {
        let c = compile_with_for_tests(mode, &fused).expect("compiles");
        let rev = &c.reverse;
        // The inner recurrence is reversed inside the fused iteration; no outer loop is.
        assert_eq!(
            reversed_loops(rev),
            1,
            "{mode}:\n{}",
            crate::ir::printer::print(rev)
        );
    }
    let kept = item(
        "fn f(x: &[f64], flag: bool) -> f64 {
            let mut a = 0.0;
            for i in 0..x.len() {
                a += x[i].exp();
            }
            let mut b = 0.0;
            for i in 0..x.len() {
                b += x[i] * x[i];
            }
            let mut c = 0.0;
            for i in 0..x.len() {
                c += x[i].cos();
            }
            let mut d = 0.0;
            let mut e = 1.0;
            for i in 0..x.len() {
                d += e * x[i];
                e *= 0.9 + 0.01 * x[i];
            }
            let mut out = a * x[0] + b * b + d;
            if flag {
                out += c * c;
            }
            out
        }",
    );
    let c = compile_with_for_tests("reverse, coarsen = off", &kept).expect("compiles");
    assert_eq!(
        reversed_loops(&c.reverse),
        4,
        "{}",
        crate::ir::printer::print(&c.reverse)
    );
    // Scratch rows refilled whole before every read of an iteration are private to it;
    // a row read before the iteration writes it carries values to the next one.
    let rows = |refill: &str| {
        item(&format!(
            "fn f(x: &[f64], mu: &[f64], d: usize) -> f64 {{
                let mut row = vec![0.0; d];
                let mut total = 0.0;
                for p in 0..x.len() / d {{
                    for j in 0..d {{
                        row[j] = {refill};
                    }}
                    let mut s = 0.0;
                    for j in 0..d {{
                        s += row[j] * row[j];
                    }}
                    total += s.ln();
                }}
                total
            }}"
        ))
    };
    let top_reversed = |src: &syn::ItemFn| {
        let c =
            compile_with_for_tests("reverse, wrt(x, mu), coarsen = off", src).expect("compiles");
        let rev = &c.reverse;
        rev.block(rev.body)
            .insts
            .iter()
            .filter(|i| matches!(&rev.inst(**i).kind, InstKind::For { range, .. } if range.rev))
            .count()
    };
    assert_eq!(top_reversed(&rows("x[p * d + j] - mu[j]")), 0);
    assert_eq!(top_reversed(&rows("(row[j] + x[p * d + j]).sin()")), 1);
}

/// Parallel sums (`par_iter().map(..).sum()`) with the seed as adjoint are fused too: the
/// forward sweep's parallel loop adds into the shadows and the reverse sweep has no
/// parallel loop for them. A sum scaled by a value keeps its reversed parallel loop, and
/// so does a sum over an inner loop (its tapes and counters are kept by row).
#[test]
fn parallel_sums_with_the_seed_as_adjoint_are_fused() {
    let src = item(
        "fn f(x: &[f64], p: &[f64], d: usize) -> f64 {
            let n = x.len();
            let a = p[0] * p[1];
            let s1: f64 = x.par_iter().map(|v| (a * v).sin()).sum();
            let s2 = (0..n - 1).into_par_iter().map(|i| x[i] * x[i + 1]).sum::<f64>();
            let s3: f64 = x.par_iter().map(|v| v * v).sum();
            let s4 = (0..n / d)
                .into_par_iter()
                .map(|i| {
                    let mut t = 0.0;
                    for j in 0..d {
                        t += (x[i * d + j] * t).sin();
                    }
                    t
                })
                .sum::<f64>();
            0.5 * s1 - s2 + p[1] * s3 + s4
        }",
    );
    for mode in ["reverse, wrt(x, p)", "reverse, wrt(x, p), coarsen = off"] {
        let c = compile_with_for_tests(mode, &src).expect("compiles");
        let rev = &c.reverse;
        // Four in the forward sweep; in the reverse sweep, only those of `s3` and `s4`.
        assert_eq!(
            rev.parallel.len(),
            6,
            "{mode}:\n{}",
            crate::ir::printer::print(rev)
        );
    }
}

/// The parallel loops of a program (each a `for` in `Function::parallel`).
fn parallel_loops(f: &Function) -> usize {
    f.parallel.len()
}

/// A parallel sum over a buffer moves into the parallel loop that wrote it
/// (`lower::fuse_sums_into_writers`): by rows (`par_chunks_mut`) and by elements
/// (`par_iter_mut`). Then the row loop of the fused sum is fused too, so the reverse
/// program has no reversed loop: each element's adjoint follows the element.
#[test]
fn parallel_sums_move_into_their_writer() {
    let rows = item(
        "fn f(u: &[f64], out: &mut [f64], n: usize) -> f64 {
            out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                for j in 0..row.len() {
                    row[j] = u[i * n + j].sin();
                }
            });
            out.par_iter().map(|v| v * v).sum()
        }",
    );
    let elements = item(
        "fn f(u: &[f64], out: &mut [f64]) -> f64 {
            out.par_iter_mut().enumerate().for_each(|(i, o)| {
                *o = u[i] * u[i];
            });
            let c = 2.0;
            out.par_iter().map(|v| v.sin() * c).sum::<f64>()
        }",
    );
    for (what, src) in [("rows", &rows), ("elements", &elements)] {
        let c = compile_with_for_tests("reverse", src).unwrap();
        assert_eq!(parallel_loops(&c.primal), 1, "{what}: one parallel loop");
        assert_eq!(reversed_loops(&c.reverse), 0, "{what}: every loop fused");
    }
}

/// Sums that must stay apart: a term reading another element (`out[n − 1 − i]` is not
/// final when element `i`'s iteration ends), a statement between the two loops that
/// reads the written buffer, a buffer written again after the sum, and a sum over
/// another buffer.
#[test]
fn parallel_sums_that_stay_apart() {
    let cases = [
        (
            "another element",
            "fn f(u: &[f64], out: &mut [f64]) -> f64 {
                out.par_iter_mut().enumerate().for_each(|(i, o)| { *o = u[i] * u[i]; });
                let n = out.len();
                (0..n).into_par_iter().map(|i| out[i] * out[n - 1 - i]).sum::<f64>()
            }",
        ),
        (
            "read between",
            "fn f(u: &[f64], out: &mut [f64]) -> f64 {
                out.par_iter_mut().enumerate().for_each(|(i, o)| { *o = u[i] * u[i]; });
                let first = out[0];
                out.par_iter().map(|v| v * first).sum::<f64>()
            }",
        ),
        (
            "written again",
            "fn f(u: &[f64], out: &mut [f64]) -> f64 {
                out.par_iter_mut().enumerate().for_each(|(i, o)| { *o = u[i] * u[i]; });
                let s = out.par_iter().map(|v| v * v).sum::<f64>();
                out[0] = s;
                s
            }",
        ),
        (
            "another buffer",
            "fn f(u: &[f64], out: &mut [f64]) -> f64 {
                out.par_iter_mut().enumerate().for_each(|(i, o)| { *o = u[i] * u[i]; });
                u.par_iter().map(|v| v * v).sum::<f64>()
            }",
        ),
    ];
    for (what, src) in cases {
        let c =
            compile_with_for_tests("reverse", &item(src)).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(parallel_loops(&c.primal), 2, "{what}: the sum stays apart");
    }
}

/// Rows written other than by one loop over the whole row take the sum too, added by a
/// loop of its own when the row's iteration ends (`lower::fuse_sums_into_writers`,
/// whole rows): a stencil whose rows are written in two branches and three places, a row
/// loop that skips the first element, stores at a shifted element or at the next one
/// round the row, and a row read back as it is written. Where the row reads back only final values the reverse program is one
/// parallel loop: each row's adjoint follows the row. `tests/numeric/parallel_fused.rs`
/// checks the derivatives of the first and the last.
#[test]
fn parallel_sums_move_into_writers_of_whole_rows() {
    let cases = [
        (
            "split stencil",
            "fn f(u: &[f64], out: &mut [f64], r: f64, n: usize) -> f64 {
                let m = u.len() / n;
                out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                    if i == 0 || i == m - 1 {
                        for j in 0..n { row[j] = u[i * n + j]; }
                    } else {
                        row[0] = u[i * n];
                        for j in 1..n - 1 { row[j] = u[i * n + j] + r * u[(i - 1) * n + j]; }
                        row[n - 1] = u[i * n + n - 1];
                    }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
            1,
        ),
        (
            "skipped element",
            "fn f(u: &[f64], out: &mut [f64], n: usize) -> f64 {
                out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                    for j in 1..row.len() { row[j] = u[i * n + j].sin(); }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
            1,
        ),
        (
            "shifted store",
            "fn f(u: &[f64], out: &mut [f64], n: usize) -> f64 {
                out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                    for j in 0..row.len() - 1 { row[j + 1] = u[i * n + j].sin(); }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
            1,
        ),
        (
            "rotated store",
            "fn f(u: &[f64], out: &mut [f64], n: usize) -> f64 {
                out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                    let w = row.len();
                    for j in 0..row.len() { row[(j + 1) % w] = u[i * n + j].sin(); }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
            1,
        ),
        (
            "row read back",
            "fn f(u: &[f64], out: &mut [f64], n: usize) -> f64 {
                out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                    for j in 1..row.len() { row[j] = 0.5 * row[j - 1] + u[i * n + j].sin(); }
                });
                out.par_iter().map(|v| v * v).sum()
            }",
            2,
        ),
    ];
    for (what, src, reverse_parallel) in cases {
        let c =
            compile_with_for_tests("reverse", &item(src)).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            parallel_loops(&c.primal),
            1,
            "{what}: the sum moves into the writer"
        );
        assert_eq!(
            parallel_loops(&c.reverse),
            reverse_parallel,
            "{what}: parallel loops of the reverse program"
        );
    }
}

/// The `for` loops of a program (at any depth).
fn for_loops(f: &Function) -> usize {
    let mut n = 0;
    f.walk(f.body, &mut |i| {
        n += matches!(f.inst(i).kind, InstKind::For { .. }) as usize;
    });
    n
}

/// `src`'s primal program, after lowering and its passes, holds `n` `for` loops.
fn assert_primal_loops(what: &str, src: &str, n: usize) {
    let c = compile_with_for_tests("forward, reverse", &item(src)).expect("compiles");
    assert_eq!(
        for_loops(&c.primal),
        n,
        "{what}:\n{}",
        crate::ir::printer::print(&c.primal)
    );
}

/// Adjacent loops over one range whose second reads what the first writes at its own
/// index run as one loop (`lower::fuse_adjacent_loops`): GMM's `xc` and `qxc` loops, three
/// loops in a row, and loops inside another loop.
#[test]
fn adjacent_loops_over_one_range_fuse() {
    let cases = [
        (
            "gmm's xc and qxc",
            "fn f(x: &[f64], m: &[f64], q: &[f64], xc: &mut [f64], qxc: &mut [f64], d: usize) -> f64 {
                for j in 0..d { xc[j] = x[j] - m[j]; }
                for j in 0..d { qxc[j] = q[j] * xc[j]; }
                qxc[0] + xc[1]
            }",
            1,
        ),
        (
            "three in a row over a length",
            "fn f(x: &[f64], a: &mut [f64], b: &mut [f64]) -> f64 {
                for j in 0..x.len() { a[j] = x[j].sin(); }
                for j in 0..x.len() { b[j] = a[j] * x[j]; }
                for j in 0..x.len() { a[j] = b[j] + a[j]; }
                a[0]
            }",
            1,
        ),
        (
            "inside another loop",
            "fn f(x: &[f64], m: &[f64], d: usize, n: usize) -> f64 {
                let mut xc = vec![0.0; d];
                let mut z = vec![0.0; d];
                let mut s = 0.0;
                for i in 0..n {
                    for j in 0..d { xc[j] = x[i * d + j] - m[j]; }
                    for j in 0..d { z[j] = xc[j] * xc[j]; }
                    s += z[0];
                }
                s
            }",
            2,
        ),
    ];
    for (what, src, n) in cases {
        assert_primal_loops(what, src, n);
    }
}

/// Look-alikes that stay two loops: the second reads another element of what the first
/// writes, the first reads what the second writes, the ranges differ, the second carries
/// a sum, a call stands in a body, something between the loops is not arithmetic, and the
/// second loop's range is the first's trip count.
#[test]
fn adjacent_loops_that_stay_apart() {
    let cases = [
        (
            "another element",
            "fn f(x: &[f64], a: &mut [f64], b: &mut [f64], d: usize) -> f64 {
                for j in 0..d { a[j] = x[j].sin(); }
                for j in 0..d { b[j] = a[(j + 1) % d]; }
                b[0]
            }",
        ),
        (
            "first reads the second's",
            "fn f(x: &[f64], a: &mut [f64], b: &mut [f64], d: usize) -> f64 {
                for j in 0..d { a[j] = x[j] * b[0]; }
                for j in 0..d { b[j] = a[j] * 2.0; }
                b[1]
            }",
        ),
        (
            "other range",
            "fn f(x: &[f64], a: &mut [f64], b: &mut [f64], d: usize) -> f64 {
                for j in 0..d { a[j] = x[j].sin(); }
                for j in 1..d { b[j] = a[j] * 2.0; }
                b[1]
            }",
        ),
        (
            "carried sum",
            "fn f(x: &[f64], a: &mut [f64], d: usize) -> f64 {
                for j in 0..d { a[j] = x[j].sin(); }
                let mut s = 0.0;
                for j in 0..d { s += a[j]; }
                s
            }",
        ),
        (
            "store between",
            "fn f(x: &[f64], a: &mut [f64], b: &mut [f64], d: usize) -> f64 {
                for j in 0..d { a[j] = x[j].sin(); }
                a[0] = 1.0;
                for j in 0..d { b[j] = a[j] * 2.0; }
                b[1]
            }",
        ),
    ];
    for (what, src) in cases {
        assert_primal_loops(what, src, 2);
    }
}

/// The shape of `tests/numeric/fused.rs`'s `adjacent_inner_loops`: three inner loops fuse
/// into one, the carried sum after them stays apart, and the outer sum is still reversed
/// as it runs (the fused loop refills `xc` and `z` before reading them), leaving the
/// reversed inner loops only.
#[test]
fn fused_inner_loops_keep_the_outer_sum_fused() {
    let src = item(
        "fn f(x: &[f64], m: &[f64], q: &[f64], d: usize) -> f64 {
            let n = x.len() / d;
            let mut xc = vec![0.0; d];
            let mut z = vec![0.0; d];
            let mut s = 0.0;
            for i in 0..n {
                for j in 0..d { xc[j] = x[i * d + j] - m[j]; }
                for j in 0..d { z[j] = q[j].exp() * xc[j]; }
                for j in 0..d { xc[j] = z[j] * xc[j] + x[i * d + j].sin(); }
                let mut t = 0.0;
                for j in 0..d { t += z[j] * xc[j]; }
                s += (0.1 * t).exp();
            }
            s
        }",
    );
    for mode in [
        "reverse, wrt(x, m, q)",
        "reverse, wrt(x, m, q), coarsen = off",
    ] {
        let c = compile_with_for_tests(mode, &src).expect("compiles");
        assert_eq!(
            for_loops(&c.primal),
            3,
            "{mode}: the outer loop, the fused one, the sum"
        );
        assert_eq!(
            reversed_loops(&c.reverse),
            2,
            "{mode}:\n{}",
            crate::ir::printer::print(&c.reverse)
        );
    }
}

/// A sum of row maxima stays fused with the search for each row's winner in its body
/// (`reverse::extremum`; that loop stops at the winner, and a loop that leaves nothing to
/// the reverse sweep may): no reversed loop is left at all. With `coarsen = off` the
/// reduction keeps its own reversed loop, inside the fused iteration.
#[test]
fn a_sum_of_row_maxima_is_fused_around_the_search_for_the_winner() {
    let src = item(
        "fn f(v: &[f64], n: usize) -> f64 {
            let mut s = 0.0;
            for r in 0..v.len() / n {
                let mut m = v[r * n];
                for j in 1..n {
                    m = m.max(v[r * n + j]);
                }
                s += m * m;
            }
            s
        }",
    );
    for (mode, reversed) in [("reverse", 0), ("reverse, coarsen = off", 1)] {
        let rev = compile_with_for_tests(mode, &src)
            .expect("compiles")
            .reverse;
        assert_eq!(
            reversed_loops(&rev),
            reversed,
            "{mode}:\n{}",
            crate::ir::printer::print(&rev)
        );
    }
}

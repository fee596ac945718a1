//! Coarsening through the IR interpreter: closed loops against their loops, the size of
//! long chains, and finiteness at extreme inputs, each against the `coarsen = off` program.

use crate::expand::{compile_fine_reverse_for_tests, compile_with_for_tests};
use crate::ir::interp::{run, RtArg, RtVal};
use crate::ir::{Function, InstKind};

fn item(src: &str) -> syn::ItemFn {
    syn::parse_str(src).expect("test source parses")
}

/// Runs a reverse program on scalar arguments (and one seed); returns its float results.
fn run_rev(f: &Function, args: &[f64], seed: f64) -> Vec<f64> {
    let mut a: Vec<RtArg> = args.iter().map(|x| RtArg::Scalar(RtVal::F(*x))).collect();
    a.push(RtArg::Scalar(RtVal::F(seed)));
    run(f, &mut a)
        .expect("reverse program runs")
        .iter()
        .map(|v| v.as_float().expect("float result"))
        .collect()
}

/// Runs a reverse program whose first parameter is a read-only slice (no shadow: `wrt`).
fn run_rev_slices(f: &Function, slices: &[Vec<f64>], scalars: &[f64], seed: f64) -> Vec<f64> {
    let mut a: Vec<RtArg> = slices.iter().map(|s| RtArg::Buf(s.clone())).collect();
    a.extend(scalars.iter().map(|x| RtArg::Scalar(RtVal::F(*x))));
    a.push(RtArg::Scalar(RtVal::F(seed)));
    run(f, &mut a)
        .expect("reverse program runs")
        .iter()
        .map(|v| v.as_float().expect("float result"))
        .collect()
}

fn close(a: &[f64], b: &[f64], rel: f64) -> bool {
    let scale = b.iter().map(|x| x.abs()).fold(0.0, f64::max) + 1e-300;
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= rel * scale)
}

/// Counts instructions of `f` (all blocks).
fn size(f: &Function) -> usize {
    let mut n = 0;
    f.walk(f.body, &mut |_| n += 1);
    n
}

fn has_hoisted_sum(f: &Function) -> bool {
    f.cells.iter().any(|c| c.name.starts_with("hoisted_"))
}

fn has_tape(f: &Function) -> bool {
    f.bufs.iter().any(|b| b.kind == crate::ir::BufKind::Tape)
}

/// C6/C7 closed forms against the loops they replace: each accumulation below must be
/// closed (hoisted sums, no tape) and give the fine-grained program's value and adjoints
/// to 1e-12 relative (only the order of the additions differs).
#[test]
fn closed_accumulations_match_their_loops() {
    let xs: Vec<f64> = (0..37)
        .map(|i| 0.3 + 0.05 * i as f64 - 0.001 * (i * i) as f64)
        .collect();
    let ys: Vec<f64> = (0..37)
        .map(|i| 1.0 - 0.02 * i as f64 + 0.1 * (i as f64).sin())
        .collect();
    let cases = [
        // s += w·x[i]: linear.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut s = 0.0;
            for i in 0..x.len() { s += w * x[i]; }
            s * b
        }",
        // Least-squares gradient sums (BGD's inner loop), two accumulators.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut gw = 0.0;
            let mut gb = 0.0;
            for i in 0..x.len() {
                let e = w * x[i] + b - y[i];
                gw += e * x[i];
                gb += e;
            }
            gw * gw + 3.0 * gb
        }",
        // A squared residual: degree 2 in the invariants.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut sq = 1.5;
            for i in 0..x.len() {
                let e = w * x[i] + b - y[i];
                sq = sq + e * e;
            }
            sq.sqrt()
        }",
        // Division by an invariant, a shifted range, a cubic.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut s = 0.0;
            for i in 2..x.len() - 1 {
                s -= (x[i] * w - y[i - 1]) / b + (b * y[i + 1]).powi(3);
            }
            s
        }",
        // C7: a geometric recurrence with a constant factor.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut s = b;
            for i in 0..x.len() { s = 0.9 * s + w * x[i] - b * b; }
            s * w
        }",
        // C8: an affine recurrence with a factor that varies with the index.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut s = 0.5;
            for i in 0..x.len() { s = y[i] * s + (w - x[i]) * b; }
            s
        }",
        // C8: a product, an affine step divided by an index-dependent factor, and a sum,
        // over a descending range.
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut p = w;
            let mut s = b;
            let mut t = 0.0;
            for i in (1..x.len()).rev() {
                p *= x[i];
                s = (s + w * x[i]) / (1.0 + y[i] * y[i]);
                t += b * y[i - 1];
            }
            p + s * t
        }",
        // Inside another loop (the sums are hoisted out of it).
        "fn f(x: &[f64], y: &[f64], w: f64, b: f64) -> f64 {
            let mut w = w;
            for k in 0..5 {
                let mut g = 0.0;
                for i in 0..x.len() { g += (w * x[i] - y[i]) * x[i]; }
                w = w - b * 0.1 * g;
            }
            w
        }",
    ];
    for src in cases {
        let it = item(src);
        let coarse = compile_with_for_tests("reverse, wrt(w, b)", &it)
            .unwrap_or_else(|e| panic!("{e}\n{src}"))
            .reverse;
        let fine = {
            let opts = "reverse, wrt(w, b), coarsen = off";
            compile_with_for_tests(opts, &it).expect("compiles").reverse
        };
        assert!(has_hoisted_sum(&coarse), "not closed:\n{src}");
        // The last case's outer loop is not closed and saves `g` per outer iteration.
        let outer_loop = src.contains("for k in");
        assert!(
            outer_loop || !has_tape(&coarse),
            "a closed loop needs no tape:\n{src}"
        );
        for (w, b) in [(0.7, -1.3), (-2.0, 0.25)] {
            let slices = [xs.clone(), ys.clone()];
            let c = run_rev_slices(&coarse, &slices, &[w, b], 1.25);
            let f = run_rev_slices(&fine, &slices, &[w, b], 1.25);
            assert!(close(&c, &f, 1e-12), "{src}\ncoarse {c:?}\nfine {f:?}");
        }
    }
}

fn has_tangents(f: &Function) -> bool {
    f.cells.iter().any(|c| c.name.starts_with("tangent"))
}

/// C5, repeated application `d = f(d)` of a nonlinear `f`: small top-level loops are closed
/// by carrying their tangents forward (no tape, no reverse loop) and agree with the
/// fine-grained program to 1e-12.
#[test]
fn repeated_application_is_closed_by_tangents() {
    let cases = [
        // Newton's iteration for √a, a fixed number of times (one variable, one input).
        "fn f(a: f64, b: f64) -> f64 {
            let mut x = a;
            for _ in 0..12 { x = 0.5 * (x + a / x); }
            x * b
        }",
        // The logistic map: the rate is read from outside the loop (two inputs).
        "fn f(a: f64, b: f64) -> f64 {
            let mut d = 0.25 + 0.5 * a.sin() * a.sin();
            for _ in 0..30 { d = b * d * (1.0 - d); }
            d
        }",
        // Two coupled nonlinear variables, one input each.
        "fn f(a: f64, b: f64) -> f64 {
            let mut u = a;
            let mut v = b;
            for i in 0..25 {
                let t = u;
                u = 0.9 * u - 0.1 * v * v + 0.01 * i as f64;
                v = v + 0.05 * t.sin();
            }
            u * v
        }",
    ];
    for src in cases {
        let it = item(src);
        let coarse = compile_with_for_tests("reverse", &it)
            .unwrap_or_else(|e| panic!("{e}\n{src}"))
            .reverse;
        let fine = compile_with_for_tests("reverse, coarsen = off", &it)
            .expect("compiles")
            .reverse;
        assert!(has_tangents(&coarse), "not closed:\n{src}");
        assert!(!has_tape(&coarse), "a closed loop needs no tape:\n{src}");
        assert!(has_tape(&fine), "the fine-grained loop tapes:\n{src}");
        for (a, b) in [(1.7, 3.2), (0.4, 2.5)] {
            let c = run_rev(&coarse, &[a, b], 1.5);
            let f = run_rev(&fine, &[a, b], 1.5);
            assert!(close(&c, &f, 1e-12), "{src}\ncoarse {c:?}\nfine {f:?}");
        }
    }
}

/// Loops that are not accumulations (or whose summand is not a polynomial in the
/// invariants) stay loops and still agree with the fine-grained program.
#[test]
fn unclosable_loops_stay_loops() {
    let xs: Vec<f64> = (0..9).map(|i| 0.1 * i as f64).collect();
    let cases = [
        // A product recurrence whose factor depends on w (not linear in p), inside another
        // loop (not top-level, so not closed by tangents either).
        "fn f(x: &[f64], w: f64, b: f64) -> f64 {
            let mut t = 0.0;
            for k in 0..3 {
                let mut p = 1.0;
                for i in 0..x.len() { p *= w + x[i] + k as f64; }
                t += p;
            }
            t + b
        }",
        // A summand that is not polynomial in w, at the top level but with more tangent
        // entries than `phi::MAX_TANGENTS` (three variables × two inputs).
        "fn f(x: &[f64], w: f64, b: f64) -> f64 {
            let mut s = 0.0;
            let mut u = 0.0;
            let mut v = 0.0;
            for i in 0..x.len() { s += (w * x[i]).exp(); u += (b * x[i]).sin(); v += s * u; }
            s * b + v
        }",
    ];
    for src in cases {
        let it = item(src);
        let coarse = compile_with_for_tests("reverse, wrt(w, b)", &it)
            .expect("compiles")
            .reverse;
        let fine = compile_with_for_tests("reverse, wrt(w, b), coarsen = off", &it)
            .expect("compiles")
            .reverse;
        assert!(
            !has_hoisted_sum(&coarse) && !has_tangents(&coarse),
            "closed by mistake:\n{src}"
        );
        let c = run_rev_slices(&coarse, &[xs.clone()], &[0.4, 2.0], 0.5);
        let f = run_rev_slices(&fine, &[xs.clone()], &[0.4, 2.0], 0.5);
        assert!(close(&c, &f, 1e-12), "{src}\ncoarse {c:?}\nfine {f:?}");
    }
}

/// A chain of n dependent operations: the coarsened reverse program grows linearly in n
/// (segments are cut at the node limit, so no expression swells), for n up to 400.
#[test]
fn long_chains_grow_linearly() {
    let chain = |n: usize| {
        let mut body = String::from("fn f(x: f64, a: f64) -> f64 { let mut y = x;");
        for k in 0..n {
            body.push_str(match k % 4 {
                0 => "y = (y * a).sin() + y;",
                1 => "y = y * y * 0.5 + a;",
                2 => "y = (y / (1.0 + a * a)).tanh();",
                _ => "y = y.exp() * 0.25 - y;",
            });
        }
        body.push_str(" y }");
        body
    };
    let sizes: Vec<usize> = [100, 200, 400]
        .iter()
        .map(|n| {
            let rev = crate::expand::compile_for_tests(&item(&chain(*n)))
                .expect("compiles")
                .reverse;
            size(&rev)
        })
        .collect();
    // Per operation, the 400-step program is no bigger than the 100-step one (+10 %).
    let per_op: Vec<f64> = sizes
        .iter()
        .zip([100.0, 200.0, 400.0])
        .map(|(s, n)| *s as f64 / n)
        .collect();
    assert!(per_op[2] <= per_op[0] * 1.1, "sizes {sizes:?}");
    // And it computes the same adjoints as the fine-grained program.
    let it = item(&chain(40));
    let coarse = crate::expand::compile_for_tests(&it)
        .expect("compiles")
        .reverse;
    let fine = compile_fine_reverse_for_tests(&it).expect("compiles");
    let (c, f) = (
        run_rev(&coarse, &[0.3, 0.9], 1.0),
        run_rev(&fine, &[0.3, 0.9], 1.0),
    );
    assert!(close(&c, &f, 1e-9), "coarse {c:?}\nfine {f:?}");
}

/// At extreme inputs the coarsened adjoints are finite wherever the fine-grained ones are,
/// and the softplus `ln(1 + exp(t))` gets the overflow-free derivative `1/(1 + exp(−t))`.
#[test]
fn extreme_inputs_stay_finite() {
    let cases = [
        "fn f(t: f64, y: f64) -> f64 { (1.0 + t.exp()).ln() - y * t }",
        "fn f(t: f64, y: f64) -> f64 { (t.exp() + 1.0).ln() * y }",
        "fn f(t: f64, y: f64) -> f64 { (t * t + y * y).sqrt() }",
        "fn f(t: f64, y: f64) -> f64 { t / y / y }",
        "fn f(t: f64, y: f64) -> f64 { let u = t * y; if u > 0.0 { u.ln() } else { -u } }",
        "fn f(t: f64, y: f64) -> f64 { (t / y).exp() * y }",
        "fn f(t: f64, y: f64) -> f64 { t.tanh() * y.atan() + (t * y).cos() }",
    ];
    let points = [
        (800.0, 1.0),
        (-800.0, 1.0),
        (700.0, 0.5),
        (1e154, 1e154),
        (1e-300, 1e-300),
        (1e300, 1e-10),
        (-1e-320, 3.0),
        (0.0, 1e200),
    ];
    for src in cases {
        let it = item(src);
        let coarse = crate::expand::compile_for_tests(&it)
            .expect("compiles")
            .reverse;
        let fine = compile_fine_reverse_for_tests(&it).expect("compiles");
        for (t, y) in points {
            let c = run_rev(&coarse, &[t, y], 1.0);
            let f = run_rev(&fine, &[t, y], 1.0);
            for k in 1..c.len() {
                assert!(
                    !f[k].is_finite() || c[k].is_finite(),
                    "{src} at ({t}, {y}): adjoint {k} is {} coarsened but {} with coarsen = off",
                    c[k],
                    f[k]
                );
            }
        }
    }
    // Softplus at t = 800: the fine-grained chain rule gives ∞·0 = NaN, coarsened gives 1 − y.
    let it = item(cases[0]);
    let coarse = crate::expand::compile_for_tests(&it)
        .expect("compiles")
        .reverse;
    let fine = compile_fine_reverse_for_tests(&it).expect("compiles");
    assert!(run_rev(&fine, &[800.0, 0.25], 1.0)[1].is_nan());
    assert_eq!(run_rev(&coarse, &[800.0, 0.25], 1.0)[1], 0.75);
    assert_eq!(run_rev(&coarse, &[-800.0, 0.25], 1.0)[1], -0.25);
}

/// φ for branches: a branch on a recomputable condition inside a loop saves no decision
/// bit and no arm value; the fine-grained program saves them.
#[test]
fn branches_on_recomputable_conditions_save_nothing() {
    let src = "fn f(x: &[f64], w: f64) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            let u = w * x[i];
            let v = if u > 0.0 { u.sin() } else { 0.1 * u * u };
            s = s * 0.5 + v;
        }
        s
    }";
    let it = item(src);
    let coarse = compile_with_for_tests("reverse, wrt(w)", &it)
        .expect("compiles")
        .reverse;
    let fine = compile_with_for_tests("reverse, wrt(w), coarsen = off", &it)
        .expect("compiles")
        .reverse;
    let tapes = |f: &Function| {
        f.bufs
            .iter()
            .filter(|b| b.kind == crate::ir::BufKind::Tape)
            .count()
    };
    assert_eq!(tapes(&coarse), 0, "{}", crate::ir::printer::print(&coarse));
    assert!(tapes(&fine) >= 2);
    let xs: Vec<f64> = (0..11).map(|i| -1.0 + 0.2 * i as f64).collect();
    for w in [0.8, -0.6] {
        let c = run_rev_slices(&coarse, &[xs.clone()], &[w], 1.0);
        let f = run_rev_slices(&fine, &[xs.clone()], &[w], 1.0);
        assert!(close(&c, &f, 1e-12), "coarse {c:?}\nfine {f:?}");
    }
    // The reverse of the branch is a branch on the recomputed condition.
    let mut branches = 0;
    coarse.walk(coarse.body, &mut |i| {
        if matches!(coarse.inst(i).kind, InstKind::If { .. }) {
            branches += 1;
        }
    });
    assert!(branches >= 2);
}

/// A node computed first in one φ arm and again after the branch: its arm value is not
/// saved for the later use (it does not exist where the other arm ran), so the adjoints
/// equal the fine-grained ones whichever arms are taken.
#[test]
fn arm_values_are_not_reused_outside_their_arm() {
    let src = "fn f(x: &[f64], w: f64) -> f64 {
        let mut u = x.to_vec();
        let mut s = 0.0;
        for k in 0..3 {
            for i in 0..u.len() {
                let a = u[i];
                let c = u[(i + 1) % u.len()];
                let b = if a > 0.3 { (a * w + c * a).sin() } else { 0.0 };
                let d = (a * w + c * a).cos();
                s += b * d + d * w;
                u[i] = a * 0.9 + 0.01 * w * c;
            }
        }
        s
    }";
    let it = item(src);
    let coarse = compile_with_for_tests("reverse", &it)
        .expect("compiles")
        .reverse;
    let fine = compile_with_for_tests("reverse, coarsen = off", &it)
        .expect("compiles")
        .reverse;
    let xs: Vec<f64> = (0..8).map(|i| -0.4 + 0.15 * i as f64).collect();
    for w in [0.7, -1.1] {
        let run_it = |f: &Function| {
            let mut a = vec![
                RtArg::Buf(xs.clone()),
                RtArg::Buf(vec![0.0; xs.len()]),
                RtArg::Scalar(RtVal::F(w)),
                RtArg::Scalar(RtVal::F(1.0)),
            ];
            let r = run(f, &mut a).expect("runs");
            let RtArg::Buf(dx) = &a[1] else {
                unreachable!()
            };
            let mut out: Vec<f64> = r.iter().map(|v| v.as_float().unwrap()).collect();
            out.extend(dx);
            out
        };
        let (c, f) = (run_it(&coarse), run_it(&fine));
        assert!(close(&c, &f, 1e-12), "coarse {c:?}\nfine {f:?}");
    }
}

/// A closed loop's hoisted sums are computed where the primal first reaches the loop, not
/// before the top-level statement holding it: under a branch the primal does not take, or
/// in an outer loop that runs no iteration, they are never computed (here they would read
/// past the end of `x`).
#[test]
fn hoisted_sums_run_only_where_the_loop_runs() {
    let cases = [
        "fn f(x: &[f64], w: f64, n: usize) -> f64 {
            let mut t = w;
            if n <= x.len() {
                let mut s = 0.0;
                for i in 0..n { s += w * x[i]; }
                t = s * w;
            }
            t
        }",
        "fn f(x: &[f64], w: f64, n: usize) -> f64 {
            let mut t = w;
            for k in 0..x.len() / n {
                let mut s = 0.0;
                for i in 0..n { s += (w - k as f64) * x[i]; }
                t = t * s;
            }
            t
        }",
    ];
    for src in cases {
        let it = item(src);
        let coarse = compile_with_for_tests("reverse, wrt(w)", &it)
            .expect("compiles")
            .reverse;
        let fine = compile_with_for_tests("reverse, wrt(w), coarsen = off", &it)
            .expect("compiles")
            .reverse;
        assert!(has_hoisted_sum(&coarse), "not closed:\n{src}");
        let xs: Vec<f64> = (0..4).map(|i| 0.5 + i as f64).collect();
        for n in [2usize, 3, 9] {
            let run_n = |f: &Function| {
                let mut a = vec![
                    RtArg::Buf(xs.clone()),
                    RtArg::Scalar(RtVal::F(0.75)),
                    RtArg::Scalar(RtVal::I(n as i64)),
                    RtArg::Scalar(RtVal::F(1.0)),
                ];
                run(f, &mut a)
                    .unwrap_or_else(|e| panic!("n = {n}: {e}\n{src}"))
                    .iter()
                    .map(|v| v.as_float().expect("float result"))
                    .collect::<Vec<f64>>()
            };
            let (c, f) = (run_n(&coarse), run_n(&fine));
            assert!(
                close(&c, &f, 1e-12),
                "n = {n}: {src}\ncoarse {c:?}\nfine {f:?}"
            );
        }
    }
}

/// The tapes of `f`, by name.
fn tape_names(f: &Function) -> Vec<String> {
    let mut names: Vec<String> = f
        .bufs
        .iter()
        .filter(|b| b.kind == crate::ir::BufKind::Tape)
        .map(|b| b.name.clone())
        .collect();
    names.sort();
    names
}

/// ADBench GMM's inner kernel: `centered` (filled by the loop before) is re-evaluated at
/// the reader's index, `centered[j]` right after its store is the stored value, `diag`
/// (written only by an earlier top-level loop) is re-read, and the counter `l` of the
/// inner loop is rebuilt from its start; only the start of each column's run of `l` and
/// the final `scaled[j]` stay taped. Near-fills that are not fills keep their tapes (the
/// numeric tests `reuse::*` check all of them against finite differences).
#[test]
fn reused_values_are_not_taped() {
    let kernel = item(
        "fn f(x: &[f64], means: &[f64], log_diag: &[f64], lower: &[f64], d: usize) -> f64 {
            let k = means.len() / d;
            let n = x.len() / d;
            let mut diag = vec![0.0; k * d];
            for c in 0..k {
                for j in 0..d { diag[c * d + j] = log_diag[c * d + j].exp(); }
            }
            let mut centered = vec![0.0; d];
            let mut scaled = vec![0.0; d];
            let mut total = 0.0;
            for p in 0..n {
                for c in 0..k {
                    for j in 0..d {
                        centered[j] = x[p * d + j] - means[c * d + j];
                        scaled[j] = diag[c * d + j] * centered[j];
                    }
                    let mut l = c * d * (d - 1) / 2;
                    for col in 0..d {
                        for row in col + 1..d {
                            scaled[row] += lower[l] * centered[col];
                            l += 1;
                        }
                    }
                    for j in 0..d { total += scaled[j] * scaled[j]; }
                }
            }
            total
        }",
    );
    let coarse = compile_with_for_tests("reverse, wrt(means, log_diag, lower)", &kernel)
        .expect("compiles")
        .reverse;
    let fine = compile_with_for_tests(
        "reverse, wrt(means, log_diag, lower), coarsen = off",
        &kernel,
    )
    .expect("compiles")
    .reverse;
    let names = tape_names(&coarse);
    assert_eq!(names.len(), 2, "coarse tapes {names:?}");
    assert!(
        names.contains(&"tape_l".to_string()),
        "coarse tapes {names:?}"
    );
    assert!(
        tape_names(&fine).len() > 5,
        "fine tapes {:?}",
        tape_names(&fine)
    );

    let near_fills = [
        // The refill skips buf[0].
        "fn f(x: &[f64], w: f64, rounds: usize) -> f64 {
            let n = x.len();
            let mut buf = vec![0.0; n];
            for j in 0..n { buf[j] = w * x[j]; }
            let mut total = 0.0;
            for r in 0..rounds {
                for j in 1..n { buf[j] = w * (r as f64 + 2.0) * x[j]; }
                for k in 0..n { total += buf[k] * buf[k] * x[k]; }
            }
            total
        }",
        // buf[0] is overwritten between the fill and the read.
        "fn f(x: &[f64], w: f64, rounds: usize) -> f64 {
            let n = x.len();
            let mut buf = vec![0.0; n];
            let mut total = 0.0;
            for r in 0..rounds {
                for j in 0..n { buf[j] = w * x[j] + r as f64; }
                buf[0] = w * w;
                for k in 0..n { total += (buf[k] * x[k]).sin(); }
            }
            total
        }",
    ];
    for src in near_fills {
        let coarse = compile_with_for_tests("reverse, wrt(x, w)", &item(src))
            .expect("compiles")
            .reverse;
        assert!(has_tape(&coarse), "a near-fill lost its tape:\n{src}");
    }
}

/// Work fixed for an inner loop leaves it (`derivative::reverse::{hoist, promote}`): the
/// reverse program of a periodic stencil and of a triangular product computes no integer
/// remainder and reads no `u` at a loop-fixed index inside its innermost loops, adds into
/// `du[c]` through a register, and its adjoints match central differences of the primal
/// (relative 1e-7: the differences' truncation error at h = 1e-6).
#[test]
fn loop_fixed_work_leaves_inner_loops() {
    let src = item(
        "fn f(u: &[f64], l: &[f64], m: usize, n: usize) -> f64 {
            let mut s = 0.0;
            for i in 0..m {
                for j in 0..n {
                    let c = u[i * n + j];
                    let so = u[((i + 1) % m) * n + j];
                    let no = u[((i + m - 1) % m) * n + j];
                    s += c * (so - no) + c * c * so;
                }
            }
            let mut z = vec![0.0; n];
            for c in 0..n {
                for r in c + 1..n {
                    z[r] += l[r * n + c] * u[c];
                }
            }
            for r in 0..n {
                s += z[r] * z[r];
            }
            s
        }",
    );
    let c = compile_with_for_tests("reverse, wrt(u, l)", &src).expect("compiles");
    let rev = &c.reverse;
    // Innermost loops: no remainder, no read of `u` at an index fixed for the loop.
    let mut innermost = Vec::new();
    rev.walk(rev.body, &mut |i| {
        if let InstKind::For { body, .. } = &rev.inst(i).kind {
            let mut nested = false;
            rev.walk(*body, &mut |j| {
                nested |= matches!(rev.inst(j).kind, InstKind::For { .. })
            });
            if !nested {
                innermost.push(*body);
            }
        }
    });
    assert!(!innermost.is_empty());
    for body in innermost {
        rev.walk(body, &mut |j| {
            assert!(
                !matches!(
                    rev.inst(j).kind,
                    InstKind::Binary(crate::ir::BinOp::Rem, ..)
                ),
                "a remainder left in an inner loop:\n{}",
                crate::ir::printer::print(rev)
            );
        });
    }
    assert!(rev.cells.iter().any(|c| c.name.starts_with("fixed")));
    assert!(rev.cells.iter().any(|c| c.name.starts_with("sum_")));
    let (m, n) = (5usize, 4usize);
    let u: Vec<f64> = (0..m * n).map(|k| (0.7 * k as f64).sin()).collect();
    let l: Vec<f64> = (0..n * n).map(|k| (0.3 * k as f64).cos()).collect();
    let ints = [
        RtArg::Scalar(RtVal::I(m as i64)),
        RtArg::Scalar(RtVal::I(n as i64)),
    ];
    let primal = |u: &[f64], l: &[f64]| -> f64 {
        let mut a = vec![RtArg::Buf(u.to_vec()), RtArg::Buf(l.to_vec())];
        a.extend(ints.iter().cloned());
        run(&c.primal, &mut a).expect("primal runs")[0]
            .as_float()
            .expect("float")
    };
    let mut a = vec![
        RtArg::Buf(u.clone()),
        RtArg::Buf(vec![0.0; u.len()]),
        RtArg::Buf(l.clone()),
        RtArg::Buf(vec![0.0; l.len()]),
    ];
    a.extend(ints.iter().cloned());
    a.push(RtArg::Scalar(RtVal::F(1.0)));
    let value = run(rev, &mut a).expect("reverse runs")[0]
        .as_float()
        .expect("float");
    assert!((value - primal(&u, &l)).abs() <= 1e-14 * value.abs().max(1.0));
    let (RtArg::Buf(du), RtArg::Buf(dl)) = (&a[1], &a[3]) else {
        unreachable!()
    };
    let h = 1e-6;
    let mut fd = Vec::new();
    for k in 0..u.len() + l.len() {
        let (mut up, mut lp, mut um, mut lm) = (u.clone(), l.clone(), u.clone(), l.clone());
        if k < u.len() {
            up[k] += h;
            um[k] -= h;
        } else {
            lp[k - u.len()] += h;
            lm[k - u.len()] -= h;
        }
        fd.push((primal(&up, &lp) - primal(&um, &lm)) / (2.0 * h));
    }
    let ad: Vec<f64> = du.iter().chain(dl.iter()).copied().collect();
    assert!(
        close(&ad, &fd, 1e-7),
        "adjoints {ad:?}\nfinite differences {fd:?}"
    );
}

/// The same inside a checkpointed loop: the plain steps of its reverse phase and the
/// adjoint of a step are ordinary loops, so the periodic neighbours' remainders leave
/// their inner loops there too (`promote::collect_loops`). The interpreter does not run
/// checkpointed loops; `tests/scoreboard_programs.rs` (Burgers under Revolve against the
/// full tape and finite differences) and `tests/numeric/checkpoint*.rs` check the values.
#[test]
fn loop_fixed_work_leaves_inner_loops_of_checkpointed_steps() {
    let src = item(
        "fn f(u0: &[f64], m: usize, n: usize, steps: usize) -> f64 {
            let mut u = u0.to_vec();
            let mut next = vec![0.0; m * n];
            #[checkpoint(revolve(snapshots = 2))]
            for _ in 0..steps {
                for i in 0..m {
                    for j in 0..n {
                        let c = u[i * n + j];
                        let so = u[((i + 1) % m) * n + j];
                        next[i * n + j] = c + 0.1 * c * so;
                    }
                }
                std::mem::swap(&mut u, &mut next);
            }
            let mut s = 0.0;
            for k in 0..m * n {
                s += u[k] * u[k];
            }
            s
        }",
    );
    let c = compile_with_for_tests("reverse, wrt(u0)", &src).expect("compiles");
    let rev = &c.reverse;
    let mut ck_blocks = Vec::new();
    rev.walk(rev.body, &mut |i| {
        if let InstKind::CkReverse {
            advance, adjoint, ..
        } = &rev.inst(i).kind
        {
            ck_blocks.extend([*advance, *adjoint]);
        }
    });
    assert_eq!(ck_blocks.len(), 2, "{}", crate::ir::printer::print(rev));
    for blk in ck_blocks {
        let mut inner_rems = 0;
        let mut any_rem = false;
        rev.walk(blk, &mut |i| {
            any_rem |= matches!(
                rev.inst(i).kind,
                InstKind::Binary(crate::ir::BinOp::Rem, ..)
            );
            if let InstKind::For { body, .. } = &rev.inst(i).kind {
                let mut nested = false;
                rev.walk(*body, &mut |j| {
                    nested |= matches!(rev.inst(j).kind, InstKind::For { .. })
                });
                if !nested {
                    rev.walk(*body, &mut |j| {
                        if matches!(
                            rev.inst(j).kind,
                            InstKind::Binary(crate::ir::BinOp::Rem, ..)
                        ) {
                            inner_rems += 1;
                        }
                    });
                }
            }
        });
        assert!(any_rem, "the step computes its neighbour's row");
        assert_eq!(
            inner_rems,
            0,
            "a remainder left in an inner loop of a checkpointed step:\n{}",
            crate::ir::printer::print(rev)
        );
    }
}

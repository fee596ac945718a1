//! Buffers, cells, argument checks and a hand-written tangent/adjoint pair.

use super::*;

#[test]
fn loads_and_stores_name_the_buffer_on_errors() {
    // w = vec![0.0; n]; w[i] = x[i] * 2; y[j] += w[j]; return w[k]
    let f = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
            buffer_param(f, "y", 1, Ty::Float, true);
            scalar_param(f, "n", Ty::Int);
            scalar_param(f, "k", Ty::Int);
            local(f, "w", 1, Ty::Float, BufKind::Local);
        },
        |b| {
            let (n, k) = (param(b, 2), param(b, 3));
            let zero = b.fconst(0.0);
            b.stmt(InstKind::Alloc {
                buf: Buf(2),
                dims: vec![n],
                init: AllocInit::Fill(zero),
            });
            let i0 = b.iconst(0);
            for_loop(b, (i0, n, None, false), vec![], |b, i, _| {
                let xi = b.load(Buf(0), vec![i]);
                let two = b.fconst(2.0);
                let v = b.mul(xi, two);
                b.store(Buf(2), vec![i], v);
                let wi = b.load(Buf(2), vec![i]);
                b.stmt(InstKind::StoreAdd(Buf(1), vec![i], wi));
                Body {
                    yields: vec![],
                    exit: vec![],
                }
            });
            let len = b.value(InstKind::Len(Buf(2), vec![]), Ty::Int);
            vec![b.load(Buf(2), vec![k]), len]
        },
    );
    let mut args = [
        RtArg::Buf(vec![1.0, 2.0, 3.0]),
        RtArg::Buf(vec![10.0, 10.0, 10.0]),
        RtArg::Scalar(RtVal::I(3)),
        RtArg::Scalar(RtVal::I(1)),
    ];
    assert_eq!(
        checked_run(&f, &mut args).unwrap(),
        vec![RtVal::F(4.0), RtVal::I(3)]
    );
    assert_eq!(
        args[1],
        RtArg::Buf(vec![12.0, 14.0, 16.0]),
        "a &mut buffer is updated in place"
    );
    assert_eq!(args[0], RtArg::Buf(vec![1.0, 2.0, 3.0]));
    args[3] = RtArg::Scalar(RtVal::I(3));
    let err = checked_run(&f, &mut args).unwrap_err();
    assert!(
        err.contains("index 3 out of bounds for buf2 (w) of length 3"),
        "{err}"
    );
    args[3] = RtArg::Scalar(RtVal::I(-1));
    assert!(checked_run(&f, &mut args)
        .unwrap_err()
        .contains("negative index -1 into buf2 (w)"));
    args[2] = RtArg::Scalar(RtVal::I(4));
    assert!(checked_run(&f, &mut args)
        .unwrap_err()
        .contains("out of bounds for buf0 (x)"));
}

#[test]
fn read_only_parameters_and_unallocated_buffers_are_errors() {
    let write_x = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
        },
        |b| {
            let (i, v) = (b.iconst(0), b.fconst(1.0));
            b.store(Buf(0), vec![i], v);
            vec![]
        },
    );
    assert!(checked_run(&write_x, &mut [RtArg::Buf(vec![0.0])])
        .unwrap_err()
        .contains("read-only parameter"));
    let read_w = function(
        |f| {
            local(f, "w", 1, Ty::Float, BufKind::Local);
        },
        |b| {
            let i = b.iconst(0);
            vec![b.load(Buf(0), vec![i])]
        },
    );
    assert!(checked_run(&read_w, &mut [])
        .unwrap_err()
        .contains("before it is allocated"));
}

#[test]
fn arguments_are_checked_against_parameters() {
    let f = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
            scalar_param(f, "a", Ty::Float);
        },
        |b| vec![param(b, 1)],
    );
    assert!(checked_run(&f, &mut [RtArg::Buf(vec![])]).is_err());
    assert!(checked_run(&f, &mut [RtArg::Buf(vec![]), RtArg::Scalar(RtVal::I(1))]).is_err());
    assert!(checked_run(&f, &mut [RtArg::Buf2(vec![]), RtArg::Scalar(RtVal::F(1.0))]).is_err());
    assert_eq!(
        checked_run(&f, &mut [RtArg::Buf(vec![]), RtArg::Scalar(RtVal::F(1.5))]),
        Ok(vec![RtVal::F(1.5)])
    );
}

#[test]
fn integer_buffers_and_opaque_parameters() {
    // idx: &mut [i64], comm: opaque; idx[1] += idx[0]; returns idx[0] > 2
    let f = function(
        |f| {
            buffer_param(f, "idx", 1, Ty::Int, true);
            f.params.push(ParamInfo {
                name: "comm".into(),
                kind: ParamKind::Opaque,
                span: proc_macro2::Span::call_site(),
            });
        },
        |b| {
            let (i0, i1) = (b.iconst(0), b.iconst(1));
            let v = b.load(Buf(0), vec![i0]);
            b.stmt(InstKind::StoreAdd(Buf(0), vec![i1], v));
            let two = b.iconst(2);
            vec![b.binary(BinOp::Gt, v, two)]
        },
    );
    let mut args = [RtArg::IntBuf(vec![3, 4]), RtArg::Opaque];
    let got = checked_run(&f, &mut args).unwrap();
    assert_eq!(got[0].as_bool(), Some(true));
    assert_eq!(args[0], RtArg::IntBuf(vec![3, 7]));
    assert!(checked_run(&f, &mut [RtArg::Buf(vec![3.0, 4.0]), RtArg::Opaque]).is_err());
}

#[test]
fn rank_two_buffers_index_rows() {
    // a[i][j] and the length of row i; z[1][0] = a[0][1] for a &mut rank-2 z.
    let f = function(
        |f| {
            buffer_param(f, "a", 2, Ty::Float, false);
            buffer_param(f, "z", 2, Ty::Float, true);
        },
        |b| {
            let (i0, i1) = (b.iconst(0), b.iconst(1));
            let v = b.load(Buf(0), vec![i0, i1]);
            b.store(Buf(1), vec![i1, i0], v);
            let row_len = b.value(InstKind::Len(Buf(0), vec![i1]), Ty::Int);
            vec![v, row_len]
        },
    );
    let mut args = [
        RtArg::Buf2(vec![vec![1.0, 2.0], vec![3.0, 4.0, 5.0]]),
        RtArg::Buf2(vec![vec![0.0], vec![0.0]]),
    ];
    assert_eq!(
        checked_run(&f, &mut args).unwrap(),
        vec![RtVal::F(2.0), RtVal::I(3)]
    );
    assert_eq!(args[1], RtArg::Buf2(vec![vec![0.0], vec![2.0]]));
}

#[test]
fn whole_buffer_operations() {
    // u = x.to_vec(); v = vec![1.0; 2][3]; ...
    let f = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, true);
            local(f, "u", 1, Ty::Float, BufKind::Local);
            local(f, "v", 1, Ty::Float, BufKind::Shadow);
            local(f, "m", 2, Ty::Float, BufKind::Local);
        },
        |b| {
            let (x, u, v, m) = (Buf(0), Buf(1), Buf(2), Buf(3));
            b.stmt(InstKind::Alloc {
                buf: u,
                dims: vec![],
                init: AllocInit::Copy(x),
            });
            let (three, one) = (b.iconst(3), b.fconst(1.0));
            b.stmt(InstKind::Alloc {
                buf: v,
                dims: vec![three],
                init: AllocInit::Fill(one),
            });
            b.stmt(InstKind::AddBuf { dst: u, src: v }); // u = x + 1
            b.stmt(InstKind::Swap(u, v)); // v = x + 1, u = ones
            let sum_v = b.value(InstKind::SumBuf(v), Ty::Float);
            b.stmt(InstKind::ZeroBuf(u));
            let sum_u = b.value(InstKind::SumBuf(u), Ty::Float);
            b.stmt(InstKind::CopyFrom { dst: x, src: v }); // x = x + 1
            let (two, half) = (b.iconst(2), b.fconst(0.5));
            b.stmt(InstKind::Alloc {
                buf: m,
                dims: vec![two, three],
                init: AllocInit::Fill(half),
            });
            let sum_m = b.value(InstKind::SumBuf(m), Ty::Float);
            vec![sum_v, sum_u, sum_m]
        },
    );
    let mut args = [RtArg::Buf(vec![1.0, 2.0, 3.0])];
    assert_eq!(
        floats(&checked_run(&f, &mut args).unwrap()),
        vec![9.0, 0.0, 3.0]
    );
    assert_eq!(args[0], RtArg::Buf(vec![2.0, 3.0, 4.0]));
    let mut short = [RtArg::Buf(vec![1.0, 2.0])];
    let err = checked_run(&f, &mut short).unwrap_err();
    assert!(
        err.contains("add buf2 (v) of shape [3] into buf1 (u) of shape [2]"),
        "{err}"
    );
    assert_eq!(
        short[0],
        RtArg::Buf(vec![1.0, 2.0]),
        "a failed run leaves the arguments alone"
    );
}

#[test]
fn cells_declare_get_set_and_accumulate() {
    // for i in 0..3 { c = 10 (re-declared); c += i; d += c }  with d declared once.
    let f = function(
        |_| {},
        |b| {
            let zero = b.fconst(0.0);
            let d = b.cell(Ty::Float, "d", zero);
            let c = b.func.new_cell(Ty::Int, "c");
            let (i0, i3) = (b.iconst(0), b.iconst(3));
            for_loop(b, (i0, i3, None, false), vec![], |b, i, _| {
                let ten = b.iconst(10);
                b.stmt(InstKind::CellDecl(c, ten));
                b.accumulate(c, i);
                let cv = b.get(c);
                let cf = b.value(
                    InstKind::Cast {
                        value: cv,
                        to: Ty::Float,
                        int: None,
                        float: None,
                    },
                    Ty::Float,
                );
                b.accumulate(d, cf);
                Body {
                    yields: vec![],
                    exit: vec![],
                }
            });
            let last = b.get(c);
            let total = b.get(d);
            let seven = b.fconst(7.0);
            b.set(d, seven);
            vec![last, total, b.get(d)]
        },
    );
    assert_eq!(
        checked_run(&f, &mut []).unwrap(),
        vec![RtVal::I(12), RtVal::F(33.0), RtVal::F(7.0)]
    );
}

#[test]
fn assert_and_calls_fail() {
    let f = function(
        |f| scalar_param(f, "a", Ty::Float),
        |b| {
            let (a, zero) = (param(b, 0), b.fconst(0.0));
            let pos = b.binary(BinOp::Gt, a, zero);
            b.stmt(InstKind::Assert {
                cond: pos,
                message: Code::parse("\"a > 0\""),
            });
            vec![a]
        },
    );
    assert!(checked_run(&f, &mut [RtArg::Scalar(RtVal::F(1.0))]).is_ok());
    assert!(checked_run(&f, &mut [RtArg::Scalar(RtVal::F(-1.0))])
        .unwrap_err()
        .contains("assertion failed: a > 0"));
    let g = function(
        |_| {},
        |b| {
            let callee = Callee {
                path: syn::parse_quote!(g),
                receiver: None,
                generics: Default::default(),
                then: Default::default(),
            };
            b.stmt(InstKind::Call {
                callee,
                args: vec![],
                suffix: CallSuffix::Primal,
            });
            vec![]
        },
    );
    assert!(checked_run(&g, &mut [])
        .unwrap_err()
        .contains("does not run calls"));
}

#[test]
fn type_mismatches_are_reported() {
    // A value declared Int that computes a float: the verifier does not see it, the interpreter does.
    let f = function(
        |f| scalar_param(f, "a", Ty::Float),
        |b| {
            let a = param(b, 0);
            vec![b.value(InstKind::Math("sin", vec![a]), Ty::Int)]
        },
    );
    let err = checked_run(&f, &mut [RtArg::Scalar(RtVal::F(1.0))]).unwrap_err();
    assert!(err.starts_with("i1: v1 is declared Int"), "{err}");
}

/// The primal, a tangent program and a taped adjoint program of
/// `f(x, a) = Σ_i sin(a·x[i])·p_i` with `p_i = Π_{k<i} x[k]`, written as the derivative
/// passes would: the adjoint saves `p_i` on a direct-indexed tape in a forward sweep and
/// reads it back in a reversed loop. Checked against finite differences and the
/// dot-product identity.
#[test]
fn hand_written_tangent_and_taped_adjoint_agree() {
    let primal = |x: &[f64], a: f64| {
        let (mut s, mut p) = (0.0, 1.0);
        for xi in x {
            s += (a * xi).sin() * p;
            p *= xi;
        }
        s
    };
    // fwd(x, dx, a, da) -> (s, ds)
    let fwd = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
            buffer_param(f, "dx", 1, Ty::Float, false);
            scalar_param(f, "a", Ty::Float);
            scalar_param(f, "da", Ty::Float);
        },
        |b| {
            let (x, dx, a, da) = (Buf(0), Buf(1), param(b, 2), param(b, 3));
            let n = b.value(InstKind::Len(x, vec![]), Ty::Int);
            let (zero, s0, one) = (b.iconst(0), b.fconst(0.0), b.fconst(1.0));
            let r = for_loop(
                b,
                (zero, n, None, false),
                vec![s0, s0, one, s0],
                |b, i, p| {
                    let (s, ds, pr, dp) = (p[0], p[1], p[2], p[3]);
                    let (xi, dxi) = (b.load(x, vec![i]), b.load(dx, vec![i]));
                    let u = b.mul(a, xi);
                    let du1 = b.mul(da, xi);
                    let du2 = b.mul(a, dxi);
                    let du = b.add(du1, du2);
                    let sn = b.math("sin", vec![u]);
                    let cs = b.math("cos", vec![u]);
                    let term = b.mul(sn, pr);
                    let s = b.add(s, term);
                    let t1 = b.mul(cs, du);
                    let t1 = b.mul(t1, pr);
                    let t2 = b.mul(sn, dp);
                    let dterm = b.add(t1, t2);
                    let ds = b.add(ds, dterm);
                    let pn = b.mul(pr, xi);
                    let d1 = b.mul(dp, xi);
                    let d2 = b.mul(pr, dxi);
                    let dpn = b.add(d1, d2);
                    Body {
                        yields: vec![s, ds, pn, dpn],
                        exit: vec![],
                    }
                },
            );
            vec![r[0], r[1]]
        },
    );
    // rev(x, xbar: &mut, a, seed) -> (s, abar)
    let rev = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
            buffer_param(f, "xbar", 1, Ty::Float, true);
            scalar_param(f, "a", Ty::Float);
            scalar_param(f, "seed", Ty::Float);
            local(f, "tape_p", 1, Ty::Float, BufKind::Tape);
        },
        |b| {
            let (x, xbar, tape, a, seed) = (Buf(0), Buf(1), Buf(2), param(b, 2), param(b, 3));
            let n = b.value(InstKind::Len(x, vec![]), Ty::Int);
            b.stmt(InstKind::TapeEnsure(tape, n));
            let (zero, s0, one) = (b.iconst(0), b.fconst(0.0), b.fconst(1.0));
            let fw = for_loop(b, (zero, n, None, false), vec![s0, one], |b, i, p| {
                b.store(tape, vec![i], p[1]);
                let xi = b.load(x, vec![i]);
                let u = b.mul(a, xi);
                let sn = b.math("sin", vec![u]);
                let term = b.mul(sn, p[1]);
                let s = b.add(p[0], term);
                Body {
                    yields: vec![s, b.mul(p[1], xi)],
                    exit: vec![],
                }
            });
            let abar = b.cell(Ty::Float, "abar", s0);
            // pbar flows backwards: the adjoint of p_{i+1} = p_i x_i; starts at 0 (p_n unused).
            let bw = for_loop(b, (zero, n, None, true), vec![s0], |b, i, q| {
                let pbar_next = q[0];
                let (xi, pi) = (b.load(x, vec![i]), b.load(tape, vec![i]));
                let u = b.mul(a, xi);
                let (sn, cs) = (b.math("sin", vec![u]), b.math("cos", vec![u]));
                // s += sin(u) p:   ubar = seed cos(u) p, pbar += seed sin(u)
                let sp = b.mul(seed, pi);
                let ubar = b.mul(sp, cs);
                let xa = b.mul(ubar, a);
                let xb = b.mul(pbar_next, pi);
                let xbar_i = b.add(xa, xb);
                b.stmt(InstKind::StoreAdd(xbar, vec![i], xbar_i));
                let ua = b.mul(ubar, xi);
                b.accumulate(abar, ua);
                let from_s = b.mul(seed, sn);
                let from_p = b.mul(pbar_next, xi);
                Body {
                    yields: vec![b.add(from_s, from_p)],
                    exit: vec![],
                }
            });
            assert_eq!(bw.len(), 2, "pbar and the trip count");
            vec![fw[0], b.get(abar)]
        },
    );
    let (x, a) = (vec![0.3, -0.8, 1.1, 0.6], 0.9);
    let (dx, da) = (vec![0.2, 0.5, -0.4, 0.7], -0.3);
    let (xbar0, seed) = (vec![1.0, -2.0, 0.5, 0.25], 1.7);
    let mut fargs = [
        RtArg::Buf(x.clone()),
        RtArg::Buf(dx.clone()),
        RtArg::Scalar(RtVal::F(a)),
        RtArg::Scalar(RtVal::F(da)),
    ];
    let fw = floats(&checked_run(&fwd, &mut fargs).unwrap());
    let mut rargs = [
        RtArg::Buf(x.clone()),
        RtArg::Buf(xbar0.clone()),
        RtArg::Scalar(RtVal::F(a)),
        RtArg::Scalar(RtVal::F(seed)),
    ];
    let rv = floats(&checked_run(&rev, &mut rargs).unwrap());
    let RtArg::Buf(xbar) = &rargs[1] else {
        panic!()
    };
    let grad_x: Vec<f64> = xbar
        .iter()
        .zip(&xbar0)
        .map(|(s, s0)| (s - s0) / seed)
        .collect();
    let grad_a = rv[1] / seed;
    assert_eq!(fw[0], primal(&x, a));
    assert_eq!(rv[0], primal(&x, a));
    // Central differences along (dx, da), h = 1e-5: error ~1e-10, tolerance 1e-8.
    let h = 1e-5;
    let shifted = |t: f64| {
        primal(
            &x.iter()
                .zip(&dx)
                .map(|(x, d)| x + t * d)
                .collect::<Vec<_>>(),
            a + t * da,
        )
    };
    let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
    assert!((fw[1] - fd).abs() < 1e-8, "tangent {} vs fd {fd}", fw[1]);
    // Dot product: seed·(J ẋ) = (Jᵀ seed)·ẋ to 1e-12 relative.
    let lhs = seed * fw[1];
    let rhs = seed * (grad_x.iter().zip(&dx).map(|(g, d)| g * d).sum::<f64>() + grad_a * da);
    assert!(
        (lhs - rhs).abs() <= 1e-12 * lhs.abs().max(rhs.abs()),
        "{lhs} vs {rhs}"
    );
}

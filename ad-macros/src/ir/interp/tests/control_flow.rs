//! Arithmetic, math, casts, branches and loops.

use super::*;

#[test]
fn straight_line_arithmetic_and_math() {
    let f = function(
        |f| {
            scalar_param(f, "a", Ty::Float);
            scalar_param(f, "b", Ty::Float);
        },
        |b| {
            let (x, y) = (param(b, 0), param(b, 1));
            let p = b.mul(x, y);
            let s = b.math("sin", vec![x]);
            let r = b.add(p, s);
            let q = b.div(r, y);
            let h = b.math("hypot", vec![x, y]);
            let m = b.math("mul_add", vec![x, y, h]);
            let n = b.neg(m);
            vec![q, n]
        },
    );
    let (a, c) = (0.7_f64, -1.3_f64);
    let got = floats(
        &checked_run(
            &f,
            &mut [RtArg::Scalar(RtVal::F(a)), RtArg::Scalar(RtVal::F(c))],
        )
        .unwrap(),
    );
    assert_eq!(got, vec![(a * c + a.sin()) / c, -a.mul_add(c, a.hypot(c))]);
}

#[test]
fn math_table_matches_std() {
    let x = 0.37_f64;
    let cases: [(&str, f64); 12] = [
        ("sin", x.sin()),
        ("acos", x.acos()),
        ("atanh", x.atanh()),
        ("exp_m1", x.exp_m1()),
        ("ln_1p", x.ln_1p()),
        ("log2", x.log2()),
        ("cbrt", x.cbrt()),
        ("signum", 1.0),
        ("recip", 1.0 / x),
        ("round", 0.0),
        ("trunc", 0.0),
        ("tanh", x.tanh()),
    ];
    for (name, want) in cases {
        assert_eq!(math(name, &[RtVal::F(x)]), Ok(RtVal::F(want)), "{name}");
    }
    assert_eq!(
        math("powi", &[RtVal::F(x), RtVal::I(3)]),
        Ok(RtVal::F(x.powi(3)))
    );
    assert_eq!(
        math("powf", &[RtVal::F(x), RtVal::F(1.5)]),
        Ok(RtVal::F(x.powf(1.5)))
    );
    assert_eq!(
        math("log", &[RtVal::F(x), RtVal::F(3.0)]),
        Ok(RtVal::F(x.log(3.0)))
    );
    assert_eq!(
        math("atan2", &[RtVal::F(x), RtVal::F(-2.0)]),
        Ok(RtVal::F(x.atan2(-2.0)))
    );
    assert_eq!(math("max", &[RtVal::F(x), RtVal::F(-2.0)]), Ok(RtVal::F(x)));
    assert!(math("sinc", &[RtVal::F(x)])
        .unwrap_err()
        .contains("unknown float method `sinc`"));
    assert!(math("sin", &[RtVal::F(x), RtVal::F(x)]).is_err());
    assert!(math("powi", &[RtVal::F(x), RtVal::F(2.0)]).is_err());
}

#[test]
fn integer_ops_fail_where_rust_panics() {
    assert_eq!(
        binary(BinOp::Rem, RtVal::I(7), RtVal::I(3)),
        Ok(RtVal::I(1))
    );
    assert_eq!(
        binary(BinOp::Rem, RtVal::F(7.5), RtVal::F(2.0)),
        Ok(RtVal::F(1.5))
    );
    assert_eq!(
        binary(BinOp::Div, RtVal::I(-7), RtVal::I(2)),
        Ok(RtVal::I(-3))
    );
    assert!(binary(BinOp::Add, RtVal::I(i64::MAX), RtVal::I(1))
        .unwrap_err()
        .contains("overflow"));
    assert!(binary(BinOp::Div, RtVal::I(1), RtVal::I(0))
        .unwrap_err()
        .contains("by zero"));
    assert!(binary(BinOp::Rem, RtVal::I(1), RtVal::I(0))
        .unwrap_err()
        .contains("by zero"));
    assert!(binary(BinOp::Add, RtVal::I(1), RtVal::F(1.0)).is_err());
    assert!(binary(BinOp::And, RtVal::F(1.0), RtVal::F(1.0)).is_err());
    assert_eq!(
        binary(BinOp::Or, RtVal::B(false), RtVal::B(true)),
        Ok(RtVal::B(true))
    );
    assert_eq!(
        binary(BinOp::Le, RtVal::I(2), RtVal::I(2)),
        Ok(RtVal::B(true))
    );
    assert!(unary(UnOp::Neg, RtVal::I(i64::MIN)).is_err());
}

#[test]
fn casts_follow_rust_as() {
    assert_eq!(cast(RtVal::F(-2.7), Ty::Int, None), Ok(RtVal::I(-2)));
    assert_eq!(
        cast(RtVal::F(-2.7), Ty::Int, Some(crate::ir::IntTy::Usize)),
        Ok(RtVal::I(0))
    );
    assert_eq!(
        cast(RtVal::F(300.0), Ty::Int, Some(crate::ir::IntTy::U8)),
        Ok(RtVal::I(255))
    );
    assert_eq!(cast(RtVal::F(f64::NAN), Ty::Int, None), Ok(RtVal::I(0)));
    assert_eq!(
        cast(RtVal::I(300), Ty::Int, Some(crate::ir::IntTy::U8)),
        Ok(RtVal::I(44))
    );
    assert_eq!(
        cast(RtVal::I(-1), Ty::Int, Some(crate::ir::IntTy::I32)),
        Ok(RtVal::I(-1))
    );
    assert!(cast(RtVal::I(-1), Ty::Int, Some(crate::ir::IntTy::Usize)).is_err());
    assert_eq!(cast(RtVal::I(3), Ty::Float, None), Ok(RtVal::F(3.0)));
    assert_eq!(cast(RtVal::B(true), Ty::Int, None), Ok(RtVal::I(1)));
    assert!(cast(RtVal::B(true), Ty::Float, None).is_err());
}

#[test]
fn if_yields_the_chosen_branch() {
    // |a - b| as an if-expression, plus a second result.
    let f = function(
        |f| {
            scalar_param(f, "a", Ty::Float);
            scalar_param(f, "b", Ty::Float);
        },
        |b| {
            let (x, y) = (param(b, 0), param(b, 1));
            let c = b.binary(BinOp::Gt, x, y);
            let r = if_else(
                b,
                c,
                |b| {
                    let d = b.sub(x, y);
                    let one = b.iconst(1);
                    vec![d, one]
                },
                |b| {
                    let d = b.sub(y, x);
                    let two = b.iconst(2);
                    vec![d, two]
                },
            );
            vec![r[0], r[1]]
        },
    );
    let call = |a: f64, c: f64| {
        checked_run(
            &f,
            &mut [RtArg::Scalar(RtVal::F(a)), RtArg::Scalar(RtVal::F(c))],
        )
        .unwrap()
    };
    assert_eq!(call(3.0, 1.0), vec![RtVal::F(2.0), RtVal::I(1)]);
    assert_eq!(call(1.0, 3.5), vec![RtVal::F(2.5), RtVal::I(2)]);
}

#[test]
fn for_loop_carries_params_and_counts_trips() {
    // s = Σ x[i]²; p = Π (1 + x[i])
    let f = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
            scalar_param(f, "n", Ty::Int);
        },
        |b| {
            let (zero, one, n) = (b.iconst(0), b.fconst(1.0), param(b, 1));
            let s0 = b.fconst(0.0);
            for_loop(b, (zero, n, None, false), vec![s0, one], |b, i, p| {
                let xi = b.load(Buf(0), vec![i]);
                let sq = b.mul(xi, xi);
                let s = b.add(p[0], sq);
                let one = b.fconst(1.0);
                let f1 = b.add(one, xi);
                let prod = b.mul(p[1], f1);
                Body {
                    yields: vec![s, prod],
                    exit: vec![],
                }
            })
        },
    );
    let x = vec![0.5, -1.5, 2.0];
    let got = checked_run(&f, &mut [RtArg::Buf(x.clone()), RtArg::Scalar(RtVal::I(3))]).unwrap();
    let s: f64 = x.iter().map(|v| v * v).sum();
    let p: f64 = x.iter().fold(1.0, |p, v| p * (1.0 + v));
    assert_eq!(got, vec![RtVal::F(s), RtVal::F(p), RtVal::I(3)]);
    // An empty range runs nothing: params stay the inits.
    let got = checked_run(&f, &mut [RtArg::Buf(x), RtArg::Scalar(RtVal::I(0))]).unwrap();
    assert_eq!(got, vec![RtVal::F(0.0), RtVal::F(1.0), RtVal::I(0)]);
}

#[test]
fn for_range_is_rev_then_step_by_like_rust() {
    // acc = acc * 16 + (i + 1) encodes the visited sequence.
    let f = function(
        |f| {
            scalar_param(f, "a", Ty::Int);
            scalar_param(f, "b", Ty::Int);
            scalar_param(f, "s", Ty::Int);
        },
        |_| vec![],
    );
    for rev in [false, true] {
        let mut f = f.clone();
        let blk = f.body;
        let mut b = Builder::new(&mut f, blk);
        let (lo, hi, step) = (param(&mut b, 0), param(&mut b, 1), param(&mut b, 2));
        let acc0 = b.iconst(0);
        let r = for_loop(&mut b, (lo, hi, Some(step), rev), vec![acc0], |b, i, p| {
            let sixteen = b.iconst(16);
            let one = b.iconst(1);
            let shifted = b.mul(p[0], sixteen);
            let i1 = b.add(i, one);
            Body {
                yields: vec![b.add(shifted, i1)],
                exit: vec![],
            }
        });
        b.set_yields(blk, r);
        for lo in 0..4_i64 {
            for hi in 0..7_i64 {
                for step in 1..4_usize {
                    let range = lo..hi;
                    let seq: Vec<i64> = if rev {
                        range.rev().step_by(step).collect()
                    } else {
                        range.step_by(step).collect()
                    };
                    let want = seq.iter().fold(0, |acc, i| acc * 16 + i + 1);
                    let mut args = [lo, hi, step as i64].map(|v| RtArg::Scalar(RtVal::I(v)));
                    let got = checked_run(&f, &mut args).unwrap();
                    assert_eq!(
                        got,
                        vec![RtVal::I(want), RtVal::I(seq.len() as i64)],
                        "{lo}..{hi} rev {rev} step {step}"
                    );
                }
            }
        }
    }
    let mut zero_step = [0, 3, 0].map(|v| RtArg::Scalar(RtVal::I(v)));
    let mut g = f.clone();
    let blk = g.body;
    let mut b = Builder::new(&mut g, blk);
    let (lo, hi, step) = (param(&mut b, 0), param(&mut b, 1), param(&mut b, 2));
    let r = for_loop(&mut b, (lo, hi, Some(step), false), vec![], |_, _, _| {
        Body {
            yields: vec![],
            exit: vec![],
        }
    });
    b.set_yields(blk, r);
    assert!(checked_run(&g, &mut zero_step)
        .unwrap_err()
        .contains("step_by(0)"));
}

#[test]
fn for_loop_stops_at_exit_flag() {
    // for i in 0..n { if s > 2 { break } s += x[i] } as a loop with an exit flag.
    let f = function(
        |f| {
            buffer_param(f, "x", 1, Ty::Float, false);
            scalar_param(f, "n", Ty::Int);
        },
        |b| {
            let (zero, n) = (b.iconst(0), param(b, 1));
            let (s0, done0) = (b.fconst(0.0), b.bconst(false));
            let r = for_loop(b, (zero, n, None, false), vec![s0, done0], |b, i, p| {
                let xi = b.load(Buf(0), vec![i]);
                let s = b.add(p[0], xi);
                let two = b.fconst(2.0);
                let done = b.binary(BinOp::Gt, s, two);
                Body {
                    yields: vec![s, done],
                    exit: vec![1],
                }
            });
            vec![r[0], r[2]]
        },
    );
    let got = checked_run(
        &f,
        &mut [
            RtArg::Buf(vec![1.0, 1.5, 4.0, 8.0]),
            RtArg::Scalar(RtVal::I(4)),
        ],
    )
    .unwrap();
    assert_eq!(got, vec![RtVal::F(2.5), RtVal::I(2)]);
    let got = checked_run(
        &f,
        &mut [
            RtArg::Buf(vec![0.5, 0.5, 0.5, 0.5]),
            RtArg::Scalar(RtVal::I(4)),
        ],
    )
    .unwrap();
    assert_eq!(got, vec![RtVal::F(2.0), RtVal::I(4)]);
}

#[test]
fn while_loop_checks_exit_then_condition() {
    // k = 0; s = 1; while k < n && !done { s *= a; k += 1; done = s > 10 }
    let f = function(
        |f| {
            scalar_param(f, "a", Ty::Float);
            scalar_param(f, "n", Ty::Int);
        },
        |b| {
            let (a, n) = (param(b, 0), param(b, 1));
            let (k0, s0, done0) = (b.iconst(0), b.fconst(1.0), b.bconst(false));
            let r = while_loop(
                b,
                vec![k0, s0, done0],
                |b, p| b.binary(BinOp::Lt, p[0], n),
                |b, p| {
                    let s = b.mul(p[1], a);
                    let one = b.iconst(1);
                    let k = b.add(p[0], one);
                    let ten = b.fconst(10.0);
                    let done = b.binary(BinOp::Gt, s, ten);
                    Body {
                        yields: vec![k, s, done],
                        exit: vec![2],
                    }
                },
            );
            vec![r[0], r[1], r[3]]
        },
    );
    let call = |a: f64, n: i64| {
        checked_run(
            &f,
            &mut [RtArg::Scalar(RtVal::F(a)), RtArg::Scalar(RtVal::I(n))],
        )
        .unwrap()
    };
    assert_eq!(
        call(3.0, 10),
        vec![RtVal::I(3), RtVal::F(27.0), RtVal::I(3)]
    );
    assert_eq!(call(2.0, 2), vec![RtVal::I(2), RtVal::F(4.0), RtVal::I(2)]);
    assert_eq!(call(2.0, 0), vec![RtVal::I(0), RtVal::F(1.0), RtVal::I(0)]);
}

#[test]
fn runaway_loops_hit_the_budget() {
    let f = function(
        |_| {},
        |b| {
            let r = while_loop(
                b,
                vec![],
                |b, _| b.bconst(true),
                |_, _| Body {
                    yields: vec![],
                    exit: vec![],
                },
            );
            vec![r[0]]
        },
    );
    verify(&f).unwrap();
    let err = run_with_budget(&f, &mut [], 1000).unwrap_err();
    assert!(err.contains("more than 1000 loop iterations"), "{err}");
}

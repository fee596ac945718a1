//! Small IR functions built with `Builder`, checked by the verifier and then run.

use super::*;
use crate::ir::builder::Builder;
use crate::ir::verify::verify;

fn scalar_param(f: &mut Function, name: &str, ty: Ty) {
    f.params.push(ParamInfo {
        name: name.into(),
        kind: ParamKind::Scalar(ty),
    });
}

/// Declares parameter buffer `name` as the next parameter.
fn buffer_param(f: &mut Function, name: &str, rank: u8, elem: Ty, mutable: bool) -> Buf {
    let n = f.params.len();
    let buf = f.new_buf(BufData {
        name: name.into(),
        rank,
        elem,
        kind: BufKind::Param(n),
    });
    f.params.push(ParamInfo {
        name: name.into(),
        kind: ParamKind::Buffer { buf, mutable },
    });
    buf
}

fn local(f: &mut Function, name: &str, rank: u8, elem: Ty, kind: BufKind) -> Buf {
    f.new_buf(BufData {
        name: name.into(),
        rank,
        elem,
        kind,
    })
}

fn param(b: &mut Builder, n: usize) -> Value {
    let ty = match b.func.params[n].kind {
        ParamKind::Scalar(ty) => ty,
        _ => panic!("parameter {n} is not a scalar"),
    };
    b.value(InstKind::Param(n), ty)
}

/// What a loop body returns: its yields and which of the loop's params are exit flags.
struct Body {
    yields: Vec<Value>,
    exit: Vec<usize>,
}

fn loop_head(b: &mut Builder, inits: &[Value]) -> (Inst, Vec<Value>) {
    let inst = b.reserve();
    let params = inits
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let ty = b.func.ty(v);
            b.func
                .new_value(ty, ValueDef::LoopParam(inst, k as u32), None)
        })
        .collect();
    (inst, params)
}

fn loop_results(b: &mut Builder, inst: Inst, params: &[Value]) -> Vec<Value> {
    let mut results: Vec<Value> = params
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let ty = b.func.ty(p);
            b.func.new_value(ty, ValueDef::Result(inst, k as u32), None)
        })
        .collect();
    results.push(
        b.func
            .new_value(Ty::Int, ValueDef::Result(inst, params.len() as u32), None),
    );
    results
}

/// `for index in range carry(params = inits) { body }`; returns the final params and the
/// trip count.
fn for_loop(
    b: &mut Builder,
    range: (Value, Value, Option<Value>, bool),
    inits: Vec<Value>,
    body: impl FnOnce(&mut Builder, Value, &[Value]) -> Body,
) -> Vec<Value> {
    let (inst, params) = loop_head(b, &inits);
    let index = b
        .func
        .new_value(Ty::Int, ValueDef::LoopIndex(inst), Some("i".into()));
    let blk = b.func.new_block();
    let out = b.in_block(blk, |b| body(b, index, &params));
    b.set_yields(blk, out.yields);
    let results = loop_results(b, inst, &params);
    let (start, end, step, rev) = range;
    let exit = out.exit.iter().map(|&k| params[k]).collect();
    let kind = InstKind::For {
        range: RangeSpec {
            start,
            end,
            step,
            rev,
        },
        index,
        params,
        inits,
        body: blk,
        exit,
    };
    b.finish(inst, kind, results.clone());
    results
}

fn while_loop(
    b: &mut Builder,
    inits: Vec<Value>,
    cond: impl FnOnce(&mut Builder, &[Value]) -> Value,
    body: impl FnOnce(&mut Builder, &[Value]) -> Body,
) -> Vec<Value> {
    let (inst, params) = loop_head(b, &inits);
    let cond_blk = b.func.new_block();
    let c = b.in_block(cond_blk, |b| cond(b, &params));
    b.set_yields(cond_blk, vec![c]);
    let body_blk = b.func.new_block();
    let out = b.in_block(body_blk, |b| body(b, &params));
    b.set_yields(body_blk, out.yields);
    let results = loop_results(b, inst, &params);
    let exit = out.exit.iter().map(|&k| params[k]).collect();
    let kind = InstKind::While {
        cond: cond_blk,
        params,
        inits,
        body: body_blk,
        exit,
    };
    b.finish(inst, kind, results.clone());
    results
}

/// `if cond { then } else { else }` with one result per yield.
fn if_else(
    b: &mut Builder,
    cond: Value,
    then: impl FnOnce(&mut Builder) -> Vec<Value>,
    els: impl FnOnce(&mut Builder) -> Vec<Value>,
) -> Vec<Value> {
    let inst = b.reserve();
    let (then_blk, else_blk) = (b.func.new_block(), b.func.new_block());
    let ys = b.in_block(then_blk, then);
    b.set_yields(then_blk, ys.clone());
    let es = b.in_block(else_blk, els);
    b.set_yields(else_blk, es);
    let results: Vec<Value> = ys
        .iter()
        .enumerate()
        .map(|(k, &y)| {
            let ty = b.func.ty(y);
            b.func.new_value(ty, ValueDef::Result(inst, k as u32), None)
        })
        .collect();
    b.finish(
        inst,
        InstKind::If {
            cond,
            then_blk,
            else_blk,
        },
        results.clone(),
    );
    results
}

/// Builds a function: `sig` declares the parameters, `body` fills the body and returns its yields.
fn function(
    sig: impl FnOnce(&mut Function),
    body: impl FnOnce(&mut Builder) -> Vec<Value>,
) -> Function {
    let mut f = Function::new("t");
    sig(&mut f);
    let blk = f.body;
    let mut b = Builder::new(&mut f, blk);
    let ys = body(&mut b);
    b.set_yields(blk, ys);
    f
}

/// Verifies `f`, then runs it.
fn checked_run(f: &Function, args: &mut [RtArg]) -> Result<Vec<RtVal>, String> {
    if let Err(e) = verify(f) {
        panic!(
            "the verifier rejects the test function: {e}\n{}",
            crate::ir::printer::print(f)
        );
    }
    run(f, args)
}

fn floats(vs: &[RtVal]) -> Vec<f64> {
    vs.iter().map(|v| v.as_float().expect("a float")).collect()
}

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
        cast(RtVal::F(-2.7), Ty::Int, Some("usize")),
        Ok(RtVal::I(0))
    );
    assert_eq!(
        cast(RtVal::F(300.0), Ty::Int, Some("u8")),
        Ok(RtVal::I(255))
    );
    assert_eq!(cast(RtVal::F(f64::NAN), Ty::Int, None), Ok(RtVal::I(0)));
    assert_eq!(cast(RtVal::I(300), Ty::Int, Some("u8")), Ok(RtVal::I(44)));
    assert_eq!(cast(RtVal::I(-1), Ty::Int, Some("i32")), Ok(RtVal::I(-1)));
    assert!(cast(RtVal::I(-1), Ty::Int, Some("usize")).is_err());
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
                        rust_ty: None,
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
                message: "a > 0".into(),
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
                path: "g".into(),
                receiver: None,
                generics: String::new(),
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

//! The property test's harness, tested: hand-written derivatives of a small program pass,
//! and each kind of wrong derivative, or wrong lane of a batched program, is caught by the
//! check meant for it.

use super::*;

/// `f(x, a, n) = sin(a·x[0]) + x[1]·a` as a generated program, for the harness tests.
fn straight_line() -> Program {
    let src = "fn f(x: &[f64], a: f64, n: usize) -> f64 { (a * x[0]).sin() + x[1] * a }";
    let param = |name: &str, shape| UserParam {
        name: name.into(),
        shape,
    };
    Program {
        src: src.into(),
        params: vec![
            param("x", Shape::Slice),
            param("a", Shape::Scalar),
            param("n", Shape::Len),
        ],
        kind: "straight_line",
        features: BTreeSet::new(),
    }
}

/// The harness itself: hand-written derivatives of
/// `f(x, a, n) = sin(a·x[0]) + x[1]·a` pass, and each kind of wrong derivative is caught
/// by the check meant for it.
#[test]
fn harness_catches_wrong_derivatives() {
    let program = straight_line();
    let check_against = |forward_bug: bool, reverse_bug: bool, full: bool, fine_bug: bool| {
        let (primal, forward, reverse) = hand_written::derivatives(forward_bug, reverse_bug);
        let (_, _, fine) = hand_written::derivatives(forward_bug, fine_bug);
        let fns = Fns {
            primal: &primal,
            forward: &forward,
            reverse: &reverse,
            reverse_fine: &fine,
            batched: None,
            batched_forward: None,
        };
        check_program(&program, &fns, &mut Rng::new(7), full).map_err(|f| f.class)
    };
    let check = |forward_bug: bool, reverse_bug: bool, full: bool| {
        check_against(forward_bug, reverse_bug, full, reverse_bug)
    };
    assert_eq!(
        check_against(false, true, false, false).err(),
        Some("coarsened vs coarsen = off")
    );
    assert_eq!(
        check(false, false, false).ok(),
        Some((Outcome::Checked, false))
    );
    assert_eq!(
        check(false, false, true).ok(),
        Some((Outcome::Checked, false))
    );
    assert_eq!(check(false, true, false).err(), Some("dot product"));
    assert_eq!(check(true, false, false).err(), Some("dot product"));
    // The same wrong derivative in both modes passes the dot product; finite differences catch it.
    assert_eq!(
        check(true, true, false).err(),
        Some("tangent vs finite differences")
    );
}

mod hand_written {
    use crate::ir::builder::Builder;
    use crate::ir::*;

    fn param_buf(f: &mut Function, name: &str, mutable: bool) -> Buf {
        let n = f.params.len();
        let buf = f.new_buf(BufData {
            name: name.into(),
            rank: 1,
            elem: Ty::Float,
            kind: BufKind::Param(n),
        });
        f.params.push(ParamInfo {
            name: name.into(),
            kind: ParamKind::Buffer { buf, mutable },
            span: proc_macro2::Span::call_site(),
        });
        buf
    }

    fn param_scalar(f: &mut Function, name: &str, ty: Ty) -> usize {
        f.params.push(ParamInfo {
            name: name.into(),
            kind: ParamKind::Scalar(ty),
            span: proc_macro2::Span::call_site(),
        });
        f.params.len() - 1
    }

    /// Primal, forward and reverse of `sin(a·x[0]) + x[1]·a`; a bug drops the `x[1]·da`
    /// term (forward) or the `ȳ·x[1]` term of `ā` (reverse).
    pub(super) fn derivatives(
        forward_bug: bool,
        reverse_bug: bool,
    ) -> (Function, Function, Function) {
        let mut primal = Function::new("f");
        let x = param_buf(&mut primal, "x", false);
        let a = param_scalar(&mut primal, "a", Ty::Float);
        param_scalar(&mut primal, "n", Ty::Int);
        let body = primal.body;
        let mut b = Builder::new(&mut primal, body);
        let (_, _, _, y) = value(&mut b, x, a);
        b.set_yields(body, vec![y]);

        let mut forward = Function::new("f_fwd");
        let x = param_buf(&mut forward, "x", false);
        let dx = param_buf(&mut forward, "dx", false);
        let a = param_scalar(&mut forward, "a", Ty::Float);
        let da = param_scalar(&mut forward, "da", Ty::Float);
        param_scalar(&mut forward, "n", Ty::Int);
        let body = forward.body;
        let mut b = Builder::new(&mut forward, body);
        let (x0, x1, av, y) = value(&mut b, x, a);
        let (i0, i1) = (b.iconst(0), b.iconst(1));
        let (dx0, dx1, dav) = (
            b.load(dx, vec![i0]),
            b.load(dx, vec![i1]),
            b.value(InstKind::Param(da), Ty::Float),
        );
        let u = b.mul(av, x0);
        let cu = b.math("cos", vec![u]);
        let du1 = b.mul(dav, x0);
        let du2 = b.mul(av, dx0);
        let du = b.add(du1, du2);
        let dsin = b.mul(cu, du);
        let dt1 = b.mul(dx1, av);
        let dt2 = b.mul(x1, dav);
        let dt = if forward_bug { dt1 } else { b.add(dt1, dt2) };
        let dy = b.add(dsin, dt);
        b.set_yields(body, vec![y, dy]);

        let mut reverse = Function::new("f_rev");
        let x = param_buf(&mut reverse, "x", false);
        let xbar = param_buf(&mut reverse, "dx", true);
        let a = param_scalar(&mut reverse, "a", Ty::Float);
        param_scalar(&mut reverse, "n", Ty::Int);
        let seed = param_scalar(&mut reverse, "seed", Ty::Float);
        let body = reverse.body;
        let mut b = Builder::new(&mut reverse, body);
        let (x0, x1, av, y) = value(&mut b, x, a);
        let seed = b.value(InstKind::Param(seed), Ty::Float);
        let (i0, i1) = (b.iconst(0), b.iconst(1));
        let u = b.mul(av, x0);
        let cu = b.math("cos", vec![u]);
        let ubar = b.mul(seed, cu);
        let x0bar = b.mul(ubar, av);
        b.stmt(InstKind::StoreAdd(xbar, vec![i0], x0bar));
        let x1bar = b.mul(seed, av);
        b.stmt(InstKind::StoreAdd(xbar, vec![i1], x1bar));
        let abar1 = b.mul(ubar, x0);
        let abar2 = b.mul(seed, x1);
        let abar = if reverse_bug {
            abar1
        } else {
            b.add(abar1, abar2)
        };
        b.set_yields(body, vec![y, abar]);
        (primal, forward, reverse)
    }

    /// Emits `sin(a·x[0]) + x[1]·a`; returns x[0], x[1], a and the value.
    fn value(b: &mut Builder, x: Buf, a: usize) -> (Value, Value, Value, Value) {
        let (i0, i1) = (b.iconst(0), b.iconst(1));
        let (x0, x1) = (b.load(x, vec![i0]), b.load(x, vec![i1]));
        let av = b.value(InstKind::Param(a), Ty::Float);
        let u = b.mul(av, x0);
        let s = b.math("sin", vec![u]);
        let t = b.mul(x1, av);
        (x0, x1, av, b.add(s, t))
    }
}

/// The lane checks themselves: a two-lane reverse program whose lane 1 reads lane 0's
/// seed, or adds lane 1's adjoint into lane 0's shadow, is caught; so is a two-lane
/// forward program whose lane 1 reads lane 0's scalar tangent or tangent slice.
#[test]
fn harness_catches_wrong_lanes() {
    use crate::ir::{InstKind, ParamKind};
    let program = straight_line();
    let item: syn::ItemFn = syn::parse_str(&program.src).unwrap();
    let compiled = crate::expand::compile_for_tests(&item).unwrap();
    let fine = crate::expand::compile_fine_reverse_for_tests(&item).unwrap();
    let seed = compiled.reverse.params.len() - 1;
    let batched = crate::derivative::batch::batch(
        &compiled.reverse,
        2,
        &[1],
        &[seed],
        1,
        proc_macro2::Span::call_site(),
        false,
    )
    .unwrap();
    let check = |b: &crate::derivative::batch::Batched| {
        let fns = Fns {
            primal: &compiled.primal,
            forward: &compiled.forward,
            reverse: &compiled.reverse,
            reverse_fine: &fine,
            batched: Some(b),
            batched_forward: None,
        };
        check_program(&program, &fns, &mut Rng::new(7), true).map_err(|f| f.class)
    };
    assert_eq!(check(&batched), Ok((Outcome::Checked, false)));
    let n = compiled.reverse.params.len();
    // Lane 1 reads lane 0's seed.
    let mut wrong_seed = batched.func.clone();
    for inst in &mut wrong_seed.insts {
        if let InstKind::Param(p) = &mut inst.kind {
            if *p == n + 1 {
                *p = seed;
            }
        }
    }
    let wrong_seed = crate::derivative::batch::Batched {
        func: wrong_seed,
        lanes: batched.lanes.clone(),
    };
    assert_eq!(check(&wrong_seed), Err("reverse (width = 2)"));
    // Lane 1 adds into lane 0's shadow.
    let mut wrong_shadow = batched.func.clone();
    let (ParamKind::Buffer { buf: dx, .. }, ParamKind::Buffer { buf: dx1, .. }) =
        (&wrong_shadow.params[1].kind, &wrong_shadow.params[n].kind)
    else {
        panic!("shadow parameters")
    };
    let (dx, dx1) = (*dx, *dx1);
    for inst in &mut wrong_shadow.insts {
        if let InstKind::StoreAdd(b, ..) = &mut inst.kind {
            if *b == dx1 {
                *b = dx;
            }
        }
    }
    let wrong_shadow = crate::derivative::batch::Batched {
        func: wrong_shadow,
        lanes: batched.lanes.clone(),
    };
    assert_eq!(check(&wrong_shadow), Err("reverse (width = 2)"));

    // Forward lanes: `f_fwd(x, dx, a, da, n)`, lanes `dx_l1`, `da_l1` appended.
    let forward = crate::derivative::batch::batch(
        &compiled.forward,
        2,
        &[1],
        &[3],
        1,
        proc_macro2::Span::call_site(),
        true,
    )
    .unwrap();
    let check_forward = |b: &crate::derivative::batch::Batched| {
        let fns = Fns {
            primal: &compiled.primal,
            forward: &compiled.forward,
            reverse: &compiled.reverse,
            reverse_fine: &fine,
            batched: None,
            batched_forward: Some(b),
        };
        check_program(&program, &fns, &mut Rng::new(7), true).map_err(|f| f.class)
    };
    assert_eq!(check_forward(&forward), Ok((Outcome::Checked, false)));
    let m = compiled.forward.params.len();
    // Lane 1 reads lane 0's scalar tangent; lane 1 reads lane 0's tangent slice.
    let mut wrong_tangent = forward.func.clone();
    for inst in &mut wrong_tangent.insts {
        if let InstKind::Param(p) = &mut inst.kind {
            if *p == m + 1 {
                *p = 3;
            }
        }
    }
    let (ParamKind::Buffer { buf: dx, .. }, ParamKind::Buffer { buf: dx1, .. }) =
        (&forward.func.params[1].kind, &forward.func.params[m].kind)
    else {
        panic!("tangent parameters")
    };
    let (dx, dx1) = (*dx, *dx1);
    let mut wrong_slice = forward.func.clone();
    for inst in &mut wrong_slice.insts {
        if let InstKind::Load(b, ..) = &mut inst.kind {
            if *b == dx1 {
                *b = dx;
            }
        }
    }
    for wrong in [wrong_tangent, wrong_slice] {
        let wrong = crate::derivative::batch::Batched {
            func: wrong,
            lanes: forward.lanes.clone(),
        };
        assert_eq!(check_forward(&wrong), Err("forward (width = 2)"));
    }
}

/// The failure-path check: a program failing where `n <= 3` is checked there (its
/// derivatives fail at the same site), and a reverse program that does not fail where the
/// primal does is caught.
#[test]
fn harness_checks_failure_paths() {
    let compile = |src: &str| {
        let item: syn::ItemFn = syn::parse_str(src).expect("parses");
        let c = crate::expand::compile_for_tests(&item).expect("compiles");
        let fine = crate::expand::compile_fine_reverse_for_tests(&item).expect("compiles");
        (c, fine)
    };
    let (c, fine) = compile(
        "fn f(x: &[f64], a: f64, n: usize) -> Option<f64> { Some((a * *x.get(3)?).sin() + x[1] * a) }",
    );
    let program = straight_line();
    let fns = Fns {
        primal: &c.primal,
        forward: &c.forward,
        reverse: &c.reverse,
        reverse_fine: &fine,
        batched: None,
        batched_forward: None,
    };
    let mut rng = Rng::new(11);
    let at = |n: usize, rng: &mut Rng| Point::draw(&program.params, rng, Some(n));
    let p2 = at(2, &mut rng);
    assert_eq!(
        check_failure(&program.params, &fns, &p2, &mut rng).map_err(|f| f.class),
        Ok(true)
    );
    let p5 = at(5, &mut rng);
    assert_eq!(
        check_failure(&program.params, &fns, &p5, &mut rng).map_err(|f| f.class),
        Ok(false)
    );
    // A reverse program that never fails is caught on the failure path.
    let (never, _) = compile(
        "fn f(x: &[f64], a: f64, n: usize) -> Option<f64> { Some((a * x[0]).sin() + x[1] * a) }",
    );
    let wrong = Fns {
        reverse: &never.reverse,
        ..fns
    };
    assert_eq!(
        check_failure(&program.params, &wrong, &p2, &mut rng).map_err(|f| f.class),
        Err("failure path: reverse")
    );
}

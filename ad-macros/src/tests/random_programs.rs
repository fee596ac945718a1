//! Property test: 10 000 random programs (`program_gen`) go through the whole pipeline
//! (`expand::compile_for_tests`), and the IR interpreter runs the primal, tangent and adjoint
//! programs at random points. They must agree with each other (the dot-product identity
//! `ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ` to 1e-10 relative) and with central finite differences.
//!
//! The harness's own tests (it catches wrong derivatives and wrong lanes) are in
//! `random_programs/harness.rs`.
//!
//! A failure prints the program, the numbers and the IR. To rerun one program alone:
//! `PHIDIFF_PROGRAM=<number> cargo test -p ad-macros random_programs -- --nocapture`.

use super::program_gen::{nth_program, Program, Rng, Shape, UserParam, KINDS};
use crate::ir::interp::{failed_site, run, RtArg, RtVal};
use crate::ir::{printer, verify, Function, ParamKind, Ty};
use std::collections::{BTreeMap, BTreeSet};

mod harness;
mod parallel;

const PROGRAMS: usize = 10_000;
/// The programs are split over this many tests, which the test harness runs in parallel.
const SHARDS: usize = 4;
/// Every this many programs, each gradient component is checked against finite
/// differences; the others check the gradient along one random direction.
const FULL_GRADIENT_EVERY: usize = 8;
/// Points drawn per program before giving up on finding one away from kinks.
const ATTEMPTS: usize = 6;
/// Relative tolerance of the dot-product identity and of value agreement.
const DOT_TOL: f64 = 1e-10;
/// Central-difference step; directions have components in [-1, 1].
const FD_STEP: f64 = 1e-5;
/// At most this many failures are printed in full (source, numbers, IR).
const PRINTED_FAILURES: usize = 3;

#[test]
fn random_programs_shard_0() {
    run_shard(0)
}

#[test]
fn random_programs_shard_1() {
    run_shard(1)
}

#[test]
fn random_programs_shard_2() {
    run_shard(2)
}

#[test]
fn random_programs_shard_3() {
    run_shard(3)
}

fn run_shard(shard: usize) {
    let only: Option<usize> = std::env::var("PHIDIFF_PROGRAM")
        .ok()
        .and_then(|s| s.parse().ok());
    let mut report = Report::default();
    for number in (shard..PROGRAMS).step_by(SHARDS) {
        if only.is_some_and(|o| o != number) {
            continue;
        }
        let (program, mut rng) = nth_program(number);
        report.count(&program);
        match compile_and_check(&program, &mut rng, number % FULL_GRADIENT_EVERY == 0) {
            Ok(((outcome, failed), batched, batched_forward)) => {
                *report.outcomes.entry(outcome).or_default() += 1;
                report.failure_paths += usize::from(failed);
                report.batched += usize::from(batched);
                report.batched_forward += usize::from(batched_forward);
            }
            Err(failure) => report.fail(number, &program, failure),
        }
    }
    report.finish(shard, only.is_some());
}

/// How a program's check ended when it did not fail.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Outcome {
    /// Dot product and finite differences checked.
    Checked,
    /// Dot product checked; every point drawn was near a kink, so no finite differences.
    Kinky,
    /// Values too large at every point drawn (the program's magnitudes are not tame).
    Large,
}

struct Failure {
    class: &'static str,
    detail: String,
    /// The printed IR of the compiled functions, when there are any.
    ir: String,
}

impl Failure {
    fn new(class: &'static str, detail: impl Into<String>) -> Self {
        Failure {
            class,
            detail: detail.into(),
            ir: String::new(),
        }
    }
}

fn compile_and_check(
    program: &Program,
    rng: &mut Rng,
    full_gradient: bool,
) -> Result<((Outcome, bool), bool, bool), Failure> {
    let item: syn::ItemFn = syn::parse_str(&program.src)
        .map_err(|e| Failure::new("generator: source does not parse", e.to_string()))?;
    let compiled =
        crate::expand::compile_for_tests(&item).map_err(|e| Failure::new("compile error", e))?;
    let fine = crate::expand::compile_fine_reverse_for_tests(&item)
        .map_err(|e| Failure::new("compile error (coarsen = off)", e))?;
    // Two lanes; programs with calls of user functions are not batched (a compile error).
    let params = &program.params;
    let shadows: Vec<usize> = shadow_params(params);
    let seed = compiled.reverse.params.len() - 1;
    let scalars = params.iter().filter(|p| p.shape == Shape::Scalar).count();
    let batched = crate::derivative::batch::batch(
        &compiled.reverse,
        2,
        &shadows,
        &[seed],
        scalars,
        proc_macro2::Span::call_site(),
        false,
    )
    .ok();
    let (tangents, tangent_seeds) = forward_tangent_params(params);
    let batched_forward = crate::derivative::batch::batch(
        &compiled.forward,
        2,
        &tangents,
        &tangent_seeds,
        1,
        proc_macro2::Span::call_site(),
        true,
    )
    .ok();
    let fns = Fns {
        primal: &compiled.primal,
        forward: &compiled.forward,
        reverse: &compiled.reverse,
        reverse_fine: &fine,
        batched: batched.as_ref(),
        batched_forward: batched_forward.as_ref(),
    };
    check_program(program, &fns, rng, full_gradient)
        .map(|outcome| (outcome, batched.is_some(), batched_forward.is_some()))
        .map_err(|mut f| {
            f.ir = [fns.primal, fns.forward, fns.reverse, fns.reverse_fine]
                .map(printer::print)
                .join("\n");
            for b in batched.iter().chain(&batched_forward) {
                f.ir.push_str(&format!("\n{}", printer::print(&b.func)));
            }
            f
        })
}

/// The compiled functions of one program: primal, forward, reverse (coarsened) and the
/// `coarsen = off` reverse it must agree with.
struct Fns<'a> {
    primal: &'a Function,
    forward: &'a Function,
    reverse: &'a Function,
    reverse_fine: &'a Function,
    /// The two-lane `reverse(width = 2)` program, where the program has one.
    batched: Option<&'a crate::derivative::batch::Batched>,
    /// The two-lane `forward(width = 2)` program, where the program has one.
    batched_forward: Option<&'a crate::derivative::batch::Batched>,
}

/// The indices of the forward function's tangent parameters (one after each slice and
/// each float scalar): the buffers, then the scalars.
fn forward_tangent_params(params: &[UserParam]) -> (Vec<usize>, Vec<usize>) {
    let (mut at, mut buffers, mut scalars) = (0, Vec::new(), Vec::new());
    for p in params {
        match p.shape {
            Shape::Slice => {
                buffers.push(at + 1);
                at += 2;
            }
            Shape::Scalar => {
                scalars.push(at + 1);
                at += 2;
            }
            Shape::Len => at += 1,
        }
    }
    (buffers, scalars)
}

/// The indices of the reverse function's shadow parameters (one after each slice).
fn shadow_params(params: &[UserParam]) -> Vec<usize> {
    let (mut at, mut out) = (0, Vec::new());
    for p in params {
        match p.shape {
            Shape::Slice => {
                out.push(at + 1);
                at += 2;
            }
            Shape::Scalar | Shape::Len => at += 1,
        }
    }
    out
}

/// Checks one compiled program: verifier, calling convention, then dot product and finite
/// differences at up to `ATTEMPTS` random points (a new point when the last was at a kink,
/// or where the program fails: its derivatives must fail there too, shadows untouched).
/// With the outcome, whether a failure path was taken and checked.
fn check_program(
    program: &Program,
    fns: &Fns,
    rng: &mut Rng,
    full_gradient: bool,
) -> Result<(Outcome, bool), Failure> {
    for (what, f) in [
        ("primal", fns.primal),
        ("forward", fns.forward),
        ("reverse", fns.reverse),
        ("reverse (coarsen = off)", fns.reverse_fine),
    ] {
        verify::verify(f).map_err(|e| Failure::new("verifier", format!("{what}: {e}")))?;
    }
    for (what, b) in [
        ("reverse (width = 2)", fns.batched),
        ("forward (width = 2)", fns.batched_forward),
    ] {
        if let Some(b) = b {
            verify::verify(&b.func)
                .map_err(|e| Failure::new("verifier", format!("{what}: {e}")))?;
        }
    }
    check_convention(&program.params, fns)?;
    let mut outcome = Outcome::Large;
    let mut failed = false;
    for _ in 0..ATTEMPTS {
        // After a failure, the longest inputs, where every `get(3)` is there.
        let point = Point::draw(&program.params, rng, failed.then_some(5));
        if check_failure(&program.params, fns, &point, rng)? {
            failed = true;
            continue;
        }
        match check_at(&program.params, fns, &point, rng, full_gradient)? {
            Outcome::Checked => return Ok((Outcome::Checked, failed)),
            Outcome::Kinky => outcome = Outcome::Kinky,
            Outcome::Large => {}
        }
    }
    Ok((outcome, failed))
}

/// Whether the program fails at `point`; where it does, its forward and reverse programs
/// (coarsened and not) must fail at the same site, and the reverse ones must leave the
/// shadows as they found them (the failure returns before the reverse sweep).
fn check_failure(
    params: &[UserParam],
    fns: &Fns,
    point: &Point,
    rng: &mut Rng,
) -> Result<bool, Failure> {
    let mut args = arguments(params, point, Mode::Primal, &[]);
    let site = match run(fns.primal, &mut args) {
        Ok(_) => return Ok(false),
        Err(e) => match failed_site(&e) {
            Some(site) => site.to_string(),
            None => return Err(Failure::new("primal run", e)),
        },
    };
    let len = point.active.len();
    let direction: Vec<f64> = (0..len).map(|_| rng.symmetric(1.0)).collect();
    let mut args = arguments(params, point, Mode::Forward, &direction);
    let same = |what: &'static str, r: Result<Vec<RtVal>, String>| match r {
        Err(e) if failed_site(&e) == Some(&site) => Ok(()),
        other => Err(Failure::new(
            what,
            format!(
                "the primal {site} at n = {}, point {:?}; this returned {other:?}",
                point.n, point.active
            ),
        )),
    };
    same("failure path: forward", run(fns.forward, &mut args))?;
    let shadow_in: Vec<f64> = (0..len).map(|_| rng.symmetric(1.0)).collect();
    for (what, f) in [
        ("failure path: reverse", fns.reverse),
        ("failure path: reverse (coarsen = off)", fns.reverse_fine),
    ] {
        let mut args = arguments(params, point, Mode::Reverse { seed: 1.0 }, &shadow_in);
        let before: Vec<RtArg> = args.clone();
        same(what, run(f, &mut args))?;
        for k in shadow_params(params) {
            if args[k] != before[k] {
                return Err(Failure::new(
                    what,
                    format!(
                        "the shadow (argument {k}) changed on the failure path at n = {}: {:?} became {:?}",
                        point.n, before[k], args[k]
                    ),
                ));
            }
        }
    }
    Ok(true)
}

/// An input: `n` and every active value (slices' elements and scalars) flattened in
/// parameter order.
#[derive(Clone, Debug)]
struct Point {
    n: usize,
    active: Vec<f64>,
}

impl Point {
    /// A random point, of `n` elements per slice (random in 2..=5 unless given).
    fn draw(params: &[UserParam], rng: &mut Rng, n: Option<usize>) -> Point {
        let n = n.unwrap_or_else(|| 2 + rng.below(4));
        let len = active_len(params, n);
        Point {
            n,
            active: (0..len).map(|_| rng.symmetric(1.5)).collect(),
        }
    }
    fn shifted(&self, direction: &[f64], t: f64) -> Point {
        let active = self
            .active
            .iter()
            .zip(direction)
            .map(|(v, d)| v + t * d)
            .collect();
        Point { n: self.n, active }
    }
}

fn active_len(params: &[UserParam], n: usize) -> usize {
    params
        .iter()
        .map(|p| match p.shape {
            Shape::Slice => n,
            Shape::Scalar => 1,
            Shape::Len => 0,
        })
        .sum()
}

/// The arguments of the primal (`extra` = None), the forward function (tangents from
/// `extra`) or the reverse function (shadows from `extra`, then `seed`), by the calling
/// convention of DESIGN.md.
fn arguments(params: &[UserParam], point: &Point, mode: Mode, extra: &[f64]) -> Vec<RtArg> {
    let mut args = Vec::new();
    let mut at = 0;
    for p in params {
        match p.shape {
            Shape::Slice => {
                let range = at..at + point.n;
                args.push(RtArg::Buf(point.active[range.clone()].to_vec()));
                if mode != Mode::Primal {
                    args.push(RtArg::Buf(extra[range].to_vec()));
                }
                at += point.n;
            }
            Shape::Scalar => {
                args.push(RtArg::Scalar(RtVal::F(point.active[at])));
                if mode == Mode::Forward {
                    args.push(RtArg::Scalar(RtVal::F(extra[at])));
                }
                at += 1;
            }
            Shape::Len => args.push(RtArg::Scalar(RtVal::I(point.n as i64))),
        }
    }
    if let Mode::Reverse { seed } = mode {
        args.push(RtArg::Scalar(RtVal::F(seed)));
    }
    args
}

#[derive(Copy, Clone, PartialEq, Debug)]
enum Mode {
    Primal,
    Forward,
    Reverse { seed: f64 },
}

/// Runs `f` and returns its float results.
fn run_floats(f: &Function, args: &mut [RtArg], what: &'static str) -> Result<Vec<f64>, Failure> {
    let results = run(f, args).map_err(|e| Failure::new(what, e))?;
    results
        .iter()
        .map(|v| {
            v.as_float()
                .ok_or_else(|| Failure::new(what, format!("returned {results:?}, expected floats")))
        })
        .collect()
}

fn primal_value(params: &[UserParam], fns: &Fns, point: &Point) -> Result<f64, Failure> {
    let mut args = arguments(params, point, Mode::Primal, &[]);
    match run_floats(fns.primal, &mut args, "primal run")?.as_slice() {
        [y] => Ok(*y),
        other => Err(Failure::new(
            "primal run",
            format!("returned {other:?}, expected one value"),
        )),
    }
}

/// The parameter list each function must have, in the words of DESIGN.md's contract.
fn check_convention(params: &[UserParam], fns: &Fns) -> Result<(), Failure> {
    let (slice, slice_mut, float, int) = ("&[f64]", "&mut [f64]", "f64", "integer");
    let mut want: [Vec<&str>; 3] = Default::default();
    for p in params {
        match p.shape {
            Shape::Slice => {
                want[0].push(slice);
                want[1].extend([slice, slice]);
                want[2].extend([slice, slice_mut]);
            }
            Shape::Scalar => {
                want[0].push(float);
                want[1].extend([float, float]);
                want[2].push(float);
            }
            Shape::Len => want.iter_mut().for_each(|w| w.push(int)),
        }
    }
    want[2].push(float);
    for ((what, f), want) in [
        ("primal", fns.primal),
        ("forward", fns.forward),
        ("reverse", fns.reverse),
    ]
    .into_iter()
    .zip(want)
    {
        let got: Vec<&str> = f
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKind::Scalar(Ty::Float) => float,
                ParamKind::Scalar(Ty::Int) => int,
                ParamKind::Buffer { buf, mutable }
                    if f.buf(*buf).rank == 1 && f.buf(*buf).elem == Ty::Float =>
                {
                    if *mutable {
                        slice_mut
                    } else {
                        slice
                    }
                }
                _ => "something else",
            })
            .collect();
        if got != want {
            return Err(Failure::new(
                "calling convention",
                format!(
                    "{what} takes ({}), expected ({})",
                    got.join(", "),
                    want.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `|a - b| <= tol * scale`, for values that should agree.
fn close(a: f64, b: f64, tol: f64, scale: f64) -> bool {
    (a - b).abs() <= tol * scale || a == b
}

/// Checks at one point: value agreement, the dot product, the tangent against finite
/// differences and the gradient against finite differences.
fn check_at(
    params: &[UserParam],
    fns: &Fns,
    point: &Point,
    rng: &mut Rng,
    full_gradient: bool,
) -> Result<Outcome, Failure> {
    let y = primal_value(params, fns, point)?;
    if !y.is_finite() || y.abs() > 1e6 {
        return Ok(Outcome::Large);
    }
    let len = point.active.len();
    let direction: Vec<f64> = (0..len).map(|_| rng.symmetric(1.0)).collect();
    let seed = (0.5 + rng.unit()) * if rng.chance(0.5) { 1.0 } else { -1.0 };
    let shadow_in: Vec<f64> = (0..len).map(|_| rng.symmetric(1.0)).collect();
    let numbers = || {
        format!(
            "n = {}\npoint = {:?}\ndirection ẋ = {direction:?}\nseed ȳ = {seed}\nshadows on entry = {shadow_in:?}",
            point.n, point.active
        )
    };

    let mut args = arguments(params, point, Mode::Forward, &direction);
    let forward_results = run_floats(fns.forward, &mut args, "forward run")?;
    let (y_fwd, tangent) = match forward_results.as_slice() {
        [v, t] => (*v, *t),
        other => {
            return Err(Failure::new(
                "forward run",
                format!("returned {other:?}, expected (value, tangent)"),
            ))
        }
    };
    if let Some(b) = fns.batched_forward {
        check_forward_lanes(
            params,
            point,
            fns.forward,
            b,
            &direction,
            &args,
            &forward_results,
        )
        .map_err(|e| Failure::new("forward (width = 2)", format!("{e}\n{}", numbers())))?;
    }

    let mut args = arguments(params, point, Mode::Reverse { seed }, &shadow_in);
    let results = run_floats(fns.reverse, &mut args, "reverse run")?;
    let (adjoint, shadow_out) = collect_adjoint(params, point, &args, &results, &shadow_in)
        .map_err(|e| Failure::new("reverse run", format!("{e}\n{}", numbers())))?;
    let y_rev = results[0];
    if let Some(b) = fns.batched {
        check_lanes(
            params,
            point,
            fns.reverse,
            b,
            seed,
            &shadow_in,
            &args,
            &results,
        )
        .map_err(|e| Failure::new("reverse (width = 2)", format!("{e}\n{}", numbers())))?;
    }

    // Coarsened and fine-grained adjoints agree up to the rounding of reassociated sums.
    let mut args = arguments(params, point, Mode::Reverse { seed }, &shadow_in);
    let results_fine = run_floats(fns.reverse_fine, &mut args, "reverse run (coarsen = off)")?;
    let (adjoint_fine, _) = collect_adjoint(params, point, &args, &results_fine, &shadow_in)
        .map_err(|e| Failure::new("reverse run (coarsen = off)", format!("{e}\n{}", numbers())))?;
    let magnitude: f64 = adjoint.iter().map(|g| g.abs()).sum::<f64>() + 1e-8;
    for (k, (c, f)) in adjoint.iter().zip(&adjoint_fine).enumerate() {
        if !close(*c, *f, DOT_TOL, magnitude) {
            return Err(Failure::new(
                "coarsened vs coarsen = off",
                format!(
                    "adjoint[{k}] is {c} coarsened but {f} with coarsen = off\nadjoint = {adjoint:?}\nadjoint (off) = {adjoint_fine:?}\n{}",
                    numbers()
                ),
            ));
        }
    }

    // The derivative programs may compute the value in another order: equal to 1e-10
    // relative, with a floor for values near zero.
    for (what, v) in [("forward value", y_fwd), ("reverse value", y_rev)] {
        if !close(v, y, DOT_TOL, y.abs() + 1e-8) {
            return Err(Failure::new(
                "value",
                format!("{what} {v} differs from the primal's {y}\n{}", numbers()),
            ));
        }
    }
    // ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ; the scale covers cancellation between terms and the rounding of
    // the adjoint added into non-zero shadows.
    let lhs = seed * tangent;
    let rhs: f64 = adjoint.iter().zip(&direction).map(|(g, d)| g * d).sum();
    let rounding: f64 = shadow_out
        .iter()
        .zip(&direction)
        .map(|(s, d)| 4.0 * f64::EPSILON * (s * d).abs())
        .sum();
    let scale = lhs.abs()
        + adjoint
            .iter()
            .zip(&direction)
            .map(|(g, d)| (g * d).abs())
            .sum::<f64>();
    if (lhs - rhs).abs() > DOT_TOL * scale + rounding {
        return Err(Failure::new(
            "dot product",
            format!(
                "ȳ·(J ẋ) = {lhs:e} but (Jᵀ ȳ)·ẋ = {rhs:e} (difference {:e})\ntangent = {tangent}\nadjoint (Jᵀ ȳ) = {adjoint:?}\n{}",
                lhs - rhs,
                numbers()
            ),
        ));
    }

    let fd = match finite_difference(params, fns, point, &direction)? {
        Fd::Smooth(fd) => fd,
        Fd::Kink => return Ok(Outcome::Kinky),
    };
    if !close(fd.value, tangent, 1.0, fd.tol + 1e-6 * tangent.abs()) {
        return Err(Failure::new(
            "tangent vs finite differences",
            format!(
                "tangent {tangent} but finite differences give {} (± {:e})\n{}",
                fd.value,
                fd.tol,
                numbers()
            ),
        ));
    }

    let gradient: Vec<f64> = adjoint.iter().map(|g| g / seed).collect();
    let probes: Vec<Vec<f64>> = if full_gradient {
        (0..len)
            .map(|k| (0..len).map(|j| if j == k { 1.0 } else { 0.0 }).collect())
            .collect()
    } else {
        vec![(0..len).map(|_| rng.symmetric(1.0)).collect()]
    };
    for probe in probes {
        let fd = match finite_difference(params, fns, point, &probe)? {
            Fd::Smooth(fd) => fd,
            Fd::Kink => return Ok(Outcome::Kinky),
        };
        let g: f64 = gradient.iter().zip(&probe).map(|(g, p)| g * p).sum();
        if !close(fd.value, g, 1.0, fd.tol + 1e-6 * g.abs()) {
            return Err(Failure::new(
                "gradient vs finite differences",
                format!(
                    "gradient·probe = {g} but finite differences give {} (± {:e})\nprobe = {probe:?}\ngradient = {gradient:?}\n{}",
                    fd.value,
                    fd.tol,
                    numbers()
                ),
            ));
        }
    }
    Ok(Outcome::Checked)
}

/// The two-lane reverse program against two scalar sweeps: lane 0 with the scalar run's
/// seed and shadows (`args` and `results` after it ran), lane 1 with others derived from
/// them (see `same_as_scalar_sweeps`).
fn check_lanes(
    params: &[UserParam],
    point: &Point,
    reverse: &Function,
    b: &crate::derivative::batch::Batched,
    seed: f64,
    shadow_in: &[f64],
    args: &[RtArg],
    results: &[f64],
) -> Result<(), String> {
    let seed1 = 0.3 - 0.7 * seed;
    let shadow1: Vec<f64> = shadow_in.iter().rev().map(|s| 0.9 * s - 0.1).collect();
    let lane1 = arguments(params, point, Mode::Reverse { seed: seed1 }, &shadow1);
    let lane0 = arguments(params, point, Mode::Reverse { seed }, shadow_in);
    same_as_scalar_sweeps(reverse, b, lane0, lane1, args, results)
}

/// The two-lane forward program against two scalar sweeps: lane 0 along `direction`
/// (`args` and `results` after the scalar run), lane 1 along another direction (see
/// `same_as_scalar_sweeps`).
fn check_forward_lanes(
    params: &[UserParam],
    point: &Point,
    forward: &Function,
    b: &crate::derivative::batch::Batched,
    direction: &[f64],
    args: &[RtArg],
    results: &[f64],
) -> Result<(), String> {
    let direction1: Vec<f64> = direction.iter().rev().map(|d| 0.8 * d + 0.2).collect();
    let lane1 = arguments(params, point, Mode::Forward, &direction1);
    let lane0 = arguments(params, point, Mode::Forward, direction);
    same_as_scalar_sweeps(forward, b, lane0, lane1, args, results)
}

/// Runs batched program `b` with lane 0's arguments `lane0` and lane 1's from `lane1`,
/// and `scalar` with `lane1`. Both lanes must equal their scalar sweep exactly (the
/// lanes repeat its arithmetic): the results (`results` the scalar run's along lane 0,
/// after it left `args`), the parameters, and lane 1's parameters.
fn same_as_scalar_sweeps(
    scalar: &Function,
    b: &crate::derivative::batch::Batched,
    lane0: Vec<RtArg>,
    mut lane1: Vec<RtArg>,
    args: &[RtArg],
    results: &[f64],
) -> Result<(), String> {
    let mut batched_args = lane0;
    let n_params = batched_args.len();
    for (n, _) in &b.lanes {
        batched_args.push(lane1[*n].clone());
    }
    let got = run_floats(&b.func, &mut batched_args, "batched run").map_err(|f| f.detail)?;
    let results1 = run_floats(scalar, &mut lane1, "scalar run (lane 1)").map_err(|f| f.detail)?;
    let mut want = results.to_vec();
    want.extend_from_slice(&results1[1..]);
    if got != want {
        return Err(format!(
            "returned {got:?}, but the scalar sweeps return {results:?} and {results1:?}"
        ));
    }
    for (k, a) in args.iter().enumerate() {
        if format!("{a:?}") != format!("{:?}", batched_args[k]) {
            return Err(format!(
                "parameter {k} is {:?} after the batched run but {a:?} after the scalar one",
                batched_args[k]
            ));
        }
    }
    for (j, (n, _)) in b.lanes.iter().enumerate() {
        let (got, want) = (&batched_args[n_params + j], &lane1[*n]);
        if format!("{got:?}") != format!("{want:?}") {
            return Err(format!(
                "lane 1 of parameter {n} is {got:?} but the scalar sweep gives {want:?}"
            ));
        }
    }
    Ok(())
}

/// The adjoint `Jᵀ ȳ` in the layout of `Point::active` (what the reverse function added
/// into each shadow, then the returned scalar adjoints), and the shadows on exit.
fn collect_adjoint(
    params: &[UserParam],
    point: &Point,
    args: &[RtArg],
    results: &[f64],
    shadow_in: &[f64],
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let scalars = params.iter().filter(|p| p.shape == Shape::Scalar).count();
    if results.len() != 1 + scalars {
        return Err(format!(
            "returned {results:?}, expected the value and {scalars} scalar adjoints"
        ));
    }
    let (mut adjoint, mut shadow_out) = (Vec::new(), Vec::new());
    let (mut arg, mut at, mut scalar) = (0, 0, 1);
    for p in params {
        match p.shape {
            Shape::Slice => {
                let RtArg::Buf(shadow) = &args[arg + 1] else {
                    return Err(format!("shadow of {} is {:?}", p.name, args[arg + 1]));
                };
                if shadow.len() != point.n {
                    return Err(format!(
                        "the shadow of {} changed length to {}",
                        p.name,
                        shadow.len()
                    ));
                }
                adjoint.extend(
                    shadow
                        .iter()
                        .zip(&shadow_in[at..at + point.n])
                        .map(|(s, s0)| s - s0),
                );
                shadow_out.extend(shadow);
                arg += 2;
                at += point.n;
            }
            Shape::Scalar => {
                adjoint.push(results[scalar]);
                shadow_out.push(0.0);
                scalar += 1;
                arg += 1;
                at += 1;
            }
            Shape::Len => arg += 1,
        }
    }
    Ok((adjoint, shadow_out))
}

struct FdValue {
    value: f64,
    tol: f64,
}

enum Fd {
    Smooth(FdValue),
    /// The steps `h` and `h/2` disagree: a branch or trip count changes nearby.
    Kink,
}

/// The directional derivative along `direction` by central differences with steps `h` and
/// `h/2`, Richardson-extrapolated, with a tolerance for truncation and rounding.
fn finite_difference(
    params: &[UserParam],
    fns: &Fns,
    point: &Point,
    direction: &[f64],
) -> Result<Fd, Failure> {
    let h = FD_STEP;
    let f = |t: f64| primal_value(params, fns, &point.shifted(direction, t));
    let (fp, fm, fp2, fm2) = (f(h)?, f(-h)?, f(h / 2.0)?, f(-h / 2.0)?);
    let magnitude = [fp, fm, fp2, fm2]
        .iter()
        .fold(0.0_f64, |m, v| m.max(v.abs()));
    if !magnitude.is_finite() {
        return Ok(Fd::Kink);
    }
    let coarse = (fp - fm) / (2.0 * h);
    let fine = (fp2 - fm2) / h;
    let value = (4.0 * fine - coarse) / 3.0;
    // Truncation: h² f'''/6 ≈ (coarse - fine) is caught by the kink test; rounding: a few
    // hundred operations' worth of ulps of the function values, divided by h.
    let tol = 1e-6 * (1.0 + value.abs()) + 1e-13 * (1.0 + magnitude) / h;
    if (coarse - fine).abs() > tol {
        return Ok(Fd::Kink);
    }
    Ok(Fd::Smooth(FdValue { value, tol }))
}

#[derive(Default)]
struct Report {
    programs: usize,
    by_kind: BTreeMap<&'static str, usize>,
    by_feature: BTreeMap<&'static str, usize>,
    outcomes: BTreeMap<Outcome, usize>,
    /// Programs whose two-lane batched reverse program was checked too.
    batched: usize,
    /// Programs whose two-lane batched forward program was checked too.
    batched_forward: usize,
    failures_by_class: BTreeMap<&'static str, usize>,
    failures: Vec<String>,
    /// Programs that failed at a point drawn, checked there (`check_failure`).
    failure_paths: usize,
}

impl Report {
    fn count(&mut self, program: &Program) {
        self.programs += 1;
        *self.by_kind.entry(program.kind).or_default() += 1;
        for f in &program.features {
            *self.by_feature.entry(f).or_default() += 1;
        }
    }

    fn fail(&mut self, number: usize, program: &Program, failure: Failure) {
        *self.failures_by_class.entry(failure.class).or_default() += 1;
        let n = self.failures.len();
        let text = if n < PRINTED_FAILURES {
            format!(
                "program {number} ({}): {}\n{}\n--- source ---\n{}--- IR ---\n{}",
                program.kind, failure.class, failure.detail, program.src, failure.ir
            )
        } else {
            let first = failure.detail.lines().next().unwrap_or_default();
            format!(
                "program {number} ({}): {}: {first}",
                program.kind, failure.class
            )
        };
        self.failures.push(text);
    }

    fn finish(&self, shard: usize, single: bool) {
        let summary = format!(
            "random programs, shard {shard}: {} programs\n  by kind: {:?}\n  by feature: {:?}\n  outcomes: {:?}\n  failure paths checked: {}\n  failures: {:?}",
            self.programs, self.by_kind, self.by_feature, self.outcomes, self.failure_paths, self.failures_by_class
        );
        eprintln!("{summary}");
        if !self.failures.is_empty() {
            let shown: Vec<&str> = self.failures.iter().take(40).map(String::as_str).collect();
            panic!(
                "{} of {} programs failed\n\n{}\n\n{summary}",
                self.failures.len(),
                self.programs,
                shown.join("\n\n")
            );
        }
        if single {
            return;
        }
        let expected = (shard..PROGRAMS).step_by(SHARDS).count();
        assert_eq!(self.programs, expected, "every program of the shard ran");
        for kind in KINDS {
            let want = (shard..PROGRAMS)
                .step_by(SHARDS)
                .filter(|p| KINDS[p % KINDS.len()] == kind)
                .count();
            assert_eq!(
                self.by_kind.get(kind),
                Some(&want),
                "programs of kind {kind}"
            );
        }
        let features: BTreeSet<&str> = self.by_feature.keys().copied().collect();
        for feature in [
            "for",
            "while",
            "short_circuit",
            "else_if",
            "int_cond",
            "float_cond",
            "shadowing",
            "carried",
            "row_views",
            "row_range",
            "flatten",
        ] {
            assert!(features.contains(feature), "no program used {feature}");
        }
        // The shard of the fallible programs (every fourth) takes their failure paths.
        if features.contains("fallible") {
            assert!(
                self.failure_paths >= 10,
                "only {} programs took a failure path",
                self.failure_paths
            );
        }
        assert!(
            self.batched * 100 >= self.programs * 90,
            "only {} of {} programs were batched",
            self.batched,
            self.programs
        );
        assert!(
            self.batched_forward * 100 >= self.programs * 90,
            "only {} of {} programs were batched in forward mode",
            self.batched_forward,
            self.programs
        );
        let checked = self.outcomes.get(&Outcome::Checked).copied().unwrap_or(0);
        assert!(
            checked * 100 >= self.programs * 95,
            "finite differences checked only {checked} of {} programs",
            self.programs
        );
    }
}

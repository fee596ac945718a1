//! Harness for the numeric tests: every differentiated function is viewed as a map
//! ℝⁿ → ℝᵐ on flat vectors, so one routine checks `_fwd` against central finite
//! differences and `_fwd` against `_rev` with the dot-product identity, and another
//! checks `_grad` against `phidiff::check::gradient`.
//!
//! Flattening convention used by every test: the inputs are the active parameters in
//! order (a `&mut` parameter contributes its *initial* value), the outputs are the
//! return value (if not `()`) followed by the *final* value of every `&mut` parameter.
//!
//! Both modes: [`in_both_modes`] runs one test body compiled with coarsening (the default)
//! and the same body compiled with `coarsen = off`, one after the other on the test's
//! thread. While it runs, `check_grad` and `check_fwd_rev` append every derivative result
//! they see (values, tangents along their fixed directions, adjoints, gradients) to a
//! per-mode transcript; afterwards the two transcripts must agree entry by entry to
//! [`CROSS_REL`]/[`CROSS_ABS`]. Outside `in_both_modes` nothing is recorded.
#![allow(dead_code)]

pub mod nd;
pub mod physics;

use nd::{Dual64, HyperDual64, Nd};
use phidiff::check;
use std::any::Any;
use std::cell::RefCell;
use std::panic;

/// Tolerances of one function's checks.
#[derive(Clone, Copy, Debug)]
pub struct Tols {
    /// Derivatives against central finite differences: `|d − fd| ≤ fd_abs + fd_rel·|fd|`.
    pub fd_rel: f64,
    pub fd_abs: f64,
    /// Relative tolerance of the dot-product identity `ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ`.
    pub dot_rel: f64,
}

/// Central differences with step control reach ~1e-8 relative on smooth functions of
/// moderate curvature; 1e-6 leaves two orders of margin. The dot-product identity has no
/// truncation error, so only rounding of well-conditioned sums remains.
pub const TOLS: Tols = Tols {
    fd_rel: 1e-6,
    fd_abs: 1e-8,
    dot_rel: 1e-12,
};

/// Random directions per function (forward vs FD and the dot-product test).
pub const TRIALS: usize = 4;

/// A flattened view of one differentiated function at one point.
pub struct Case<'a> {
    pub name: &'a str,
    /// The point (flat active inputs).
    pub x: &'a [f64],
    /// The primal function on flat inputs, returning flat outputs.
    pub primal: &'a dyn Fn(&[f64]) -> Vec<f64>,
    /// `(x, ẋ) ↦ (y, ẏ)` through the generated `_fwd`.
    pub jvp: &'a dyn Fn(&[f64], &[f64]) -> (Vec<f64>, Vec<f64>),
    /// `(x, ȳ) ↦ (y, x̄)` through the generated `_rev` (shadows start at zero).
    pub vjp: &'a dyn Fn(&[f64], &[f64]) -> (Vec<f64>, Vec<f64>),
    pub tols: Tols,
}

/// Checks `_fwd` and `_rev` of one case:
/// 1. the values returned by `_fwd`/`_rev` equal the primal's (rel 1e-12);
/// 2. `_fwd` tangents equal central-difference directional derivatives on `TRIALS`
///    random directions;
/// 3. the dot-product identity between `_fwd` and `_rev` over `TRIALS` random pairs.
///
/// Inside [`in_both_modes`] it records the `_fwd` values and tangents along the `TRIALS`
/// fixed directions and the `_rev` value and adjoint for the fixed weight.
pub fn check_fwd_rev(case: &Case) {
    let name = case.name;
    let x = case.x;
    let n_in = x.len();
    let y = (case.primal)(x);
    let n_out = y.len();

    for trial in 0..TRIALS {
        let v = check::random_vector((1000 + trial) as _, n_in);
        let (y_fwd, tangent) = (case.jvp)(x, &v);
        record(name, format!("_fwd value (direction {trial})"), &y_fwd);
        record(name, format!("_fwd tangent (direction {trial})"), &tangent);
        assert_all_close(
            &format!("{name}: value from _fwd"),
            &y_fwd,
            &y,
            1e-12,
            1e-13,
        );
        let fd = directional_fd(case.primal, x, &v);
        assert_eq!(tangent.len(), n_out, "{name}: tangent length");
        for k in 0..n_out {
            let err = (tangent[k] - fd[k]).abs();
            assert!(
                err <= case.tols.fd_abs + case.tols.fd_rel * fd[k].abs(),
                "{name}: _fwd tangent[{k}] = {} but central FD gives {} (trial {trial}, |err| {err:e})",
                tangent[k],
                fd[k],
            );
        }
    }

    let w = check::random_vector(2000, n_out);
    let (y_rev, adjoint) = (case.vjp)(x, &w);
    record(name, "_rev value".into(), &y_rev);
    record(name, "_rev adjoint".into(), &adjoint);
    assert_all_close(
        &format!("{name}: value from _rev"),
        &y_rev,
        &y,
        1e-12,
        1e-13,
    );
    assert_eq!(adjoint.len(), n_in, "{name}: adjoint length");

    check::dot_product(
        n_in,
        n_out,
        |v: &[f64]| (case.jvp)(x, v).1,
        |w: &[f64]| (case.vjp)(x, w).1,
        TRIALS as _,
        case.tols.dot_rel,
    )
    .unwrap_or_else(|e| panic!("{name}: dot-product test failed: {e:?}"));
}

/// Checks a `_grad` result against `phidiff::check::gradient` (central FD) and the value
/// against the primal; returns the gradient for further assertions. Inside
/// [`in_both_modes`] it records the value and the gradient.
pub fn check_grad(
    name: &str,
    x: &[f64],
    f: &dyn Fn(&[f64]) -> f64,
    grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    tols: Tols,
) -> Vec<f64> {
    let (value, g) = grad(x);
    record(name, "_grad value".into(), &[value]);
    record(name, "_grad gradient".into(), &g);
    assert_close(
        &format!("{name}: value from _grad"),
        value,
        f(x),
        1e-12,
        1e-13,
    );
    assert_eq!(g.len(), x.len(), "{name}: gradient length");
    check::gradient(
        |x: &[f64]| f(x),
        x,
        &g,
        check::Tolerance {
            rel: tols.fd_rel,
            abs: tols.fd_abs,
        },
    )
    .unwrap_or_else(|e| panic!("{name}: _grad disagrees with finite differences: {e:?}"));
    g
}

/// Central-difference derivative of every output of `f` along `v` at `x`, each through
/// `phidiff::check::finite_difference` on the one-variable function `t ↦ f(x + t v)`.
pub fn directional_fd(f: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], v: &[f64]) -> Vec<f64> {
    let n_out = f(x).len();
    (0..n_out)
        .map(|k| {
            let along = |t: &[f64]| {
                let xt: Vec<f64> = x.iter().zip(v).map(|(xi, vi)| xi + t[0] * vi).collect();
                f(&xt)[k]
            };
            check::finite_difference(along, &[0.0])[0]
        })
        .collect()
}

/// `|got − want| ≤ abs + rel·|want|`.
pub fn assert_close(what: &str, got: f64, want: f64, rel: f64, abs: f64) {
    let err = (got - want).abs();
    assert!(
        err <= abs + rel * want.abs(),
        "{what}: got {got:e}, want {want:e} (|err| {err:e}, rel {rel:e}, abs {abs:e})"
    );
}

/// Element-wise [`assert_close`] with equal lengths.
pub fn assert_all_close(what: &str, got: &[f64], want: &[f64], rel: f64, abs: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_close(&format!("{what}[{i}]"), *g, *w, rel, abs);
    }
}

/// Relative comparison against published or hand-derived values.
pub fn assert_rel(what: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_all_close(what, got, want, rel, 0.0);
}

/// Concatenates flat pieces (for building flat inputs/outputs).
pub fn cat(parts: &[&[f64]]) -> Vec<f64> {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

/// Splits `x` into consecutive pieces of the given lengths (the rest must be empty).
pub fn split<'a>(x: &'a [f64], lens: &[usize]) -> Vec<&'a [f64]> {
    let mut rest = x;
    let mut parts = Vec::with_capacity(lens.len());
    for &len in lens {
        let (head, tail) = rest.split_at(len);
        parts.push(head);
        rest = tail;
    }
    assert!(rest.is_empty(), "split: {} values left over", rest.len());
    parts
}

/// Row-major flat `rows × cols` → rows.
pub fn to_rows(flat: &[f64], cols: usize) -> Vec<Vec<f64>> {
    flat.chunks(cols).map(|r| r.to_vec()).collect()
}

/// Rows → row-major flat.
pub fn from_rows(rows: &[Vec<f64>]) -> Vec<f64> {
    rows.iter().flat_map(|r| r.iter().copied()).collect()
}

/// `n` zeros.
pub fn zeros(n: usize) -> Vec<f64> {
    vec![0.0; n]
}

/// Relative tolerance between the two modes: `|coarse − fine| ≤ CROSS_REL·max(|coarse|,
/// |fine|) + CROSS_ABS`. Coarsening differentiates whole segments in closed form and so
/// reassociates sums (CSE, summed recurrences); that changes rounding and nothing more.
/// In the longest case (Lorenz, 200 RK4 steps) two summation orders of the same gradient
/// (`_fwd` along unit vectors vs `_rev`) differ by 3e-15 relative, so 1e-10 leaves a wide
/// margin, yet it is 1e4 tighter than the finite-difference tolerance: a nearly right but
/// wrong coarsened derivative fails here where finite differences would pass it.
pub const CROSS_REL: f64 = 1e-10;
/// Absolute floor of the comparison, for results that cancel to about zero (a gradient at a
/// minimum, a tangent orthogonal to the gradient), whose rounding scales with the
/// cancelled terms rather than with the result.
pub const CROSS_ABS: f64 = 1e-12;

/// What a test must do in each mode.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// Return normally; the two modes' recorded results are then compared.
    Pass,
    /// Panic with a message containing this text (the harness's `#[should_panic]`).
    Panic(&'static str),
}

/// Runs one test body in both modes on this thread, `coarse` (compiled with
/// `#[differentiate]`) then `fine` (compiled with `coarsen = off`), and panics unless
/// both meet `expect` and, for [`Expect::Pass`], their recorded results agree (see
/// [`CROSS_REL`]). A failure in either mode is reported with the mode's name; the other
/// mode still runs, so the report says whether the failure is specific to one mode.
pub fn in_both_modes(expect: Expect, coarse: fn(), fine: fn()) {
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string();
    let coarse_run = run_recorded(coarse);
    let fine_run = run_recorded(fine);
    match expect {
        Expect::Pass => match (coarse_run, fine_run) {
            (Ok(coarse), Ok(fine)) => compare_transcripts(&test, &coarse, &fine),
            (Err(c), Ok(_)) => panic!("{test}: fails in {COARSE} only: {c}"),
            (Ok(_), Err(f)) => panic!("{test}: fails in {FINE} only: {f}"),
            (Err(c), Err(f)) => panic!("{test}: fails in both modes; {COARSE}: {c}; {FINE}: {f}"),
        },
        Expect::Panic(expected) => {
            for (mode, run) in [(COARSE, coarse_run), (FINE, fine_run)] {
                match run {
                    Err(message) if message.contains(expected) => {}
                    Err(message) => panic!(
                        "{test}: in {mode}, expected a panic containing {expected:?}, got: {message}"
                    ),
                    Ok(_) => panic!("{test}: in {mode}, expected a panic containing {expected:?}"),
                }
            }
        }
    }
}

const COARSE: &str = "coarse mode (the default)";
const FINE: &str = "fine mode (`coarsen = off`)";

/// One derivative result seen by a check helper.
#[derive(Debug)]
struct Record {
    case: String,
    what: String,
    values: Vec<f64>,
}

thread_local! {
    /// The transcript of the mode running on this thread; `None` outside `in_both_modes`.
    static TRANSCRIPT: RefCell<Option<Vec<Record>>> = const { RefCell::new(None) };
}

/// Appends a result to this thread's transcript, if one is being recorded.
fn record(case: &str, what: String, values: &[f64]) {
    TRANSCRIPT.with(|t| {
        if let Some(records) = t.borrow_mut().as_mut() {
            records.push(Record {
                case: case.to_string(),
                what,
                values: values.to_vec(),
            });
        }
    });
}

/// Runs `body` with a fresh transcript: its records, or its panic message.
fn run_recorded(body: fn()) -> Result<Vec<Record>, String> {
    TRANSCRIPT.with(|t| *t.borrow_mut() = Some(Vec::new()));
    let outcome = panic::catch_unwind(body);
    let records = TRANSCRIPT
        .with(|t| t.borrow_mut().take())
        .unwrap_or_default();
    outcome.map(|()| records).map_err(panic_message)
}

pub fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&str>() {
            Ok(message) => message.to_string(),
            Err(_) => "<non-string panic payload>".to_string(),
        },
    }
}

/// Both modes ran the same checks in the same order, so their transcripts must match
/// entry by entry: same case and result, values within the cross-mode tolerance.
fn compare_transcripts(test: &str, coarse: &[Record], fine: &[Record]) {
    assert_eq!(
        coarse.len(),
        fine.len(),
        "{test}: {COARSE} recorded {} results but {FINE} recorded {}",
        coarse.len(),
        fine.len()
    );
    for (index, (c, f)) in coarse.iter().zip(fine).enumerate() {
        assert!(
            c.case == f.case && c.what == f.what && c.values.len() == f.values.len(),
            "{test}: result {index} is `{}` {} ({} values) in {COARSE} but `{}` {} ({} values) in {FINE}",
            c.case,
            c.what,
            c.values.len(),
            f.case,
            f.what,
            f.values.len()
        );
        for (k, (&a, &b)) in c.values.iter().zip(&f.values).enumerate() {
            let diff = (a - b).abs();
            assert!(
                a == b || diff <= CROSS_REL * a.abs().max(b.abs()) + CROSS_ABS,
                "{test}: case `{}`, {}[{k}] is {a:e} in {COARSE} but {b:e} in {FINE} \
                 (|diff| {diff:e}, allowed rel {CROSS_REL:e} + abs {CROSS_ABS:e})",
                c.case,
                c.what,
            );
        }
    }
}

/// The `f64` checks of a function `f` of one flat point `x`: `_grad` against central finite
/// differences, `_fwd` against finite differences and against `_rev` by the dot-product
/// identity (`TOLS`).
pub fn check_point(
    name: &str,
    x: &[f64],
    f: &dyn Fn(&[f64]) -> f64,
    grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    fwd: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    rev: &dyn Fn(&[f64], f64) -> (f64, Vec<f64>),
) {
    check_grad(name, x, f, grad, TOLS);
    check_fwd_rev(&Case {
        name,
        x,
        primal: &|x| vec![f(x)],
        jvp: &|x, d| {
            let (v, t) = fwd(x, d);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let (v, g) = rev(x, w[0]);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

/// A function of a flat `&[f64]` point, generic over its float type, with its generated
/// derivatives: checked by [`check_generic`].
pub struct Generic<'a> {
    pub name: &'a str,
    pub x: &'a [f64],
    pub f: &'a dyn Fn(&[f64]) -> f64,
    /// The function at num-dual's dual numbers: the independent forward mode.
    pub f_dual: &'a dyn Fn(&[Nd<Dual64>]) -> Nd<Dual64>,
    /// The function at num-dual's hyper-dual numbers: second derivatives.
    pub f_hyper: &'a dyn Fn(&[Nd<HyperDual64>]) -> Nd<HyperDual64>,
    pub grad: &'a dyn Fn(&[f64]) -> (f64, Vec<f64>),
    /// `(x, ẋ) ↦ (value, tangent)` through `_fwd`.
    pub fwd: &'a dyn Fn(&[f64], &[f64]) -> (f64, f64),
    /// `(x, seed) ↦ (value, adjoint)` through `_rev`.
    pub rev: &'a dyn Fn(&[f64], f64) -> (f64, Vec<f64>),
    /// `(x, v) ↦ H v` through `_rev::<phidiff::Dual<f64>>` (forward over reverse).
    pub hvp: &'a dyn Fn(&[f64], &[f64]) -> Vec<f64>,
}

/// Checks a generic function's derivatives against things that share none of their code:
/// `_grad`'s components against num-dual's directional derivatives along each axis (rel
/// 1e-12 of the gradient's size), `_grad` against central finite differences and `_fwd`/
/// `_rev` against finite differences and the dot-product test (`TOLS`), and the H·v of
/// `_rev` at `phidiff::Dual<f64>` against num-dual's hyper-dual `e_kᵀ H v` (rel 1e-10 of
/// the row's size).
pub fn check_generic(c: &Generic) {
    let name = c.name;
    let n = c.x.len();
    let (value, g) = (c.grad)(c.x);
    assert_close(
        &format!("{name}: _grad value"),
        value,
        (c.f)(c.x),
        1e-12,
        1e-13,
    );
    let scale: f64 = g.iter().map(|v| v.abs()).sum::<f64>() + 1e-300;
    for k in 0..n {
        let mut e = zeros(n);
        e[k] = 1.0;
        let (re, d) = nd::directional(|p| (c.f_dual)(p), c.x, &e);
        assert_close(
            &format!("{name}: num-dual's value"),
            re,
            value,
            1e-12,
            1e-13,
        );
        assert_close(
            &format!("{name}: ∂f/∂x[{k}] vs num-dual"),
            g[k],
            d,
            0.0,
            1e-12 * scale,
        );
    }
    check_grad(name, c.x, c.f, c.grad, TOLS);
    check_fwd_rev(&Case {
        name,
        x: c.x,
        primal: &|x| vec![(c.f)(x)],
        jvp: &|x, d| {
            let (v, t) = (c.fwd)(x, d);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let (v, g) = (c.rev)(x, w[0]);
            (vec![v], g)
        },
        tols: TOLS,
    });
    for trial in 0..2 {
        let v = check::random_vector(500 + trial, n);
        let hv = (c.hvp)(c.x, &v);
        let want: Vec<f64> = (0..n)
            .map(|k| {
                let mut e = zeros(n);
                e[k] = 1.0;
                nd::second(|p| (c.f_hyper)(p), c.x, &e, &v)
            })
            .collect();
        let row_scale: f64 = want.iter().map(|w| w.abs()).sum::<f64>() + 1e-300;
        assert_all_close(
            &format!("{name}: H·v (trial {trial}) vs num-dual"),
            &hv,
            &want,
            1e-10,
            1e-10 * row_scale,
        );
    }
}

/// `_rev::<phidiff::Dual<f64>>`'s H·v for a function of one slice: the point carries `v`
/// in its tangents, the shadow starts at dual zero, the seed is the constant 1.
pub fn hvp_of(
    rev: &dyn Fn(
        &[phidiff::Dual<f64>],
        &mut [phidiff::Dual<f64>],
        phidiff::Dual<f64>,
    ) -> phidiff::Dual<f64>,
    x: &[f64],
    v: &[f64],
) -> Vec<f64> {
    let xd: Vec<phidiff::Dual<f64>> = x
        .iter()
        .zip(v)
        .map(|(&re, &eps)| phidiff::Dual { re, eps })
        .collect();
    let mut dx = vec![phidiff::Dual { re: 0.0, eps: 0.0 }; x.len()];
    rev(&xd, &mut dx, phidiff::Dual::constant(1.0));
    dx.iter().map(|d| d.eps).collect()
}

/// [`check_generic`] for a function `f<T>(x: &[T]) -> T` with `forward, reverse`.
#[macro_export]
macro_rules! check_slice_fn {
    ($f:ident, $fwd:ident, $rev:ident, $grad:ident, $x:expr) => {
        $crate::common::check_generic(&$crate::common::Generic {
            name: stringify!($f),
            x: &$x,
            f: &|x| $f(x),
            f_dual: &|x| $f(x),
            f_hyper: &|x| $f(x),
            grad: &|x| $grad(x),
            fwd: &|x, d| $fwd(x, d),
            rev: &|x, s| {
                let mut g = vec![0.0; x.len()];
                let v = $rev(x, &mut g, s);
                (v, g)
            },
            hvp: &|x, v| $crate::common::hvp_of(&|x, dx, s| $rev(x, dx, s), x, v),
        })
    };
}

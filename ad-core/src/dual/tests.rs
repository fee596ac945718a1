//! Every `Float` method of `Dual` against finite differences, first and
//! second derivatives, plus the non-smooth conventions.
//!
//! Finite differences here are central differences with one Richardson step
//! (h = 1e-3·max(1, |x|)): truncation O(h⁴) ≈ 1e-13, rounding ≈ 1e-12
//! relative. Tolerance: `|ad − fd| ≤ 1e-8·(1 + |fd|)`.

use num_traits::{Float as _, FloatConst, Zero};

use super::Dual;
use crate::Float;

type D = Dual<f64>;
type DD = Dual<Dual<f64>>;

const TOL: f64 = 1e-8;

/// Central difference with one Richardson extrapolation step.
fn richardson(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-3 * x.abs().max(1.0);
    let central = |h: f64| (f(x + h) - f(x - h)) / (2.0 * h);
    (4.0 * central(h / 2.0) - central(h)) / 3.0
}

fn assert_close(what: &str, ad: f64, fd: f64) {
    assert!(
        (ad - fd).abs() <= TOL * (1.0 + fd.abs()),
        "{what}: dual gives {ad:e}, finite difference {fd:e}"
    );
}

/// One-argument functions under test, each with points inside its domain and
/// away from kinks.
#[derive(Clone, Copy, Debug)]
enum Unary {
    Sin,
    Cos,
    Tan,
    SinCos,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Exp,
    Exp2,
    ExpM1,
    Ln,
    Log2,
    Log10,
    Ln1p,
    LogBase,
    Sqrt,
    Cbrt,
    Recip,
    PowiCube,
    PowiInverseSquare,
    PowfConstant,
    Abs,
    Signum,
    Floor,
    Ceil,
    Round,
    Trunc,
    Fract,
    ToDegrees,
    ToRadians,
    Neg,
    Rational,
}

const UNARY: [Unary; 38] = {
    use Unary::*;
    [
        Sin,
        Cos,
        Tan,
        SinCos,
        Asin,
        Acos,
        Atan,
        Sinh,
        Cosh,
        Tanh,
        Asinh,
        Acosh,
        Atanh,
        Exp,
        Exp2,
        ExpM1,
        Ln,
        Log2,
        Log10,
        Ln1p,
        LogBase,
        Sqrt,
        Cbrt,
        Recip,
        PowiCube,
        PowiInverseSquare,
        PowfConstant,
        Abs,
        Signum,
        Floor,
        Ceil,
        Round,
        Trunc,
        Fract,
        ToDegrees,
        ToRadians,
        Neg,
        Rational,
    ]
};

impl Unary {
    fn apply<T: Float>(self, x: T) -> T {
        let c = |v: f64| <T as num_traits::NumCast>::from(v).unwrap();
        match self {
            Unary::Sin => x.sin(),
            Unary::Cos => x.cos(),
            Unary::Tan => x.tan(),
            Unary::SinCos => {
                let (s, co) = x.sin_cos();
                s * c(2.0) + co * co
            }
            Unary::Asin => x.asin(),
            Unary::Acos => x.acos(),
            Unary::Atan => x.atan(),
            Unary::Sinh => x.sinh(),
            Unary::Cosh => x.cosh(),
            Unary::Tanh => x.tanh(),
            Unary::Asinh => x.asinh(),
            Unary::Acosh => x.acosh(),
            Unary::Atanh => x.atanh(),
            Unary::Exp => x.exp(),
            Unary::Exp2 => x.exp2(),
            Unary::ExpM1 => x.exp_m1(),
            Unary::Ln => x.ln(),
            Unary::Log2 => x.log2(),
            Unary::Log10 => x.log10(),
            Unary::Ln1p => x.ln_1p(),
            Unary::LogBase => x.log(c(3.0)),
            Unary::Sqrt => x.sqrt(),
            Unary::Cbrt => x.cbrt(),
            Unary::Recip => x.recip(),
            Unary::PowiCube => x.powi(3),
            Unary::PowiInverseSquare => x.powi(-2),
            Unary::PowfConstant => x.powf(c(2.5)),
            Unary::Abs => x.abs() * x,
            Unary::Signum => x.signum() * x,
            Unary::Floor => x.floor() * x,
            Unary::Ceil => x.ceil() * x,
            Unary::Round => x.round() * x,
            Unary::Trunc => x.trunc() * x,
            Unary::Fract => x.fract() * x,
            Unary::ToDegrees => x.to_degrees(),
            Unary::ToRadians => x.to_radians(),
            Unary::Neg => -x,
            Unary::Rational => (x * x + c(1.0)) / (x - c(3.0)) % c(2.0),
        }
    }

    fn points(self) -> &'static [f64] {
        match self {
            Unary::Asin | Unary::Acos | Unary::Atanh => &[-0.7, 0.1, 0.6],
            Unary::Acosh => &[1.3, 2.5, 7.0],
            Unary::Ln | Unary::Log2 | Unary::Log10 | Unary::LogBase | Unary::Sqrt => {
                &[0.3, 1.0, 4.2]
            }
            Unary::PowfConstant => &[0.3, 1.0, 4.2],
            Unary::Ln1p => &[-0.5, 0.2, 3.0],
            Unary::Tan => &[-1.2, 0.3, 1.1],
            Unary::Cbrt | Unary::Recip | Unary::PowiInverseSquare => &[-2.0, -0.4, 0.5, 3.0],
            Unary::Rational => &[-1.7, 0.4, 5.5],
            _ => &[-2.3, -0.6, 0.4, 1.7],
        }
    }
}

#[test]
fn every_unary_method_matches_finite_differences() {
    for op in UNARY {
        for &x in op.points() {
            let ad = op.apply(D::variable(x));
            assert_eq!(
                ad.re.to_bits(),
                op.apply(x).to_bits(),
                "{op:?} value at {x}"
            );
            let fd = richardson(|v| op.apply(v), x);
            assert_close(&format!("{op:?}' at {x}"), ad.eps, fd);
        }
    }
}

#[test]
fn every_unary_method_has_the_right_second_derivative_when_nested() {
    for op in UNARY {
        for &x in op.points() {
            let nested = op.apply(DD::new(D::variable(x), D::constant(1.0)));
            let first = |v: f64| op.apply(D::variable(v)).eps;
            // Both tangent slots carry f'; the mixed slot carries f''.
            assert_eq!(nested.re.eps.to_bits(), first(x).to_bits(), "{op:?}");
            assert_eq!(nested.eps.re.to_bits(), first(x).to_bits(), "{op:?}");
            assert_close(
                &format!("{op:?}'' at {x}"),
                nested.eps.eps,
                richardson(first, x),
            );
        }
    }
}

/// Two-argument functions, differentiated in each argument separately.
#[derive(Clone, Copy, Debug)]
enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Atan2,
    Powf,
    Hypot,
    Log,
    Max,
    Min,
    AbsSub,
    Copysign,
    MulAddFirst,
    MulAddLast,
}

impl Binary {
    fn apply<T: Float>(self, a: T, b: T) -> T {
        let c = |v: f64| <T as num_traits::NumCast>::from(v).unwrap();
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Rem => a % b,
            Binary::Atan2 => a.atan2(b),
            Binary::Powf => a.powf(b),
            Binary::Hypot => a.hypot(b),
            Binary::Log => a.log(b),
            Binary::Max => a.max(b),
            Binary::Min => a.min(b),
            Binary::AbsSub => a.abs_sub(b),
            Binary::Copysign => a.copysign(b),
            Binary::MulAddFirst => a.mul_add(b, c(0.7)),
            Binary::MulAddLast => c(1.3).mul_add(a, b),
        }
    }
}

#[test]
fn every_binary_method_matches_finite_differences_in_each_argument() {
    use Binary::*;
    let general: &[(f64, f64)] = &[(1.3, 0.4), (-2.1, 0.8), (0.6, -1.9), (-0.5, -3.0)];
    let positive: &[(f64, f64)] = &[(1.3, 0.4), (2.1, 3.5), (0.6, 1.9)];
    let cases: [(Binary, &[(f64, f64)]); 15] = [
        (Add, general),
        (Sub, general),
        (Mul, general),
        (Div, general),
        (Rem, &[(7.3, 2.1), (-7.3, 2.1), (5.2, -1.5)]),
        (Atan2, general),
        (Powf, positive),
        (Hypot, general),
        (Log, &[(1.3, 0.4), (2.1, 3.5), (0.6, 1.9)]),
        (Max, general),
        (Min, general),
        (AbsSub, general),
        (Copysign, general),
        (MulAddFirst, general),
        (MulAddLast, general),
    ];
    for (op, points) in cases {
        for &(a, b) in points {
            let value = op.apply(a, b);
            let d_first = op.apply(D::variable(a), D::constant(b));
            let d_second = op.apply(D::constant(a), D::variable(b));
            assert_eq!(d_first.re.to_bits(), value.to_bits(), "{op:?} value");
            let fd_first = richardson(|v| op.apply(v, b), a);
            let fd_second = richardson(|v| op.apply(a, v), b);
            assert_close(&format!("∂₁{op:?} at ({a}, {b})"), d_first.eps, fd_first);
            assert_close(&format!("∂₂{op:?} at ({a}, {b})"), d_second.eps, fd_second);
            // The mixed second derivative through nesting.
            let mixed = op.apply(
                DD::new(D::variable(a), D::constant(0.0)),
                DD::new(D::constant(b), D::constant(1.0)),
            );
            let fd_mixed = richardson(|v| op.apply(D::variable(a), D::constant(v)).eps, b);
            assert_close(
                &format!("∂₁∂₂{op:?} at ({a}, {b})"),
                mixed.eps.eps,
                fd_mixed,
            );
        }
    }
}

#[test]
fn nested_duals_give_the_second_derivative_of_sin_times_exp() {
    // f = sin·exp, f' = (sin + cos)·exp, f'' = 2·cos·exp.
    for x in [-1.1_f64, 0.0, 0.8, 2.4] {
        let y = {
            let x = DD::new(D::variable(x), D::constant(1.0));
            x.sin() * x.exp()
        };
        let f = x.sin() * x.exp();
        let df = (x.sin() + x.cos()) * x.exp();
        let d2f = 2.0 * x.cos() * x.exp();
        assert!((y.re.re - f).abs() <= 1e-15 * (1.0 + f.abs()));
        assert!((y.re.eps - df).abs() <= 1e-14 * (1.0 + df.abs()));
        assert!((y.eps.re - df).abs() <= 1e-14 * (1.0 + df.abs()));
        assert!((y.eps.eps - d2f).abs() <= 1e-14 * (1.0 + d2f.abs()), "{x}");
    }
}

#[test]
fn abs_has_zero_derivative_at_zero() {
    for zero in [0.0, -0.0] {
        let y = D::variable(zero).abs();
        assert_eq!((y.re, y.eps), (0.0, 0.0));
    }
    assert_eq!(D::new(-2.0, 3.0).abs().eps, -3.0);
}

#[test]
fn max_and_min_send_the_tangent_to_the_first_argument_on_ties() {
    let a = D::new(1.0, 10.0);
    let b = D::new(1.0, 20.0);
    assert_eq!(a.max(b).eps, 10.0);
    assert_eq!(b.max(a).eps, 20.0);
    assert_eq!(a.min(b).eps, 10.0);
    assert_eq!(b.min(a).eps, 20.0);
    assert_eq!(a.clamp(b, D::constant(2.0)).eps, 10.0);
    // NaN is ignored, like f64::max.
    let nan = D::new(f64::NAN, 5.0);
    assert_eq!(a.max(nan).eps, 10.0);
    assert_eq!(nan.max(a).eps, 10.0);
    assert_eq!(nan.min(a).eps, 10.0);
}

#[test]
fn comparisons_and_predicates_read_the_value_only() {
    let a = D::new(1.0, 100.0);
    let b = D::new(2.0, -100.0);
    assert!(a < b);
    assert!(b > a);
    assert!(a != b);
    assert_eq!(a, D::new(1.0, -7.0));
    assert!(D::new(1.0, f64::NAN).is_finite());
    assert!(!D::new(1.0, f64::NAN).is_nan());
    assert!(D::new(-0.0, 1.0).is_sign_negative());
    assert_eq!(D::new(2.5, 1.0).integer_decode(), 2.5_f64.integer_decode());
    assert_eq!(D::new(0.0, 1.0).classify(), core::num::FpCategory::Zero);
    assert_eq!(D::new(-2.0, 1.0).signum().eps, 0.0);
}

#[test]
fn zero_tangents_never_become_nan() {
    assert_eq!(D::constant(0.0).sqrt().eps, 0.0);
    assert_eq!(D::constant(0.0).cbrt().eps, 0.0);
    assert_eq!(D::constant(0.0).ln().eps, 0.0);
    assert_eq!(D::constant(1.0).asin().eps, 0.0);
    assert_eq!(D::constant(1.0).acosh().eps, 0.0);
    assert_eq!(D::constant(0.0).powi(-1).eps, 0.0);
    assert_eq!(D::variable(0.0).powi(0).eps, 0.0);
    // Constant exponent at a negative base: ln(base) is never touched.
    let y = D::variable(-2.0).powf(D::constant(2.0));
    assert_eq!((y.re, y.eps), (4.0, -4.0));
    // hypot at the origin: the subgradient 0, as for abs.
    assert_eq!(D::variable(0.0).hypot(D::variable(0.0)).eps, 0.0);
    // A nested zero is zero in every slot, so the guard holds there too.
    let z = DD::new(D::constant(0.0), D::constant(0.0)).sqrt();
    assert!(z.eps.is_zero());
}

#[test]
fn infinite_derivatives_are_reported_when_the_tangent_is_nonzero() {
    assert_eq!(D::variable(0.0).sqrt().eps, f64::INFINITY);
    assert!(D::variable(0.0).atan2(D::variable(0.0)).eps.is_nan());
}

#[test]
fn constants_have_zero_tangent() {
    for c in [
        D::nan(),
        D::infinity(),
        D::neg_infinity(),
        D::neg_zero(),
        D::min_value(),
        D::min_positive_value(),
        D::epsilon(),
        D::max_value(),
        D::E(),
        D::TAU(),
    ] {
        assert_eq!(c.eps, 0.0);
    }
    assert_eq!(D::epsilon().re, f64::EPSILON);
    assert_eq!(D::min_positive_value().re, f64::MIN_POSITIVE);
}

#[test]
fn works_over_f32() {
    let y = Dual::variable(2.0_f32).powi(3);
    assert_eq!((y.re, y.eps), (8.0, 12.0));
}

//! An independent forward mode for generic code: [`Nd`] wraps a num-dual number
//! (`Dual64`, `HyperDual64`, ...) and implements `num_traits::Float` (and what
//! `phidiff::Float` adds) by num-dual's own derivative rules, so a user's function
//! `f<T: Float>` can be run at `Nd<Dual64>` for a directional derivative, or at
//! `Nd<HyperDual64>` for a second one, with no phidiff code involved. num-dual does not
//! implement `num_traits::Float` for its types itself.
//!
//! Comparisons look at the real part (as num-dual's); `floor`, `round` and the like have
//! derivative zero; `max`/`min` pass the derivative of the chosen argument.

use num_dual::DualNum;
use num_traits::{Float, FloatConst, FromPrimitive, Num, NumCast, One, ToPrimitive, Zero};
use std::cmp::Ordering;
use std::iter::Sum;
use std::num::FpCategory;
use std::ops::*;

pub use num_dual::{Dual64, HyperDual64};

/// A num-dual number as a `num_traits::Float`.
#[derive(Clone, Copy, Debug)]
pub struct Nd<D>(pub D);

/// The number types [`Nd`] wraps.
pub trait Inner: DualNum<Primitive = f64> + Copy + Send + Sync + 'static {}
impl<D: DualNum<Primitive = f64> + Copy + Send + Sync + 'static> Inner for D {}

impl<D: Inner> Nd<D> {
    /// The real part.
    pub fn re(&self) -> f64 {
        self.0.re()
    }
    /// A constant (zero derivative parts).
    pub fn constant(c: f64) -> Self {
        Nd(D::from(c))
    }
}

impl Nd<Dual64> {
    /// `x + ε·v` componentwise.
    pub fn seeded(x: &[f64], v: &[f64]) -> Vec<Self> {
        x.iter()
            .zip(v)
            .map(|(&a, &b)| Nd(Dual64::new(a, b)))
            .collect()
    }
    /// The `ε` part.
    pub fn eps(&self) -> f64 {
        self.0.eps
    }
}

impl Nd<HyperDual64> {
    /// `x + ε₁·v + ε₂·w` componentwise: `f`'s `ε₁ε₂` part is `vᵀ H w`.
    pub fn seeded2(x: &[f64], v: &[f64], w: &[f64]) -> Vec<Self> {
        (0..x.len())
            .map(|i| Nd(HyperDual64::new(x[i], v[i], w[i], 0.0)))
            .collect()
    }
    /// The `ε₁ε₂` part.
    pub fn eps12(&self) -> f64 {
        self.0.eps1eps2
    }
}

macro_rules! binary_ops {
    ($($tr:ident $m:ident $atr:ident $am:ident),*) => {$(
        impl<D: Inner> $tr for Nd<D> {
            type Output = Self;
            fn $m(self, o: Self) -> Self {
                Nd($tr::$m(self.0, o.0))
            }
        }
        impl<D: Inner> $atr for Nd<D> {
            fn $am(&mut self, o: Self) {
                self.0 = $tr::$m(self.0, o.0);
            }
        }
    )*};
}
binary_ops!(Add add AddAssign add_assign, Sub sub SubAssign sub_assign, Mul mul MulAssign mul_assign, Div div DivAssign div_assign, Rem rem RemAssign rem_assign);

impl<D: Inner> Neg for Nd<D> {
    type Output = Self;
    fn neg(self) -> Self {
        Nd(-self.0)
    }
}

impl<D: Inner> PartialEq for Nd<D> {
    fn eq(&self, o: &Self) -> bool {
        self.re() == o.re()
    }
}

impl<D: Inner> PartialOrd for Nd<D> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.re().partial_cmp(&o.re())
    }
}

impl<D: Inner> Default for Nd<D> {
    fn default() -> Self {
        Self::zero()
    }
}

impl<D: Inner> Zero for Nd<D> {
    fn zero() -> Self {
        Nd(D::zero())
    }
    fn is_zero(&self) -> bool {
        self.re() == 0.0
    }
}

impl<D: Inner> One for Nd<D> {
    fn one() -> Self {
        Nd(D::one())
    }
}

impl<D: Inner> Num for Nd<D> {
    type FromStrRadixErr = <f64 as Num>::FromStrRadixErr;
    fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        f64::from_str_radix(s, radix).map(Self::constant)
    }
}

impl<D: Inner> ToPrimitive for Nd<D> {
    fn to_i64(&self) -> Option<i64> {
        self.re().to_i64()
    }
    fn to_u64(&self) -> Option<u64> {
        self.re().to_u64()
    }
    fn to_f64(&self) -> Option<f64> {
        Some(self.re())
    }
}

impl<D: Inner> NumCast for Nd<D> {
    fn from<N: ToPrimitive>(n: N) -> Option<Self> {
        n.to_f64().map(Self::constant)
    }
}

impl<D: Inner> FromPrimitive for Nd<D> {
    fn from_i64(n: i64) -> Option<Self> {
        Some(Self::constant(n as f64))
    }
    fn from_u64(n: u64) -> Option<Self> {
        Some(Self::constant(n as f64))
    }
    fn from_f64(n: f64) -> Option<Self> {
        Some(Self::constant(n))
    }
}

impl<D: Inner> Sum for Nd<D> {
    fn sum<I: Iterator<Item = Self>>(it: I) -> Self {
        it.fold(Self::zero(), |a, b| a + b)
    }
}

impl<'a, D: Inner> Sum<&'a Nd<D>> for Nd<D> {
    fn sum<I: Iterator<Item = &'a Self>>(it: I) -> Self {
        it.fold(Self::zero(), |a, b| a + *b)
    }
}

impl<D: Inner> std::iter::Product for Nd<D> {
    fn product<I: Iterator<Item = Self>>(it: I) -> Self {
        it.fold(Self::one(), |a, b| a * b)
    }
}

macro_rules! consts {
    ($($name:ident),*) => {
        impl<D: Inner> FloatConst for Nd<D> {
            $(fn $name() -> Self { Self::constant(std::f64::consts::$name) })*
        }
    };
}
consts!(
    E,
    FRAC_1_PI,
    FRAC_1_SQRT_2,
    FRAC_2_PI,
    FRAC_2_SQRT_PI,
    FRAC_PI_2,
    FRAC_PI_3,
    FRAC_PI_4,
    FRAC_PI_6,
    FRAC_PI_8,
    LN_10,
    LN_2,
    LOG10_E,
    LOG2_E,
    PI,
    SQRT_2
);

macro_rules! unary {
    ($($m:ident),*) => {$(
        fn $m(self) -> Self {
            Nd(DualNum::$m(&self.0))
        }
    )*};
}

macro_rules! constant_of_re {
    ($($m:ident),*) => {$(
        fn $m(self) -> Self {
            Self::constant(self.re().$m())
        }
    )*};
}

impl<D: Inner> Float for Nd<D> {
    fn nan() -> Self {
        Self::constant(f64::NAN)
    }
    fn infinity() -> Self {
        Self::constant(f64::INFINITY)
    }
    fn neg_infinity() -> Self {
        Self::constant(f64::NEG_INFINITY)
    }
    fn neg_zero() -> Self {
        Self::constant(-0.0)
    }
    fn min_value() -> Self {
        Self::constant(f64::MIN)
    }
    fn min_positive_value() -> Self {
        Self::constant(f64::MIN_POSITIVE)
    }
    fn max_value() -> Self {
        Self::constant(f64::MAX)
    }
    fn is_nan(self) -> bool {
        self.re().is_nan()
    }
    fn is_infinite(self) -> bool {
        self.re().is_infinite()
    }
    fn is_finite(self) -> bool {
        self.re().is_finite()
    }
    fn is_normal(self) -> bool {
        self.re().is_normal()
    }
    fn classify(self) -> FpCategory {
        self.re().classify()
    }
    constant_of_re!(floor, ceil, round, trunc);
    fn fract(self) -> Self {
        self - self.floor()
    }
    fn abs(self) -> Self {
        if self.re() < 0.0 {
            -self
        } else {
            self
        }
    }
    fn signum(self) -> Self {
        Self::constant(self.re().signum())
    }
    fn is_sign_positive(self) -> bool {
        self.re().is_sign_positive()
    }
    fn is_sign_negative(self) -> bool {
        self.re().is_sign_negative()
    }
    fn mul_add(self, a: Self, b: Self) -> Self {
        self * a + b
    }
    fn recip(self) -> Self {
        Nd(DualNum::recip(&self.0))
    }
    fn powi(self, n: i32) -> Self {
        Nd(DualNum::powi(&self.0, n))
    }
    fn powf(self, n: Self) -> Self {
        Nd(DualNum::powd(&self.0, n.0))
    }
    unary!(
        sqrt, exp, exp2, ln, log2, log10, cbrt, sin, cos, tan, asin, acos, atan, exp_m1, ln_1p,
        sinh, cosh, tanh, asinh, acosh, atanh
    );
    fn log(self, base: Self) -> Self {
        self.ln() / base.ln()
    }
    fn max(self, o: Self) -> Self {
        if o.re() > self.re() {
            o
        } else {
            self
        }
    }
    fn min(self, o: Self) -> Self {
        if o.re() < self.re() {
            o
        } else {
            self
        }
    }
    fn abs_sub(self, o: Self) -> Self {
        if self.re() > o.re() {
            self - o
        } else {
            Self::zero()
        }
    }
    fn hypot(self, o: Self) -> Self {
        (self * self + o * o).sqrt()
    }
    fn atan2(self, o: Self) -> Self {
        Nd(DualNum::atan2(&self.0, o.0))
    }
    fn sin_cos(self) -> (Self, Self) {
        (self.sin(), self.cos())
    }
    fn integer_decode(self) -> (u64, i16, i8) {
        self.re().integer_decode()
    }
}

/// The directional derivative of `f` at `x` along `v` by num-dual.
pub fn directional(f: impl Fn(&[Nd<Dual64>]) -> Nd<Dual64>, x: &[f64], v: &[f64]) -> (f64, f64) {
    let y = f(&Nd::seeded(x, v));
    (y.re(), y.eps())
}

/// `vᵀ H w` of `f` at `x` by num-dual's hyper-dual numbers.
pub fn second(
    f: impl Fn(&[Nd<HyperDual64>]) -> Nd<HyperDual64>,
    x: &[f64],
    v: &[f64],
    w: &[f64],
) -> f64 {
    f(&Nd::seeded2(x, v, w)).eps12()
}

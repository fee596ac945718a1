//! `num_traits::Float` for dual numbers: every elementary function with its
//! derivative rule.
//!
//! Conventions (see the crate's non-smooth rule): predicates and
//! classifications read `re`; piecewise-constant functions (`floor`, `ceil`,
//! `round`, `trunc`, `signum`) have tangent 0; `abs'(0) = 0`; `max`/`min`
//! and `clamp` pass the selected argument's tangent, the first on ties;
//! `hypot` at the origin has tangent 0 (the subgradient `abs` also uses);
//! `atan2` at the origin has no derivative and yields NaN for a nonzero
//! tangent. A zero tangent never produces `0·∞ = NaN` (see `chain_guarded`).

use core::num::FpCategory;

use num_traits::Zero;

use super::{scale_guarded, Dual};
use crate::nonsmooth::{abs_partial, max_first, min_first};
use crate::Float;

/// `T`'s value of an `i32`, which every float represents (up to rounding).
#[inline]
fn int<T: Float>(n: i32) -> T {
    <T as num_traits::NumCast>::from(n).expect("every float type represents an i32")
}

impl<T: Float> num_traits::Float for Dual<T> {
    // ---- constants (tangent 0) ----

    #[inline]
    fn nan() -> Self {
        Dual::constant(T::nan())
    }
    #[inline]
    fn infinity() -> Self {
        Dual::constant(T::infinity())
    }
    #[inline]
    fn neg_infinity() -> Self {
        Dual::constant(T::neg_infinity())
    }
    #[inline]
    fn neg_zero() -> Self {
        Dual::constant(T::neg_zero())
    }
    #[inline]
    fn min_value() -> Self {
        Dual::constant(T::min_value())
    }
    #[inline]
    fn min_positive_value() -> Self {
        Dual::constant(T::min_positive_value())
    }
    #[inline]
    fn epsilon() -> Self {
        Dual::constant(T::epsilon())
    }
    #[inline]
    fn max_value() -> Self {
        Dual::constant(T::max_value())
    }

    // ---- predicates on the value ----

    #[inline]
    fn is_nan(self) -> bool {
        self.re.is_nan()
    }
    #[inline]
    fn is_infinite(self) -> bool {
        self.re.is_infinite()
    }
    #[inline]
    fn is_finite(self) -> bool {
        self.re.is_finite()
    }
    #[inline]
    fn is_normal(self) -> bool {
        self.re.is_normal()
    }
    #[inline]
    fn is_subnormal(self) -> bool {
        self.re.is_subnormal()
    }
    #[inline]
    fn classify(self) -> FpCategory {
        self.re.classify()
    }
    #[inline]
    fn is_sign_positive(self) -> bool {
        self.re.is_sign_positive()
    }
    #[inline]
    fn is_sign_negative(self) -> bool {
        self.re.is_sign_negative()
    }
    #[inline]
    fn integer_decode(self) -> (u64, i16, i8) {
        self.re.integer_decode()
    }

    // ---- piecewise constant / piecewise linear ----

    #[inline]
    fn floor(self) -> Self {
        Dual::constant(self.re.floor())
    }
    #[inline]
    fn ceil(self) -> Self {
        Dual::constant(self.re.ceil())
    }
    #[inline]
    fn round(self) -> Self {
        Dual::constant(self.re.round())
    }
    #[inline]
    fn trunc(self) -> Self {
        Dual::constant(self.re.trunc())
    }
    #[inline]
    fn signum(self) -> Self {
        Dual::constant(self.re.signum())
    }
    /// `x − trunc(x)`: tangent passes through.
    #[inline]
    fn fract(self) -> Self {
        Dual::new(self.re.fract(), self.eps)
    }
    /// `abs'(x) = sign(x)`, with `abs'(0) = 0`.
    #[inline]
    fn abs(self) -> Self {
        self.chain(self.re.abs(), abs_partial(self.re))
    }
    /// `self` or `other` whole, `self` on ties.
    #[inline]
    fn max(self, other: Self) -> Self {
        if max_first(self.re, other.re) {
            self
        } else {
            other
        }
    }
    /// `self` or `other` whole, `self` on ties.
    #[inline]
    fn min(self, other: Self) -> Self {
        if min_first(self.re, other.re) {
            self
        } else {
            other
        }
    }
    /// `self` unless it lies strictly outside `[min, max]` (so `self` on
    /// ties), as `self.max(min).min(max)` would select.
    #[inline]
    fn clamp(self, min: Self, max: Self) -> Self {
        if self.re < min.re {
            min
        } else if self.re > max.re {
            max
        } else {
            self
        }
    }
    /// `self − other` where positive, else 0 (tangent 0 on ties).
    #[inline]
    fn abs_sub(self, other: Self) -> Self {
        if self.re <= other.re {
            Self::zero()
        } else {
            self - other
        }
    }
    /// `|self|` with the sign of `sign`: `±self`; no derivative in `sign`.
    #[inline]
    fn copysign(self, sign: Self) -> Self {
        if self.re.is_sign_negative() == sign.re.is_sign_negative() {
            self
        } else {
            -self
        }
    }

    // ---- algebraic ----

    #[inline]
    fn mul_add(self, a: Self, b: Self) -> Self {
        let eps = self.eps.mul_add(a.re, self.re.mul_add(a.eps, b.eps));
        Dual::new(self.re.mul_add(a.re, b.re), eps)
    }
    #[inline]
    fn recip(self) -> Self {
        let r = self.re.recip();
        self.chain(r, -r * r)
    }
    #[inline]
    fn powi(self, n: i32) -> Self {
        let value = self.re.powi(n);
        if n == 0 {
            return Dual::constant(value);
        }
        self.chain_guarded(value, || int::<T>(n) * self.re.powi(n - 1))
    }
    /// `d(aᵇ) = b·aᵇ⁻¹·da + aᵇ·ln(a)·db`; each term is skipped when its
    /// tangent is zero, so a constant exponent works at a negative base.
    #[inline]
    fn powf(self, n: Self) -> Self {
        let value = self.re.powf(n.re);
        let from_base = scale_guarded(self.eps, || n.re * self.re.powf(n.re - T::one()));
        let from_exponent = scale_guarded(n.eps, || value * self.re.ln());
        Dual::new(value, from_base + from_exponent)
    }
    #[inline]
    fn sqrt(self) -> Self {
        let s = self.re.sqrt();
        self.chain_guarded(s, || (s + s).recip())
    }
    #[inline]
    fn cbrt(self) -> Self {
        let c = self.re.cbrt();
        self.chain_guarded(c, || (int::<T>(3) * c * c).recip())
    }
    /// `d hypot(a, b) = (a·da + b·db) / hypot(a, b)`, 0 at the origin.
    #[inline]
    fn hypot(self, other: Self) -> Self {
        let h = self.re.hypot(other.re);
        if h.is_zero() {
            return Dual::constant(h);
        }
        Dual::new(h, (self.re * self.eps + other.re * other.eps) / h)
    }

    // ---- exponentials and logarithms ----

    #[inline]
    fn exp(self) -> Self {
        let e = self.re.exp();
        self.chain(e, e)
    }
    #[inline]
    fn exp2(self) -> Self {
        let e = self.re.exp2();
        self.chain(e, e * T::LN_2())
    }
    #[inline]
    fn exp_m1(self) -> Self {
        self.chain(self.re.exp_m1(), self.re.exp())
    }
    #[inline]
    fn ln(self) -> Self {
        self.chain_guarded(self.re.ln(), || self.re.recip())
    }
    #[inline]
    fn ln_1p(self) -> Self {
        self.chain_guarded(self.re.ln_1p(), || (T::one() + self.re).recip())
    }
    #[inline]
    fn log2(self) -> Self {
        self.chain_guarded(self.re.log2(), || (self.re * T::LN_2()).recip())
    }
    #[inline]
    fn log10(self) -> Self {
        self.chain_guarded(self.re.log10(), || (self.re * T::LN_10()).recip())
    }
    /// `log_b(a) = ln a / ln b`: `d = da/(a·ln b) − ln a·db/(b·ln² b)`.
    #[inline]
    fn log(self, base: Self) -> Self {
        let ln_base = base.re.ln();
        let from_arg = scale_guarded(self.eps, || (self.re * ln_base).recip());
        let from_base = scale_guarded(base.eps, || -self.re.ln() / (base.re * ln_base * ln_base));
        Dual::new(self.re.log(base.re), from_arg + from_base)
    }

    // ---- trigonometric ----

    #[inline]
    fn sin(self) -> Self {
        let (s, c) = self.re.sin_cos();
        self.chain(s, c)
    }
    #[inline]
    fn cos(self) -> Self {
        let (s, c) = self.re.sin_cos();
        self.chain(c, -s)
    }
    #[inline]
    fn sin_cos(self) -> (Self, Self) {
        let (s, c) = self.re.sin_cos();
        (self.chain(s, c), self.chain(c, -s))
    }
    #[inline]
    fn tan(self) -> Self {
        let t = self.re.tan();
        self.chain(t, T::one() + t * t)
    }
    #[inline]
    fn asin(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.asin(), || {
            ((T::one() - x) * (T::one() + x)).sqrt().recip()
        })
    }
    #[inline]
    fn acos(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.acos(), || {
            -((T::one() - x) * (T::one() + x)).sqrt().recip()
        })
    }
    #[inline]
    fn atan(self) -> Self {
        let x = self.re;
        self.chain(x.atan(), (T::one() + x * x).recip())
    }
    /// `atan2(y, x)` with `self = y`: `d = (x·dy − y·dx) / (x² + y²)`.
    #[inline]
    fn atan2(self, other: Self) -> Self {
        let (y, x) = (self.re, other.re);
        let eps = if self.eps.is_zero() && other.eps.is_zero() {
            T::zero()
        } else {
            (x * self.eps - y * other.eps) / (x * x + y * y)
        };
        Dual::new(y.atan2(x), eps)
    }
    #[inline]
    fn to_degrees(self) -> Self {
        Dual::new(self.re.to_degrees(), self.eps.to_degrees())
    }
    #[inline]
    fn to_radians(self) -> Self {
        Dual::new(self.re.to_radians(), self.eps.to_radians())
    }

    // ---- hyperbolic ----

    #[inline]
    fn sinh(self) -> Self {
        self.chain(self.re.sinh(), self.re.cosh())
    }
    #[inline]
    fn cosh(self) -> Self {
        self.chain(self.re.cosh(), self.re.sinh())
    }
    #[inline]
    fn tanh(self) -> Self {
        let t = self.re.tanh();
        self.chain(t, (T::one() - t) * (T::one() + t))
    }
    #[inline]
    fn asinh(self) -> Self {
        self.chain(self.re.asinh(), self.re.hypot(T::one()).recip())
    }
    #[inline]
    fn acosh(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.acosh(), || {
            ((x - T::one()) * (x + T::one())).sqrt().recip()
        })
    }
    #[inline]
    fn atanh(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.atanh(), || ((T::one() - x) * (T::one() + x)).recip())
    }
}

//! Dual numbers `re + eps·ε` (`ε² = 0`): forward-mode derivatives at run time.
//!
//! The operator impls live in `dual/ops.rs`, the `num-traits` plumbing
//! (`Num`, casts, constants, `Sum`) in `dual/num.rs`, and the elementary
//! functions with their derivative rules in `dual/float_impl.rs`.

mod float_impl;
mod num;
mod ops;
#[cfg(test)]
mod tests;

use core::cmp::Ordering;
use core::fmt;

use crate::Float;

/// A dual number `re + eps·ε` with `ε² = 0`.
///
/// Evaluating `f(Dual::new(x, ẋ))` yields `Dual::new(f(x), f'(x)·ẋ)`: the
/// value and the directional derivative in one pass. `Dual<T>` implements
/// [`Float`] whenever `T` does, so it nests: `Dual<Dual<f64>>` carries
/// second derivatives, and a generated `_rev::<Dual<f64>>` computes
/// Hessian-vector products.
///
/// Comparisons (`==`, `<`, …) and predicates (`is_nan`, …) look at `re`
/// only, as a comparison has zero derivative. At non-smooth points the
/// crate-wide convention holds: `abs'(0) = 0`, and `max`/`min` pass the
/// first argument's `eps` on ties. Derivatives that are infinite where the
/// input has a zero tangent (`sqrt` at 0, `ln` at 0, `powf` with a constant
/// exponent at a negative base, …) are reported as 0 rather than `0·∞ = NaN`,
/// so constants stay constants.
///
/// ```
/// use ad_core::Dual;
/// use num_traits::Float;
///
/// // d/dx [x·sin(x)] = sin(x) + x·cos(x)
/// let x = Dual::variable(2.0_f64);
/// let y = x * x.sin();
/// assert_eq!(y.re, 2.0 * 2.0_f64.sin());
/// assert!((y.eps - (2.0_f64.sin() + 2.0 * 2.0_f64.cos())).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Dual<T> {
    /// The value (real part).
    pub re: T,
    /// The tangent: the derivative of the value along the seeded direction.
    pub eps: T,
}

impl<T> Dual<T> {
    /// A dual number with value `re` and tangent `eps`.
    ///
    /// ```
    /// let d = ad_core::Dual::new(1.5_f64, -2.0);
    /// assert_eq!((d.re, d.eps), (1.5, -2.0));
    /// ```
    #[inline]
    pub const fn new(re: T, eps: T) -> Self {
        Dual { re, eps }
    }
}

impl<T: Float> Dual<T> {
    /// A constant: tangent 0.
    ///
    /// ```
    /// let c = ad_core::Dual::constant(3.0_f64);
    /// assert_eq!((c.re, c.eps), (3.0, 0.0));
    /// ```
    #[inline]
    pub fn constant(re: T) -> Self {
        Dual::new(re, T::zero())
    }

    /// The independent variable: tangent 1, so `f(Dual::variable(x)).eps`
    /// is `f'(x)`.
    ///
    /// ```
    /// let x = ad_core::Dual::variable(3.0_f64);
    /// let y = x * x;
    /// assert_eq!((y.re, y.eps), (9.0, 6.0));
    /// ```
    #[inline]
    pub fn variable(re: T) -> Self {
        Dual::new(re, T::one())
    }

    /// The result `value` with tangent `eps·derivative` (the chain rule).
    #[inline]
    fn chain(self, value: T, derivative: T) -> Self {
        Dual::new(value, self.eps * derivative)
    }

    /// Like [`chain`](Self::chain), but a zero tangent stays exactly zero
    /// even where `derivative` is infinite or NaN (no `0·∞`).
    #[inline]
    fn chain_guarded(self, value: T, derivative: impl FnOnce() -> T) -> Self {
        Dual::new(value, scale_guarded(self.eps, derivative))
    }
}

/// `tangent·derivative()`, or exactly zero when `tangent` is exactly zero
/// (for nested duals, zero in every component), without evaluating the
/// derivative.
#[inline]
fn scale_guarded<T: Float>(tangent: T, derivative: impl FnOnce() -> T) -> T {
    if tangent.is_zero() {
        T::zero()
    } else {
        tangent * derivative()
    }
}

/// Equality compares values (`re`) only; a comparison has zero derivative.
/// Compare `eps` explicitly when the tangent matters.
///
/// ```
/// use ad_core::Dual;
/// assert_eq!(Dual::new(1.0_f64, 2.0), Dual::new(1.0, 3.0));
/// ```
impl<T: PartialEq> PartialEq for Dual<T> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.re == other.re
    }
}

/// Ordering compares values (`re`) only, consistent with `PartialEq`.
///
/// ```
/// use ad_core::Dual;
/// assert!(Dual::new(1.0_f64, 9.0) < Dual::new(2.0, -9.0));
/// ```
impl<T: PartialOrd> PartialOrd for Dual<T> {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.re.partial_cmp(&other.re)
    }
}

/// Prints `re + epsε` (or `re - |eps|ε`), passing width-free precision
/// through: `format!("{:.2}", d)`. A nested dual's parts are parenthesized.
///
/// ```
/// use ad_core::Dual;
/// assert_eq!(Dual::new(1.5_f64, -2.0).to_string(), "1.5 - 2ε");
/// assert_eq!(format!("{:.1}", Dual::new(1.0_f64, 0.26)), "1.0 + 0.3ε");
/// let nested = Dual::new(Dual::new(1.0_f64, 2.0), Dual::new(3.0, 4.0));
/// assert_eq!(nested.to_string(), "(1 + 2ε) + (3 + 4ε)ε");
/// ```
impl<T: Float + fmt::Display> fmt::Display for Dual<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (sign, eps) = if self.eps < T::zero() {
            ('-', -self.eps)
        } else {
            ('+', self.eps)
        };
        let re = format_part(&self.re, f.precision());
        let eps = format_part(&eps, f.precision());
        write!(f, "{re} {sign} {eps}ε")
    }
}

/// One part of a dual's display, parenthesized when it is itself composite.
fn format_part<T: fmt::Display>(part: &T, precision: Option<usize>) -> String {
    let text = match precision {
        Some(p) => format!("{part:.p$}"),
        None => format!("{part}"),
    };
    if text.contains(' ') {
        format!("({text})")
    } else {
        text
    }
}

//! The convention at non-smooth points, shared by `Dual` and generated code.
//!
//! phidiff picks one derivative where the mathematical one does not exist:
//! `abs'(0) = 0` (and `signum` likewise), `max`/`min` send the whole
//! derivative to their *first* argument on ties, and comparisons have zero
//! derivative. Keeping the rule in one place means forward mode (dual
//! numbers), reverse mode (generated adjoints) and forward-over-reverse all
//! agree bit for bit.

use crate::Float;

/// Partial derivative of `|x|`: `1` for `x > 0`, `-1` for `x < 0`, `0` at
/// `±0`, and NaN for NaN.
#[inline]
pub fn abs_partial<T: Float>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else if x.is_nan() {
        T::nan()
    } else {
        T::zero()
    }
}

/// Whether `a.max(b)` selects `a`: true when `a >= b` or `b` is NaN, so
/// ties go to the first argument (and NaN is ignored, as in `f64::max`).
#[inline]
pub fn max_first<T: Float>(a: T, b: T) -> bool {
    a >= b || b.is_nan()
}

/// Whether `a.min(b)` selects `a`: true when `a <= b` or `b` is NaN, so
/// ties go to the first argument (and NaN is ignored, as in `f64::min`).
#[inline]
pub fn min_first<T: Float>(a: T, b: T) -> bool {
    a <= b || b.is_nan()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abs_partial_is_sign_with_zero_at_zero() {
        assert_eq!(abs_partial(2.5_f64), 1.0);
        assert_eq!(abs_partial(-1e-300_f64), -1.0);
        assert_eq!(abs_partial(0.0_f64), 0.0);
        assert_eq!(abs_partial(-0.0_f64), 0.0);
        assert!(abs_partial(f64::NAN).is_nan());
    }

    #[test]
    fn ties_and_nan_select_like_std() {
        assert!(max_first(1.0_f64, 1.0));
        assert!(min_first(1.0_f64, 1.0));
        assert!(!max_first(1.0_f64, 2.0));
        assert!(!min_first(2.0_f64, 1.0));
        // f64::max ignores a NaN operand; the selection must agree with it.
        assert!(max_first(1.0_f64, f64::NAN));
        assert!(!max_first(f64::NAN, 1.0));
        assert!(min_first(1.0_f64, f64::NAN));
        assert!(!min_first(f64::NAN, 1.0));
    }
}

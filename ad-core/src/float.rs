//! The `Float` bound: the one trait a differentiable function is generic over.

use core::fmt::Debug;
use core::iter::Sum;
use core::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

use num_traits::FloatConst;

/// A floating-point scalar that phidiff can differentiate through.
///
/// Write differentiable functions generic over `T: Float`; the generated
/// `_fwd`/`_rev`/`_grad` functions keep that bound, so one source serves
/// `f32`, `f64` and [`Dual<T>`](crate::Dual) (forward-over-reverse gives
/// Hessian-vector products with no extra code).
///
/// The trait has no methods of its own: it bundles [`num_traits::Float`]
/// (all the elementary functions), [`FloatConst`] (`T::PI()` …), the
/// compound assignments, `Sum` over values and over references (so both
/// `iter().sum()` and `iter().copied().sum()` work on `&[T]`), `Debug`,
/// `Default` and thread-safety. A blanket impl covers every type meeting
/// the bounds.
///
/// ```
/// use ad_core::{Dual, Float};
///
/// fn norm2<T: Float>(x: &[T]) -> T {
///     x.iter().map(|&v| v * v).sum::<T>().sqrt()
/// }
///
/// assert_eq!(norm2(&[3.0_f64, 4.0]), 5.0);
/// assert_eq!(norm2(&[3.0_f32, 4.0]), 5.0);
/// // d/dt |(3 + t, 4)| at t = 0 is 3/5.
/// let d = norm2(&[Dual::variable(3.0), Dual::constant(4.0)]);
/// assert!((d.eps - 0.6_f64).abs() < 1e-15);
/// ```
pub trait Float:
    num_traits::Float
    + FloatConst
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Sum
    + for<'a> Sum<&'a Self>
    + Debug
    + Default
    + Send
    + Sync
    + 'static
{
}

impl<T> Float for T where
    T: num_traits::Float
        + FloatConst
        + AddAssign
        + SubAssign
        + MulAssign
        + DivAssign
        + Sum
        + for<'a> Sum<&'a T>
        + Debug
        + Default
        + Send
        + Sync
        + 'static
{
}

#[cfg(test)]
mod tests {
    use super::Float;
    use crate::Dual;

    fn assert_float<T: Float>() {}

    #[test]
    fn primitive_and_dual_types_are_float() {
        assert_float::<f32>();
        assert_float::<f64>();
        assert_float::<Dual<f32>>();
        assert_float::<Dual<f64>>();
        assert_float::<Dual<Dual<f64>>>();
    }

    fn sum_of_squares<T: Float>(x: &[T]) -> T {
        let by_ref: T = x.iter().sum();
        let by_value: T = x.iter().map(|&v| v * v).sum();
        by_value + by_ref - x.iter().copied().sum()
    }

    #[test]
    fn generic_code_runs_on_every_float() {
        assert_eq!(sum_of_squares(&[1.0_f32, 2.0]), 5.0);
        assert_eq!(sum_of_squares(&[1.0_f64, 2.0]), 5.0);
        let d = sum_of_squares(&[Dual::variable(1.0_f64), Dual::constant(2.0)]);
        assert_eq!((d.re, d.eps), (5.0, 2.0));
    }
}

//! `num-traits` plumbing for dual numbers: identities, parsing, casts,
//! constants and iterator sums. Everything a value-level trait produces is
//! a constant (tangent 0); everything it reads looks at `re`.

use core::iter::{Product, Sum};

use num_traits::{FloatConst, FromPrimitive, Num, NumCast, One, ToPrimitive, Zero};

use super::Dual;
use crate::Float;

impl<T: Float> Zero for Dual<T> {
    #[inline]
    fn zero() -> Self {
        Dual::constant(T::zero())
    }

    /// Exactly zero in value *and* tangent (unlike `==`, which compares
    /// values only).
    #[inline]
    fn is_zero(&self) -> bool {
        self.re.is_zero() && self.eps.is_zero()
    }
}

impl<T: Float> One for Dual<T> {
    #[inline]
    fn one() -> Self {
        Dual::constant(T::one())
    }

    /// Exactly one: value 1 and tangent 0.
    #[inline]
    fn is_one(&self) -> bool {
        self.re.is_one() && self.eps.is_zero()
    }
}

/// Parses the value; the result is a constant.
///
/// ```
/// use ad_core::Dual;
/// use num_traits::Num;
/// let d = Dual::<f64>::from_str_radix("2.5", 10).unwrap();
/// assert_eq!((d.re, d.eps), (2.5, 0.0));
/// ```
impl<T: Float> Num for Dual<T> {
    type FromStrRadixErr = T::FromStrRadixErr;

    fn from_str_radix(text: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        T::from_str_radix(text, radix).map(Dual::constant)
    }
}

/// Conversions read the value (`re`) and drop the tangent.
macro_rules! to_primitive_via_re {
    ($($method:ident -> $target:ty;)*) => {
        impl<T: Float> ToPrimitive for Dual<T> {
            $(
                #[inline]
                fn $method(&self) -> Option<$target> {
                    self.re.$method()
                }
            )*
        }
    };
}

to_primitive_via_re! {
    to_isize -> isize; to_i8 -> i8; to_i16 -> i16; to_i32 -> i32; to_i64 -> i64; to_i128 -> i128;
    to_usize -> usize; to_u8 -> u8; to_u16 -> u16; to_u32 -> u32; to_u64 -> u64; to_u128 -> u128;
    to_f32 -> f32; to_f64 -> f64;
}

/// Casts produce constants.
///
/// ```
/// use ad_core::Dual;
/// let d: Dual<f64> = num_traits::NumCast::from(3_u8).unwrap();
/// assert_eq!((d.re, d.eps), (3.0, 0.0));
/// ```
impl<T: Float> NumCast for Dual<T> {
    #[inline]
    fn from<N: ToPrimitive>(n: N) -> Option<Self> {
        <T as NumCast>::from(n).map(Dual::constant)
    }
}

/// Conversions from primitives produce constants.
macro_rules! from_primitive_via_cast {
    ($($method:ident($source:ty);)*) => {
        impl<T: Float> FromPrimitive for Dual<T> {
            $(
                #[inline]
                fn $method(n: $source) -> Option<Self> {
                    <T as NumCast>::from(n).map(Dual::constant)
                }
            )*
        }
    };
}

from_primitive_via_cast! {
    from_isize(isize); from_i8(i8); from_i16(i16); from_i32(i32); from_i64(i64); from_i128(i128);
    from_usize(usize); from_u8(u8); from_u16(u16); from_u32(u32); from_u64(u64); from_u128(u128);
    from_f32(f32); from_f64(f64);
}

/// Mathematical constants as duals with tangent 0.
macro_rules! constants_from_inner {
    ($($name:ident)*) => {
        impl<T: Float> FloatConst for Dual<T> {
            $(
                #[inline]
                fn $name() -> Self {
                    Dual::constant(T::$name())
                }
            )*
        }
    };
}

constants_from_inner! {
    E FRAC_1_PI FRAC_1_SQRT_2 FRAC_2_PI FRAC_2_SQRT_PI FRAC_PI_2 FRAC_PI_3 FRAC_PI_4 FRAC_PI_6
    FRAC_PI_8 LN_10 LN_2 LOG10_E LOG2_E PI SQRT_2 TAU LOG10_2 LOG2_10
}

impl<T: Float> Sum for Dual<T> {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::zero(), |acc, x| acc + x)
    }
}

impl<'a, T: Float> Sum<&'a Dual<T>> for Dual<T> {
    fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.fold(Self::zero(), |acc, &x| acc + x)
    }
}

impl<T: Float> Product for Dual<T> {
    fn product<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::one(), |acc, x| acc * x)
    }
}

impl<'a, T: Float> Product<&'a Dual<T>> for Dual<T> {
    fn product<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.fold(Self::one(), |acc, &x| acc * x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type D = Dual<f64>;

    #[test]
    fn identities_check_value_and_tangent() {
        assert!(D::zero().is_zero());
        assert!(!D::new(0.0, 1.0).is_zero());
        assert!(D::one().is_one());
        assert!(!D::new(1.0, 1.0).is_one());
        let nested = Dual::new(D::zero(), D::new(0.0, 1.0));
        assert!(!nested.is_zero());
    }

    #[test]
    fn casts_and_parsing_give_constants() {
        let d: D = NumCast::from(7_i32).unwrap();
        assert_eq!((d.re, d.eps), (7.0, 0.0));
        assert_eq!(D::new(2.9, 5.0).to_i32(), Some(2));
        assert_eq!(D::new(2.5, 5.0).to_f64(), Some(2.5));
        assert_eq!(D::from_u64(4).map(|d| d.re), Some(4.0));
        assert!(D::from_str_radix("x", 10).is_err());
        let pi = D::PI();
        assert_eq!((pi.re, pi.eps), (core::f64::consts::PI, 0.0));
    }

    #[test]
    fn sums_and_products_propagate_tangents() {
        let xs = [D::new(2.0, 1.0), D::new(3.0, 0.0), D::new(4.0, 2.0)];
        let s: D = xs.iter().sum();
        assert_eq!((s.re, s.eps), (9.0, 3.0));
        let s: D = xs.iter().copied().sum();
        assert_eq!((s.re, s.eps), (9.0, 3.0));
        // d(abc) = a'bc + ab'c + abc' = 12 + 0 + 12
        let p: D = xs.iter().product();
        assert_eq!((p.re, p.eps), (24.0, 24.0));
    }
}

//! Arithmetic operators on dual numbers, with a dual or a plain `T` on the right.

use core::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

use super::{scale_guarded, Dual};
use crate::Float;

impl<T: Float> Neg for Dual<T> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        Dual::new(-self.re, -self.eps)
    }
}

impl<T: Float> Add for Dual<T> {
    type Output = Self;
    #[inline]
    fn add(self, rhs: Self) -> Self {
        Dual::new(self.re + rhs.re, self.eps + rhs.eps)
    }
}

impl<T: Float> Sub for Dual<T> {
    type Output = Self;
    #[inline]
    fn sub(self, rhs: Self) -> Self {
        Dual::new(self.re - rhs.re, self.eps - rhs.eps)
    }
}

impl<T: Float> Mul for Dual<T> {
    type Output = Self;
    #[inline]
    fn mul(self, rhs: Self) -> Self {
        Dual::new(self.re * rhs.re, self.eps * rhs.re + self.re * rhs.eps)
    }
}

impl<T: Float> Div for Dual<T> {
    type Output = Self;
    /// `(a/b)' = (a' − (a/b)·b') / b`.
    #[inline]
    fn div(self, rhs: Self) -> Self {
        let quotient = self.re / rhs.re;
        Dual::new(quotient, (self.eps - quotient * rhs.eps) / rhs.re)
    }
}

impl<T: Float> Rem for Dual<T> {
    type Output = Self;
    /// `a % b = a − n·b` with the integer `n = trunc(a/b)` locally constant,
    /// so the tangent is `a' − n·b'`.
    #[inline]
    fn rem(self, rhs: Self) -> Self {
        let remainder = self.re % rhs.re;
        // (a − r)/b is n up to rounding; `round` recovers the exact integer.
        let eps = self.eps - scale_guarded(rhs.eps, || ((self.re - remainder) / rhs.re).round());
        Dual::new(remainder, eps)
    }
}

impl<T: Float> Add<T> for Dual<T> {
    type Output = Self;
    #[inline]
    fn add(self, rhs: T) -> Self {
        Dual::new(self.re + rhs, self.eps)
    }
}

impl<T: Float> Sub<T> for Dual<T> {
    type Output = Self;
    #[inline]
    fn sub(self, rhs: T) -> Self {
        Dual::new(self.re - rhs, self.eps)
    }
}

impl<T: Float> Mul<T> for Dual<T> {
    type Output = Self;
    #[inline]
    fn mul(self, rhs: T) -> Self {
        Dual::new(self.re * rhs, self.eps * rhs)
    }
}

impl<T: Float> Div<T> for Dual<T> {
    type Output = Self;
    #[inline]
    fn div(self, rhs: T) -> Self {
        Dual::new(self.re / rhs, self.eps / rhs)
    }
}

impl<T: Float> Rem<T> for Dual<T> {
    type Output = Self;
    #[inline]
    fn rem(self, rhs: T) -> Self {
        Dual::new(self.re % rhs, self.eps)
    }
}

/// `a ∘= b` as `a = a ∘ b`, for a dual and for a plain `T` right-hand side.
macro_rules! assign_via_binary {
    ($($assign_trait:ident $assign_fn:ident => $op:tt;)*) => {$(
        impl<T: Float> $assign_trait for Dual<T> {
            #[inline]
            fn $assign_fn(&mut self, rhs: Self) {
                *self = *self $op rhs;
            }
        }

        impl<T: Float> $assign_trait<T> for Dual<T> {
            #[inline]
            fn $assign_fn(&mut self, rhs: T) {
                *self = *self $op rhs;
            }
        }
    )*};
}

assign_via_binary! {
    AddAssign add_assign => +;
    SubAssign sub_assign => -;
    MulAssign mul_assign => *;
    DivAssign div_assign => /;
    RemAssign rem_assign => %;
}

#[cfg(test)]
mod tests {
    use super::*;

    type D = Dual<f64>;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-14 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn product_and_quotient_rules() {
        let a = D::new(3.0, 0.5);
        let b = D::new(-2.0, 4.0);
        let p = a * b;
        assert_eq!((p.re, p.eps), (-6.0, 0.5 * -2.0 + 3.0 * 4.0));
        let q = a / b;
        assert_eq!(q.re, -1.5);
        assert!(close(q.eps, (0.5 * -2.0 - 3.0 * 4.0) / 4.0));
        let s = a - b;
        assert_eq!((s.re, s.eps), (5.0, -3.5));
        let n = -a;
        assert_eq!((n.re, n.eps), (-3.0, -0.5));
    }

    #[test]
    fn remainder_tangent_subtracts_quotient_times_divisor_tangent() {
        // 7.5 % 2 = 1.5 with n = 3: d(a % b) = da − 3·db.
        let r = D::new(7.5, 1.0) % D::new(2.0, 1.0);
        assert_eq!((r.re, r.eps), (1.5, -2.0));
        let r = D::new(-7.5, 1.0) % D::new(2.0, 1.0);
        assert_eq!((r.re, r.eps), (-1.5, 4.0));
        let r = D::new(7.5, 1.0) % 2.0;
        assert_eq!((r.re, r.eps), (1.5, 1.0));
    }

    #[test]
    fn scalar_right_hand_sides_and_assignments() {
        let mut x = D::new(2.0, 1.0);
        x *= 3.0;
        x += D::new(1.0, 1.0);
        x -= 0.5;
        x /= D::constant(2.0);
        assert_eq!((x.re, x.eps), (3.25, 2.0));
        x %= 2.0;
        assert_eq!((x.re, x.eps), (1.25, 2.0));
    }
}

//! [`Differentiable`]: what a struct used by a differentiated function derives.

use crate::Dual;

/// A value with derivatives of its own type: the shadow (`_rev`) and the tangent (`_fwd`)
/// of a `p: &Params` are a `dp: &mut Params` / `dp: &Params` whose float fields hold the
/// adjoints or tangents and whose other fields are ignored.
///
/// Derive it on your structs with `#[derive(phidiff::Differentiable)]`: float fields
/// (scalars, arrays, `Vec`s, fields of other types deriving it, and `Vec`s and arrays of
/// them) are active, integer and `bool` fields are constants, and
/// `#[differentiable(skip)]` makes any field a constant. The derive also tells
/// `#[differentiate]` the struct's fields.
///
/// The derive is shown in phidiff's guide ("Structs, tuples and methods"); the impls here
/// are its building blocks:
///
/// ```
/// use ad_core::Differentiable;
///
/// let w = vec![[1.0, 2.0], [3.0, 4.0]];
/// assert_eq!(w.zero_like(), vec![[0.0, 0.0]; 2]);
/// ```
#[diagnostic::on_unimplemented(
    message = "phidiff: `{Self}` does not implement `Differentiable`",
    label = "a struct used by a differentiated function derives `Differentiable`",
    note = "add `#[derive(phidiff::Differentiable)]` to the struct `{Self}` (or mark this field `#[differentiable(skip)]` if it holds nothing to differentiate)"
)]
pub trait Differentiable: Sized {
    /// A value of the same shape (the same `Vec` lengths, the same constant fields) whose
    /// float fields are zero: a fresh shadow for `_rev`, a tangent to fill for `_fwd`.
    fn zero_like(&self) -> Self;
}

impl Differentiable for f64 {
    #[inline]
    fn zero_like(&self) -> Self {
        0.0
    }
}

impl Differentiable for f32 {
    #[inline]
    fn zero_like(&self) -> Self {
        0.0
    }
}

impl<T: crate::Float> Differentiable for Dual<T> {
    #[inline]
    fn zero_like(&self) -> Self {
        Dual::constant(T::zero())
    }
}

impl<T: Differentiable> Differentiable for Vec<T> {
    fn zero_like(&self) -> Self {
        self.iter().map(Differentiable::zero_like).collect()
    }
}

impl<T: Differentiable, const N: usize> Differentiable for [T; N] {
    fn zero_like(&self) -> Self {
        core::array::from_fn(|i| self[i].zero_like())
    }
}

impl<T: Differentiable> Differentiable for Box<T> {
    fn zero_like(&self) -> Self {
        Box::new((**self).zero_like())
    }
}

macro_rules! tuples {
    ($(($($t:ident $i:tt),+))*) => {$(
        impl<$($t: Differentiable),+> Differentiable for ($($t,)+) {
            fn zero_like(&self) -> Self {
                ($(self.$i.zero_like(),)+)
            }
        }
    )*};
}

tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
}

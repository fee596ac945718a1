//! Gradient checks for users and for phidiff's own tests.
//!
//! Two independent ways to catch a wrong derivative:
//!
//! - [`gradient`] compares a gradient with [`finite_difference`]s of the
//!   function (needs a step size, so it is accurate to ~1e-9 relative);
//! - [`dot_product`] checks that a forward (Jacobian-vector) and a reverse
//!   (vector-Jacobian) derivative are transposes of each other:
//!   `ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ` for random `ẋ`, `ȳ`. It needs no step size, so it
//!   holds to rounding (~1e-12 relative) and catches almost every adjoint bug.
//!
//! ```
//! use ad_core::check::{gradient, Tolerance};
//!
//! // f(x) = x0² + 3·x0·x1, ∇f = (2·x0 + 3·x1, 3·x0)
//! let f = |x: &[f64]| x[0] * x[0] + 3.0 * x[0] * x[1];
//! let x = [1.5, -0.5];
//! let report = gradient(f, &x, &[1.5, 4.5], Tolerance::default()).unwrap();
//! assert!(report.max_rel_error < 1e-9);
//! assert!(gradient(f, &x, &[1.5, 4.4], Tolerance::default()).is_err());
//! ```

mod dot_product;
mod finite_difference;
mod gradient;

pub use dot_product::{dot_product, DotProductError, DotProductReport, DOT_PRODUCT_SEED};
pub use finite_difference::finite_difference;
pub use gradient::{gradient, GradientError, GradientReport, Tolerance};

use crate::rng::SplitMix64;

/// `n` pseudo-random values uniform in `[-1, 1)`, the same for the same
/// `seed` on every platform (SplitMix64). [`dot_product`] draws its trial
/// vectors with it, so a failing trial can be replayed.
///
/// ```
/// use ad_core::check::random_vector;
/// let v = random_vector(42, 3);
/// assert_eq!(v, random_vector(42, 3));
/// assert!(v.iter().all(|x| (-1.0..=1.0).contains(x)));
/// ```
pub fn random_vector(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.next_symmetric()).collect()
}

#[cfg(test)]
mod tests {
    use super::random_vector;

    #[test]
    fn random_vectors_are_reproducible_and_in_range() {
        let a = random_vector(3, 100);
        assert_eq!(a, random_vector(3, 100));
        assert_ne!(a, random_vector(4, 100));
        assert_eq!(a[..10], random_vector(3, 10)[..]);
        assert!(a.iter().all(|v| (-1.0..=1.0).contains(v)));
    }
}

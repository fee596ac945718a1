//! The dot-product test: forward and reverse derivatives must be transposes.

use core::fmt;

use super::random_vector;

/// Base seed of [`dot_product`]'s trial vectors: trial `t` uses
/// `ẋ = random_vector(DOT_PRODUCT_SEED + 2t, n_in)` and
/// `ȳ = random_vector(DOT_PRODUCT_SEED + 2t + 1, n_out)`.
pub const DOT_PRODUCT_SEED: u64 = 0x5048_4944_4946_4600; // "PHIDIFF\0"

/// What a passing [`dot_product`] check measured.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DotProductReport {
    /// Number of random trials run.
    pub trials: usize,
    /// The largest `|forward − reverse| / scale` over the trials.
    pub max_rel_error: f64,
}

/// A [`dot_product`] trial where `ȳ·(J ẋ)` and `(Jᵀ ȳ)·ẋ` differ.
///
/// ```
/// use ad_core::check::dot_product;
///
/// // J = [[1, 2]], but the reverse derivative forgot the 2.
/// let jvp = |dx: &[f64]| vec![dx[0] + 2.0 * dx[1]];
/// let vjp = |dy: &[f64]| vec![dy[0], dy[0]];
/// let err = dot_product(2, 1, jvp, vjp, 3, 1e-12).unwrap_err();
/// assert_eq!(err.trial, 0);
/// assert!(err.to_string().starts_with("dot-product test failed in trial 0"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DotProductError {
    /// The failing trial (0-based; see [`DOT_PRODUCT_SEED`] to replay it).
    pub trial: usize,
    /// `ȳ·(J ẋ)`, from the forward (`jvp`) derivative.
    pub forward: f64,
    /// `(Jᵀ ȳ)·ẋ`, from the reverse (`vjp`) derivative.
    pub reverse: f64,
    /// `|forward − reverse| / scale` (NaN if either is NaN).
    pub rel_error: f64,
    /// The scale the error is relative to (see [`dot_product`]).
    pub scale: f64,
    /// The `rel_tol` that was exceeded.
    pub rel_tol: f64,
}

impl fmt::Display for DotProductError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dot-product test failed in trial {}: ȳ·(J ẋ) = {:e} (forward) but (Jᵀ ȳ)·ẋ = {:e} \
             (reverse); relative error {:e} > {:e} (scale {:e})",
            self.trial, self.forward, self.reverse, self.rel_error, self.rel_tol, self.scale
        )
    }
}

impl std::error::Error for DotProductError {}

/// Checks that `jvp` (ẋ ↦ J ẋ, length `n_in` → `n_out`) and `vjp`
/// (ȳ ↦ Jᵀ ȳ, `n_out` → `n_in`) are transposes of each other: for `trials`
/// random `ẋ`, `ȳ` with entries in `[-1, 1]` (reproducible, see
/// [`DOT_PRODUCT_SEED`]), `ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ`.
///
/// A trial passes when `|forward − reverse| ≤ rel_tol · scale`, where
/// `scale = max(|forward|, |reverse|, Σₖ|ȳₖ (J ẋ)ₖ|, Σᵢ|(Jᵀ ȳ)ᵢ ẋᵢ|)`: the sums
/// of absolute terms bound the rounding of the two dot products, so a result
/// that cancels to near zero is not held to an impossible relative
/// standard. A consistent pair passes with `rel_tol = 1e-12` in practice.
/// A trial with `scale = 0` passes; NaN fails.
///
/// # Errors
/// [`DotProductError`] for the first failing trial.
///
/// # Panics
/// If `trials == 0`, or `jvp`/`vjp` returns a vector of the wrong length.
///
/// ```
/// use ad_core::check::dot_product;
/// // f(x) = (x0·x1, sin x0) at x = (0.5, 2): J = [[2, 0.5], [cos 0.5, 0]].
/// let (x0, x1) = (0.5_f64, 2.0);
/// let jvp = |dx: &[f64]| vec![x1 * dx[0] + x0 * dx[1], x0.cos() * dx[0]];
/// let vjp = |dy: &[f64]| vec![x1 * dy[0] + x0.cos() * dy[1], x0 * dy[0]];
/// let report = dot_product(2, 2, jvp, vjp, 5, 1e-12).unwrap();
/// assert_eq!(report.trials, 5);
/// ```
pub fn dot_product<J, V>(
    n_in: usize,
    n_out: usize,
    mut jvp: J,
    mut vjp: V,
    trials: usize,
    rel_tol: f64,
) -> Result<DotProductReport, DotProductError>
where
    J: FnMut(&[f64]) -> Vec<f64>,
    V: FnMut(&[f64]) -> Vec<f64>,
{
    assert!(
        trials > 0,
        "phidiff::check::dot_product: `trials` must be at least 1"
    );
    let mut max_rel_error: f64 = 0.0;
    for trial in 0..trials {
        let seed = DOT_PRODUCT_SEED.wrapping_add(2 * trial as u64);
        let x_dot = random_vector(seed, n_in);
        let y_bar = random_vector(seed.wrapping_add(1), n_out);
        let j_x_dot = jvp(&x_dot);
        assert!(
            j_x_dot.len() == n_out,
            "phidiff::check::dot_product: `jvp` returned {} values but n_out is {n_out}",
            j_x_dot.len()
        );
        let jt_y_bar = vjp(&y_bar);
        assert!(
            jt_y_bar.len() == n_in,
            "phidiff::check::dot_product: `vjp` returned {} values but n_in is {n_in}",
            jt_y_bar.len()
        );
        let (forward, forward_terms) = dot_with_abs(&y_bar, &j_x_dot);
        let (reverse, reverse_terms) = dot_with_abs(&jt_y_bar, &x_dot);
        let scale = forward
            .abs()
            .max(reverse.abs())
            .max(forward_terms)
            .max(reverse_terms);
        let difference = (forward - reverse).abs();
        let rel_error = if difference == 0.0 {
            0.0
        } else {
            difference / scale
        };
        let within_tolerance = difference <= rel_tol * scale; // false for NaN
        if !within_tolerance {
            return Err(DotProductError {
                trial,
                forward,
                reverse,
                rel_error,
                scale,
                rel_tol,
            });
        }
        max_rel_error = max_rel_error.max(rel_error);
    }
    Ok(DotProductReport {
        trials,
        max_rel_error,
    })
}

/// `(Σ aᵢbᵢ, Σ |aᵢbᵢ|)`.
fn dot_with_abs(a: &[f64], b: &[f64]) -> (f64, f64) {
    a.iter().zip(b).fold((0.0, 0.0), |(sum, abs_sum), (x, y)| {
        let term = x * y;
        (sum + term, abs_sum + term.abs())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed 3×4 matrix (row-major), J: R⁴ → R³.
    const J: [[f64; 4]; 3] = [
        [1.0, -2.0, 0.5, 3.0],
        [0.0, 4.0, -1.5, 2.0],
        [7.0, 0.25, 1.0, -3.0],
    ];

    fn apply(dx: &[f64]) -> Vec<f64> {
        J.iter()
            .map(|row| row.iter().zip(dx).map(|(a, b)| a * b).sum())
            .collect()
    }

    fn apply_transpose(dy: &[f64]) -> Vec<f64> {
        (0..4)
            .map(|j| (0..3).map(|i| J[i][j] * dy[i]).sum())
            .collect()
    }

    #[test]
    fn accepts_a_matrix_and_its_transpose() {
        let report = dot_product(4, 3, apply, apply_transpose, 10, 1e-14).unwrap();
        assert_eq!(report.trials, 10);
        assert!(report.max_rel_error <= 1e-14);
    }

    #[test]
    fn rejects_a_transpose_with_one_wrong_entry() {
        let wrong = |dy: &[f64]| {
            let mut v = apply_transpose(dy);
            v[2] += 1e-4 * dy[1]; // J[1][2] off by 1e-4
            v
        };
        let err = dot_product(4, 3, apply, wrong, 10, 1e-12).unwrap_err();
        assert!(err.rel_error > 1e-12, "{err}");
        assert!(err.to_string().contains(&format!("trial {}", err.trial)));
    }

    #[test]
    fn rejects_the_untransposed_matrix_of_a_square_map() {
        // A non-symmetric square J used in both directions.
        let jvp = |dx: &[f64]| vec![dx[0] + 2.0 * dx[1], 3.0 * dx[0] - dx[1]];
        let err = dot_product(2, 2, jvp, jvp, 3, 1e-12).unwrap_err();
        assert!(err.forward != err.reverse);
    }

    #[test]
    fn zero_and_nan_maps() {
        let zero_in = |_: &[f64]| vec![0.0; 3];
        let zero_out = |_: &[f64]| vec![0.0; 4];
        assert!(dot_product(4, 3, zero_in, zero_out, 2, 1e-12).is_ok());
        let nan_out = |_: &[f64]| vec![f64::NAN; 4];
        assert!(dot_product(4, 3, apply, nan_out, 1, 1e-12).is_err());
    }

    #[test]
    fn trial_vectors_are_replayable_with_random_vector() {
        let mut seen = Vec::new();
        let _ = dot_product(
            2,
            1,
            |dx| {
                seen.push(dx.to_vec());
                vec![dx[0]]
            },
            |dy| vec![dy[0], 0.0],
            2,
            1e-12,
        );
        assert_eq!(seen[1], random_vector(DOT_PRODUCT_SEED + 2, 2));
    }

    #[test]
    #[should_panic(expected = "`vjp` returned 3 values but n_in is 4")]
    fn panics_on_wrong_length() {
        let _ = dot_product(4, 3, apply, |dy: &[f64]| dy.to_vec(), 1, 1e-12);
    }
}

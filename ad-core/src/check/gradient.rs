//! Checking a gradient against finite differences, component by component.

use core::fmt;

use super::finite_difference;

/// How far a gradient component may be from its finite difference:
/// `|g − fd| ≤ abs + rel·max(|g|, |fd|)`.
///
/// The default (`rel = 1e-6`, `abs = 1e-8`) leaves ample room for the
/// ~1e-10 error of [`finite_difference`] on smooth, well-scaled functions
/// while still rejecting any real derivative bug.
///
/// ```
/// use ad_core::check::Tolerance;
/// let strict = Tolerance { rel: 1e-9, ..Tolerance::default() };
/// assert_eq!((strict.rel, strict.abs), (1e-9, 1e-8));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Allowed error relative to the larger of the two magnitudes.
    pub rel: f64,
    /// Allowed absolute error (matters for components near zero).
    pub abs: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            rel: 1e-6,
            abs: 1e-8,
        }
    }
}

impl Tolerance {
    /// The error allowed between `a` and `b`.
    fn allowed(&self, a: f64, b: f64) -> f64 {
        self.abs + self.rel * a.abs().max(b.abs())
    }
}

/// What a passing [`gradient`] check measured.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GradientReport {
    /// The finite-difference gradient the given one was compared with.
    pub finite_difference: Vec<f64>,
    /// `max_i |gᵢ − fdᵢ|`.
    pub max_abs_error: f64,
    /// `max_i |gᵢ − fdᵢ| / max(|gᵢ|, |fdᵢ|)` (a component where both are 0
    /// counts as 0).
    pub max_rel_error: f64,
}

/// A [`gradient`] check failed; names the worst component (largest error
/// relative to its allowance).
///
/// ```
/// use ad_core::check::{gradient, Tolerance};
///
/// let f = |x: &[f64]| x[0] * x[0] + x[1];
/// let err = gradient(f, &[3.0, 1.0], &[6.0, 2.0], Tolerance::default()).unwrap_err();
/// assert_eq!((err.index, err.n_failing, err.n_components), (1, 1, 2));
/// assert!(err.to_string().starts_with("gradient check failed at component 1"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GradientError {
    /// Index of the worst component.
    pub index: usize,
    /// The given gradient there.
    pub gradient: f64,
    /// The finite difference there.
    pub finite_difference: f64,
    /// `|gradient − finite_difference|` (NaN if either is NaN).
    pub abs_error: f64,
    /// The error the tolerance allowed there.
    pub allowed: f64,
    /// How many components fail in total.
    pub n_failing: usize,
    /// The number of components.
    pub n_components: usize,
}

impl fmt::Display for GradientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gradient check failed at component {}: gradient {:e}, finite difference {:e}, \
             error {:e} > allowed {:e} ({} of {} components fail)",
            self.index,
            self.gradient,
            self.finite_difference,
            self.abs_error,
            self.allowed,
            self.n_failing,
            self.n_components
        )
    }
}

impl std::error::Error for GradientError {}

/// Checks `grad` against the [`finite_difference`] gradient of `f` at `x`,
/// componentwise: `|gᵢ − fdᵢ| ≤ tol.abs + tol.rel·max(|gᵢ|, |fdᵢ|)`.
/// A NaN on either side fails.
///
/// # Errors
/// [`GradientError`] for the component whose error most exceeds its
/// allowance.
///
/// # Panics
/// If `grad.len() != x.len()`.
///
/// ```
/// use ad_core::check::{gradient, Tolerance};
/// let f = |x: &[f64]| (x[0] * x[1]).exp();
/// let x = [0.4_f64, -1.1];
/// let e = (x[0] * x[1]).exp();
/// assert!(gradient(f, &x, &[x[1] * e, x[0] * e], Tolerance::default()).is_ok());
/// let err = gradient(f, &x, &[x[1] * e, 0.0], Tolerance::default()).unwrap_err();
/// assert_eq!(err.index, 1);
/// ```
pub fn gradient<F: FnMut(&[f64]) -> f64>(
    f: F,
    x: &[f64],
    grad: &[f64],
    tol: Tolerance,
) -> Result<GradientReport, GradientError> {
    assert!(
        grad.len() == x.len(),
        "phidiff::check::gradient: `grad` has length {} but `x` has length {}",
        grad.len(),
        x.len()
    );
    let fd = finite_difference(f, x);
    let mut report = GradientReport {
        finite_difference: Vec::new(),
        max_abs_error: 0.0,
        max_rel_error: 0.0,
    };
    let mut worst: Option<(f64, GradientError)> = None;
    let mut n_failing = 0;
    for (index, (&g, &d)) in grad.iter().zip(&fd).enumerate() {
        let abs_error = (g - d).abs();
        let allowed = tol.allowed(g, d);
        let magnitude = g.abs().max(d.abs());
        let rel_error = if abs_error == 0.0 {
            0.0
        } else {
            abs_error / magnitude
        };
        report.max_abs_error = report.max_abs_error.max(abs_error);
        report.max_rel_error = report.max_rel_error.max(rel_error);
        if abs_error <= allowed {
            continue;
        }
        n_failing += 1;
        let excess = if abs_error.is_nan() {
            f64::INFINITY
        } else {
            abs_error / allowed
        };
        let is_worst = match &worst {
            None => true,
            Some((worst_excess, _)) => excess > *worst_excess,
        };
        if is_worst {
            let error = GradientError {
                index,
                gradient: g,
                finite_difference: d,
                abs_error,
                allowed,
                n_failing: 0,
                n_components: x.len(),
            };
            worst = Some((excess, error));
        }
    }
    match worst {
        Some((_, error)) => Err(GradientError { n_failing, ..error }),
        None => {
            report.finite_difference = fd;
            Ok(report)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rosenbrock in 3 variables and its exact gradient.
    fn rosenbrock(x: &[f64]) -> f64 {
        (0..x.len() - 1)
            .map(|i| 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2))
            .sum()
    }

    fn rosenbrock_gradient(x: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; x.len()];
        for i in 0..x.len() - 1 {
            let r = x[i + 1] - x[i] * x[i];
            g[i] += -400.0 * r * x[i] - 2.0 * (1.0 - x[i]);
            g[i + 1] += 200.0 * r;
        }
        g
    }

    #[test]
    fn accepts_the_right_gradient() {
        let x = [-1.2, 1.0, 0.7];
        let report = gradient(
            rosenbrock,
            &x,
            &rosenbrock_gradient(&x),
            Tolerance::default(),
        )
        .expect("exact gradient must pass");
        assert!(report.max_rel_error < 1e-9, "{report:?}");
        assert_eq!(report.finite_difference.len(), 3);
    }

    #[test]
    fn rejects_a_wrong_gradient_naming_the_worst_component() {
        let x = [-1.2, 1.0, 0.7];
        let mut g = rosenbrock_gradient(&x);
        g[1] *= 1.0 + 1e-4;
        g[2] *= 1.0 + 1e-3;
        let err = gradient(rosenbrock, &x, &g, Tolerance::default()).unwrap_err();
        assert_eq!((err.index, err.n_failing, err.n_components), (2, 2, 3));
        assert_eq!(err.gradient, g[2]);
        assert!(err.abs_error > err.allowed);
        let message = err.to_string();
        assert!(message.contains("component 2"), "{message}");
    }

    #[test]
    fn nan_fails_and_tolerance_is_honored() {
        let f = |x: &[f64]| x[0] * x[0];
        assert!(gradient(f, &[1.0], &[f64::NAN], Tolerance::default()).is_err());
        let loose = Tolerance {
            rel: 1e-2,
            abs: 0.0,
        };
        assert!(gradient(f, &[1.0], &[2.01], loose).is_ok());
        let tight = Tolerance {
            rel: 1e-3,
            abs: 0.0,
        };
        assert!(gradient(f, &[1.0], &[2.01], tight).is_err());
    }

    #[test]
    #[should_panic(expected = "`grad` has length 1 but `x` has length 2")]
    fn panics_on_length_mismatch() {
        let _ = gradient(|x| x[0] + x[1], &[1.0, 2.0], &[1.0], Tolerance::default());
    }
}

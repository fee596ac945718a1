//! Derivatives with `ad-core` alone, without the macro: a function generic over
//! `T: Float` evaluated with `Dual` numbers gives directional derivatives, and nested duals
//! give second derivatives. `check::gradient` compares the gradient with finite
//! differences, and `check::dot_product` checks a hand-written adjoint against the dual
//! numbers' forward derivative. Exits non-zero if a check fails.
//!
//! ```sh
//! cargo run -p ad-core --example dual_numbers
//! ```

use ad_core::check::{self, Tolerance};
use ad_core::{Dual, Float};

/// The extended Rosenbrock function, written once for any float type.
fn rosenbrock<T: Float>(x: &[T]) -> T {
    let (hundred, one) = (T::from(100.0).unwrap(), T::one());
    let mut s = T::zero();
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        s += hundred * a * a + (one - x[i]) * (one - x[i]);
    }
    s
}

/// Its gradient written by hand (a reverse sweep), to be checked.
fn rosenbrock_adjoint(x: &[f64], seed: f64) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        g[i] += seed * (-400.0 * x[i] * a - 2.0 * (1.0 - x[i]));
        g[i + 1] += seed * 200.0 * a;
    }
    g
}

/// ∇f·v by one evaluation with dual numbers: inputs `x + ε·v`.
fn directional(x: &[f64], v: &[f64]) -> f64 {
    let xd: Vec<Dual<f64>> = x.iter().zip(v).map(|(&a, &b)| Dual::new(a, b)).collect();
    rosenbrock(&xd).eps
}

fn main() {
    let x = [-1.2, 1.0, 0.5, -0.3];
    let mut failures = Vec::new();

    // The gradient, one dual evaluation per component (forward mode).
    let grad: Vec<f64> = (0..x.len())
        .map(|k| {
            let e: Vec<f64> = (0..x.len())
                .map(|j| if j == k { 1.0 } else { 0.0 })
                .collect();
            directional(&x, &e)
        })
        .collect();
    println!("f(x) = {}, ∇f = {grad:?}", rosenbrock(&x));
    match check::gradient(|x| rosenbrock(x), &x, &grad, Tolerance::default()) {
        Ok(report) => println!(
            "gradient vs finite differences: max rel error {:.1e}",
            report.max_rel_error
        ),
        Err(e) => failures.push(e.to_string()),
    }

    // The hand-written adjoint against the dual numbers: ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ.
    let jvp = |v: &[f64]| vec![directional(&x, v)];
    let vjp = |ybar: &[f64]| rosenbrock_adjoint(&x, ybar[0]);
    match check::dot_product(x.len(), 1, jvp, vjp, 10, 1e-12) {
        Ok(report) => println!(
            "dot-product test: max rel error {:.1e} over {} trials",
            report.max_rel_error, report.trials
        ),
        Err(e) => failures.push(e.to_string()),
    }

    // A second derivative with nested duals: d²/dt² f(x + t·v) = vᵀ H v.
    let v = [1.0, 0.0, 0.0, 0.0];
    let xdd: Vec<Dual<Dual<f64>>> = x
        .iter()
        .zip(&v)
        .map(|(&a, &b)| Dual::new(Dual::new(a, b), Dual::new(b, 0.0)))
        .collect();
    let curvature = rosenbrock(&xdd).eps.eps;
    let want = 1200.0 * x[0] * x[0] - 400.0 * x[1] + 2.0; // H₀₀ of Rosenbrock
    println!("v·H·v = {curvature} (closed form {want})");
    if (curvature - want).abs() > 1e-12 * want.abs() {
        failures.push(format!("vᵀHv = {curvature}, closed form {want}"));
    }

    if !failures.is_empty() {
        for f in &failures {
            eprintln!("dual_numbers: {f}");
        }
        std::process::exit(1);
    }
}

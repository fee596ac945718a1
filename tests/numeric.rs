//! Numeric integration tests of `#[differentiate(forward, reverse)]`.
//!
//! Every differentiated function below is written the way a numerical Rust programmer
//! writes it, and all three generated functions are checked:
//! - `_grad` against central finite differences (`phidiff::check::gradient`) and, where
//!   they exist, published or hand-derived values;
//! - `_fwd` against finite-difference directional derivatives;
//! - `_fwd` against `_rev` with the dot-product identity (`phidiff::check::dot_product`).
//!
//! Tolerances are `common::TOLS` (FD: rel 1e-6, abs 1e-8; dot product: rel 1e-12) unless a
//! case states a looser one and why. The harness is in `tests/common/mod.rs`.

mod common;

mod numeric {
    /// Slices and buffers: zip, enumerate, rev, 2-D indexing, in/out and output slices.
    mod arrays;
    /// Hand-written `_fwd`/`_rev` rules called from differentiated functions.
    mod calls;
    /// Rosenbrock, Himmelblau, Beale, Wood, Speelpenning (published values).
    mod classic;
    /// Branches, data-dependent loops, `match`, `loop`/`break`/`continue`, early `return`.
    mod control_flow;
    /// Derivative paths the others do not reach (filled buffers, per-step scratch buffers,
    /// `iter_mut`, methods on opaque receivers, branches in `while`, triangular loops).
    mod coverage;
    /// Hessian-vector products by forward-over-reverse with `Dual<f64>`.
    mod hessian;
    /// Lorenz-63 with RK4, an explicit heat equation, Lennard-Jones pairs.
    mod simulation;
    /// log-sum-exp, softmax, variance, logistic regression, a Gaussian mixture.
    mod statistics;
}

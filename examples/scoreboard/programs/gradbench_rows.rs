//! The scoreboard's GradBench rows: `llsq` and `ode` as the GradBench tool writes them,
//! against hand-written gradients that stand in for GradBench's C++ `manual` tool.

use super::{Bench, Inputs, Scalar};
use crate::gradbench_hand;
use std::rc::Rc;

/// GradBench's `llsq` (m = 128 coefficients, GradBench's largest n), the GradBench tool's
/// own objective; the hand-written gradient is GradBench's `manual` tool's stand-in.
pub(super) fn llsq_bench(inputs: &Inputs) -> Bench {
    use phidiff_gradbench::evals::llsq;
    let (m, n) = (128, if inputs.quick { 1024 } else { 16392 });
    let x: Vec<f64> = phidiff::check::random_vector(31, m)
        .iter()
        .map(|v| 0.5 + 0.5 * v)
        .collect();
    Scalar {
        title: "GradBench llsq".into(),
        size: format!("m = {m}, n = {n}"),
        key: "llsq".into(),
        x,
        primal: Rc::new(move |x: &[f64]| llsq::llsq(x, n)),
        grad: Box::new(move |x: &[f64], g: &mut [f64]| llsq::llsq_rev(x, g, n, 1.0)),
        hand: Some(Box::new(move |x: &[f64], g: &mut [f64]| {
            gradbench_hand::llsq_grad(x, n, g)
        })),
        echidna: None,
        dual: None,
    }
    .bench()
}

/// GradBench's `ode` (Runge–Kutta steps, the gradient of `y(2)`'s last element), the
/// GradBench tool's own checkpointed solver; the hand-written adjoint keeps every step's
/// starting state, as phidiff's snapshots do at these sizes. As in GradBench, x is uniform
/// in (0, 1), where `y(2)`'s last element, and its gradient, underflow to 0 beyond a few
/// hundred components: the checks before the timing then compare zeros (the derivative is
/// checked where it is not zero by the GradBench tool's tests and `tests/scoreboard_programs.rs`).
pub(super) fn ode_bench(inputs: &Inputs) -> Bench {
    use phidiff_gradbench::evals::ode;
    let (n, s) = if inputs.quick {
        (1000, 10)
    } else {
        (10_000, 100)
    };
    let x: Vec<f64> = phidiff::check::random_vector(32, n)
        .iter()
        .map(|v| 0.5 + 0.5 * v)
        .collect();
    Scalar {
        title: "GradBench ode".into(),
        size: format!("n = {n}, s = {s}"),
        key: "ode".into(),
        x,
        primal: Rc::new(move |x: &[f64]| ode::primal(x, s)[x.len() - 1]),
        grad: Box::new(move |x: &[f64], g: &mut [f64]| {
            let n = x.len();
            let (mut y, mut dy) = (vec![0.0; n], vec![0.0; n]);
            dy[n - 1] = 1.0;
            ode::ode_solve_rev(x, g, &mut y, &mut dy, s);
            y[n - 1]
        }),
        hand: Some(Box::new(move |x: &[f64], g: &mut [f64]| {
            gradbench_hand::ode_grad(x, s, g)
        })),
        echidna: None,
        dual: None,
    }
    .bench()
}

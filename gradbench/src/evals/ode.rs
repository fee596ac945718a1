//! GradBench's `ode` eval (cmpad's `an_ode`): `y' = f(x, y)` with `f₀ = x₀`,
//! `fᵢ = xᵢ yᵢ₋₁`, `y(0) = 0`, solved to `t = 2` by `s` classical Runge–Kutta steps;
//! `primal` is `y(2)` and `gradient` the gradient of its last element with respect to `x`.

use phidiff::differentiate;
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs, Runs};

#[derive(Debug, Deserialize)]
pub struct Input {
    pub x: Vec<f64>,
    pub s: usize,
}

/// Snapshots of the state `y` kept by the reverse sweep of the step loop: every step's
/// state up to this many steps (no step re-run), Revolve's schedule beyond.
const STEP_SNAPSHOTS: usize = 100;

/// Writes `y(2)` into `y` (same length as `x`); the initial contents of `y` are unused.
///
/// One pass over the components per step: component `i` of every stage needs only
/// component `i − 1` of the stage before, so the four stages run together and carry
/// the previous component's values (`y`, and the three intermediate states) in locals,
/// with no stage buffers. The arithmetic is the reference's, term for term. The step loop
/// is checkpointed: memory stays at `STEP_SNAPSHOTS` states however many steps there are.
#[differentiate(forward, reverse)]
pub fn ode_solve(x: &[f64], y: &mut [f64], s: usize) {
    let n = x.len();
    let y = &mut y[..n];
    let h = 2.0 / (s as f64);
    for v in y.iter_mut() {
        *v = 0.0;
    }
    #[checkpoint(revolve(snapshots = STEP_SNAPSHOTS))]
    for _ in 0..s {
        // Component 0: f₀ = x₀ in every stage.
        let (x0, y0) = (x[0], y[0]);
        let mut y_prev = y0;
        let mut t1_prev = y0 + h * x0 / 2.0;
        let mut t2_prev = t1_prev;
        let mut t3_prev = y0 + h * x0;
        y[0] = y0 + h * (x0 + 2.0 * x0 + 2.0 * x0 + x0) / 6.0;
        for i in 1..n {
            let yi = y[i];
            let k1 = x[i] * y_prev;
            let t1 = yi + h * k1 / 2.0;
            let k2 = x[i] * t1_prev;
            let t2 = yi + h * k2 / 2.0;
            let k3 = x[i] * t2_prev;
            let t3 = yi + h * k3;
            let k4 = x[i] * t3_prev;
            y[i] = yi + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0;
            (y_prev, t1_prev, t2_prev, t3_prev) = (yi, t1, t2, t3);
        }
    }
}

/// `y(2)`.
pub fn primal(x: &[f64], s: usize) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    ode_solve(x, &mut y, s);
    y
}

/// The gradient of the last element of `y(2)`: one reverse sweep seeded on it.
pub fn gradient(x: &[f64], s: usize) -> Vec<f64> {
    let n = x.len();
    let mut dx = vec![0.0; n];
    let mut y = vec![0.0; n];
    let mut dy = vec![0.0; n];
    dy[n - 1] = 1.0;
    ode_solve_rev(x, &mut dx, &mut y, &mut dy, s);
    dx
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let parsed: Input = parse_input(input)?;
    if parsed.x.is_empty() || parsed.s == 0 {
        return Err("ode: `x` must not be empty and `s` must be positive".into());
    }
    let runs = Runs::from_input(input);
    match function {
        "primal" => Ok(time_runs(runs, || primal(&parsed.x, parsed.s))),
        "gradient" => Ok(time_runs(runs, || gradient(&parsed.x, parsed.s))),
        _ => Err(super::unknown_function("ode", function)),
    }
}

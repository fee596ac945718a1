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

/// Writes `y(2)` into `y` (same length as `x`); the initial contents of `y` are unused.
#[differentiate(forward, reverse)]
pub fn ode_solve(x: &[f64], y: &mut [f64], s: usize) {
    let n = x.len();
    let tf = 2.0;
    let h = tf / (s as f64);
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];
    let mut y_tmp = vec![0.0; n];
    for i in 0..n {
        y[i] = 0.0;
    }
    for _ in 0..s {
        k1[0] = x[0];
        for i in 1..n {
            k1[i] = x[i] * y[i - 1];
        }
        for i in 0..n {
            y_tmp[i] = y[i] + h * k1[i] / 2.0;
        }
        k2[0] = x[0];
        for i in 1..n {
            k2[i] = x[i] * y_tmp[i - 1];
        }
        for i in 0..n {
            y_tmp[i] = y[i] + h * k2[i] / 2.0;
        }
        k3[0] = x[0];
        for i in 1..n {
            k3[i] = x[i] * y_tmp[i - 1];
        }
        for i in 0..n {
            y_tmp[i] = y[i] + h * k3[i];
        }
        k4[0] = x[0];
        for i in 1..n {
            k4[i] = x[i] * y_tmp[i - 1];
        }
        for i in 0..n {
            y[i] += h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0;
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

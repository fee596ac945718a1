//! GradBench's `llsq` eval (cmpad's `llsq_obj`): the linear least-squares objective
//! `y(x) = ½ Σᵢ (sᵢ − Σⱼ xⱼ tᵢʲ)²` on `n` points `tᵢ = −1 + 2i/(n − 1)` with
//! `sᵢ = sign(tᵢ)`, and its gradient.

use phidiff::differentiate;
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs, Runs};

#[derive(Debug, Deserialize)]
pub struct Input {
    pub x: Vec<f64>,
    pub n: usize,
}

/// The objective for the `m = x.len()` coefficients `x` and `n` sample points. The powers
/// `tᵢʲ` are a running product (no `powi` in the inner loop), as the hand-written one does.
#[differentiate(forward, reverse)]
pub fn llsq(x: &[f64], n: usize) -> f64 {
    let mut sum = 0.0;
    for i in 0..n {
        let ti = -1.0 + (i as f64) * 2.0 / ((n - 1) as f64);
        let mut residual = if ti > 0.0 {
            1.0
        } else if ti < 0.0 {
            -1.0
        } else {
            0.0
        };
        let mut power = 1.0;
        for xj in x {
            residual -= xj * power;
            power *= ti;
        }
        sum += residual * residual;
    }
    sum / 2.0
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let parsed: Input = parse_input(input)?;
    let runs = Runs::from_input(input);
    match function {
        "primal" => Ok(time_runs(runs, || llsq(&parsed.x, parsed.n))),
        "gradient" => Ok(time_runs(runs, || llsq_grad(&parsed.x, parsed.n).1)),
        _ => Err(super::unknown_function("llsq", function)),
    }
}

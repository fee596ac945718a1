//! GradBench's `lse` eval: LogSumExp with the max-shift trick,
//! `lse(x) = a + ln Σᵢ exp(xᵢ − a)` with `a = maxᵢ xᵢ`, and its gradient.

use phidiff::differentiate;
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs, Runs};

#[derive(Debug, Deserialize)]
pub struct Input {
    pub x: Vec<f64>,
}

/// LogSumExp of `x` (not empty), from its primitive parts: a maximum and a sum.
#[differentiate(forward, reverse)]
pub fn logsumexp(x: &[f64]) -> f64 {
    let mut a = x[0];
    for i in 1..x.len() {
        a = a.max(x[i]);
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - a).exp();
    }
    s.ln() + a
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let parsed: Input = parse_input(input)?;
    if parsed.x.is_empty() {
        return Err("lse: `x` is empty".into());
    }
    let runs = Runs::from_input(input);
    match function {
        "primal" => Ok(time_runs(runs, || logsumexp(&parsed.x))),
        "gradient" => Ok(time_runs(runs, || logsumexp_grad(&parsed.x).1)),
        _ => Err(super::unknown_function("lse", function)),
    }
}

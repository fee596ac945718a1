//! GradBench's `hello` eval: `square(x) = x²` and its derivative `double(x) = 2x`.

use phidiff::differentiate;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::time_once;

/// The function of the eval.
#[differentiate(forward, reverse)]
pub fn square(x: f64) -> f64 {
    x * x
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let x: f64 = parse_input(input)?;
    match function {
        "square" => Ok(time_once(|| square(x))),
        "double" => Ok(time_once(|| square_grad(x).1)),
        _ => Err(super::unknown_function("hello", function)),
    }
}

//! GradBench's protocol: one JSON message per line from the eval, one JSON response per
//! line from the tool, each response carrying the message's `id`.
//!
//! | message | response |
//! |---|---|
//! | `start {eval?, config?}` | `{id, tool}` |
//! | `define {module}` | `{id, success, error?}`: `success: false` for a module this tool lacks |
//! | `evaluate {module, function, input}` | `{id, success: true, output, timings}` or `{id, success: false, error}` |
//! | `analysis {of, valid, error?}` | `{id}` |
//! | `end` | none: the tool exits |

use std::panic::{self, AssertUnwindSafe};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::evals;
use crate::runs::Timing;

/// The name this tool gives in its `start` response.
pub const TOOL_NAME: &str = "phidiff";

/// A function's output and the timings of its runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub output: Value,
    pub timings: Vec<Timing>,
}

impl Evaluation {
    pub fn new<T: Serialize>(output: T, timings: Vec<Timing>) -> Evaluation {
        let output = serde_json::to_value(output).expect("outputs are plain JSON data");
        Evaluation { output, timings }
    }
}

/// What to do after a message.
#[derive(Debug, PartialEq)]
pub enum Reply {
    /// Write this line.
    Line(String),
    /// Write nothing and stop (the eval sent `end`).
    Stop,
}

/// Parses an eval's `input` into a module's input type.
pub fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, String> {
    T::deserialize(input).map_err(|e| format!("invalid input: {e}"))
}

/// The response to one line from the eval.
pub fn respond(line: &str) -> Reply {
    let message: Value =
        match serde_json::from_str(line) {
            Ok(message) => message,
            Err(e) => return Reply::Line(
                json!({"id": Value::Null, "success": false, "error": format!("invalid JSON: {e}")})
                    .to_string(),
            ),
        };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let mut response = Map::new();
    response.insert("id".into(), id);
    let field = |name: &str| message.get(name).and_then(Value::as_str).unwrap_or("");
    match field("kind") {
        "start" => {
            response.insert("tool".into(), json!(TOOL_NAME));
        }
        "define" => match define(field("module")) {
            Ok(()) => {
                response.insert("success".into(), json!(true));
            }
            Err(error) => {
                response.insert("success".into(), json!(false));
                response.insert("error".into(), json!(error));
            }
        },
        "evaluate" => {
            let input = message.get("input").unwrap_or(&Value::Null);
            match evaluate(field("module"), field("function"), input) {
                Ok(evaluation) => {
                    response.insert("success".into(), json!(true));
                    response.insert("output".into(), evaluation.output);
                    response.insert("timings".into(), json!(evaluation.timings));
                }
                Err(error) => {
                    response.insert("success".into(), json!(false));
                    response.insert("error".into(), json!(error));
                }
            }
        }
        "end" => return Reply::Stop,
        // `analysis` and anything newer only need the id back.
        _ => {}
    }
    Reply::Line(Value::Object(response).to_string())
}

/// `Ok` if this tool implements `module`.
pub fn define(module: &str) -> Result<(), String> {
    if evals::MODULES.contains(&module) {
        Ok(())
    } else {
        Err(format!(
            "phidiff does not implement module `{module}` (it has {})",
            evals::MODULES.join(", ")
        ))
    }
}

/// Evaluates `module::function` on `input`; a panic (e.g. an input of inconsistent
/// sizes) becomes an error instead of ending the tool.
pub fn evaluate(module: &str, function: &str, input: &Value) -> Result<Evaluation, String> {
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        evals::evaluate(module, function, input)
    }));
    match result {
        Ok(result) => result,
        Err(payload) => {
            let reason = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(format!("`{module}::{function}` panicked: {reason}"))
        }
    }
}

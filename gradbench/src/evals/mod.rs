//! One module per GradBench eval: the eval's function written with `#[differentiate]`,
//! its input type, and `evaluate(function, input)`.
//!
//! The objectives are written with indexed loops and `% 2` as phidiff's supported subset
//! reads them (plain `for i in 0..n`, no `is_multiple_of`, `vec!` for a local buffer
//! since a local array `[0.0; 3]` is outside it, element copies between parts of
//! buffers), hence the lints allowed.
#![allow(
    clippy::needless_range_loop,
    clippy::manual_memcpy,
    clippy::manual_is_multiple_of,
    clippy::useless_vec
)]

use serde_json::Value;

use crate::protocol::Evaluation;

pub mod ba;
pub mod det;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;

/// The modules this tool can `define`.
pub const MODULES: &[&str] = &[
    "hello", "lse", "llsq", "det", "ode", "gmm", "lstm", "ba", "ht",
];

/// Runs `module::function` on the eval's `input`.
pub fn evaluate(module: &str, function: &str, input: &Value) -> Result<Evaluation, String> {
    match module {
        "hello" => hello::evaluate(function, input),
        "lse" => lse::evaluate(function, input),
        "llsq" => llsq::evaluate(function, input),
        "det" => det::evaluate(function, input),
        "ode" => ode::evaluate(function, input),
        "gmm" => gmm::evaluate(function, input),
        "lstm" => lstm::evaluate(function, input),
        "ba" => ba::evaluate(function, input),
        "ht" => ht::evaluate(function, input),
        _ => Err(format!("unknown module `{module}`")),
    }
}

/// The error for a function name a module does not have.
fn unknown_function(module: &str, function: &str) -> String {
    format!("unknown function `{module}::{function}`")
}

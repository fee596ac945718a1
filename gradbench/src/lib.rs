//! A [GradBench](https://github.com/gradbench/gradbench) tool for phidiff: each eval's
//! function is written once with `#[differentiate]` (in `evals`), and its derivative is
//! the generated `_grad`/`_rev`/`_fwd`. `protocol` speaks GradBench's JSON-lines protocol,
//! `runs` times the evaluations.
//!
//! The binary `phidiff-gradbench` reads the eval's messages on stdin and answers on stdout;
//! `gradbench/README.md` says how to run it under GradBench. One exchange, through the
//! library:
//!
//! ```
//! use phidiff_gradbench::protocol::{respond, Reply};
//!
//! // GradBench's `hello` eval: `double` is the derivative of `square`, from `square_grad`.
//! let message = r#"{"id": 7, "kind": "evaluate", "module": "hello", "function": "double", "input": 3.0}"#;
//! let Reply::Line(line) = respond(message) else { panic!("evaluate gets a response") };
//! let response: serde_json::Value = serde_json::from_str(&line).unwrap();
//! assert_eq!((response["id"].as_i64(), response["output"].as_f64()), (Some(7), Some(6.0)));
//! ```

#![warn(rustdoc::broken_intra_doc_links)]

pub mod evals;
pub mod protocol;
pub mod runs;

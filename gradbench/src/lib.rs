//! A [GradBench](https://github.com/gradbench/gradbench) tool for phidiff: each eval's
//! function is written once with `#[differentiate]` (in `evals`), and its derivative is
//! the generated `_grad`/`_rev`/`_fwd`. `protocol` speaks GradBench's JSON-lines protocol,
//! `runs` times the evaluations.

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

pub mod evals;
pub mod protocol;
pub mod runs;

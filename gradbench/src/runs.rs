//! Running a function the number of times an eval asks for, with one `"evaluate"` timing
//! (nanoseconds) per run, as GradBench's `Runs` fields say: at least `min_runs` runs and
//! until the runs together took `min_seconds`.

use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::protocol::Evaluation;

/// One named duration of a response's `timings`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    pub name: String,
    pub nanoseconds: u128,
}

impl Timing {
    pub fn evaluate(nanoseconds: u128) -> Timing {
        Timing {
            name: "evaluate".into(),
            nanoseconds,
        }
    }
}

/// How often to run a function (GradBench's `Runs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Runs {
    pub min_runs: usize,
    pub min_seconds: f64,
}

impl Default for Runs {
    fn default() -> Runs {
        Runs {
            min_runs: 1,
            min_seconds: 0.0,
        }
    }
}

impl Runs {
    /// Reads `min_runs` and `min_seconds` from an input object (older evals send `runs`);
    /// absent fields keep the defaults (one run, no minimum time).
    pub fn from_input(input: &Value) -> Runs {
        let mut runs = Runs::default();
        let count = input
            .get("min_runs")
            .or_else(|| input.get("runs"))
            .and_then(Value::as_u64);
        if let Some(count) = count {
            runs.min_runs = (count as usize).max(1);
        }
        if let Some(seconds) = input.get("min_seconds").and_then(Value::as_f64) {
            runs.min_seconds = seconds.max(0.0);
        }
        runs
    }
}

/// Runs `f` as `runs` asks, timing each run; the output is the last run's result.
pub fn time_runs<T: Serialize>(runs: Runs, f: impl FnMut() -> T) -> Evaluation {
    time_runs_then(runs, f, |output| output)
}

/// [`time_runs`], with the last result turned into the output by `report` (untimed, like
/// the JSON conversion of GradBench's C++ tools).
pub fn time_runs_then<T, U: Serialize>(
    runs: Runs,
    mut f: impl FnMut() -> T,
    report: impl FnOnce(T) -> U,
) -> Evaluation {
    let mut timings = Vec::with_capacity(runs.min_runs);
    let mut total_seconds = 0.0;
    let mut output;
    loop {
        let start = Instant::now();
        output = f();
        let elapsed = start.elapsed();
        timings.push(Timing::evaluate(elapsed.as_nanos()));
        total_seconds += elapsed.as_secs_f64();
        if timings.len() >= runs.min_runs && total_seconds >= runs.min_seconds {
            break;
        }
    }
    Evaluation::new(report(output), timings)
}

/// Runs `f` once (for inputs without `Runs` fields, like `hello`'s numbers).
pub fn time_once<T: Serialize>(f: impl FnMut() -> T) -> Evaluation {
    time_runs(Runs::default(), f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_come_from_the_input_with_defaults() {
        assert_eq!(Runs::from_input(&json!(1.0)), Runs::default());
        let runs = Runs::from_input(&json!({"min_runs": 3, "min_seconds": 0.5}));
        assert_eq!((runs.min_runs, runs.min_seconds), (3, 0.5));
        assert_eq!(Runs::from_input(&json!({"runs": 4})).min_runs, 4);
        assert_eq!(Runs::from_input(&json!({"min_runs": 0})).min_runs, 1);
    }

    #[test]
    fn one_timing_per_run() {
        let mut calls = 0;
        let evaluation = time_runs(
            Runs {
                min_runs: 5,
                min_seconds: 0.0,
            },
            || {
                calls += 1;
                calls
            },
        );
        assert_eq!(calls, 5);
        assert_eq!(evaluation.output, json!(5));
        assert_eq!(evaluation.timings.len(), 5);
        assert!(evaluation.timings.iter().all(|t| t.name == "evaluate"));
    }

    #[test]
    fn runs_until_the_minimum_time_has_passed() {
        let runs = Runs {
            min_runs: 1,
            min_seconds: 0.02,
        };
        let evaluation = time_runs(runs, || {
            std::thread::sleep(std::time::Duration::from_millis(5))
        });
        let total: u128 = evaluation.timings.iter().map(|t| t.nanoseconds).sum();
        assert!(evaluation.timings.len() >= 2);
        assert!(total >= 20_000_000, "ran {total} ns");
    }
}

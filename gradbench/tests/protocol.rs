//! The protocol on recorded transcripts (`tests/data/*.jsonl`, one eval message per
//! line): every response carries its message's id and has the shape GradBench expects
//! for the message's kind and the module's function.

use phidiff_gradbench::protocol::{respond, Reply, TOOL_NAME};
use serde_json::Value;

fn transcript(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The response to each message, or `None` where the tool writes nothing (`end`).
fn responses(messages: &[Value]) -> Vec<Option<Value>> {
    messages
        .iter()
        .map(|message| match respond(&message.to_string()) {
            Reply::Line(line) => Some(serde_json::from_str(&line).unwrap()),
            Reply::Stop => None,
        })
        .collect()
}

fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn integers(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// Checks the fields every response of a kind has; returns the evaluate output.
fn check_common(message: &Value, response: &Value) {
    assert_eq!(response["id"], message["id"], "response id");
    match message["kind"].as_str().unwrap() {
        "start" => assert_eq!(response["tool"], TOOL_NAME),
        "define" => {
            let success = response["success"].as_bool().unwrap();
            assert_eq!(success, response.get("error").is_none(), "{response}");
        }
        "evaluate" => {
            if response["success"].as_bool().unwrap() {
                assert!(response.get("output").is_some(), "{response}");
                assert!(response.get("error").is_none(), "{response}");
                let timings = response["timings"].as_array().unwrap();
                let min_runs = message["input"]
                    .get("min_runs")
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as usize;
                assert!(timings.len() >= min_runs, "{response}");
                for timing in timings {
                    assert_eq!(timing["name"], "evaluate");
                    assert!(timing["nanoseconds"].is_u64());
                }
            } else {
                assert!(response["error"].is_string(), "{response}");
            }
        }
        "analysis" => assert_eq!(response.as_object().unwrap().len(), 1, "{response}"),
        kind => panic!("unexpected kind {kind}"),
    }
}

#[test]
fn hello_session() {
    let messages = transcript("session.jsonl");
    let responses = responses(&messages);
    for (message, response) in messages.iter().zip(&responses) {
        check_common(message, response.as_ref().unwrap());
    }
    let r = |id: usize| responses[id].as_ref().unwrap();
    assert_eq!(r(1)["success"], true);
    // square(1.5) = 2.25 and double(2.25) = 4.5, as the hello eval checks.
    assert_eq!(r(2)["output"].as_f64(), Some(2.25));
    assert_eq!(r(4)["output"].as_f64(), Some(4.5));
    // A module this tool lacks is undefined, not an error of the tool.
    assert_eq!(r(6)["success"], false);
    assert!(r(6)["error"].as_str().unwrap().contains("kmeans"));
    // An unknown function and an input without `x` fail that evaluation only.
    assert_eq!(r(7)["success"], false);
    assert!(r(7)["error"].as_str().unwrap().contains("cube"));
    assert_eq!(r(10)["success"], false);
    // min_runs = 3: three timings.
    assert_eq!(r(8)["timings"].as_array().unwrap().len(), 3);
    assert!(r(8)["output"].is_f64());
    assert_eq!(floats(&r(9)["output"]).len(), 3);
}

#[test]
fn every_module_answers_in_its_output_format() {
    let messages = transcript("modules.jsonl");
    let responses = responses(&messages);
    assert!(responses.last().unwrap().is_none(), "no response to `end`");
    for (message, response) in messages.iter().zip(&responses).take(messages.len() - 1) {
        check_common(message, response.as_ref().unwrap());
        if message["kind"] == "define" {
            assert_eq!(response.as_ref().unwrap()["success"], true);
        }
    }
    let out = |id: usize| {
        let response = responses[id].as_ref().unwrap();
        assert_eq!(response["success"], true, "{response}");
        response["output"].clone()
    };
    // llsq: a number, and a gradient as long as x.
    assert!(out(2).is_f64());
    assert_eq!(floats(&out(3)).len(), 4);
    // det: 2·(12 − 1) − 1·(4 − 0) = 18; the gradient is ell² long.
    assert!((out(5).as_f64().unwrap() - 18.0).abs() < 1e-12);
    assert_eq!(floats(&out(6)).len(), 9);
    // ode: both outputs as long as x.
    assert_eq!(floats(&out(8)).len(), 5);
    assert_eq!(floats(&out(9)).len(), 5);
    // gmm: a number, and the gradient shaped like alpha, mu, q, l.
    assert!(out(11).is_f64());
    let jacobian = out(12);
    assert_eq!(floats(&jacobian["alpha"]).len(), 3);
    for (field, width) in [("mu", 2), ("q", 2), ("l", 1)] {
        let rows = jacobian[field].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{field}");
        assert!(rows.iter().all(|r| floats(r).len() == width), "{field}");
    }
    // lstm: the gradient of main_params (2 × 8) then extra_params (3 × 2).
    assert!(out(14).is_f64());
    assert_eq!(floats(&out(15)).len(), 16 + 6);
    // ba: the first residuals with repeat counts; the first two Jacobian rows and the
    // last entry.
    let objective = out(17);
    assert_eq!(floats(&objective["reproj_error"]["elements"]).len(), 2);
    assert_eq!(objective["reproj_error"]["repeated"], 12);
    assert_eq!(objective["w_err"]["repeated"], 12);
    assert!((objective["w_err"]["element"].as_f64().unwrap() - (1.0 - 0.8 * 0.8)).abs() < 1e-15);
    let jacobian = out(18);
    for field in ["rows", "cols", "vals"] {
        assert_eq!(jacobian[field].as_array().unwrap().len(), 31, "{field}");
    }
    let rows = integers(&jacobian["rows"]);
    assert_eq!(&rows[..3], &[0, 15, 30]);
    // 2p rows of 15 entries, then p rows of 1.
    assert_eq!(rows[30], 31 * 12);
    let cols = integers(&jacobian["cols"]);
    // Camera 0, point 0 (after 3 cameras), weight 0 (after 5 points), then the last weight.
    assert_eq!(
        &cols[..15],
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 33, 34, 35, 48]
    );
    assert_eq!(cols[30], 33 + 15 + 11);
    assert!((jacobian["vals"][30].as_f64().unwrap() + 2.0 * 0.8).abs() < 1e-15);
    assert_eq!(responses[19].as_ref().unwrap()["success"], false);
    // ht: 3 points, so 9 residuals (min_runs = 2: two timings); the Jacobian has a row per
    // residual, with two `us` columns before theta's 26 when there are `us`.
    assert_eq!(floats(&out(21)).len(), 9);
    assert_eq!(
        responses[21].as_ref().unwrap()["timings"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for (id, width) in [(22, 28), (23, 26)] {
        let rows = out(id);
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 9);
        assert!(rows.iter().all(|r| floats(r).len() == width), "ht {id}");
    }
}

#[test]
fn malformed_lines_get_an_error_not_a_crash() {
    let Reply::Line(line) = respond("{not json") else {
        panic!("expected a response")
    };
    let response: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(response["success"], false);
    // Sizes that do not fit fail the evaluation (a panic inside is caught).
    let Reply::Line(line) = respond(
        r#"{"id": 3, "kind": "evaluate", "module": "det", "function": "primal", "input": {"A": [1.0, 2.0], "ell": 2}}"#,
    ) else {
        panic!("expected a response")
    };
    let response: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (response["id"].as_u64(), response["success"].as_bool()),
        (Some(3), Some(false))
    );
}

/// `ba` with fewer than 10 observations: `rows` has only `3p + 1` offsets, and the
/// response still has GradBench's 31 entries per field, the missing offsets being those
/// of empty rows after the last (the final offset, `31p`); `cols` and `vals` are long
/// enough from one observation on.
#[test]
fn ba_with_few_observations_still_reports_31_entries() {
    for p in [1_usize, 2, 9, 10] {
        let message = format!(
            r#"{{"id": 1, "kind": "evaluate", "module": "ba", "function": "jacobian", "input": {{"n": 2, "m": 3, "p": {p}, "cam": [0.1, -0.2, 0.3, 0.5, -0.4, -2.0, 400.0, 12.0, -8.0, 0.02, -0.003], "x": [0.3, 0.2, 4.0], "w": 0.8, "feat": [30.0, -20.0]}}}}"#
        );
        let Reply::Line(line) = respond(&message) else {
            panic!("evaluate gets a response")
        };
        let response: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(response["success"], true, "p = {p}: {response}");
        let jacobian = &response["output"];
        for field in ["rows", "cols", "vals"] {
            assert_eq!(
                jacobian[field].as_array().unwrap().len(),
                31,
                "p = {p}: {field}"
            );
        }
        let rows = integers(&jacobian["rows"]);
        // 2p rows of 15 entries, then p rows of 1, then (p < 10) the final offset repeated.
        let offsets = 3 * p + 1;
        let want: Vec<u64> = (0..30)
            .map(|r| {
                let r = r.min(offsets - 1) as u64;
                let p = p as u64;
                if r <= 2 * p {
                    15 * r
                } else {
                    30 * p + (r - 2 * p)
                }
            })
            .chain([31 * p as u64])
            .collect();
        assert_eq!(rows, want, "p = {p}");
        // The last `cols` entry is the last weight's column: 11 n + 3 m + p − 1.
        assert_eq!(jacobian["cols"][30].as_u64(), Some((22 + 9 + p - 1) as u64));
    }
}

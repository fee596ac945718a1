//! The built binary on a transcript over stdin: one response line per message, in order,
//! with the message's id, and a clean exit at `end`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

#[test]
fn binary_answers_a_transcript_over_stdin() {
    let transcript = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/modules.jsonl"
    ))
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_phidiff-gradbench"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(transcript.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let messages: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let responses: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Everything but the final `end` gets exactly one response.
    assert_eq!(responses.len(), messages.len() - 1);
    for (message, response) in messages.iter().zip(&responses) {
        assert_eq!(response["id"], message["id"]);
    }
    assert_eq!(responses[0]["tool"], "phidiff");
    let evaluations = messages.iter().filter(|m| m["kind"] == "evaluate").count();
    let succeeded = responses
        .iter()
        .filter(|r| r.get("output").is_some())
        .count();
    // All evaluations succeed except the deliberately unknown `ba::hessian`.
    assert_eq!(succeeded, evaluations - 1);
}

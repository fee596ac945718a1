//! The phidiff GradBench tool: reads the eval's messages from stdin, one JSON object per
//! line, and writes one response line each to stdout (see `protocol`).

use std::io::{self, BufRead, Write};

use phidiff_gradbench::protocol::{respond, Reply};

fn main() {
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match respond(&line) {
            Reply::Line(response) => {
                // A closed pipe means the eval has finished: stop quietly.
                if writeln!(stdout, "{response}")
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
            Reply::Stop => break,
        }
    }
}

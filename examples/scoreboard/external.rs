//! JAX and PyTorch, through `benches/peers/jax_torch.py` in the peers' virtual
//! environment; skipped (with the reason in the table's notes) when it does not exist.
//!
//! The script runs as a server (`--serve`) for the whole scoreboard: it sets every
//! program up once (and reports its value and gradient norm), then times a gradient batch
//! whenever a row's interleaved rounds (`timing.rs`) come to it, so that JAX and PyTorch
//! are timed in the same rounds as phidiff and the Rust peers.

use crate::programs::Inputs;
use crate::timing::Timer;
use crate::Peer;
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;

/// One (tool, program) line of the script.
pub struct Result {
    pub peer: Peer,
    pub program: String,
    /// The script's number for this gradient's timer.
    pub timer: usize,
    pub value: f64,
    pub grad_norm: f64,
}

pub struct External {
    pub results: Vec<Result>,
    /// `JAX 0.x, PyTorch 2.x`, or empty.
    pub versions: String,
    /// Why a tool is missing, for the table's notes.
    pub note: String,
    server: Option<Rc<RefCell<Server>>>,
}

/// The running script: commands to its stdin, one answer line each from its stdout.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Reads everything the script writes to stderr (shown if it fails).
    stderr: Option<std::thread::JoinHandle<String>>,
    script: PathBuf,
}

impl Server {
    /// The next line of output; panics, with the script's stderr, at its end.
    fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap_or(0);
        if n == 0 {
            let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
            // The reader of stderr ends with the process.
            let stderr = self.stderr.take().and_then(|t| t.join().ok());
            panic!(
                "{} ended early ({status}):\n{}",
                self.script.display(),
                stderr.unwrap_or_default()
            );
        }
        line
    }

    /// Sends `command` and returns the number `key` of its answer.
    fn ask(&mut self, command: &str, key: &str) -> f64 {
        let stdin = self.stdin.as_mut().expect("the script's stdin is open");
        if let Err(e) = writeln!(stdin, "{command}").and_then(|_| stdin.flush()) {
            panic!("cannot write to {}: {e}", self.script.display());
        }
        let line = self.line();
        let fields = flat_json(&line);
        fields
            .iter()
            .find(|(n, _)| n == key)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "{}: `{command}` answered `{}`, without a number `{key}`",
                    self.script.display(),
                    line.trim()
                )
            })
    }
}

impl Drop for Server {
    /// Closes the script's stdin, which ends it, and waits for it.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The interpreter: `PHIDIFF_PEERS_PYTHON`, else `.venv-peers/bin/python`.
fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PHIDIFF_PEERS_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-peers/bin/python");
    p.exists().then_some(p)
}

/// Starts the script on the manifest of `inputs` and reads its set-up lines.
pub fn start(inputs: &Inputs) -> External {
    let Some(py) = python() else {
        return External {
            results: Vec::new(),
            versions: String::new(),
            note: "JAX and PyTorch: not installed here (`scripts/peers-venv` installs them into `.venv-peers/`).".into(),
            server: None,
        };
    };
    let manifest = inputs.dir.join("manifest.txt");
    let text: String = inputs
        .manifest
        .iter()
        .map(|(key, kind, path, params)| format!("{key} {kind} {} {params}\n", path.display()))
        .collect();
    std::fs::write(&manifest, text)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", manifest.display()));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/peers/jax_torch.py");
    eprintln!(
        "setting up the JAX and PyTorch peers ({}) ...",
        py.display()
    );
    let mut child = Command::new(&py)
        .arg(&script)
        .arg(&manifest)
        .args(["--threads", "1", "--serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", py.display(), script.display()));
    let mut pipe = child.stderr.take().expect("piped stderr");
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    });
    let mut server = Server {
        stdin: child.stdin.take(),
        stdout: BufReader::new(child.stdout.take().expect("piped stdout")),
        child,
        stderr: Some(stderr),
        script: script.clone(),
    };
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let mut versions = Vec::new();
    loop {
        let line = server.line();
        let fields = flat_json(&line);
        let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if get("ready").is_some() {
            break;
        }
        let peer = match get("tool") {
            Some("jax") => Peer::Jax,
            Some("jax-grad") => Peer::JaxGradOnly,
            Some("pytorch") => Peer::PyTorch,
            _ => continue,
        };
        if let Some(why) = get("skipped") {
            notes.push(format!("{}: {why}.", peer.name()));
            continue;
        }
        if let Some(v) = get("version") {
            versions.push(format!("{} {v}", peer.name()));
            continue;
        }
        let num = |k: &str| -> f64 {
            get(k)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{}: no number `{k}` in `{line}`", script.display()))
        };
        results.push(Result {
            peer,
            program: get("program").unwrap_or_default().to_string(),
            timer: num("timer") as usize,
            value: num("value"),
            grad_norm: num("grad_norm"),
        });
    }
    External {
        results,
        versions: versions.join(", "),
        note: notes.join(" "),
        server: Some(Rc::new(RefCell::new(server))),
    }
}

impl External {
    /// The timer of `r`'s gradient, timed by the script.
    pub fn timer(&self, r: &Result) -> Timer {
        let server = self
            .server
            .clone()
            .expect("results come from a running script");
        let k = r.timer;
        Timer::remote(move |calibrate| {
            let mut s = server.borrow_mut();
            if calibrate {
                s.ask(&format!("calibrate {k}"), "batch")
            } else {
                s.ask(&format!("sample {k}"), "secs")
            }
        })
    }
}

/// The fields of a flat JSON object of strings and numbers (what the script prints).
fn flat_json(line: &str) -> Vec<(String, String)> {
    let body = line.trim().trim_start_matches('{').trim_end_matches('}');
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('"') else { break };
        let key = after[..end].to_string();
        let after = after[end + 1..]
            .trim_start()
            .trim_start_matches(':')
            .trim_start();
        let (value, tail) = if let Some(s) = after.strip_prefix('"') {
            let e = s.find('"').unwrap_or(s.len());
            (s[..e].to_string(), &s[(e + 1).min(s.len())..])
        } else {
            let e = after.find(',').unwrap_or(after.len());
            (after[..e].trim().to_string(), &after[e..])
        };
        out.push((key, value));
        rest = tail;
    }
    out
}

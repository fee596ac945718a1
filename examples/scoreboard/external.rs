//! JAX and PyTorch, through `benches/peers/jax_torch.py` in the peers' virtual
//! environment; skipped (with the reason in the table's notes) when it does not exist.

use crate::programs::Inputs;
use crate::Peer;
use std::path::PathBuf;
use std::process::Command;

/// One (tool, program) line of the script.
pub struct Result {
    pub peer: Peer,
    pub program: String,
    pub grad: f64,
    pub value: f64,
    pub grad_norm: f64,
}

pub struct External {
    pub results: Vec<Result>,
    /// `JAX 0.x, PyTorch 2.x`, or empty.
    pub versions: String,
    /// Why a tool is missing, for the table's notes.
    pub note: String,
}

/// The interpreter: `PHIDIFF_PEERS_PYTHON`, else `.venv-peers/bin/python`.
fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PHIDIFF_PEERS_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-peers/bin/python");
    p.exists().then_some(p)
}

pub fn run(inputs: &Inputs, rounds: usize) -> External {
    let Some(py) = python() else {
        return External {
            results: Vec::new(),
            versions: String::new(),
            note: "JAX and PyTorch: not installed here (`scripts/peers-venv` installs them into `.venv-peers/`).".into(),
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
    eprintln!("running the JAX and PyTorch peers ({}) ...", py.display());
    let out = Command::new(&py)
        .arg(&script)
        .arg(&manifest)
        .args(["--reps", &rounds.to_string(), "--threads", "1"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", py.display(), script.display()));
    if !out.status.success() {
        panic!(
            "{} failed ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let mut versions = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let fields = flat_json(line);
        let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let peer = match get("tool") {
            Some("jax") => Peer::Jax,
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
            grad: num("grad"),
            value: num("value"),
            grad_norm: num("grad_norm"),
        });
    }
    External {
        results,
        versions: versions.join(", "),
        note: notes.join(" "),
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

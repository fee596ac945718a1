//! The scoreboard's outputs: the markdown table, the SVG bar chart of the ratios, and the
//! README section between its markers.

use crate::timing::fmt_time;
use crate::{Cell, Peer, Row};
use std::path::Path;

/// The versions of a crate in Cargo.lock (empty when it is not there).
fn locked_version(name: &str) -> String {
    let lock = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"));
    let key = format!("name = \"{name}\"\nversion = \"");
    lock.find(&key)
        .and_then(|at| lock[at + key.len()..].split('"').next())
        .unwrap_or("")
        .to_string()
}

/// The machine line: processor, threads used, compiler and the peers' versions, date.
pub fn machine(python_versions: &str) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown processor".into());
    // Every CPU of the machine (the scoreboard itself may be pinned to one).
    let cores = std::fs::read_to_string("/proc/cpuinfo").map_or(0, |t| {
        t.lines().filter(|l| l.starts_with("processor")).count()
    });
    let threads = match crate::allowed_cpus().as_deref() {
        Some([cpu]) => format!("every tool on one thread, all on CPU {cpu}"),
        _ => "every tool on 1 thread".into(),
    };
    let rustc =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "rustc (unknown version)".into());
    let mut peers = format!(
        "echidna {}, num-dual {}",
        locked_version("echidna"),
        locked_version("num-dual")
    );
    if !python_versions.is_empty() {
        peers.push_str(", ");
        peers.push_str(python_versions);
    }
    format!(
        "{cpu} ({cores} cores, {threads}), {rustc}, {peers}; measured {}",
        today()
    )
}

/// `YYYY-MM-DD` (UTC) from the system clock.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The table: per program, phidiff's primal and gradient times and each peer's gradient
/// time with its ratio to phidiff's.
pub fn markdown(rows: &[Row], machine: &str, note: &str) -> String {
    let mut s = String::new();
    s.push_str(&format!("Measured on {machine}.\n\n"));
    s.push_str("| program | size | primal | phidiff ∇ | ∇ / primal |");
    for p in Peer::ALL {
        s.push_str(&format!(" {} |", p.name()));
    }
    s.push_str("\n|---|---|---:|---:|---:|");
    for _ in Peer::ALL {
        s.push_str("---:|");
    }
    s.push('\n');
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.2}× |",
            r.title,
            r.size,
            fmt_time(r.primal),
            fmt_time(r.grad),
            r.grad / r.primal
        ));
        for c in &r.peers {
            match c {
                Cell::Time {
                    secs,
                    per_direction,
                } => s.push_str(&format!(
                    " {}{} ({:.2}×) |",
                    fmt_time(*secs),
                    if *per_direction { "†" } else { "" },
                    secs / r.grad
                )),
                Cell::Missing(why) => s.push_str(&format!(" {why} |")),
            }
        }
        s.push('\n');
    }
    s.push_str(
        "\nTimes are the fastest of interleaved rounds (a shared machine only slows a round down); a peer's (×) is its gradient time over \
         phidiff's (above 1: phidiff is faster). † = `n ×` the time of one directional \
         derivative (finite differences: two primal runs; num-dual: one dual-number run), \
         since these tools need one run per input. Every tool computes the value \
         along with the gradient, as phidiff's `_rev` returns both (JAX: \
         `jax.value_and_grad`); \
         \"JAX, ∇ only\" is `jax.grad`, which lets XLA skip what only the value needs. BA: \
         the whole sparse Jacobian for every tool. Every peer's result is checked against phidiff's before it is timed. Burgers: \
         each row's hand-written adjoint keeps what phidiff keeps (every state, or the same \
         Revolve schedule's snapshots); JAX and PyTorch keep every step, so they are on the \
         full-tape row. Hand tracking: a synthetic hand (ADBench's model files are not \
         among its inputs), the dense Jacobian by batched forward sweeps for phidiff \
         (`forward(width = 13)`: 13 columns per sweep), one forward sweep per column for \
         echidna (its bytecode tape, recorded once), `jacfwd` for JAX and PyTorch; the \
         hand-written Jacobian re-skins, per column, only the bones that column moves.",
    );
    if !note.is_empty() {
        s.push(' ');
        s.push_str(note);
    }
    s.push('\n');
    s.push_str(&targets(rows));
    s
}

/// The gradient time of `peer` over phidiff's in row `r` (above 1: phidiff is faster),
/// where the peer was measured.
fn ratio(r: &Row, peer: Peer) -> Option<f64> {
    match r.peers.get(peer.index())? {
        Cell::Time { secs, .. } => Some(secs / r.grad),
        Cell::Missing(_) => None,
    }
}

/// One target checked on the rows that measure it: `value` is the row's ratio (`None`:
/// not measured there), `ok` says whether it meets the target and `worse(a, b)` whether
/// `a` is further from it than `b`. The line names the rows
/// that miss it, or the closest row when every row meets it.
fn target_line(
    rows: &[Row],
    what: &str,
    value: impl Fn(&Row) -> Option<f64>,
    ok: impl Fn(f64) -> bool,
    worse: impl Fn(f64, f64) -> bool,
) -> String {
    let measured: Vec<(&Row, f64)> = rows.iter().filter_map(|r| Some((r, value(r)?))).collect();
    let name = |(r, v): &(&Row, f64)| format!("{} ({v:.2}×)", r.title);
    let missed: Vec<String> = measured.iter().filter(|(_, v)| !ok(*v)).map(name).collect();
    let status = if measured.is_empty() {
        "not measured in this run".to_string()
    } else if missed.is_empty() {
        let closest = measured
            .iter()
            .copied()
            .reduce(|a, b| if worse(b.1, a.1) { b } else { a })
            .expect("measured rows");
        format!("**met** on every row measured; closest: {}", name(&closest))
    } else {
        format!(
            "**not met** on {} of {} rows: {}",
            missed.len(),
            measured.len(),
            missed.join(", ")
        )
    };
    format!("- {what}: {status}.\n")
}

/// The targets of issue 8, checked on the table's own numbers. The GMM and LSTM rows are
/// known by their titles (`programs.rs`).
pub fn targets(rows: &[Row]) -> String {
    let lower = |a: f64, b: f64| a < b;
    let hand_limit = 1.0 / 1.3;
    let mut s = String::from("\nTargets (issue 8), read off this table:\n");
    s.push_str(&target_line(
        rows,
        "∇ / primal ≤ 3 on GMM and LSTM",
        |r| (r.title.starts_with("GMM") || r.title.starts_with("LSTM")).then(|| r.grad / r.primal),
        |v| v <= 3.0,
        |a, b| a > b,
    ));
    for (peer, what) in [
        (Peer::Echidna, "faster than echidna"),
        (Peer::Jax, "faster than JAX (`jax.value_and_grad`)"),
        (Peer::JaxGradOnly, "faster than JAX's `jax.grad` alone"),
    ] {
        s.push_str(&target_line(
            rows,
            what,
            |r| ratio(r, peer),
            |v| v > 1.0,
            lower,
        ));
    }
    s.push_str(&target_line(
        rows,
        "within 1.3× of the hand-written adjoint (its time over phidiff's ≥ 0.77)",
        |r| ratio(r, Peer::Hand),
        |v| v >= hand_limit,
        lower,
    ));
    s
}

/// A horizontal bar per (program, peer): the peer's gradient time over phidiff's, on a
/// log scale with 1× marked.
pub fn svg(rows: &[Row]) -> String {
    const COLORS: [&str; 7] = [
        "#4c72b0", "#8c8c8c", "#dd8452", "#55a868", "#c44e52", "#e8a3a5", "#8172b3",
    ];
    let (left, width, bar, gap) = (230.0, 560.0, 9.0, 10.0);
    let (lo, hi) = (-1.0_f64, 4.0_f64); // log10 of the ratio axis: 0.1× … 10⁴×
    let x_of = |ratio: f64| left + (ratio.log10().clamp(lo, hi) - lo) / (hi - lo) * width;
    let group = |r: &Row| {
        r.peers
            .iter()
            .filter(|c| matches!(c, Cell::Time { .. }))
            .count() as f64
            * bar
            + gap
    };
    let top = 60.0;
    let height = top + rows.iter().map(group).sum::<f64>() + 70.0;
    let total_w = left + width + 30.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_w}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"18\" font-size=\"13\">Gradient time of each peer / phidiff's (log scale; right of 1×: phidiff is faster)</text>\n"
    );
    for e in lo as i32..=hi as i32 {
        let x = x_of(10f64.powi(e));
        let label = if e < 0 {
            "0.1×".to_string()
        } else {
            format!("{}×", 10u64.pow(e as u32))
        };
        let stroke = if e == 0 { "#000" } else { "#ddd" };
        s.push_str(&format!(
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"{stroke}\"/>\n<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{label}</text>\n",
            top - 8.0,
            height - 60.0,
            top - 12.0
        ));
    }
    let mut y = top;
    for r in rows {
        let h = group(r);
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            left - 6.0,
            y + (h - gap) / 2.0 + 4.0,
            escape(&r.title)
        ));
        for (i, c) in r.peers.iter().enumerate() {
            if let Cell::Time { secs, .. } = c {
                let x1 = x_of(secs / r.grad);
                let (a, b) = (x_of(1.0).min(x1), x_of(1.0).max(x1));
                s.push_str(&format!(
                    "<rect x=\"{a:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{}\" fill=\"{}\"><title>{}: {:.2}×</title></rect>\n",
                    (b - a).max(1.0),
                    bar - 1.0,
                    COLORS[i],
                    Peer::ALL[i].name(),
                    secs / r.grad
                ));
                y += bar;
            }
        }
        y += gap;
    }
    let mut lx = 30.0;
    for (i, p) in Peer::ALL.iter().enumerate() {
        s.push_str(&format!(
            "<rect x=\"{lx}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
            height - 40.0,
            COLORS[i],
            lx + 14.0,
            height - 31.0,
            p.name()
        ));
        lx += 110.0;
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

const BEGIN: &str = "<!-- scoreboard:begin (written by `cargo run --release --example scoreboard -- --update-readme`) -->";
const END: &str = "<!-- scoreboard:end -->";

/// Replaces the README's text between the scoreboard markers with `table`.
pub fn update_readme(path: &Path, table: &str) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else {
        panic!(
            "{} has no scoreboard markers ({BEGIN} … {END})",
            path.display()
        );
    };
    let new = format!("{}{BEGIN}\n{table}{}", &text[..a], &text[b..]);
    std::fs::write(path, new).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row with phidiff's gradient at 1 s and the given peers' times (others missing).
    fn row(title: &str, primal: f64, peers: &[(Peer, f64)]) -> Row {
        let mut cells = vec![Cell::Missing("—".into()); Peer::ALL.len()];
        for &(p, secs) in peers {
            cells[p.index()] = Cell::Time {
                secs,
                per_direction: false,
            };
        }
        Row {
            title: title.into(),
            size: String::new(),
            primal,
            grad: 1.0,
            peers: cells,
        }
    }

    #[test]
    fn targets_name_the_rows_that_miss_them() {
        let rows = [
            row("GMM d=2", 0.25, &[(Peer::Hand, 0.7), (Peer::Jax, 0.9)]),
            row("LSTM", 0.5, &[(Peer::Hand, 0.8), (Peer::Jax, 3.0)]),
            row("stencil", 0.1, &[(Peer::Hand, 1.0), (Peer::Echidna, 50.0)]),
        ];
        let t = targets(&rows);
        // GMM d=2 is 4× its primal; the stencil (10×) is not held to that target.
        assert!(
            t.contains(
                "- ∇ / primal ≤ 3 on GMM and LSTM: **not met** on 1 of 2 rows: GMM d=2 (4.00×)."
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "- faster than echidna: **met** on every row measured; closest: stencil (50.00×)."
            ),
            "{t}"
        );
        assert!(
            t.contains("(`jax.value_and_grad`): **not met** on 1 of 2 rows: GMM d=2 (0.90×)."),
            "{t}"
        );
        assert!(
            t.contains("`jax.grad` alone: not measured in this run."),
            "{t}"
        );
        // 0.8 ≥ 1/1.3 = 0.769…; 0.7 is not.
        assert!(
            t.contains("**not met** on 1 of 3 rows: GMM d=2 (0.70×)."),
            "{t}"
        );
    }

    #[test]
    fn the_table_ends_with_the_targets() {
        let rows = [row("Rosenbrock", 0.5, &[(Peer::Hand, 1.5)])];
        let md = markdown(&rows, "a machine", "");
        let at = md.find("Targets (issue 8)").expect("a targets paragraph");
        assert!(at > md.find("| Rosenbrock |").expect("the row"));
        assert!(md.ends_with(&targets(&rows)));
        assert!(
            md.contains("on GMM and LSTM: not measured in this run."),
            "{md}"
        );
    }
}

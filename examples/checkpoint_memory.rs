//! Checkpointing in bounded memory (issue 4, items 5 and 7): the reverse-mode gradient of
//! 10⁶ explicit heat steps on 1 100 cells, whose un-checkpointed tape would take 8.2 GiB
//! (998 taped values per step on 10³ cells would be 7.4 GiB, just under 8 GiB), computed
//! with Revolve and 100 snapshots in memory, with a progress line for the reverse sweep.
//!
//! ```text
//! cargo run --release --example checkpoint_memory                  # 10⁶ steps, 1100 cells, 100 snapshots
//! cargo run --release --example checkpoint_memory -- 20000 200 10  # [steps] [cells] [snapshots]
//! ```
//!
//! Prints the schedule's counts from the loop's `phidiff::checkpoint::Report` (checked
//! against Revolve's closed forms), the estimated size of the full tape, the times, and the
//! peak resident memory (`VmHWM` of `/proc/self/status`; "unavailable" off Linux). Exits
//! with failure if the peak resident memory reaches 200 MiB or a check fails:
//! - the gradient's value equals the primal's;
//! - `Σᵢ u0ᵢ · ∂J/∂u0ᵢ = 2J` to 1e-8 relative (J is a quadratic form in `u0`, so this
//!   checks the whole `u0` gradient for free);
//! - `∂J/∂r` equals a central finite difference of the primal in `r` to 1e-5 relative
//!   (two extra primal runs);
//! - when the full tape is small (≤ 32 MiB, i.e. small arguments), the gradient equals the
//!   un-checkpointed one to 1e-12 relative.

#[path = "../benches/support/heat_checkpoint.rs"]
mod heat;
use heat::*;

use phidiff::checkpoint::{record, revolve_forward_steps, revolve_stores, with_progress, Progress};
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

/// The run fails if the peak resident memory reaches this.
const RSS_LIMIT_BYTES: u64 = 200 << 20;
/// Steps of the un-checkpointed gradient whose tape is measured to estimate the full tape.
const PROBE_STEPS: usize = 64;
/// Largest full tape for which the checkpointed gradient is also compared with the
/// un-checkpointed one.
const FULL_COMPARE_BYTES: f64 = 32.0 * (1 << 20) as f64;

struct Args {
    steps: usize,
    cells: usize,
    snapshots: usize,
}

/// `[steps] [cells] [snapshots]`, each an integer (`1000000`, `1_000_000` or `1e6`).
fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        steps: 1_000_000,
        cells: 1_100,
        snapshots: 100,
    };
    let given: Vec<String> = std::env::args().skip(1).collect();
    if given.iter().any(|a| a == "-h" || a == "--help") || given.len() > 3 {
        return Err("usage: checkpoint_memory [steps] [cells] [snapshots]  \
                    (defaults 1e6 1100 100)"
            .into());
    }
    let slots = [&mut args.steps, &mut args.cells, &mut args.snapshots];
    for ((text, slot), name) in given.iter().zip(slots).zip(["steps", "cells", "snapshots"]) {
        *slot = parse_count(text).ok_or_else(|| format!("{name}: `{text}` is not a count"))?;
    }
    if args.cells < 3 {
        return Err("cells: the stencil needs at least 3".into());
    }
    if args.snapshots < 1 {
        return Err("snapshots: at least 1".into());
    }
    Ok(args)
}

fn parse_count(text: &str) -> Option<usize> {
    let text = text.replace('_', "");
    if let Ok(n) = text.parse::<usize>() {
        return Some(n);
    }
    let x: f64 = text.parse().ok()?;
    (x >= 0.0 && x.fract() == 0.0 && x < 1e18).then_some(x as usize)
}

/// Peak resident set size of this process (`VmHWM`), where the OS tells it.
fn peak_rss_bytes() -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut fields = line["VmHWM:".len()..].split_whitespace();
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => Some(value * 1024),
        _ => None,
    }
}

fn fmt_bytes(b: f64) -> String {
    const KIB: f64 = 1024.0;
    if b >= KIB * KIB * KIB {
        format!("{:.2} GiB", b / (KIB * KIB * KIB))
    } else if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else if b >= KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{b:.0} B")
    }
}

/// A progress callback drawing one updating line on stderr, redrawn at each new percent.
fn progress_line() -> impl FnMut(Progress) + 'static {
    let mut started: Option<Instant> = None;
    let mut shown = None;
    move |p: Progress| {
        let since = *started.get_or_insert_with(Instant::now);
        let percent = (100 * p.steps_reversed).checked_div(p.steps).unwrap_or(100);
        if shown == Some(percent) {
            return;
        }
        shown = Some(percent);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r reverse sweep {percent:3} % ({}/{} steps, {} recomputed, {:.1} s)",
            p.steps_reversed,
            p.steps,
            p.recomputed_steps,
            since.elapsed().as_secs_f64()
        );
        if p.steps_reversed == p.steps {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let Args {
        steps,
        cells,
        snapshots,
    } = args;
    let started = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    let u0 = heat_input(cells);

    println!(
        "heat equation (FTCS, r = {R}): {cells} cells, {steps} steps; \
         gradient by Revolve with {snapshots} snapshots in memory"
    );

    // The full tape, estimated from the un-checkpointed gradient's tape over a few steps.
    let probe = steps.clamp(1, PROBE_STEPS);
    let meter = phidiff::TapeMeter::start();
    let mut g_probe = vec![0.0; cells];
    std::hint::black_box(heat_full_rev(&u0, &mut g_probe, R, probe, 1.0));
    let tape_per_step = meter.bytes() as f64 / probe as f64;
    let full_tape = tape_per_step * steps as f64;
    let state_bytes = (cells * std::mem::size_of::<f64>()) as f64;

    // Primal.
    let t = Instant::now();
    let j = heat_mem(&u0, R, steps, snapshots);
    let primal_s = t.elapsed().as_secs_f64();

    // Gradient, with the reverse sweep's progress on stderr.
    eprintln!(" forward sweep: {steps} steps, storing snapshots...");
    let t = Instant::now();
    let ((j_grad, (g, r_bar)), reports) =
        record(|| with_progress(progress_line(), || heat_mem_grad(&u0, R, steps, snapshots)));
    let grad_s = t.elapsed().as_secs_f64();

    println!();
    println!("steps                     {steps}");
    println!("snapshots                 {snapshots}");
    match reports.as_slice() {
        [report] => {
            let stats = report.stats;
            let formula = revolve_forward_steps(steps, snapshots);
            let stores = revolve_stores(steps, snapshots);
            println!(
                "forward steps             {} ({} in the forward sweep + {} recomputed; \
                 Revolve's formula: {formula})",
                stats.forward_steps,
                stats.forward_steps - stats.recomputed_steps,
                stats.recomputed_steps,
            );
            println!(
                "reversed steps            {} (each step reversed once: its adjoint from the restored state)",
                stats.taped_steps
            );
            println!(
                "snapshots stored/restored {}/{} (Revolve's formula: {stores} stores), \
                 at most {} held at once",
                stats.stores, stats.restores, stats.max_live_snapshots
            );
            println!(
                "snapshot memory (peak)    {} ({} per snapshot)",
                fmt_bytes(report.peak_snapshot_bytes as f64),
                fmt_bytes(
                    report.peak_snapshot_bytes as f64 / stats.max_live_snapshots.max(1) as f64
                ),
            );
            if (report.scheme, report.storage) != ("revolve", "memory") {
                failures.push(format!(
                    "the loop reported scheme {} with storage {}, not revolve in memory",
                    report.scheme, report.storage
                ));
            }
            if stats.steps != steps {
                failures.push(format!(
                    "the report counts {} steps, not {steps}",
                    stats.steps
                ));
            }
            if stats.forward_steps != formula {
                failures.push(format!(
                    "{} forward steps, Revolve's formula gives {formula}",
                    stats.forward_steps
                ));
            }
            if stats.max_live_snapshots > snapshots {
                failures.push(format!(
                    "{} snapshots held at once, more than {snapshots}",
                    stats.max_live_snapshots
                ));
            }
        }
        _ => failures.push(format!(
            "expected the report of one checkpointed loop, got {} \
             (is `#[checkpoint(..)]` on the loop?)",
            reports.len()
        )),
    }
    println!(
        "full tape (estimated)     {} = {} per step × {steps} steps \
         (tape of the un-checkpointed gradient measured over {probe} steps); \
         state alone: {} × {steps} = {}",
        fmt_bytes(full_tape),
        fmt_bytes(tape_per_step),
        fmt_bytes(state_bytes),
        fmt_bytes(state_bytes * steps as f64),
    );
    println!("primal                    {primal_s:.2} s");
    println!(
        "gradient                  {grad_s:.2} s ({:.2}× the primal)",
        grad_s / primal_s
    );

    // Gradient checks.
    let value_diff = (j_grad - j).abs() / j.abs();
    if value_diff > 1e-12 {
        failures.push(format!("gradient value {j_grad:e} vs primal {j:e}"));
    }
    let euler = euler_residual(&u0, &g, j_grad);
    println!("check Σ u0ᵢ ∂J/∂u0ᵢ = 2J  relative residual {euler:.1e} (tolerance 1e-8)");
    if euler.is_nan() || euler > 1e-8 {
        failures.push(format!(
            "Euler check Σ u0ᵢ gᵢ = 2J: relative residual {euler:e}"
        ));
    }
    let h = 1e-6 * R;
    let fd = (heat_mem(&u0, R + h, steps, snapshots) - heat_mem(&u0, R - h, steps, snapshots))
        / (2.0 * h);
    let fd_diff = (r_bar - fd).abs() / fd.abs().max(f64::MIN_POSITIVE);
    println!(
        "check ∂J/∂r = {r_bar:.9e} vs central difference {fd:.9e}: \
         relative difference {fd_diff:.1e} (tolerance 1e-5)"
    );
    if fd_diff.is_nan() || fd_diff > 1e-5 {
        failures.push(format!("∂J/∂r {r_bar:e} vs central difference {fd:e}"));
    }
    if full_tape <= FULL_COMPARE_BYTES {
        let (j_full, (g_full, r_full)) = heat_full_grad(&u0, R, steps);
        let diff = max_rel_diff(&g, &g_full)
            .max((r_bar - r_full).abs() / r_full.abs().max(f64::MIN_POSITIVE))
            .max((j_grad - j_full).abs() / j_full.abs());
        println!("check against the un-checkpointed gradient: relative difference {diff:.1e} (tolerance 1e-12)");
        if diff.is_nan() || diff > 1e-12 {
            failures.push(format!(
                "checkpointed vs full-tape gradient differ by {diff:e}"
            ));
        }
    }

    match peak_rss_bytes() {
        Some(peak) => {
            println!(
                "peak resident memory      {} (limit {})",
                fmt_bytes(peak as f64),
                fmt_bytes(RSS_LIMIT_BYTES as f64)
            );
            if peak >= RSS_LIMIT_BYTES {
                failures.push(format!(
                    "peak resident memory {} reached the {} limit: memory is not bounded",
                    fmt_bytes(peak as f64),
                    fmt_bytes(RSS_LIMIT_BYTES as f64)
                ));
            }
        }
        None => println!("peak resident memory      unavailable (VmHWM is read on Linux only)"),
    }
    eprintln!("total {:.1} s", started.elapsed().as_secs_f64());

    if failures.is_empty() {
        println!("OK");
        ExitCode::SUCCESS
    } else {
        for failure in &failures {
            eprintln!("FAILED: {failure}");
        }
        ExitCode::FAILURE
    }
}

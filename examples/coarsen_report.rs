//! Coarsening report for `benches/coarsening.rs`: the gradient of each benchmark program
//! compiled by default (coarsened) against `coarsen = off`, in ONE process.
//!
//! ```text
//! cargo run --release --example coarsen_report
//! ```
//!
//! Every instance is first verified (coarse and fine gradients agree to 1e-10 relative,
//! values equal the primal), then timed by interleaved repetitions: each repetition times
//! every variant of every instance once, as a batch of calls sized to ~20 ms, and the table
//! shows the median over the repetitions. "Gradient" is one `_rev` call (seed 1) into
//! preallocated shadows that are not re-zeroed. Tape bytes are what `phidiff::TapeMeter`
//! measures during one `_rev` call: the most bytes its tapes hold at once (capacity, so a
//! growable tape's doubling shows; a callee's tapes count once, not once per call).

#[path = "../benches/support/coarsening.rs"]
mod programs;
use programs::*;

use std::hint::black_box;
use std::time::{Duration, Instant};

const REPS: usize = 15;
const BATCH_TARGET: Duration = Duration::from_millis(20);

/// One timed closure: a batch of `batch` calls per repetition.
struct Timer {
    batch: usize,
    samples: Vec<f64>,
}

impl Timer {
    fn calibrate(run: &mut Run) -> Self {
        black_box(run());
        let t = Instant::now();
        black_box(run());
        let one = t.elapsed().max(Duration::from_nanos(1));
        let batch = ((BATCH_TARGET.as_secs_f64() / one.as_secs_f64()) as usize).clamp(1, 1_000_000);
        Timer {
            batch,
            samples: Vec::new(),
        }
    }

    fn sample(&mut self, run: &mut Run) {
        let t = Instant::now();
        for _ in 0..self.batch {
            black_box(run());
        }
        self.samples
            .push(t.elapsed().as_secs_f64() / self.batch as f64);
    }

    fn median(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        s[s.len() / 2]
    }

    /// (max − min) / median over the repetitions.
    fn spread(&self) -> f64 {
        let lo = self.samples.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = self.samples.iter().cloned().fold(0.0, f64::max);
        (hi - lo) / self.median()
    }
}

/// An instance with its timers: `[primal, coarse, fine]`.
struct Row {
    instance: Instance,
    timers: [Timer; 3],
    tape_bytes: [usize; 2],
}

/// The instance's closures in timer order.
fn runs(instance: &mut Instance) -> [&mut Run; 3] {
    let [coarse, fine] = &mut instance.rev;
    [&mut instance.primal, coarse, fine]
}

fn fmt_time(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn fmt_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / (1 << 10) as f64)
    } else {
        format!("{b} B")
    }
}

fn main() {
    let started = Instant::now();
    eprintln!("verifying: coarse vs fine gradients (1e-10 rel), values vs primal (1e-12 rel)...");
    let mut rows: Vec<Row> = instances()
        .into_iter()
        .map(|mut instance| {
            verify(&mut instance);
            let tape_bytes = [0, 1].map(|mode| {
                let meter = phidiff::TapeMeter::start();
                black_box((instance.rev[mode])());
                meter.bytes()
            });
            let timers = runs(&mut instance).map(Timer::calibrate);
            Row {
                instance,
                timers,
                tape_bytes,
            }
        })
        .collect();

    eprintln!(
        "timing: {REPS} interleaved repetitions, batches of ~{} ms...",
        BATCH_TARGET.as_millis()
    );
    for _ in 0..REPS {
        for row in &mut rows {
            for (timer, run) in row.timers.iter_mut().zip(runs(&mut row.instance)) {
                timer.sample(run);
            }
        }
    }

    println!();
    println!(
        "| program | size | primal | gradient coarse | gradient off | speedup (off/coarse) \
         | gradient/primal coarse | gradient/primal off | tape coarse | tape off | tape ratio (off/coarse) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut log_speedup = 0.0;
    let (mut log_tape, mut taped, mut sum_coarse, mut sum_off) = (0.0, 0, 0, 0);
    for row in &rows {
        let [p, c, f] = [0, 1, 2].map(|v| row.timers[v].median());
        let [tc, tf] = row.tape_bytes;
        let tape_ratio = if tc == 0 {
            "—".to_string()
        } else {
            format!("{:.2}×", tf as f64 / tc as f64)
        };
        log_speedup += (f / c).ln();
        sum_coarse += tc;
        sum_off += tf;
        if tc > 0 {
            log_tape += (tf as f64 / tc as f64).ln();
            taped += 1;
        }
        println!(
            "| {} | {} | {} | {} | {} | {:.2}× | {:.2}× | {:.2}× | {} | {} | {} |",
            row.instance.program,
            row.instance.size,
            fmt_time(p),
            fmt_time(c),
            fmt_time(f),
            f / c,
            c / p,
            f / p,
            fmt_bytes(tc),
            fmt_bytes(tf),
            tape_ratio,
        );
    }
    println!();
    println!(
        "geometric mean speedup (off/coarse) over {} instances: {:.2}×",
        rows.len(),
        (log_speedup / rows.len() as f64).exp()
    );
    println!(
        "tape bytes (off/coarse): geometric mean {:.1}× over the {taped} instances with a \
         coarse tape (the others keep none); all instances together {} vs {} ({:.1}×)",
        (log_tape / taped.max(1) as f64).exp(),
        fmt_bytes(sum_off),
        fmt_bytes(sum_coarse),
        sum_off as f64 / sum_coarse.max(1) as f64,
    );
    println!("noise, (max−min)/median over the {REPS} repetitions (primal, coarse, off):");
    for row in &rows {
        let [p, c, f] = [0, 1, 2].map(|v| 100.0 * row.timers[v].spread());
        println!(
            "  {} {}: {p:.0}%, {c:.0}%, {f:.0}%",
            row.instance.program, row.instance.size
        );
    }
    eprintln!("total {:.1} s", started.elapsed().as_secs_f64());
}

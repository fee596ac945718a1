//! Checkpointing overhead report (issue 4, item 6): the gradient of 10 000 explicit time
//! steps of two problems, each loop reversed by Revolve with 10 … 10 000 snapshots in
//! memory and on disk, against the primal and against the un-checkpointed (full-tape)
//! gradient, in ONE process; per problem, a Markdown table on stdout and an SVG plot of
//! gradient/primal over the number of snapshots.
//!
//! - *heat*: the linear FTCS heat step on 200 cells (`benches/support/heat_checkpoint.rs`).
//!   Its primal is a three-point stencil LLVM vectorizes, about a third of a nanosecond
//!   per cell, while the adjoint loop runs scalar (its `r̄` sum is a sequential floating-
//!   point reduction), so the gradient costs many primals whatever the checkpointing.
//! - *burgers*: viscous Burgers on 200 cells (`benches/support/burgers_checkpoint.rs`),
//!   nonlinear and upwinded by the sign of `uᵢ`, a primal of the cost of the adjoint's
//!   own arithmetic.
//!
//! ```text
//! cargo run --release --example checkpoint_report            # plots to target/checkpoint_overhead_{heat,burgers}.svg
//! cargo run --release --example checkpoint_report -- plots   # plots into ./plots
//! ```
//!
//! Every variant is first verified: its value equals the primal's and its gradient equals
//! the full-tape gradient to 1e-12 relative, and the loop's `Report` counts the forward
//! (plain) steps of Revolve's closed form. Then it is timed by interleaved repetitions:
//! each repetition times every variant once, as a batch of calls sized to ~20 ms, and the
//! table shows the median over the repetitions. "Gradient" is one `_grad` call (value and
//! the full gradient in fresh vectors). A variant that has spent 3 s in its samples stops
//! after 3 repetitions (disk snapshots can be slow: they go to files under the temporary
//! directory, `TMPDIR`), so the whole run takes about a minute or two.
//!
//! Theory: a plain step costs one primal step and a taped step with its adjoint about
//! three, so Revolve with `s` snapshots costs `(F(n, s) + 3n) / n` primals, where
//! `F(n, s) = revolve_forward_steps(n, s)` is the number of plain steps, forward sweep
//! included. The column "full tape + F/n" predicts the same from this machine's
//! measured full-tape gradient instead of the 3× assumption (the taped sweep and the
//! adjoint sweep cost what they cost without checkpointing, plus `F` plain steps). Both
//! bodies here need nothing taped once the step's starting state is restored, so each
//! reversed step is its adjoint alone, without the taped re-run the theory counts. The
//! issue's target is ≤ 5× the primal with 100 snapshots for 10 000 steps.

#[path = "../benches/support/burgers_checkpoint.rs"]
mod burgers;
#[path = "../benches/support/heat_checkpoint.rs"]
mod heat;
use heat::max_rel_diff;

use phidiff::checkpoint::{record, revolve_forward_steps};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const STEPS: usize = 10_000;
const CELLS: usize = 200;
const SNAPSHOTS: [usize; 8] = [10, 20, 50, 100, 200, 500, 1000, 10_000];
const REPS: usize = 21;
/// A variant that has spent this long in its samples stops at `MIN_REPS` (slow disk).
const VARIANT_BUDGET: Duration = Duration::from_secs(3);
const MIN_REPS: usize = 3;
const BATCH_TARGET: Duration = Duration::from_millis(20);
const TARGET_SNAPSHOTS: usize = 100;
const TARGET_RATIO: f64 = 5.0;
const DEFAULT_DIR: &str = "target";

/// One timed variant: a closure run `batch` times per repetition, for `REPS` repetitions
/// or, once it has spent `VARIANT_BUDGET`, for `MIN_REPS`.
struct Timer<'a> {
    run: Box<dyn FnMut() + 'a>,
    batch: usize,
    samples: Vec<f64>,
    spent: Duration,
}

impl<'a> Timer<'a> {
    /// Calibrates the batch on a warm-up call and a timed one.
    fn new(mut run: impl FnMut() + 'a) -> Self {
        run();
        let t = Instant::now();
        run();
        Timer::with_estimate(run, t.elapsed())
    }

    /// Calibrates the batch on `one`, the time of an earlier (warm-up) call.
    fn with_estimate(run: impl FnMut() + 'a, one: Duration) -> Self {
        let one = one.max(Duration::from_nanos(1));
        Timer {
            run: Box::new(run),
            batch: ((BATCH_TARGET.as_secs_f64() / one.as_secs_f64()) as usize).clamp(1, 1_000_000),
            samples: Vec::new(),
            spent: Duration::ZERO,
        }
    }

    /// Takes one sample unless this variant is done.
    fn sample(&mut self) {
        let done = self.samples.len() >= REPS
            || (self.samples.len() >= MIN_REPS && self.spent >= VARIANT_BUDGET);
        if done {
            return;
        }
        let t = Instant::now();
        for _ in 0..self.batch {
            (self.run)();
        }
        let elapsed = t.elapsed();
        self.spent += elapsed;
        self.samples.push(elapsed.as_secs_f64() / self.batch as f64);
    }

    fn median(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        s[s.len() / 2]
    }

    /// (max − min) / median over the repetitions, and their number.
    fn noise(&self) -> String {
        let lo = self.samples.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = self.samples.iter().cloned().fold(0.0, f64::max);
        format!(
            "{:.0}% [{}]",
            100.0 * (hi - lo) / self.median(),
            self.samples.len()
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Storage {
    Memory,
    Disk,
}

const STORAGES: [Storage; 2] = [Storage::Memory, Storage::Disk];

impl Storage {
    fn name(self) -> &'static str {
        match self {
            Storage::Memory => "memory",
            Storage::Disk => "disk",
        }
    }
}

/// A gradient as one vector: the buffer's, then the scalar parameter's.
fn flat((j, (mut g, scalar)): (f64, (Vec<f64>, f64))) -> (f64, Vec<f64>) {
    g.push(scalar);
    (j, g)
}

/// A checkpointed gradient: storage, input, snapshots → (value, flat gradient).
type CheckpointedGrad = fn(Storage, &[f64], usize) -> (f64, Vec<f64>);
/// A residual of a gradient: input, gradient, value → residual.
type Residual = fn(&[f64], &[f64], f64) -> f64;

/// One problem of the report.
struct Problem {
    /// File-name stem.
    name: &'static str,
    /// Table heading and plot title.
    title: String,
    input: Vec<f64>,
    primal: fn(&[f64]) -> f64,
    full: fn(&[f64]) -> (f64, Vec<f64>),
    checkpointed: CheckpointedGrad,
    /// An independent check of the full-tape gradient (a residual, ≤ 1e-10), if any.
    check: Option<Residual>,
}

fn problems() -> [Problem; 2] {
    [
        Problem {
            name: "heat",
            title: format!("heat FTCS, {CELLS} cells, {STEPS} steps, r = {}", heat::R),
            input: heat::heat_input(CELLS),
            primal: |u0| heat::heat_full(u0, heat::R, STEPS),
            full: |u0| flat(heat::heat_full_grad(u0, heat::R, STEPS)),
            checkpointed: |storage, u0, s| {
                flat(match storage {
                    Storage::Memory => heat::heat_mem_grad(u0, heat::R, STEPS, s),
                    Storage::Disk => heat::heat_disk_grad(u0, heat::R, STEPS, s),
                })
            },
            // Euler's identity for the quadratic form J(u0): Σ u0ᵢ ∂J/∂u0ᵢ = 2J.
            check: Some(|u0, g, j| heat::euler_residual(u0, &g[..u0.len()], j)),
        },
        Problem {
            name: "burgers",
            title: format!(
                "viscous Burgers, {CELLS} cells, {STEPS} steps, ν = {}",
                burgers::NU
            ),
            input: burgers::burgers_input(CELLS),
            primal: |u0| burgers::burgers_full(u0, burgers::NU, STEPS),
            full: |u0| flat(burgers::burgers_full_grad(u0, burgers::NU, STEPS)),
            checkpointed: |storage, u0, s| {
                flat(match storage {
                    Storage::Memory => burgers::burgers_mem_grad(u0, burgers::NU, STEPS, s),
                    Storage::Disk => burgers::burgers_disk_grad(u0, burgers::NU, STEPS, s),
                })
            },
            check: None,
        },
    ]
}

/// The theoretical cost of a Revolve gradient in primals: `(F(n, s) + 3n) / n`.
fn theory(steps: usize, snapshots: usize) -> f64 {
    (revolve_forward_steps(steps, snapshots) + 3 * steps) as f64 / steps as f64
}

fn fmt_time(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// One row of the plot: the number of snapshots and gradient/primal per storage.
struct Point {
    snapshots: usize,
    memory: f64,
    disk: f64,
}

fn main() -> ExitCode {
    let given: Vec<String> = std::env::args().skip(1).collect();
    if given.len() > 1 || given.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: checkpoint_report [plot-directory]  (default {DEFAULT_DIR})");
        return ExitCode::FAILURE;
    }
    let dir = PathBuf::from(given.first().map_or(DEFAULT_DIR, String::as_str));
    let started = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    let mut targets = Vec::new();
    for problem in problems() {
        let (memory, disk) = report(&problem, &dir, &mut failures);
        targets.push((problem.name, memory, disk));
    }
    let verdict = |ratio: f64| {
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "NOT met"
        }
    };
    println!(
        "target: gradient ≤ {TARGET_RATIO}× the primal with {TARGET_SNAPSHOTS} snapshots for \
         {STEPS} steps (theory {:.2}×):",
        theory(STEPS, TARGET_SNAPSHOTS)
    );
    for (name, memory, disk) in targets {
        println!(
            "  {name}: memory {memory:.2}× ({}), disk {disk:.2}× ({})",
            verdict(memory),
            verdict(disk)
        );
    }
    eprintln!("total {:.1} s", started.elapsed().as_secs_f64());

    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for failure in &failures {
            eprintln!("FAILED: {failure}");
        }
        ExitCode::FAILURE
    }
}

/// Verifies, times, tabulates and plots one problem; returns gradient/primal at the
/// target's snapshot count, in memory and on disk.
fn report(problem: &Problem, dir: &Path, failures: &mut Vec<String>) -> (f64, f64) {
    let u0 = &problem.input;
    let name = problem.name;
    eprintln!(
        "{name}: verifying: values = primal, gradients = full-tape gradient (1e-12 rel), \
         forward steps = Revolve's formula..."
    );
    let j = (problem.primal)(u0);
    let (j_full, g_full) = (problem.full)(u0);
    let residual = problem
        .check
        .map_or(0.0, |check| check(u0, &g_full, j_full));
    if j_full != j || residual > 1e-10 {
        failures.push(format!(
            "{name} full-tape gradient: value {j_full:e} vs primal {j:e}, residual {residual:e}"
        ));
    }
    // measured[storage][k]: forward steps of the report for SNAPSHOTS[k], if any;
    // first_call[storage][k]: the time of that (warm-up) call, to size the batches.
    let mut measured = [[None; SNAPSHOTS.len()]; 2];
    let mut first_call = [[Duration::ZERO; SNAPSHOTS.len()]; 2];
    for (which, storage) in STORAGES.into_iter().enumerate() {
        for (k, &s) in SNAPSHOTS.iter().enumerate() {
            let t = Instant::now();
            let ((jc, g), reports) = record(|| (problem.checkpointed)(storage, u0, s));
            first_call[which][k] = t.elapsed();
            let diff = max_rel_diff(&g, &g_full);
            if jc != j || diff.is_nan() || diff > 1e-12 {
                failures.push(format!(
                    "{name} {} s={s}: value {jc:e} vs {j:e}, gradient relative difference {diff:e}",
                    storage.name()
                ));
            }
            match reports.as_slice() {
                [report] => {
                    measured[which][k] = Some(report.stats.forward_steps);
                    let formula = revolve_forward_steps(STEPS, s);
                    if report.stats.forward_steps != formula
                        || report.storage != storage.name()
                        || report.scheme != "revolve"
                    {
                        failures.push(format!(
                            "{name} {} s={s}: report {} {} with {} forward steps, \
                             expected revolve {} with {formula}",
                            storage.name(),
                            report.scheme,
                            report.storage,
                            report.stats.forward_steps,
                            storage.name()
                        ));
                    }
                }
                _ => failures.push(format!(
                    "{name} {} s={s}: {} checkpoint reports, expected 1 \
                     (is `#[checkpoint(..)]` on the loop?)",
                    storage.name(),
                    reports.len()
                )),
            }
        }
    }

    eprintln!(
        "timing: up to {REPS} interleaved repetitions (at least {MIN_REPS}, fewer past ~{} s \
         per variant), batches of ~{} ms; disk snapshots under {}...",
        VARIANT_BUDGET.as_secs(),
        BATCH_TARGET.as_millis(),
        std::env::temp_dir().display()
    );
    let (primal_fn, full_fn, checkpointed_fn) =
        (problem.primal, problem.full, problem.checkpointed);
    let mut primal = Timer::new(|| {
        black_box(primal_fn(black_box(u0)));
    });
    let mut full = Timer::new(|| {
        black_box(full_fn(black_box(u0)));
    });
    let mut checkpointed: Vec<[Timer; 2]> = SNAPSHOTS
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            [0, 1].map(|which| {
                let storage = STORAGES[which];
                let run = move || {
                    black_box(checkpointed_fn(storage, black_box(u0), s));
                };
                Timer::with_estimate(run, first_call[which][k])
            })
        })
        .collect();
    for _ in 0..REPS {
        primal.sample();
        full.sample();
        for timers in &mut checkpointed {
            for timer in timers {
                timer.sample();
            }
        }
    }

    let p = primal.median();
    let full_ratio = full.median() / p;
    println!();
    println!(
        "{}: primal {}, full-tape gradient {} ({full_ratio:.2}× the primal)",
        problem.title,
        fmt_time(p),
        fmt_time(full.median())
    );
    println!();
    println!(
        "| snapshots | forward steps (memory / disk) | Revolve's F(n, s) | theory (F + 3n)/n \
         | full tape + F/n | gradient memory | memory / primal | gradient disk | disk / primal |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut points = Vec::new();
    for (k, (&s, timers)) in SNAPSHOTS.iter().zip(&checkpointed).enumerate() {
        let [mem, disk] = [0, 1].map(|w| timers[w].median());
        let counts = [0, 1].map(|w| measured[w][k].map_or("—".to_string(), |f| f.to_string()));
        println!(
            "| {s} | {} / {} | {} | {:.2}× | {:.2}× | {} | {:.2}× | {} | {:.2}× |",
            counts[0],
            counts[1],
            revolve_forward_steps(STEPS, s),
            theory(STEPS, s),
            full_ratio + revolve_forward_steps(STEPS, s) as f64 / STEPS as f64,
            fmt_time(mem),
            mem / p,
            fmt_time(disk),
            disk / p,
        );
        points.push(Point {
            snapshots: s,
            memory: mem / p,
            disk: disk / p,
        });
    }
    println!(
        "| full tape | — | — | — | — | {} | {full_ratio:.2}× | | |",
        fmt_time(full.median())
    );
    println!();

    let at_target = points
        .iter()
        .find(|pt| pt.snapshots == TARGET_SNAPSHOTS)
        .expect("the target's snapshot count is measured");

    let svg = plot(&points, full_ratio, &problem.title);
    let svg_path = dir.join(format!("checkpoint_overhead_{name}.svg"));
    if let Err(e) = std::fs::create_dir_all(dir) {
        failures.push(format!("cannot create {}: {e}", dir.display()));
    }
    match std::fs::write(&svg_path, svg) {
        Ok(()) => {
            let shown = std::fs::canonicalize(&svg_path).unwrap_or(svg_path.clone());
            println!("plot written to {}", shown.display());
        }
        Err(e) => failures.push(format!("cannot write {}: {e}", svg_path.display())),
    }

    println!("noise, (max−min)/median over the repetitions (their number in brackets):");
    println!("  primal {}, full tape {}", primal.noise(), full.noise());
    for (&s, timers) in SNAPSHOTS.iter().zip(&checkpointed) {
        println!(
            "  s={s}: memory {}, disk {}",
            timers[0].noise(),
            timers[1].noise()
        );
    }
    println!();
    (at_target.memory, at_target.disk)
}

// ---------------------------------------------------------------------------------------
// The plot: hand-written SVG, log-scaled x (snapshots), linear y (gradient / primal).
// ---------------------------------------------------------------------------------------

const WIDTH: f64 = 830.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 540.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 420.0;

/// A step of 1, 2 or 5 × 10ᵏ giving at most 10 ticks up to `max`.
/// The y axis (gradient / primal): linear from 0, or logarithmic over whole decades when
/// the values span more than `LOG_Y_ABOVE` (disk snapshots on a slow file system).
struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

/// Largest / smallest value above which the y axis is logarithmic.
const LOG_Y_ABOVE: f64 = 30.0;

impl YAxis {
    fn new(values: impl Iterator<Item = f64> + Clone) -> Self {
        let finite = values.filter(|v| v.is_finite() && *v > 0.0);
        let max = finite.clone().fold(1.0, f64::max);
        let min = finite.fold(max, f64::min);
        if max / min > LOG_Y_ABOVE {
            let (lo, hi) = (min.log10().floor(), max.log10().ceil());
            let mut ticks = Vec::new();
            let mut decade = lo;
            while decade < hi {
                for m in [1.0, 2.0, 5.0] {
                    ticks.push(m * 10f64.powf(decade));
                }
                decade += 1.0;
            }
            ticks.push(10f64.powf(hi));
            YAxis {
                log: true,
                lo,
                hi,
                ticks,
            }
        } else {
            let step = tick_step(max * 1.05);
            let hi = (max * 1.05 / step).ceil() * step;
            let ticks = (0..=(hi / step).round() as usize)
                .map(|k| (k as f64 * step * 1e6).round() / 1e6)
                .collect();
            YAxis {
                log: false,
                lo: 0.0,
                hi,
                ticks,
            }
        }
    }

    /// Pixel row of `v`.
    fn at(&self, v: f64) -> f64 {
        let t = if self.log { v.log10() } else { v };
        BOTTOM - (t - self.lo) / (self.hi - self.lo) * (BOTTOM - TOP)
    }
}

fn tick_step(max: f64) -> f64 {
    let mut decade = 10f64.powf((max / 10.0).log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            if max / (m * decade) <= 10.0 {
                return m * decade;
            }
        }
        decade *= 10.0;
    }
}

/// The SVG text of the plot.
fn plot(points: &[Point], full_ratio: f64, title: &str) -> String {
    let lo_decade = (points[0].snapshots as f64).log10().floor();
    let hi_decade = (points[points.len() - 1].snapshots as f64)
        .log10()
        .ceil()
        .max(lo_decade + 1.0);
    let theory_max = theory(STEPS, points[0].snapshots);
    let theory_min = theory(STEPS, points[points.len() - 1].snapshots);
    let axis = YAxis::new(points.iter().flat_map(|pt| [pt.memory, pt.disk]).chain([
        full_ratio,
        theory_max,
        theory_min,
        TARGET_RATIO,
    ]));
    let x = |s: f64| LEFT + (s.log10() - lo_decade) / (hi_decade - lo_decade) * (RIGHT - LEFT);
    let y = |v: f64| axis.at(v);

    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        w,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        w,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="15">Revolve checkpointing overhead: {title}</text>"#,
        (LEFT + RIGHT) / 2.0
    );

    // Grid and ticks: decades labelled, 2…9 × decade as faint lines.
    let mut decade = lo_decade;
    while decade <= hi_decade {
        let base = 10f64.powf(decade);
        let px = x(base);
        let _ = writeln!(
            w,
            r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{BOTTOM}" stroke="#ccc"/>"##
        );
        let _ = writeln!(
            w,
            r#"<text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"#,
            BOTTOM + 18.0,
            base as u64
        );
        if decade < hi_decade {
            for m in 2..10 {
                let px = x(m as f64 * base);
                let _ = writeln!(
                    w,
                    r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{BOTTOM}" stroke="#eee"/>"##
                );
            }
        }
        decade += 1.0;
    }
    for &v in &axis.ticks {
        let py = y(v);
        let _ = writeln!(
            w,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{RIGHT}" y2="{py:.1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            w,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{v}×</text>"#,
            LEFT - 6.0,
            py + 4.0
        );
    }
    let _ = writeln!(
        w,
        r#"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        RIGHT - LEFT,
        BOTTOM - TOP
    );
    let _ = writeln!(
        w,
        r#"<text x="{}" y="{}" text-anchor="middle">snapshots (log scale)</text>"#,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 42.0
    );
    let _ = writeln!(
        w,
        r#"<text x="20" y="{0}" text-anchor="middle" transform="rotate(-90 20 {0})">gradient time / primal time{1}</text>"#,
        (TOP + BOTTOM) / 2.0,
        if axis.log { " (log scale)" } else { "" }
    );

    // Horizontal references: the full-tape gradient and the target.
    let horizontal = |w: &mut String, value: f64, color: &str, dash: &str| {
        if value.is_finite() {
            let py = y(value);
            let _ = writeln!(
                w,
                r#"<line x1="{LEFT}" y1="{py:.1}" x2="{RIGHT}" y2="{py:.1}" stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}"/>"#
            );
        }
    };
    horizontal(w, full_ratio, "#7f7f7f", "8 4");
    horizontal(w, TARGET_RATIO, "#ff7f0e", "2 4");

    // Theory: (F(n, s) + 3n)/n on a dense log grid (it has kinks where the repetition
    // number changes), markers at the measured counts.
    let (s_lo, s_hi) = (points[0].snapshots, points[points.len() - 1].snapshots);
    let mut theory_pts: Vec<usize> = (0..=400)
        .map(|k| {
            let e = (s_lo as f64).log10()
                + k as f64 / 400.0 * ((s_hi as f64).log10() - (s_lo as f64).log10());
            10f64.powf(e).round() as usize
        })
        .collect();
    theory_pts.dedup();
    let polyline = |w: &mut String, pts: &[(f64, f64)], color: &str, dash: &str| {
        let coords: Vec<String> = pts
            .iter()
            .filter(|(_, v)| v.is_finite())
            .map(|&(s, v)| format!("{:.1},{:.1}", x(s), y(v)))
            .collect();
        let _ = writeln!(
            w,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
            coords.join(" ")
        );
    };
    let theory_line: Vec<(f64, f64)> = theory_pts
        .iter()
        .map(|&s| (s as f64, theory(STEPS, s)))
        .collect();
    polyline(w, &theory_line, "#2ca02c", "3 3");
    let memory: Vec<(f64, f64)> = points
        .iter()
        .map(|pt| (pt.snapshots as f64, pt.memory))
        .collect();
    let disk: Vec<(f64, f64)> = points
        .iter()
        .map(|pt| (pt.snapshots as f64, pt.disk))
        .collect();
    polyline(w, &memory, "#1f77b4", "none");
    polyline(w, &disk, "#d62728", "6 3");
    for pt in points {
        let px = x(pt.snapshots as f64);
        let t = theory(STEPS, pt.snapshots);
        let _ = writeln!(
            w,
            r##"<path d="M{:.1},{:.1} l8,8 m0,-8 l-8,8" stroke="#2ca02c" stroke-width="1.5"/>"##,
            px - 4.0,
            y(t) - 4.0
        );
        if pt.memory.is_finite() {
            let _ = writeln!(
                w,
                r##"<circle cx="{px:.1}" cy="{:.1}" r="4" fill="#1f77b4"/>"##,
                y(pt.memory)
            );
        }
        if pt.disk.is_finite() {
            let _ = writeln!(
                w,
                r##"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="#d62728"/>"##,
                px - 4.0,
                y(pt.disk) - 4.0
            );
        }
    }

    // Legend, right of the plot.
    let target_label = format!("target: {TARGET_RATIO}× at {TARGET_SNAPSHOTS} snapshots");
    let entries: [(&str, &str, &str, &str); 5] = [
        ("#1f77b4", "none", "circle", "measured, snapshots in memory"),
        ("#d62728", "6 3", "square", "measured, snapshots on disk"),
        ("#2ca02c", "3 3", "cross", "theory (F(n, s) + 3n) / n"),
        ("#7f7f7f", "8 4", "", "full tape (no checkpointing)"),
        ("#ff7f0e", "2 4", "", &target_label),
    ];
    let lx = RIGHT + 20.0;
    for (k, (color, dash, marker, label)) in entries.iter().enumerate() {
        let ly = TOP + 10.0 + 24.0 * k as f64;
        let _ = writeln!(
            w,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
            lx + 30.0
        );
        let mx = lx + 15.0;
        match *marker {
            "circle" => {
                let _ = writeln!(w, r#"<circle cx="{mx}" cy="{ly}" r="4" fill="{color}"/>"#);
            }
            "square" => {
                let _ = writeln!(
                    w,
                    r#"<rect x="{}" y="{}" width="8" height="8" fill="{color}"/>"#,
                    mx - 4.0,
                    ly - 4.0
                );
            }
            "cross" => {
                let _ = writeln!(
                    w,
                    r#"<path d="M{},{} l8,8 m0,-8 l-8,8" stroke="{color}" stroke-width="1.5"/>"#,
                    mx - 4.0,
                    ly - 4.0
                );
            }
            _ => {}
        }
        let _ = writeln!(
            w,
            r#"<text x="{}" y="{}">{label}</text>"#,
            lx + 38.0,
            ly + 4.0
        );
    }
    let _ = writeln!(w, "</svg>");
    out
}

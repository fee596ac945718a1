//! Interleaved timing: every round runs each variant once (as a batch of calls sized to
//! about 20 ms), so a slow stretch of the machine slows all variants alike; the fastest
//! round is reported. JAX and PyTorch are variants too: their batches run in the peers'
//! script, on request (`Timer::remote`, `external.rs`). Other tenants of a shared machine
//! only ever slow a round down, so the minimum is the estimate that moves least from run
//! to run (with medians, two full runs on the 2-core VM of 2026-11-22 gave Rosenbrock's
//! ratio to JAX as 0.83 and 1.21).

use std::hint::black_box;
use std::time::{Duration, Instant};

const BATCH_TARGET: Duration = Duration::from_millis(20);

/// One timed closure, or a function timed by another process.
pub struct Timer {
    run: Run,
    samples: Vec<f64>,
}

enum Run {
    Here {
        run: Box<dyn FnMut()>,
        batch: usize,
    },
    /// Timed by the peers' script (`external.rs`): called with `true` to calibrate its
    /// batch, with `false` for the seconds per call of one batch.
    Elsewhere(Box<dyn FnMut(bool) -> f64>),
}

impl Timer {
    pub fn new(mut run: impl FnMut() -> f64 + 'static) -> Self {
        Timer {
            run: Run::Here {
                run: Box::new(move || {
                    black_box(run());
                }),
                batch: 1,
            },
            samples: Vec::new(),
        }
    }

    /// A timer whose batches run elsewhere: `remote(true)` calibrates the batch (about
    /// 20 ms, as here), `remote(false)` runs one and returns its seconds per call.
    pub fn remote(remote: impl FnMut(bool) -> f64 + 'static) -> Self {
        Timer {
            run: Run::Elsewhere(Box::new(remote)),
            samples: Vec::new(),
        }
    }

    fn calibrate(&mut self) {
        match &mut self.run {
            Run::Here { run, batch } => {
                run();
                let t = Instant::now();
                run();
                let one = t.elapsed().max(Duration::from_nanos(1));
                *batch =
                    ((BATCH_TARGET.as_secs_f64() / one.as_secs_f64()) as usize).clamp(1, 100_000);
            }
            Run::Elsewhere(remote) => {
                remote(true);
            }
        }
    }

    fn sample(&mut self) {
        let secs = match &mut self.run {
            Run::Here { run, batch } => {
                let t = Instant::now();
                for _ in 0..*batch {
                    run();
                }
                t.elapsed().as_secs_f64() / *batch as f64
            }
            Run::Elsewhere(remote) => remote(false),
        };
        self.samples.push(secs);
    }

    /// The seconds per call of the fastest round.
    pub fn fastest(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// Calibrates the timers, then runs `rounds` interleaved rounds.
pub fn run(timers: &mut [&mut Timer], rounds: usize) {
    for t in timers.iter_mut() {
        t.calibrate();
    }
    for _ in 0..rounds {
        for t in timers.iter_mut() {
            t.sample();
        }
    }
}

/// `1.23 ms`, `45.6 µs`, `1.20 s`.
pub fn fmt_time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

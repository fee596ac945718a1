//! Interleaved timing: every round runs each variant once (as a batch of calls sized to
//! about 20 ms), so a slow stretch of the machine slows all variants alike; the fastest
//! round is reported. Other tenants of a shared machine only ever slow a round down, so
//! the minimum is the estimate that moves least from run to run (with medians, two full
//! runs on the 2-core VM of 2026-11-22 gave Rosenbrock's ratio to JAX as 0.83 and 1.21).

use std::hint::black_box;
use std::time::{Duration, Instant};

const BATCH_TARGET: Duration = Duration::from_millis(20);

/// One timed closure.
pub struct Timer {
    run: Box<dyn FnMut()>,
    batch: usize,
    samples: Vec<f64>,
}

impl Timer {
    pub fn new(mut run: impl FnMut() -> f64 + 'static) -> Self {
        Timer {
            run: Box::new(move || {
                black_box(run());
            }),
            batch: 1,
            samples: Vec::new(),
        }
    }

    fn calibrate(&mut self) {
        (self.run)();
        let t = Instant::now();
        (self.run)();
        let one = t.elapsed().max(Duration::from_nanos(1));
        self.batch = ((BATCH_TARGET.as_secs_f64() / one.as_secs_f64()) as usize).clamp(1, 100_000);
    }

    fn sample(&mut self) {
        let t = Instant::now();
        for _ in 0..self.batch {
            (self.run)();
        }
        self.samples
            .push(t.elapsed().as_secs_f64() / self.batch as f64);
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

//! The driver generated code talks to: a schedule, a storage and a scratch
//! snapshot behind a handful of calls, with failures turned into panics
//! that name the path, and reports and progress sent to the observers.

use super::observe::{progress_wanted, publish, report_progress, Progress, Report};
use super::{
    Action, CheckpointError, Schedule, Scheme, Snapshot, SnapshotReader, Stats, StepMode, Storage,
    StorageKind,
};

/// Drives one checkpointed loop: owns its [`Schedule`], its [`Storage`] and
/// a scratch [`Snapshot`].
///
/// Generated code calls [`forward_step`](Self::forward_step) before each
/// primal iteration and [`end_forward`](Self::end_forward) after the loop;
/// later it executes [`next_reverse`](Self::next_reverse)'s actions until
/// [`Action::Done`], saving and loading the loop-carried state with
/// [`store`](Self::store) and [`restore`](Self::restore) (see the
/// [module example](super)).
///
/// Storage failures panic with the error's message (which names the path):
/// generated code has no error channel, and the unwinding drops the storage,
/// which removes a disk directory. When the reverse phase ends, a [`Report`]
/// goes to [`record`](super::record); [`with_progress`](super::with_progress)
/// callbacks hear about the reverse phase as it goes.
pub struct Checkpointer<T> {
    schedule: Box<dyn Schedule + Send>,
    storage: Box<dyn Storage<T> + Send>,
    scratch: Snapshot<T>,
    /// Known once the forward phase has ended.
    n_steps: Option<usize>,
    steps_reversed: usize,
    /// Progress is reported when `steps_reversed` reaches this (every 1 %).
    next_progress_at: usize,
    reverse_started: bool,
    finished: bool,
}

impl<T: Copy + Send + 'static> Checkpointer<T> {
    /// A driver for a loop of `trip_count` steps (`None` if unknown until it
    /// ends) using `scheme` and snapshots in `storage`.
    ///
    /// # Panics
    /// On an invalid scheme parameter or a storage that cannot be opened,
    /// with the [`CheckpointError`]'s message.
    #[track_caller]
    pub fn new(scheme: Scheme, storage: StorageKind, trip_count: Option<usize>) -> Self {
        Self::try_new(scheme, storage, trip_count).unwrap_or_else(|e| fail(e))
    }

    /// [`new`](Self::new), returning the error instead of panicking.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidParameter`], or the storage's error.
    ///
    /// ```
    /// use ad_core::checkpoint::{CheckpointError, Checkpointer, Scheme, StorageKind};
    ///
    /// let err = Checkpointer::<f64>::try_new(Scheme::Revolve { snapshots: 0 }, StorageKind::Memory, Some(10))
    ///     .err()
    ///     .unwrap();
    /// assert!(matches!(err, CheckpointError::InvalidParameter { parameter: "snapshots", value: 0, .. }));
    /// assert!(Checkpointer::<f64>::try_new(Scheme::Periodic { every: 4 }, StorageKind::Memory, None).is_ok());
    /// ```
    pub fn try_new(
        scheme: Scheme,
        storage: StorageKind,
        trip_count: Option<usize>,
    ) -> Result<Self, CheckpointError> {
        let schedule = scheme.schedule(trip_count)?;
        Ok(Self::from_parts(schedule, storage.open::<T>()?))
    }

    /// A driver over a schedule and storage built by hand.
    pub fn from_parts(
        schedule: Box<dyn Schedule + Send>,
        storage: Box<dyn Storage<T> + Send>,
    ) -> Self {
        Checkpointer {
            schedule,
            storage,
            scratch: Snapshot::new(),
            n_steps: None,
            steps_reversed: 0,
            next_progress_at: 0,
            reverse_started: false,
            finished: false,
        }
    }

    /// Before forward step `step`: stores the state if the schedule says so
    /// (calling `save` to write it), and says how to run the step.
    #[track_caller]
    pub fn forward_step(&mut self, step: usize, save: impl FnOnce(&mut Snapshot<T>)) -> StepMode {
        let instruction = self.schedule.forward_step(step);
        if let Some(slot) = instruction.store {
            self.store(slot, save);
        }
        instruction.mode
    }

    /// The loop ended after `n_steps` steps.
    #[track_caller]
    pub fn end_forward(&mut self, n_steps: usize) {
        self.schedule.end_forward(n_steps);
        self.n_steps = Some(n_steps);
    }

    /// The next reverse-phase action (see [`Action`]); [`Action::Done`] once
    /// every step is reversed, after which the [`Report`] is published.
    #[track_caller]
    pub fn next_reverse(&mut self) -> Action {
        let n_steps = self.n_steps.unwrap_or(0);
        let progress_every = (n_steps / 100).max(1);
        if !self.reverse_started {
            self.reverse_started = true;
            self.next_progress_at = progress_every;
            self.progress_if_wanted();
        }
        let action = self.schedule.next_reverse();
        match action {
            Action::Reverse { .. } | Action::Adjoint { .. } => {
                self.steps_reversed += 1;
                if self.steps_reversed >= self.next_progress_at || self.steps_reversed == n_steps {
                    self.next_progress_at = self.steps_reversed + progress_every;
                    self.progress_if_wanted();
                }
            }
            Action::Done if !self.finished => {
                self.finished = true;
                publish(self.report());
            }
            _ => {}
        }
        action
    }

    /// Saves the state written by `save` into `slot` (for [`Action::Store`]).
    ///
    /// # Panics
    /// If the storage fails, with the error's message.
    #[track_caller]
    pub fn store(&mut self, slot: usize, save: impl FnOnce(&mut Snapshot<T>)) {
        let mut save = Some(save);
        let mut fill = |snap: &mut Snapshot<T>| {
            if let Some(save) = save.take() {
                save(snap);
            }
        };
        if let Err(e) = self.storage.store_with(slot, &mut self.scratch, &mut fill) {
            fail(e)
        }
    }

    /// Loads the state saved in `slot` and hands it to `load`, which must
    /// read all of it (for [`Action::Restore`]).
    ///
    /// # Panics
    /// If the storage fails, with the error's message, or if `load` leaves
    /// values unread.
    #[track_caller]
    pub fn restore(&mut self, slot: usize, load: impl FnOnce(&mut SnapshotReader<'_, T>)) {
        // In-memory slots are read in place; others through the scratch snapshot.
        let snapshot = match self.storage.view(slot) {
            Some(held) => held,
            None => {
                if let Err(e) = self.storage.restore(slot, &mut self.scratch) {
                    fail(e)
                }
                &self.scratch
            }
        };
        let mut reader = snapshot.reader();
        load(&mut reader);
        reader.finish();
    }

    /// The schedule's counts so far.
    pub fn stats(&self) -> Stats {
        self.schedule.stats()
    }

    /// The counts and the peak snapshot bytes, as published at the end.
    pub fn report(&self) -> Report {
        Report {
            scheme: self.schedule.name(),
            storage: self.storage.name(),
            stats: self.schedule.stats(),
            peak_snapshot_bytes: self.storage.peak_bytes(),
        }
    }

    fn progress_if_wanted(&self) {
        if progress_wanted() {
            report_progress(Progress {
                steps_reversed: self.steps_reversed,
                steps: self.n_steps.unwrap_or(0),
                recomputed_steps: self.schedule.stats().recomputed_steps,
            });
        }
    }
}

/// Panics with a checkpoint error's message.
#[track_caller]
fn fail(error: CheckpointError) -> ! {
    panic!("phidiff checkpoint: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{record, Disk, Memory, Revolve};
    use crate::{Dual, Float};

    /// Runs `x ← x·a + 1` for `n` steps under `ck`, with `x` as the state;
    /// returns (value, adjoint of x0, adjoint of a) for seed 1.
    fn affine_rev<T: Float>(ck: &mut Checkpointer<T>, x0: T, a: T, n: usize) -> (T, T, T) {
        let mut x = x0;
        let mut tape = T::zero();
        for i in 0..n {
            match ck.forward_step(i, |s| s.push_float(x)) {
                StepMode::Plain => x = x * a + T::one(),
                StepMode::Taped => {
                    tape = x;
                    x = x * a + T::one();
                }
            }
        }
        ck.end_forward(n);
        let value = x;
        let (mut x_bar, mut a_bar) = (T::one(), T::zero());
        loop {
            match ck.next_reverse() {
                Action::Store { slot, .. } => ck.store(slot, |s| s.push_float(x)),
                Action::Restore { slot, .. } => ck.restore(slot, |r| x = r.float()),
                Action::Advance { from, to } => (from..to).for_each(|_| x = x * a + T::one()),
                Action::Reverse { .. } => {
                    tape = x;
                    a_bar += x_bar * tape;
                    x_bar *= a;
                }
                Action::Adjoint { .. } => {
                    a_bar += x_bar * tape;
                    x_bar *= a;
                }
                Action::Done => break,
            }
        }
        (value, x_bar, a_bar)
    }

    #[test]
    fn every_scheme_and_storage_gives_the_same_adjoint() {
        let (x0, a, n): (f64, f64, usize) = (0.3, 0.9, 37);
        // x_n = a^n x0 + (a^n − 1)/(a − 1)
        let an = a.powi(n as i32);
        let expected_x_bar = an;
        let expected_a_bar = n as f64 * a.powi(n as i32 - 1) * x0
            + (n as f64 * a.powi(n as i32 - 1) * (a - 1.0) - (an - 1.0)) / ((a - 1.0) * (a - 1.0));
        for scheme in [
            Scheme::Revolve { snapshots: 3 },
            Scheme::Periodic { every: 5 },
            Scheme::Online { snapshots: 3 },
        ] {
            for storage in [StorageKind::Memory, StorageKind::Disk] {
                for trip_count in [Some(n), None] {
                    let mut ck = Checkpointer::new(scheme, storage.clone(), trip_count);
                    let (value, x_bar, a_bar) = affine_rev(&mut ck, x0, a, n);
                    let context = format!("{scheme:?} {storage:?} {trip_count:?}");
                    assert!(
                        (value - (an * x0 + (an - 1.0) / (a - 1.0))).abs() < 1e-12,
                        "{context}"
                    );
                    assert!((x_bar - expected_x_bar).abs() < 1e-12, "{context}");
                    assert!((a_bar - expected_a_bar).abs() < 1e-10, "{context}: {a_bar}");
                }
            }
        }
    }

    #[test]
    fn dual_numbers_go_through_disk_for_forward_over_reverse() {
        // ∂(∂x_n/∂a)/∂x0 = n·a^(n−1), carried in the tangent of a_bar.
        let (n, a) = (20, 0.8_f64);
        let mut ck = Checkpointer::<Dual<f64>>::new(
            Scheme::Revolve { snapshots: 3 },
            StorageKind::Disk,
            Some(n),
        );
        let (_, x_bar, a_bar) = affine_rev(&mut ck, Dual::variable(0.5), Dual::constant(a), n);
        assert!((x_bar.re - a.powi(n as i32)).abs() < 1e-14);
        assert_eq!(x_bar.eps, 0.0);
        assert!((a_bar.eps - n as f64 * a.powi(n as i32 - 1)).abs() < 1e-13);
    }

    #[test]
    fn the_report_is_published_once_with_peak_bytes() {
        let ((), reports) = record(|| {
            let mut ck = Checkpointer::new(
                Scheme::Revolve { snapshots: 4 },
                StorageKind::Memory,
                Some(100),
            );
            affine_rev(&mut ck, 1.0_f64, 0.5, 100);
            assert_eq!(ck.next_reverse(), Action::Done); // again: no second report
        });
        assert_eq!(reports.len(), 1);
        let report = &reports[0];
        assert_eq!((report.scheme, report.storage), ("revolve", "memory"));
        assert_eq!(report.stats, Revolve::optimal_stats(100, 4));
        assert_eq!(report.peak_snapshot_bytes, 4 * 8);
    }

    #[test]
    fn progress_is_throttled_monotone_and_complete() {
        use std::cell::RefCell;
        use std::rc::Rc;
        let seen = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&seen);
        super::super::with_progress(
            move |p| sink.borrow_mut().push(p),
            || {
                let mut ck =
                    Checkpointer::new(Scheme::Online { snapshots: 8 }, StorageKind::Memory, None);
                affine_rev(&mut ck, 1.0_f64, 0.5, 2500);
            },
        );
        let seen = seen.borrow();
        assert!((100..=102).contains(&seen.len()), "{} reports", seen.len());
        assert!(seen
            .windows(2)
            .all(|w| w[0].steps_reversed < w[1].steps_reversed));
        assert!(seen
            .windows(2)
            .all(|w| w[0].recomputed_steps <= w[1].recomputed_steps));
        let last = seen.last().unwrap();
        assert_eq!(
            (last.steps_reversed, last.steps, last.fraction()),
            (2500, 2500, 1.0)
        );
        assert!(last.recomputed_steps > 0);
    }

    #[test]
    fn a_failing_disk_panics_naming_the_path_and_leaves_no_directory() {
        let disk = Disk::new().unwrap();
        let dir = disk.path().to_path_buf();
        std::fs::remove_dir_all(&dir).unwrap();
        let schedule = Scheme::Revolve { snapshots: 2 }.schedule(Some(4)).unwrap();
        let mut ck = Checkpointer::<f64>::from_parts(schedule, Box::new(disk));
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ck.forward_step(0, |s| s.push_float(1.0));
        }))
        .unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        let path = dir.join("snapshots.bin");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.starts_with("phidiff checkpoint: checkpoint I/O failed: create"));
    }

    #[test]
    fn a_panicking_adjoint_removes_the_disk_directory() {
        let mut dir = None;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let disk = Disk::new().unwrap();
            dir = Some(disk.path().to_path_buf());
            let schedule = Scheme::Revolve { snapshots: 2 }.schedule(Some(5)).unwrap();
            let mut ck = Checkpointer::<f64>::from_parts(schedule, Box::new(disk));
            for i in 0..5 {
                ck.forward_step(i, |s| s.push_float(i as f64));
            }
            ck.end_forward(5);
            ck.next_reverse();
            panic!("the adjoint hit a bug");
        }));
        assert!(caught.is_err());
        assert!(!dir.unwrap().exists());
    }

    #[test]
    #[should_panic(expected = "`snapshots` must be at least 1, got 0")]
    fn zero_snapshots_is_rejected_at_construction() {
        Checkpointer::<f64>::new(
            Scheme::Revolve { snapshots: 0 },
            StorageKind::Memory,
            Some(3),
        );
    }

    #[test]
    fn unsupported_disk_scalars_are_rejected_at_construction() {
        let err =
            Checkpointer::<u16>::try_new(Scheme::Periodic { every: 2 }, StorageKind::Disk, None)
                .err()
                .unwrap();
        assert!(matches!(
            err,
            CheckpointError::UnsupportedScalar { type_name: "u16" }
        ));
        let memory: Box<dyn Storage<u16> + Send> = Box::new(Memory::new());
        let schedule = Scheme::Periodic { every: 2 }.schedule(None).unwrap();
        Checkpointer::from_parts(schedule, memory); // memory takes any type
    }

    #[test]
    #[should_panic(expected = "ran 3 steps but its trip count was 4")]
    fn a_loop_ending_early_is_reported() {
        let mut ck = Checkpointer::<f64>::new(
            Scheme::Revolve { snapshots: 2 },
            StorageKind::Memory,
            Some(4),
        );
        for i in 0..3 {
            ck.forward_step(i, |s| s.push_float(0.0));
        }
        ck.end_forward(3);
    }
}

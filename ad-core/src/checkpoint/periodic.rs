//! Periodic checkpointing: a snapshot every `every` steps, and each segment
//! recomputed once with all its states stored.

use super::reversal::{with_reversal, Checkpoint, Reversal, SlotPool};
use super::{Action, CheckpointError, ForwardStep, Schedule, Stats, StepMode};

/// Periodic checkpointing with period `K = every`.
///
/// The forward phase stores the states before steps `0, K, 2K, …`. The
/// reverse phase takes the segments `[jK, (j+1)K)` from the last: it
/// restores the segment's start, recomputes the segment storing every
/// intermediate state, and reverses its steps. At most `⌈n/K⌉ + K − 2`
/// snapshots are held, and every step is recomputed at most once.
///
/// With a known trip count the last step runs taped in the forward phase
/// (the reverse phase starts with its [`Action::Adjoint`]); with an unknown
/// one (`while` loops) every forward step is plain. The exact counts are
/// [`Periodic::expected_stats`].
///
/// ```
/// use ad_core::checkpoint::{Action, Periodic, Schedule};
///
/// let mut periodic = Periodic::new(3, None).unwrap();
/// let stored: Vec<Option<usize>> = (0..5).map(|i| periodic.forward_step(i).store).collect();
/// assert_eq!(stored, [Some(0), None, None, Some(1), None]);
/// periodic.end_forward(5);
/// assert_eq!(periodic.next_reverse(), Action::Restore { slot: 1, step: 3 });
/// assert_eq!(periodic.next_reverse(), Action::Advance { from: 3, to: 4 });
/// assert_eq!(periodic.next_reverse(), Action::Reverse { step: 4 });
/// while periodic.next_reverse() != Action::Done {}
/// assert_eq!(periodic.stats(), Periodic::expected_stats(5, 3, false));
/// ```
#[derive(Clone, Debug)]
pub struct Periodic {
    every: usize,
    trip_count: Option<usize>,
    next_step: usize,
    /// The next step whose state is a segment start.
    next_segment_start: usize,
    /// Slots during the forward phase (the reversal takes it over).
    pool: Option<SlotPool>,
    checkpoints: Vec<Checkpoint>,
    forward: Stats,
    kept_tape: Option<usize>,
    reversal: Option<Reversal>,
}

impl Periodic {
    /// The schedule with period `every` for a loop of `trip_count` steps
    /// (`None` when unknown until the loop ends).
    ///
    /// # Errors
    /// [`CheckpointError::InvalidParameter`] if `every` is 0.
    pub fn new(every: usize, trip_count: Option<usize>) -> Result<Self, CheckpointError> {
        if every == 0 {
            return Err(CheckpointError::InvalidParameter {
                scheme: "periodic",
                parameter: "every",
                value: 0,
            });
        }
        Ok(Periodic {
            every,
            trip_count,
            next_step: 0,
            next_segment_start: 0,
            pool: Some(SlotPool::new(usize::MAX)),
            checkpoints: Vec::new(),
            forward: Stats::default(),
            kept_tape: None,
            reversal: None,
        })
    }

    /// What a completed schedule reports, in closed form.
    ///
    /// With `c = ⌈n/K⌉` segments, `f = c − 1` full ones, and `ρ` the steps
    /// of the last segment left to the reverse phase (its length, less one
    /// if the trip count is known and the last step ran taped forward):
    /// the forward phase runs `n − [known]` plain steps and stores
    /// `h = f + [ρ > 0]` states; the reverse phase recomputes
    /// `f·(K−1) + (ρ−1)⁺` steps and stores `f·(K−2)⁺ + (ρ−2)⁺` intermediate
    /// states; it restores `n − [known]` times (before every `Reverse`);
    /// at most `max(h + (ρ−2)⁺, f + (K−2)⁺)` snapshots are held (`x⁺` is
    /// `max(x, 0)`).
    ///
    /// ```
    /// use ad_core::checkpoint::Periodic;
    /// let stats = Periodic::expected_stats(10, 4, true);
    /// assert_eq!((stats.forward_steps, stats.recomputed_steps), (9 + 6, 6));
    /// ```
    pub fn expected_stats(n_steps: usize, every: usize, trip_count_known: bool) -> Stats {
        if n_steps == 0 {
            return Stats::default();
        }
        let k = every;
        let full = n_steps.div_ceil(k) - 1;
        let known = usize::from(trip_count_known);
        let rest = n_steps - full * k - known;
        let held = full + usize::from(rest > 0);
        let recomputed = full * (k - 1) + rest.saturating_sub(1);
        let full_segment_peak = if full > 0 {
            full + k.saturating_sub(2)
        } else {
            0
        };
        Stats {
            steps: n_steps,
            forward_steps: n_steps - known + recomputed,
            recomputed_steps: recomputed,
            taped_steps: n_steps,
            stores: held + full * k.saturating_sub(2) + rest.saturating_sub(2),
            restores: n_steps - known,
            max_live_snapshots: (held + rest.saturating_sub(2)).max(full_segment_peak),
        }
    }
}

impl Schedule for Periodic {
    fn forward_step(&mut self, step: usize) -> ForwardStep {
        assert_eq!(
            step, self.next_step,
            "checkpointed loop: steps must run in order"
        );
        if let Some(n_steps) = self.trip_count {
            assert!(
                step < n_steps,
                "checkpointed loop ran more than its trip count of {n_steps} steps"
            );
        }
        self.next_step += 1;
        let taped = self.trip_count == Some(step + 1);
        let mut store = None;
        let segment_start = step == self.next_segment_start;
        if segment_start {
            self.next_segment_start += self.every;
        }
        if segment_start && !taped {
            let pool = self.pool.as_mut().expect("forward phase already ended");
            let slot = pool.take();
            self.checkpoints.push(Checkpoint { step, slot });
            self.forward.stores += 1;
            store = Some(slot);
        }
        let mode = if taped {
            self.kept_tape = Some(step);
            self.forward.taped_steps += 1;
            StepMode::Taped
        } else {
            self.forward.forward_steps += 1;
            StepMode::Plain
        };
        ForwardStep { store, mode }
    }

    fn end_forward(&mut self, n_steps: usize) {
        assert!(
            n_steps == self.next_step && self.trip_count.unwrap_or(n_steps) == n_steps,
            "checkpointed loop ran {} steps but its trip count was {n_steps} at entry",
            self.next_step,
        );
        let mut pool = self.pool.take().expect("`end_forward` called twice");
        self.forward.max_live_snapshots = pool.max_live();
        // Room for one segment's intermediate states on top of the starts.
        pool.set_capacity(pool.live() + self.every);
        let unreversed = n_steps - usize::from(self.kept_tape.is_some());
        let checkpoints = std::mem::take(&mut self.checkpoints);
        self.reversal = Some(Reversal::from_checkpoints(unreversed, checkpoints, pool));
    }

    fn next_reverse(&mut self) -> Action {
        let reversal = self
            .reversal
            .as_mut()
            .expect("reverse phase started before `end_forward`");
        match self.kept_tape.take() {
            Some(step) => Action::Adjoint { step },
            None => reversal.next(),
        }
    }

    fn stats(&self) -> Stats {
        let steps = self.trip_count.unwrap_or(self.next_step);
        let forward = Stats {
            steps,
            ..self.forward
        };
        with_reversal(forward, self.reversal.as_ref())
    }

    fn name(&self) -> &'static str {
        "periodic"
    }
}

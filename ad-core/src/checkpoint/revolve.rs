//! Binomial checkpointing (Griewank & Walther, "Algorithm 799: Revolve"):
//! the fewest recomputations for a loop whose trip count is known at entry.

use super::binomial::{revolve_forward_steps, revolve_stores};
use super::reversal::{Reversal, SlotPool};
use super::{Action, CheckpointError, ForwardStep, Schedule, Stats, StepMode};

/// Revolve: reverses `n` steps with at most `s` snapshots held at any time
/// and the fewest plain steps possible,
/// [`revolve_forward_steps(n, s)`](super::revolve_forward_steps), storing
/// [`revolve_stores(n, s)`](super::revolve_stores) snapshots.
///
/// The forward phase is the start of the binomial schedule: it stores the
/// states where the schedule's first sweep stores them and runs the last
/// step taped (Revolve's "first turn"), so the reverse phase starts with
/// that step's [`Action::Adjoint`]. With `s ≥ n − 1` every state but the
/// last is stored and nothing is recomputed.
///
/// ```
/// use ad_core::checkpoint::{Action, Revolve, Schedule, StepMode};
///
/// let mut revolve = Revolve::new(4, 2).unwrap();
/// let stored: Vec<Option<usize>> = (0..4).map(|i| revolve.forward_step(i).store).collect();
/// assert_eq!(stored, [Some(0), Some(1), None, None]); // states 0 and 1, in slots 0 and 1
/// revolve.end_forward(4);
/// assert_eq!(revolve.next_reverse(), Action::Adjoint { step: 3 });
/// assert_eq!(revolve.next_reverse(), Action::Restore { slot: 1, step: 1 });
/// assert_eq!(revolve.next_reverse(), Action::Advance { from: 1, to: 2 });
/// assert_eq!(revolve.next_reverse(), Action::Reverse { step: 2 });
/// while revolve.next_reverse() != Action::Done {}
/// assert_eq!(revolve.stats(), Revolve::optimal_stats(4, 2));
/// ```
#[derive(Clone, Debug)]
pub struct Revolve {
    n_steps: usize,
    snapshots: usize,
    reversal: Reversal,
    /// The next forward step expected.
    next_step: usize,
    /// Steps below this are inside the current `Advance` of the forward sweep.
    advancing_until: usize,
    /// The step the forward phase ran taped, until its adjoint is handed out.
    kept_tape: Option<usize>,
    forward_ended: bool,
}

impl Revolve {
    /// The schedule for `n_steps` steps and `snapshots` slots.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidParameter`] if `snapshots` is 0.
    pub fn new(n_steps: usize, snapshots: usize) -> Result<Self, CheckpointError> {
        if snapshots == 0 {
            return Err(CheckpointError::InvalidParameter {
                scheme: "revolve",
                parameter: "snapshots",
                value: 0,
            });
        }
        Ok(Revolve {
            n_steps,
            snapshots,
            reversal: Reversal::from_start(n_steps, SlotPool::new(snapshots)),
            next_step: 0,
            advancing_until: 0,
            kept_tape: None,
            forward_ended: false,
        })
    }

    /// The snapshot slots this schedule may use.
    pub fn snapshots(&self) -> usize {
        self.snapshots
    }

    /// What a completed schedule reports, in closed form: forward steps
    /// [`revolve_forward_steps`](super::revolve_forward_steps) (of which the
    /// first `n − 1` are the forward phase), stores
    /// [`revolve_stores`](super::revolve_stores), `n − 1` restores (one
    /// before every step reversed but the first), `n` taped steps, and
    /// `min(s, n − 1)` snapshots held at most.
    ///
    /// ```
    /// use ad_core::checkpoint::Revolve;
    /// let stats = Revolve::optimal_stats(10_000, 1_000);
    /// assert_eq!((stats.forward_steps, stats.stores), (18_998, 8_999));
    /// ```
    pub fn optimal_stats(n_steps: usize, snapshots: usize) -> Stats {
        let forward_steps = revolve_forward_steps(n_steps, snapshots);
        Stats {
            steps: n_steps,
            forward_steps,
            recomputed_steps: forward_steps - n_steps.saturating_sub(1),
            taped_steps: n_steps,
            stores: revolve_stores(n_steps, snapshots),
            restores: n_steps.saturating_sub(1),
            max_live_snapshots: snapshots.min(n_steps.saturating_sub(1)),
        }
    }
}

impl Schedule for Revolve {
    fn forward_step(&mut self, step: usize) -> ForwardStep {
        assert_eq!(
            step, self.next_step,
            "checkpointed loop: steps must run in order"
        );
        assert!(
            step < self.n_steps,
            "checkpointed loop ran more than its trip count of {} steps \
             (a loop that can exit early needs `online`)",
            self.n_steps
        );
        self.next_step += 1;
        let plain = ForwardStep {
            store: None,
            mode: StepMode::Plain,
        };
        if step < self.advancing_until {
            return plain;
        }
        let mut store = None;
        loop {
            match self.reversal.next() {
                Action::Store { slot, step: at } => {
                    debug_assert_eq!(at, step);
                    store = Some(slot);
                }
                Action::Advance { from, to } => {
                    debug_assert_eq!(from, step);
                    self.advancing_until = to;
                    return ForwardStep { store, ..plain };
                }
                Action::Reverse { step: at } => {
                    debug_assert_eq!((at, at + 1), (step, self.n_steps));
                    self.kept_tape = Some(step);
                    return ForwardStep {
                        store,
                        mode: StepMode::Taped,
                    };
                }
                other => unreachable!("revolve's forward sweep emitted {other:?}"),
            }
        }
    }

    fn end_forward(&mut self, n_steps: usize) {
        assert!(
            n_steps == self.n_steps && self.next_step == n_steps,
            "checkpointed loop ran {} steps but its trip count was {} at entry \
             (a loop that can exit early needs `online`)",
            self.next_step,
            self.n_steps
        );
        self.forward_ended = true;
    }

    fn next_reverse(&mut self) -> Action {
        assert!(
            self.forward_ended,
            "reverse phase started before `end_forward`"
        );
        match self.kept_tape.take() {
            Some(step) => Action::Adjoint { step },
            None => self.reversal.next(),
        }
    }

    fn stats(&self) -> Stats {
        let stats = self.reversal.stats();
        // The reversal counts an `Advance` when it hands it out; the forward
        // phase runs it one step at a time.
        let forward_phase_steps = self.next_step.min(self.n_steps.saturating_sub(1));
        let (forward_steps, recomputed_steps) = if self.forward_ended {
            (
                stats.forward_steps,
                stats.forward_steps - forward_phase_steps,
            )
        } else {
            (forward_phase_steps, 0)
        };
        Stats {
            steps: self.n_steps,
            forward_steps,
            recomputed_steps,
            ..stats
        }
    }

    fn name(&self) -> &'static str {
        "revolve"
    }
}

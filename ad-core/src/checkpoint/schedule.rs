//! What a checkpointing schedule tells generated code to do: the
//! [`Schedule`] trait every scheme implements, its [`Action`]s, and the
//! [`Scheme`] a `#[checkpoint(...)]` attribute names.

use core::ops::Add;

use super::{CheckpointError, Online, Periodic, Revolve};

/// One instruction of a schedule's reverse phase.
///
/// Steps are numbered `0..n` in iteration order; "the state before step
/// `i`" is the loop-carried state at the top of iteration `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Save the current state (the state before step `step`) into `slot`.
    Store {
        /// Where to save it.
        slot: usize,
        /// Which state it is.
        step: usize,
    },
    /// Make the state saved in `slot` (the state before step `step`) the
    /// current state.
    Restore {
        /// Where it was saved.
        slot: usize,
        /// Which state it is.
        step: usize,
    },
    /// Run steps `from..to` plainly (no tape), starting from the current
    /// state, which is the state before `from`.
    Advance {
        /// First step to run.
        from: usize,
        /// One past the last step to run.
        to: usize,
    },
    /// Run step `step` taped from the current state, then its adjoint.
    /// Afterwards the current state is undefined until the next `Restore`.
    Reverse {
        /// The step; steps are reversed in the order `n−1, n−2, …, 0`.
        step: usize,
    },
    /// Run only the adjoint of step `step`: the forward phase already ran it
    /// taped ([`StepMode::Taped`]) and kept that tape. Only ever the first
    /// action of a reverse phase.
    Adjoint {
        /// The step (the last one, `n − 1`).
        step: usize,
    },
    /// The reverse phase is over; every step has been reversed.
    Done,
}

/// How the forward phase runs one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepMode {
    /// Primal step only.
    Plain,
    /// Primal step recording its one-iteration tape, which the reverse phase
    /// consumes with [`Action::Adjoint`].
    Taped,
}

/// The forward phase's instruction for one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForwardStep {
    /// Save the state before this step into this slot first.
    pub store: Option<usize>,
    /// Then run the step plainly or taped.
    pub mode: StepMode,
}

/// Counts of what a schedule made generated code do; every scheme reports
/// them, and [`record`](super::record) collects them per checkpointed loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Loop iterations `n`.
    pub steps: usize,
    /// Plain (untaped) step executions, the forward phase included.
    pub forward_steps: usize,
    /// Of those, the ones run during the reverse phase (recomputation).
    pub recomputed_steps: usize,
    /// Steps reversed (`Reverse` and `Adjoint` actions, and the forward phase's
    /// [`StepMode::Taped`] step): each step exactly once, so `n`. Generated code tapes
    /// such a step, or, where the step's adjoint reads only its restored starting state,
    /// runs its adjoint from that state without re-running it.
    pub taped_steps: usize,
    /// Snapshots saved.
    pub stores: usize,
    /// Snapshots loaded.
    pub restores: usize,
    /// The most snapshots held at one time.
    pub max_live_snapshots: usize,
}

impl Add for Stats {
    type Output = Stats;

    /// Sums the counts of two phases; `steps` and `max_live_snapshots` take
    /// the larger value.
    fn add(self, other: Stats) -> Stats {
        Stats {
            steps: self.steps.max(other.steps),
            forward_steps: self.forward_steps + other.forward_steps,
            recomputed_steps: self.recomputed_steps + other.recomputed_steps,
            taped_steps: self.taped_steps + other.taped_steps,
            stores: self.stores + other.stores,
            restores: self.restores + other.restores,
            max_live_snapshots: self.max_live_snapshots.max(other.max_live_snapshots),
        }
    }
}

/// A checkpointing schedule, driven in two phases.
///
/// **Forward phase** (the primal loop): before step `i` (`i = 0, 1, …` in
/// order) call [`forward_step(i)`](Self::forward_step), store the state if
/// told to, and run the step as told. When the loop has ended after `n`
/// steps, call [`end_forward(n)`](Self::end_forward).
///
/// **Reverse phase** (later, after arbitrary code): call
/// [`next_reverse`](Self::next_reverse) and execute each [`Action`] until
/// [`Action::Done`].
///
/// Schedules built for a known trip count `n` run step `n − 1` taped in the
/// forward phase and start the reverse phase with its [`Action::Adjoint`];
/// schedules for an unknown trip count run every forward step plainly.
///
/// ```
/// use ad_core::checkpoint::{revolve_forward_steps, Action, Revolve, Schedule};
///
/// // Drive Revolve for 100 steps with 4 slots, counting what it asks for.
/// let (n, slots) = (100, 4);
/// let mut schedule = Revolve::new(n, slots).unwrap();
/// for i in 0..n {
///     schedule.forward_step(i);
/// }
/// schedule.end_forward(n);
/// let mut reversed = Vec::new();
/// loop {
///     match schedule.next_reverse() {
///         Action::Reverse { step } | Action::Adjoint { step } => reversed.push(step),
///         Action::Done => break,
///         _ => {}
///     }
/// }
/// assert_eq!(reversed, (0..n).rev().collect::<Vec<_>>()); // every step once, last first
/// let stats = schedule.stats();
/// assert_eq!(stats.forward_steps, revolve_forward_steps(n, slots));
/// assert!(stats.max_live_snapshots <= slots);
/// ```
pub trait Schedule {
    /// What to do before and for forward step `step`.
    ///
    /// # Panics
    /// If steps are skipped or repeated, or the trip count given at
    /// construction is exceeded.
    fn forward_step(&mut self, step: usize) -> ForwardStep;

    /// The forward phase ran `n_steps` steps; prepares the reverse phase.
    ///
    /// # Panics
    /// If `n_steps` is not the number of [`forward_step`](Self::forward_step)
    /// calls, or differs from the trip count given at construction.
    fn end_forward(&mut self, n_steps: usize);

    /// The next reverse-phase action; [`Action::Done`] from then on.
    ///
    /// # Panics
    /// If called before [`end_forward`](Self::end_forward).
    fn next_reverse(&mut self) -> Action;

    /// What the schedule has done so far.
    fn stats(&self) -> Stats;

    /// The scheme's name as written in the attribute (`"revolve"`, …).
    fn name(&self) -> &'static str;
}

/// A checkpointing scheme as written in `#[checkpoint(...)]`.
///
/// ```
/// use ad_core::checkpoint::{Scheme, StepMode};
///
/// let mut schedule = Scheme::Revolve { snapshots: 2 }.schedule(Some(3)).unwrap();
/// assert_eq!(schedule.name(), "revolve");
/// let modes: Vec<StepMode> = (0..3).map(|i| schedule.forward_step(i).mode).collect();
/// assert_eq!(modes, [StepMode::Plain, StepMode::Plain, StepMode::Taped]);
///
/// assert!(Scheme::Online { snapshots: 0 }.schedule(None).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Binomial checkpointing with `snapshots` slots: the fewest
    /// recomputations possible ([`Revolve`]).
    Revolve {
        /// Snapshot slots, at least 1.
        snapshots: usize,
    },
    /// A snapshot every `every` steps, segments recomputed with all their
    /// states stored ([`Periodic`]).
    Periodic {
        /// Steps between stored states, at least 1.
        every: usize,
    },
    /// For loops whose trip count is unknown until they end ([`Online`]).
    Online {
        /// Snapshot slots, at least 1.
        snapshots: usize,
    },
}

impl Scheme {
    /// The schedule for a loop of `trip_count` steps (`None`: unknown until
    /// the loop ends, as for `while`). Revolve needs the trip count, so
    /// `Revolve` with `None` gives an [`Online`] schedule with as many
    /// snapshots; `Online` ignores a known trip count.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidParameter`] for 0 snapshots or `every = 0`.
    pub fn schedule(
        self,
        trip_count: Option<usize>,
    ) -> Result<Box<dyn Schedule + Send>, CheckpointError> {
        Ok(match (self, trip_count) {
            (Scheme::Revolve { snapshots }, Some(n_steps)) => {
                Box::new(Revolve::new(n_steps, snapshots)?)
            }
            (Scheme::Revolve { snapshots }, None) | (Scheme::Online { snapshots }, _) => {
                Box::new(Online::new(snapshots)?)
            }
            (Scheme::Periodic { every }, trip_count) => Box::new(Periodic::new(every, trip_count)?),
        })
    }
}

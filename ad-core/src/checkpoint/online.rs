//! Online checkpointing for loops whose trip count is unknown until they
//! end: snapshots placed as the loop runs, then a binomial reversal between
//! the ones retained.

use std::collections::{BTreeMap, VecDeque};

use super::binomial::beta;
use super::reversal::{with_reversal, Checkpoint, Reversal, SlotPool};
use super::{Action, CheckpointError, ForwardStep, Schedule, Stats, StepMode};

/// Online checkpointing with `s` snapshot slots, in the spirit of Stumm &
/// Walther's r = 2 algorithm ("New algorithms for optimal online
/// checkpointing", SIAM J. Sci. Comput. 32(2), 2010); the placement rule
/// below is this crate's own.
///
/// Every forward step runs plain (the loop does not know which step is its
/// last). When it ends after `n` steps, the retained snapshots at steps
/// `p_0 = 0 < p_1 < … < p_k` split the steps into segments that the
/// reverse phase takes from the last, each with Revolve's binomial rule and
/// the slots then free: segment `j` gets `s − j` slots. Its cost is the
/// `n` forward steps plus `Σ_j T(L_j, s − j)` (`T` the binomial optimum),
/// so segment `j` is cheapest, `L_j − 1` plain steps, while
/// `L_j ≤ β(s − j, 1) = s − j + 1`.
///
/// **Placement at level R** (starting at R = 1): segment `j` may hold up to
/// `cap_j = β(s − j, R)` steps. The states at the *permanent* positions
/// `P_j = cap_0 + … + cap_{j−1}` are always stored (they are where the
/// segments of the full configuration start); the other stored states are
/// *temporary*. While a slot is free, every state is stored. Afterwards,
/// before step `i` the state is stored if `i` is permanent or the last
/// segment is full, in place of the oldest temporary snapshot — when the
/// merge this causes keeps its segment within its cap. Otherwise the level
/// rises (`R + 1`, all caps grow) and the decision is made again.
///
/// **Optimality.** For R = 1 the segments never exceed their caps and all
/// `s` slots are used, so for every `n < β(s, 2) = (s+1)(s+2)/2` the total is
/// `2n − min(n, s)` plain steps, and `2n − s + 1` at `n = β(s, 2)`: the
/// least any placement can achieve for a loop whose last step runs plain
/// (each segment costs at least `L_j − 1`, at most `s` segments), and at
/// most two more than offline [`Revolve`](super::Revolve), which knows `n`
/// and tapes the last step in its forward sweep. Tests check both for
/// `s ≤ 10`.
///
/// **Beyond `β(s, 2)`** (the continuation): the level rises, the same rule
/// runs with caps `β(s − j, R)`, and the reversal stays binomial between the
/// retained snapshots. This is sound for any `n` with at most `s` slots, and
/// tests find it within 25 % of the best offline placement of snapshots in
/// the same plain-forward model for `s ≤ 6, n ≤ 300`; it is not the optimal
/// r = 3 algorithm of Stumm & Walther.
///
/// **Stores.** The forward phase stores about once every `R + 1` steps
/// (the last segment's cap is `R + 1`), the reversal about once per
/// recomputed step: a store costs a copy of the state (a file write on
/// disk), never a recomputation.
///
/// ```
/// use ad_core::checkpoint::{Action, Online, Schedule, StepMode};
///
/// let mut online = Online::new(2).unwrap();
/// for i in 0..5 {
///     assert_eq!(online.forward_step(i).mode, StepMode::Plain);
/// }
/// online.end_forward(5); // 5 = β(2, 2) − 1 steps: 2·5 − 2 plain steps in all
/// while online.next_reverse() != Action::Done {}
/// assert_eq!(online.stats().forward_steps, 8);
/// ```
#[derive(Clone, Debug)]
pub struct Online {
    snapshots: usize,
    level: usize,
    /// `P_j` for the current level, ascending (saturating at `usize::MAX`).
    permanent: Vec<usize>,
    /// Retained snapshots: step → slot.
    held: BTreeMap<usize, usize>,
    /// The newest retained step (the largest).
    newest: usize,
    /// Steps of the retained snapshots that are permanent, ascending.
    held_permanent: Vec<usize>,
    /// Steps of the retained snapshots that are not permanent, ascending.
    temporaries: VecDeque<usize>,
    pool: Option<SlotPool>,
    next_step: usize,
    forward: Stats,
    reversal: Option<Reversal>,
}

impl Online {
    /// The schedule with `snapshots` slots.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidParameter`] if `snapshots` is 0.
    pub fn new(snapshots: usize) -> Result<Self, CheckpointError> {
        if snapshots == 0 {
            return Err(CheckpointError::InvalidParameter {
                scheme: "online",
                parameter: "snapshots",
                value: 0,
            });
        }
        let mut online = Online {
            snapshots,
            level: 1,
            permanent: Vec::new(),
            held: BTreeMap::new(),
            newest: 0,
            held_permanent: Vec::new(),
            temporaries: VecDeque::new(),
            pool: Some(SlotPool::new(snapshots)),
            next_step: 0,
            forward: Stats::default(),
            reversal: None,
        };
        online.set_level(1);
        Ok(online)
    }

    /// The placement level `R` reached so far (1 while `n < β(s, 2)`).
    pub fn level(&self) -> usize {
        self.level
    }

    /// The steps whose states are held now, ascending.
    pub fn retained_steps(&self) -> Vec<usize> {
        self.held.keys().copied().collect()
    }

    /// How many steps segment `j` may hold at the current level.
    fn cap(&self, segment: usize) -> u128 {
        beta(self.snapshots - segment, self.level)
    }

    fn set_level(&mut self, level: usize) {
        self.level = level;
        let mut position: u128 = 0;
        self.permanent.clear();
        for segment in 0..self.snapshots {
            self.permanent
                .push(usize::try_from(position).unwrap_or(usize::MAX));
            position = position.saturating_add(self.cap(segment));
        }
        let (permanent, temporary): (Vec<usize>, Vec<usize>) =
            self.held.keys().partition(|&&step| self.is_permanent(step));
        self.held_permanent = permanent;
        self.temporaries = temporary.into();
    }

    fn is_permanent(&self, step: usize) -> bool {
        self.permanent.binary_search(&step).is_ok()
    }

    /// Stores the state before `step` in a new slot.
    fn store(&mut self, step: usize) -> usize {
        let slot = self.pool.as_mut().expect("forward phase ended").take();
        self.held.insert(step, slot);
        self.newest = step;
        if self.is_permanent(step) {
            self.held_permanent.push(step);
        } else {
            self.temporaries.push_back(step);
        }
        self.forward.stores += 1;
        slot
    }

    /// Whether the state before `step` is stored, and where.
    fn place(&mut self, step: usize) -> Option<usize> {
        if self.held.len() < self.snapshots {
            return Some(self.store(step));
        }
        loop {
            let last_segment = self.held.len() - 1;
            let full = (step - self.newest) as u128 + 1 > self.cap(last_segment);
            if !full && !self.is_permanent(step) {
                return None;
            }
            if let Some(&oldest) = self.temporaries.front() {
                // Only permanent snapshots come before the oldest temporary
                // one (step 0 is always one), so its segment index is their count.
                let index = self.held_permanent.partition_point(|&p| p < oldest);
                let previous = self.held_permanent[index - 1];
                let next = [self.temporaries.get(1), self.held_permanent.get(index)]
                    .into_iter()
                    .flatten()
                    .min()
                    .map_or(step, |&next| next);
                if (next - previous) as u128 <= self.cap(index - 1) {
                    self.temporaries.pop_front();
                    let slot = self.held.remove(&oldest).expect("temporaries are held");
                    self.pool
                        .as_mut()
                        .expect("forward phase ended")
                        .give_back(slot);
                    return Some(self.store(step));
                }
            }
            self.set_level(self.level + 1);
        }
    }
}

impl Schedule for Online {
    fn forward_step(&mut self, step: usize) -> ForwardStep {
        assert_eq!(
            step, self.next_step,
            "checkpointed loop: steps must run in order"
        );
        self.next_step += 1;
        self.forward.forward_steps += 1;
        ForwardStep {
            store: self.place(step),
            mode: StepMode::Plain,
        }
    }

    fn end_forward(&mut self, n_steps: usize) {
        assert_eq!(
            n_steps, self.next_step,
            "checkpointed loop ended after {} steps, not {n_steps}",
            self.next_step
        );
        let pool = self.pool.take().expect("`end_forward` called twice");
        self.forward.max_live_snapshots = pool.max_live();
        let checkpoints = std::mem::take(&mut self.held)
            .into_iter()
            .map(|(step, slot)| Checkpoint { step, slot })
            .collect();
        self.held_permanent.clear();
        self.temporaries.clear();
        self.reversal = Some(Reversal::from_checkpoints(n_steps, checkpoints, pool));
    }

    fn next_reverse(&mut self) -> Action {
        self.reversal
            .as_mut()
            .expect("reverse phase started before `end_forward`")
            .next()
    }

    fn stats(&self) -> Stats {
        let forward = Stats {
            steps: self.next_step,
            ..self.forward
        };
        with_reversal(forward, self.reversal.as_ref())
    }

    fn name(&self) -> &'static str {
        "online"
    }
}

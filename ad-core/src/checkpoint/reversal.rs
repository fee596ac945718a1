//! The binomial reversal engine every scheme ends in: given the snapshots
//! held (and possibly the current state), it emits the [`Action`]s that
//! reverse the steps not yet reversed, splitting each range optimally with
//! the free slots (see [`split`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::binomial::split;
use super::{Action, Stats};

/// Snapshot slot indices: hands out the smallest free one, so the indices in
/// use stay below the most ever held at once.
#[derive(Clone, Debug)]
pub(crate) struct SlotPool {
    capacity: usize,
    returned: BinaryHeap<Reverse<usize>>,
    never_used: usize,
    live: usize,
    max_live: usize,
}

impl SlotPool {
    /// A pool of `capacity` slots, all free.
    pub(crate) fn new(capacity: usize) -> Self {
        SlotPool {
            capacity,
            returned: BinaryHeap::new(),
            never_used: 0,
            live: 0,
            max_live: 0,
        }
    }

    /// Takes the smallest free slot.
    ///
    /// # Panics
    /// If all `capacity` slots are taken (a schedule bug).
    pub(crate) fn take(&mut self) -> usize {
        assert!(
            self.live < self.capacity,
            "checkpoint schedule ran out of slots"
        );
        self.live += 1;
        self.max_live = self.max_live.max(self.live);
        match self.returned.pop() {
            Some(Reverse(slot)) => slot,
            None => {
                self.never_used += 1;
                self.never_used - 1
            }
        }
    }

    /// Frees `slot`.
    pub(crate) fn give_back(&mut self, slot: usize) {
        self.live -= 1;
        self.returned.push(Reverse(slot));
    }

    /// Slots not taken.
    pub(crate) fn free(&self) -> usize {
        self.capacity - self.live
    }

    /// Slots taken now.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// The most slots ever taken at once.
    pub(crate) fn max_live(&self) -> usize {
        self.max_live
    }

    /// Changes the number of slots (never below those taken).
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        assert!(capacity >= self.live);
        self.capacity = capacity;
    }
}

/// A held snapshot: the state before `step`, saved in `slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub(crate) step: usize,
    pub(crate) slot: usize,
}

/// Emits the actions that reverse steps `0..unreversed`.
///
/// Invariants: `checkpoints` is sorted by step, every step is below
/// `unreversed`, and each one's slot is taken in `pool`; `current` (when
/// defined) is at or after the last checkpoint and below `unreversed`.
/// Each call of [`next`](Self::next) does one of: reverse the step just
/// before `unreversed` when the current state is its state; restore the
/// last checkpoint when the current state is undefined; store the current
/// state when it is not yet held; otherwise advance by the binomial split
/// of the range up to `unreversed` with the free slots plus the held start.
#[derive(Clone, Debug)]
pub(crate) struct Reversal {
    checkpoints: Vec<Checkpoint>,
    current: Option<usize>,
    unreversed: usize,
    pool: SlotPool,
    stats: Stats,
}

impl Reversal {
    /// Reverses `n_steps` steps starting from the current state before step
    /// 0, nothing stored yet: Revolve's full schedule, forward sweep included.
    pub(crate) fn from_start(n_steps: usize, pool: SlotPool) -> Self {
        Reversal {
            checkpoints: Vec::new(),
            current: Some(0),
            unreversed: n_steps,
            pool,
            stats: Stats::default(),
        }
    }

    /// Reverses steps `0..unreversed` from the held `checkpoints` (sorted,
    /// the first at step 0 unless there is nothing to reverse), the current
    /// state undefined.
    pub(crate) fn from_checkpoints(
        unreversed: usize,
        checkpoints: Vec<Checkpoint>,
        pool: SlotPool,
    ) -> Self {
        assert!(
            unreversed == 0 || checkpoints.first().map(|c| c.step) == Some(0),
            "the initial state must be held"
        );
        debug_assert!(checkpoints.windows(2).all(|w| w[0].step < w[1].step));
        debug_assert!(checkpoints.iter().all(|c| c.step < unreversed.max(1)));
        Reversal {
            checkpoints,
            current: None,
            unreversed,
            pool,
            stats: Stats::default(),
        }
    }

    /// The next action; [`Action::Done`] once every step is reversed.
    pub(crate) fn next(&mut self) -> Action {
        if self.unreversed == 0 {
            return Action::Done;
        }
        let last_held = self.checkpoints.last().copied();
        let Some(current) = self.current else {
            let held = last_held.expect("a reversal needs a held state");
            self.current = Some(held.step);
            self.stats.restores += 1;
            return Action::Restore {
                slot: held.slot,
                step: held.step,
            };
        };
        if current + 1 == self.unreversed {
            if let Some(held) = last_held.filter(|held| held.step == current) {
                self.checkpoints.pop();
                self.pool.give_back(held.slot);
            }
            self.unreversed -= 1;
            self.current = None;
            self.stats.taped_steps += 1;
            return Action::Reverse { step: current };
        }
        if last_held.map(|held| held.step) != Some(current) {
            let slot = self.pool.take();
            self.checkpoints.push(Checkpoint {
                step: current,
                slot,
            });
            self.stats.stores += 1;
            return Action::Store {
                slot,
                step: current,
            };
        }
        let to = current + split(self.unreversed - current, self.pool.free() + 1);
        self.current = Some(to);
        self.stats.forward_steps += to - current;
        Action::Advance { from: current, to }
    }

    /// Counts so far (`steps` left 0; `max_live_snapshots` from the pool).
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            max_live_snapshots: self.pool.max_live(),
            ..self.stats
        }
    }
}

/// The counts of a forward phase plus those of its reversal (whose plain steps are
/// recomputations).
pub(crate) fn with_reversal(forward: Stats, reversal: Option<&Reversal>) -> Stats {
    match reversal {
        Some(reversal) => {
            let reverse = reversal.stats();
            forward
                + Stats {
                    recomputed_steps: reverse.forward_steps,
                    ..reverse
                }
        }
        None => forward,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_hands_out_the_smallest_free_slot() {
        let mut pool = SlotPool::new(3);
        assert_eq!((pool.take(), pool.take(), pool.take()), (0, 1, 2));
        assert_eq!(pool.free(), 0);
        pool.give_back(1);
        pool.give_back(0);
        assert_eq!(pool.take(), 0);
        assert_eq!((pool.live(), pool.max_live()), (2, 3));
    }

    #[test]
    #[should_panic(expected = "ran out of slots")]
    fn pool_refuses_to_overfill() {
        let mut pool = SlotPool::new(1);
        pool.take();
        pool.take();
    }

    #[test]
    fn three_steps_two_slots() {
        let mut reversal = Reversal::from_start(3, SlotPool::new(2));
        let actions: Vec<Action> = core::iter::from_fn(|| match reversal.next() {
            Action::Done => None,
            action => Some(action),
        })
        .collect();
        use Action::*;
        assert_eq!(
            actions,
            [
                Store { slot: 0, step: 0 },
                Advance { from: 0, to: 1 },
                Store { slot: 1, step: 1 },
                Advance { from: 1, to: 2 },
                Reverse { step: 2 },
                Restore { slot: 1, step: 1 },
                Reverse { step: 1 },
                Restore { slot: 0, step: 0 },
                Reverse { step: 0 },
            ]
        );
    }
}

//! The schedule simulator: executes a schedule's actions on a fake state
//! whose value is its step index, so every instruction can be checked — a
//! restore must bring back the stored index, an advance must start where the
//! state is, steps must be reversed at their own state in the order
//! `n−1, …, 0`, and slots must stay below the limit. The grids below run
//! every scheme through it and compare its counts with the closed forms.

use super::binomial::beta;
use super::{
    revolve_forward_steps, Action, ForwardStep, Online, Periodic, Revolve, Schedule, Stats,
    StepMode,
};

/// Executes `schedule` for a loop of `n` steps and returns the counts it
/// observed (`max_live_snapshots` is the schedule's own report, checked
/// against `slot_limit`).
///
/// # Panics
/// On any invalid instruction, naming it.
fn simulate(schedule: &mut dyn Schedule, n: usize, slot_limit: usize, trip_known: bool) -> Stats {
    let mut slots: Vec<Option<usize>> = vec![None; slot_limit];
    let mut seen = Stats {
        steps: n,
        ..Stats::default()
    };
    let store = |slots: &mut Vec<Option<usize>>, slot: usize, step: usize| {
        assert!(slot < slot_limit, "slot {slot} is outside 0..{slot_limit}");
        slots[slot] = Some(step);
    };

    let mut kept_tape = None;
    for i in 0..n {
        let ForwardStep { store: slot, mode } = schedule.forward_step(i);
        if let Some(slot) = slot {
            store(&mut slots, slot, i);
            seen.stores += 1;
        }
        match mode {
            StepMode::Plain => seen.forward_steps += 1,
            StepMode::Taped => {
                assert!(trip_known && i + 1 == n, "step {i} of {n} taped forward");
                kept_tape = Some(i);
                seen.taped_steps += 1;
            }
        }
    }
    schedule.end_forward(n);
    let forward_phase_steps = seen.forward_steps;

    let mut state = None; // undefined after the forward phase
    let mut unreversed = n;
    let mut budget = 4 * n * n + 16;
    for index in 0.. {
        budget -= 1;
        assert!(budget > 0, "the schedule does not terminate");
        match schedule.next_reverse() {
            Action::Store { slot, step } => {
                assert_eq!(state, Some(step), "store of state {step}");
                store(&mut slots, slot, step);
                seen.stores += 1;
            }
            Action::Restore { slot, step } => {
                assert_eq!(
                    slots.get(slot).copied().flatten(),
                    Some(step),
                    "restore of state {step}"
                );
                state = Some(step);
                seen.restores += 1;
            }
            Action::Advance { from, to } => {
                assert_eq!(state, Some(from), "advance from {from}");
                assert!(
                    from < to && to < unreversed,
                    "advance {from}..{to} of {unreversed}"
                );
                seen.forward_steps += to - from;
                state = Some(to);
            }
            Action::Reverse { step } => {
                assert_eq!(step + 1, unreversed, "reverse out of order");
                assert_eq!(state, Some(step), "reverse of step {step}");
                unreversed -= 1;
                state = None;
                seen.taped_steps += 1;
            }
            Action::Adjoint { step } => {
                assert_eq!(index, 0, "an adjoint of a kept tape comes first");
                assert_eq!(kept_tape.take(), Some(step), "adjoint without a kept tape");
                assert_eq!(step + 1, unreversed);
                unreversed -= 1;
            }
            Action::Done => break,
        }
    }
    assert_eq!(unreversed, 0, "done with steps left");
    assert_eq!(kept_tape, None, "the forward phase's tape was never used");
    assert_eq!(schedule.next_reverse(), Action::Done);
    let reported = schedule.stats();
    assert!(reported.max_live_snapshots <= slot_limit);
    seen.recomputed_steps = seen.forward_steps - forward_phase_steps;
    seen.max_live_snapshots = reported.max_live_snapshots;
    assert_eq!(reported, seen, "reported and observed counts differ");
    seen
}

/// Runs `check` over a grid and collects the first failure.
fn over_grid(
    ns: impl IntoIterator<Item = usize>,
    params: impl IntoIterator<Item = usize> + Clone,
    check: impl Fn(usize, usize) -> Result<(), String>,
) -> Result<(), String> {
    for n in ns {
        for p in params.clone() {
            check(n, p)?;
        }
    }
    Ok(())
}

/// Simulated Revolve against `expected`.
fn revolve_matches(n: usize, s: usize, expected: fn(usize, usize) -> Stats) -> Result<(), String> {
    let seen = simulate(&mut Revolve::new(n, s).unwrap(), n, s, true);
    let want = expected(n, s);
    (seen == want)
        .then_some(())
        .ok_or(format!("n = {n}, s = {s}: {seen:?} != {want:?}"))
}

/// Simulated Periodic against its closed form.
fn periodic_matches(n: usize, every: usize, known: bool) -> Result<(), String> {
    let want = Periodic::expected_stats(n, every, known);
    let limit = want.max_live_snapshots.max(1);
    let trip_count = known.then_some(n);
    let seen = simulate(
        &mut Periodic::new(every, trip_count).unwrap(),
        n,
        limit,
        known,
    );
    (seen == want)
        .then_some(())
        .ok_or(format!("n = {n}, K = {every}: {seen:?} != {want:?}"))
}

#[test]
fn revolve_counts_match_the_closed_forms_on_a_grid() {
    over_grid(0..=300, 1..=12, |n, s| {
        revolve_matches(n, s, Revolve::optimal_stats)
    })
    .unwrap();
}

#[test]
fn revolve_counts_match_the_closed_forms_for_large_loops() {
    for (n, s) in [
        (10_000, 1_000),
        (65, 64),
        (64, 64),
        (20_000, 7),
        (200_000, 100),
        (3_000, 2),
    ] {
        revolve_matches(n, s, Revolve::optimal_stats).unwrap();
    }
    let stats = simulate(
        &mut Revolve::new(10_000, 1_000).unwrap(),
        10_000,
        1_000,
        true,
    );
    assert_eq!((stats.forward_steps, stats.stores), (18_998, 8_999));
    assert_eq!(
        (stats.restores, stats.taped_steps, stats.max_live_snapshots),
        (9_999, 10_000, 1_000)
    );
}

#[test]
fn a_wrong_closed_form_is_caught() {
    let one_store_too_many = |n, s| Stats {
        stores: Revolve::optimal_stats(n, s).stores + 1,
        ..Revolve::optimal_stats(n, s)
    };
    let r_too_large = |n: usize, s| Stats {
        forward_steps: revolve_forward_steps(n, s + 1),
        ..Revolve::optimal_stats(n, s)
    };
    assert!(over_grid(0..=30, 1..=4, |n, s| revolve_matches(
        n,
        s,
        one_store_too_many
    ))
    .is_err());
    assert!(over_grid(0..=30, 1..=4, |n, s| revolve_matches(n, s, r_too_large)).is_err());
}

#[test]
fn periodic_counts_match_the_closed_forms_on_a_grid() {
    for known in [true, false] {
        over_grid(0..=300, 1..=12, |n, every| {
            periodic_matches(n, every, known)
        })
        .unwrap();
    }
    assert!(periodic_matches(7, 3, true).is_ok());
    // The closed form for one trip-count mode does not fit the other.
    let mixed = |n, every| {
        let seen = simulate(
            &mut Periodic::new(every, None).unwrap(),
            n,
            n + every,
            false,
        );
        let want = Periodic::expected_stats(n, every, true);
        (seen == want).then_some(()).ok_or(())
    };
    assert!(mixed(7, 3).is_err());
}

#[test]
fn periodic_memory_is_bounded_by_segments_plus_period() {
    for (n, every) in [(1_000, 10), (1_000, 1), (999, 1_000), (12_345, 111)] {
        let stats = Periodic::expected_stats(n, every, false);
        assert!(stats.max_live_snapshots <= n.div_ceil(every) + every);
        assert!(stats.recomputed_steps < n);
    }
}

/// Plain steps of the best offline placement of at most `s` snapshots when
/// every forward step runs plain (Online's model), for `n = 0..=n_max`: `n`
/// plus the cheapest binomial reversal of segments with `s, s−1, …` slots.
fn best_offline_placements(n_max: usize, s: usize) -> Vec<usize> {
    let binomial: Vec<Vec<usize>> = (0..=n_max)
        .map(|steps| {
            (0..=s)
                .map(|d| {
                    if d == 0 {
                        0
                    } else {
                        revolve_forward_steps(steps, d)
                    }
                })
                .collect()
        })
        .collect();
    // reversal[rest][d]: reverse `rest` steps, the first segment with d slots.
    let mut reversal = vec![vec![0; s + 1]; n_max + 1];
    for d in 1..=s {
        for rest in 1..=n_max {
            let mut best = binomial[rest][d];
            if d > 1 {
                for first in 1..rest {
                    best = best.min(binomial[first][d] + reversal[rest - first][d - 1]);
                }
            }
            reversal[rest][d] = best;
        }
    }
    (0..=n_max).map(|n| n + reversal[n][s]).collect()
}

#[test]
fn online_is_valid_and_r2_optimal_on_a_grid() {
    for s in 1..=10 {
        let r2_limit = beta(s, 2) as usize;
        for n in 0..=500 {
            let mut online = Online::new(s).unwrap();
            let stats = simulate(&mut online, n, s, false);
            assert_eq!((stats.taped_steps, stats.restores), (n, n));
            if n < r2_limit {
                assert_eq!(stats.forward_steps, 2 * n - n.min(s), "n = {n}, s = {s}");
            } else if n == r2_limit {
                assert_eq!(stats.forward_steps, 2 * n - s + 1, "n = {n}, s = {s}");
            }
        }
    }
}

#[test]
fn online_matches_the_best_offline_placement_up_to_beta_s_2_and_stays_close_beyond() {
    for s in 1..=6 {
        let r2_limit = beta(s, 2) as usize;
        let best_placements = best_offline_placements(300, s);
        for (n, &best) in best_placements.iter().enumerate().skip(1) {
            let got = simulate(&mut Online::new(s).unwrap(), n, s, false).forward_steps;
            if n <= r2_limit {
                assert_eq!(got, best, "n = {n}, s = {s}");
            } else {
                assert!(got * 4 <= best * 5, "n = {n}, s = {s}: {got} vs {best}");
            }
        }
    }
}

#[test]
fn online_handles_long_loops_with_few_and_many_slots() {
    for (n, s) in [(50_000, 1), (20_000, 3), (100_000, 64), (5, 1_000)] {
        let stats = simulate(&mut Online::new(s).unwrap(), n, s, false);
        assert!(stats.max_live_snapshots <= s);
        assert!(stats.forward_steps >= 2 * n - n.min(s));
    }
}

#[test]
fn online_places_permanent_snapshots_at_binomial_positions() {
    let mut online = Online::new(3).unwrap();
    for i in 0..9 {
        online.forward_step(i);
    }
    // β(3, 2) − 1 = 9 steps: segments of β(3,1), β(2,1), β(1,1) = 4, 3, 2.
    assert_eq!(online.retained_steps(), [0, 4, 7]);
    assert_eq!(online.level(), 1);
    online.forward_step(9);
    assert_eq!(online.level(), 2);
}

/// A schedule with one instruction corrupted, to show the simulator rejects it.
struct Corrupted<S> {
    inner: S,
    corrupt: fn(Action) -> Option<Action>,
    done: bool,
    /// Stores the schedule claims on top of the real ones.
    extra_stores: usize,
}

impl<S: Schedule> Schedule for Corrupted<S> {
    fn forward_step(&mut self, step: usize) -> ForwardStep {
        self.inner.forward_step(step)
    }
    fn end_forward(&mut self, n_steps: usize) {
        self.inner.end_forward(n_steps)
    }
    fn next_reverse(&mut self) -> Action {
        let action = self.inner.next_reverse();
        if self.done {
            return action;
        }
        match (self.corrupt)(action) {
            Some(changed) => {
                self.done = true;
                changed
            }
            None => action,
        }
    }
    fn stats(&self) -> Stats {
        let stats = self.inner.stats();
        Stats {
            stores: stats.stores + self.extra_stores,
            ..stats
        }
    }
    fn name(&self) -> &'static str {
        "corrupted"
    }
}

fn run_corrupted(corrupt: fn(Action) -> Option<Action>, extra_stores: usize) {
    let inner = Revolve::new(40, 3).unwrap();
    let mut corrupted = Corrupted {
        inner,
        corrupt,
        done: false,
        extra_stores,
    };
    simulate(&mut corrupted, 40, 3, true);
}

#[test]
fn simulator_accepts_the_uncorrupted_schedule() {
    run_corrupted(|_| None, 0);
}

#[test]
#[should_panic(expected = "restore of state")]
fn simulator_rejects_a_restore_of_the_wrong_state() {
    run_corrupted(
        |a| match a {
            Action::Restore { slot, step } if step > 0 => Some(Action::Restore {
                slot,
                step: step - 1,
            }),
            _ => None,
        },
        0,
    );
}

#[test]
#[should_panic(expected = "reverse")]
fn simulator_rejects_a_reverse_at_the_wrong_state() {
    run_corrupted(
        |a| match a {
            Action::Advance { from, to } if to > from + 1 => {
                Some(Action::Advance { from, to: to - 1 })
            }
            _ => None,
        },
        0,
    );
}

#[test]
#[should_panic(expected = "reported and observed counts differ")]
fn simulator_rejects_a_miscounting_schedule() {
    run_corrupted(|_| None, 1);
}

#[test]
#[should_panic(expected = "outside 0..3")]
fn simulator_rejects_slots_beyond_the_limit() {
    run_corrupted(
        |a| match a {
            Action::Store { step, .. } => Some(Action::Store { slot: 3, step }),
            _ => None,
        },
        0,
    );
}

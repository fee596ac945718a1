//! Binomial checkpointing arithmetic (Griewank & Walther, "Algorithm 799:
//! Revolve", ACM TOMS 26(1), 2000): the numbers `β(d, r) = C(d + r, r)`,
//! the repetition number, the optimal split of a range, and the closed forms
//! of Revolve's costs.
//!
//! Notation: a *range* of `L` steps whose start state is held in a snapshot
//! slot is reversed with `d` slots (the start's own slot included).
//! `β(d, r)` is the largest `L` that `d` slots reverse with every step run
//! plain at most `r` times; the *repetition number* `r(L, d)` is the least
//! such `r`. The minimal number of plain steps is
//! `T(L, d) = r·L − β(d + 1, r − 1)` (with `T(1, d) = 0`: a one-step range
//! is just run taped and reversed).

/// `β(d, r) = C(d + r, r)`, exact, saturating at `u128::MAX`.
pub(crate) fn beta(d: usize, r: usize) -> u128 {
    let k = d.min(r) as u128;
    let top = d as u128 + r as u128;
    let mut c: u128 = 1;
    for i in 1..=k {
        // C(top − k + i, i) = C(top − k + i − 1, i − 1)·(top − k + i)/i, exactly.
        c = match c.checked_mul(top - k + i) {
            Some(product) => product / i,
            None => return u128::MAX,
        };
    }
    c
}

/// `β(d, r)` where a negative `d` or `r` (written `None`) gives 0.
fn beta_or_zero(d: Option<usize>, r: Option<usize>) -> u128 {
    match (d, r) {
        (Some(d), Some(r)) => beta(d, r),
        _ => 0,
    }
}

/// The repetition number: the least `r` with `β(d, r) ≥ steps` (`d ≥ 1`).
pub(crate) fn repetitions(steps: usize, snapshots: usize) -> usize {
    assert!(snapshots >= 1 || steps <= 1, "no snapshot to reverse from");
    if snapshots == 1 {
        return steps.saturating_sub(1); // β(1, r) = r + 1
    }
    let (target, d) = (steps as u128, snapshots as u128);
    let (mut r, mut b) = (0_u128, 1_u128);
    while b < target {
        r += 1;
        b = b
            .checked_mul(d + r)
            .map_or(u128::MAX, |product| product / r);
    }
    r as usize
}

/// How far to advance from the held start of a range of `steps ≥ 2` steps
/// with `snapshots ≥ 1` slots before storing the next snapshot.
///
/// Any `m` with `β(d, r−2) ≤ m ≤ β(d, r−1)` and
/// `β(d−1, r−1) ≤ L − m ≤ β(d−1, r)` is time-optimal: the left part then
/// has repetition number `r − 1` and the right part (one slot fewer) `r`,
/// and `m + T(m, d) + T(L − m, d − 1) = T(L, d)` by Pascal's rule. Among
/// those we take the one nearest to `L − β(d−1, r−1) − β(d−2, r−1)`: the
/// number of stores of a split is the sum of two convex functions of `m`
/// whose floors meet there, so this choice also stores the fewest snapshots
/// (see [`optimal_stores`]).
pub(crate) fn split(steps: usize, snapshots: usize) -> usize {
    debug_assert!(steps >= 2 && snapshots >= 1);
    if snapshots == 1 {
        return steps - 1;
    }
    let (l, d) = (steps as u128, snapshots);
    let r = repetitions(steps, d);
    let lowest = beta_or_zero(Some(d), r.checked_sub(2)).max(l.saturating_sub(beta(d - 1, r)));
    let highest = beta(d, r - 1).min(l.saturating_sub(beta(d - 1, r - 1)));
    let fewest_stores = l
        .saturating_sub(beta(d - 1, r - 1))
        .saturating_sub(beta_or_zero(d.checked_sub(2), Some(r - 1)));
    let m = fewest_stores.max(lowest).min(highest);
    m.clamp(1, l - 1) as usize
}

/// The number of plain (untaped) steps of an optimal binomial reversal of
/// `n_steps` steps with `snapshots` slots, forward sweep included:
/// `r·n − β(s + 1, r − 1) = r·n − C(s + r, r)·r/(s + 1)` with `r` the least
/// integer such that `C(s + r, r) ≥ n` (0 for `n ≤ 1`).
///
/// ```
/// use ad_core::checkpoint::revolve_forward_steps;
/// assert_eq!(revolve_forward_steps(10_000, 1_000), 18_998);
/// assert_eq!(revolve_forward_steps(5, 1), 10); // one slot: 4 + 3 + 2 + 1
/// ```
pub fn revolve_forward_steps(n_steps: usize, snapshots: usize) -> usize {
    if n_steps <= 1 {
        return 0;
    }
    let r = repetitions(n_steps, snapshots);
    let total = (r as u128 * n_steps as u128).saturating_sub(beta(snapshots + 1, r - 1));
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// The number of snapshots [`Revolve`](super::Revolve) stores (each state
/// at most once): `max(β(s−1, r−1), n − β(s, r−1))` for `n ≥ 2`, 0 for
/// `n ≤ 1`, where `β(d, r) = C(d + r, r)` and `r` is the repetition number
/// of [`revolve_forward_steps`]. It is the fewest stores of any
/// time-optimal schedule.
///
/// Derivation: let `St(L, d)` count the stores of a range, its start
/// included. A split at `m` stores the start, the stores of the right part
/// `St(L−m, d−1)` and those of the left part less its already-held start.
/// Inside the optimal window the parts have repetition numbers `r` and
/// `r−1`, so by induction this is
/// `max(β(d−2, r−1), L−m−β(d−1, r−1)) + max(β(d−1, r−2), m−β(d, r−2))`;
/// the first term falls and the second rises with `m`, and their sum is
/// smallest, `max(β(d−1, r−1), L − β(d, r−1))` by Pascal's rule, where the
/// two kinks meet — which is where Revolve's split places `m`. The two branches:
/// with few steps per repetition level every state in the window needs its
/// own slot (`β(s−1, r−1)` stores); with many, all but `β(s, r−1)` states
/// are stored once.
///
/// ```
/// use ad_core::checkpoint::revolve_stores;
/// assert_eq!(revolve_stores(10_000, 1_000), 8_999);
/// assert_eq!(revolve_stores(5, 10), 4); // enough slots: every state but the last
/// assert_eq!(revolve_stores(5, 1), 1); // one slot: only the initial state
/// ```
pub fn revolve_stores(n_steps: usize, snapshots: usize) -> usize {
    if n_steps <= 1 {
        return 0;
    }
    let r = repetitions(n_steps, snapshots);
    let filled = beta(snapshots - 1, r - 1);
    let spill = (n_steps as u128).saturating_sub(beta(snapshots, r - 1));
    usize::try_from(filled.max(spill)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `T(L, d)` by its defining recursion, minimizing over every split.
    fn forward_steps_by_search(steps: usize, snapshots: usize, memo: &mut Vec<Vec<u64>>) -> u64 {
        if steps <= 1 {
            return 0;
        }
        if snapshots == 0 {
            return u64::MAX / 4;
        }
        if memo[steps][snapshots] != u64::MAX {
            return memo[steps][snapshots];
        }
        let best = (1..steps)
            .map(|m| {
                m as u64
                    + forward_steps_by_search(m, snapshots, memo)
                    + forward_steps_by_search(steps - m, snapshots - 1, memo)
            })
            .min()
            .unwrap();
        memo[steps][snapshots] = best;
        best
    }

    #[test]
    fn beta_is_the_binomial_coefficient() {
        assert_eq!(beta(0, 7), 1);
        assert_eq!(beta(3, 0), 1);
        assert_eq!(beta(3, 2), 10);
        assert_eq!(beta(2, 3), 10);
        assert_eq!(beta(1000, 2), 501_501);
        assert_eq!(beta(60, 60), 96_614_908_840_363_322_603_893_139_521_372_656);
        assert_eq!(beta(usize::MAX, usize::MAX), u128::MAX);
    }

    #[test]
    fn repetition_number_is_least_r_with_beta_at_least_steps() {
        assert_eq!(repetitions(1, 5), 0);
        assert_eq!(repetitions(6, 5), 1);
        assert_eq!(repetitions(7, 5), 2);
        assert_eq!(repetitions(10_000, 1_000), 2);
        assert_eq!(repetitions(10, 1), 9);
    }

    #[test]
    fn closed_form_matches_the_exhaustive_recursion() {
        let mut memo = vec![vec![u64::MAX; 8]; 121];
        for snapshots in 1..8 {
            for steps in 1..=120 {
                assert_eq!(
                    revolve_forward_steps(steps, snapshots) as u64,
                    forward_steps_by_search(steps, snapshots, &mut memo),
                    "n = {steps}, s = {snapshots}"
                );
            }
        }
    }

    #[test]
    fn every_split_is_time_optimal() {
        for d in 1..10 {
            for l in 2..400 {
                let m = split(l, d);
                assert!((1..l).contains(&m));
                let cost = m + revolve_forward_steps(m, d) + revolve_forward_steps(l - m, d - 1);
                assert_eq!(
                    cost,
                    revolve_forward_steps(l, d),
                    "L = {l}, d = {d}, m = {m}"
                );
            }
        }
    }

    #[test]
    fn large_counts_are_exact() {
        let n: usize = 1 << 32;
        assert_eq!(revolve_forward_steps(n, 1), n / 2 * (n - 1));
        assert_eq!(revolve_stores(n, 1), 1);
        assert_eq!(revolve_forward_steps(n, n), n - 1);
        assert_eq!(revolve_stores(n, n), n - 1);
    }
}

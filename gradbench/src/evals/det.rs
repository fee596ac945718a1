//! GradBench's `det` eval (cmpad's `det_by_minor`): the determinant of an `ℓ × ℓ` matrix
//! by expansion by minors, and its gradient.
//!
//! Expansion by minors multiplies out every permutation: `det A = Σ_σ sign(σ) Πᵢ A[i, σ(i)]`
//! over all `ℓ!` permutations σ. The eval's commentary names this non-recursive form as
//! the way to write it without recursion (phidiff does not differentiate recursive
//! calls); it does the same `O(ℓ!)` multiplications as the recursive expansion.

use phidiff::differentiate;
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs, Runs};

#[derive(Debug, Deserialize)]
pub struct Input {
    #[serde(rename = "A")]
    pub a: Vec<f64>,
    pub ell: usize,
}

/// The number of trailing rows whose column choices come from a precomputed table of
/// permutations ([`TailPermutations`]); the rows before them are decoded per prefix.
pub const MAX_TAIL: usize = 7;

/// All permutations of `0..k` in lexicographic order, flattened (`perms[s * k + j]`), with
/// the parity of each one's inversion count.
#[derive(Clone, Debug, PartialEq)]
pub struct TailPermutations {
    pub k: usize,
    pub perms: Vec<usize>,
    pub odd: Vec<usize>,
}

impl TailPermutations {
    pub fn new(k: usize) -> TailPermutations {
        let mut perm: Vec<usize> = (0..k).collect();
        let mut perms = Vec::new();
        let mut odd = Vec::new();
        loop {
            perms.extend_from_slice(&perm);
            let inversions: usize = (0..k)
                .map(|i| (i + 1..k).filter(|&j| perm[j] < perm[i]).count())
                .sum();
            odd.push(inversions % 2);
            // Next permutation in lexicographic order.
            let Some(i) = (1..k).rev().find(|&i| perm[i - 1] < perm[i]) else {
                break;
            };
            let j = (i..k).rev().find(|&j| perm[j] > perm[i - 1]).unwrap();
            perm.swap(i - 1, j);
            perm[i..].reverse();
        }
        TailPermutations { k, perms, odd }
    }
}

/// The determinant of the row-major `ell × ell` matrix `a`, summed over all permutations σ
/// in lexicographic order. The first `ell − tail.k` rows are the prefix: prefix number `q`
/// is decoded from its factorial-base digits (its Lehmer code), row `i` taking the
/// `dᵢ`-th column not yet used. The last `k` rows run through the table over the columns
/// the prefix left free. The sign is `(−1)^inversions`, and the inversions are the sum of
/// the prefix digits plus the tail permutation's own.
#[differentiate(forward, reverse)]
pub fn det_by_minors(
    a: &[f64],
    ell: usize,
    tail: usize,
    tail_perms: &[usize],
    tail_odd: &[usize],
) -> f64 {
    let head = ell - tail;
    let mut n_prefix = 1;
    for i in tail + 1..ell + 1 {
        n_prefix *= i;
    }
    let n_tail = tail_odd.len();
    let mut det = 0.0;
    #[checkpoint(periodic(every = 16))]
    for q in 0..n_prefix {
        let mut rest = q;
        let mut radix = n_prefix;
        // `used` holds one bit per taken column (bit c is 2^c).
        let mut used = 0;
        let mut inversions = 0;
        let mut prefix = 1.0;
        for i in 0..head {
            radix /= ell - i;
            let digit = rest / radix;
            rest -= digit * radix;
            inversions += digit;
            // The digit-th column that is still free.
            let mut col = 0;
            let mut col_bit = 0;
            let mut free_seen = 0;
            let mut bit = 1;
            for c in 0..ell {
                if (used / bit) % 2 == 0 {
                    if free_seen == digit {
                        col = c;
                        col_bit = bit;
                    }
                    free_seen += 1;
                }
                bit *= 2;
            }
            used += col_bit;
            prefix *= a[i * ell + col];
        }
        let mut free = vec![0; tail];
        let mut n_free = 0;
        let mut bit = 1;
        for c in 0..ell {
            if (used / bit) % 2 == 0 {
                free[n_free] = c;
                n_free += 1;
            }
            bit *= 2;
        }
        for s in 0..n_tail {
            let mut term = prefix;
            for j in 0..tail {
                term *= a[(head + j) * ell + free[tail_perms[s * tail + j]]];
            }
            if (inversions + tail_odd[s]) % 2 == 0 {
                det += term;
            } else {
                det -= term;
            }
        }
    }
    det
}

/// The determinant of `a` (`ell × ell`, row-major).
pub fn primal(a: &[f64], ell: usize) -> f64 {
    let tail = TailPermutations::new(ell.min(MAX_TAIL));
    det_by_minors(a, ell, tail.k, &tail.perms, &tail.odd)
}

/// The gradient of the determinant with respect to `a`, row-major.
pub fn gradient(a: &[f64], ell: usize) -> Vec<f64> {
    let tail = TailPermutations::new(ell.min(MAX_TAIL));
    det_by_minors_grad(a, ell, tail.k, &tail.perms, &tail.odd).1
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let parsed: Input = parse_input(input)?;
    if parsed.a.len() != parsed.ell * parsed.ell {
        return Err(format!(
            "det: `A` has {} entries, not ell² = {}",
            parsed.a.len(),
            parsed.ell * parsed.ell
        ));
    }
    let runs = Runs::from_input(input);
    match function {
        "primal" => Ok(time_runs(runs, || primal(&parsed.a, parsed.ell))),
        "gradient" => Ok(time_runs(runs, || gradient(&parsed.a, parsed.ell))),
        _ => Err(super::unknown_function("det", function)),
    }
}

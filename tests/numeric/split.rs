//! Loops whose body branches on an interval of the index, which the reverse sweep splits
//! into three loops without the branch (`derivative::reverse::split`): a 1-D stencil with
//! its boundary in the branch, and a branch with inclusive bounds, the index on the right
//! and an integer parameter. Checked against finite differences and the dot-product
//! identity at lengths and parameters that empty each of the three loops in turn (the
//! rayon 2-D stencils of `parallel.rs` take this path too).

use super::differentiate;
use crate::common::*;

/// One explicit step of a 1-D heat equation with a nonlinear conductivity, its ends
/// copied, then `Σ out²`.
#[differentiate(forward, reverse)]
pub fn boundary_rows(u: &[f64], out: &mut [f64], r: f64) -> f64 {
    let n = u.len();
    let mut s = 0.0;
    for j in 0..n {
        if j > 0 && j < n - 1 {
            out[j] = u[j] + r * (u[j - 1] - 2.0 * u[j] + u[j + 1]) * (1.0 + 0.1 * u[j] * u[j]);
        } else {
            out[j] = u[j];
        }
        s += out[j] * out[j];
    }
    s
}

/// Products of neighbours on the indices `2 ..= min(len − 2, k + 2)` (none when `k = 0`),
/// sines elsewhere.
#[differentiate(forward, reverse, wrt(u))]
pub fn inclusive_window(u: &[f64], k: usize) -> f64 {
    let mut s = 0.0;
    for j in 1..u.len() {
        let t = if k > 0 && 2 <= j && u.len() - 2 >= j && j <= k + 2 {
            u[j] * u[j - 1]
        } else {
            u[j].sin()
        };
        s += t;
    }
    s
}

fn data(n: usize, phase: f64) -> Vec<f64> {
    (0..n)
        .map(|i| 0.4 + 0.5 * (0.8 * i as f64 + phase).sin())
        .collect()
}

pub fn boundary_rows_match_finite_differences() {
    for n in [1, 2, 3, 4, 7] {
        let point = cat(&[&data(n, 0.3), &data(n, 1.1)]);
        let r = 0.3;
        let primal = |p: &[f64]| {
            let mut out = p[n..].to_vec();
            let s = boundary_rows(&p[..n], &mut out, r);
            cat(&[&[s], &out])
        };
        check_fwd_rev(&Case {
            name: "boundary_rows",
            x: &point,
            primal: &primal,
            jvp: &|p, v| {
                let (mut out, mut dout) = (p[n..].to_vec(), v[n..].to_vec());
                let (s, ds) = boundary_rows_fwd(&p[..n], &v[..n], &mut out, &mut dout, r, 0.0);
                (cat(&[&[s], &out]), cat(&[&[ds], &dout]))
            },
            vjp: &|p, w| {
                let (mut gu, mut gout) = (zeros(n), w[1..].to_vec());
                let mut out = p[n..].to_vec();
                let (_, _) = boundary_rows_rev(&p[..n], &mut gu, &mut out, &mut gout, r, w[0]);
                (primal(p), cat(&[&gu, &gout]))
            },
            tols: TOLS,
        });
    }
}

pub fn inclusive_window_matches_finite_differences() {
    for (n, k) in [(1, 1), (3, 1), (4, 0), (4, 1), (6, 1), (6, 2), (9, 3), (9, 9)] {
        let point = data(n, 0.7);
        check_fwd_rev(&Case {
            name: "inclusive_window",
            x: &point,
            primal: &|p| vec![inclusive_window(p, k)],
            jvp: &|p, v| {
                let (y, dy) = inclusive_window_fwd(p, v, k);
                (vec![y], vec![dy])
            },
            vjp: &|p, w| {
                let mut g = zeros(n);
                let y = inclusive_window_rev(p, &mut g, k, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

//! Issue 46's corpus, the rest of the iterator vocabulary and the sub-slices, as small
//! library functions use them: `chain`, `take`, `step_by`, `rev().enumerate()`, `product`,
//! `reduce`, `min_by` with `total_cmp`, `count`, `any`/`all`, `collect`, `first`/`last`/
//! `get`, `split_at`, sub-slices passed to calls and walked by iterators (`x[k..].iter()`,
//! `d[1..].iter_mut()`), a local closure used by name in `map`.
//! Generic ones are checked by `check_generic` (num-dual, finite differences, the
//! dot-product test, hyper-dual H·v), the others by finite differences, the dot-product
//! test and hand-derived values.

use super::differentiate;
use crate::common::*;
use num_traits::{Float, FromPrimitive};
use std::iter::Sum;

/// A discounted return: rewards walked backwards with their position (`rev().enumerate()`,
/// which the old lowering numbered by the underlying position).
#[differentiate(forward, reverse)]
pub fn discounted<T: Float + FromPrimitive + Sum>(rewards: &[T]) -> T {
    let gamma = T::from_f64(0.9).unwrap();
    rewards
        .iter()
        .rev()
        .enumerate()
        .map(|(k, &r)| gamma.powi(k as i32) * r)
        .sum()
}

/// The geometric mean by `product`, of the first `take(4)` values.
#[differentiate(forward, reverse)]
pub fn geometric_mean4<T: Float + FromPrimitive + std::iter::Product>(x: &[T]) -> T {
    let p: T = x.iter().take(4).map(|&v| v.abs() + T::one()).product();
    p.powf(T::from_f64(0.25).unwrap())
}

/// Even and odd positions (`step_by(2)`, `skip(1).step_by(2)`) weighted apart.
#[differentiate(forward, reverse)]
pub fn even_odd<T: Float + FromPrimitive + Sum>(x: &[T]) -> T {
    let even: T = x.iter().step_by(2).map(|&v| v * v).sum();
    let odd: T = x.iter().skip(1).step_by(2).map(|&v| v.sin()).sum();
    even * T::from_f64(1.5).unwrap() + odd
}

/// Two buffers one after the other (`chain`).
#[differentiate(forward, reverse)]
pub fn chained_norm<T: Float + Sum>(a: &[T], b: &[T]) -> T {
    a.iter().chain(b.iter()).map(|&v| v * v).sum::<T>().sqrt()
}

/// The smallest value by `min_by` with `total_cmp`, and the largest by `reduce`.
#[differentiate(forward, reverse)]
pub fn spread(x: &[f64]) -> f64 {
    let lo = x.iter().copied().min_by(|a, b| a.total_cmp(b)).unwrap();
    let hi = x.iter().copied().reduce(f64::max).unwrap();
    (hi - lo) * x[0]
}

/// How many values are positive (`count`, passive), whether any is large (`any`), whether
/// all are finite (`all`), each steering a smooth term.
#[differentiate(forward, reverse)]
pub fn counted(x: &[f64]) -> f64 {
    let positive = x.iter().filter(|&&v| v > 0.0).count() as f64;
    let large = x.iter().any(|&v| v.abs() > 1.0);
    let finite = x.iter().all(|v| v.is_finite());
    let mut s = positive * x.iter().map(|v| v.sin()).sum::<f64>();
    if large && finite {
        s += x.iter().map(|v| v * v).sum::<f64>();
    }
    s
}

/// A smoothed copy (`collect`), then the ends (`first`/`last`) and a safe read (`get`).
#[differentiate(forward, reverse)]
pub fn smoothed_ends(x: &[f64], k: usize) -> f64 {
    let smooth: Vec<f64> = x.windows(3).map(|w| (w[0] + 2.0 * w[1] + w[2]) / 4.0).collect();
    let first = *smooth.first().unwrap();
    let last = smooth.last().copied().unwrap();
    let picked = smooth.get(k).copied().unwrap_or(1.0);
    first * last + picked * picked
}

#[differentiate(forward, reverse)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[differentiate(forward, reverse)]
pub fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// Halves by `split_at`, sub-slices and views passed to differentiated calls.
#[differentiate(forward, reverse)]
pub fn halves(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len() / 2;
    let (lo, hi) = x.split_at(n);
    axpy(2.0, lo, &mut y[n..]);
    axpy(-0.5, &x[n..], &mut y[..n]);
    dot(lo, hi) + dot(&x[1..], &x[..x.len() - 1]) + dot(y, y)
}

/// A local closure used by name in `map` and called directly.
#[differentiate(forward, reverse)]
pub fn softplus_mean(x: &[f64], beta: f64) -> f64 {
    let softplus = |v: f64| (1.0 + (beta * v).exp()).ln() / beta;
    let total: f64 = x.iter().copied().map(softplus).sum();
    total / x.len() as f64 + softplus(x[0])
}

/// The autocovariance at lag 2, by iterators over sub-slices
/// (`x[..n - k].iter().zip(x[k..].iter())`).
#[differentiate(forward, reverse)]
pub fn autocov2<T: Float + FromPrimitive + Sum>(x: &[T]) -> T {
    let n = x.len();
    let k = 2;
    let mean = x.iter().copied().sum::<T>() / T::from_usize(n).unwrap();
    let c: T = x[..n - k]
        .iter()
        .zip(x[k..].iter())
        .map(|(&a, &b)| (a - mean) * (b - mean))
        .sum();
    c / T::from_usize(n - k).unwrap()
}

/// Differences written through a mutable sub-slice (`d[1..].iter_mut()`, `for v in &mut
/// d[2..]`), then their energy.
#[differentiate(forward, reverse)]
pub fn tail_energy(x: &[f64], d: &mut [f64]) -> f64 {
    d[0] = x[0];
    for (i, v) in d[1..].iter_mut().enumerate() {
        *v = x[i + 1] - x[i];
    }
    for v in &mut d[2..] {
        *v *= 0.5;
    }
    d.iter().map(|v| v * v).sum()
}

/// Constants of other modules: `use`d from another file (`crate::common::physics`, one
/// renamed), by a path through an imported module (`physics::DRAG[k]`), and from an inline
/// module by `self::` and a nested path; `wind::SPEED` is defined by `super::SCALE`, which
/// is not this module's `SCALE`.
mod ballistics {
    pub const MASS: f64 = 0.145;
    const SCALE: f64 = 2.0;
    pub mod wind {
        pub const SPEED: f64 = super::SCALE * 1.75;
    }
}

const SCALE: f64 = 1.0;

use crate::common::physics;
use crate::common::physics::{AIR_DENSITY, STANDARD_GRAVITY as G0};

#[differentiate(forward, reverse)]
pub fn drag_fall(v: &[f64], area: f64, shape: usize) -> f64 {
    let k = 0.5 * SCALE * AIR_DENSITY * physics::DRAG[shape] * area / self::ballistics::MASS;
    let mut e = 0.0;
    for &vi in v {
        let rel = vi - ballistics::wind::SPEED;
        e += (G0 - k * rel * rel.abs()).powi(2);
    }
    e
}

/// A quadratic form and a squared trace by rows of a `Vec<Vec<f64>>` matrix
/// (`m[i].iter().zip(x)`, `for (j, v) in m[i].iter().enumerate()`, `for v in &m[i]`).
#[differentiate(forward, reverse)]
pub fn row_quadratic(m: &[Vec<f64>], x: &[f64]) -> f64 {
    let mut q = 0.0;
    for i in 0..m.len() {
        let mx: f64 = m[i].iter().zip(x).map(|(a, b)| a * b).sum();
        q += x[i] * mx;
    }
    let mut diag = 0.0;
    for i in 0..m.len() {
        for (j, v) in m[i].iter().enumerate() {
            if i == j {
                diag += v * v;
            }
        }
    }
    let mut last_row = 0.0;
    for v in &m[m.len() - 1] {
        last_row += v.sin();
    }
    q + diag + last_row
}

/// Rows scaled to unit length in place (`m[i].iter()`, `m[i].iter_mut()`).
#[differentiate(forward, reverse)]
pub fn normalize_rows(m: &mut [Vec<f64>]) {
    for i in 0..m.len() {
        let norm = m[i].iter().map(|v| v * v).sum::<f64>().sqrt();
        for v in m[i].iter_mut() {
            *v /= norm;
        }
    }
}

/// A point squashed by softsign, then a weighted norm (`[f64; 3]::map`, twice).
#[differentiate(forward, reverse)]
pub fn softsign_norm(p: &[f64; 3], k: f64) -> f64 {
    let s = p.map(|v| v / (1.0 + v.abs()));
    let w = s.map(|v| k * v * v);
    (w[0] + w[1] + w[2]).sqrt()
}

/// The sample variance of log-returns, the returns collected by `push` into a
/// `Vec::with_capacity`, and the mean of the positive ones pushed from a filtered loop.
#[differentiate(forward, reverse)]
pub fn log_return_stats<T: Float + FromPrimitive + Sum>(prices: &[T]) -> T {
    let mut returns: Vec<T> = Vec::with_capacity(prices.len() - 1);
    for w in prices.windows(2) {
        returns.push((w[1] / w[0]).ln());
    }
    let n = T::from_usize(returns.len()).unwrap();
    let mean = returns.iter().copied().sum::<T>() / n;
    let var = returns.iter().map(|&r| (r - mean) * (r - mean)).sum::<T>() / (n - T::one());
    let mut gains = Vec::new();
    for &r in returns.iter().filter(|r| **r > T::zero()) {
        gains.push(r);
    }
    let g = gains.iter().copied().sum::<T>() / T::from_usize(gains.len().max(1)).unwrap();
    var + g
}

/// A `Vec` declared before the loop's bound is known (`m` changes between the two): the
/// pushes are counted where the loop runs.
#[differentiate(forward, reverse)]
pub fn scaled_prefix(x: &[f64], a: f64) -> f64 {
    let mut m = 1;
    let mut v = Vec::new();
    m += x.len() / 2;
    for i in 0..m {
        v.push(x[i] * a);
    }
    v.iter().map(|t| t * t).sum()
}


/// Half the squared residual of `A x = b`, `A` stored by rows: each row zipped with its
/// right-hand side (`a.iter().zip(b).map(|(row, bi)| ..)`, a row walked by `row.iter()`).
#[differentiate(forward, reverse)]
pub fn lsq_rows<T: Float + Sum>(a: &[Vec<T>], x: &[T], b: &[T]) -> T {
    let half = T::from(0.5).unwrap();
    half * a
        .iter()
        .zip(b)
        .map(|(row, &bi)| {
            let r = row.iter().zip(x).map(|(&aij, &xj)| aij * xj).sum::<T>() - bi;
            r * r
        })
        .sum::<T>()
}

/// Softmax of each row in place, shifted by the row's maximum (`for row in m.iter_mut()`,
/// then `row.iter()`, `row.iter_mut()` and `for v in row`).
#[differentiate(forward, reverse)]
pub fn softmax_rows(logits: &mut [Vec<f64>]) {
    for row in logits.iter_mut() {
        let top = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mut z = 0.0;
        for v in row.iter_mut() {
            *v = (*v - top).exp();
            z += *v;
        }
        for v in row {
            *v /= z;
        }
    }
}

/// A pair potential over points stored as rows, plus a coupling to the last point
/// (`pts.iter().enumerate()`, `pts.iter().skip(i + 1)`, `let last = &pts[n - 1];`).
#[differentiate(forward, reverse)]
pub fn pair_energy(pts: &[Vec<f64>], k: f64) -> f64 {
    let mut e = 0.0;
    let last = &pts[pts.len() - 1];
    for (i, p) in pts.iter().enumerate() {
        for q in pts.iter().skip(i + 1) {
            let d2: f64 = p.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum();
            e += k / (1.0 + d2);
        }
        e += p[0] * last[last.len() - 1];
    }
    e
}

/// Scales a vector in place: a helper the next function calls on rows.
#[differentiate(forward, reverse)]
pub fn scale_in_place(v: &mut [f64], k: f64) {
    for x in v.iter_mut() {
        *x *= k;
    }
}

/// A dot product: a helper the next function calls on rows.
#[differentiate(forward, reverse)]
pub fn row_dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

/// Rows passed to differentiated helpers: a row by name (`let row = &mut m[i];`), a part
/// of one (`&mut row[1..]`), `&m[i]` and a row of the loop (`for row in m.iter()`); the
/// rows are written before some calls, so the reverse sweep snapshots them there.
#[differentiate(forward, reverse)]
pub fn scaled_rows(m: &mut [Vec<f64>], x: &[f64], k: f64) -> f64 {
    for i in 0..m.len() {
        let row = &mut m[i];
        scale_in_place(row, k);
    }
    for row in m.iter_mut() {
        scale_in_place(&mut row[1..], k);
    }
    let mut s = 0.0;
    for i in 0..m.len() {
        s += x[i] * row_dot(&m[i], x);
    }
    for row in m.iter() {
        s += row_dot(row, row);
    }
    s
}

/// The mean of the values far from a centre, gathered by a conditional push.
#[differentiate(forward, reverse)]
pub fn tail_mean(x: &[f64], centre: f64, k: f64) -> f64 {
    let mut far = Vec::new();
    for &v in x {
        if (v - centre).abs() > k {
            far.push(v - centre);
        }
    }
    if far.is_empty() {
        return 0.0;
    }
    far.iter().sum::<f64>() / far.len() as f64
}

/// A feature vector assembled by pushes, `extend_from_slice`, `extend` of a chain and a
/// loop pushing under conditions with `continue` and `break`; then its RMS.
#[differentiate(forward, reverse)]
pub fn feature_rms(x: &[f64], bias: f64) -> f64 {
    let mut f = Vec::with_capacity(2 * x.len() + 2);
    f.push(bias);
    f.extend_from_slice(x);
    f.extend(x.iter().map(|v| v * v * bias));
    for w in x.windows(2) {
        if w[1] < w[0] {
            continue;
        }
        f.push(w[1] - w[0]);
        if w[1] > 10.0 {
            break;
        }
    }
    f.push(bias * bias);
    (f.iter().map(|t| t * t).sum::<f64>() / f.len() as f64).sqrt()
}

/// The positive entries of a ragged matrix flattened by pushes in nested loops, a
/// separator after each row; then their mean square.
#[differentiate(forward, reverse)]
pub fn flattened_positive(m: &[Vec<f64>], sep: f64) -> f64 {
    let mut flat = Vec::new();
    for row in m {
        for &v in row {
            if v > 0.0 {
                flat.push(v);
            }
        }
        flat.push(sep);
    }
    flat.iter().map(|t| t * t).sum::<f64>() / flat.len() as f64
}

/// The gradient energy of a 3-D field stored as `Vec<Vec<Vec<f64>>>` (an image stack, a
/// grid of a PDE): a local 3-D buffer of differences, `t[i][j].len()`, rows of the 3-D
/// parameter walked by `t[i][j].iter()` and bound by `let row = &t[i][j];`.
#[differentiate(forward, reverse)]
pub fn field_gradient_energy(t: &[Vec<Vec<f64>>], k: f64) -> f64 {
    let n = t.len();
    let mut d = vec![vec![vec![0.0; t[0][0].len()]; t[0].len()]; n - 1];
    for i in 1..n {
        for j in 0..t[i].len() {
            for l in 0..t[i][j].len() {
                d[i - 1][j][l] = t[i][j][l] - t[i - 1][j][l];
            }
        }
    }
    let mut e = 0.0;
    for i in 0..n - 1 {
        for j in 0..d[i].len() {
            e += d[i][j].iter().map(|v| v * v).sum::<f64>();
        }
    }
    for i in 0..n {
        for j in 0..t[i].len() {
            let row = &t[i][j];
            e += k * (row[0] * row[row.len() - 1]).tanh();
        }
    }
    e
}

/// A 3-D field scaled in place by a profile along its last axis (`iter_mut` of a row).
#[differentiate(forward, reverse)]
pub fn profile_scale(t: &mut [Vec<Vec<f64>>], w: &[f64]) {
    for i in 0..t.len() {
        for j in 0..t[i].len() {
            for (v, wl) in t[i][j].iter_mut().zip(w) {
                *v *= wl.exp();
            }
        }
    }
}

/// A 3-D state stepped in a checkpointed loop (the snapshots hold the 3-D buffer).
#[differentiate(forward, reverse)]
pub fn stepped_field(x: &[f64], steps: usize) -> f64 {
    let n = 2;
    let mut t = vec![vec![vec![0.0; n]; n]; n];
    for i in 0..n {
        for j in 0..n {
            for l in 0..n {
                t[i][j][l] = x[(i * n + j) * n + l];
            }
        }
    }
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        for i in 0..n {
            for j in 0..n {
                for l in 0..n {
                    t[i][j][l] = (1.1 * t[i][j][l]).sin() + 0.1 * t[n - 1 - i][j][l];
                }
            }
        }
    }
    let mut e = 0.0;
    for i in 0..n {
        for j in 0..n {
            e += t[i][j].iter().map(|v| v * v).sum::<f64>();
        }
    }
    e
}

pub fn generic_forms_against_num_dual() {
    let x = [0.31, -0.72, 1.13, 0.44, -0.25, 0.6];
    crate::check_slice_fn!(discounted, discounted_fwd, discounted_rev, discounted_grad, x);
    // The weights by hand: γ^(n−1−i) for reward i.
    let g = discounted_grad(&x).1;
    let want: Vec<f64> = (0..6).map(|i| 0.9f64.powi(5 - i)).collect();
    assert_rel("discounted: gradient", &g, &want, 1e-14);
    crate::check_slice_fn!(
        geometric_mean4,
        geometric_mean4_fwd,
        geometric_mean4_rev,
        geometric_mean4_grad,
        x
    );
    crate::check_slice_fn!(even_odd, even_odd_fwd, even_odd_rev, even_odd_grad, x);
    crate::check_slice_fn!(autocov2, autocov2_fwd, autocov2_rev, autocov2_grad, x);
    let (k, m) = (2, 4);
    let p = [0.4, -1.1, 0.7, 0.2, 0.9, -0.3];
    check_generic(&Generic {
        name: "chained_norm",
        x: &p,
        f: &|p| chained_norm(&p[..k], &p[k..]),
        f_dual: &|p| chained_norm(&p[..k], &p[k..]),
        f_hyper: &|p| chained_norm(&p[..k], &p[k..]),
        grad: &|p| {
            let (v, (mut a, b)) = chained_norm_grad(&p[..k], &p[k..]);
            a.extend(b);
            (v, a)
        },
        fwd: &|p, d| chained_norm_fwd(&p[..k], &d[..k], &p[k..], &d[k..]),
        rev: &|p, s| {
            let (mut a, mut b) = (zeros(k), zeros(m));
            let v = chained_norm_rev(&p[..k], &mut a, &p[k..], &mut b, s);
            a.extend(b);
            (v, a)
        },
        hvp: &|p, v| {
            let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
            let xs: Vec<_> = (0..k + m).map(|i| d(p[i], v[i])).collect();
            let (mut a, mut b) = (vec![d(0.0, 0.0); k], vec![d(0.0, 0.0); m]);
            chained_norm_rev(&xs[..k], &mut a, &xs[k..], &mut b, phidiff::Dual::constant(1.0));
            a.iter().chain(&b).map(|z| z.eps).collect()
        },
    });
}

pub fn reductions_and_predicates() {
    let x = [0.31, -0.72, 1.63, 0.44, -0.95];
    // hi − lo with hi = x[2], lo = x[4]: ∂/∂x = x[0]·(e₂ − e₄) + (hi − lo)·e₀.
    let (v, g) = spread_grad(&x);
    assert_rel("spread: value", &[v, spread(&x)], &[(1.63 + 0.95) * 0.31; 2], 1e-15);
    assert_rel("spread: gradient", &g, &[1.63 + 0.95, 0.0, 0.31, 0.0, -0.31], 1e-14);
    check_point(
        "spread",
        &x,
        &|x| spread(x),
        &|x| spread_grad(x),
        &|x, d| spread_fwd(x, d),
        &|x, s| {
            let mut g = zeros(x.len());
            let v = spread_rev(x, &mut g, s);
            (v, g)
        },
    );
    // One value above 1 in magnitude, three positive: 3·Σ sin + Σ x².
    let (v, g) = counted_grad(&x);
    assert_rel("counted: value", &[v, counted(&x)], &[3.0 * x.iter().map(|v| v.sin()).sum::<f64>() + x.iter().map(|v| v * v).sum::<f64>(); 2], 1e-14);
    let want: Vec<f64> = x.iter().map(|v| 3.0 * v.cos() + 2.0 * v).collect();
    assert_rel("counted: gradient", &g, &want, 1e-14);
    let small: Vec<f64> = x.iter().map(|v| 0.5 * v).collect();
    let (_, g) = counted_grad(&small);
    let want: Vec<f64> = small.iter().map(|v| 3.0 * v.cos()).collect();
    assert_rel("counted: gradient without the large term", &g, &want, 1e-14);
}

pub fn collected_and_sliced() {
    let x = [0.3, -0.7, 1.1, 0.4, 0.9, -0.2];
    for k in [1, 9] {
        let (v, g) = smoothed_ends_grad(&x, k);
        assert_rel("smoothed_ends: value", &[v], &[smoothed_ends(&x, k)], 1e-15);
        let _ = g;
        check_point(
            "smoothed_ends",
            &x,
            &|x| smoothed_ends(x, k),
            &|x| smoothed_ends_grad(x, k),
            &|x, d| smoothed_ends_fwd(x, d, k),
            &|x, s| {
                let mut g = zeros(x.len());
                let v = smoothed_ends_rev(x, &mut g, k, s);
                (v, g)
            },
        );
    }
    let n = 4;
    let x = [0.3, -0.7, 1.1, 0.4];
    let y0 = [0.2, 0.1, -0.4, 0.6];
    let mut p = x.to_vec();
    p.extend(y0);
    // `y` is read after the calls add into it: its initial value is an input too.
    check_point(
        "halves",
        &p,
        &|p| halves(&p[..n], &mut p[n..].to_vec()),
        &|p| {
            let (v, (mut g, gy)) = halves_grad(&p[..n], &mut p[n..].to_vec());
            g.extend(gy);
            (v, g)
        },
        &|p, d| {
            let (mut y, mut dy) = (p[n..].to_vec(), d[n..].to_vec());
            halves_fwd(&p[..n], &d[..n], &mut y, &mut dy)
        },
        &|p, s| {
            let (mut g, mut y, mut gy) = (zeros(n), p[n..].to_vec(), zeros(n));
            let v = halves_rev(&p[..n], &mut g, &mut y, &mut gy, s);
            g.extend(gy);
            (v, g)
        },
    );
    let mut q = vec![0.4, -1.2, 2.0];
    q.push(1.3);
    check_point(
        "softplus_mean",
        &q,
        &|q| softplus_mean(&q[..3], q[3]),
        &|q| {
            let (v, (mut g, gb)) = softplus_mean_grad(&q[..3], q[3]);
            g.push(gb);
            (v, g)
        },
        &|q, d| softplus_mean_fwd(&q[..3], &d[..3], q[3], d[3]),
        &|q, s| {
            let mut g = zeros(3);
            let (v, gb) = softplus_mean_rev(&q[..3], &mut g, q[3], s);
            g.push(gb);
            (v, g)
        },
    );
    // The energy of x₀, ½(xᵢ₊₁ − xᵢ) (and x₁ − x₀ unhalved) by hand.
    let x5 = [0.3, -0.7, 1.1, 0.4, 0.9];
    let e = |x: &[f64]| {
        let mut s = x[0] * x[0] + (x[1] - x[0]).powi(2);
        for i in 2..x.len() {
            s += 0.25 * (x[i] - x[i - 1]).powi(2);
        }
        s
    };
    let (v, (g, gd)) = tail_energy_grad(&x5, &mut zeros(5));
    assert_rel("tail_energy: value", &[v], &[e(&x5)], 1e-15);
    assert_rel("tail_energy: d is overwritten", &gd, &zeros(5), 0.0);
    let mut d = zeros(5);
    tail_energy(&x5, &mut d);
    assert_rel("tail_energy: d", &d, &[0.3, -1.0, 0.9, -0.35, 0.25], 1e-15);
    let _ = g;
    check_point(
        "tail_energy",
        &x5,
        &|x| tail_energy(x, &mut zeros(x.len())),
        &|x| {
            let (v, (g, _)) = tail_energy_grad(x, &mut zeros(x.len()));
            (v, g)
        },
        &|x, dx| tail_energy_fwd(x, dx, &mut zeros(x.len()), &mut zeros(x.len())),
        &|x, s| {
            let mut g = zeros(x.len());
            let v = tail_energy_rev(x, &mut g, &mut zeros(x.len()), &mut zeros(x.len()), s);
            (v, g)
        },
    );
    // drag_fall by hand: k = ½ρ c_d A / m; e = Σ (g − k r|r|)², r = v − w.
    let v = [1.0, 4.2, 7.5];
    let (area, shape) = (0.0042, 0);
    let kk = 0.5 * 1.225 * 0.47 * area / 0.145;
    let want: f64 = v.iter().map(|vi| (9.806_65 - kk * (vi - 3.5) * (vi - 3.5f64).abs()).powi(2)).sum();
    assert_rel("drag_fall: value", &[drag_fall(&v, area, shape)], &[want], 1e-14);
    let mut p = v.to_vec();
    p.push(area);
    check_point(
        "drag_fall",
        &p,
        &|p| drag_fall(&p[..3], p[3], shape),
        &|p| {
            let (val, (mut g, ga)) = drag_fall_grad(&p[..3], p[3], shape);
            g.push(ga);
            (val, g)
        },
        &|p, d| drag_fall_fwd(&p[..3], &d[..3], p[3], d[3], shape),
        &|p, s| {
            let mut g = zeros(3);
            let (val, ga) = drag_fall_rev(&p[..3], &mut g, p[3], shape, s);
            g.push(ga);
            (val, g)
        },
    );
    // `dot` and `axpy` by themselves.
    let (v, (ga, gb)) = dot_grad(&x, &y0);
    assert_rel("dot", &[v], &[dot(&x, &y0)], 1e-15);
    assert_rel("dot: ∂/∂a", &ga, &y0, 0.0);
    assert_rel("dot: ∂/∂b", &gb, &x, 0.0);
    let mut y = y0;
    axpy(2.0, &x, &mut y);
    assert_rel("axpy", &y, &[0.8, -1.3, 1.8, 1.4], 1e-15);
}

pub fn rows_as_slices() {
    let (n, x) = (3, [0.4, -1.1, 0.7]);
    let m0 = [0.3, -0.8, 1.2, 0.5, 0.9, -0.4, -0.6, 0.2, 1.1];
    let p = cat(&[&m0, &x]);
    let grad = |p: &[f64]| {
        let (v, (gm, gx)) = row_quadratic_grad(&to_rows(&p[..9], n), &p[9..]);
        (v, cat(&[&from_rows(&gm), &gx]))
    };
    check_point(
        "row_quadratic",
        &p,
        &|p| row_quadratic(&to_rows(&p[..9], n), &p[9..]),
        &grad,
        &|p, d| row_quadratic_fwd(&to_rows(&p[..9], n), &to_rows(&d[..9], n), &p[9..], &d[9..]),
        &|p, s| {
            let (mut gm, mut gx) = (to_rows(&zeros(9), n), zeros(3));
            let v = row_quadratic_rev(&to_rows(&p[..9], n), &mut gm, &p[9..], &mut gx, s);
            (v, cat(&[&from_rows(&gm), &gx]))
        },
    );
    // By hand: ∂/∂x = (M + Mᵀ)x; ∂/∂M_ij = x_i x_j + 2 M_ii [i = j] + cos M_2j [i = 2].
    let (_, g) = grad(&p);
    let mut want = zeros(12);
    for i in 0..3 {
        for j in 0..3 {
            let mij = m0[3 * i + j];
            want[3 * i + j] = x[i] * x[j]
                + if i == j { 2.0 * mij } else { 0.0 }
                + if i == 2 { mij.cos() } else { 0.0 };
            want[9 + i] += (mij + m0[3 * j + i]) * x[j];
        }
    }
    assert_rel("row_quadratic: gradient by hand", &g, &want, 1e-14);

    check_fwd_rev(&Case {
        name: "normalize_rows",
        x: &m0,
        primal: &|p| {
            let mut m = to_rows(p, n);
            normalize_rows(&mut m);
            from_rows(&m)
        },
        jvp: &|p, d| {
            let (mut m, mut dm) = (to_rows(p, n), to_rows(d, n));
            normalize_rows_fwd(&mut m, &mut dm);
            (from_rows(&m), from_rows(&dm))
        },
        vjp: &|p, w| {
            let (mut m, mut dm) = (to_rows(p, n), to_rows(w, n));
            normalize_rows_rev(&mut m, &mut dm);
            (from_rows(&m), from_rows(&dm))
        },
        tols: TOLS,
    });
}

pub fn arrays_mapped() {
    let arr = |p: &[f64]| -> [f64; 3] { p[..3].try_into().expect("three values") };
    let p = [0.4, -1.3, 0.8, 1.7];
    check_point(
        "softsign_norm",
        &p,
        &|p| softsign_norm(&arr(p), p[3]),
        &|p| {
            let (v, (g, gk)) = softsign_norm_grad(&arr(p), p[3]);
            (v, cat(&[&g, &[gk]]))
        },
        &|p, d| softsign_norm_fwd(&arr(p), &arr(d), p[3], d[3]),
        &|p, s| {
            let mut g = [0.0; 3];
            let (v, gk) = softsign_norm_rev(&arr(p), &mut g, p[3], s);
            (v, cat(&[&g, &[gk]]))
        },
    );
    // By hand: f = √(k Σ sᵢ²), sᵢ = pᵢ/(1 + |pᵢ|), ∂f/∂pᵢ = k sᵢ s'ᵢ / f, s' = 1/(1 + |p|)².
    let (v, (g, gk)) = softsign_norm_grad(&arr(&p), p[3]);
    let s: Vec<f64> = p[..3].iter().map(|x| x / (1.0 + x.abs())).collect();
    let want: Vec<f64> = (0..3).map(|i| p[3] * s[i] / (1.0 + p[i].abs()).powi(2) / v).collect();
    let ss: f64 = s.iter().map(|x| x * x).sum();
    assert_rel("softsign_norm: gradient by hand", &cat(&[&g, &[gk]]), &cat(&[&want, &[ss / (2.0 * v)]]), 1e-14);
}

pub fn pushed_vectors() {
    let prices = [10.0, 10.4, 10.1, 10.9, 11.3, 10.7];
    crate::check_slice_fn!(
        log_return_stats,
        log_return_stats_fwd,
        log_return_stats_rev,
        log_return_stats_grad,
        prices
    );
    // The value against the same statistics computed here, without a pushed `Vec`.
    let r: Vec<f64> = (1..6).map(|i| (prices[i] / prices[i - 1]).ln()).collect();
    let mean = r.iter().sum::<f64>() / 5.0;
    let var = r.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 4.0;
    let gains: Vec<f64> = r.iter().copied().filter(|x| *x > 0.0).collect();
    let want = var + gains.iter().sum::<f64>() / gains.len() as f64;
    assert_rel("log_return_stats: value", &[log_return_stats_grad(&prices).0], &[want], 1e-14);
    // m = 1 + 5/2 = 3 terms: ∂/∂xᵢ = 2a²xᵢ for i < 3, ∂/∂a = 2a Σ xᵢ².
    let (v, (g, ga)) = scaled_prefix_grad(&prices[..5], 0.5);
    let sq: f64 = prices[..3].iter().map(|p| p * p).sum();
    assert_rel("scaled_prefix: value", &[v, scaled_prefix(&prices[..5], 0.5)], &[0.25 * sq; 2], 1e-14);
    check_point(
        "scaled_prefix",
        &cat(&[&prices[..5], &[0.5]]),
        &|p| scaled_prefix(&p[..5], p[5]),
        &|p| {
            let (v, (g, ga)) = scaled_prefix_grad(&p[..5], p[5]);
            (v, cat(&[&g, &[ga]]))
        },
        &|p, d| scaled_prefix_fwd(&p[..5], &d[..5], p[5], d[5]),
        &|p, s| {
            let mut g = zeros(5);
            let (v, ga) = scaled_prefix_rev(&p[..5], &mut g, p[5], s);
            (v, cat(&[&g, &[ga]]))
        },
    );
    let want: Vec<f64> = (0..5).map(|i| if i < 3 { 0.5 * prices[i] } else { 0.0 }).collect();
    assert_rel("scaled_prefix: gradient by hand", &cat(&[&g, &[ga]]), &cat(&[&want, &[sq]]), 1e-14);
}

pub fn rows_of_matrices() {
    // A 3×2 system against num-dual, finite differences and the dot-product test.
    let (rows, cols) = (3, 2);
    let p = [0.3, -0.8, 1.2, 0.5, 0.9, -0.4, 0.7, -0.2, 0.4, -1.1, 0.6];
    let (na, nx) = (rows * cols, cols);
    let split = |p: &[f64]| (to_rows(&p[..na], cols), p[na..na + nx].to_vec(), p[na + nx..].to_vec());
    check_generic(&Generic {
        name: "lsq_rows",
        x: &p,
        f: &|p| {
            let (a, x, b) = split(p);
            lsq_rows(&a, &x, &b)
        },
        f_dual: &|p| {
            let a: Vec<Vec<_>> = p[..na].chunks(cols).map(|r| r.to_vec()).collect();
            lsq_rows(&a, &p[na..na + nx], &p[na + nx..])
        },
        f_hyper: &|p| {
            let a: Vec<Vec<_>> = p[..na].chunks(cols).map(|r| r.to_vec()).collect();
            lsq_rows(&a, &p[na..na + nx], &p[na + nx..])
        },
        grad: &|p| {
            let (a, x, b) = split(p);
            let (v, (ga, gx, gb)) = lsq_rows_grad(&a, &x, &b);
            (v, cat(&[&from_rows(&ga), &gx, &gb]))
        },
        fwd: &|p, d| {
            let ((a, x, b), (da, dx, db)) = (split(p), split(d));
            lsq_rows_fwd(&a, &da, &x, &dx, &b, &db)
        },
        rev: &|p, s| {
            let (a, x, b) = split(p);
            let (mut ga, mut gx, mut gb) = (to_rows(&zeros(na), cols), zeros(nx), zeros(rows));
            let v = lsq_rows_rev(&a, &mut ga, &x, &mut gx, &b, &mut gb, s);
            (v, cat(&[&from_rows(&ga), &gx, &gb]))
        },
        hvp: &|p, v| {
            let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
            let z: Vec<_> = (0..p.len()).map(|i| d(p[i], v[i])).collect();
            let a: Vec<Vec<_>> = z[..na].chunks(cols).map(|r| r.to_vec()).collect();
            let mut ga = vec![vec![d(0.0, 0.0); cols]; rows];
            let (mut gx, mut gb) = (vec![d(0.0, 0.0); nx], vec![d(0.0, 0.0); rows]);
            let one = phidiff::Dual::constant(1.0);
            lsq_rows_rev(&a, &mut ga, &z[na..na + nx], &mut gx, &z[na + nx..], &mut gb, one);
            ga.iter().flatten().chain(&gx).chain(&gb).map(|q| q.eps).collect()
        },
    });
    // By hand: r = A x − b; ∂/∂A = r xᵀ, ∂/∂x = Aᵀ r, ∂/∂b = −r.
    let (a, x, b) = split(&p);
    let r: Vec<f64> = (0..rows).map(|i| a[i][0] * x[0] + a[i][1] * x[1] - b[i]).collect();
    let mut want = zeros(p.len());
    for i in 0..rows {
        for j in 0..cols {
            want[cols * i + j] = r[i] * x[j];
            want[na + j] += a[i][j] * r[i];
        }
        want[na + nx + i] = -r[i];
    }
    let (_, (ga, gx, gb)) = lsq_rows_grad(&a, &x, &b);
    assert_rel("lsq_rows: gradient by hand", &cat(&[&from_rows(&ga), &gx, &gb]), &want, 1e-14);

    // Softmax rows in place: forward against reverse, finite differences.
    let l0 = [0.4, -1.1, 0.7, 2.0, 0.1, -0.6];
    check_fwd_rev(&Case {
        name: "softmax_rows",
        x: &l0,
        primal: &|p| {
            let mut m = to_rows(p, 3);
            softmax_rows(&mut m);
            from_rows(&m)
        },
        jvp: &|p, d| {
            let (mut m, mut dm) = (to_rows(p, 3), to_rows(d, 3));
            softmax_rows_fwd(&mut m, &mut dm);
            (from_rows(&m), from_rows(&dm))
        },
        vjp: &|p, w| {
            let (mut m, mut dm) = (to_rows(p, 3), to_rows(w, 3));
            softmax_rows_rev(&mut m, &mut dm);
            (from_rows(&m), from_rows(&dm))
        },
        tols: TOLS,
    });
    // By hand: the Jacobian of a softmax row s is diag(s) − s sᵀ, so a weight w on the
    // outputs pulls back to s ⊙ (w − s·w).
    let w = [1.0, -0.5, 0.25, 0.0, 2.0, -1.0];
    let mut m = to_rows(&l0, 3);
    let mut dm = to_rows(&w, 3);
    softmax_rows_rev(&mut m, &mut dm);
    let mut want = zeros(6);
    for r in 0..2 {
        let e: Vec<f64> = (0..3).map(|j| l0[3 * r + j].exp()).collect();
        let z: f64 = e.iter().sum();
        let s: Vec<f64> = e.iter().map(|v| v / z).collect();
        let sw: f64 = (0..3).map(|j| s[j] * w[3 * r + j]).sum();
        for j in 0..3 {
            want[3 * r + j] = s[j] * (w[3 * r + j] - sw);
        }
    }
    assert_rel("softmax_rows: adjoint by hand", &from_rows(&dm), &want, 1e-14);

    // Pairs of points in rows.
    let (n, d) = (3, 2);
    let q = [0.3, -0.8, 1.2, 0.5, 0.9, -0.4, 1.5];
    check_point(
        "pair_energy",
        &q,
        &|q| pair_energy(&to_rows(&q[..n * d], d), q[n * d]),
        &|q| {
            let (v, (g, gk)) = pair_energy_grad(&to_rows(&q[..n * d], d), q[n * d]);
            (v, cat(&[&from_rows(&g), &[gk]]))
        },
        &|q, t| pair_energy_fwd(&to_rows(&q[..n * d], d), &to_rows(&t[..n * d], d), q[n * d], t[n * d]),
        &|q, s| {
            let mut g = to_rows(&zeros(n * d), d);
            let (v, gk) = pair_energy_rev(&to_rows(&q[..n * d], d), &mut g, q[n * d], s);
            (v, cat(&[&from_rows(&g), &[gk]]))
        },
    );
    // ∂/∂k = Σ_{i<j} 1 / (1 + |p_i − p_j|²), by hand.
    let pts = to_rows(&q[..n * d], d);
    let mut want_k = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            let d2: f64 = (0..d).map(|c| (pts[i][c] - pts[j][c]).powi(2)).sum();
            want_k += 1.0 / (1.0 + d2);
        }
    }
    assert_rel("pair_energy: ∂/∂k by hand", &[pair_energy_grad(&pts, q[n * d]).1 .1], &[want_k], 1e-14);

    // Rows passed to helpers, written in between: finite differences and the dot product,
    // with `m` an in-place input and output (its final value as a second output).
    let (n, d) = (2, 3);
    let z0 = [0.3, -0.8, 1.2, 0.5, 0.9, -0.4, 0.7, -0.2, 1.3];
    check_fwd_rev(&Case {
        name: "scaled_rows",
        x: &z0,
        primal: &|z| {
            let mut m = to_rows(&z[..n * d], d);
            let s = scaled_rows(&mut m, &z[n * d..n * d + n], z[8]);
            cat(&[&from_rows(&m), &[s]])
        },
        jvp: &|z, t| {
            let (mut m, mut dm) = (to_rows(&z[..n * d], d), to_rows(&t[..n * d], d));
            let (s, ds) = scaled_rows_fwd(&mut m, &mut dm, &z[n * d..n * d + n], &t[n * d..n * d + n], z[8], t[8]);
            (cat(&[&from_rows(&m), &[s]]), cat(&[&from_rows(&dm), &[ds]]))
        },
        vjp: &|z, w| {
            let (mut m, mut dm) = (to_rows(&z[..n * d], d), to_rows(&w[..n * d], d));
            let mut dx = zeros(n);
            let (s, dk) = scaled_rows_rev(&mut m, &mut dm, &z[n * d..n * d + n], &mut dx, z[8], w[n * d]);
            (cat(&[&from_rows(&m), &[s]]), cat(&[&from_rows(&dm), &dx, &[dk]]))
        },
        tols: TOLS,
    });
    // The rows after the calls, by hand: column 0 scaled by k, the others by k².
    let mut m = to_rows(&z0[..n * d], d);
    scaled_rows(&mut m, &z0[n * d..n * d + n], 2.0);
    let want: Vec<f64> = (0..n * d).map(|i| z0[i] * if i % d == 0 { 2.0 } else { 4.0 }).collect();
    assert_rel("scaled_rows: rows", &from_rows(&m), &want, 1e-15);
}

pub fn vectors_grown_by_runs() {
    // tail_mean: the values beyond k of the centre (3 of 6 here).
    let x = [0.2, 2.5, -1.9, 0.4, 3.1, 0.7];
    let (c, k) = (0.5, 1.0);
    let p = cat(&[&x, &[c, k]]);
    check_point(
        "tail_mean",
        &p,
        &|p| tail_mean(&p[..6], p[6], p[7]),
        &|p| {
            let (v, (g, gc, gk)) = tail_mean_grad(&p[..6], p[6], p[7]);
            (v, cat(&[&g, &[gc, gk]]))
        },
        &|p, d| tail_mean_fwd(&p[..6], &d[..6], p[6], d[6], p[7], d[7]),
        &|p, s| {
            let mut g = zeros(6);
            let (v, gc, gk) = tail_mean_rev(&p[..6], &mut g, p[6], p[7], s);
            (v, cat(&[&g, &[gc, gk]]))
        },
    );
    // By hand: the far values are 2.5, −1.9, 3.1: mean of (v − c), ∂/∂xᵢ = 1/3 for those,
    // ∂/∂c = −1.
    let (v, (g, gc, gk)) = tail_mean_grad(&x, c, k);
    assert_rel("tail_mean: value", &[v], &[(2.0 - 2.4 + 2.6) / 3.0], 1e-15);
    let third = 1.0 / 3.0;
    assert_rel("tail_mean: gradient by hand", &cat(&[&g, &[gc, gk]]), &[0.0, third, third, 0.0, third, 0.0, -1.0, 0.0], 1e-15);
    assert_eq!(tail_mean_grad(&x, c, 9.0).0, 0.0, "nothing far: the early return");

    // feature_rms: the same features assembled here without a growing Vec.
    let x = [0.3, 1.2, 0.9, 1.6, 2.2];
    let b = 0.8;
    let want = |x: &[f64], b: f64| {
        let mut f = vec![b];
        f.extend(x.iter().copied());
        f.extend(x.iter().map(|v| v * v * b));
        f.extend(x.windows(2).filter(|w| w[1] >= w[0]).map(|w| w[1] - w[0]));
        f.push(b * b);
        (f.iter().map(|t| t * t).sum::<f64>() / f.len() as f64).sqrt()
    };
    assert_rel("feature_rms: value", &[feature_rms(&x, b), feature_rms_grad(&x, b).0], &[want(&x, b); 2], 1e-15);
    let p = cat(&[&x, &[b]]);
    check_point(
        "feature_rms",
        &p,
        &|p| feature_rms(&p[..5], p[5]),
        &|p| {
            let (v, (g, gb)) = feature_rms_grad(&p[..5], p[5]);
            (v, cat(&[&g, &[gb]]))
        },
        &|p, d| feature_rms_fwd(&p[..5], &d[..5], p[5], d[5]),
        &|p, s| {
            let mut g = zeros(5);
            let (v, gb) = feature_rms_rev(&p[..5], &mut g, p[5], s);
            (v, cat(&[&g, &[gb]]))
        },
    );

    // flattened_positive over a ragged matrix (rows of 2 and 3).
    let m0 = [1.0, -2.0, 3.0, 0.5, -1.0];
    let rows = |p: &[f64]| vec![p[..2].to_vec(), p[2..5].to_vec()];
    let sep = 0.3;
    // 1, sep, 3, 0.5, sep: five values.
    let want = (1.0 + 9.0 + 0.25 + 2.0 * sep * sep) / 5.0;
    assert_rel("flattened_positive: value", &[flattened_positive(&rows(&m0), sep)], &[want], 1e-15);
    let p = cat(&[&m0, &[sep]]);
    check_point(
        "flattened_positive",
        &p,
        &|p| flattened_positive(&rows(p), p[5]),
        &|p| {
            let (v, (g, gs)) = flattened_positive_grad(&rows(p), p[5]);
            (v, cat(&[&from_rows(&g), &[gs]]))
        },
        &|p, d| flattened_positive_fwd(&rows(p), &rows(d), p[5], d[5]),
        &|p, s| {
            let mut g = rows(&zeros(5));
            let (v, gs) = flattened_positive_rev(&rows(p), &mut g, p[5], s);
            (v, cat(&[&from_rows(&g), &[gs]]))
        },
    );
}

pub fn three_dimensional() {
    // A 2×2×3 field, flattened in (i, j, l) order.
    let (a, b, c) = (2, 2, 3);
    let to3 = |p: &[f64]| -> Vec<Vec<Vec<f64>>> {
        (0..a).map(|i| (0..b).map(|j| p[(i * b + j) * c..(i * b + j + 1) * c].to_vec()).collect()).collect()
    };
    let from3 = |t: &[Vec<Vec<f64>>]| -> Vec<f64> { t.iter().flatten().flatten().copied().collect() };
    let t0: Vec<f64> = (0..12).map(|q| (q as f64 * 0.37).sin()).collect();
    let k = 0.9;
    let p = cat(&[&t0, &[k]]);
    check_point(
        "field_gradient_energy",
        &p,
        &|p| field_gradient_energy(&to3(&p[..12]), p[12]),
        &|p| {
            let (v, (g, gk)) = field_gradient_energy_grad(&to3(&p[..12]), p[12]);
            (v, cat(&[&from3(&g), &[gk]]))
        },
        &|p, d| field_gradient_energy_fwd(&to3(&p[..12]), &to3(&d[..12]), p[12], d[12]),
        &|p, s| {
            let mut g = to3(&zeros(12));
            let (v, gk) = field_gradient_energy_rev(&to3(&p[..12]), &mut g, p[12], s);
            (v, cat(&[&from3(&g), &[gk]]))
        },
    );
    // By hand: ∂/∂k = Σ tanh(t[i][j][0] t[i][j][2]).
    let t = to3(&t0);
    let want: f64 = t.iter().flatten().map(|r| (r[0] * r[2]).tanh()).sum();
    assert_rel("field_gradient_energy: ∂/∂k by hand", &[field_gradient_energy_grad(&t, k).1 .1], &[want], 1e-14);

    // In place, with a profile w along the last axis.
    let w = [0.2, -0.5, 0.1];
    let x = cat(&[&t0, &w]);
    check_fwd_rev(&Case {
        name: "profile_scale",
        x: &x,
        primal: &|x| {
            let mut t = to3(&x[..12]);
            profile_scale(&mut t, &x[12..]);
            from3(&t)
        },
        jvp: &|x, d| {
            let (mut t, mut dt) = (to3(&x[..12]), to3(&d[..12]));
            profile_scale_fwd(&mut t, &mut dt, &x[12..], &d[12..]);
            (from3(&t), from3(&dt))
        },
        vjp: &|x, y| {
            let (mut t, mut dt) = (to3(&x[..12]), to3(y));
            let mut dw = zeros(3);
            profile_scale_rev(&mut t, &mut dt, &x[12..], &mut dw);
            (from3(&t), cat(&[&from3(&dt), &dw]))
        },
        tols: TOLS,
    });
    // A tangent with a row of the wrong length panics naming the parameter.
    let bad = std::panic::catch_unwind(|| {
        let (mut t, mut dt) = (to3(&t0), to3(&t0));
        dt[1][0].pop();
        profile_scale_fwd(&mut t, &mut dt, &w, &[0.0; 3]);
    });
    let msg = bad.expect_err("a short tangent row panics");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("t[i][j]") && msg.contains("dt[i][j]"), "{msg}");

    // A 3-D state in a checkpointed loop.
    let x: Vec<f64> = (0..8).map(|q| 0.1 * q as f64 + 0.2).collect();
    check_point(
        "stepped_field",
        &x,
        &|x| stepped_field(x, 5),
        &|x| stepped_field_grad(x, 5),
        &|x, d| stepped_field_fwd(x, d, 5),
        &|x, s| {
            let mut g = zeros(8);
            let v = stepped_field_rev(x, &mut g, 5, s);
            (v, g)
        },
    );
}

/// Destructuring assignment: a second-order recurrence carried as a pair,
/// `(a, b) = (b, ..)`, a place skipped with `_`, and a nested tuple taken apart leaf by
/// leaf (every value read before any place is written, as Rust does).
#[differentiate(forward, reverse)]
pub fn carried_pairs<T: Float + FromPrimitive>(x: &[T]) -> T {
    let half = T::from_f64(0.5).unwrap();
    let (mut a, mut b) = (x[0], x[1]);
    let mut c = x[2];
    for &xi in x {
        (a, b) = (b, a * half + b * xi);
        (c, _) = (c * half + a.sin(), T::zero());
    }
    let (mut p, mut q, mut r) = (a, b, c);
    (p, (q, r)) = (r, (p * q, q));
    p + q * r
}

/// The same recurrence with one variable per value, assigned through temporaries.
fn carried_pairs_by_hand(x: &[f64]) -> f64 {
    let (mut a, mut b, mut c) = (x[0], x[1], x[2]);
    for &xi in x {
        let next_b = a * 0.5 + b * xi;
        a = b;
        b = next_b;
        c = c * 0.5 + a.sin();
    }
    c + (a * b) * b
}

pub fn destructuring_assignments() {
    let x = [0.4, -0.7, 0.9, 0.3, -0.2];
    assert_close(
        "carried_pairs",
        carried_pairs(&x),
        carried_pairs_by_hand(&x),
        1e-14,
        1e-15,
    );
    crate::check_slice_fn!(carried_pairs, carried_pairs_fwd, carried_pairs_rev, carried_pairs_grad, x);
}

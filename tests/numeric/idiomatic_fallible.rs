//! Issue 46's corpus, fallible code: functions returning `Option` and `Result` as
//! statistics and interpolation crates write them (`?` on `first()`/`get(i)`/`reduce`,
//! `.ok_or(..)?`, `return None`, `Err(..)` arms, a `Result<(), String>` writer), and
//! `if let`/`while let`/`let .. else` on optional elements.
//! Each is checked on its success path (num-dual for the generic ones, finite differences
//! and the dot-product test for all) and on each failure path: the derivatives return the
//! primal's `None`/`Err(..)` and leave the shadows and outputs as they were.

use super::differentiate;
use crate::common::*;
use num_traits::{Float, FromPrimitive};
use std::iter::Sum;

/// Why a statistic cannot be computed.
#[derive(Debug, Clone, PartialEq)]
pub enum StatsError {
    Empty,
    NonPositive { at: usize },
}

/// The log-likelihood of a normal sample; `None` without data or with a scale that is not
/// positive.
#[differentiate(forward, reverse)]
pub fn normal_log_likelihood<T: Float + FromPrimitive + Sum>(x: &[T], mu: T, sigma: T) -> Option<T> {
    if x.is_empty() || sigma <= T::zero() {
        return None;
    }
    let n = T::from_usize(x.len())?;
    let half_ln_2pi = T::from_f64(0.918_938_533_204_672_7)?;
    let ss: T = x.iter().map(|&v| ((v - mu) / sigma).powi(2)).sum();
    Some(-n * (half_ln_2pi + sigma.ln()) - ss / T::from_f64(2.0)?)
}

/// The geometric mean; an error for an empty sample or a value that is not positive.
#[differentiate(forward, reverse)]
pub fn geometric_mean(x: &[f64]) -> Result<f64, StatsError> {
    if x.is_empty() {
        return Err(StatsError::Empty);
    }
    for (i, &v) in x.iter().enumerate() {
        if v <= 0.0 {
            return Err(StatsError::NonPositive { at: i });
        }
    }
    let mean_log = x.iter().map(|v| v.ln()).sum::<f64>() / x.len() as f64;
    Ok(mean_log.exp())
}

/// The ratio of the peak to the mean (`max_by(..)?`).
#[differentiate(forward, reverse)]
pub fn peak_to_mean(x: &[f64]) -> Option<f64> {
    let peak = x.iter().copied().max_by(|a, b| a.total_cmp(b))?;
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    Some(peak / mean)
}

/// A stable softmax into `out`; an error when the lengths differ or the input is empty.
#[differentiate(forward, reverse)]
pub fn softmax_into(x: &[f64], out: &mut [f64]) -> Result<(), String> {
    if x.len() != out.len() {
        return Err(format!("softmax: {} inputs, {} outputs", x.len(), out.len()));
    }
    let m = x
        .iter()
        .copied()
        .reduce(f64::max)
        .ok_or_else(|| "softmax of nothing".to_string())?;
    let mut total = 0.0;
    for (o, &v) in out.iter_mut().zip(x) {
        *o = (v - m).exp();
        total += *o;
    }
    for o in out.iter_mut() {
        *o /= total;
    }
    Ok(())
}

/// Linear interpolation in a table at `t` (`while let` over `get`, `first()?`, `get(i)?`);
/// `None` outside the table.
#[differentiate(forward, reverse)]
pub fn interpolate(xs: &[f64], ys: &[f64], t: f64) -> Option<f64> {
    let lo = *xs.first()?;
    if t < lo || t > *xs.last()? {
        return None;
    }
    let mut i = 0;
    while let Some(&x1) = xs.get(i + 1) {
        if t <= x1 {
            break;
        }
        i += 1;
    }
    let (x0, x1) = (xs[i], *xs.get(i + 1)?);
    let w = (t - x0) / (x1 - x0);
    Some(ys[i] * (1.0 - w) + *ys.get(i + 1)? * w)
}

/// The first and last values weighted (`if let`, `let .. else` on optional elements).
#[differentiate(forward, reverse)]
pub fn end_weighted(x: &[f64], w: f64) -> f64 {
    let Some(&first) = x.first() else {
        return 0.0;
    };
    let mut s = first * w;
    if let Some(last) = x.last() {
        s += last * last;
    }
    s
}

/// Why a growth model cannot be scored: a statistic failed (converted by `From`, as `?`
/// does), or the sample is too short.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelError {
    Stats(StatsError),
    TooShort(usize),
}

impl From<StatsError> for ModelError {
    fn from(e: StatsError) -> Self {
        ModelError::Stats(e)
    }
}

/// A growth score built on the fallible statistic above: `geometric_mean(x)?` on the
/// sample and on its tail, the error converted into the caller's.
#[differentiate(forward, reverse)]
pub fn growth_score(x: &[f64], k: f64) -> Result<f64, ModelError> {
    if x.len() < 2 {
        return Err(ModelError::TooShort(x.len()));
    }
    let g = geometric_mean(x)?;
    let tail = geometric_mean(&x[1..])?;
    Ok(k * g.ln() + tail)
}

/// The peak-to-mean ratio of a table times a value read off it: two `Option` functions
/// called with `?`.
#[differentiate(forward, reverse)]
pub fn peak_scaled_lookup(xs: &[f64], ys: &[f64], t: f64) -> Option<f64> {
    let p = peak_to_mean(ys)?;
    Some(p * interpolate(xs, ys, t)?)
}

/// A plain function unwrapping fallible ones it knows succeed here (`.expect(..)`,
/// `.unwrap()` on the calls): their derivatives are unwrapped the same way.
#[differentiate(forward, reverse)]
pub fn log_growth(x: &[f64], k: f64) -> f64 {
    let g = geometric_mean(x).expect("a positive sample");
    let p = peak_to_mean(x).unwrap();
    k * g.ln() + p
}

fn rev_of(
    f: &dyn Fn(&[f64], &mut [f64], f64) -> Option<f64>,
) -> impl Fn(&[f64], f64) -> (f64, Vec<f64>) + '_ {
    move |x, s| {
        let mut g = zeros(x.len());
        let v = f(x, &mut g, s).expect("the success path");
        (v, g)
    }
}

/// A recurrence driven by a fixed element read inside the loop with `?`: the read is the
/// same every iteration, and where it is missing the function fails in its first one.
/// (Found by the random programs: the reverse pass moved the loop-invariant read before
/// the loop, past the failure that guards it, so `_rev` panicked where it should return
/// `None`.)
#[differentiate(forward, reverse)]
pub fn driven_recurrence(x: &[f64], a: f64) -> Option<f64> {
    let mut s = a;
    for i in 0..x.len() {
        s = (s * x[i]).sin() + *x.get(3)?;
    }
    Some(s)
}

pub fn optional_statistics() {
    let x = [0.7, 1.9, 1.2, 0.4, 2.6];
    let (mu, sigma) = (1.1, 0.8);
    let p = cat(&[&x, &[mu, sigma]]);
    let n = x.len();
    check_generic(&Generic {
        name: "normal_log_likelihood",
        x: &p,
        f: &|p| normal_log_likelihood(&p[..n], p[n], p[n + 1]).unwrap(),
        f_dual: &|p| normal_log_likelihood(&p[..n], p[n], p[n + 1]).unwrap(),
        f_hyper: &|p| normal_log_likelihood(&p[..n], p[n], p[n + 1]).unwrap(),
        grad: &|p| {
            let (v, (mut g, gm, gs)) = normal_log_likelihood_grad(&p[..n], p[n], p[n + 1]).unwrap();
            g.extend([gm, gs]);
            (v, g)
        },
        fwd: &|p, d| {
            normal_log_likelihood_fwd(&p[..n], &d[..n], p[n], d[n], p[n + 1], d[n + 1]).unwrap()
        },
        rev: &|p, s| {
            let mut g = zeros(n);
            let (v, gm, gs) = normal_log_likelihood_rev(&p[..n], &mut g, p[n], p[n + 1], s).unwrap();
            g.extend([gm, gs]);
            (v, g)
        },
        hvp: &|p, v| {
            let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
            let xs: Vec<_> = (0..n).map(|i| d(p[i], v[i])).collect();
            let mut g = vec![d(0.0, 0.0); n];
            let (_, gm, gs) = normal_log_likelihood_rev(
                &xs,
                &mut g,
                d(p[n], v[n]),
                d(p[n + 1], v[n + 1]),
                phidiff::Dual::constant(1.0),
            )
            .unwrap();
            g.iter().map(|z| z.eps).chain([gm.eps, gs.eps]).collect()
        },
    });
    // By hand: ∂/∂μ = Σ(x − μ)/σ², ∂/∂σ = −n/σ + Σ(x − μ)²/σ³.
    let (_, (_, gm, gs)) = normal_log_likelihood_grad(&x, mu, sigma).unwrap();
    let s1: f64 = x.iter().map(|v| v - mu).sum();
    let s2: f64 = x.iter().map(|v| (v - mu) * (v - mu)).sum();
    let want = [s1 / (sigma * sigma), -(n as f64) / sigma + s2 / sigma.powi(3)];
    assert_rel("normal_log_likelihood: ∂μ, ∂σ by hand", &[gm, gs], &want, 1e-13);

    // The failure paths: `None` from every derivative, shadows untouched.
    for (x, sigma) in [(&x[..], -0.5), (&[][..], 0.8)] {
        assert_eq!(normal_log_likelihood(x, mu, sigma), None);
        let mut g = vec![7.0; x.len()];
        assert_eq!(normal_log_likelihood_rev(x, &mut g, mu, sigma, 1.0), None);
        assert!(g.iter().all(|&v| v == 7.0), "the shadow is left as it was");
        assert_eq!(normal_log_likelihood_grad(x, mu, sigma), None);
        let d = vec![1.0; x.len()];
        assert_eq!(normal_log_likelihood_fwd(x, &d, mu, 1.0, sigma, 1.0), None);
    }

    // max_by(..)?: the peak's position gets 1/mean, every position −peak/(n·mean²).
    let rev = rev_of(&|x, g, s| peak_to_mean_rev(x, g, s));
    check_point(
        "peak_to_mean",
        &x,
        &|x| peak_to_mean(x).unwrap(),
        &|x| peak_to_mean_grad(x).unwrap(),
        &|x, d| peak_to_mean_fwd(x, d).unwrap(),
        &rev,
    );
    let mean = x.iter().sum::<f64>() / 5.0;
    let (_, g) = peak_to_mean_grad(&x).unwrap();
    let want: Vec<f64> = (0..5)
        .map(|i| f64::from(u8::from(i == 4)) / mean - 2.6 / (5.0 * mean * mean))
        .collect();
    assert_rel("peak_to_mean: gradient by hand", &g, &want, 1e-13);
    assert_eq!(peak_to_mean_grad(&[]), None);
    assert_eq!(peak_to_mean_fwd(&[], &[]), None);
}

pub fn results_and_errors() {
    let x = [0.7, 1.9, 1.2, 0.4, 2.6];
    check_point(
        "geometric_mean",
        &x,
        &|x| geometric_mean(x).unwrap(),
        &|x| geometric_mean_grad(x).unwrap(),
        &|x, d| geometric_mean_fwd(x, d).unwrap(),
        &|x, s| {
            let mut g = zeros(x.len());
            let v = geometric_mean_rev(x, &mut g, s).unwrap();
            (v, g)
        },
    );
    // ∂G/∂xᵢ = G/(n xᵢ).
    let (v, g) = geometric_mean_grad(&x).unwrap();
    let want: Vec<f64> = x.iter().map(|xi| v / (5.0 * xi)).collect();
    assert_rel("geometric_mean: gradient by hand", &g, &want, 1e-14);
    assert_eq!(geometric_mean_grad(&[]), Err(StatsError::Empty));
    let bad = [0.7, -1.9, 1.2];
    let mut g = vec![3.0; 3];
    assert_eq!(geometric_mean(&bad), Err(StatsError::NonPositive { at: 1 }));
    assert_eq!(geometric_mean_rev(&bad, &mut g, 1.0), Err(StatsError::NonPositive { at: 1 }));
    assert_eq!(g, [3.0; 3], "the shadow is left as it was");
    assert_eq!(geometric_mean_fwd(&bad, &[1.0; 3]), Err(StatsError::NonPositive { at: 1 }));

    // softmax_into: a writer returning `Result<(), String>`.
    let n = x.len();
    check_fwd_rev(&Case {
        name: "softmax_into",
        x: &x,
        primal: &|x| {
            let mut out = zeros(x.len());
            softmax_into(x, &mut out).unwrap();
            out
        },
        jvp: &|x, d| {
            let (mut out, mut dout) = (zeros(x.len()), zeros(x.len()));
            softmax_into_fwd(x, d, &mut out, &mut dout).unwrap();
            (out, dout)
        },
        vjp: &|x, w| {
            let (mut out, mut dout) = (zeros(x.len()), w.to_vec());
            let mut g = zeros(x.len());
            softmax_into_rev(x, &mut g, &mut out, &mut dout).unwrap();
            (out, g)
        },
        tols: TOLS,
    });
    // Jᵀw by hand: sᵢ (wᵢ − Σ sⱼ wⱼ).
    let w = [0.3, -1.2, 0.8, 0.1, 0.5];
    let (mut out, mut dout, mut g) = (zeros(n), w.to_vec(), zeros(n));
    softmax_into_rev(&x, &mut g, &mut out, &mut dout).unwrap();
    let sw: f64 = out.iter().zip(&w).map(|(s, w)| s * w).sum();
    let want: Vec<f64> = out.iter().zip(&w).map(|(s, w)| s * (w - sw)).collect();
    assert_rel("softmax_into: Jᵀw by hand", &g, &want, 1e-13);
    // Failures: the message of the primal; outputs, tangents and shadows untouched.
    let mut short = [9.0; 3];
    let mut dshort = [9.0; 3];
    let mut g = zeros(n);
    let want = Err("softmax: 5 inputs, 3 outputs".to_string());
    assert_eq!(softmax_into(&x, &mut short), want);
    assert_eq!(softmax_into_rev(&x, &mut g, &mut short, &mut dshort), want);
    assert_eq!(softmax_into_fwd(&x, &[1.0; 5], &mut short, &mut dshort), want);
    assert_eq!((short, dshort, g), ([9.0; 3], [9.0; 3], zeros(n)));
    let want = Err("softmax of nothing".to_string());
    assert_eq!(softmax_into_rev(&[], &mut [], &mut [], &mut []), want);
    assert_eq!(softmax_into_fwd(&[], &[], &mut [], &mut []), want);
}

pub fn optional_elements() {
    let xs = [0.0, 0.5, 1.5, 2.0, 3.5];
    let ys = [1.0, -0.4, 0.9, 2.2, 0.3];
    let nx = xs.len();
    let p = cat(&[&xs, &ys, &[1.7]]);
    let interp = |p: &[f64]| interpolate(&p[..nx], &p[nx..2 * nx], p[2 * nx]).unwrap();
    check_point(
        "interpolate",
        &p,
        &interp,
        &|p| {
            let (v, (mut a, b, t)) = interpolate_grad(&p[..nx], &p[nx..2 * nx], p[2 * nx]).unwrap();
            a.extend(b);
            a.push(t);
            (v, a)
        },
        &|p, d| {
            interpolate_fwd(&p[..nx], &d[..nx], &p[nx..2 * nx], &d[nx..2 * nx], p[2 * nx], d[2 * nx])
                .unwrap()
        },
        &|p, s| {
            let (mut a, mut b) = (zeros(nx), zeros(nx));
            let (v, t) = interpolate_rev(&p[..nx], &mut a, &p[nx..2 * nx], &mut b, p[2 * nx], s).unwrap();
            a.extend(b);
            a.push(t);
            (v, a)
        },
    );
    // t = 1.7 lies in [1.5, 2.0]: the slope there is (2.2 − 0.9)/0.5.
    let (v, (_, gy, gt)) = interpolate_grad(&xs, &ys, 1.7).unwrap();
    assert_close("interpolate: value", v, 0.9 + 0.4 * 1.3, 1e-14, 0.0);
    assert_rel("interpolate: ∂t, ∂y by hand", &[gt, gy[2], gy[3]], &[2.6, 0.6, 0.4], 1e-13);
    for t in [-0.1, 3.6] {
        let (mut a, mut b) = (zeros(nx), zeros(nx));
        assert_eq!(interpolate(&xs, &ys, t), None);
        assert_eq!(interpolate_rev(&xs, &mut a, &ys, &mut b, t, 1.0), None);
        assert_eq!((a, b), (zeros(nx), zeros(nx)));
    }
    assert_eq!(interpolate_grad(&[], &[], 0.0), None);

    let x = [0.6, -1.3, 2.1];
    check_point(
        "end_weighted",
        &cat(&[&x, &[0.7]]),
        &|p| end_weighted(&p[..3], p[3]),
        &|p| {
            let (v, (mut g, gw)) = end_weighted_grad(&p[..3], p[3]);
            g.push(gw);
            (v, g)
        },
        &|p, d| end_weighted_fwd(&p[..3], &d[..3], p[3], d[3]),
        &|p, s| {
            let mut g = zeros(3);
            let (v, gw) = end_weighted_rev(&p[..3], &mut g, p[3], s);
            g.push(gw);
            (v, g)
        },
    );
    let (v, (g, gw)) = end_weighted_grad(&x, 0.7);
    assert_rel("end_weighted: by hand", &[v, g[0], g[2], gw], &[0.6 * 0.7 + 2.1 * 2.1, 0.7, 4.2, 0.6], 1e-15);
    assert_eq!(end_weighted_grad(&[], 0.7), (0.0, (vec![], 0.0)));
}

pub fn fallible_calls() {
    let x = [0.7, 1.9, 1.2, 0.4, 2.6];
    let k = 1.3;
    let p = cat(&[&x, &[k]]);
    check_point(
        "growth_score",
        &p,
        &|p| growth_score(&p[..5], p[5]).unwrap(),
        &|p| {
            let (v, (g, gk)) = growth_score_grad(&p[..5], p[5]).unwrap();
            (v, cat(&[&g, &[gk]]))
        },
        &|p, d| growth_score_fwd(&p[..5], &d[..5], p[5], d[5]).unwrap(),
        &|p, s| {
            let mut g = zeros(5);
            let (v, gk) = growth_score_rev(&p[..5], &mut g, p[5], s).unwrap();
            (v, cat(&[&g, &[gk]]))
        },
    );
    // By hand: k ln G = k mean(ln x), so ∂/∂xᵢ = k/(5 xᵢ) + [i ≥ 1] T/(4 xᵢ) with T the
    // tail's geometric mean; ∂/∂k = ln G.
    let lng = x.iter().map(|v| v.ln()).sum::<f64>() / 5.0;
    let t = (x[1..].iter().map(|v| v.ln()).sum::<f64>() / 4.0).exp();
    let mut want: Vec<f64> = (0..5)
        .map(|i| k / (5.0 * x[i]) + if i >= 1 { t / (4.0 * x[i]) } else { 0.0 })
        .collect();
    want.push(lng);
    let (_, (g, gk)) = growth_score_grad(&x, k).unwrap();
    assert_rel("growth_score: gradient by hand", &cat(&[&g, &[gk]]), &want, 1e-14);
    // The callee's failure, converted, and the caller's own; the shadow untouched.
    let bad = [0.7, 1.9, -1.2];
    let want = ModelError::Stats(StatsError::NonPositive { at: 2 });
    assert_eq!(growth_score(&bad, k), Err(want.clone()));
    let mut g = vec![5.0; 3];
    assert_eq!(growth_score_rev(&bad, &mut g, k, 1.0), Err(want.clone()));
    assert_eq!(g, [5.0; 3], "the shadow is left as it was");
    assert_eq!(growth_score_fwd(&bad, &[1.0; 3], k, 1.0), Err(want));
    assert_eq!(growth_score_grad(&[2.0], k), Err(ModelError::TooShort(1)));

    // Option callees: a ratio times an interpolated value.
    let (xs, ys) = ([0.0, 1.0, 2.5, 4.0], [1.0, 3.0, 2.0, 0.5]);
    let t = 1.8;
    let q = cat(&[&ys, &[t]]);
    check_point(
        "peak_scaled_lookup",
        &q,
        &|q| peak_scaled_lookup(&xs, &q[..4], q[4]).unwrap(),
        &|q| {
            let (v, (_, gy, gt)) = peak_scaled_lookup_grad(&xs, &q[..4], q[4]).unwrap();
            (v, cat(&[&gy, &[gt]]))
        },
        &|q, d| peak_scaled_lookup_fwd(&xs, &[0.0; 4], &q[..4], &d[..4], q[4], d[4]).unwrap(),
        &|q, s| {
            let (mut gx, mut gy) = (zeros(4), zeros(4));
            let (v, gt) = peak_scaled_lookup_rev(&xs, &mut gx, &q[..4], &mut gy, q[4], s).unwrap();
            (v, cat(&[&gy, &[gt]]))
        },
    );
    // Outside the table: None from the callee, the shadows untouched.
    let (mut gx, mut gy) = (vec![7.0; 4], vec![7.0; 4]);
    assert_eq!(peak_scaled_lookup_rev(&xs, &mut gx, &ys, &mut gy, 9.0, 1.0), None);
    assert_eq!((gx, gy), (vec![7.0; 4], vec![7.0; 4]));
    assert_eq!(peak_scaled_lookup_fwd(&xs, &[0.0; 4], &ys, &[1.0; 4], 9.0, 1.0), None);

    // Unwrapped in a plain caller: finite differences and the dot product, and by hand
    // (∂/∂k = ln G; ∂/∂xᵢ = k/(5 xᵢ) + ∂(peak/mean)/∂xᵢ from the two callees' gradients).
    let x = [0.7, 1.9, 1.2, 0.4, 2.6];
    let k = 0.6;
    let p = cat(&[&x, &[k]]);
    check_point(
        "log_growth",
        &p,
        &|p| log_growth(&p[..5], p[5]),
        &|p| {
            let (v, (g, gk)) = log_growth_grad(&p[..5], p[5]);
            (v, cat(&[&g, &[gk]]))
        },
        &|p, d| log_growth_fwd(&p[..5], &d[..5], p[5], d[5]),
        &|p, s| {
            let mut g = zeros(5);
            let (v, gk) = log_growth_rev(&p[..5], &mut g, p[5], s);
            (v, cat(&[&g, &[gk]]))
        },
    );
    let (_, (g, gk)) = log_growth_grad(&x, k);
    let (gm, ggm) = geometric_mean_grad(&x).unwrap();
    let (_, gp) = peak_to_mean_grad(&x).unwrap();
    let want: Vec<f64> = (0..5).map(|i| k * ggm[i] / gm + gp[i]).collect();
    assert_rel("log_growth: gradient by hand", &cat(&[&g, &[gk]]), &cat(&[&want, &[gm.ln()]]), 1e-14);
    let bad = std::panic::catch_unwind(|| log_growth_grad(&[1.0, -1.0], k));
    let msg = bad.expect_err("a sample with a negative value panics");
    assert_eq!(msg.downcast_ref::<String>().map(String::as_str), Some("a positive sample: NonPositive { at: 1 }"));
}

pub fn guarded_reads_in_loops() {
    // Where x[3] exists: finite differences and the dot product.
    let x = [0.4, -0.7, 1.1, 0.25, 0.9];
    let p = cat(&[&x, &[0.6]]);
    check_point(
        "driven_recurrence",
        &p,
        &|p| driven_recurrence(&p[..5], p[5]).unwrap(),
        &|p| {
            let (v, (g, ga)) = driven_recurrence_grad(&p[..5], p[5]).unwrap();
            (v, cat(&[&g, &[ga]]))
        },
        &|p, d| driven_recurrence_fwd(&p[..5], &d[..5], p[5], d[5]).unwrap(),
        &|p, s| {
            let mut g = zeros(5);
            let (v, ga) = driven_recurrence_rev(&p[..5], &mut g, p[5], s).unwrap();
            (v, cat(&[&g, &[ga]]))
        },
    );
    // Where it is missing: None from every derivative, the shadow untouched.
    let short = [0.4, -0.7, 1.1];
    assert_eq!(driven_recurrence(&short, 0.6), None);
    assert_eq!(driven_recurrence_fwd(&short, &[1.0; 3], 0.6, 1.0), None);
    let mut g = [0.5, -0.25, 2.0];
    assert_eq!(driven_recurrence_rev(&short, &mut g, 0.6, 1.0), None);
    assert_eq!(g, [0.5, -0.25, 2.0], "driven_recurrence: the shadow on the failure path");
    assert_eq!(driven_recurrence_grad(&short, 0.6), None);
}

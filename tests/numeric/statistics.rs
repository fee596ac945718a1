//! Reductions and likelihoods: log-sum-exp (called from two other differentiated
//! functions), softmax into an output slice, variance, logistic regression, a Gaussian
//! mixture.

use super::differentiate;
use crate::common::*;
use phidiff::Float;

/// log Σ exp(xᵢ), shifted by the maximum.
#[differentiate(forward, reverse)]
pub fn log_sum_exp<T: Float>(x: &[T]) -> T {
    let mut m = x[0];
    for v in x.iter() {
        m = m.max(*v);
    }
    let s: T = x.iter().map(|v| (*v - m).exp()).sum();
    m + s.ln()
}

/// Smooth maximum of (aᵢ − bᵢ)²: a generic function calling the generic `log_sum_exp`
/// on a local buffer.
#[differentiate(forward, reverse)]
pub fn smooth_max_sq_diff<T: Float>(a: &[T], b: &[T]) -> T {
    let mut d = vec![T::zero(); a.len()];
    for i in 0..a.len() {
        let t = a[i] - b[i];
        d[i] = t * t;
    }
    log_sum_exp(&d)
}

/// softmax(x) written into `out`.
#[differentiate(forward, reverse)]
pub fn softmax(x: &[f64], out: &mut [f64]) {
    let mut m = x[0];
    for i in 1..x.len() {
        m = m.max(x[i]);
    }
    let mut z = 0.0;
    for i in 0..x.len() {
        out[i] = (x[i] - m).exp();
        z += out[i];
    }
    for i in 0..x.len() {
        out[i] /= z;
    }
}

/// The largest and the smallest odd-indexed sample, `hi² − 3·lo`. Unlike a log-sum-exp,
/// whose value does not depend on the shift, the result depends on which element each
/// reduction picks, so the adjoint must reach exactly that element (both reductions are
/// reversed through the element that won, `derivative::reverse::extremum`; `lo` is
/// written `v.min(lo)`).
#[differentiate(forward, reverse)]
pub fn odd_extremes(x: &[f64]) -> f64 {
    let mut hi = x[1];
    let mut lo = x[1];
    for i in 1..x.len() / 2 {
        hi = hi.max(x[2 * i + 1]);
        lo = x[2 * i + 1].min(lo);
    }
    hi * hi - 3.0 * lo
}

/// Each row's largest entry, squared, into `peaks`: a reduction inside the loop over
/// rows, whose winner the reverse sweep reads back for every row.
#[differentiate(forward, reverse)]
pub fn row_peaks(a: &[f64], n: usize, peaks: &mut [f64]) {
    for r in 0..peaks.len() {
        let mut m = a[r * n];
        for j in 1..n {
            m = m.max(a[r * n + j]);
        }
        peaks[r] = m * m;
    }
}

/// Σ_r (r + 1)·max_j a[r, j]²: the same reduction in a sum reversed row by row
/// (`derivative::reverse::fuse`).
#[differentiate(forward, reverse)]
pub fn row_peak_sum(a: &[f64], n: usize) -> f64 {
    let rows = a.len() / n;
    let mut s = 0.0;
    for r in 0..rows {
        let mut m = a[r * n];
        for j in 1..n {
            m = m.max(a[r * n + j]);
        }
        s += (r + 1) as f64 * m * m;
    }
    s
}

/// Unbiased sample variance.
#[differentiate(forward, reverse)]
pub fn sample_variance(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let total: f64 = x.iter().sum();
    let mean = total / n;
    let ss: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    ss / (n - 1.0)
}

/// Mean logistic loss of ±1 `labels` given row-major `features` plus ½λ‖w‖².
#[differentiate(forward, reverse)]
pub fn logistic_loss(w: &[f64], features: &[f64], labels: &[f64], lambda: f64) -> f64 {
    let n_feat = w.len();
    let n_samples = labels.len();
    let mut loss = 0.0;
    for k in 0..n_samples {
        let mut z = 0.0;
        for j in 0..n_feat {
            z += w[j] * features[k * n_feat + j];
        }
        loss += (-labels[k] * z).exp().ln_1p();
    }
    let reg: f64 = w.iter().map(|v| v * v).sum();
    loss / n_samples as f64 + 0.5 * lambda * reg
}

/// Log-likelihood of `points` (n × d, flat) under an isotropic Gaussian mixture with
/// `means` (K × d, flat), log-weights softmax(`alphas`) and standard deviation e^`log_sigma`.
#[differentiate(forward, reverse)]
pub fn gmm_log_likelihood(
    points: &[f64],
    means: &[f64],
    alphas: &[f64],
    log_sigma: f64,
    d: usize,
) -> f64 {
    let k = alphas.len();
    let n = points.len() / d;
    let sigma = log_sigma.exp();
    let inv_var = 1.0 / (sigma * sigma);
    let mut terms = vec![0.0; k];
    let mut total = 0.0;
    for p in 0..n {
        for c in 0..k {
            let mut sq = 0.0;
            for j in 0..d {
                let diff = points[p * d + j] - means[c * d + j];
                sq += diff * diff;
            }
            terms[c] = alphas[c] - 0.5 * inv_var * sq;
        }
        total += log_sum_exp(&terms);
    }
    let log_norm = 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln() + d as f64 * log_sigma;
    total - n as f64 * (log_sum_exp(alphas) + log_norm)
}

/// softmax with the maximum shifted out, written independently of the code under test.
fn softmax_ref(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = x.iter().map(|v| (v - m).exp()).sum();
    x.iter().map(|v| (v - m).exp() / z).collect()
}

fn log_sum_exp_ref(x: &[f64]) -> f64 {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

pub fn log_sum_exp_gradient_is_softmax() {
    // the second point checks that the max shift keeps exp from overflowing
    for x in [
        vec![0.3, -1.2, 2.0, 0.7],
        vec![700.0, 701.5, 699.0],
        vec![-0.4],
    ] {
        let (f, g) = log_sum_exp_grad(&x);
        assert_rel("lse", &[f], &[log_sum_exp_ref(&x)], 1e-14);
        assert_rel("∇lse = softmax", &g, &softmax_ref(&x), 1e-13);
        check_grad(
            "log_sum_exp",
            &x,
            &|x| log_sum_exp(x),
            &|x| log_sum_exp_grad(x),
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "log_sum_exp",
            x: &x,
            primal: &|x| vec![log_sum_exp(x)],
            jvp: &|x, v| {
                let (y, t) = log_sum_exp_fwd(x, v);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut g = zeros(x.len());
                let y = log_sum_exp_rev(x, &mut g, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn smooth_max_sq_diff_through_a_call() {
    let a = [0.3, -1.2, 2.0, 0.7];
    let b = [1.1, 0.4, 0.5, -0.2];
    let (f, (ga, gb)) = smooth_max_sq_diff_grad(&a, &b);
    let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).collect();
    let p = softmax_ref(&d);
    assert_rel("f", &[f], &[log_sum_exp_ref(&d)], 1e-14);
    let want: Vec<f64> = (0..4).map(|i| 2.0 * p[i] * (a[i] - b[i])).collect();
    assert_rel("∇_a", &ga, &want, 1e-12);
    let minus: Vec<f64> = want.iter().map(|v| -v).collect();
    assert_rel("∇_b", &gb, &minus, 1e-12);
    let point = cat(&[&a, &b]);
    let f = |p: &[f64]| smooth_max_sq_diff(&p[..4], &p[4..]);
    check_grad(
        "smooth_max_sq_diff",
        &point,
        &f,
        &|p| {
            let (v, (ga, gb)) = smooth_max_sq_diff_grad(&p[..4], &p[4..]);
            (v, cat(&[&ga, &gb]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "smooth_max_sq_diff",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = smooth_max_sq_diff_fwd(&p[..4], &v[..4], &p[4..], &v[4..]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut ga = zeros(4);
            let mut gb = zeros(4);
            let y = smooth_max_sq_diff_rev(&p[..4], &mut ga, &p[4..], &mut gb, w[0]);
            (vec![y], cat(&[&ga, &gb]))
        },
        tols: TOLS,
    });
}

pub fn softmax_jacobian() {
    let n = 5;
    let x = [0.3, -1.2, 2.0, 0.7, 1.1];
    let p = softmax_ref(&x);
    // inputs: x and the initial out (overwritten); outputs: final out
    let point = cat(&[&x, &[9.0; 5]]);
    let primal = |p: &[f64]| {
        let mut out = p[n..].to_vec();
        softmax(&p[..n], &mut out);
        out
    };
    assert_rel("softmax", &primal(&point), &p, 1e-14);
    // ẏ = diag(p) ẋ − p (pᵀ ẋ), exactly
    let v = [0.5, -0.25, 1.0, 0.0, 2.0];
    let mut out = zeros(n);
    let mut d_out = vec![3.0; n];
    softmax_fwd(&x, &v, &mut out, &mut d_out);
    let pv: f64 = p.iter().zip(&v).map(|(a, b)| a * b).sum();
    let want: Vec<f64> = (0..n).map(|i| p[i] * (v[i] - pv)).collect();
    assert_all_close("softmax tangent", &d_out, &want, 1e-12, 1e-15);
    check_fwd_rev(&Case {
        name: "softmax",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let mut out = p[n..].to_vec();
            let mut d_out = v[n..].to_vec();
            softmax_fwd(&p[..n], &v[..n], &mut out, &mut d_out);
            (out, d_out)
        },
        vjp: &|p, w| {
            let mut out = p[n..].to_vec();
            let mut adj_x = zeros(n);
            let mut adj_out = w.to_vec();
            softmax_rev(&p[..n], &mut adj_x, &mut out, &mut adj_out);
            (primal(p), cat(&[&adj_x, &adj_out]))
        },
        tols: TOLS,
    });
}

/// `odd_extremes` where `x[1]` (the initial value) is the maximum, and where both
/// extremes are later elements; the gradient is ±2·hi and −3 at those elements, 0
/// elsewhere (the even-indexed samples are never read).
pub fn odd_extremes_reach_the_winning_elements() {
    for (x, hi_at, lo_at) in [
        (vec![0.5, 2.5, -1.0, 0.3, 4.0, -0.7, 0.1, 1.9], 1, 5),
        (vec![0.5, 0.2, -1.0, 1.3, 4.0, -0.7, 0.1, 1.9, 7.0, -0.4], 7, 5),
    ] {
        let (f, g) = odd_extremes_grad(&x);
        assert_rel("odd_extremes", &[f], &[x[hi_at] * x[hi_at] - 3.0 * x[lo_at]], 1e-15);
        let mut want = zeros(x.len());
        want[hi_at] += 2.0 * x[hi_at];
        want[lo_at] -= 3.0;
        assert_rel("∇odd_extremes", &g, &want, 1e-15);
        check_grad(
            "odd_extremes",
            &x,
            &|x| odd_extremes(x),
            &|x| odd_extremes_grad(x),
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "odd_extremes",
            x: &x,
            primal: &|x| vec![odd_extremes(x)],
            jvp: &|x, v| {
                let (y, t) = odd_extremes_fwd(x, v);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut g = zeros(x.len());
                let y = odd_extremes_rev(x, &mut g, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

/// Row maxima: rows whose first entry wins and rows won further on, checked through
/// `row_peaks` (an output per row) and `row_peak_sum` (a sum reversed row by row).
pub fn row_peaks_reach_the_winning_elements() {
    let (rows, n) = (4, 5);
    let a: Vec<f64> = (0..rows * n)
        .map(|k| (1.7 * k as f64 + 0.4).sin() + if k % (2 * n) == n { 1.0 } else { 0.0 })
        .collect();
    let point = cat(&[&a, &[9.0; 4]]);
    let primal = |p: &[f64]| {
        let mut peaks = p[rows * n..].to_vec();
        row_peaks(&p[..rows * n], n, &mut peaks);
        peaks
    };
    check_fwd_rev(&Case {
        name: "row_peaks",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let mut peaks = p[rows * n..].to_vec();
            let mut d_peaks = v[rows * n..].to_vec();
            row_peaks_fwd(&p[..rows * n], &v[..rows * n], n, &mut peaks, &mut d_peaks);
            (peaks, d_peaks)
        },
        vjp: &|p, w| {
            let mut peaks = p[rows * n..].to_vec();
            let mut adj_a = zeros(rows * n);
            let mut adj_peaks = w.to_vec();
            row_peaks_rev(&p[..rows * n], &mut adj_a, n, &mut peaks, &mut adj_peaks);
            (primal(p), cat(&[&adj_a, &adj_peaks]))
        },
        tols: TOLS,
    });
    let (f, g) = row_peak_sum_grad(&a, n);
    let mut value = 0.0;
    let mut want = zeros(rows * n);
    let mut first_wins = 0;
    for r in 0..rows {
        let row = &a[r * n..(r + 1) * n];
        let j = (0..n).fold(0, |b, j| if row[j] > row[b] { j } else { b });
        first_wins += usize::from(j == 0);
        value += (r + 1) as f64 * row[j] * row[j];
        want[r * n + j] = 2.0 * (r + 1) as f64 * row[j];
    }
    assert!(
        first_wins > 0 && first_wins < rows,
        "the rows cover both cases"
    );
    assert_rel("row_peak_sum", &[f], &[value], 1e-15);
    assert_rel("∇row_peak_sum", &g, &want, 1e-15);
    check_grad(
        "row_peak_sum",
        &a,
        &|a| row_peak_sum(a, n),
        &|a| row_peak_sum_grad(a, n),
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "row_peak_sum",
        x: &a,
        primal: &|a| vec![row_peak_sum(a, n)],
        jvp: &|a, v| {
            let (y, t) = row_peak_sum_fwd(a, v, n);
            (vec![y], vec![t])
        },
        vjp: &|a, w| {
            let mut g = zeros(a.len());
            let y = row_peak_sum_rev(a, &mut g, n, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn sample_variance_gradient() {
    let x = [0.3, -1.2, 2.0, 0.7, 1.1, -0.5];
    let g = check_grad(
        "sample_variance",
        &x,
        &|x| sample_variance(x),
        &|x| sample_variance_grad(x),
        TOLS,
    );
    let mean = x.iter().sum::<f64>() / 6.0;
    let want: Vec<f64> = x.iter().map(|v| 2.0 * (v - mean) / 5.0).collect();
    assert_rel("∇var", &g, &want, 1e-12);
    check_fwd_rev(&Case {
        name: "sample_variance",
        x: &x,
        primal: &|x| vec![sample_variance(x)],
        jvp: &|x, v| {
            let (y, t) = sample_variance_fwd(x, v);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = zeros(x.len());
            let y = sample_variance_rev(x, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn logistic_loss_gradient() {
    let w = [0.4, -0.3, 0.8];
    let features = [
        1.0, 0.5, -1.2, //
        0.3, -0.7, 2.0, //
        -1.5, 0.2, 0.4, //
        0.9, 1.1, -0.3,
    ];
    let labels = [1.0, -1.0, 1.0, -1.0];
    let lambda = 0.1;
    let (_, (gw, _, _, glambda)) = logistic_loss_grad(&w, &features, &labels, lambda);
    // ∇_w = (1/N) Σ −yₖ σ(−yₖ zₖ) xₖ + λ w, ∂/∂λ = ½‖w‖²
    let mut want = w.iter().map(|v| lambda * v).collect::<Vec<_>>();
    for k in 0..4 {
        let row = &features[3 * k..3 * k + 3];
        let z: f64 = row.iter().zip(&w).map(|(a, b)| a * b).sum();
        let s = 1.0 / (1.0 + (labels[k] * z).exp());
        for j in 0..3 {
            want[j] += -labels[k] * s * row[j] / 4.0;
        }
    }
    assert_rel("∇_w", &gw, &want, 1e-12);
    assert_rel("∂/∂λ", &[glambda], &[0.5 * (0.16 + 0.09 + 0.64)], 1e-12);
    let point = cat(&[&w, &features, &labels, &[lambda]]);
    let lens = [3, 12, 4, 1];
    let f = |p: &[f64]| {
        let s = split(p, &lens);
        logistic_loss(s[0], s[1], s[2], s[3][0])
    };
    check_grad(
        "logistic_loss",
        &point,
        &f,
        &|p| {
            let s = split(p, &lens);
            let (v, (gw, gf, gl, glam)) = logistic_loss_grad(s[0], s[1], s[2], s[3][0]);
            (v, cat(&[&gw, &gf, &gl, &[glam]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "logistic_loss",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let s = split(p, &lens);
            let t = split(v, &lens);
            let (y, dy) = logistic_loss_fwd(s[0], t[0], s[1], t[1], s[2], t[2], s[3][0], t[3][0]);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut gw, mut gf, mut gl) = (zeros(3), zeros(12), zeros(4));
            let (y, glam) =
                logistic_loss_rev(s[0], &mut gw, s[1], &mut gf, s[2], &mut gl, s[3][0], w[0]);
            (vec![y], cat(&[&gw, &gf, &gl, &[glam]]))
        },
        tols: TOLS,
    });
}

/// The mixture density written out directly, without the log-sum-exp shift.
fn gmm_reference(points: &[f64], means: &[f64], alphas: &[f64], log_sigma: f64, d: usize) -> f64 {
    let sigma = log_sigma.exp();
    let wsum: f64 = alphas.iter().map(|a| a.exp()).sum();
    let norm = (2.0 * std::f64::consts::PI * sigma * sigma).powf(-0.5 * d as f64);
    let mut ll = 0.0;
    for x in points.chunks(d) {
        let mut density = 0.0;
        for (c, mu) in means.chunks(d).enumerate() {
            let sq: f64 = x.iter().zip(mu).map(|(a, b)| (a - b) * (a - b)).sum();
            density += alphas[c].exp() / wsum * norm * (-0.5 * sq / (sigma * sigma)).exp();
        }
        ll += density.ln();
    }
    ll
}

pub fn gmm_log_likelihood_gradient() {
    let d = 2;
    let points = [0.1, 0.4, -1.0, 0.3, 1.5, -0.2, 0.8, 0.9, -0.4, -1.1];
    let means = [0.0, 0.5, -0.8, -0.6, 1.2, 0.4];
    let alphas = [0.2, -0.5, 0.9];
    let log_sigma = -0.1;
    assert_rel(
        "log-likelihood",
        &[gmm_log_likelihood(&points, &means, &alphas, log_sigma, d)],
        &[gmm_reference(&points, &means, &alphas, log_sigma, d)],
        1e-12,
    );
    let lens = [10, 6, 3, 1];
    let point = cat(&[&points, &means, &alphas, &[log_sigma]]);
    let f = |p: &[f64]| {
        let s = split(p, &lens);
        gmm_log_likelihood(s[0], s[1], s[2], s[3][0], d)
    };
    let g = check_grad(
        "gmm_log_likelihood",
        &point,
        &f,
        &|p| {
            let s = split(p, &lens);
            let (v, (gx, gm, ga, gs)) = gmm_log_likelihood_grad(s[0], s[1], s[2], s[3][0], d);
            (v, cat(&[&gx, &gm, &ga, &[gs]]))
        },
        TOLS,
    );
    // shifting every alpha by the same constant leaves the weights unchanged
    let alpha_sum: f64 = g[16..19].iter().sum();
    assert!(alpha_sum.abs() < 1e-12, "Σ ∂/∂α = {alpha_sum:e}");
    check_fwd_rev(&Case {
        name: "gmm_log_likelihood",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let s = split(p, &lens);
            let t = split(v, &lens);
            let (y, dy) =
                gmm_log_likelihood_fwd(s[0], t[0], s[1], t[1], s[2], t[2], s[3][0], t[3][0], d);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let (mut gx, mut gm, mut ga) = (zeros(10), zeros(6), zeros(3));
            let (y, gs) = gmm_log_likelihood_rev(
                s[0], &mut gx, s[1], &mut gm, s[2], &mut ga, s[3][0], d, w[0],
            );
            (vec![y], cat(&[&gx, &gm, &ga, &[gs]]))
        },
        tols: TOLS,
    });
}

//! Issue 46's corpus, mixing `f32` and `f64` through casts (`as f64`, `f64::from`,
//! `.into()`, `as f32`), as kernels on `f32` data write it: accumulation in `f64`, `f64`
//! weights beside `f32` data, an `f32` parameter of an `f64` function, an `f32` output
//! written from `f64` arithmetic, `f32` state in a checkpointed time loop (against the
//! same model in `f64`).
//!
//! Each value keeps its type, so the values are the primal's to the bit (checked). The
//! derivatives are checked against hand-derived formulas (evaluated in `f64` at the `f32`
//! inputs: rel 1e-5, the size of `f32` rounding in the derivative's own arithmetic), by
//! the dot-product identity between `_fwd` and `_rev` (rel 1e-5 for `f32` results, 1e-12
//! for `f64` ones), and by finite differences along the `f64` inputs (`TOLS`).

use super::differentiate;
use crate::common::*;

/// Root mean square of `f32` samples, accumulated in `f64` (as audio crates do).
#[differentiate(forward, reverse)]
pub fn rms(samples: &[f32]) -> f32 {
    let mut acc = 0.0f64;
    for &s in samples {
        acc += f64::from(s) * f64::from(s);
    }
    (acc / samples.len() as f64).sqrt() as f32
}

/// `f32` predictions against `f32` targets, weighted by `f64` weights.
#[differentiate(forward, reverse)]
pub fn weighted_loss(pred: &[f32], target: &[f32], w: &[f64]) -> f64 {
    let mut loss = 0.0;
    for i in 0..pred.len() {
        let d = pred[i] - target[i];
        loss += w[i] * f64::from(d * d);
    }
    loss / 2.0
}

/// An `f64` energy with an `f32` scale (a parameter read from a config in `f32`).
#[differentiate(forward, reverse)]
pub fn scaled_energy(x: &[f64], scale: f32) -> f64 {
    let s = scale as f64;
    let mut e = 0.0;
    for (i, &v) in x.iter().enumerate() {
        e += s * v * v / (1.0 + i as f64) + (s * v).sin();
    }
    e
}

/// Interpolates `f64` keyframes into an `f32` output buffer at parameter `t: f32`.
#[differentiate(forward, reverse)]
pub fn blend(out: &mut [f32], a: &[f64], b: &[f64], t: f32) {
    let t: f64 = t.into();
    for i in 0..out.len() {
        let v = (1.0 - t) * a[i] + t * b[i];
        out[i] = (v * v.tanh()) as f32;
    }
}

/// Log-sum-exp of `f32` logits, the exponentials summed in `f64`.
#[differentiate(forward, reverse)]
pub fn logsumexp32(x: &[f32]) -> f32 {
    let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let s: f64 = x.iter().map(|&v| ((v - m) as f64).exp()).sum();
    m + s.ln() as f32
}

/// Sum of squares of `f32` values times an `f32` gain: the helper the next function calls.
#[differentiate(forward, reverse)]
pub fn gained_energy(x: &[f32], gain: f32) -> f32 {
    x.iter().map(|v| v * v * gain).sum()
}

/// A mixed pipeline: `f32` features rectified into a local `f32` buffer, combined with
/// `f64` weights in a `while` loop, the gain narrowed to `f32` for an `f32` helper, the
/// peak written to an `&mut f32` output, and a `?` on the first feature.
#[differentiate(forward, reverse)]
pub fn feature_score(x: &[f32], w: &[f64], k: f64, peak: &mut f32) -> Option<f64> {
    let mut feat = vec![0.0f32; x.len()];
    for i in 0..x.len() {
        feat[i] = if x[i] > 0.0 { x[i].powi(2) } else { -x[i].abs() };
    }
    let mut acc = 0.0;
    let mut j = 0;
    while j < feat.len() {
        acc += w[j] * feat[j] as f64;
        j += 1;
    }
    let top = feat.iter().cloned().fold(f32::MIN, f32::max);
    let gain = (acc * k) as f32;
    let e = gained_energy(&feat, gain);
    *peak = e * top + f32::EPSILON;
    let first = *x.first()?;
    Some(acc.max(k) + f64::from(e) + (first as f64).exp() + (gain.abs().sqrt() as f64))
}

/// An `f32` sensor series driving an `f64` model over a Revolve-checkpointed time loop,
/// with an `f32` smoothed state beside it (the snapshots hold both).
#[differentiate(forward, reverse)]
pub fn smoothed_response(x: &[f32], k: f64, steps: usize) -> f64 {
    let n = x.len();
    let mut u = vec![0.0f64; n];
    for i in 0..n {
        u[i] = x[i] as f64;
    }
    let mut w = vec![0.0f32; n];
    let mut gain = 1.0f32;
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        for i in 0..n {
            u[i] = (k * u[i]).sin() + 0.1 * u[(i + 1) % n];
            w[i] = (w[i] + u[i] as f32) * 0.5 * gain;
        }
        gain = gain * 0.9 + 0.05 * w[0];
    }
    u.iter().map(|v| v * v).sum::<f64>() + w.iter().map(|&v| (v * v) as f64).sum::<f64>()
}

/// The same model entirely in `f64`: the reference for the one above, within `f32`
/// rounding.
#[differentiate(forward, reverse)]
pub fn smoothed_response64(x: &[f64], k: f64, steps: usize) -> f64 {
    let n = x.len();
    let mut u = vec![0.0; n];
    for i in 0..n {
        u[i] = x[i];
    }
    let mut w = vec![0.0; n];
    let mut gain = 1.0;
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        for i in 0..n {
            u[i] = (k * u[i]).sin() + 0.1 * u[(i + 1) % n];
            w[i] = (w[i] + u[i]) * 0.5 * gain;
        }
        gain = gain * 0.9 + 0.05 * w[0];
    }
    u.iter().map(|v| v * v).sum::<f64>() + w.iter().map(|&v| v * v).sum::<f64>()
}

/// `_fwd` against `_rev` of a function of `n` inputs with one output, by the
/// dot-product identity `ȳ (J ẋ) = (Jᵀ ȳ)·ẋ` along fixed directions (rel `rel`).
fn dot_product(name: &str, n: usize, jvp: &dyn Fn(&[f64]) -> f64, vjp: &dyn Fn(f64) -> Vec<f64>, rel: f64) {
    for trial in 0..3 {
        let xdot = phidiff::check::random_vector(700 + trial, n);
        let ybar = 0.75 - 0.5 * trial as f64;
        let lhs = ybar * jvp(&xdot);
        let g = vjp(ybar);
        let rhs: f64 = g.iter().zip(&xdot).map(|(a, b)| a * b).sum();
        assert_close(&format!("{name}: dot-product identity, trial {trial}"), lhs, rhs, rel, 1e-12);
    }
}

pub fn f32_data_f64_arithmetic() {
    // rms: ∂/∂sᵢ = sᵢ / (n · rms).
    let s = [0.3f32, -1.25, 2.5, 0.75];
    let n = s.len();
    let (v, g) = rms_grad(&s);
    assert_eq!(v.to_bits(), rms(&s).to_bits(), "rms: value");
    let r = (s.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>() / n as f64).sqrt();
    let want: Vec<f64> = s.iter().map(|&x| f64::from(x) / (n as f64 * r)).collect();
    let got: Vec<f64> = g.iter().map(|&x| f64::from(x)).collect();
    assert_rel("rms: gradient by hand", &got, &want, 1e-5);
    dot_product(
        "rms",
        n,
        &|d| {
            let d: Vec<f32> = d.iter().map(|&x| x as f32).collect();
            f64::from(rms_fwd(&s, &d).1)
        },
        &|w| {
            let mut g = [0.0f32; 4];
            rms_rev(&s, &mut g, w as f32);
            g.iter().map(|&x| f64::from(x)).collect()
        },
        1e-5,
    );

    // weighted_loss: ∂/∂pᵢ = wᵢ dᵢ, ∂/∂tᵢ = −wᵢ dᵢ, ∂/∂wᵢ = dᵢ² / 2 (dᵢ in f32).
    let (p, t, w) = ([0.5f32, -0.25, 1.5], [0.0f32, 0.5, 1.0], [2.0, 0.5, 1.5]);
    let (v, (gp, gt, gw)) = weighted_loss_grad(&p, &t, &w);
    assert_eq!(v.to_bits(), weighted_loss(&p, &t, &w).to_bits(), "weighted_loss: value");
    for i in 0..3 {
        let d = f64::from(p[i] - t[i]);
        assert_close("weighted_loss: ∂/∂p", f64::from(gp[i]), w[i] * d, 1e-6, 0.0);
        assert_close("weighted_loss: ∂/∂t", f64::from(gt[i]), -w[i] * d, 1e-6, 0.0);
        assert_close("weighted_loss: ∂/∂w", gw[i], d * d / 2.0, 1e-15, 0.0);
    }
    // Along the f64 weights: finite differences and the dot product at full precision.
    check_point(
        "weighted_loss (w)",
        &w,
        &|w| weighted_loss(&p, &t, w),
        &|w| {
            let (v, (_, _, gw)) = weighted_loss_grad(&p, &t, w);
            (v, gw)
        },
        &|w, dw| weighted_loss_fwd(&p, &[0.0; 3], &t, &[0.0; 3], w, dw),
        &|w, s| {
            let (mut a, mut b, mut gw) = ([0.0f32; 3], [0.0f32; 3], zeros(3));
            let v = weighted_loss_rev(&p, &mut a, &t, &mut b, w, &mut gw, s);
            (v, gw)
        },
    );
}

pub fn f32_parameters_of_f64_functions() {
    // scaled_energy along x (f64): finite differences and the dot product; along the f32
    // scale: by hand, ∂/∂s = Σ vᵢ²/(1 + i) + vᵢ cos(s vᵢ).
    let x = [0.4, -0.9, 1.3];
    let scale = 0.7f32;
    check_point(
        "scaled_energy (x)",
        &x,
        &|x| scaled_energy(x, scale),
        &|x| {
            let (v, (g, _)) = scaled_energy_grad(x, scale);
            (v, g)
        },
        &|x, d| scaled_energy_fwd(x, d, scale, 0.0),
        &|x, s| {
            let mut g = zeros(3);
            let (v, _) = scaled_energy_rev(x, &mut g, scale, s);
            (v, g)
        },
    );
    let sv = f64::from(scale);
    let want: f64 = (0..3).map(|i| x[i] * x[i] / (1.0 + i as f64) + x[i] * (sv * x[i]).cos()).sum();
    let (v, (_, gs)) = scaled_energy_grad(&x, scale);
    assert_eq!(v.to_bits(), scaled_energy(&x, scale).to_bits(), "scaled_energy: value");
    assert_close("scaled_energy: ∂/∂scale", f64::from(gs), want, 1e-6, 0.0);
    assert_close("scaled_energy: _fwd along scale", f64::from(scaled_energy_fwd(&x, &[0.0; 3], scale, 1.0).1 as f32), want, 1e-6, 0.0);

    // blend: an f32 output from f64 arithmetic; out = g(v), v = (1 − t) a + t b,
    // g(v) = v tanh v, so ∂out/∂a = (1 − t) g'(v), ∂out/∂b = t g'(v), ∂out/∂t = (b − a) g'(v).
    let (a, b, t) = ([0.2, -0.6, 1.1], [0.9, 0.3, -0.4], 0.25f32);
    let mut out = [0.0f32; 3];
    blend(&mut out, &a, &b, t);
    let tv = f64::from(t);
    let mut want_out = [0.0f32; 3];
    let gprime: Vec<f64> = (0..3)
        .map(|i| {
            let v = (1.0 - tv) * a[i] + tv * b[i];
            want_out[i] = (v * v.tanh()) as f32;
            v.tanh() + v * (1.0 - v.tanh() * v.tanh())
        })
        .collect();
    assert_eq!(out, want_out, "blend: the output");
    // Reverse with weights ȳ on the output.
    let ybar = [1.0f32, -0.5, 2.0];
    let (mut o, mut dout) = ([0.0f32; 3], ybar);
    let (mut da, mut db) = (zeros(3), zeros(3));
    let dt = blend_rev(&mut o, &mut dout, &a, &mut da, &b, &mut db, t);
    assert_eq!(o, want_out, "blend_rev: the output");
    for i in 0..3 {
        let y = f64::from(ybar[i]);
        assert_close("blend: ∂/∂a", da[i], y * (1.0 - tv) * gprime[i], 1e-7, 1e-12);
        assert_close("blend: ∂/∂b", db[i], y * tv * gprime[i], 1e-7, 1e-12);
    }
    let want_dt: f64 = (0..3).map(|i| f64::from(ybar[i]) * (b[i] - a[i]) * gprime[i]).sum();
    assert_close("blend: ∂/∂t", f64::from(dt), want_dt, 1e-6, 0.0);
    // Forward along (a, b, t) against the reverse: the dot product.
    let (xa, xb, xt) = ([0.3, -0.2, 0.5], [0.1, 0.4, -0.7], 0.6f32);
    let (mut o, mut d) = ([0.0f32; 3], [0.0f32; 3]);
    blend_fwd(&mut o, &mut d, &a, &xa, &b, &xb, t, xt);
    let lhs: f64 = (0..3).map(|i| f64::from(ybar[i]) * f64::from(d[i])).sum();
    let rhs: f64 = (0..3).map(|i| da[i] * xa[i] + db[i] * xb[i]).sum::<f64>() + f64::from(dt) * f64::from(xt);
    assert_close("blend: dot-product identity", lhs, rhs, 1e-5, 1e-9);

    // logsumexp32: the softmax, ∂/∂xᵢ = exp(xᵢ − lse).
    let x = [0.5f32, -1.0, 2.0, 0.25];
    let (v, g) = logsumexp32_grad(&x);
    assert_eq!(v.to_bits(), logsumexp32(&x).to_bits(), "logsumexp32: value");
    let lse = x.iter().map(|&v| f64::from(v).exp()).sum::<f64>().ln();
    let want: Vec<f64> = x.iter().map(|&v| (f64::from(v) - lse).exp()).collect();
    let got: Vec<f64> = g.iter().map(|&v| f64::from(v)).collect();
    assert_rel("logsumexp32: gradient by hand", &got, &want, 1e-5);
}

pub fn mixed_pipeline() {
    let x = [0.5f32, -1.5, 2.0];
    let (w, k) = ([0.25, 1.0, -0.5], 0.8);
    // The value and the output are the primal's to the bit.
    let mut peak = 0.0f32;
    let v = feature_score(&x, &w, k, &mut peak).unwrap();
    let (mut p2, mut dp) = (0.0f32, 1.0f32);
    let (mut dx, mut dw) = ([0.0f32; 3], [0.0; 3]);
    let (v2, dk) = feature_score_rev(&x, &mut dx, &w, &mut dw, k, &mut p2, &mut dp, 1.0).unwrap();
    assert_eq!((v.to_bits(), peak.to_bits()), (v2.to_bits(), p2.to_bits()), "feature_score: values");
    // The objective value + peak along the f64 inputs (w, k) by central differences. The
    // function rounds through f32 (`gain`), so the step is 1e-3 and the tolerance 1e-3
    // relative: the f32 rounding of a value near 300 is 2e-5, over a step of 1e-3 below
    // 3e-2 absolute.
    let obj = |w: &[f64], k: f64| {
        let mut p = 0.0f32;
        feature_score(&x, w, k, &mut p).unwrap() + f64::from(p)
    };
    let h = 1e-3;
    let fd_k = (obj(&w, k + h) - obj(&w, k - h)) / (2.0 * h);
    assert_close("feature_score: ∂/∂k", dk, fd_k, 1e-3, 3e-2);
    for i in 0..3 {
        let (mut a, mut b) = (w, w);
        a[i] += h;
        b[i] -= h;
        let fd = (obj(&a, k) - obj(&b, k)) / (2.0 * h);
        assert_close("feature_score: ∂/∂w", dw[i], fd, 1e-3, 3e-2);
    }
    // _fwd against _rev: the dot product along (x, w, k), the output seeded with 1 too.
    let (xd, wd, kd) = ([0.3f32, -0.7, 0.2], [0.5, -0.25, 1.0], -0.4);
    let (mut p3, mut dp3) = (0.0f32, 0.0f32);
    let (_, dv) = feature_score_fwd(&x, &xd, &w, &wd, k, kd, &mut p3, &mut dp3).unwrap();
    let lhs = dv + f64::from(dp3);
    let rhs: f64 = (0..3).map(|i| f64::from(dx[i]) * f64::from(xd[i]) + dw[i] * wd[i]).sum::<f64>() + dk * kd;
    assert_close("feature_score: dot-product identity", lhs, rhs, 1e-5, 1e-9);
    // None where there is no first feature, the shadows untouched.
    let (mut p4, mut dp4, mut dw4) = (0.0f32, 1.0f32, [0.0; 0]);
    assert!(feature_score_rev(&[], &mut [], &[], &mut dw4, k, &mut p4, &mut dp4, 1.0).is_none());
}

pub fn mixed_checkpointed() {
    let x = [0.3f32, -0.2, 0.8, 0.45];
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let (k, steps) = (0.9, 7);
    // The value is the primal's to the bit.
    let (v, (gx, gk)) = smoothed_response_grad(&x, k, steps);
    assert_eq!(v.to_bits(), smoothed_response(&x, k, steps).to_bits(), "smoothed_response: value");
    // The f64 model, checked by finite differences and the dot product, is the reference:
    // the two differ by the f32 rounding of the smoothed state (rel 1e-5).
    let p = cat(&[&x64, &[k]]);
    check_point(
        "smoothed_response64",
        &p,
        &|p| smoothed_response64(&p[..4], p[4], steps),
        &|p| {
            let (v, (g, gk)) = smoothed_response64_grad(&p[..4], p[4], steps);
            (v, cat(&[&g, &[gk]]))
        },
        &|p, d| smoothed_response64_fwd(&p[..4], &d[..4], p[4], d[4], steps),
        &|p, s| {
            let mut g = zeros(4);
            let (v, gk) = smoothed_response64_rev(&p[..4], &mut g, p[4], steps, s);
            (v, cat(&[&g, &[gk]]))
        },
    );
    let (v64, (g64, gk64)) = smoothed_response64_grad(&x64, k, steps);
    assert_close("smoothed_response: value against f64", v, v64, 1e-5, 0.0);
    let got: Vec<f64> = gx.iter().map(|&g| f64::from(g)).collect();
    assert_rel("smoothed_response: ∂/∂x against f64", &got, &g64, 1e-4);
    assert_close("smoothed_response: ∂/∂k against f64", gk, gk64, 1e-4, 0.0);
    // _fwd against _rev by the dot product.
    dot_product(
        "smoothed_response",
        5,
        &|d| {
            let dx: Vec<f32> = d[..4].iter().map(|&v| v as f32).collect();
            smoothed_response_fwd(&x, &dx, k, d[4], steps).1
        },
        &|w| {
            let mut g = [0.0f32; 4];
            let (_, gk) = smoothed_response_rev(&x, &mut g, k, steps, w);
            cat(&[&g.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), &[gk]])
        },
        1e-5,
    );
}

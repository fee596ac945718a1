//! ADBench's Gaussian mixture objective (the `gmm` program of issue 8), written as a user
//! would with `#[differentiate]`: the log-likelihood of `n` points under `k` Gaussians with
//! lower-triangular inverse-covariance factors, plus a Wishart prior on them. It follows
//! ADBench's reference definition (`ADBench/src/cpp/shared/gmm.h`), so the objective on
//! `gmm/test.txt` is ADBench's reference value.
//!
//! [`gmm_objective`] is the program the way a Rust user writes it (issue 47): the
//! parameters in a struct deriving `Differentiable`, one row per component, the points as
//! rows, the prior in a struct, `log_sum_exp` a helper, iterator chains.
//! [`gmm_objective_flat`] is the same objective on flat slices with the sizes passed, as
//! it had to be written before structs were accepted.
#![allow(dead_code)]

use phidiff::{differentiate, Differentiable};

/// The mixture's parameters, one row per component.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct GmmParams {
    /// `k` weights (log-space).
    pub alphas: Vec<f64>,
    /// `k` means of `d` coordinates.
    pub means: Vec<Vec<f64>>,
    /// `k` inverse-covariance factors of `d(d+1)/2` numbers: the log of the diagonal, then
    /// the strictly lower part by columns.
    pub icf: Vec<Vec<f64>>,
}

impl GmmParams {
    /// The parameters of ADBench's flat layout (alphas, means, icf).
    pub fn from_flat(alphas: &[f64], means: &[f64], icf: &[f64], d: usize) -> GmmParams {
        let icf_sz = d * (d + 1) / 2;
        GmmParams {
            alphas: alphas.to_vec(),
            means: means.chunks(d).map(<[f64]>::to_vec).collect(),
            icf: icf.chunks(icf_sz).map(<[f64]>::to_vec).collect(),
        }
    }

    /// ADBench's flat layout, written into `out` (alphas, means, icf).
    pub fn write_flat(&self, out: &mut [f64]) {
        let rows = self.means.iter().chain(&self.icf).flatten();
        for (o, v) in out.iter_mut().zip(self.alphas.iter().chain(rows)) {
            *o = *v;
        }
    }
}

/// The Wishart prior on the inverse covariances.
#[derive(Differentiable, Clone, Debug)]
pub struct Wishart {
    pub gamma: f64,
    pub m: usize,
}

/// `ln Σ exp(v)`, shifted by the maximum.
#[differentiate(forward, reverse)]
pub fn log_sum_exp(v: &[f64]) -> f64 {
    let mx = v.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let se: f64 = v.iter().map(|&a| (a - mx).exp()).sum();
    se.ln() + mx
}

/// The objective; `log_gamma_term` is `ln Γ_d((d + m + 1) / 2)`, a constant of the prior
/// (see `adbench::ln_multigamma`).
#[differentiate(reverse, wrt(theta))]
pub fn gmm_objective(
    theta: &GmmParams,
    x: &[Vec<f64>],
    wishart: &Wishart,
    log_gamma_term: f64,
) -> f64 {
    let (n, d, k) = (x.len(), x[0].len(), theta.alphas.len());
    // Per component: the diagonal of the inverse-covariance factor, exp(icf), and the sum
    // of its logarithms (ADBench's `preprocess_qs`).
    let sum_qs: Vec<f64> = theta.icf.iter().map(|q| q[..d].iter().sum()).collect();
    let mut qdiags = vec![vec![0.0; d]; k];
    for (qdiag, q) in qdiags.iter_mut().zip(&theta.icf) {
        for (e, l) in qdiag.iter_mut().zip(q) {
            *e = l.exp();
        }
    }
    let mut xc = vec![0.0; d];
    let mut qxc = vec![0.0; d];
    let mut main_term = vec![0.0; k];
    let mut slse = 0.0;
    for xi in x {
        for ik in 0..k {
            let (mean, icf, qdiag) = (&theta.means[ik], &theta.icf[ik], &qdiags[ik]);
            for j in 0..d {
                xc[j] = xi[j] - mean[j];
                qxc[j] = qdiag[j] * xc[j];
            }
            // The strictly lower part of the factor, by columns.
            let mut li = d;
            for c in 0..d {
                for r in c + 1..d {
                    qxc[r] += icf[li] * xc[c];
                    li += 1;
                }
            }
            let sq: f64 = qxc.iter().map(|v| v * v).sum();
            main_term[ik] = theta.alphas[ik] + sum_qs[ik] - 0.5 * sq;
        }
        // `log_sum_exp(&main_term)`, written out: a call in this loop costs about 20 % of
        // the gradient until small helpers are inlined (issue 48); the call below, once
        // per evaluation, costs nothing measurable.
        let mx = main_term.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let se: f64 = main_term.iter().map(|&a| (a - mx).exp()).sum();
        slse += se.ln() + mx;
    }
    let (nf, df) = (n as f64, d as f64);
    let constant = -nf * df * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let mut err = constant + slse - nf * log_sum_exp(&theta.alphas);
    // The Wishart prior.
    let gamma = wishart.gamma;
    let dof = (d + wishart.m + 1) as f64;
    let c = dof * df * (gamma.ln() - 0.5 * std::f64::consts::LN_2) - log_gamma_term;
    let mf = wishart.m as f64;
    for ik in 0..k {
        let diag: f64 = qdiags[ik].iter().map(|q| q * q).sum();
        let lower: f64 = theta.icf[ik][d..].iter().map(|l| l * l).sum();
        err += 0.5 * gamma * gamma * (diag + lower) - mf * sum_qs[ik] - c;
    }
    err
}

/// The objective as first written for phidiff, on flat slices with the sizes passed
/// (kept to measure the struct form against, in one run: `bench_report`'s "ADBench as
/// users write it" rows); `log_gamma_term` is `ln Γ_d((d + m + 1) / 2)`, a constant of the prior
/// (see `adbench::ln_multigamma`).
#[differentiate(reverse, wrt(alphas, means, icf))]
#[allow(clippy::too_many_arguments)]
pub fn gmm_objective_flat(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    k: usize,
    n: usize,
    gamma: f64,
    m: usize,
    log_gamma_term: f64,
) -> f64 {
    let icf_sz = d * (d + 1) / 2;
    // Per component: the diagonal of the inverse-covariance factor, exp(icf), and the sum
    // of its logarithms (ADBench's `preprocess_qs`).
    let mut sum_qs = vec![0.0; k];
    let mut qdiags = vec![0.0; k * d];
    for ik in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            s += icf[ik * icf_sz + j];
            qdiags[ik * d + j] = icf[ik * icf_sz + j].exp();
        }
        sum_qs[ik] = s;
    }
    let mut xc = vec![0.0; d];
    let mut qxc = vec![0.0; d];
    let mut main_term = vec![0.0; k];
    let mut slse = 0.0;
    for ix in 0..n {
        for ik in 0..k {
            for j in 0..d {
                xc[j] = x[ix * d + j] - means[ik * d + j];
            }
            for j in 0..d {
                qxc[j] = qdiags[ik * d + j] * xc[j];
            }
            let mut li = d;
            for c in 0..d {
                for r in c + 1..d {
                    qxc[r] += icf[ik * icf_sz + li] * xc[c];
                    li += 1;
                }
            }
            let mut sq = 0.0;
            for j in 0..d {
                sq += qxc[j] * qxc[j];
            }
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq;
        }
        let mut mx = main_term[0];
        for ik in 1..k {
            mx = mx.max(main_term[ik]);
        }
        let mut se = 0.0;
        for ik in 0..k {
            se += (main_term[ik] - mx).exp();
        }
        slse += se.ln() + mx;
    }
    let mut amx = alphas[0];
    for ik in 1..k {
        amx = amx.max(alphas[ik]);
    }
    let mut ase = 0.0;
    for ik in 0..k {
        ase += (alphas[ik] - amx).exp();
    }
    let lse_alphas = ase.ln() + amx;
    let nf = n as f64;
    let df = d as f64;
    let constant = -nf * df * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let mut err = constant + slse - nf * lse_alphas;
    // The Wishart prior.
    let dof = (d + m + 1) as f64;
    let c = dof * df * (gamma.ln() - 0.5 * std::f64::consts::LN_2) - log_gamma_term;
    let mf = m as f64;
    let mut prior = 0.0;
    for ik in 0..k {
        let mut fro = 0.0;
        for j in 0..d {
            let q = qdiags[ik * d + j];
            fro += q * q;
        }
        for j in d..icf_sz {
            let l = icf[ik * icf_sz + j];
            fro += l * l;
        }
        prior += 0.5 * gamma * gamma * fro - mf * sum_qs[ik];
    }
    err += prior - (k as f64) * c;
    err
}

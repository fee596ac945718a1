//! ADBench's Gaussian mixture objective (the `gmm` program of issue 8), written as a user
//! would with `#[differentiate]`: the log-likelihood of `n` points under `k` Gaussians with
//! lower-triangular inverse-covariance factors, plus a Wishart prior on them. It follows
//! ADBench's reference definition (`ADBench/src/cpp/shared/gmm.h`), so the objective on
//! `gmm/test.txt` is ADBench's reference value.
#![allow(dead_code)]

use phidiff::differentiate;

/// The objective; `log_gamma_term` is `ln Γ_d((d + m + 1) / 2)`, a constant of the prior
/// (see `adbench::ln_multigamma`).
#[differentiate(reverse, wrt(alphas, means, icf))]
#[allow(clippy::too_many_arguments)]
pub fn gmm_objective(
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

//! A hand-written reverse-mode gradient of ADBench's GMM objective (`gmm.rs`), derived
//! analytically without AD: the baseline phidiff's generated `gmm_objective_rev` is
//! measured against (what a careful person writes by hand).
//!
//! Derivation. Write `Q_k = diag(e^{q_k}) + L_k` (`q_k` the first `d` entries of the
//! component's `icf`, `L_k` its strictly lower part by columns), `xc = x_i − μ_k` and
//! `z = Q_k xc`. Point `i` contributes `lse_k(t_ik)` with
//! `t_ik = α_k + Σ_j q_kj − ½|z|²`, whose derivative w.r.t. `t_ik` is the softmax weight
//! `w_ik`. With `z̄ = −w_ik z`:
//! - `∂/∂α_k = w_ik` and `∂/∂q_kj = w_ik + z̄_j e^{q_kj} xc_j`,
//! - `∂/∂L_k[r][c] = z̄_r xc_c` (r > c),
//! - `∂/∂μ_k = −Q_kᵀ z̄`, i.e. `∂/∂μ_kc = w_ik (e^{q_kc} z_c + Σ_{r>c} L_k[r][c] z_r)`.
//!
//! The other terms: `−n·lse(α)` gives `−n·softmax(α)`; the prior
//! `½γ²(Σ_j e^{2q_kj} + Σ L²) − m Σ_j q_kj` gives `γ² e^{2q_kj} − m` and `γ² L`.
#![allow(dead_code)]
// Index loops mirror `gmm.rs` term by term, so the objective rounds exactly as there.
#![allow(clippy::needless_range_loop)]

/// The objective of `gmm::gmm_objective_flat` (same value, same rounding), with its gradient
/// w.r.t. `alphas`, `means` and `icf` *added* into `d_alphas`, `d_means`, `d_icf` (the
/// convention of the generated `_rev` with seed 1).
#[allow(clippy::too_many_arguments)]
pub fn gmm_objective_hand(
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
    d_alphas: &mut [f64],
    d_means: &mut [f64],
    d_icf: &mut [f64],
) -> f64 {
    let icf_sz = d * (d + 1) / 2;
    assert_eq!(
        d_alphas.len(),
        alphas.len(),
        "d_alphas has the length of alphas"
    );
    assert_eq!(
        d_means.len(),
        means.len(),
        "d_means has the length of means"
    );
    assert_eq!(d_icf.len(), icf.len(), "d_icf has the length of icf");

    // Per component, once: the diagonal of Q_k and the sum of its logs.
    let mut diag = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for ik in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            let q = icf[ik * icf_sz + j];
            s += q;
            diag[ik * d + j] = q.exp();
        }
        sum_qs[ik] = s;
    }

    // Per-point buffers, reused: xc and z = Q_k xc of every component, the terms t_ik and
    // their shifted exponentials (the softmax weights' numerators).
    let mut xc = vec![0.0; k * d];
    let mut z = vec![0.0; k * d];
    let mut main_term = vec![0.0; k];
    let mut shifted_exp = vec![0.0; k];
    // Σ_i w_ik: the adjoint of both α_k (through t_ik) and Σ_j q_kj.
    let mut weight_sum = vec![0.0; k];
    let mut slse = 0.0;
    for ix in 0..n {
        let point = &x[ix * d..(ix + 1) * d];
        for ik in 0..k {
            let l_k = &icf[ik * icf_sz + d..(ik + 1) * icf_sz];
            let q_k = &diag[ik * d..(ik + 1) * d];
            let mu = &means[ik * d..(ik + 1) * d];
            let xc_k = &mut xc[ik * d..(ik + 1) * d];
            let z_k = &mut z[ik * d..(ik + 1) * d];
            for j in 0..d {
                xc_k[j] = point[j] - mu[j];
                z_k[j] = q_k[j] * xc_k[j];
            }
            let mut li = 0;
            for c in 0..d {
                for r in c + 1..d {
                    z_k[r] += l_k[li] * xc_k[c];
                    li += 1;
                }
            }
            let mut sq = 0.0;
            for j in 0..d {
                sq += z_k[j] * z_k[j];
            }
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq;
        }
        let mut mx = main_term[0];
        for ik in 1..k {
            mx = mx.max(main_term[ik]);
        }
        let mut se = 0.0;
        for ik in 0..k {
            shifted_exp[ik] = (main_term[ik] - mx).exp();
            se += shifted_exp[ik];
        }
        slse += se.ln() + mx;

        for ik in 0..k {
            let w = shifted_exp[ik] / se;
            weight_sum[ik] += w;
            let base = ik * icf_sz;
            let l_k = &icf[base + d..base + icf_sz];
            let q_k = &diag[ik * d..(ik + 1) * d];
            let xc_k = &xc[ik * d..(ik + 1) * d];
            let z_k = &z[ik * d..(ik + 1) * d];
            let d_mu = &mut d_means[ik * d..(ik + 1) * d];
            for j in 0..d {
                // w·z_j·e^{q_j} = −z̄_j e^{q_j}, shared by q_j and μ_j.
                let wzq = w * z_k[j] * q_k[j];
                d_icf[base + j] -= wzq * xc_k[j];
                d_mu[j] += wzq;
            }
            let mut li = 0;
            for c in 0..d {
                for r in c + 1..d {
                    let wz = w * z_k[r];
                    d_icf[base + d + li] -= wz * xc_k[c];
                    d_mu[c] += wz * l_k[li];
                    li += 1;
                }
            }
        }
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
    for ik in 0..k {
        d_alphas[ik] += weight_sum[ik] - nf * (alphas[ik] - amx).exp() / ase;
    }

    // The Wishart prior.
    let dof = (d + m + 1) as f64;
    let c = dof * df * (gamma.ln() - 0.5 * std::f64::consts::LN_2) - log_gamma_term;
    let mf = m as f64;
    let gamma2 = gamma * gamma;
    let mut prior = 0.0;
    for ik in 0..k {
        let base = ik * icf_sz;
        let mut fro = 0.0;
        for j in 0..d {
            let q = diag[ik * d + j];
            fro += q * q;
            d_icf[base + j] += gamma2 * q * q - mf + weight_sum[ik];
        }
        for j in d..icf_sz {
            let l = icf[base + j];
            fro += l * l;
            d_icf[base + j] += gamma2 * l;
        }
        prior += 0.5 * gamma * gamma * fro - mf * sum_qs[ik];
    }
    err += prior - (k as f64) * c;
    err
}

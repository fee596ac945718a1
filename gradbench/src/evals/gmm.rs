//! GradBench's `gmm` eval: the log posterior of a Gaussian mixture model with a Wishart
//! prior on its precision matrices, and its gradient with respect to `alpha`, `mu`, `q`
//! and `l`. This is GradBench's corrected definition, not ADBench's: the prior enters
//! with a positive sign (`+ Σₖ (m Σ qₖ − ½γ² ‖Qₖ‖²_F) + K·C`).
//!
//! For component `k`, `Qₖ = diag(exp qₖ) + Lₖ` with `Lₖ` strictly lower triangular,
//! filled column by column from `lₖ`; a point contributes through `‖Qₖ (xᵢ − μₖ)‖²`.

use phidiff::differentiate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs, Runs};

#[derive(Debug, Deserialize)]
pub struct Input {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    pub alpha: Vec<f64>,
    pub mu: Vec<Vec<f64>>,
    pub q: Vec<Vec<f64>>,
    pub l: Vec<Vec<f64>>,
    pub x: Vec<Vec<f64>>,
    pub gamma: f64,
    pub m: usize,
}

/// The gradient, shaped like the independent variables of the input.
#[derive(Debug, PartialEq, Serialize)]
pub struct Jacobian {
    pub alpha: Vec<f64>,
    pub mu: Vec<Vec<f64>>,
    pub q: Vec<Vec<f64>>,
    pub l: Vec<Vec<f64>>,
}

/// The flat problem: `mu`, `q` are `k × d`, `l` is `k × d(d−1)/2`, `x` is `n × d`, all
/// row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    pub alpha: Vec<f64>,
    pub mu: Vec<f64>,
    pub q: Vec<f64>,
    pub l: Vec<f64>,
    pub x: Vec<f64>,
    pub gamma: f64,
    pub m: usize,
}

impl Problem {
    pub fn from_input(input: Input) -> Result<Problem, String> {
        let (d, k, n) = (input.d, input.k, input.n);
        let l_size = d * (d.max(1) - 1) / 2;
        let flat = |rows: Vec<Vec<f64>>, n_rows: usize, width: usize, name: &str| {
            if rows.len() != n_rows || rows.iter().any(|r| r.len() != width) {
                return Err(format!("gmm: `{name}` is not {n_rows} × {width}"));
            }
            Ok(rows.concat())
        };
        if input.alpha.len() != k || k == 0 {
            return Err(format!(
                "gmm: `alpha` has {} entries, not k = {k}",
                input.alpha.len()
            ));
        }
        Ok(Problem {
            d,
            k,
            n,
            alpha: input.alpha,
            mu: flat(input.mu, k, d, "mu")?,
            q: flat(input.q, k, d, "q")?,
            l: flat(input.l, k, l_size, "l")?,
            x: flat(input.x, n, d, "x")?,
            gamma: input.gamma,
            m: input.m,
        })
    }

    /// `ln Γ_d(ν/2)` with `ν = d + m + 1`, the constant of the prior.
    pub fn log_gamma_term(&self) -> f64 {
        ln_multigamma(0.5 * (self.d + self.m + 1) as f64, self.d)
    }

    pub fn objective(&self) -> f64 {
        gmm_objective(
            &self.alpha,
            &self.mu,
            &self.q,
            &self.l,
            &self.x,
            self.d,
            self.k,
            self.n,
            self.gamma,
            self.m,
            self.log_gamma_term(),
        )
    }

    /// The gradient in the input's order: `alpha`, `mu`, `q`, `l` (flat).
    pub fn gradient(&self) -> (f64, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let (value, (da, dmu, dq, dl)) = gmm_objective_grad(
            &self.alpha,
            &self.mu,
            &self.q,
            &self.l,
            &self.x,
            self.d,
            self.k,
            self.n,
            self.gamma,
            self.m,
            self.log_gamma_term(),
        );
        (value, da, dmu, dq, dl)
    }

    pub fn jacobian(&self) -> Jacobian {
        let (_, alpha, mu, q, l) = self.gradient();
        let rows = |flat: Vec<f64>, width: usize| -> Vec<Vec<f64>> {
            (0..self.k)
                .map(|i| flat[i * width..(i + 1) * width].to_vec())
                .collect()
        };
        Jacobian {
            alpha,
            mu: rows(mu, self.d),
            q: rows(q, self.d),
            l: rows(l, self.d * (self.d - 1) / 2),
        }
    }
}

/// The log posterior; `log_gamma_term` is `ln Γ_d((d + m + 1)/2)` ([`ln_multigamma`]).
#[differentiate(forward, reverse, wrt(alpha, mu, q, l))]
#[allow(clippy::too_many_arguments)]
pub fn gmm_objective(
    alpha: &[f64],
    mu: &[f64],
    q: &[f64],
    l: &[f64],
    x: &[f64],
    d: usize,
    k: usize,
    n: usize,
    gamma: f64,
    m: usize,
    log_gamma_term: f64,
) -> f64 {
    let l_size = d * (d - 1) / 2;
    // Per component, once: Σⱼ qⱼ and the diagonal exp(qⱼ) of Qₖ (not once per point).
    let mut sum_q = vec![0.0; k];
    let mut q_diag = vec![0.0; k * d];
    for ik in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            s += q[ik * d + j];
            q_diag[ik * d + j] = q[ik * d + j].exp();
        }
        sum_q[ik] = s;
    }
    let mut centered = vec![0.0; d];
    let mut qx = vec![0.0; d];
    let mut main_term = vec![0.0; k];
    let mut slse = 0.0;
    for ix in 0..n {
        for ik in 0..k {
            for j in 0..d {
                centered[j] = x[ix * d + j] - mu[ik * d + j];
            }
            for j in 0..d {
                qx[j] = q_diag[ik * d + j] * centered[j];
            }
            // The strictly lower part, column by column.
            let mut li = 0;
            for c in 0..d {
                for r in c + 1..d {
                    qx[r] += l[ik * l_size + li] * centered[c];
                    li += 1;
                }
            }
            let mut sq = 0.0;
            for j in 0..d {
                sq += qx[j] * qx[j];
            }
            main_term[ik] = alpha[ik] + sum_q[ik] - 0.5 * sq;
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
    let mut amx = alpha[0];
    for ik in 1..k {
        amx = amx.max(alpha[ik]);
    }
    let mut ase = 0.0;
    for ik in 0..k {
        ase += (alpha[ik] - amx).exp();
    }
    let lse_alpha = ase.ln() + amx;
    let nf = n as f64;
    let df = d as f64;
    let constant = -nf * df * 0.5 * (2.0 * std::f64::consts::PI).ln();
    // The Wishart prior on the precision matrices QₖᵀQₖ.
    let dof = (d + m + 1) as f64;
    let c = dof * df * (gamma.ln() - 0.5 * std::f64::consts::LN_2) - log_gamma_term;
    let mf = m as f64;
    let mut out = 0.0;
    for ik in 0..k {
        let mut frobenius = 0.0;
        for j in 0..d {
            frobenius += q_diag[ik * d + j] * q_diag[ik * d + j];
        }
        for j in 0..l_size {
            frobenius += l[ik * l_size + j] * l[ik * l_size + j];
        }
        out += 0.5 * gamma * gamma * frobenius - mf * sum_q[ik];
    }
    constant + slse - nf * lse_alpha - out + (k as f64) * c
}

/// `ln Γ(z)` for `z > 0` (Lanczos, g = 7, 9 terms; reflection below ½), about 1e-15
/// relative.
pub fn ln_gamma(z: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if z < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * z).sin()).ln() - ln_gamma(1.0 - z);
    }
    let z = z - 1.0;
    let mut a = COEFFICIENTS[0];
    let t = z + G + 0.5;
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        a += c / (z + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + a.ln()
}

/// The multivariate log-gamma `ln Γ_p(a) = p(p−1)/4 · ln π + Σ_{j=1..p} ln Γ(a + (1−j)/2)`.
pub fn ln_multigamma(a: f64, p: usize) -> f64 {
    let pf = p as f64;
    let mut s = 0.25 * pf * (pf - 1.0) * std::f64::consts::PI.ln();
    for j in 1..=p {
        s += ln_gamma(a + 0.5 * (1.0 - j as f64));
    }
    s
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let problem = Problem::from_input(parse_input(input)?)?;
    let runs = Runs::from_input(input);
    match function {
        "objective" => Ok(time_runs(runs, || problem.objective())),
        "jacobian" => Ok(time_runs(runs, || problem.jacobian())),
        _ => Err(super::unknown_function("gmm", function)),
    }
}

//! Every eval's derivative against central finite differences, and — where forward and
//! reverse functions are both generated — the dot-product identity
//! `ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ`; objective values against values computed independently
//! (closed forms, a different algorithm, or a plain re-derivation).
//!
//! Tolerances: finite differences `|g − fd| ≤ 1e-8 + 1e-6·max(|g|, |fd|)` (central
//! differences with step control reach ~1e-9 relative on these smooth functions); the
//! dot-product identity to 1e-12 relative (no truncation error, only rounding);
//! closed-form values to 1e-12 relative unless stated.

#![allow(clippy::needless_range_loop)]

use phidiff::check::{self, Tolerance};
use phidiff_gradbench::evals::{ba, det, gmm, hello, ht, llsq, lse, lstm, ode};

const FD: Tolerance = Tolerance {
    rel: 1e-6,
    abs: 1e-8,
};
const DOT_REL: f64 = 1e-12;
const TRIALS: usize = 4;

fn assert_close(what: &str, got: f64, want: f64, rel: f64) {
    let err = (got - want).abs();
    assert!(
        err <= rel * want.abs().max(1e-300),
        "{what}: got {got:e}, want {want:e} (|err| {err:e})"
    );
}

fn check_fd(name: &str, x: &[f64], f: impl Fn(&[f64]) -> f64, g: &[f64], tol: Tolerance) {
    check::gradient(f, x, g, tol).unwrap_or_else(|e| panic!("{name}: {e:?}"));
}

fn check_dot(
    name: &str,
    n_in: usize,
    n_out: usize,
    jvp: impl FnMut(&[f64]) -> Vec<f64>,
    vjp: impl FnMut(&[f64]) -> Vec<f64>,
) {
    check::dot_product(n_in, n_out, jvp, vjp, TRIALS, DOT_REL)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
}

fn seeded(seed: u64, n: usize, scale: f64) -> Vec<f64> {
    check::random_vector(seed, n)
        .iter()
        .map(|v| v * scale)
        .collect()
}

// --- hello ---------------------------------------------------------------------------

#[test]
fn hello_square_and_double() {
    for x in [-2.5, 0.0, 3.0] {
        assert_eq!(hello::square(x), x * x);
        assert_eq!(hello::square_grad(x), (x * x, 2.0 * x));
    }
    check_fd(
        "square",
        &[1.7],
        |x| hello::square(x[0]),
        &[hello::square_grad(1.7).1],
        FD,
    );
    check_dot(
        "square",
        1,
        1,
        |v| vec![hello::square_fwd(1.7, v[0]).1],
        |w| vec![hello::square_rev(1.7, w[0]).1],
    );
}

// --- lse -----------------------------------------------------------------------------

#[test]
fn lse_value_gradient_and_dot_product() {
    let x = seeded(11, 20, 3.0);
    // Directly, without the shift (safe for |x| ≤ 3), and the softmax as gradient.
    let sum_exp: f64 = x.iter().map(|v| v.exp()).sum();
    assert_close("lse", lse::logsumexp(&x), sum_exp.ln(), 1e-14);
    let (value, g) = lse::logsumexp_grad(&x);
    assert_close("lse value", value, sum_exp.ln(), 1e-14);
    for (i, gi) in g.iter().enumerate() {
        assert_close("softmax", *gi, x[i].exp() / sum_exp, 1e-13);
    }
    check_fd("lse", &x, lse::logsumexp, &g, FD);
    check_dot(
        "lse",
        x.len(),
        1,
        |v| vec![lse::logsumexp_fwd(&x, v).1],
        |w| {
            let mut dx = vec![0.0; x.len()];
            lse::logsumexp_rev(&x, &mut dx, w[0]);
            dx
        },
    );
}

// --- llsq ----------------------------------------------------------------------------

#[test]
fn llsq_value_gradient_and_dot_product() {
    // At x = 0 every residual is sign(tᵢ): n/2, less ½ when n is odd (t = 0 in the middle).
    assert_close("llsq(0), n = 16", llsq::llsq(&[0.0; 5], 16), 8.0, 1e-15);
    assert_close("llsq(0), n = 17", llsq::llsq(&[0.0; 5], 17), 8.0, 1e-15);
    // With one coefficient: ½ Σ (sᵢ − x₀)², here n = 4: t = ±1, ±1/3.
    let x0 = 0.3;
    let want = 0.5 * (2.0 * (1.0 - x0) * (1.0 - x0) + 2.0 * (1.0 + x0) * (1.0 + x0));
    assert_close("llsq m = 1", llsq::llsq(&[x0], 4), want, 1e-15);

    let x = seeded(12, 8, 1.0);
    let n = 33;
    let (value, g) = llsq::llsq_grad(&x, n);
    assert_close("llsq value", value, llsq::llsq(&x, n), 1e-15);
    check_fd("llsq", &x, |x| llsq::llsq(x, n), &g, FD);
    check_dot(
        "llsq",
        x.len(),
        1,
        |v| vec![llsq::llsq_fwd(&x, v, n).1],
        |w| {
            let mut dx = vec![0.0; x.len()];
            llsq::llsq_rev(&x, &mut dx, n, w[0]);
            dx
        },
    );
}

// --- det -----------------------------------------------------------------------------

/// `(det A, A⁻¹)` by Gauss–Jordan elimination with partial pivoting (an independent
/// algorithm).
fn det_and_inverse(a: &[f64], n: usize) -> (f64, Vec<f64>) {
    let mut m = a.to_vec();
    let mut inv: Vec<f64> = (0..n * n)
        .map(|i| if i % (n + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let mut det = 1.0;
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| m[i * n + c].abs().total_cmp(&m[j * n + c].abs()))
            .unwrap();
        if p != c {
            for j in 0..n {
                m.swap(p * n + j, c * n + j);
                inv.swap(p * n + j, c * n + j);
            }
            det = -det;
        }
        let pivot = m[c * n + c];
        det *= pivot;
        for j in 0..n {
            m[c * n + j] /= pivot;
            inv[c * n + j] /= pivot;
        }
        for r in (0..n).filter(|&r| r != c) {
            let f = m[r * n + c];
            for j in 0..n {
                m[r * n + j] -= f * m[c * n + j];
                inv[r * n + j] -= f * inv[c * n + j];
            }
        }
    }
    (det, inv)
}

#[test]
fn det_known_values() {
    // Rule of Sarrus.
    let (a11, a12, a13, a21, a22, a23, a31, a32, a33) =
        (2.0, -1.0, 3.0, 0.5, 4.0, 1.0, -2.0, 1.5, 2.5);
    let a = [a11, a12, a13, a21, a22, a23, a31, a32, a33];
    let sarrus = a11 * a22 * a33 + a12 * a23 * a31 + a13 * a21 * a32
        - a13 * a22 * a31
        - a12 * a21 * a33
        - a11 * a23 * a32;
    assert_close("3×3", det::primal(&a, 3), sarrus, 1e-14);
    assert_eq!(det::primal(&[7.0], 1), 7.0);
    // Triangular: the product of the diagonal (ℓ = 8 uses a decoded prefix row).
    for ell in [5, 8] {
        let mut t = vec![0.0; ell * ell];
        let mut product = 1.0;
        for i in 0..ell {
            for j in i..ell {
                t[i * ell + j] = 0.3 + ((i * 7 + j * 3) % 5) as f64 * 0.2;
            }
            product *= t[i * ell + i];
        }
        assert_close("triangular", det::primal(&t, ell), product, 1e-13);
    }
    // A permutation matrix of an odd permutation: −1.
    let mut p = vec![0.0; 16];
    for (i, j) in [(0, 1), (1, 0), (2, 2), (3, 3)] {
        p[i * 4 + j] = 1.0;
    }
    assert_eq!(det::primal(&p, 4), -1.0);
}

#[test]
fn det_matches_elimination_and_jacobis_formula() {
    // ℓ = 9 runs 72 decoded prefixes through the checkpointed loop (a snapshot per 16).
    for ell in [4, 6, 9] {
        let a = seeded(20 + ell as u64, ell * ell, 1.0);
        let (want, inv) = det_and_inverse(&a, ell);
        let (value, g) = {
            let g = det::gradient(&a, ell);
            (det::primal(&a, ell), g)
        };
        assert_close(&format!("det ℓ={ell}"), value, want, 1e-11);
        // ∂ det / ∂A[i][j] = det · (A⁻¹)[j][i].
        for i in 0..ell {
            for j in 0..ell {
                let jacobi = want * inv[j * ell + i];
                let err = (g[i * ell + j] - jacobi).abs();
                assert!(
                    err <= 1e-10 * want.abs().max(1.0),
                    "ℓ={ell} [{i}][{j}]: {} vs {jacobi}",
                    g[i * ell + j]
                );
            }
        }
    }
}

#[test]
fn det_gradient_fd_and_dot_product() {
    for ell in [3, 5, 8] {
        let a = seeded(30 + ell as u64, ell * ell, 1.0);
        let g = det::gradient(&a, ell);
        check_fd(&format!("det ℓ={ell}"), &a, |a| det::primal(a, ell), &g, FD);
        let tail = det::TailPermutations::new(ell.min(det::MAX_TAIL));
        check_dot(
            &format!("det ℓ={ell}"),
            a.len(),
            1,
            |v| vec![det::det_by_minors_fwd(&a, v, ell, tail.k, &tail.perms, &tail.odd).1],
            |w| {
                let mut da = vec![0.0; a.len()];
                det::det_by_minors_rev(&a, &mut da, ell, tail.k, &tail.perms, &tail.odd, w[0]);
                da
            },
        );
    }
}

#[test]
fn tail_permutations_are_all_permutations_in_order() {
    let t = det::TailPermutations::new(4);
    assert_eq!(t.odd.len(), 24);
    assert_eq!(&t.perms[..8], &[0, 1, 2, 3, 0, 1, 3, 2]);
    assert_eq!(&t.perms[23 * 4..], &[3, 2, 1, 0]);
    assert_eq!(t.odd.iter().sum::<usize>(), 12);
}

// --- ode -----------------------------------------------------------------------------

#[test]
fn ode_matches_the_closed_form() {
    // yᵢ(t) = (Πⱼ≤ᵢ xⱼ) tⁱ⁺¹/(i+1)!: polynomials of degree ≤ 4 for n = 4, which classical
    // Runge–Kutta integrates exactly, whatever the number of steps.
    let x = [0.7, 1.3, 0.4, 2.1];
    let mut want = [0.0; 4];
    let (mut product, mut factorial) = (1.0, 1.0);
    for i in 0..4 {
        product *= x[i];
        factorial *= (i + 1) as f64;
        want[i] = product * 2f64.powi(i as i32 + 1) / factorial;
    }
    for s in [1, 3, 10] {
        let y = ode::primal(&x, s);
        for i in 0..4 {
            assert_close(&format!("y{i}, s={s}"), y[i], want[i], 1e-13);
        }
        // ∂y₃/∂xⱼ = y₃ / xⱼ.
        let g = ode::gradient(&x, s);
        for j in 0..4 {
            assert_close(&format!("∂y3/∂x{j}, s={s}"), g[j], want[3] / x[j], 1e-13);
        }
    }
}

#[test]
fn ode_gradient_fd_and_dot_product() {
    let n = 7;
    let s = 5;
    let x = seeded(40, n, 1.0);
    let g = ode::gradient(&x, s);
    check_fd("ode", &x, |x| ode::primal(x, s)[n - 1], &g, FD);
    check_dot(
        "ode",
        n,
        n,
        |v| {
            let (mut y, mut dy) = (vec![0.0; n], vec![0.0; n]);
            ode::ode_solve_fwd(&x, v, &mut y, &mut dy, s);
            dy
        },
        |w| {
            let mut dx = vec![0.0; n];
            let mut y = vec![0.0; n];
            let mut dy = w.to_vec();
            ode::ode_solve_rev(&x, &mut dx, &mut y, &mut dy, s);
            dx
        },
    );
}

// --- gmm -----------------------------------------------------------------------------

fn gmm_problem(d: usize, k: usize, n: usize, m: usize, seed: u64) -> gmm::Problem {
    gmm::Problem {
        d,
        k,
        n,
        alpha: seeded(seed, k, 1.0),
        mu: seeded(seed + 1, k * d, 1.0),
        q: seeded(seed + 2, k * d, 0.5),
        l: seeded(seed + 3, k * d * (d - 1) / 2, 0.5),
        x: seeded(seed + 4, n * d, 1.5),
        gamma: 1.3,
        m,
    }
}

/// The log posterior from dense matrices: `Qₖ` built explicitly, the likelihood without
/// the max shift, `‖Qₖ‖²_F` as `tr(QₖQₖᵀ)`.
fn gmm_dense(p: &gmm::Problem, log_gamma_term: f64) -> f64 {
    let (d, k) = (p.d, p.k);
    let l_size = d * (d - 1) / 2;
    let q_matrix = |ik: usize| {
        let mut qm = vec![vec![0.0; d]; d];
        let mut li = 0;
        for c in 0..d {
            qm[c][c] = p.q[ik * d + c].exp();
            for r in c + 1..d {
                qm[r][c] = p.l[ik * l_size + li];
                li += 1;
            }
        }
        qm
    };
    let mut log_likelihood = 0.0;
    for i in 0..p.n {
        let mut s = 0.0;
        for ik in 0..k {
            let qm = q_matrix(ik);
            let mut norm2 = 0.0;
            for r in 0..d {
                let row: f64 = (0..d)
                    .map(|c| qm[r][c] * (p.x[i * d + c] - p.mu[ik * d + c]))
                    .sum();
                norm2 += row * row;
            }
            let log_det: f64 = p.q[ik * d..(ik + 1) * d].iter().sum();
            s += (p.alpha[ik] + log_det - 0.5 * norm2).exp();
        }
        log_likelihood += s.ln();
    }
    let alpha_sum: f64 = p.alpha.iter().map(|a| a.exp()).sum();
    log_likelihood -= p.n as f64 * alpha_sum.ln();
    log_likelihood -= 0.5 * (p.n * d) as f64 * (2.0 * std::f64::consts::PI).ln();
    let nu = (d + p.m + 1) as f64;
    let mut prior = 0.0;
    for ik in 0..k {
        let qm = q_matrix(ik);
        let trace: f64 = (0..d)
            .map(|r| (0..d).map(|c| qm[r][c] * qm[r][c]).sum::<f64>())
            .sum();
        let log_det: f64 = p.q[ik * d..(ik + 1) * d].iter().sum();
        prior += p.m as f64 * log_det - 0.5 * p.gamma * p.gamma * trace
            + nu * d as f64 * (p.gamma / 2f64.sqrt()).ln()
            - log_gamma_term;
    }
    log_likelihood + prior
}

#[test]
fn ln_gamma_known_values() {
    for (z, want) in [
        (1.0, 0.0),
        (2.0, 0.0),
        (5.0, 24f64.ln()),
        (0.5, std::f64::consts::PI.sqrt().ln()),
        (1.5, (std::f64::consts::PI.sqrt() / 2.0).ln()),
        (10.5, 1_133_278.388_948_785_6_f64.ln()),
    ] {
        let got = gmm::ln_gamma(z);
        assert!(
            (got - want).abs() <= 1e-13 * want.abs().max(1.0),
            "ln Γ({z}) = {got}, want {want}"
        );
    }
    // Γ₂(a) = √π Γ(a) Γ(a − ½): Γ₂(3/2) = √π · (√π/2) · 1 = π/2.
    assert_close(
        "ln Γ₂(3/2)",
        gmm::ln_multigamma(1.5, 2),
        (std::f64::consts::PI / 2.0).ln(),
        1e-14,
    );
}

#[test]
fn gmm_objective_matches_the_dense_formula() {
    // d = 2, m = 0: ν = 3 and ln Γ₂(3/2) = ln(π/2) in closed form.
    let p = gmm_problem(2, 3, 4, 0, 50);
    assert_close(
        "gmm d=2",
        p.objective(),
        gmm_dense(&p, (std::f64::consts::PI / 2.0).ln()),
        1e-12,
    );
    let p = gmm_problem(4, 5, 6, 2, 60);
    assert_close(
        "gmm d=4",
        p.objective(),
        gmm_dense(&p, p.log_gamma_term()),
        1e-12,
    );
}

#[test]
fn gmm_gradient_fd_and_dot_product() {
    let p = gmm_problem(3, 4, 5, 1, 70);
    let (na, nmu, nq) = (p.alpha.len(), p.mu.len(), p.q.len());
    let point = [p.alpha.clone(), p.mu.clone(), p.q.clone(), p.l.clone()].concat();
    let with = |v: &[f64]| gmm::Problem {
        alpha: v[..na].to_vec(),
        mu: v[na..na + nmu].to_vec(),
        q: v[na + nmu..na + nmu + nq].to_vec(),
        l: v[na + nmu + nq..].to_vec(),
        ..p.clone()
    };
    let (value, da, dmu, dq, dl) = p.gradient();
    assert_close("gmm value", value, p.objective(), 1e-14);
    let g = [da, dmu, dq, dl].concat();
    check_fd("gmm", &point, |v| with(v).objective(), &g, FD);
    // The JSON shape: rows of the flat gradient.
    let jacobian = p.jacobian();
    assert_eq!(jacobian.mu.concat(), g[na..na + nmu]);
    assert_eq!(jacobian.l.concat(), g[na + nmu + nq..]);
    let lg = p.log_gamma_term();
    check_dot(
        "gmm",
        point.len(),
        1,
        |v| {
            let t = with(v);
            let value = gmm::gmm_objective_fwd(
                &p.alpha, &t.alpha, &p.mu, &t.mu, &p.q, &t.q, &p.l, &t.l, &p.x, p.d, p.k, p.n,
                p.gamma, p.m, lg,
            );
            vec![value.1]
        },
        |w| {
            let mut a = [
                vec![0.0; na],
                vec![0.0; nmu],
                vec![0.0; nq],
                vec![0.0; p.l.len()],
            ];
            let [da, dmu, dq, dl] = &mut a;
            gmm::gmm_objective_rev(
                &p.alpha, da, &p.mu, dmu, &p.q, dq, &p.l, dl, &p.x, p.d, p.k, p.n, p.gamma, p.m,
                lg, w[0],
            );
            a.concat()
        },
    );
}

// --- lstm ----------------------------------------------------------------------------

fn lstm_problem(l: usize, b: usize, c: usize, seed: u64) -> lstm::Problem {
    lstm::Problem {
        l,
        c,
        b,
        main_params: seeded(seed, 8 * l * b, 0.8),
        extra_params: seeded(seed + 1, 3 * b, 0.8),
        state: seeded(seed + 2, 2 * l * b, 0.5),
        sequence: seeded(seed + 3, c * b, 1.0),
    }
}

#[test]
fn lstm_with_zero_parameters_has_a_closed_form() {
    // Zero weights and biases: the output weight is 0, so every prediction is 0 and the
    // log-sum-exp is ln(b + 2); the loss is ln(b + 2) · Σ_{t≥1} Σᵢ seq[t][i] / ((c−1) b).
    let mut p = lstm_problem(2, 3, 5, 80);
    p.main_params.iter_mut().for_each(|v| *v = 0.0);
    p.extra_params.iter_mut().for_each(|v| *v = 0.0);
    let later: f64 = p.sequence[p.b..].iter().sum();
    let want = (p.b as f64 + 2.0).ln() * later / ((p.c - 1) * p.b) as f64;
    assert_close("lstm, zero parameters", p.objective(), want, 1e-13);
}

#[test]
fn lstm_gradient_fd_and_dot_product() {
    let p = lstm_problem(2, 3, 5, 90);
    let nm = p.main_params.len();
    let point = [p.main_params.clone(), p.extra_params.clone()].concat();
    let with = |v: &[f64]| lstm::Problem {
        main_params: v[..nm].to_vec(),
        extra_params: v[nm..].to_vec(),
        ..p.clone()
    };
    let g = p.jacobian();
    check_fd("lstm", &point, |v| with(v).objective(), &g, FD);
    check_dot(
        "lstm",
        point.len(),
        1,
        |v| {
            let value = lstm::lstm_objective_fwd(
                &p.main_params,
                &v[..nm],
                &p.extra_params,
                &v[nm..],
                &p.state,
                &p.sequence,
                p.l,
                p.c,
                p.b,
            );
            vec![value.1]
        },
        |w| {
            let (mut dm, mut de) = (vec![0.0; nm], vec![0.0; p.extra_params.len()]);
            lstm::lstm_objective_rev(
                &p.main_params,
                &mut dm,
                &p.extra_params,
                &mut de,
                &p.state,
                &p.sequence,
                p.l,
                p.c,
                p.b,
                w[0],
            );
            [dm, de].concat()
        },
    );
}

// --- ba ------------------------------------------------------------------------------

#[test]
fn ba_projection_of_known_rotations() {
    let point = [0.4, -0.3, 5.0];
    let center = [0.1, 0.2, -1.0];
    let (f, u0, v0, k1, k2) = (300.0, 10.0, -5.0, 0.05, -0.01);
    let (w, feat) = (0.7, [2.0, -3.0]);
    let rel = [
        point[0] - center[0],
        point[1] - center[1],
        point[2] - center[2],
    ];
    // Rotation by +90° about z maps (a, b, c) to (−b, a, c); no rotation keeps it.
    for (rot, rotated) in [
        (
            [0.0, 0.0, std::f64::consts::FRAC_PI_2],
            [-rel[1], rel[0], rel[2]],
        ),
        ([0.0, 0.0, 0.0], rel),
    ] {
        let cam = [
            rot[0], rot[1], rot[2], center[0], center[1], center[2], f, u0, v0, k1, k2,
        ];
        let (u, v) = (rotated[0] / rotated[2], rotated[1] / rotated[2]);
        let r2 = u * u + v * v;
        let distortion = 1.0 + k1 * r2 + k2 * r2 * r2;
        let want = [
            w * (u * distortion * f + u0 - feat[0]),
            w * (v * distortion * f + v0 - feat[1]),
        ];
        let mut err = [0.0; 2];
        ba::reprojection_error(&cam, &point, w, &feat, &mut err);
        assert_close("residual x", err[0], want[0], 1e-12);
        assert_close("residual y", err[1], want[1], 1e-12);
    }
    assert_eq!(ba::weight_error(0.7), 1.0 - 0.49);
}

fn ba_problem() -> ba::Problem {
    let input: ba::Input = serde_json::from_value(serde_json::json!({
        "n": 2, "m": 3, "p": 5,
        "cam": [0.1, -0.2, 0.3, 0.5, -0.4, -2.0, 400.0, 12.0, -8.0, 0.02, -0.003],
        "x": [0.3, 0.2, 4.0], "w": 0.8, "feat": [30.0, -20.0]
    }))
    .unwrap();
    let mut p = ba::Problem::from_input(input).unwrap();
    // Distinct cameras, points and weights, so a wrong column would show.
    for (i, v) in p.cams.iter_mut().enumerate() {
        *v *= 1.0 + 0.01 * (i % 7) as f64;
    }
    for (i, v) in p.points.iter_mut().enumerate() {
        *v += 0.05 * (i % 5) as f64;
    }
    for (i, v) in p.weights.iter_mut().enumerate() {
        *v += 0.03 * i as f64;
    }
    p
}

#[test]
fn ba_sparse_jacobian_matches_finite_differences() {
    let p = ba_problem();
    let (nc, np) = (p.cams.len(), p.points.len());
    let params = [p.cams.clone(), p.points.clone(), p.weights.clone()].concat();
    let residuals = |v: &[f64]| {
        let q = ba::Problem {
            cams: v[..nc].to_vec(),
            points: v[nc..nc + np].to_vec(),
            weights: v[nc + np..].to_vec(),
            ..p.clone()
        };
        let o = q.objective();
        [o.reproj_err, o.w_err].concat()
    };
    let jacobian = p.jacobian();
    assert_eq!(jacobian.n_cols, params.len());
    assert_eq!(jacobian.rows.len(), 3 * p.p + 1);
    assert_eq!(jacobian.vals.len(), 2 * ba::ROW_NONZEROS * p.p + p.p);
    let dense = jacobian.to_dense();
    for (r, row) in dense.iter().enumerate() {
        let tol = Tolerance {
            rel: 1e-6,
            abs: 1e-6,
        };
        check_fd(
            &format!("ba row {r}"),
            &params,
            |v| residuals(v)[r],
            row,
            tol,
        );
    }
    // The output keeps the first observation's rows and the last entry.
    let out = jacobian.output();
    assert_eq!(out.vals[..30], jacobian.vals[..30]);
    assert_eq!(out.vals[30], *jacobian.vals.last().unwrap());
    // (With p = 5 there are only 16 row offsets: all of them.)
    assert_eq!(out.rows, jacobian.rows);
    assert_eq!(*out.rows.last().unwrap(), 31 * p.p);
}

#[test]
fn ba_reprojection_dot_product() {
    let p = ba_problem();
    let (cam, x, w, feat) = (&p.cams[..11], &p.points[..3], p.weights[0], &p.feats[..2]);
    let jvp = |v: &[f64]| {
        let (mut err, mut derr) = ([0.0; 2], [0.0; 2]);
        ba::reprojection_error_fwd(
            cam,
            &v[..11],
            x,
            &v[11..14],
            w,
            v[14],
            feat,
            &mut err,
            &mut derr,
        );
        derr.to_vec()
    };
    check_dot("reprojection", 15, 2, jvp, |y| {
        let (mut dcam, mut dx) = ([0.0; 11], [0.0; 3]);
        let (mut err, mut derr) = ([0.0; 2], [y[0], y[1]]);
        let dw =
            ba::reprojection_error_rev(cam, &mut dcam, x, &mut dx, w, feat, &mut err, &mut derr);
        [&dcam[..], &dx[..], &[dw]].concat()
    });
    // Each lane of the batched sweep the Jacobian uses, the other lane seeded otherwise.
    for lane in 0..2 {
        check_dot(
            &format!("reprojection, lane {lane} of reprojection_error_rev2"),
            15,
            2,
            jvp,
            |y| {
                let (mut dcam, mut dx) = ([[0.0; 11]; 2], [[0.0; 3]; 2]);
                let mut derr = [[0.7, -1.3]; 2];
                derr[lane] = [y[0], y[1]];
                let mut err = [0.0; 2];
                let [dcam0, dcam1] = &mut dcam;
                let [dx0, dx1] = &mut dx;
                let [derr0, derr1] = &mut derr;
                let dw = ba::reprojection_error_rev2(
                    cam,
                    [dcam0, dcam1],
                    x,
                    [dx0, dx1],
                    w,
                    feat,
                    &mut err,
                    [derr0, derr1],
                );
                [&dcam[lane][..], &dx[lane][..], &[dw[lane]]].concat()
            },
        );
    }
    check_dot(
        "weight error",
        1,
        1,
        |v| vec![ba::weight_error_fwd(w, v[0]).1],
        |y| vec![ba::weight_error_rev(w, y[0]).1],
    );
}

// --- ht ------------------------------------------------------------------------------

/// A synthetic hand (ADBench's model files are not public with its inputs): 22 bones, a
/// palm under the root and a chain of 4 per finger; each vertex weighted on 3 bones.
/// `us` empty for a simple input.
fn ht_problem(vertices: usize, points: usize, complicated: bool, seed: u64) -> ht::Problem {
    let bones = 22;
    let mut parents = vec![0, 0];
    for finger in 0..5 {
        let first = 2 + 4 * finger;
        parents.extend([1, first, first + 1, first + 2]);
    }
    // A root's parent is itself.
    assert_eq!(parents.len(), bones);
    let rand = |k: u64, n: usize| seeded(seed * 100 + k, n, 1.0);
    // Base relatives: a rotation (a random Euler triple) and a translation.
    let mut base_relatives = Vec::new();
    let angles = rand(1, 3 * bones);
    let shifts = rand(2, 3 * bones);
    for b in 0..bones {
        let r = euler(&angles[3 * b..3 * b + 3]);
        for i in 0..3 {
            base_relatives.extend([r[i][0], r[i][1], r[i][2], 0.5 * shifts[3 * b + i]]);
        }
        base_relatives.extend([0.0, 0.0, 0.0, 1.0]);
    }
    // Inverse base absolutes: any affine map.
    let mut inverse_base_absolutes = Vec::new();
    let entries = rand(3, 12 * bones);
    for b in 0..bones {
        for i in 0..3 {
            for j in 0..4 {
                let identity = if i == j { 1.0 } else { 0.0 };
                inverse_base_absolutes.push(identity + 0.3 * entries[12 * b + 4 * i + j]);
            }
        }
        inverse_base_absolutes.extend([0.0, 0.0, 0.0, 1.0]);
    }
    let coords = rand(4, 3 * vertices);
    let mut base_positions = Vec::new();
    for v in 0..vertices {
        base_positions.extend([coords[3 * v], coords[3 * v + 1], coords[3 * v + 2], 1.0]);
    }
    let mut weights = vec![0.0; bones * vertices];
    let w = rand(5, 3 * vertices);
    for v in 0..vertices {
        for k in 0..3 {
            let b = (v * 7 + k * 5) % bones;
            weights[b * vertices + v] += (0.5 + 0.5 * w[3 * v + k].abs()) / 3.0;
        }
    }
    let triangles: Vec<usize> = (0..vertices)
        .flat_map(|t| [t, (t + 1) % vertices, (t + 3) % vertices])
        .collect();
    let correspondences: Vec<usize> = (0..points).map(|i| (i * 5 + 2) % vertices).collect();
    let us = if complicated {
        rand(6, 2 * points).iter().map(|u| 0.25 + 0.2 * u).collect()
    } else {
        Vec::new()
    };
    ht::Problem {
        theta: rand(7, ht::THETA_LEN).iter().map(|t| 0.8 * t).collect(),
        us,
        parents,
        base_relatives,
        inverse_base_absolutes,
        base_positions,
        weights,
        triangles,
        correspondences,
        points: rand(8, 3 * points),
        mirrored: false,
    }
}

type M3 = [[f64; 3]; 3];
type M4 = [[f64; 4]; 4];

fn mul3(a: &M3, b: &M3) -> M3 {
    let mut c = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            c[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    c
}

fn mul4(a: &M4, b: &M4) -> M4 {
    let mut c = [[0.0; 4]; 4];
    for i in 0..4 {
        for j in 0..4 {
            c[i][j] = (0..4).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    c
}

/// `R_z R_y R_x` from angles given as (x, z, y), as elementary rotations multiplied out.
fn euler(xzy: &[f64]) -> M3 {
    let (x, z, y) = (xzy[0], xzy[1], xzy[2]);
    let rx = [
        [1.0, 0.0, 0.0],
        [0.0, x.cos(), -x.sin()],
        [0.0, x.sin(), x.cos()],
    ];
    let ry = [
        [y.cos(), 0.0, y.sin()],
        [0.0, 1.0, 0.0],
        [-y.sin(), 0.0, y.cos()],
    ];
    let rz = [
        [z.cos(), -z.sin(), 0.0],
        [z.sin(), z.cos(), 0.0],
        [0.0, 0.0, 1.0],
    ];
    mul3(&mul3(&rz, &ry), &rx)
}

/// Rodrigues' rotation of `v` about the angle-axis `w`: `v cos θ + (k × v) sin θ +
/// k (k·v)(1 − cos θ)`; the identity below `|w| = 1e-4`.
fn rodrigues(w: &[f64], v: [f64; 3]) -> [f64; 3] {
    let theta = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
    if theta < 1e-4 {
        return v;
    }
    let k = [w[0] / theta, w[1] / theta, w[2] / theta];
    let cross = [
        k[1] * v[2] - k[2] * v[1],
        k[2] * v[0] - k[0] * v[2],
        k[0] * v[1] - k[1] * v[0],
    ];
    let dot = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    let (s, c) = theta.sin_cos();
    [0, 1, 2].map(|i| v[i] * c + cross[i] * s + k[i] * dot * (1.0 - c))
}

fn block(flat: &[f64], b: usize) -> M4 {
    let mut m = [[0.0; 4]; 4];
    for i in 0..4 {
        for j in 0..4 {
            m[i][j] = flat[16 * b + 4 * i + j];
        }
    }
    m
}

/// The residuals re-derived from GradBench's definition with 4 × 4 arrays, finger
/// parameters placed by bone, and Rodrigues' formula.
fn ht_plain(p: &ht::Problem) -> Vec<f64> {
    let bones = p.parents.len();
    let vertices = p.base_positions.len() / 4;
    let t = &p.theta;
    // Finger f's first joint (bone 2 + 4f) takes two angles (x, z), the next two one (x).
    let mut angles = vec![[0.0; 3]; bones];
    for f in 0..5 {
        let at = 6 + 4 * f;
        angles[2 + 4 * f] = [t[at], t[at + 1], 0.0];
        angles[3 + 4 * f] = [t[at + 2], 0.0, 0.0];
        angles[4 + 4 * f] = [t[at + 3], 0.0, 0.0];
    }
    let mut absolutes: Vec<M4> = Vec::new();
    for b in 0..bones {
        let r = euler(&angles[b]);
        let mut pose = [[0.0; 4]; 4];
        for i in 0..3 {
            pose[i][..3].copy_from_slice(&r[i]);
        }
        pose[3][3] = 1.0;
        let relative = mul4(&block(&p.base_relatives, b), &pose);
        let absolute = if p.parents[b] == b {
            relative
        } else {
            mul4(&absolutes[p.parents[b]], &relative)
        };
        absolutes.push(absolute);
    }
    let transforms: Vec<M4> = (0..bones)
        .map(|b| mul4(&absolutes[b], &block(&p.inverse_base_absolutes, b)))
        .collect();
    let positions: Vec<[f64; 3]> = (0..vertices)
        .map(|v| {
            let base = &p.base_positions[4 * v..4 * v + 4];
            let mut x = [0.0; 3];
            for (b, m) in transforms.iter().enumerate() {
                for i in 0..3 {
                    let moved: f64 = (0..4).map(|k| m[i][k] * base[k]).sum();
                    x[i] += p.weights[b * vertices + v] * moved;
                }
            }
            if p.mirrored {
                x[0] = -x[0];
            }
            let r = rodrigues(&t[..3], x);
            [0, 1, 2].map(|i| r[i] + t[3 + i])
        })
        .collect();
    let mut err = Vec::new();
    for (i, &c) in p.correspondences.iter().enumerate() {
        let at = if p.us.is_empty() {
            positions[c]
        } else {
            let (u0, u1) = (p.us[2 * i], p.us[2 * i + 1]);
            let tri = &p.triangles[3 * c..3 * c + 3];
            [0, 1, 2].map(|j| {
                u0 * positions[tri[0]][j]
                    + u1 * positions[tri[1]][j]
                    + (1.0 - u0 - u1) * positions[tri[2]][j]
            })
        };
        err.extend((0..3).map(|j| p.points[3 * i + j] - at[j]));
    }
    err
}

#[test]
fn ht_objective_matches_a_plain_rederivation() {
    for complicated in [false, true] {
        for mirrored in [false, true] {
            for tiny_rotation in [false, true] {
                let mut p = ht_problem(16, 7, complicated, 3);
                p.mirrored = mirrored;
                if tiny_rotation {
                    p.theta[..3].copy_from_slice(&[2e-5, -3e-5, 1e-5]);
                }
                let (got, want) = (p.objective(), ht_plain(&p));
                assert_eq!(got.len(), 21);
                for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                        "ht (complicated {complicated}, mirrored {mirrored}, tiny rotation \
                         {tiny_rotation}) residual {r}: {g} vs {w}"
                    );
                }
            }
        }
    }
}

#[test]
fn ht_jacobian_matches_finite_differences() {
    for complicated in [false, true] {
        for tiny_rotation in [false, true] {
            let mut p = ht_problem(12, 5, complicated, 11);
            p.mirrored = complicated;
            if tiny_rotation {
                p.theta[..3].copy_from_slice(&[2e-5, -3e-5, 1e-5]);
            }
            let nu = p.us.len();
            // Near the identity (|w| < 1e-4) the rotation is the identity, a branch the
            // differences' step (1.2e-4) would cross: there the rotation's three entries
            // are held, and their columns are checked to be zero instead.
            let held = if tiny_rotation { 3 } else { 0 };
            let params = [&p.theta[held..], &p.us[..]].concat();
            let residuals = |v: &[f64]| {
                let mut theta = p.theta.clone();
                theta[held..].copy_from_slice(&v[..ht::THETA_LEN - held]);
                let q = ht::Problem {
                    theta,
                    us: v[ht::THETA_LEN - held..].to_vec(),
                    ..p.clone()
                };
                q.objective()
            };
            let jacobian = p.jacobian().output();
            let us_cols = if complicated { 2 } else { 0 };
            assert_eq!(jacobian.len(), 15);
            for (r, row) in jacobian.iter().enumerate() {
                assert_eq!(row.len(), us_cols + ht::THETA_LEN);
                // The dense row: theta's columns, then every u (only the row's point's
                // two are nonzero; the output keeps just those).
                let mut dense = row[us_cols + held..].to_vec();
                dense.extend(vec![0.0; nu]);
                if complicated {
                    let i = r / 3;
                    dense[ht::THETA_LEN - held + 2 * i] = row[0];
                    dense[ht::THETA_LEN - held + 2 * i + 1] = row[1];
                }
                check_fd(
                    &format!(
                        "ht row {r} (complicated {complicated}, tiny rotation {tiny_rotation})"
                    ),
                    &params,
                    |v| residuals(v)[r],
                    &dense,
                    FD,
                );
                if tiny_rotation {
                    assert_eq!(row[us_cols..us_cols + 3], [0.0; 3], "ht row {r}");
                }
            }
        }
    }
}

#[test]
fn ht_dot_product() {
    for complicated in [false, true] {
        let p = ht_problem(12, 5, complicated, 5);
        let nu = p.us.len();
        check_dot(
            &format!("ht (complicated {complicated})"),
            ht::THETA_LEN + nu,
            15,
            |v| p.tangent(&v[..ht::THETA_LEN], &v[ht::THETA_LEN..]),
            |y| {
                let (d_theta, d_us) = p.adjoint(y);
                [d_theta, d_us].concat()
            },
        );
    }
}

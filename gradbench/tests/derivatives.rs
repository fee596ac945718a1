//! Every eval's derivative against central finite differences, and — where forward and
//! reverse functions are both generated — the dot-product identity
//! `ȳ·(J ẋ) = (Jᵀ ȳ)·ẋ`; objective values against values computed independently
//! (closed forms, a different algorithm, or a plain re-derivation).
//!
//! Tolerances (`common`): finite differences `|g − fd| ≤ 1e-8 + 1e-6·max(|g|, |fd|)`; the
//! dot-product identity to 1e-12 relative; closed-form values to 1e-12 relative unless
//! stated. The `ht` eval has its own file, `ht.rs`.

#![allow(clippy::needless_range_loop)]

use common::{check_dot, check_fd, seeded, FD};
use phidiff::check::Tolerance;
use phidiff_gradbench::evals::{ba, det, gmm, hello, llsq, lse, lstm, ode};

mod common;

fn assert_close(what: &str, got: f64, want: f64, rel: f64) {
    let err = (got - want).abs();
    assert!(
        err <= rel * want.abs().max(1e-300),
        "{what}: got {got:e}, want {want:e} (|err| {err:e})"
    );
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
    // With p = 5 there are only 16 row offsets: all of them, then the final offset again
    // up to GradBench's 31 entries.
    assert_eq!(out.rows.len(), 31);
    assert_eq!(out.rows[..16], jacobian.rows[..]);
    assert!(out.rows[16..].iter().all(|&r| r == 31 * p.p));
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

//! The ADBench programs of the benchmark suite (`benches/support/`) against ADBench's
//! reference values on its test inputs, and their gradients against finite differences.

mod common;

#[path = "../benches/support/adbench.rs"]
mod adbench;
#[path = "../benches/support/gmm.rs"]
mod gmm;
#[path = "../benches/support/lstm.rs"]
mod lstm;

use common::*;

fn log_gamma_term(g: &adbench::Gmm) -> f64 {
    adbench::ln_multigamma(0.5 * (g.d + g.m + 1) as f64, g.d)
}

#[test]
fn ln_gamma_matches_known_values() {
    // Γ(n) = (n-1)!, Γ(1/2) = √π.
    for (z, want) in [
        (1.0, 0.0),
        (2.0, 0.0),
        (5.0, 24f64.ln()),
        (0.5, std::f64::consts::PI.sqrt().ln()),
        (10.5, 1_133_278.388_948_785_6_f64.ln()),
    ] {
        let got = adbench::ln_gamma(z);
        assert!(
            (got - want).abs() <= 1e-13 * want.abs().max(1.0),
            "ln Γ({z}) = {got}, want {want}"
        );
    }
}

#[test]
fn gmm_objective_matches_adbench_reference() {
    let g = adbench::read_gmm(&adbench::data("gmm/test.txt"));
    assert_eq!((g.d, g.k, g.n), (2, 3, 1));
    let lg = log_gamma_term(&g);
    let f = gmm::gmm_objective(
        &g.alphas, &g.means, &g.icf, &g.x, g.d, g.k, g.n, g.gamma, g.m, lg,
    );
    // ADBench's published reference objective for gmm/test.txt.
    let reference = 8.073_804_080_049_757_91;
    assert!(
        (f - reference).abs() <= 1e-12 * reference.abs(),
        "objective {f:.17} vs ADBench's {reference}"
    );
}

#[test]
fn gmm_gradient_passes_finite_differences() {
    for file in ["gmm/test.txt", "gmm/1k/gmm_d2_K5.txt"] {
        let g = adbench::read_gmm(&adbench::data(file));
        let lg = log_gamma_term(&g);
        let (na, nm) = (g.alphas.len(), g.means.len());
        let point = cat(&[&g.alphas, &g.means, &g.icf]);
        let f = |p: &[f64]| {
            gmm::gmm_objective(
                &p[..na],
                &p[na..na + nm],
                &p[na + nm..],
                &g.x,
                g.d,
                g.k,
                g.n,
                g.gamma,
                g.m,
                lg,
            )
        };
        check_grad(
            file,
            &point,
            &f,
            &|p| {
                let (mut da, mut dm, mut di) = (zeros(na), zeros(nm), zeros(p.len() - na - nm));
                let v = gmm::gmm_objective_rev(
                    &p[..na],
                    &mut da,
                    &p[na..na + nm],
                    &mut dm,
                    &p[na + nm..],
                    &mut di,
                    &g.x,
                    g.d,
                    g.k,
                    g.n,
                    g.gamma,
                    g.m,
                    lg,
                    1.0,
                );
                (v, cat(&[&da, &dm, &di]))
            },
            TOLS,
        );
    }
}

#[test]
fn lstm_objective_matches_adbench_reference() {
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    assert_eq!((p.l, p.c, p.b), (2, 1024, 14));
    let mut state = p.state.clone();
    let loss = lstm::lstm_objective(
        &p.main_params,
        &p.extra_params,
        &mut state,
        &p.sequence,
        p.l,
        p.c,
        p.b,
    );
    // ADBench's published reference objective for lstm_l2_c1024 (8 significant digits).
    let reference = 0.666_665_18;
    assert!(
        (loss - reference).abs() <= 5e-9,
        "loss {loss:.10} vs ADBench's {reference}"
    );
}

#[test]
fn lstm_gradient_passes_finite_differences() {
    // A shorter sequence of the same file keeps the finite differences quick.
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    let c = 6;
    let sequence = &p.sequence[..c * p.b];
    let nm = p.main_params.len();
    let point = cat(&[&p.main_params, &p.extra_params]);
    let f = |q: &[f64]| {
        let mut state = p.state.clone();
        lstm::lstm_objective(&q[..nm], &q[nm..], &mut state, sequence, p.l, c, p.b)
    };
    check_grad(
        "lstm (6 steps)",
        &point,
        &f,
        &|q| {
            let mut state = p.state.clone();
            let mut dstate = zeros(state.len());
            let (mut dm, mut de) = (zeros(nm), zeros(q.len() - nm));
            let v = lstm::lstm_objective_rev(
                &q[..nm],
                &mut dm,
                &q[nm..],
                &mut de,
                &mut state,
                &mut dstate,
                sequence,
                p.l,
                c,
                p.b,
                1.0,
            );
            (v, cat(&[&dm, &de]))
        },
        TOLS,
    );
}

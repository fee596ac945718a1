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

/// The GMM as users write it (`gmm::gmm_objective`) at flat parameters.
fn gmm_struct(g: &adbench::Gmm, p: &[f64], lg: f64) -> f64 {
    let (na, nm) = (g.alphas.len(), g.means.len());
    let theta = gmm::GmmParams::from_flat(&p[..na], &p[na..na + nm], &p[na + nm..], g.d);
    let x: Vec<Vec<f64>> = g.x.chunks(g.d).map(<[f64]>::to_vec).collect();
    let wishart = gmm::Wishart {
        gamma: g.gamma,
        m: g.m,
    };
    gmm::gmm_objective(&theta, &x, &wishart, lg)
}

#[test]
fn gmm_objective_matches_adbench_reference() {
    let g = adbench::read_gmm(&adbench::data("gmm/test.txt"));
    assert_eq!((g.d, g.k, g.n), (2, 3, 1));
    let lg = log_gamma_term(&g);
    let flat = gmm::gmm_objective_flat(
        &g.alphas, &g.means, &g.icf, &g.x, g.d, g.k, g.n, g.gamma, g.m, lg,
    );
    let point = cat(&[&g.alphas, &g.means, &g.icf]);
    // ADBench's published reference objective for gmm/test.txt.
    let reference = 8.073_804_080_049_757_91;
    for (form, f) in [("flat", flat), ("struct", gmm_struct(&g, &point, lg))] {
        assert!(
            (f - reference).abs() <= 1e-12 * reference.abs(),
            "{form} objective {f:.17} vs ADBench's {reference}"
        );
    }
}

/// The struct form's gradient (`_rev` into a `GmmParams` shadow) against central
/// differences; the flat form's equals the hand-written adjoint's, itself checked by
/// finite differences (`tests/adbench_hand_adjoints.rs`).
#[test]
fn gmm_gradient_passes_finite_differences() {
    for file in ["gmm/test.txt", "gmm/1k/gmm_d2_K5.txt"] {
        let g = adbench::read_gmm(&adbench::data(file));
        let lg = log_gamma_term(&g);
        let (na, nm) = (g.alphas.len(), g.means.len());
        let point = cat(&[&g.alphas, &g.means, &g.icf]);
        let x: Vec<Vec<f64>> = g.x.chunks(g.d).map(<[f64]>::to_vec).collect();
        let wishart = gmm::Wishart {
            gamma: g.gamma,
            m: g.m,
        };
        check_grad(
            file,
            &point,
            &|p| gmm_struct(&g, p, lg),
            &|p| {
                let theta =
                    gmm::GmmParams::from_flat(&p[..na], &p[na..na + nm], &p[na + nm..], g.d);
                let mut dtheta = phidiff::Differentiable::zero_like(&theta);
                let v = gmm::gmm_objective_rev(&theta, &mut dtheta, &x, &wishart, lg, 1.0);
                let mut grad = zeros(p.len());
                dtheta.write_flat(&mut grad);
                (v, grad)
            },
            TOLS,
        );
    }
}

/// The LSTM as users write it (`lstm::lstm_objective`) at flat parameters, over the first
/// `c` rows of the sequence.
fn lstm_struct(p: &adbench::Lstm, q: &[f64], c: usize) -> f64 {
    let nm = p.main_params.len();
    let layers = lstm::layers_from_flat(&q[..nm], p.b);
    let extra = lstm::extra_from_flat(&q[nm..], p.b);
    let mut state = lstm::state_from_flat(&p.state, p.b);
    let rows: Vec<Vec<f64>> = p.sequence[..c * p.b]
        .chunks(p.b)
        .map(<[f64]>::to_vec)
        .collect();
    lstm::lstm_objective(&layers, &extra, &mut state, &rows)
}

#[test]
fn lstm_objective_matches_adbench_reference() {
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    assert_eq!((p.l, p.c, p.b), (2, 1024, 14));
    let mut state = p.state.clone();
    let flat = lstm::lstm_objective_flat(
        &p.main_params,
        &p.extra_params,
        &mut state,
        &p.sequence,
        p.l,
        p.c,
        p.b,
    );
    let point = cat(&[&p.main_params, &p.extra_params]);
    // ADBench's published reference objective for lstm_l2_c1024 (8 significant digits).
    let reference = 0.666_665_18;
    for (form, loss) in [("flat", flat), ("struct", lstm_struct(&p, &point, p.c))] {
        assert!(
            (loss - reference).abs() <= 5e-9,
            "{form} loss {loss:.10} vs ADBench's {reference}"
        );
    }
}

/// The struct form's gradient against central differences (the flat form's equals the
/// hand-written adjoint's, `tests/adbench_hand_adjoints.rs`).
#[test]
fn lstm_gradient_passes_finite_differences() {
    // A shorter sequence of the same file keeps the finite differences quick.
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    let c = 6;
    let nm = p.main_params.len();
    let point = cat(&[&p.main_params, &p.extra_params]);
    let rows: Vec<Vec<f64>> = p.sequence[..c * p.b]
        .chunks(p.b)
        .map(<[f64]>::to_vec)
        .collect();
    check_grad(
        "lstm (6 steps)",
        &point,
        &|q| lstm_struct(&p, q, c),
        &|q| {
            use phidiff::Differentiable;
            let layers = lstm::layers_from_flat(&q[..nm], p.b);
            let extra = lstm::extra_from_flat(&q[nm..], p.b);
            let mut state = lstm::state_from_flat(&p.state, p.b);
            let mut dlayers: Vec<lstm::LstmLayer> = layers.iter().map(|l| l.zero_like()).collect();
            let mut dextra = extra.zero_like();
            let mut dstate: Vec<lstm::LayerState> = state.iter().map(|s| s.zero_like()).collect();
            let v = lstm::lstm_objective_rev(
                &layers,
                &mut dlayers,
                &extra,
                &mut dextra,
                &mut state,
                &mut dstate,
                &rows,
                1.0,
            );
            let mut grad = zeros(q.len());
            lstm::write_params(&dlayers, &dextra, &mut grad);
            (v, grad)
        },
        TOLS,
    );
}

//! The hand-written adjoints of the ADBench programs (`benches/support/*_hand.rs`, the
//! benchmarks' baseline) against phidiff's generated gradients and finite differences.

mod common;

#[path = "../benches/support/adbench.rs"]
mod adbench;
#[path = "../benches/support/gmm.rs"]
mod gmm;
#[path = "../benches/support/gmm_hand.rs"]
mod gmm_hand;
#[path = "../benches/support/lstm.rs"]
mod lstm;
#[path = "../benches/support/lstm_hand.rs"]
mod lstm_hand;

use common::*;
use phidiff::check;

const GMM_FILES: [&str; 3] = [
    "gmm/test.txt",
    "gmm/1k/gmm_d2_K5.txt",
    "gmm/1k/gmm_d10_K25.txt",
];

/// Two adjoints of the same function differ only by summation order, i.e. rounding.
const SAME_GRADIENT_REL: f64 = 1e-10;

/// Random directions per function for the finite-difference check.
const FD_DIRECTIONS: u64 = 3;

/// Hand-written and generated gradients agree entry by entry: `|h − g| ≤ 1e-10·|g|`,
/// with a floor of `1e-14·max|g|` for entries that cancel to about zero (their rounding
/// scales with the cancelled terms, not with the entry).
fn assert_same_gradient(what: &str, hand: &[f64], generated: &[f64]) {
    let scale = generated.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    assert_all_close(what, hand, generated, SAME_GRADIENT_REL, 1e-14 * scale);
}

/// `grad·v` equals the central-difference derivative of `f` along `v` for a few random
/// directions `v`, to the suite's finite-difference tolerance.
fn assert_directional_fd(what: &str, point: &[f64], f: &dyn Fn(&[f64]) -> f64, grad: &[f64]) {
    for seed in 0..FD_DIRECTIONS {
        let v = check::random_vector(7000 + seed, point.len());
        let fd = directional_fd(&|p| vec![f(p)], point, &v)[0];
        let dot: f64 = grad.iter().zip(&v).map(|(g, vi)| g * vi).sum();
        assert_close(
            &format!("{what}: gradient along direction {seed}"),
            dot,
            fd,
            TOLS.fd_rel,
            TOLS.fd_abs,
        );
    }
}

/// The ADBench GMM inputs, plus `gmm/test.txt` with `m = 3`: ADBench's files all have
/// `m = 0`, which leaves the prior's `−m·Σ_j q_kj` term (and its derivative) untested.
fn gmm_cases() -> Vec<(String, adbench::Gmm)> {
    let mut cases: Vec<(String, adbench::Gmm)> = GMM_FILES
        .iter()
        .map(|file| (file.to_string(), adbench::read_gmm(&adbench::data(file))))
        .collect();
    let mut with_m = adbench::read_gmm(&adbench::data("gmm/test.txt"));
    with_m.m = 3;
    cases.push(("gmm/test.txt with m = 3".to_string(), with_m));
    cases
}

fn log_gamma_term(g: &adbench::Gmm) -> f64 {
    adbench::ln_multigamma(0.5 * (g.d + g.m + 1) as f64, g.d)
}

/// `(objective, gradient)` of the hand-written GMM adjoint, flat as (alphas, means, icf).
fn gmm_hand(g: &adbench::Gmm, alphas: &[f64], means: &[f64], icf: &[f64]) -> (f64, Vec<f64>) {
    let (mut da, mut dm, mut di) = (zeros(alphas.len()), zeros(means.len()), zeros(icf.len()));
    let v = gmm_hand::gmm_objective_hand(
        alphas,
        means,
        icf,
        &g.x,
        g.d,
        g.k,
        g.n,
        g.gamma,
        g.m,
        log_gamma_term(g),
        &mut da,
        &mut dm,
        &mut di,
    );
    (v, cat(&[&da, &dm, &di]))
}

#[test]
fn gmm_hand_adjoint_equals_generated_gradient() {
    for (file, g) in gmm_cases() {
        let lg = log_gamma_term(&g);
        let primal = gmm::gmm_objective_flat(
            &g.alphas, &g.means, &g.icf, &g.x, g.d, g.k, g.n, g.gamma, g.m, lg,
        );
        let (hand_value, hand) = gmm_hand(&g, &g.alphas, &g.means, &g.icf);
        let (mut da, mut dm, mut di) = (zeros(g.k), zeros(g.means.len()), zeros(g.icf.len()));
        gmm::gmm_objective_flat_rev(
            &g.alphas, &mut da, &g.means, &mut dm, &g.icf, &mut di, &g.x, g.d, g.k, g.n, g.gamma,
            g.m, lg, 1.0,
        );
        assert_close(
            &format!("{file}: objective"),
            hand_value,
            primal,
            1e-14,
            0.0,
        );
        assert_same_gradient(&format!("{file}: gradient"), &hand, &cat(&[&da, &dm, &di]));
    }
}

/// The GMM as users write it (a parameter struct, rows, a helper call, iterator chains):
/// its objective and `_rev` gradient equal the hand-written adjoint's, which shares none of
/// its code and passes finite differences below.
#[test]
fn gmm_struct_form_equals_hand_adjoint() {
    for (file, g) in gmm_cases() {
        let lg = log_gamma_term(&g);
        let theta = gmm::GmmParams::from_flat(&g.alphas, &g.means, &g.icf, g.d);
        let x: Vec<Vec<f64>> = g.x.chunks(g.d).map(<[f64]>::to_vec).collect();
        let wishart = gmm::Wishart {
            gamma: g.gamma,
            m: g.m,
        };
        let (hand_value, hand) = gmm_hand(&g, &g.alphas, &g.means, &g.icf);
        let primal = gmm::gmm_objective(&theta, &x, &wishart, lg);
        let mut dtheta = phidiff::Differentiable::zero_like(&theta);
        let v = gmm::gmm_objective_rev(&theta, &mut dtheta, &x, &wishart, lg, 1.0);
        assert_close(&format!("{file}: struct objective"), v, primal, 0.0, 0.0);
        assert_close(
            &format!("{file}: struct objective vs hand"),
            primal,
            hand_value,
            1e-13,
            0.0,
        );
        let mut flat = zeros(hand.len());
        dtheta.write_flat(&mut flat);
        assert_same_gradient(&format!("{file}: struct gradient vs hand"), &hand, &flat);
        // `_grad` returns the struct.
        let (gv, grad) = gmm::gmm_objective_grad(&theta, &x, &wishart, lg);
        assert_eq!(
            (gv, &grad),
            (v, &dtheta),
            "{file}: _grad is _rev with seed 1"
        );
    }
}

#[test]
fn gmm_hand_adjoint_passes_finite_differences() {
    for (file, g) in gmm_cases() {
        let lg = log_gamma_term(&g);
        let (na, nm) = (g.alphas.len(), g.means.len());
        let point = cat(&[&g.alphas, &g.means, &g.icf]);
        let f = |p: &[f64]| {
            let (alphas, rest) = p.split_at(na);
            let (means, icf) = rest.split_at(nm);
            gmm::gmm_objective_flat(alphas, means, icf, &g.x, g.d, g.k, g.n, g.gamma, g.m, lg)
        };
        let (_, hand) = gmm_hand(&g, &g.alphas, &g.means, &g.icf);
        assert_directional_fd(&file, &point, &f, &hand);
    }
}

/// The hand-written LSTM adjoint from `d_state_seed` (the adjoint of the final state):
/// `(objective, final state, gradient)`, the gradient flat as (main, extra, initial state).
fn lstm_hand(p: &adbench::Lstm, d_state_seed: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let mut state = p.state.clone();
    let mut d_state = d_state_seed.to_vec();
    let (mut dm, mut de) = (zeros(p.main_params.len()), zeros(p.extra_params.len()));
    let v = lstm_hand::lstm_objective_hand(
        &p.main_params,
        &p.extra_params,
        &mut state,
        &p.sequence,
        p.l,
        p.c,
        p.b,
        &mut dm,
        &mut de,
        &mut d_state,
    );
    (v, state, cat(&[&dm, &de, &d_state]))
}

/// The LSTM as users write it (slices of layer and state structs walked together, the
/// sequence as rows, a `sigmoid` closure): objective, final state and `_rev` gradient (plain,
/// and with a random seed on the final state) equal the hand-written adjoint's.
#[test]
fn lstm_struct_form_equals_hand_adjoint() {
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    let layers = lstm::layers_from_flat(&p.main_params, p.b);
    let extra = lstm::extra_from_flat(&p.extra_params, p.b);
    let sequence: Vec<Vec<f64>> = p.sequence.chunks(p.b).map(<[f64]>::to_vec).collect();
    let seeds = [
        zeros(p.state.len()),
        check::random_vector(7100, p.state.len()),
    ];
    for (n, seed) in seeds.iter().enumerate() {
        let (hand_value, hand_state, hand) = lstm_hand(&p, seed);
        let mut state = lstm::state_from_flat(&p.state, p.b);
        let mut d_state = lstm::state_from_flat(seed, p.b);
        let mut dlayers: Vec<lstm::LstmLayer> = layers
            .iter()
            .map(phidiff::Differentiable::zero_like)
            .collect();
        let mut dextra = phidiff::Differentiable::zero_like(&extra);
        let v = lstm::lstm_objective_rev(
            &layers,
            &mut dlayers,
            &extra,
            &mut dextra,
            &mut state,
            &mut d_state,
            &sequence,
            1.0,
        );
        let what = format!("lstm_l2_c1024 as users write it (final-state seed {n})");
        assert_close(&format!("{what}: objective"), v, hand_value, 1e-13, 0.0);
        let mut flat_state = zeros(p.state.len());
        lstm::write_state(&state, &mut flat_state);
        assert_all_close(
            &format!("{what}: final state"),
            &flat_state,
            &hand_state,
            1e-13,
            0.0,
        );
        // (main, extra, initial state), the hand adjoint's layout.
        let n_params = hand.len() - p.state.len();
        let mut g = zeros(hand.len());
        lstm::write_params(&dlayers, &dextra, &mut g[..n_params]);
        lstm::write_state(&d_state, &mut g[n_params..]);
        assert_same_gradient(&format!("{what}: gradient"), &hand, &g);
    }
}

#[test]
fn lstm_hand_adjoint_equals_generated_gradient() {
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    let mut primal_state = p.state.clone();
    let primal = lstm::lstm_objective_flat(
        &p.main_params,
        &p.extra_params,
        &mut primal_state,
        &p.sequence,
        p.l,
        p.c,
        p.b,
    );
    // The plain gradient (no seed on the final state), then a full vector-Jacobian product
    // with a random seed on the final state, which checks the `&mut` convention too.
    let seeds = [
        zeros(p.state.len()),
        check::random_vector(7100, p.state.len()),
    ];
    for (n, seed) in seeds.iter().enumerate() {
        let (hand_value, hand_state, hand) = lstm_hand(&p, seed);
        let mut state = p.state.clone();
        let mut d_state = seed.clone();
        let (mut dm, mut de) = (zeros(p.main_params.len()), zeros(p.extra_params.len()));
        lstm::lstm_objective_flat_rev(
            &p.main_params,
            &mut dm,
            &p.extra_params,
            &mut de,
            &mut state,
            &mut d_state,
            &p.sequence,
            p.l,
            p.c,
            p.b,
            1.0,
        );
        let what = format!("lstm_l2_c1024 (final-state seed {n})");
        assert_close(
            &format!("{what}: objective"),
            hand_value,
            primal,
            1e-14,
            0.0,
        );
        assert_all_close(
            &format!("{what}: final state"),
            &hand_state,
            &primal_state,
            1e-14,
            0.0,
        );
        assert_same_gradient(
            &format!("{what}: gradient"),
            &hand,
            &cat(&[&dm, &de, &d_state]),
        );
    }
}

#[test]
fn lstm_hand_adjoint_passes_finite_differences() {
    let p = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    let (nm, ne) = (p.main_params.len(), p.extra_params.len());
    let point = cat(&[&p.main_params, &p.extra_params, &p.state]);
    let f = |q: &[f64]| {
        let (main, rest) = q.split_at(nm);
        let (extra, initial) = rest.split_at(ne);
        let mut state = initial.to_vec();
        lstm::lstm_objective_flat(main, extra, &mut state, &p.sequence, p.l, p.c, p.b)
    };
    let (_, _, hand) = lstm_hand(&p, &zeros(p.state.len()));
    assert_directional_fd("lstm_l2_c1024", &point, &f, &hand);
}

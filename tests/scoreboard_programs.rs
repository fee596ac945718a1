//! The scoreboard's own programs and hand-written adjoints (`benches/support/burgers2d.rs`,
//! the rayon stencil of `parallel_programs.rs`, GradBench's `llsq` and `ode` in
//! `gradbench_hand.rs`): each gradient against central finite differences, and the
//! hand-written adjoints equal to phidiff's.

mod common;

#[path = "../benches/support/burgers2d.rs"]
mod burgers2d;
#[path = "../benches/support/gradbench_hand.rs"]
mod gradbench_hand;
#[path = "../benches/support/parallel_programs.rs"]
mod parallel_programs;

use common::*;

// A small grid with both upwind branches; ν·dt and dt keep the explicit step stable.
const M: usize = 6;
const N: usize = 7;
const NU: f64 = 0.01;
const DT: f64 = 0.01;
const STEPS: usize = 12;

#[test]
fn burgers2d_gradients_pass_finite_differences_and_match_the_hand_adjoint() {
    let u0 = burgers2d::initial(M, N);
    assert!(u0.iter().any(|&v| v > 0.0) && u0.iter().any(|&v| v < 0.0));
    let f = |u: &[f64]| burgers2d::burgers2d_full(u, N, NU, DT, STEPS);
    let full = check_grad(
        "burgers2d_full",
        &u0,
        &f,
        &|u| {
            let mut g = zeros(u.len());
            (
                burgers2d::burgers2d_full_rev(u, &mut g, N, NU, DT, STEPS, 1.0),
                g,
            )
        },
        TOLS,
    );
    for snaps in [1, 3, STEPS] {
        let revolve = check_grad(
            &format!("burgers2d_revolve({snaps} snapshots)"),
            &u0,
            &f,
            &|u| {
                let mut g = zeros(u.len());
                let v = burgers2d::burgers2d_revolve_rev(u, &mut g, N, NU, DT, STEPS, snaps, 1.0);
                (v, g)
            },
            TOLS,
        );
        assert_rel("Revolve vs full tape", &revolve, &full, 1e-12);
        let mut hand = zeros(u0.len());
        let v = burgers2d::burgers2d_hand_revolve(&u0, &mut hand, N, NU, DT, STEPS, snaps, 1.0);
        assert_close("burgers2d_hand_revolve value", v, f(&u0), 1e-14, 0.0);
        assert_rel(
            &format!("burgers2d_hand_revolve({snaps} snapshots) vs phidiff"),
            &hand,
            &full,
            1e-12,
        );
    }
    let mut hand = zeros(u0.len());
    let v = burgers2d::burgers2d_hand(&u0, &mut hand, N, NU, DT, STEPS, 1.0);
    assert_close("burgers2d_hand value", v, f(&u0), 1e-14, 0.0);
    assert_rel("burgers2d_hand vs phidiff", &hand, &full, 1e-12);
}

#[test]
fn rayon_stencil_hand_adjoint_matches_phidiff_and_finite_differences() {
    let (m, n, r) = (9, 8, 0.2);
    let u = parallel_programs::field(m * n);
    let f = |u: &[f64]| {
        let mut out = zeros(u.len());
        parallel_programs::heat2d_field(u, &mut out, r, n)
    };
    let generated = check_grad(
        "heat2d_field",
        &u,
        &f,
        &|u| {
            let (mut g, mut out, mut dout) = (zeros(u.len()), zeros(u.len()), zeros(u.len()));
            let v = parallel_programs::heat2d_field_rev(u, &mut g, &mut out, &mut dout, r, n, 1.0);
            (v, g)
        },
        TOLS,
    );
    let (mut hand, mut out) = (zeros(u.len()), zeros(u.len()));
    let v = burgers2d::heat2d_hand(&u, &mut out, &mut hand, r, n, 1.0);
    assert_close("heat2d_hand value", v, f(&u), 1e-13, 0.0);
    assert_rel("heat2d_hand vs phidiff", &hand, &generated, 1e-12);
}

/// GradBench's `llsq` and `ode` at sizes where the gradients are far from zero (for
/// GradBench's larger `ode` inputs `y(2)`'s last element underflows): the GradBench tool's
/// phidiff gradients against finite differences, and the hand-written ones against them.
#[test]
fn gradbench_llsq_and_ode_hand_gradients_match_phidiff() {
    use phidiff_gradbench::evals::{llsq, ode};
    let x: Vec<f64> = phidiff::check::random_vector(31, 7)
        .iter()
        .map(|v| 0.5 + 0.5 * v)
        .collect();
    for n in [2, 9, 40] {
        let g = check_grad(
            &format!("llsq n = {n}"),
            &x,
            &|x| llsq::llsq(x, n),
            &|x| llsq::llsq_grad(x, n),
            TOLS,
        );
        let mut hand = zeros(x.len());
        let v = gradbench_hand::llsq_grad(&x, n, &mut hand);
        assert_close("llsq hand value", v, llsq::llsq(&x, n), 1e-14, 0.0);
        assert_rel(&format!("llsq hand (n = {n}) vs phidiff"), &hand, &g, 1e-12);
    }
    let x: Vec<f64> = phidiff::check::random_vector(32, 12)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    for s in [3, 5, 20] {
        let last = |x: &[f64]| ode::primal(x, s)[x.len() - 1];
        let g = check_grad(
            &format!("ode s = {s}"),
            &x,
            &last,
            &|x| (last(x), ode::gradient(x, s)),
            TOLS,
        );
        // From y(0) = 0 a step carries the solution four components on (one per stage):
        // after 3 steps the last of 12 elements depends on every x.
        let reached = g.iter().filter(|v| v.abs() > 1e-8).count();
        assert_eq!(reached, x.len(), "ode s = {s}: components reached");
        let mut hand = zeros(x.len());
        let v = gradbench_hand::ode_grad(&x, s, &mut hand);
        assert_close("ode hand value", v, last(&x), 1e-14, 0.0);
        assert_rel(&format!("ode hand (s = {s}) vs phidiff"), &hand, &g, 1e-12);
    }
}

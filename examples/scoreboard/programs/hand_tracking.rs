//! The scoreboard's hand-tracking program (GradBench's `ht` on a synthetic hand).

use super::{dot, norm, peers, record, rel_err, Bench, Inputs, Peer, Timer};
use crate::ht_hand::ht_jacobian_hand;
use num_dual::Dual64;
use phidiff_gradbench::evals::ht;
use std::rc::Rc;

/// Hand tracking (GradBench's `ht`, simple) on a synthetic hand of ADBench's shape (22
/// bones; ADBench's model files are not among its inputs): the dense `3n × 26` Jacobian of
/// the residuals. phidiff: 2 sweeps of the generated batched `_fwd13`, 13 columns each
/// (`phidiff_gradbench::evals::ht`, its GradBench tool's code). Hand-written: `ht_hand.rs`
/// (a column re-skins only the bones it moves). Finite differences and num-dual: one
/// column per run (†). JAX and PyTorch: `jacfwd` (`benches/peers/jax_torch.py`). echidna: the residuals recorded once on its bytecode
/// tape, then the Jacobian by one forward sweep of that tape per column
/// (`BytecodeTape::jacobian_forward`; its reverse sweeps, one per row, took over 20× as long
/// here). The tape is recorded before timing and reused, as a user of it would, since the
/// one branch it records (the rotation's `|w| < 1e-4`) does not change.
pub(super) fn ht_bench(inputs: &mut Inputs) -> Bench {
    let (vertices, points) = if inputs.quick { (60, 40) } else { (544, 1000) };
    let p = Rc::new(ht::synthetic(vertices, points, false, 1));
    let rows = 3 * points;
    let cols = ht::THETA_LEN;
    let path = write_ht(inputs, &p);
    record(inputs, "ht_simple", "ht", &path, "");
    let ours = p.jacobian();
    assert_eq!(ours.columns.len(), rows * cols);
    let residuals = p.objective();
    let scale = ours.columns.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    // `got(r, c)` against phidiff's column-major Jacobian.
    let check = |name: &str, got: &dyn Fn(usize, usize) -> f64, tol: f64| {
        let mut worst = 0.0_f64;
        for c in 0..cols {
            for r in 0..rows {
                worst = worst.max((got(r, c) - ours.columns[c * rows + r]).abs());
            }
        }
        assert!(
            worst <= tol * scale,
            "hand tracking: {name}'s Jacobian differs from phidiff's by {worst:e} (max \
             entry {scale:e}, tolerance {tol:e} of it)"
        );
    };

    // Column `c` by central differences, moving `q.theta[c]` and putting it back.
    let column_fd = |q: &mut ht::Problem, c: usize| -> Vec<f64> {
        let t = q.theta[c];
        let h = 1e-6 * t.abs().max(1.0);
        q.theta[c] = t + h;
        let up = q.objective();
        q.theta[c] = t - h;
        let down = q.objective();
        q.theta[c] = t;
        up.iter()
            .zip(&down)
            .map(|(a, b)| (a - b) / (2.0 * h))
            .collect()
    };
    let mut q = (*p).clone();
    let fd: Vec<Vec<f64>> = (0..cols).map(|c| column_fd(&mut q, c)).collect();
    check("finite differences'", &|r, c| fd[c][r], 1e-6);

    let column_dual = |p: &ht::Problem, c: usize| -> Vec<f64> {
        let mut theta: Vec<Dual64> = p.theta.iter().map(|&t| Dual64::from_re(t)).collect();
        theta[c].eps = 1.0;
        peers::ht(&theta, &[], &hand_model(p))
            .iter()
            .map(|e| e.eps)
            .collect()
    };
    let dual: Vec<Vec<f64>> = (0..cols).map(|c| column_dual(&p, c)).collect();
    check("num-dual", &|r, c| dual[c][r], 1e-10);

    let mut hand = vec![0.0; rows * cols];
    let hand_residuals = ht_jacobian_hand(&p, &mut hand);
    assert!(
        rel_err(&hand_residuals, &residuals) <= 1e-12,
        "hand tracking: the hand-written residuals differ from phidiff's"
    );
    check("the hand-written", &|r, c| hand[c * rows + r], 1e-10);

    let (tape, values) = echidna::record_multi(
        |t: &[echidna::BReverse<f64>]| peers::ht(t, &[], &hand_model(&p)),
        &p.theta,
    );
    assert!(
        rel_err(&values, &residuals) <= 1e-12,
        "hand tracking: echidna's residuals differ from phidiff's"
    );
    let ech = tape.jacobian_forward(&p.theta);
    check("echidna", &|r, c| ech[r][c], 1e-10);

    let primal = {
        let p = p.clone();
        Timer::new(move || p.objective()[0])
    };
    let ours_timer = {
        let p = p.clone();
        Timer::new(move || p.jacobian().columns[0])
    };
    let hand_timer = {
        let p = p.clone();
        Timer::new(move || ht_jacobian_hand(&p, &mut hand)[0])
    };
    let fd_timer = Timer::new(move || column_fd(&mut q, 6)[0]);
    let dual_timer = {
        let p = p.clone();
        Timer::new(move || column_dual(&p, 6)[0])
    };
    let echidna_timer = {
        let theta = p.theta.clone();
        Timer::new(move || tape.jacobian_forward(&theta)[0][0])
    };
    Bench {
        title: "Hand tracking (synthetic hand), Jacobian".into(),
        size: format!("{vertices} vertices, n={points}, {rows} × {cols}"),
        key: "ht_simple".into(),
        value: 0.5 * dot(&residuals, &residuals),
        grad_norm: norm(&ours.columns),
        primal,
        ours: ours_timer,
        peers: vec![
            (Peer::Hand, hand_timer, 1.0),
            (Peer::Fd, fd_timer, cols as f64),
            (Peer::Echidna, echidna_timer, 1.0),
            (Peer::NumDual, dual_timer, cols as f64),
        ],
    }
}

/// The peers' view of `p`'s model.
fn hand_model(p: &ht::Problem) -> peers::HandModel<'_> {
    peers::HandModel {
        parents: &p.parents,
        base_relatives: &p.base_relatives,
        inverse_base_absolutes: &p.inverse_base_absolutes,
        base_positions: &p.base_positions,
        weights: &p.weights,
        mirrored: p.mirrored,
        triangles: &p.triangles,
        correspondences: &p.correspondences,
        points: &p.points,
    }
}

/// The problem for the Python peers, one number per line: `bones vertices points
/// mirrored`, then the parents (a root its own), base relatives and inverse base
/// absolutes (4 × 4 row-major per bone), base positions (4 per vertex), weights (by bone),
/// correspondences, points (3 each) and `theta`.
fn write_ht(inputs: &Inputs, p: &ht::Problem) -> std::path::PathBuf {
    assert!(
        !p.complicated(),
        "hand tracking: the Python peers take simple inputs"
    );
    let header = [
        p.parents.len(),
        p.base_positions.len() / 4,
        p.correspondences.len(),
        usize::from(p.mirrored),
    ];
    let indices = |v: &[usize]| v.iter().map(|&i| i as f64).collect::<Vec<f64>>();
    let values = [
        indices(&header),
        indices(&p.parents),
        p.base_relatives.clone(),
        p.inverse_base_absolutes.clone(),
        p.base_positions.clone(),
        p.weights.clone(),
        indices(&p.correspondences),
        p.points.clone(),
        p.theta.clone(),
    ]
    .concat();
    inputs.write("ht_simple.txt", &values)
}

//! ADBench's bundle adjustment (`benches/support/ba.rs`): the residuals against ADBench's
//! reference values and an independent re-derivation, the phidiff Jacobian against
//! ADBench's reference values and central finite differences, the generated `_fwd` and
//! `_rev` against each other (dot-product test), and the hand-written Jacobian against
//! phidiff's.

// ADBench's reference values are quoted with the digits it prints.
#![allow(clippy::excessive_precision)]

mod common;

#[path = "../benches/support/adbench.rs"]
mod adbench;
#[path = "../benches/support/ba.rs"]
mod ba;

use adbench::Ba;
use ba::{SparseJ, N_CAM, N_ROW};
use common::*;
use phidiff::check;

fn test_problem() -> Ba {
    adbench::read_ba(&adbench::data("ba/test.txt"))
}

fn ba1() -> Ba {
    adbench::read_ba(&adbench::data("ba/ba1_n49_m7776_p31843.txt"))
}

/// `test.txt` with every camera's rotation set to zero: the `θ = 0` branch.
fn zero_rotation_problem() -> Ba {
    let mut ba = test_problem();
    for cam in ba.cams.chunks_exact_mut(N_CAM) {
        cam[..3].fill(0.0);
    }
    ba
}

fn residuals(ba: &Ba) -> Vec<f64> {
    let mut out = zeros(3 * ba.p);
    ba::ba_residuals(ba, &mut out);
    out
}

fn jacobian(ba: &Ba, fill: fn(&Ba, &mut SparseJ)) -> SparseJ {
    let mut j = SparseJ::new(ba);
    fill(ba, &mut j);
    j
}

#[test]
fn reader_tiles_the_one_observation_like_adbench() {
    let ba = test_problem();
    assert_eq!((ba.n, ba.m, ba.p), (2, 10, 10));
    assert_eq!(ba.cams[..N_CAM], ba.cams[N_CAM..]);
    assert_eq!(ba.cams[6], 211.628116);
    assert_eq!(ba.x[27..30], [4.173048, 5.586898, 1.403869]);
    assert_eq!(ba.w, vec![0.417022; 10]);
    assert_eq!(ba.feats[18..20], [-525.672849, 161.811929]);
    // Observation i sees camera i mod n and point i mod m.
    assert_eq!(ba.obs[..8], [0, 0, 1, 1, 0, 2, 1, 3]);
    let big = ba1();
    assert_eq!((big.n, big.m, big.p), (49, 7776, 31843));
    assert_eq!(big.obs[2 * 31842..], [31842 % 49, 31842 % 7776]);
}

#[test]
fn residuals_match_adbench_reference() {
    // ADBench's module tests (`test/cpp/modules/common/BaTests.cpp`) on this input: every
    // observation has the same residuals. ADBench checks them to 1e-6; the values are
    // printed to 18 digits, so rounding of a differently ordered evaluation is the only
    // difference left and 1e-12 relative bounds it.
    let ba = test_problem();
    let r = residuals(&ba);
    for i in 0..ba.p {
        assert_rel(
            &format!("reprojection error {i}"),
            &r[2 * i..2 * i + 2],
            &[-2.690_488_492_351_894_02e-1, 2.599_447_926_779_018_81e-1],
            1e-12,
        );
        assert_rel(
            &format!("weight error {i}"),
            &r[2 * ba.p + i..2 * ba.p + i + 1],
            &[8.260_926_515_159_999_76e-1],
            1e-12,
        );
    }
}

/// The reprojection error from the rotation matrix `R = I + sin θ·K + (1 − cos θ)·K²`
/// (`K` the cross-product matrix of `r/θ`), an independent form of the same rotation.
fn reproj_by_rotation_matrix(cam: &[f64], x: &[f64], w: f64, feat: &[f64]) -> [f64; 2] {
    let theta = (cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2]).sqrt();
    let (a, b, c) = (cam[0] / theta, cam[1] / theta, cam[2] / theta);
    let k = [[0.0, -c, b], [c, 0.0, -a], [-b, a, 0.0]];
    let mut rot = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            let k2: f64 = (0..3).map(|l| k[i][l] * k[l][j]).sum();
            rot[i][j] =
                f64::from(u8::from(i == j)) + theta.sin() * k[i][j] + (1.0 - theta.cos()) * k2;
        }
    }
    let p: Vec<f64> = (0..3).map(|i| x[i] - cam[3 + i]).collect();
    let q: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| rot[i][j] * p[j]).sum())
        .collect();
    let (u, v) = (q[0] / q[2], q[1] / q[2]);
    let s = u * u + v * v;
    let l = 1.0 + cam[9] * s + cam[10] * s * s;
    [
        w * (cam[6] * l * u + cam[7] - feat[0]),
        w * (cam[6] * l * v + cam[8] - feat[1]),
    ]
}

#[test]
fn residuals_match_rotation_matrix_form() {
    for ba in [test_problem(), ba1()] {
        let r = residuals(&ba);
        for i in [0, 1, ba.p / 2, ba.p - 1] {
            let (c, p) = (ba.obs[2 * i], ba.obs[2 * i + 1]);
            let want = reproj_by_rotation_matrix(
                &ba.cams[N_CAM * c..N_CAM * (c + 1)],
                &ba.x[3 * p..3 * p + 3],
                ba.w[i],
                &ba.feats[2 * i..2 * i + 2],
            );
            // A residual is the difference of pixel coordinates of order |feat|, so the
            // two forms round differently by about ε·|feat|; 1e-12·|feat| bounds it.
            let pixels = ba.feats[2 * i].abs().max(ba.feats[2 * i + 1].abs());
            assert_all_close(
                &format!("observation {i} of {} observations", ba.p),
                &r[2 * i..2 * i + 2],
                &want,
                1e-12,
                1e-12 * ba.w[i] * pixels,
            );
            assert_close(
                "weight error",
                r[2 * ba.p + i],
                1.0 - ba.w[i] * ba.w[i],
                0.0,
                0.0,
            );
        }
    }
}

#[test]
fn jacobian_matches_adbench_reference() {
    // ADBench's module tests on this input (the first two rows' values, the last three
    // weight derivatives); tolerance as for the residuals.
    let j = jacobian(&test_problem(), ba::ba_jacobian);
    assert_eq!((j.nrows, j.ncols), (30, 62));
    assert_eq!((j.rows.len(), j.cols.len(), j.vals.len()), (31, 310, 310));
    let reference = [
        2.288_772_022_082_467_57e2,
        6.345_748_114_955_454_18e2,
        -7.822_228_662_593_405_49e2,
        2.428_926_156_071_596_68,
        -1.178_280_796_280_113_13e1,
        2.541_693_124_877_434_60,
        -1.036_570_849_585_180_86,
        4.170_220_000_000_000_04e-1,
        0.0,
        -3.507_395_210_960_052_05e2,
        -9.121_077_736_680_085_76e2,
        -2.428_926_156_071_596_68,
        1.178_280_796_280_113_13e1,
    ];
    assert_rel("J.vals[0..13]", &j.vals[..13], &reference, 1e-12);
    assert_rel("J.vals[307..310]", &j.vals[307..], &[-8.34044e-1; 3], 1e-15);
}

#[test]
fn jacobian_pattern_is_adbench_layout() {
    let ba = test_problem();
    let j = SparseJ::new(&ba);
    let (n, m, p) = (ba.n, ba.m, ba.p);
    for i in 0..p {
        let (c, pt) = (i % n, i % m);
        let mut want: Vec<usize> = (11 * c..11 * c + 11).collect();
        want.extend(11 * n + 3 * pt..11 * n + 3 * pt + 3);
        want.push(11 * n + 3 * m + i);
        for row in [2 * i, 2 * i + 1] {
            assert_eq!(j.rows[row], row * N_ROW);
            assert_eq!(j.cols[j.rows[row]..j.rows[row + 1]], want[..], "row {row}");
        }
        let row = 2 * p + i;
        assert_eq!(j.cols[j.rows[row]..j.rows[row + 1]], [11 * n + 3 * m + i]);
    }
    assert_eq!(j.rows[3 * p], j.cols.len());
}

/// All parameters of `ba` as one flat vector: cameras, points, weights.
fn flat_parameters(ba: &Ba) -> Vec<f64> {
    cat(&[&ba.cams, &ba.x, &ba.w])
}

fn with_parameters(ba: &Ba, flat: &[f64]) -> Ba {
    let parts = split(flat, &[ba.cams.len(), ba.x.len(), ba.w.len()]);
    Ba {
        cams: parts[0].to_vec(),
        x: parts[1].to_vec(),
        w: parts[2].to_vec(),
        obs: ba.obs.clone(),
        feats: ba.feats.clone(),
        ..*ba
    }
}

#[test]
fn jacobian_passes_finite_differences() {
    // Every entry of the dense Jacobian, zeros outside the pattern included, against
    // central differences with Richardson extrapolation (about 1e-10 relative here). The
    // derivatives reach 1e3 and the parameters 2e2, so the rounding of the differences
    // is about 1e-9 absolute; |d − fd| ≤ 1e-7 + 1e-7·|fd| leaves two orders of margin.
    for (name, ba) in [
        ("test.txt", test_problem()),
        ("test.txt, zero rotations", zero_rotation_problem()),
    ] {
        let j = jacobian(&ba, ba::ba_jacobian).to_dense();
        let point = flat_parameters(&ba);
        for row in 0..3 * ba.p {
            let fd = check::finite_difference(|q| residuals(&with_parameters(&ba, q))[row], &point);
            assert_all_close(
                &format!("{name}: Jacobian row {row}"),
                &j[row * point.len()..(row + 1) * point.len()],
                &fd,
                1e-7,
                1e-7,
            );
        }
    }
}

#[test]
fn hand_jacobian_equals_phidiff_jacobian() {
    // Two derivations of the same closed form in different evaluation orders: they agree
    // to rounding, bounded by 1e-12 of the row's largest entry.
    for (name, ba) in [
        ("test.txt", test_problem()),
        ("test.txt, zero rotations", zero_rotation_problem()),
        ("ba1", ba1()),
    ] {
        let ad = jacobian(&ba, ba::ba_jacobian);
        let hand = jacobian(&ba, ba::ba_jacobian_hand);
        assert_eq!((&ad.rows, &ad.cols), (&hand.rows, &hand.cols));
        for row in 0..ad.nrows {
            let range = ad.rows[row]..ad.rows[row + 1];
            let scale = ad.vals[range.clone()]
                .iter()
                .fold(0.0_f64, |a, v| a.max(v.abs()));
            assert_all_close(
                &format!("{name}: hand Jacobian row {row}"),
                &hand.vals[range.clone()],
                &ad.vals[range],
                0.0,
                1e-12 * scale,
            );
        }
    }
}

/// The struct form (`Camera`, arrays, a tuple chosen by `if`) and the flat form as first
/// written give the same Jacobian (rounding apart: `sin_cos`, the order of a few sums).
#[test]
fn struct_and_flat_forms_agree() {
    for (name, ba) in [
        ("test.txt", test_problem()),
        ("zero rotation", zero_rotation_problem()),
    ] {
        let a = jacobian(&ba, ba::ba_jacobian);
        let b = jacobian(&ba, ba::ba_jacobian_flat);
        let scale = b.vals.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        assert_all_close(name, &a.vals, &b.vals, 1e-13, 1e-15 * scale);
    }
}

/// The flat inputs of one reprojection: camera (11), point (3), weight, and the initial
/// `err` (2, overwritten); the output is the final `err`.
const REPROJ_LENS: [usize; 4] = [N_CAM, 3, 1, 2];

/// The camera struct of eleven numbers, and back.
fn cam(p: &[f64]) -> ba::Camera {
    ba::Camera::from_params(p)
}

fn params(c: &ba::Camera) -> Vec<f64> {
    let mut v = zeros(N_CAM);
    c.write_params(&mut v);
    v
}

fn a3(v: &[f64]) -> [f64; 3] {
    v.try_into().expect("3 numbers")
}

fn a2(v: &[f64]) -> [f64; 2] {
    v.try_into().expect("2 numbers")
}

fn reproj_primal(feat: &[f64], x: &[f64]) -> Vec<f64> {
    let p = split(x, &REPROJ_LENS);
    let mut err = a2(p[3]);
    ba::reproj_error(&cam(p[0]), &a3(p[1]), p[2][0], &a2(feat), &mut err);
    err.to_vec()
}

fn reproj_jvp(feat: &[f64], x: &[f64], dx: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (p, d) = (split(x, &REPROJ_LENS), split(dx, &REPROJ_LENS));
    let (mut err, mut derr) = (a2(p[3]), a2(d[3]));
    ba::reproj_error_fwd(
        &cam(p[0]),
        &cam(d[0]),
        &a3(p[1]),
        &a3(d[1]),
        p[2][0],
        d[2][0],
        &a2(feat),
        &mut err,
        &mut derr,
    );
    (err.to_vec(), derr.to_vec())
}

#[test]
fn reproj_error_fwd_and_rev_agree() {
    // Flat inputs: camera (11), point (3), weight, the initial `err` (2, overwritten);
    // outputs: the final `err`. Finite differences on `_fwd` and the dot-product test.
    for (name, ba) in [
        ("test.txt", test_problem()),
        ("zero rotation", zero_rotation_problem()),
    ] {
        let feat = [ba.feats[0], ba.feats[1]];
        let x0 = cat(&[&ba.cams[..N_CAM], &ba.x[..3], &[ba.w[0]], &[0.0, 0.0]]);
        let primal = |x: &[f64]| reproj_primal(&feat, x);
        let jvp = |x: &[f64], dx: &[f64]| reproj_jvp(&feat, x, dx);
        let vjp = |x: &[f64], w: &[f64]| {
            let p = split(x, &REPROJ_LENS);
            let (mut dcam, mut dx) = (ba::Camera::default(), [0.0; 3]);
            let mut err = a2(p[3]);
            let mut derr = a2(w);
            let dw = ba::reproj_error_rev(
                &cam(p[0]),
                &mut dcam,
                &a3(p[1]),
                &mut dx,
                p[2][0],
                &feat,
                &mut err,
                &mut derr,
            );
            (err.to_vec(), cat(&[&params(&dcam), &dx, &[dw], &derr]))
        };
        check_fwd_rev(&Case {
            name,
            x: &x0,
            primal: &primal,
            jvp: &jvp,
            vjp: &vjp,
            // The tangents reach 1e3 (rounding of the differences about 1e-9).
            tols: Tols {
                fd_rel: 1e-6,
                fd_abs: 1e-7,
                dot_rel: 1e-12,
            },
        });
    }
}

#[test]
fn reproj_error_rev2_lanes_agree() {
    // `reproj_error_rev2` (both residuals' seeds in one sweep, as `ba_jacobian` uses it):
    // each lane against `_fwd` by the dot-product test while the other lane carries
    // another seed, and equal to `reproj_error_rev` with that lane's seed, bit for bit.
    for (name, ba) in [
        ("test.txt", test_problem()),
        ("zero rotation", zero_rotation_problem()),
    ] {
        let feat = [ba.feats[0], ba.feats[1]];
        let x0 = cat(&[&ba.cams[..N_CAM], &ba.x[..3], &[ba.w[0]], &[0.0, 0.0]]);
        let batched = |x: &[f64], seeds: [&[f64]; 2]| {
            let p = split(x, &REPROJ_LENS);
            let (mut dcam, mut dx) = ([ba::Camera::default(); 2], [[0.0; 3]; 2]);
            let mut derr = [a2(seeds[0]), a2(seeds[1])];
            let mut err = a2(p[3]);
            let [c0, c1] = &mut dcam;
            let [x0, x1] = &mut dx;
            let [e0, e1] = &mut derr;
            let dw = ba::reproj_error_rev2(
                &cam(p[0]),
                [c0, c1],
                &a3(p[1]),
                [x0, x1],
                p[2][0],
                &feat,
                &mut err,
                [e0, e1],
            );
            let lane = |l: usize| cat(&[&params(&dcam[l]), &dx[l], &[dw[l]], &derr[l]]);
            (err.to_vec(), [lane(0), lane(1)])
        };
        let primal = |x: &[f64]| reproj_primal(&feat, x);
        let jvp = |x: &[f64], dx: &[f64]| reproj_jvp(&feat, x, dx);
        let other = [0.7, -1.3];
        for lane in 0..2 {
            let vjp = |x: &[f64], w: &[f64]| {
                let seeds = if lane == 0 { [w, &other] } else { [&other, w] };
                let (err, lanes) = batched(x, seeds);
                (err, lanes[lane].clone())
            };
            check_fwd_rev(&Case {
                name: &format!("{name}, lane {lane}"),
                x: &x0,
                primal: &primal,
                jvp: &jvp,
                vjp: &vjp,
                tols: Tols {
                    fd_rel: 1e-6,
                    fd_abs: 1e-7,
                    dot_rel: 1e-12,
                },
            });
        }
        let seeds = [[1.0, 0.0], [0.0, 1.0]];
        let (_, lanes) = batched(&x0, [&seeds[0], &seeds[1]]);
        for lane in 0..2 {
            let p = split(&x0, &REPROJ_LENS);
            let (mut dcam, mut dx) = (ba::Camera::default(), [0.0; 3]);
            let (mut err, mut derr) = (a2(p[3]), seeds[lane]);
            let dw = ba::reproj_error_rev(
                &cam(p[0]),
                &mut dcam,
                &a3(p[1]),
                &mut dx,
                p[2][0],
                &feat,
                &mut err,
                &mut derr,
            );
            assert_eq!(
                lanes[lane],
                cat(&[&params(&dcam), &dx, &[dw], &derr]),
                "{name}: lane {lane} of reproj_error_rev2 and reproj_error_rev"
            );
        }
    }
}

#[test]
fn weight_error_gradient_passes_finite_differences() {
    for w in [0.417022, -1.5, 0.0] {
        let g = check_grad(
            "weight_error",
            &[w],
            &|x| ba::weight_error(x[0]),
            &|x| {
                let (v, d) = ba::weight_error_grad(x[0]);
                (v, vec![d])
            },
            TOLS,
        );
        assert_eq!(g[0], -2.0 * w);
    }
}

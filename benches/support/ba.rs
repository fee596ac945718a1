//! ADBench's bundle adjustment (the `ba` program): every observation of a point by a
//! camera gives a weighted reprojection residual (2 values) and every weight a residual
//! `1 − w²`. It follows ADBench's reference definition (`ADBench/src/cpp/shared/ba.h`):
//! a camera is `[r₁ r₂ r₃ C₁ C₂ C₃ f u₀ v₀ k₁ k₂]` (Rodrigues rotation, centre, focal
//! length, principal point, radial distortion), and the point `X` projects to
//! `f·distort(π(R(X − C))) + (u₀, v₀)`.
//!
//! The residuals are written with `#[differentiate]` as a user would; the sparse Jacobian
//! is assembled from one batched reverse sweep with two seeds per observation (each
//! reprojection residual depends on 11 camera parameters, 3 point coordinates and 1
//! weight) and one derivative per weight residual, in ADBench's `BASparseMat` layout. [`ba_jacobian_hand`] is the
//! same Jacobian derived by hand, the baseline "without AD".
#![allow(dead_code)]

use crate::adbench::Ba;
use phidiff::{differentiate, Differentiable};

/// Parameters per camera.
pub const N_CAM: usize = 11;
/// Nonzeros of one reprojection row: 11 camera parameters, 3 point coordinates, 1 weight.
pub const N_ROW: usize = N_CAM + 3 + 1;

/// A camera: Rodrigues rotation, centre, focal length, principal point, radial distortion
/// (ADBench's eleven numbers, in that order).
#[derive(Differentiable, Clone, Copy, Debug, Default, PartialEq)]
pub struct Camera {
    pub rotation: [f64; 3],
    pub center: [f64; 3],
    pub focal: f64,
    pub principal: [f64; 2],
    pub distortion: [f64; 2],
}

impl Camera {
    /// The camera of ADBench's eleven numbers.
    pub fn from_params(c: &[f64]) -> Camera {
        Camera {
            rotation: [c[0], c[1], c[2]],
            center: [c[3], c[4], c[5]],
            focal: c[6],
            principal: [c[7], c[8]],
            distortion: [c[9], c[10]],
        }
    }

    /// ADBench's eleven numbers, written into `out`.
    pub fn write_params(&self, out: &mut [f64]) {
        out[..3].copy_from_slice(&self.rotation);
        out[3..6].copy_from_slice(&self.center);
        out[6] = self.focal;
        out[7..9].copy_from_slice(&self.principal);
        out[9..11].copy_from_slice(&self.distortion);
    }
}

/// The weighted reprojection error of point `x` seen by camera `cam` with weight `w` at
/// the measured feature `feat` (ADBench's `computeReprojError`), written the way a Rust
/// user writes it: a `Camera` struct, fixed-size arrays, the rotation chosen by an `if`
/// that yields a tuple.
#[differentiate(forward, reverse, reverse(width = 2), wrt(cam, x, w, err))]
pub fn reproj_error(cam: &Camera, x: &[f64; 3], w: f64, feat: &[f64; 2], err: &mut [f64; 2]) {
    // The point relative to the camera centre.
    let (p0, p1, p2) = (
        x[0] - cam.center[0],
        x[1] - cam.center[1],
        x[2] - cam.center[2],
    );
    // Rodrigues: rotate by |r| about r/|r|; to first order at r = 0.
    let r = &cam.rotation;
    let sqtheta = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    let (q0, q1, q2) = if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let (sintheta, costheta) = theta.sin_cos();
        let (a0, a1, a2) = (r[0] / theta, r[1] / theta, r[2] / theta);
        let along = (a0 * p0 + a1 * p1 + a2 * p2) * (1.0 - costheta);
        (
            p0 * costheta + (a1 * p2 - a2 * p1) * sintheta + a0 * along,
            p1 * costheta + (a2 * p0 - a0 * p2) * sintheta + a1 * along,
            p2 * costheta + (a0 * p1 - a1 * p0) * sintheta + a2 * along,
        )
    } else {
        (
            p0 + (r[1] * p2 - r[2] * p1),
            p1 + (r[2] * p0 - r[0] * p2),
            p2 + (r[0] * p1 - r[1] * p0),
        )
    };
    // Perspective division, radial distortion, focal length and principal point.
    let (u, v) = (q0 / q2, q1 / q2);
    let rsq = u * u + v * v;
    let [k1, k2] = cam.distortion;
    let distortion = 1.0 + k1 * rsq + k2 * rsq * rsq;
    err[0] = w * (u * distortion * cam.focal + cam.principal[0] - feat[0]);
    err[1] = w * (v * distortion * cam.focal + cam.principal[1] - feat[1]);
}

/// [`reproj_error`] as first written for phidiff, the camera an 11-number slice (kept to
/// measure the struct form against, in one run, and for the finite-difference baseline).
#[differentiate(forward, reverse, reverse(width = 2), wrt(cam, x, w, err))]
#[allow(unused_assignments)]
pub fn reproj_error_flat(cam: &[f64], x: &[f64], w: f64, feat: &[f64], err: &mut [f64]) {
    // The point relative to the camera centre.
    let p0 = x[0] - cam[3];
    let p1 = x[1] - cam[4];
    let p2 = x[2] - cam[5];
    // Rodrigues: rotate by |r| about r/|r|; to first order at r = 0.
    let sqtheta = cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2];
    // phidiff wants every `let` initialised and binding one name (no `let q0: f64;`, no
    // `let (q0, q1, q2) = if ..`), so both branches overwrite these.
    let mut q0 = 0.0;
    let mut q1 = 0.0;
    let mut q2 = 0.0;
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let a0 = cam[0] / theta;
        let a1 = cam[1] / theta;
        let a2 = cam[2] / theta;
        let along = (a0 * p0 + a1 * p1 + a2 * p2) * (1.0 - costheta);
        q0 = p0 * costheta + (a1 * p2 - a2 * p1) * sintheta + a0 * along;
        q1 = p1 * costheta + (a2 * p0 - a0 * p2) * sintheta + a1 * along;
        q2 = p2 * costheta + (a0 * p1 - a1 * p0) * sintheta + a2 * along;
    } else {
        q0 = p0 + (cam[1] * p2 - cam[2] * p1);
        q1 = p1 + (cam[2] * p0 - cam[0] * p2);
        q2 = p2 + (cam[0] * p1 - cam[1] * p0);
    }
    // Perspective division, radial distortion, focal length and principal point.
    let u = q0 / q2;
    let v = q1 / q2;
    let rsq = u * u + v * v;
    let distortion = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    err[0] = w * (u * distortion * cam[6] + cam[7] - feat[0]);
    err[1] = w * (v * distortion * cam[6] + cam[8] - feat[1]);
}

/// The weight residual (ADBench's `computeZachWeightError`).
#[differentiate(forward, reverse)]
pub fn weight_error(w: f64) -> f64 {
    1.0 - w * w
}

/// The camera, the point, the weight and the feature of observation `i`.
pub fn observation(ba: &Ba, i: usize) -> (&[f64], &[f64], f64, &[f64]) {
    let (c, p) = (ba.obs[2 * i], ba.obs[2 * i + 1]);
    (
        &ba.cams[N_CAM * c..N_CAM * (c + 1)],
        &ba.x[3 * p..3 * p + 3],
        ba.w[i],
        &ba.feats[2 * i..2 * i + 2],
    )
}

/// The cameras of `ba` as structs.
pub fn cameras(ba: &Ba) -> Vec<Camera> {
    ba.cams
        .chunks_exact(N_CAM)
        .map(Camera::from_params)
        .collect()
}

/// The camera's index, the point, the weight and the feature of observation `i`, as
/// [`reproj_error`] takes them.
pub fn observed(ba: &Ba, i: usize) -> (usize, &[f64; 3], f64, &[f64; 2]) {
    let (c, p) = (ba.obs[2 * i], ba.obs[2 * i + 1]);
    let x = ba.x[3 * p..3 * p + 3]
        .try_into()
        .expect("three coordinates");
    let feat = ba.feats[2 * i..2 * i + 2]
        .try_into()
        .expect("two coordinates");
    (c, x, ba.w[i], feat)
}

/// All residuals: `2p` reprojection errors (observation by observation), then `p` weight
/// errors, the row order of the Jacobian.
pub fn ba_residuals(ba: &Ba, out: &mut [f64]) {
    assert_eq!(
        out.len(),
        3 * ba.p,
        "ba_residuals: `out` must hold 3p values"
    );
    let (reproj, weights) = out.split_at_mut(2 * ba.p);
    let cams = cameras(ba);
    for (i, err) in reproj.chunks_exact_mut(2).enumerate() {
        let (c, x, w, feat) = observed(ba, i);
        reproj_error(&cams[c], x, w, feat, err.try_into().expect("two residuals"));
    }
    for (e, &w) in weights.iter_mut().zip(&ba.w) {
        *e = weight_error(w);
    }
}

/// ADBench's primal objective: the reprojection errors and the weight errors.
pub fn ba_objective(ba: &Ba, reproj_err: &mut [f64], w_err: &mut [f64]) {
    assert_eq!(
        reproj_err.len(),
        2 * ba.p,
        "ba_objective: `reproj_err` must hold 2p"
    );
    assert_eq!(w_err.len(), ba.p, "ba_objective: `w_err` must hold p");
    let cams = cameras(ba);
    for (i, err) in reproj_err.chunks_exact_mut(2).enumerate() {
        let (c, x, w, feat) = observed(ba, i);
        reproj_error(&cams[c], x, w, feat, err.try_into().expect("two residuals"));
    }
    for (e, &w) in w_err.iter_mut().zip(&ba.w) {
        *e = weight_error(w);
    }
}

/// The Jacobian of [`ba_residuals`] in compressed sparse rows, ADBench's `BASparseMat`:
/// rows are the `2p` reprojection residuals then the `p` weight residuals; columns are
/// the `11n` camera parameters, the `3m` point coordinates, then the `p` weights. A
/// reprojection row holds its camera's 11 columns, its point's 3 and its weight's 1, in
/// that order; a weight row holds its weight's column.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseJ {
    pub nrows: usize,
    pub ncols: usize,
    /// `nrows + 1` offsets: row `r` is `cols[rows[r]..rows[r + 1]]` (and `vals`).
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<f64>,
}

impl SparseJ {
    /// The sparsity pattern of `ba`'s Jacobian, with zero values.
    pub fn new(ba: &Ba) -> Self {
        let (n, m, p) = (ba.n, ba.m, ba.p);
        let nnz = 2 * p * N_ROW + p;
        let mut rows = Vec::with_capacity(3 * p + 1);
        let mut cols = Vec::with_capacity(nnz);
        rows.push(0);
        for i in 0..p {
            let (c, pt) = (ba.obs[2 * i], ba.obs[2 * i + 1]);
            for _ in 0..2 {
                cols.extend(N_CAM * c..N_CAM * (c + 1));
                cols.extend(N_CAM * n + 3 * pt..N_CAM * n + 3 * pt + 3);
                cols.push(N_CAM * n + 3 * m + i);
                rows.push(cols.len());
            }
        }
        for i in 0..p {
            cols.push(N_CAM * n + 3 * m + i);
            rows.push(cols.len());
        }
        SparseJ {
            nrows: 3 * p,
            ncols: N_CAM * n + 3 * m + p,
            rows,
            cols,
            vals: vec![0.0; nnz],
        }
    }

    /// The dense `nrows × ncols` matrix, row-major (for tests on small problems).
    pub fn to_dense(&self) -> Vec<f64> {
        let mut dense = vec![0.0; self.nrows * self.ncols];
        for r in 0..self.nrows {
            for k in self.rows[r]..self.rows[r + 1] {
                dense[r * self.ncols + self.cols[k]] = self.vals[k];
            }
        }
        dense
    }

    fn check_shape(&self, ba: &Ba, who: &str) {
        assert!(
            self.nrows == 3 * ba.p
                && self.ncols == N_CAM * ba.n + 3 * ba.m + ba.p
                && self.vals.len() == 2 * ba.p * N_ROW + ba.p,
            "{who}: the SparseJ was not made by SparseJ::new for this problem"
        );
    }
}

/// The Jacobian by phidiff: one batched reverse sweep of [`reproj_error`] per
/// observation (`reproj_error_rev2`, seeds `(1, 0)` and `(0, 1)` in its two lanes), whose
/// adjoints land straight in the observation's two rows, and the derivative of
/// [`weight_error`] per weight. Fills `j.vals`; the pattern is [`SparseJ::new`]'s.
pub fn ba_jacobian(ba: &Ba, j: &mut SparseJ) {
    j.check_shape(ba, "ba_jacobian");
    let (reproj, weights) = j.vals.split_at_mut(2 * ba.p * N_ROW);
    let cams = cameras(ba);
    let mut err = [0.0; 2];
    for (i, block) in reproj.chunks_exact_mut(2 * N_ROW).enumerate() {
        let (c, x, w, feat) = observed(ba, i);
        let mut dcam = [Camera::default(); 2];
        let mut dx = [[0.0; 3]; 2];
        let (mut seed0, mut seed1) = ([1.0, 0.0], [0.0, 1.0]);
        let [dcam0, dcam1] = &mut dcam;
        let [dx0, dx1] = &mut dx;
        let dw = reproj_error_rev2(
            &cams[c],
            [dcam0, dcam1],
            x,
            [dx0, dx1],
            w,
            feat,
            &mut err,
            [&mut seed0, &mut seed1],
        );
        for (lane, row) in block.chunks_exact_mut(N_ROW).enumerate() {
            dcam[lane].write_params(&mut row[..N_CAM]);
            row[N_CAM..N_CAM + 3].copy_from_slice(&dx[lane]);
            row[N_CAM + 3] = dw[lane];
        }
    }
    for (d, &w) in weights.iter_mut().zip(&ba.w) {
        *d = weight_error_grad(w).1;
    }
}

/// [`ba_jacobian`] through [`reproj_error_flat`], the program as first written for phidiff
/// (the camera an 11-number slice whose adjoints land straight in the rows): the
/// baseline the struct form is measured against.
pub fn ba_jacobian_flat(ba: &Ba, j: &mut SparseJ) {
    j.check_shape(ba, "ba_jacobian_flat");
    let (reproj, weights) = j.vals.split_at_mut(2 * ba.p * N_ROW);
    let mut err = [0.0; 2];
    for (i, block) in reproj.chunks_exact_mut(2 * N_ROW).enumerate() {
        let (cam, x, w, feat) = observation(ba, i);
        block.fill(0.0);
        let (row0, row1) = block.split_at_mut(N_ROW);
        let (dcam0, rest0) = row0.split_at_mut(N_CAM);
        let (dx0, dw0) = rest0.split_at_mut(3);
        let (dcam1, rest1) = row1.split_at_mut(N_CAM);
        let (dx1, dw1) = rest1.split_at_mut(3);
        let (mut seed0, mut seed1) = ([1.0, 0.0], [0.0, 1.0]);
        let dw = reproj_error_flat_rev2(
            cam,
            [dcam0, dcam1],
            x,
            [dx0, dx1],
            w,
            feat,
            &mut err,
            [&mut seed0, &mut seed1],
        );
        dw0[0] = dw[0];
        dw1[0] = dw[1];
    }
    for (d, &w) in weights.iter_mut().zip(&ba.w) {
        *d = weight_error_grad(w).1;
    }
}

/// The Jacobian derived by hand (the baseline without AD); same layout as
/// [`ba_jacobian`].
///
/// With `P = X − C` and `q = R(r)·P`: `∂q/∂X = R`, `∂q/∂C = −R`, and for `θ = |r| ≠ 0`,
/// `a = r/θ`, `q = cos θ·P + sin θ·(a × P) + (1 − cos θ)(a·P)·a`, so
/// `∂q/∂r_j = ∂q/∂θ·a_j + Σ_k ∂q/∂a_k·(δ_kj − a_k a_j)/θ` with
/// `∂q/∂θ = −sin θ·P + cos θ·(a × P) + sin θ·(a·P)·a` and
/// `∂q/∂a_k = sin θ·(e_k × P) + (1 − cos θ)((a·P)·e_k + P_k·a)`;
/// at `θ = 0`, `q = P + r × P`. Then `(u, v) = (q₀, q₁)/q₂`, `s = u² + v²`,
/// `L = 1 + k₁s + k₂s²`, `e = w·(f·L·(u, v) + (u₀, v₀) − feat)`, and
/// `∂e/∂(u, v) = w·f·(L·I + 2L′·(u, v)(u, v)ᵀ)` with `L′ = k₁ + 2k₂s`.
pub fn ba_jacobian_hand(ba: &Ba, j: &mut SparseJ) {
    j.check_shape(ba, "ba_jacobian_hand");
    let (reproj, weights) = j.vals.split_at_mut(2 * ba.p * N_ROW);
    for (i, block) in reproj.chunks_exact_mut(2 * N_ROW).enumerate() {
        let (cam, x, w, feat) = observation(ba, i);
        reproj_jacobian_hand(cam, x, w, feat, block);
    }
    for (d, &w) in weights.iter_mut().zip(&ba.w) {
        *d = -2.0 * w;
    }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The two rows (`2 × 15`, row-major) of one observation's reprojection Jacobian.
fn reproj_jacobian_hand(cam: &[f64], x: &[f64], w: f64, feat: &[f64], out: &mut [f64]) {
    let r = [cam[0], cam[1], cam[2]];
    let p = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    // q = R·P; dq_dp[i][j] = ∂q_i/∂P_j (= R), dq_dr[i][j] = ∂q_i/∂r_j.
    let mut q = [0.0; 3];
    let mut dq_dp = [[0.0; 3]; 3];
    let mut dq_dr = [[0.0; 3]; 3];
    let sqtheta = dot(r, r);
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let (sin, cos) = theta.sin_cos();
        let a = [r[0] / theta, r[1] / theta, r[2] / theta];
        let a_x_p = cross(a, p);
        let a_p = dot(a, p);
        let mut dq_dtheta = [0.0; 3];
        // dq_da[i][k] = ∂q_i/∂a_k.
        let mut dq_da = [[0.0; 3]; 3];
        for i in 0..3 {
            q[i] = p[i] * cos + a_x_p[i] * sin + a[i] * a_p * (1.0 - cos);
            dq_dtheta[i] = -sin * p[i] + cos * a_x_p[i] + sin * a_p * a[i];
            for k in 0..3 {
                let mut e = [0.0; 3];
                e[k] = 1.0;
                let ek_x_p = cross(e, p);
                dq_da[i][k] =
                    sin * ek_x_p[i] + (1.0 - cos) * (if i == k { a_p } else { 0.0 } + p[k] * a[i]);
                // R = cos·I + sin·[a]× + (1 − cos)·a aᵀ.
                let a_cross_ik = cross(a, e)[i];
                dq_dp[i][k] =
                    if i == k { cos } else { 0.0 } + sin * a_cross_ik + (1.0 - cos) * a[i] * a[k];
            }
        }
        for i in 0..3 {
            let da_a: f64 = (0..3).map(|k| dq_da[i][k] * a[k]).sum();
            for jx in 0..3 {
                dq_dr[i][jx] = dq_dtheta[i] * a[jx] + (dq_da[i][jx] - da_a * a[jx]) / theta;
            }
        }
    } else {
        let r_x_p = cross(r, p);
        for i in 0..3 {
            q[i] = p[i] + r_x_p[i];
            for k in 0..3 {
                let mut e = [0.0; 3];
                e[k] = 1.0;
                dq_dr[i][k] = cross(e, p)[i];
                dq_dp[i][k] = if i == k { 1.0 } else { 0.0 } + cross(r, e)[i];
            }
        }
    }
    let (u, v) = (q[0] / q[2], q[1] / q[2]);
    let uv = [u, v];
    let s = u * u + v * v;
    let (f, k1, k2) = (cam[6], cam[9], cam[10]);
    let l = 1.0 + k1 * s + k2 * s * s;
    let dl = k1 + 2.0 * k2 * s;
    // ∂(u, v)/∂q.
    let duv_dq = [[1.0 / q[2], 0.0, -u / q[2]], [0.0, 1.0 / q[2], -v / q[2]]];
    for row in 0..2 {
        let out = &mut out[row * N_ROW..(row + 1) * N_ROW];
        // ∂e_row/∂(u, v), then ∂e_row/∂q.
        let de_duv = [
            w * f * (if row == 0 { l } else { 0.0 } + 2.0 * dl * uv[row] * u),
            w * f * (if row == 1 { l } else { 0.0 } + 2.0 * dl * uv[row] * v),
        ];
        let de_dq: [f64; 3] =
            std::array::from_fn(|k| de_duv[0] * duv_dq[0][k] + de_duv[1] * duv_dq[1][k]);
        for jx in 0..3 {
            out[jx] = (0..3).map(|i| de_dq[i] * dq_dr[i][jx]).sum();
            let de_dp: f64 = (0..3).map(|i| de_dq[i] * dq_dp[i][jx]).sum();
            out[3 + jx] = -de_dp;
            out[N_CAM + jx] = de_dp;
        }
        out[6] = w * l * uv[row];
        out[7] = if row == 0 { w } else { 0.0 };
        out[8] = if row == 1 { w } else { 0.0 };
        out[9] = w * f * uv[row] * s;
        out[10] = w * f * uv[row] * s * s;
        let proj = f * l * uv[row] + cam[7 + row];
        out[N_CAM + 3] = proj - feat[row];
    }
}

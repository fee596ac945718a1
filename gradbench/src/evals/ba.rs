//! GradBench's `ba` eval (bundle adjustment, from ADBench): `p` observations of `m`
//! points by `n` cameras. Observation `i` sees point `i mod m` from camera `i mod n`; its
//! residual is `wᵢ (project(camera, point) − featureᵢ)` (2 values), and each weight adds
//! `1 − wᵢ²`. The input gives one camera, point, weight and feature, repeated.
//!
//! The Jacobian (`3p × (11n + 3m + p)`) is sparse: each reprojection residual depends on
//! its camera's 11 parameters, its point's 3 and its weight. It is assembled from one
//! batched reverse sweep per observation (`reprojection_error_rev2`: both residuals'
//! seeds in one sweep, `reverse(width = 2)`) and from `weight_error_grad`.
//!
//! Outputs follow GradBench's reference: the objective gives the first observation's two
//! residuals and first weight error with their repeat counts; the Jacobian gives the first
//! 30 entries of its compressed-row `rows`, `cols` and `vals` (the first observation's two
//! rows) followed by the last entry of each.

use phidiff::differentiate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs_then, Runs};

/// Parameters per camera: rotation (Rodrigues, 3), center (3), focal length, principal
/// point (2), radial distortion (2).
pub const CAMERA_PARAMS: usize = 11;
/// Nonzero columns of one reprojection row: camera, point, weight.
pub const ROW_NONZEROS: usize = CAMERA_PARAMS + 3 + 1;

#[derive(Debug, Deserialize)]
pub struct Input {
    pub n: usize,
    pub m: usize,
    pub p: usize,
    pub cam: Vec<f64>,
    pub x: Vec<f64>,
    pub w: f64,
    pub feat: Vec<f64>,
}

/// The expanded problem: all cameras, points, weights, observations and features.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub n: usize,
    pub m: usize,
    pub p: usize,
    pub cams: Vec<f64>,
    pub points: Vec<f64>,
    pub weights: Vec<f64>,
    /// `(camera, point)` of each observation.
    pub obs: Vec<(usize, usize)>,
    pub feats: Vec<f64>,
}

impl Problem {
    pub fn from_input(input: Input) -> Result<Problem, String> {
        let Input {
            n,
            m,
            p,
            cam,
            x,
            w,
            feat,
        } = input;
        if cam.len() != CAMERA_PARAMS || x.len() != 3 || feat.len() != 2 {
            return Err("ba: `cam`, `x`, `feat` must have 11, 3 and 2 entries".into());
        }
        if n == 0 || m == 0 || p == 0 {
            return Err("ba: `n`, `m` and `p` must be positive".into());
        }
        Ok(Problem {
            n,
            m,
            p,
            cams: cam.repeat(n),
            points: x.repeat(m),
            weights: vec![w; p],
            obs: (0..p).map(|i| (i % n, i % m)).collect(),
            feats: feat.repeat(p),
        })
    }

    fn camera(&self, i: usize) -> &[f64] {
        &self.cams[i * CAMERA_PARAMS..(i + 1) * CAMERA_PARAMS]
    }

    fn point(&self, i: usize) -> &[f64] {
        &self.points[i * 3..(i + 1) * 3]
    }

    /// All `2p` reprojection residuals and `p` weight errors.
    pub fn objective(&self) -> Objective {
        let mut reproj_err = vec![0.0; 2 * self.p];
        let mut w_err = vec![0.0; self.p];
        for (i, &(cam, pt)) in self.obs.iter().enumerate() {
            reprojection_error(
                self.camera(cam),
                self.point(pt),
                self.weights[i],
                &self.feats[2 * i..2 * i + 2],
                &mut reproj_err[2 * i..2 * i + 2],
            );
            w_err[i] = weight_error(self.weights[i]);
        }
        Objective { reproj_err, w_err }
    }

    /// The Jacobian of all residuals, in compressed-row form.
    pub fn jacobian(&self) -> SparseJacobian {
        let n_rows = 3 * self.p;
        let mut jacobian = SparseJacobian {
            n_cols: CAMERA_PARAMS * self.n + 3 * self.m + self.p,
            rows: Vec::with_capacity(n_rows + 1),
            cols: Vec::with_capacity(2 * ROW_NONZEROS * self.p + self.p),
            vals: Vec::with_capacity(2 * ROW_NONZEROS * self.p + self.p),
        };
        jacobian.rows.push(0);
        let point_offset = CAMERA_PARAMS * self.n;
        let weight_offset = point_offset + 3 * self.m;
        let mut err = [0.0; 2];
        for (i, &(cam, pt)) in self.obs.iter().enumerate() {
            // Both rows in one batched sweep: lane `row` seeds residual `row`.
            let mut d_cam = [[0.0; CAMERA_PARAMS]; 2];
            let mut d_point = [[0.0; 3]; 2];
            let mut d_err = [[1.0, 0.0], [0.0, 1.0]];
            let [d_cam0, d_cam1] = &mut d_cam;
            let [d_point0, d_point1] = &mut d_point;
            let [d_err0, d_err1] = &mut d_err;
            let d_w = reprojection_error_rev2(
                self.camera(cam),
                [d_cam0, d_cam1],
                self.point(pt),
                [d_point0, d_point1],
                self.weights[i],
                &self.feats[2 * i..2 * i + 2],
                &mut err,
                [d_err0, d_err1],
            );
            for row in 0..2 {
                let cols = (0..CAMERA_PARAMS)
                    .map(|j| CAMERA_PARAMS * cam + j)
                    .chain((0..3).map(|j| point_offset + 3 * pt + j))
                    .chain([weight_offset + i]);
                jacobian.cols.extend(cols);
                jacobian
                    .vals
                    .extend(d_cam[row].iter().chain(&d_point[row]).chain([&d_w[row]]));
                jacobian.rows.push(jacobian.vals.len());
            }
        }
        for i in 0..self.p {
            let (_, d_w) = weight_error_grad(self.weights[i]);
            jacobian.cols.push(weight_offset + i);
            jacobian.vals.push(d_w);
            jacobian.rows.push(jacobian.vals.len());
        }
        jacobian
    }
}

/// All residuals of the objective.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub reproj_err: Vec<f64>,
    pub w_err: Vec<f64>,
}

/// A sparse Jacobian in compressed-row form: row `r`'s entries are
/// `cols[rows[r]..rows[r + 1]]` and `vals[rows[r]..rows[r + 1]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseJacobian {
    pub n_cols: usize,
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<f64>,
}

impl SparseJacobian {
    /// The dense matrix (for tests on small problems).
    pub fn to_dense(&self) -> Vec<Vec<f64>> {
        (0..self.rows.len() - 1)
            .map(|r| {
                let mut row = vec![0.0; self.n_cols];
                for e in self.rows[r]..self.rows[r + 1] {
                    row[self.cols[e]] += self.vals[e];
                }
                row
            })
            .collect()
    }
}

#[derive(Debug, PartialEq, Serialize)]
pub struct RepeatedPair {
    pub elements: Vec<f64>,
    pub repeated: usize,
}

#[derive(Debug, PartialEq, Serialize)]
pub struct RepeatedValue {
    pub element: f64,
    pub repeated: usize,
}

/// The objective as GradBench reports it.
#[derive(Debug, PartialEq, Serialize)]
pub struct ObjectiveOutput {
    pub reproj_error: RepeatedPair,
    pub w_err: RepeatedValue,
}

/// The Jacobian as GradBench reports it.
#[derive(Debug, PartialEq, Serialize)]
pub struct JacobianOutput {
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<f64>,
}

impl Objective {
    pub fn output(&self) -> ObjectiveOutput {
        ObjectiveOutput {
            reproj_error: RepeatedPair {
                elements: self.reproj_err[..2].to_vec(),
                repeated: self.reproj_err.len() / 2,
            },
            w_err: RepeatedValue {
                element: self.w_err[0],
                repeated: self.w_err.len(),
            },
        }
    }
}

impl SparseJacobian {
    pub fn output(&self) -> JacobianOutput {
        /// The first 30 entries and the last: 31 whatever the size, as GradBench's
        /// reference writes them. With fewer than 10 observations `rows` has only
        /// `3p + 1` offsets; the missing ones are the final offset, the offsets of empty
        /// rows after the last (the reference reads past its array there).
        fn head_and_last<T: Copy>(all: &[T]) -> Vec<T> {
            let head = 2 * ROW_NONZEROS;
            let last = all[all.len() - 1];
            let mut out: Vec<T> = all.iter().copied().take(head).collect();
            out.resize(head, last);
            out.push(last);
            out
        }
        JacobianOutput {
            rows: head_and_last(&self.rows),
            cols: head_and_last(&self.cols),
            vals: head_and_last(&self.vals),
        }
    }
}

/// The residual `w (project(cam, x) − feat)` of one observation, written into `err`.
/// Projection: rotate `x − C` by the Rodrigues vector, divide by depth, distort
/// radially (`1 + k₁r² + k₂r⁴`), scale by the focal length and shift by the principal
/// point.
#[differentiate(forward, reverse, reverse(width = 2), wrt(cam, x, w, err))]
pub fn reprojection_error(cam: &[f64], x: &[f64], w: f64, feat: &[f64], err: &mut [f64]) {
    let p0 = x[0] - cam[3];
    let p1 = x[1] - cam[4];
    let p2 = x[2] - cam[5];
    let sqtheta = cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2];
    // The rotated point.
    let mut r = [0.0; 3];
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let theta_inverse = 1.0 / theta;
        let w0 = cam[0] * theta_inverse;
        let w1 = cam[1] * theta_inverse;
        let w2 = cam[2] * theta_inverse;
        let c0 = w1 * p2 - w2 * p1;
        let c1 = w2 * p0 - w0 * p2;
        let c2 = w0 * p1 - w1 * p0;
        let tmp = (w0 * p0 + w1 * p1 + w2 * p2) * (1.0 - costheta);
        r[0] = p0 * costheta + c0 * sintheta + w0 * tmp;
        r[1] = p1 * costheta + c1 * sintheta + w1 * tmp;
        r[2] = p2 * costheta + c2 * sintheta + w2 * tmp;
    } else {
        // Near zero rotation, first order: x + rot × x.
        r[0] = p0 + (cam[1] * p2 - cam[2] * p1);
        r[1] = p1 + (cam[2] * p0 - cam[0] * p2);
        r[2] = p2 + (cam[0] * p1 - cam[1] * p0);
    }
    let u = r[0] / r[2];
    let v = r[1] / r[2];
    let rsq = u * u + v * v;
    let distortion = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    let proj0 = u * distortion * cam[6] + cam[7];
    let proj1 = v * distortion * cam[6] + cam[8];
    err[0] = w * (proj0 - feat[0]);
    err[1] = w * (proj1 - feat[1]);
}

/// The weight's error `1 − w²`.
#[differentiate(forward, reverse)]
pub fn weight_error(w: f64) -> f64 {
    1.0 - w * w
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let problem = Problem::from_input(parse_input(input)?)?;
    let runs = Runs::from_input(input);
    match function {
        "objective" => Ok(time_runs_then(runs, || problem.objective(), |o| o.output())),
        "jacobian" => Ok(time_runs_then(runs, || problem.jacobian(), |j| j.output())),
        _ => Err(super::unknown_function("ba", function)),
    }
}

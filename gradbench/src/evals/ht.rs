//! GradBench's `ht` eval (hand tracking, from ADBench): a hand model of `b` bones and `v`
//! vertices is posed by 26 parameters `theta` (global rotation as an angle-axis vector,
//! global translation, and 20 finger angles), skinned (linear blend of the bones'
//! transforms) and compared with `n` measured points. Each point corresponds to a vertex
//! ("simple" inputs) or to a point of a triangle given by barycentric coordinates `us`
//! ("complicated" inputs, `us` non-empty); its residual is `point − model point`
//! (3 values).
//!
//! The Jacobian (`3n × 26`, or `3n × (2 + 26)` with `us`) is dense in `theta`; a residual
//! depends only on its own point's two `us`, so the two `us` columns hold
//! `∂rᵢ/∂uᵢ₀` and `∂rᵢ/∂uᵢ₁` (GradBench's compressed layout). It is assembled from
//! forward sweeps: the 26 `theta` columns 13 at a time, by sweeps of the generated
//! batched `_fwd13` (`forward(width = 13)`: the primal once, a tangent per column), and each `us`
//! column from one `_fwd` sweep with every point's tangent set at once (the points do not
//! share a `u`).
//!
//! Definitions follow GradBench's reference (`cpp/gradbench/evals/ht.hpp`): the bone
//! rotations are Euler angles applied as `R_z R_y R_x` (the input's order is x, z, y);
//! a rotation vector shorter than `1e-4` is the identity; mirrored models negate `x`
//! before the global transform.

use phidiff::differentiate;
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs_then, Runs};

/// The parameters of a pose: 3 global rotation, 3 global translation, 4 per finger.
pub const THETA_LEN: usize = 26;
/// The `theta` columns of the Jacobian per forward sweep: the width of
/// `ht_objective_fwd13` (`forward(width = 13)`). On the scoreboard's hand (544 vertices,
/// n = 1000; one pinned run, all 26 columns): 26 scalar `_fwd` sweeps 3.06 ms, 13 sweeps
/// of width 2 1.65 ms, 7 of width 4 1.38 ms, 2 of width 13 1.28 ms, 1 of width 26
/// 1.15 ms. Width 26 against 13, paired call by call: median 0.97× (300 pairs, three runs),
/// not worth twice the code.
pub const COLUMNS_PER_SWEEP: usize = 13;
const _: () = assert!(THETA_LEN % COLUMNS_PER_SWEEP == 0);
/// The fewest bones the finger parameters fill (the last finger's last joint is bone 20,
/// pose column 23).
pub const MIN_BONES: usize = 21;

#[derive(Debug, Deserialize)]
pub struct Model {
    pub bone_names: Vec<String>,
    pub parents: Vec<i64>,
    pub base_relatives: Vec<Vec<Vec<f64>>>,
    pub inverse_base_absolutes: Vec<Vec<Vec<f64>>>,
    pub base_positions: Vec<Vec<f64>>,
    pub weights: Vec<Vec<f64>>,
    pub triangles: Vec<Vec<i64>>,
    pub is_mirrored: bool,
}

#[derive(Debug, Deserialize)]
pub struct Data {
    pub model: Model,
    pub correspondences: Vec<i64>,
    pub points: Vec<Vec<f64>>,
}

#[derive(Debug, Deserialize)]
pub struct Input {
    pub theta: Vec<f64>,
    pub data: Data,
    #[serde(default)]
    pub us: Us,
}

/// The barycentric coordinates: GradBench's eval sends one pair per point; a flat list
/// (`u₀, u₁` of each point in turn, as its protocol description's `double[]` reads) is
/// accepted too.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Us {
    Pairs(Vec<Vec<f64>>),
    Flat(Vec<f64>),
}

impl Default for Us {
    fn default() -> Us {
        Us::Flat(Vec::new())
    }
}

/// The input flattened for the differentiated functions. Matrices are row-major `4 × 4`
/// blocks, one per bone; vertices are rows of 4 (homogeneous) in `base_positions` and
/// columns of `weights` (`weights[bone · v + vertex]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub theta: Vec<f64>,
    /// `us[2i]`, `us[2i + 1]`: point `i`'s barycentric coordinates (empty: simple).
    pub us: Vec<f64>,
    /// Each bone's parent, a root's being itself (parents come before their children).
    pub parents: Vec<usize>,
    pub base_relatives: Vec<f64>,
    pub inverse_base_absolutes: Vec<f64>,
    pub base_positions: Vec<f64>,
    pub weights: Vec<f64>,
    /// Three vertices per triangle.
    pub triangles: Vec<usize>,
    pub correspondences: Vec<usize>,
    /// `points[3i + j]`: coordinate `j` of point `i`.
    pub points: Vec<f64>,
    pub mirrored: bool,
}

fn matrices(what: &str, ms: &[Vec<Vec<f64>>], bones: usize) -> Result<Vec<f64>, String> {
    if ms.len() != bones {
        return Err(format!(
            "ht: `{what}` has {} matrices for {bones} bones",
            ms.len()
        ));
    }
    let mut flat = Vec::with_capacity(16 * bones);
    for (b, m) in ms.iter().enumerate() {
        if m.len() != 4 || m.iter().any(|row| row.len() != 4) {
            return Err(format!("ht: `{what}[{b}]` is not a 4 × 4 matrix"));
        }
        flat.extend(m.iter().flatten());
    }
    Ok(flat)
}

fn rows(what: &str, rs: &[Vec<f64>], len: usize) -> Result<Vec<f64>, String> {
    if let Some(i) = rs.iter().position(|r| r.len() != len) {
        return Err(format!(
            "ht: `{what}[{i}]` has {} entries, not {len}",
            rs[i].len()
        ));
    }
    Ok(rs.iter().flatten().copied().collect())
}

fn indices(what: &str, is: &[i64], below: usize) -> Result<Vec<usize>, String> {
    is.iter()
        .map(|&i| {
            usize::try_from(i)
                .ok()
                .filter(|&i| i < below)
                .ok_or_else(|| format!("ht: `{what}` holds {i}, outside 0..{below}"))
        })
        .collect()
}

impl Problem {
    pub fn from_input(input: Input) -> Result<Problem, String> {
        let Input { theta, data, us } = input;
        let Data {
            model,
            correspondences,
            points,
        } = data;
        if theta.len() != THETA_LEN {
            return Err(format!(
                "ht: `theta` has {} entries, not {THETA_LEN}",
                theta.len()
            ));
        }
        let bones = model.bone_names.len();
        if bones < MIN_BONES {
            return Err(format!(
                "ht: the model has {bones} bones, fewer than {MIN_BONES}"
            ));
        }
        if model.parents.len() != bones {
            return Err(format!(
                "ht: `parents` has {} entries for {bones} bones",
                model.parents.len()
            ));
        }
        let parents = model
            .parents
            .iter()
            .enumerate()
            .map(|(b, &p)| match p {
                -1 => Ok(b),
                p if p >= 0 && (p as usize) < b => Ok(p as usize),
                p => Err(format!(
                    "ht: bone {b}'s parent {p} is neither -1 nor an earlier bone"
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let vertices = model.base_positions.len();
        if model.weights.len() != vertices {
            return Err(format!(
                "ht: `weights` has {} rows for {vertices} vertices",
                model.weights.len()
            ));
        }
        // GradBench sends weights per vertex (one row of `bones` weights each); the
        // skinning loop wants them per bone.
        let per_vertex = rows("weights", &model.weights, bones)?;
        let mut weights = vec![0.0; bones * vertices];
        for v in 0..vertices {
            for b in 0..bones {
                weights[b * vertices + v] = per_vertex[v * bones + b];
            }
        }
        let tris: Vec<i64> = model.triangles.iter().flatten().copied().collect();
        if model.triangles.iter().any(|t| t.len() != 3) {
            return Err("ht: a triangle does not have 3 vertices".into());
        }
        let triangles = indices("triangles", &tris, vertices)?;
        let us = match us {
            Us::Pairs(pairs) => rows("us", &pairs, 2)?,
            Us::Flat(flat) if flat.len() % 2 == 0 => flat,
            Us::Flat(flat) => {
                return Err(format!("ht: `us` has {} entries, not pairs", flat.len()))
            }
        };
        let complicated = !us.is_empty();
        let targets = if complicated {
            model.triangles.len()
        } else {
            vertices
        };
        let correspondences = indices("correspondences", &correspondences, targets)?;
        if points.len() != correspondences.len() {
            return Err(format!(
                "ht: {} points for {} correspondences",
                points.len(),
                correspondences.len()
            ));
        }
        if complicated && us.len() != 2 * correspondences.len() {
            return Err(format!(
                "ht: {} `us` pairs for {} correspondences",
                us.len() / 2,
                correspondences.len()
            ));
        }
        Ok(Problem {
            theta,
            us,
            parents,
            base_relatives: matrices("base_relatives", &model.base_relatives, bones)?,
            inverse_base_absolutes: matrices(
                "inverse_base_absolutes",
                &model.inverse_base_absolutes,
                bones,
            )?,
            base_positions: rows("base_positions", &model.base_positions, 4)?,
            weights,
            triangles,
            correspondences,
            points: rows("points", &points, 3)?,
            mirrored: model.is_mirrored,
        })
    }

    pub fn complicated(&self) -> bool {
        !self.us.is_empty()
    }

    /// The `3n` residuals.
    pub fn objective(&self) -> Vec<f64> {
        let mut err = vec![0.0; self.points.len()];
        ht_objective(
            &self.theta,
            &self.us,
            &self.parents,
            &self.base_relatives,
            &self.inverse_base_absolutes,
            &self.base_positions,
            &self.weights,
            self.mirrored,
            &self.triangles,
            &self.correspondences,
            &self.points,
            &mut err,
        );
        err
    }

    /// The residuals' directional derivative along `(d_theta, d_us)` (`d_us` as long as
    /// `us`: empty for simple inputs).
    pub fn tangent(&self, d_theta: &[f64], d_us: &[f64]) -> Vec<f64> {
        let mut err = vec![0.0; self.points.len()];
        let mut d_err = vec![0.0; self.points.len()];
        ht_objective_fwd(
            &self.theta,
            d_theta,
            &self.us,
            d_us,
            &self.parents,
            &self.base_relatives,
            &self.inverse_base_absolutes,
            &self.base_positions,
            &self.weights,
            self.mirrored,
            &self.triangles,
            &self.correspondences,
            &self.points,
            &mut err,
            &mut d_err,
        );
        d_err
    }

    /// The residuals' adjoint: `(Jᵀ ē)` split into its `theta` and `us` parts (the
    /// latter empty for simple inputs).
    pub fn adjoint(&self, e_bar: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut err = vec![0.0; self.points.len()];
        let mut d_err = e_bar.to_vec();
        let mut d_theta = vec![0.0; THETA_LEN];
        let mut d_us = vec![0.0; self.us.len()];
        ht_objective_rev(
            &self.theta,
            &mut d_theta,
            &self.us,
            &mut d_us,
            &self.parents,
            &self.base_relatives,
            &self.inverse_base_absolutes,
            &self.base_positions,
            &self.weights,
            self.mirrored,
            &self.triangles,
            &self.correspondences,
            &self.points,
            &mut err,
            &mut d_err,
        );
        (d_theta, d_us)
    }

    /// The Jacobian, column-major (`3n` rows): the two `us` columns first when there
    /// are `us`, then one per `theta` entry.
    pub fn jacobian(&self) -> Jacobian {
        let rows = self.points.len();
        let us_cols = if self.complicated() { 2 } else { 0 };
        let mut columns = Vec::with_capacity(rows * (us_cols + THETA_LEN));
        let zero_theta = vec![0.0; THETA_LEN];
        for c in 0..us_cols {
            // Point i's residual depends on no other point's u: one sweep gives the
            // column's block of every point.
            let d_us: Vec<f64> = (0..self.us.len())
                .map(|k| if k % 2 == c { 1.0 } else { 0.0 })
                .collect();
            columns.extend(self.tangent(&zero_theta, &d_us));
        }
        // The theta columns, 13 per sweep of `ht_objective_fwd13` (lane l along
        // theta[c + l]): two sweeps.
        let units: Vec<Vec<f64>> = (0..THETA_LEN)
            .map(|c| {
                (0..THETA_LEN)
                    .map(|k| f64::from(u8::from(k == c)))
                    .collect()
            })
            .collect();
        let zero_us = vec![0.0; self.us.len()];
        let start = columns.len();
        columns.resize(start + rows * THETA_LEN, 0.0);
        let mut lanes = columns[start..].chunks_mut(rows.max(1));
        let mut err = vec![0.0; rows];
        for c in (0..THETA_LEN).step_by(COLUMNS_PER_SWEEP) {
            ht_objective_fwd13(
                &self.theta,
                std::array::from_fn(|l| &units[c + l][..]),
                &self.us,
                [&zero_us[..]; COLUMNS_PER_SWEEP],
                &self.parents,
                &self.base_relatives,
                &self.inverse_base_absolutes,
                &self.base_positions,
                &self.weights,
                self.mirrored,
                &self.triangles,
                &self.correspondences,
                &self.points,
                &mut err,
                std::array::from_fn(|_| lanes.next().unwrap_or_default()),
            );
        }
        Jacobian { rows, columns }
    }
}

/// A synthetic hand of `vertices` vertices and `points` correspondences (ADBench's model
/// files are not public with its inputs), reproducible from `seed`: 22 bones, a palm
/// under the root and a chain of 4 per finger; base relatives a rotation (random Euler
/// angles) and a translation; inverse base absolutes random affine maps near the identity;
/// each vertex weighted on 3 bones. `complicated`: correspondences are triangles with
/// barycentric `us`; else vertices and `us` is empty. For tests and the scoreboard.
pub fn synthetic(vertices: usize, points: usize, complicated: bool, seed: u64) -> Problem {
    let bones = 22;
    let mut parents = vec![0, 0];
    for finger in 0..5 {
        let first = 2 + 4 * finger;
        parents.extend([1, first, first + 1, first + 2]);
    }
    debug_assert_eq!(parents.len(), bones);
    let rand = |k: u64, n: usize| phidiff::check::random_vector(seed * 100 + k, n);
    let mut base_relatives = Vec::with_capacity(16 * bones);
    let angles = rand(1, 3 * bones);
    let shifts = rand(2, 3 * bones);
    for b in 0..bones {
        let r = euler_xzy(&angles[3 * b..3 * b + 3]);
        for i in 0..3 {
            base_relatives.extend([r[i][0], r[i][1], r[i][2], 0.5 * shifts[3 * b + i]]);
        }
        base_relatives.extend([0.0, 0.0, 0.0, 1.0]);
    }
    let mut inverse_base_absolutes = Vec::with_capacity(16 * bones);
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
    let base_positions = coords
        .chunks_exact(3)
        .flat_map(|c| [c[0], c[1], c[2], 1.0])
        .collect();
    let mut weights = vec![0.0; bones * vertices];
    let w = rand(5, 3 * vertices);
    for v in 0..vertices {
        for k in 0..3 {
            let b = (v * 7 + k * 5) % bones;
            weights[b * vertices + v] += (0.5 + 0.5 * w[3 * v + k].abs()) / 3.0;
        }
    }
    let triangles = (0..vertices)
        .flat_map(|t| [t, (t + 1) % vertices, (t + 3) % vertices])
        .collect();
    let correspondences = (0..points).map(|i| (i * 5 + 2) % vertices).collect();
    let us = if complicated {
        rand(6, 2 * points).iter().map(|u| 0.25 + 0.2 * u).collect()
    } else {
        Vec::new()
    };
    Problem {
        theta: rand(7, THETA_LEN).iter().map(|t| 0.8 * t).collect(),
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

/// `R_z R_y R_x` from angles given as (x, z, y), multiplied out (as in [`ht_objective`]).
fn euler_xzy(xzy: &[f64]) -> [[f64; 3]; 3] {
    let (sx, cx) = xzy[0].sin_cos();
    let (sz, cz) = xzy[1].sin_cos();
    let (sy, cy) = xzy[2].sin_cos();
    [
        [cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx],
        [sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx],
        [-sy, cy * sx, cy * cx],
    ]
}

/// A dense Jacobian stored by columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Jacobian {
    pub rows: usize,
    pub columns: Vec<f64>,
}

impl Jacobian {
    /// GradBench's output: one array per row.
    pub fn output(&self) -> Vec<Vec<f64>> {
        let cols = self.columns.len() / self.rows.max(1);
        (0..self.rows)
            .map(|r| (0..cols).map(|c| self.columns[c * self.rows + r]).collect())
            .collect()
    }
}

/// The `3n` residuals `point − model point`.
///
/// The model: per bone `b`, the posed relative transform is
/// `base_relatives_b · [R_b 0; 0 1]`, with `R_b = R_z R_y R_x` from the bone's Euler
/// angles; absolutes chain relatives from the root; the bone's transform is
/// `absolute_b · inverse_base_absolute_b`. A vertex is the weighted sum of its base
/// position under every bone's transform, then (mirrored: `x` negated) rotated by the
/// angle-axis `theta[0..3]` and translated by `theta[3..6]`. Point `i` is compared with
/// vertex `correspondences[i]` when `us` is empty, else with the point of triangle
/// `correspondences[i]` at barycentric coordinates `us[2i]`, `us[2i + 1]` (the third
/// `1 − u₀ − u₁`).
#[differentiate(forward, reverse, forward(width = 13), wrt(theta, us, err))]
#[allow(clippy::too_many_arguments)]
pub fn ht_objective(
    theta: &[f64],
    us: &[f64],
    parents: &[usize],
    base_relatives: &[f64],
    inverse_base_absolutes: &[f64],
    base_positions: &[f64],
    weights: &[f64],
    mirrored: bool,
    triangles: &[usize],
    correspondences: &[usize],
    points: &[f64],
    err: &mut [f64],
) {
    let bones = parents.len();
    let vertices = base_positions.len() / 4;
    // The pose: 3 values per column; column 0 the global rotation, 1 the scale (all
    // ones, which leaves the rotation as it is), 2 the translation, 3 + b bone b's
    // Euler angles (x, z, y). Each finger has 4 parameters: two angles of its first
    // joint, one of the next two; its fourth bone stays unposed.
    let cols = bones + 3;
    let mut pose = vec![0.0; 3 * cols];
    for r in 0..3 {
        pose[r] = theta[r];
        pose[6 + r] = theta[3 + r];
    }
    let mut next = 6;
    for finger in 0..5 {
        let col = 5 + 4 * finger;
        pose[3 * col] = theta[next];
        pose[3 * col + 1] = theta[next + 1];
        pose[3 * (col + 1)] = theta[next + 2];
        pose[3 * (col + 2)] = theta[next + 3];
        next += 4;
    }

    // Posed relatives, then absolutes (a parent's absolute is complete before its
    // children's), then each bone's transform.
    let mut absolutes = vec![0.0; 16 * bones];
    let mut rot = vec![0.0; 9];
    let mut relative = vec![0.0; 16];
    let mut transforms = vec![0.0; 16 * bones];
    for b in 0..bones {
        let tx = pose[3 * (b + 3)];
        let tz = pose[3 * (b + 3) + 1];
        let ty = pose[3 * (b + 3) + 2];
        let cx = tx.cos();
        let sx = tx.sin();
        let cy = ty.cos();
        let sy = ty.sin();
        let cz = tz.cos();
        let sz = tz.sin();
        rot[0] = cz * cy;
        rot[1] = cz * sy * sx - sz * cx;
        rot[2] = cz * sy * cx + sz * sx;
        rot[3] = sz * cy;
        rot[4] = sz * sy * sx + cz * cx;
        rot[5] = sz * sy * cx - cz * sx;
        rot[6] = -sy;
        rot[7] = cy * sx;
        rot[8] = cy * cx;
        for r in 0..4 {
            for c in 0..3 {
                let mut s = 0.0;
                for k in 0..3 {
                    s += base_relatives[16 * b + 4 * r + k] * rot[3 * k + c];
                }
                relative[4 * r + c] = s;
            }
            relative[4 * r + 3] = base_relatives[16 * b + 4 * r + 3];
        }
        let p = parents[b];
        if p == b {
            for e in 0..16 {
                absolutes[16 * b + e] = relative[e];
            }
        } else {
            for r in 0..4 {
                for c in 0..4 {
                    let mut s = 0.0;
                    for k in 0..4 {
                        s += absolutes[16 * p + 4 * r + k] * relative[4 * k + c];
                    }
                    absolutes[16 * b + 4 * r + c] = s;
                }
            }
        }
        for r in 0..4 {
            for c in 0..4 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += absolutes[16 * b + 4 * r + k] * inverse_base_absolutes[16 * b + 4 * k + c];
                }
                transforms[16 * b + 4 * r + c] = s;
            }
        }
    }

    // Linear blend skinning.
    let mut skinned = vec![0.0; 3 * vertices];
    for b in 0..bones {
        for v in 0..vertices {
            let w = weights[b * vertices + v];
            for r in 0..3 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += transforms[16 * b + 4 * r + k] * base_positions[4 * v + k];
                }
                skinned[3 * v + r] += s * w;
            }
        }
    }
    if mirrored {
        for v in 0..vertices {
            skinned[3 * v] = -skinned[3 * v];
        }
    }

    // The global rotation (angle-axis), then the translation.
    let sq = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2];
    let norm = sq.sqrt();
    let mut global = vec![0.0; 9];
    if norm < 0.0001 {
        global[0] = 1.0;
        global[4] = 1.0;
        global[8] = 1.0;
    } else {
        let x = theta[0] / norm;
        let y = theta[1] / norm;
        let z = theta[2] / norm;
        let s = norm.sin();
        let c = norm.cos();
        global[0] = x * x + (1.0 - x * x) * c;
        global[1] = x * y * (1.0 - c) - z * s;
        global[2] = x * z * (1.0 - c) + y * s;
        global[3] = x * y * (1.0 - c) + z * s;
        global[4] = y * y + (1.0 - y * y) * c;
        global[5] = y * z * (1.0 - c) - x * s;
        global[6] = x * z * (1.0 - c) - y * s;
        global[7] = z * y * (1.0 - c) + x * s;
        global[8] = z * z + (1.0 - z * z) * c;
    }
    let mut positions = vec![0.0; 3 * vertices];
    for v in 0..vertices {
        for r in 0..3 {
            let mut s = 0.0;
            for k in 0..3 {
                s += global[3 * r + k] * skinned[3 * v + k];
            }
            positions[3 * v + r] = s + theta[3 + r];
        }
    }

    // The residuals: against a vertex (no `us`) or a point of a triangle.
    if us.is_empty() {
        for i in 0..correspondences.len() {
            let v = correspondences[i];
            for j in 0..3 {
                err[3 * i + j] = points[3 * i + j] - positions[3 * v + j];
            }
        }
    } else {
        for i in 0..correspondences.len() {
            let t = correspondences[i];
            let a = triangles[3 * t];
            let b = triangles[3 * t + 1];
            let c = triangles[3 * t + 2];
            let u0 = us[2 * i];
            let u1 = us[2 * i + 1];
            for j in 0..3 {
                let on_hand = u0 * positions[3 * a + j]
                    + u1 * positions[3 * b + j]
                    + (1.0 - u0 - u1) * positions[3 * c + j];
                err[3 * i + j] = points[3 * i + j] - on_hand;
            }
        }
    }
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let problem = Problem::from_input(parse_input(input)?)?;
    let runs = Runs::from_input(input);
    match function {
        "objective" => Ok(time_runs_then(runs, || problem.objective(), |e| e)),
        "jacobian" => Ok(time_runs_then(runs, || problem.jacobian(), |j| j.output())),
        _ => Err(super::unknown_function("ht", function)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A valid simple input: 21 bones (the fewest), 3 vertices, one triangle.
    fn input() -> Value {
        let identity = json!([
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0]
        ]);
        let bones = MIN_BONES;
        let mut weights = vec![vec![0.0; bones]; 3];
        for (v, w) in weights.iter_mut().enumerate() {
            w[v] = 1.0;
        }
        json!({
            "theta": vec![0.1; THETA_LEN],
            "data": {
                "model": {
                    "bone_count": bones,
                    "bone_names": vec!["b"; bones],
                    "parents": (0..bones as i64).map(|b| b - 1).collect::<Vec<_>>(),
                    "base_relatives": vec![identity.clone(); bones],
                    "inverse_base_absolutes": vec![identity; bones],
                    "base_positions": [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0]],
                    "weights": weights,
                    "triangles": [[0, 1, 2]],
                    "is_mirrored": false
                },
                "correspondences": [0, 2],
                "points": [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
            },
            "us": []
        })
    }

    fn problem(input: Value) -> Result<Problem, String> {
        Problem::from_input(parse_input(&input)?)
    }

    #[test]
    fn a_valid_input_reads_both_ways_of_writing_us() {
        let p = problem(input()).unwrap();
        assert!(!p.complicated());
        // A chain: each bone's parent is the one before; the root is its own parent.
        assert_eq!(&p.parents[..3], &[0, 0, 1]);
        // Bone 1 weighs vertex 1 fully (weights by bone: `bone · vertices + vertex`).
        assert_eq!(p.weights[3 + 1], 1.0);
        for us in [json!([[0.2, 0.3], [0.5, 0.1]]), json!([0.2, 0.3, 0.5, 0.1])] {
            let mut i = input();
            i["us"] = us;
            i["data"]["correspondences"] = json!([0, 0]);
            let p = problem(i).unwrap();
            assert_eq!(p.us, [0.2, 0.3, 0.5, 0.1]);
            assert_eq!(p.jacobian().output()[0].len(), 2 + THETA_LEN);
        }
    }

    #[test]
    fn bad_inputs_fail_naming_what_is_wrong() {
        type Break = fn(&mut Value);
        let cases: [(&str, Break); 8] = [
            ("`theta` has 25", |i| i["theta"] = json!(vec![0.1; 25])),
            ("fewer than 21", |i| {
                let m = &mut i["data"]["model"];
                m["bone_names"] = json!(vec!["b"; 20]);
            }),
            ("bone 3's parent 5", |i| {
                i["data"]["model"]["parents"][3] = json!(5)
            }),
            ("`base_relatives[2]` is not a 4 × 4", |i| {
                i["data"]["model"]["base_relatives"][2] = json!([[1.0, 0.0]])
            }),
            ("`correspondences` holds 3, outside 0..3", |i| {
                i["data"]["correspondences"] = json!([0, 3])
            }),
            ("1 points for 2 correspondences", |i| {
                i["data"]["points"] = json!([[0.0, 0.0, 0.0]])
            }),
            ("`us` has 3 entries", |i| i["us"] = json!([0.1, 0.2, 0.3])),
            ("1 `us` pairs for 2", |i| {
                i["us"] = json!([[0.1, 0.2]]);
                i["data"]["correspondences"] = json!([0, 0]);
            }),
        ];
        for (want, break_it) in cases {
            let mut i = input();
            break_it(&mut i);
            let err = problem(i).unwrap_err();
            assert!(err.contains(want), "{err:?} does not say {want:?}");
        }
    }
}

//! A hand-written Jacobian of GradBench's hand-tracking residuals (simple correspondences:
//! point `i` against vertex `c_i`), derived analytically without AD: the baseline of the
//! scoreboard's hand-tracking row, where phidiff runs one forward sweep per column.
//!
//! Derivation. Only the top three rows of the bones' 4 × 4 transforms reach the vertices,
//! and row `r` of a child's absolute depends only on row `r` of its parent's, so the
//! absolutes and transforms are kept as 3 × 4 blocks. Write `Rel_b = BR_b · diag(R_b, 1)`
//! (`R_b = R_z R_y R_x` of the bone's Euler angles), `A_b = A_parent · Rel_b`,
//! `T_b = A_b · IBA_b`, the skinned vertex `s_v = D Σ_b w_bv T_b x_v` (`D` negates `x` on
//! a mirrored model), and `p_v = G s_v + t` (`G` the angle-axis rotation of `theta[0..3]`,
//! `t = theta[3..6]`). The residual is `point_i − p_{c_i}`, so
//! - the translation columns are `−e_r`;
//! - the global rotation columns are `−(∂G/∂θ_k) s_{c_i}`, with `G = cI + (1−c) a aᵀ +
//!   s [a]×` (`a = θ/|θ|`, `c, s` of `|θ|`) differentiated through `|θ|` and `a`
//!   (`∂a/∂θ_k = (e_k − a a_k)/|θ|`); below `|θ| = 1e-4`, `G = I` and they are zero;
//! - a finger angle of bone `b₀` changes `R_{b₀}` only: `∂R/∂x` has columns
//!   `(0, R₂, −R₁)`, `∂R/∂z` rows `(−R₁, R₀, 0)`. Then `∂A_{b₀} = A_parent · BR · diag(∂R,
//!   0)`, `∂A_b = ∂A_parent · Rel_b` down the bones below `b₀` (every other bone is
//!   untouched), and the column is `−G D Σ_{touched b} w_{b,c_i} ∂T_b x_{c_i}`.
//!
//! So a finger column costs a skinning pass over the bones it moves (2 to 4 of 22), where
//! a forward sweep of the whole objective repeats the pose and every bone's skinning.
#![allow(dead_code)]
// The 3 × 4 and 4 × 4 block products read best as index loops.
#![allow(clippy::needless_range_loop)]

use phidiff_gradbench::evals::ht::{Problem, THETA_LEN as THETA};

/// `R_z R_y R_x` from a bone's Euler angles `(x, z, y)`, `rot[k][c]` (as `ht_objective`).
fn rotation([x, z, y]: [f64; 3]) -> [[f64; 3]; 3] {
    let ((sx, cx), (sy, cy), (sz, cz)) = (x.sin_cos(), y.sin_cos(), z.sin_cos());
    [
        [cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx],
        [sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx],
        [-sy, cy * sx, cy * cx],
    ]
}

/// `base_relative · diag(rot, 1)`, or with `derivative` `base_relative · diag(rot, 0)`.
fn relative(base: &[f64], rot: &[[f64; 3]; 3], derivative: bool) -> [[f64; 4]; 4] {
    let mut out = [[0.0; 4]; 4];
    for r in 0..4 {
        for c in 0..3 {
            out[r][c] = (0..3).map(|k| base[4 * r + k] * rot[k][c]).sum();
        }
        out[r][3] = if derivative { 0.0 } else { base[4 * r + 3] };
    }
    out
}

/// The top three rows of `a · b` (`a` given by its top three rows).
fn times(a: &[[f64; 4]; 3], b: &[[f64; 4]; 4]) -> [[f64; 4]; 3] {
    let mut out = [[0.0; 4]; 3];
    for r in 0..3 {
        for c in 0..4 {
            out[r][c] = (0..4).map(|k| a[r][k] * b[k][c]).sum();
        }
    }
    out
}

/// A 4 × 4 row-major block of `flat`.
fn block(flat: &[f64], b: usize) -> [[f64; 4]; 4] {
    let mut out = [[0.0; 4]; 4];
    for r in 0..4 {
        out[r].copy_from_slice(&flat[16 * b + 4 * r..16 * b + 4 * r + 4]);
    }
    out
}

/// The global rotation `G` and its three partials `∂G/∂θ_k`.
fn global(theta: &[f64]) -> ([[f64; 3]; 3], [[[f64; 3]; 3]; 3]) {
    let n = (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]).sqrt();
    let identity = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    if n < 0.0001 {
        return (identity, [[[0.0; 3]; 3]; 3]);
    }
    let a = [theta[0] / n, theta[1] / n, theta[2] / n];
    let (s, c) = n.sin_cos();
    // cI + (1 − c) a uᵀ + s [a]×, and its derivative along (dc, ds, da).
    let skew = |v: [f64; 3]| [[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]];
    let mut g = [[0.0; 3]; 3];
    let k = skew(a);
    for r in 0..3 {
        for col in 0..3 {
            g[r][col] = identity[r][col] * c + (1.0 - c) * a[r] * a[col] + s * k[r][col];
        }
    }
    let mut dg = [[[0.0; 3]; 3]; 3];
    for (j, dgj) in dg.iter_mut().enumerate() {
        let (dc, ds) = (-s * a[j], c * a[j]);
        let da: [f64; 3] = std::array::from_fn(|i| (identity[i][j] - a[i] * a[j]) / n);
        let dk = skew(da);
        for r in 0..3 {
            for col in 0..3 {
                dgj[r][col] = identity[r][col] * dc - dc * a[r] * a[col]
                    + (1.0 - c) * (da[r] * a[col] + a[r] * da[col])
                    + ds * k[r][col]
                    + s * dk[r][col];
            }
        }
    }
    (g, dg)
}

/// The residuals `point − model point` of `m` (simple: no `us`) and their Jacobian by
/// columns (`3n` rows, the 26 `theta` columns, as `Problem::jacobian`), into `jacobian`.
pub fn ht_jacobian_hand(m: &Problem, jacobian: &mut [f64]) -> Vec<f64> {
    let theta = &m.theta[..];
    let bones = m.parents.len();
    let vertices = m.base_positions.len() / 4;
    let rows = 3 * m.correspondences.len();
    assert!(
        m.us.is_empty(),
        "ht_jacobian_hand: simple correspondences only (`us` empty)"
    );
    assert_eq!(theta.len(), THETA, "ht_jacobian_hand: `theta`");
    assert_eq!(jacobian.len(), rows * THETA, "ht_jacobian_hand: `jacobian`");
    // Each bone's Euler angles (x, z, y), and which `theta` entry poses which angle.
    let mut angles = vec![[0.0; 3]; bones];
    let mut posed = Vec::with_capacity(20);
    for finger in 0..5 {
        let (at, b) = (6 + 4 * finger, 2 + 4 * finger);
        for (k, (bone, axis)) in [(b, 0), (b, 1), (b + 1, 0), (b + 2, 0)]
            .into_iter()
            .enumerate()
        {
            angles[bone][axis] = theta[at + k];
            posed.push((at + k, bone, axis));
        }
    }
    let rots: Vec<[[f64; 3]; 3]> = angles.iter().map(|&a| rotation(a)).collect();
    let mut rels = Vec::with_capacity(bones);
    let mut absolutes: Vec<[[f64; 4]; 3]> = Vec::with_capacity(bones);
    let mut transforms = Vec::with_capacity(bones);
    for b in 0..bones {
        let rel = relative(&m.base_relatives[16 * b..], &rots[b], false);
        let p = m.parents[b];
        let abs = if p == b {
            [rel[0], rel[1], rel[2]]
        } else {
            times(&absolutes[p], &rel)
        };
        transforms.push(times(&abs, &block(&m.inverse_base_absolutes, b)));
        absolutes.push(abs);
        rels.push(rel);
    }
    // The skinned vertices, `D` applied.
    let mirror = if m.mirrored { -1.0 } else { 1.0 };
    let x = |v: usize| &m.base_positions[4 * v..4 * v + 4];
    let mut skinned = vec![0.0; 3 * vertices];
    for b in 0..bones {
        let t = &transforms[b];
        for v in 0..vertices {
            let w = m.weights[b * vertices + v];
            let xv = x(v);
            for r in 0..3 {
                skinned[3 * v + r] +=
                    w * (t[r][0] * xv[0] + t[r][1] * xv[1] + t[r][2] * xv[2] + t[r][3] * xv[3]);
            }
        }
    }
    for v in 0..vertices {
        skinned[3 * v] *= mirror;
    }
    let (g, dg) = global(theta);
    let mut err = Vec::with_capacity(rows);
    for (i, &c) in m.correspondences.iter().enumerate() {
        let s = &skinned[3 * c..3 * c + 3];
        for r in 0..3 {
            let p = g[r][0] * s[0] + g[r][1] * s[1] + g[r][2] * s[2] + theta[3 + r];
            err.push(m.points[3 * i + r] - p);
            for (k, dgk) in dg.iter().enumerate() {
                jacobian[k * rows + 3 * i + r] =
                    -(dgk[r][0] * s[0] + dgk[r][1] * s[1] + dgk[r][2] * s[2]);
            }
            for k in 0..3 {
                jacobian[(3 + k) * rows + 3 * i + r] = if k == r { -1.0 } else { 0.0 };
            }
        }
    }
    // The finger columns: `G D ∂T_b` for the bones each angle moves, skinned over them.
    let gd: [[f64; 3]; 3] = std::array::from_fn(|r| [g[r][0] * mirror, g[r][1], g[r][2]]);
    let mut touched = vec![false; bones];
    let mut d_abs = vec![[[0.0; 4]; 3]; bones];
    let mut moved = vec![0.0; 3 * vertices];
    for &(col, b0, axis) in &posed {
        let r = &rots[b0];
        let d_rot = if axis == 0 {
            std::array::from_fn(|k| [0.0, r[k][2], -r[k][1]])
        } else {
            [[-r[1][0], -r[1][1], -r[1][2]], r[0], [0.0; 3]]
        };
        let d_rel = relative(&m.base_relatives[16 * b0..], &d_rot, true);
        let p = m.parents[b0];
        d_abs[b0] = if p == b0 {
            [d_rel[0], d_rel[1], d_rel[2]]
        } else {
            times(&absolutes[p], &d_rel)
        };
        touched.iter_mut().for_each(|t| *t = false);
        touched[b0] = true;
        moved.iter_mut().for_each(|v| *v = 0.0);
        for b in b0..bones {
            let p = m.parents[b];
            if b != b0 {
                if p == b || !touched[p] {
                    continue;
                }
                d_abs[b] = times(&d_abs[p], &rels[b]);
                touched[b] = true;
            }
            let dt = times(&d_abs[b], &block(&m.inverse_base_absolutes, b));
            let mt: [[f64; 4]; 3] = std::array::from_fn(|r| {
                std::array::from_fn(|c| (0..3).map(|k| gd[r][k] * dt[k][c]).sum())
            });
            for v in 0..vertices {
                let w = m.weights[b * vertices + v];
                let xv = x(v);
                for r in 0..3 {
                    moved[3 * v + r] += w
                        * (mt[r][0] * xv[0]
                            + mt[r][1] * xv[1]
                            + mt[r][2] * xv[2]
                            + mt[r][3] * xv[3]);
                }
            }
        }
        let column = &mut jacobian[col * rows..(col + 1) * rows];
        for (i, &c) in m.correspondences.iter().enumerate() {
            for r in 0..3 {
                column[3 * i + r] = -moved[3 * c + r];
            }
        }
    }
    err
}

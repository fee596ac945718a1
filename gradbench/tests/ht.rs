//! GradBench's `ht` eval on the synthetic hand (`ht::synthetic`): the residuals against a plain
//! re-derivation of GradBench's definition, the Jacobian against central finite
//! differences, and the dot-product identity between `ht_objective_fwd` and
//! `ht_objective_rev` (tolerances in `common`).

#![allow(clippy::needless_range_loop)]

use common::{check_dot, check_fd, FD};
use phidiff_gradbench::evals::ht;

mod common;

type M3 = [[f64; 3]; 3];
type M4 = [[f64; 4]; 4];

fn mul3(a: &M3, b: &M3) -> M3 {
    let mut c = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            c[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    c
}

fn mul4(a: &M4, b: &M4) -> M4 {
    let mut c = [[0.0; 4]; 4];
    for i in 0..4 {
        for j in 0..4 {
            c[i][j] = (0..4).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    c
}

/// `R_z R_y R_x` from angles given as (x, z, y), as elementary rotations multiplied out.
fn euler(xzy: &[f64]) -> M3 {
    let (x, z, y) = (xzy[0], xzy[1], xzy[2]);
    let rx = [
        [1.0, 0.0, 0.0],
        [0.0, x.cos(), -x.sin()],
        [0.0, x.sin(), x.cos()],
    ];
    let ry = [
        [y.cos(), 0.0, y.sin()],
        [0.0, 1.0, 0.0],
        [-y.sin(), 0.0, y.cos()],
    ];
    let rz = [
        [z.cos(), -z.sin(), 0.0],
        [z.sin(), z.cos(), 0.0],
        [0.0, 0.0, 1.0],
    ];
    mul3(&mul3(&rz, &ry), &rx)
}

/// Rodrigues' rotation of `v` about the angle-axis `w`: `v cos θ + (k × v) sin θ +
/// k (k·v)(1 − cos θ)`; the identity below `|w| = 1e-4`.
fn rodrigues(w: &[f64], v: [f64; 3]) -> [f64; 3] {
    let theta = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
    if theta < 1e-4 {
        return v;
    }
    let k = [w[0] / theta, w[1] / theta, w[2] / theta];
    let cross = [
        k[1] * v[2] - k[2] * v[1],
        k[2] * v[0] - k[0] * v[2],
        k[0] * v[1] - k[1] * v[0],
    ];
    let dot = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    let (s, c) = theta.sin_cos();
    [0, 1, 2].map(|i| v[i] * c + cross[i] * s + k[i] * dot * (1.0 - c))
}

fn block(flat: &[f64], b: usize) -> M4 {
    let mut m = [[0.0; 4]; 4];
    for i in 0..4 {
        for j in 0..4 {
            m[i][j] = flat[16 * b + 4 * i + j];
        }
    }
    m
}

/// The residuals re-derived from GradBench's definition with 4 × 4 arrays, finger
/// parameters placed by bone, and Rodrigues' formula.
fn ht_plain(p: &ht::Problem) -> Vec<f64> {
    let bones = p.parents.len();
    let vertices = p.base_positions.len() / 4;
    let t = &p.theta;
    // Finger f's first joint (bone 2 + 4f) takes two angles (x, z), the next two one (x).
    let mut angles = vec![[0.0; 3]; bones];
    for f in 0..5 {
        let at = 6 + 4 * f;
        angles[2 + 4 * f] = [t[at], t[at + 1], 0.0];
        angles[3 + 4 * f] = [t[at + 2], 0.0, 0.0];
        angles[4 + 4 * f] = [t[at + 3], 0.0, 0.0];
    }
    let mut absolutes: Vec<M4> = Vec::new();
    for b in 0..bones {
        let r = euler(&angles[b]);
        let mut pose = [[0.0; 4]; 4];
        for i in 0..3 {
            pose[i][..3].copy_from_slice(&r[i]);
        }
        pose[3][3] = 1.0;
        let relative = mul4(&block(&p.base_relatives, b), &pose);
        let absolute = if p.parents[b] == b {
            relative
        } else {
            mul4(&absolutes[p.parents[b]], &relative)
        };
        absolutes.push(absolute);
    }
    let transforms: Vec<M4> = (0..bones)
        .map(|b| mul4(&absolutes[b], &block(&p.inverse_base_absolutes, b)))
        .collect();
    let positions: Vec<[f64; 3]> = (0..vertices)
        .map(|v| {
            let base = &p.base_positions[4 * v..4 * v + 4];
            let mut x = [0.0; 3];
            for (b, m) in transforms.iter().enumerate() {
                for i in 0..3 {
                    let moved: f64 = (0..4).map(|k| m[i][k] * base[k]).sum();
                    x[i] += p.weights[b * vertices + v] * moved;
                }
            }
            if p.mirrored {
                x[0] = -x[0];
            }
            let r = rodrigues(&t[..3], x);
            [0, 1, 2].map(|i| r[i] + t[3 + i])
        })
        .collect();
    let mut err = Vec::new();
    for (i, &c) in p.correspondences.iter().enumerate() {
        let at = if p.us.is_empty() {
            positions[c]
        } else {
            let (u0, u1) = (p.us[2 * i], p.us[2 * i + 1]);
            let tri = &p.triangles[3 * c..3 * c + 3];
            [0, 1, 2].map(|j| {
                u0 * positions[tri[0]][j]
                    + u1 * positions[tri[1]][j]
                    + (1.0 - u0 - u1) * positions[tri[2]][j]
            })
        };
        err.extend((0..3).map(|j| p.points[3 * i + j] - at[j]));
    }
    err
}

#[test]
fn ht_objective_matches_a_plain_rederivation() {
    for complicated in [false, true] {
        for mirrored in [false, true] {
            for tiny_rotation in [false, true] {
                let mut p = ht::synthetic(16, 7, complicated, 3);
                p.mirrored = mirrored;
                if tiny_rotation {
                    p.theta[..3].copy_from_slice(&[2e-5, -3e-5, 1e-5]);
                }
                let (got, want) = (p.objective(), ht_plain(&p));
                assert_eq!(got.len(), 21);
                for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                        "ht (complicated {complicated}, mirrored {mirrored}, tiny rotation \
                         {tiny_rotation}) residual {r}: {g} vs {w}"
                    );
                }
            }
        }
    }
}

#[test]
fn ht_jacobian_matches_finite_differences() {
    for complicated in [false, true] {
        for tiny_rotation in [false, true] {
            let mut p = ht::synthetic(12, 5, complicated, 11);
            p.mirrored = complicated;
            if tiny_rotation {
                p.theta[..3].copy_from_slice(&[2e-5, -3e-5, 1e-5]);
            }
            let nu = p.us.len();
            // Near the identity (|w| < 1e-4) the rotation is the identity, a branch the
            // differences' step (1.2e-4) would cross: there the rotation's three entries
            // are held, and their columns are checked to be zero instead.
            let held = if tiny_rotation { 3 } else { 0 };
            let params = [&p.theta[held..], &p.us[..]].concat();
            let residuals = |v: &[f64]| {
                let mut theta = p.theta.clone();
                theta[held..].copy_from_slice(&v[..ht::THETA_LEN - held]);
                let q = ht::Problem {
                    theta,
                    us: v[ht::THETA_LEN - held..].to_vec(),
                    ..p.clone()
                };
                q.objective()
            };
            let jacobian = p.jacobian().output();
            let us_cols = if complicated { 2 } else { 0 };
            assert_eq!(jacobian.len(), 15);
            for (r, row) in jacobian.iter().enumerate() {
                assert_eq!(row.len(), us_cols + ht::THETA_LEN);
                // The dense row: theta's columns, then every u (only the row's point's
                // two are nonzero; the output keeps just those).
                let mut dense = row[us_cols + held..].to_vec();
                dense.extend(vec![0.0; nu]);
                if complicated {
                    let i = r / 3;
                    dense[ht::THETA_LEN - held + 2 * i] = row[0];
                    dense[ht::THETA_LEN - held + 2 * i + 1] = row[1];
                }
                check_fd(
                    &format!(
                        "ht row {r} (complicated {complicated}, tiny rotation {tiny_rotation})"
                    ),
                    &params,
                    |v| residuals(v)[r],
                    &dense,
                    FD,
                );
                if tiny_rotation {
                    assert_eq!(row[us_cols..us_cols + 3], [0.0; 3], "ht row {r}");
                }
            }
        }
    }
}

#[test]
fn ht_dot_product() {
    for complicated in [false, true] {
        let p = ht::synthetic(12, 5, complicated, 5);
        let nu = p.us.len();
        check_dot(
            &format!("ht (complicated {complicated})"),
            ht::THETA_LEN + nu,
            15,
            |v| p.tangent(&v[..ht::THETA_LEN], &v[ht::THETA_LEN..]),
            |y| {
                let (d_theta, d_us) = p.adjoint(y);
                [d_theta, d_us].concat()
            },
        );
    }
}

/// The Jacobian's `theta` columns come from sweeps of the batched `ht_objective_fwd13`;
/// each must equal the scalar `_fwd` sweep along that column (which the dot-product test
/// above holds to `_rev`), bit for bit: a lane repeats the scalar sweep's tangent
/// arithmetic in the same order.
#[test]
fn ht_batched_columns_equal_scalar_sweeps() {
    for complicated in [false, true] {
        let p = ht::synthetic(12, 5, complicated, 7);
        let jacobian = p.jacobian();
        let rows = jacobian.rows;
        let us_cols = if complicated { 2 } else { 0 };
        let zero_us = vec![0.0; p.us.len()];
        for c in 0..ht::THETA_LEN {
            let mut d_theta = vec![0.0; ht::THETA_LEN];
            d_theta[c] = 1.0;
            let column = &jacobian.columns[(us_cols + c) * rows..(us_cols + c + 1) * rows];
            assert_eq!(
                column,
                &p.tangent(&d_theta, &zero_us)[..],
                "ht column {c} (complicated {complicated})"
            );
        }
    }
}

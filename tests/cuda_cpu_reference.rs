//! The CPU launchers of the kernels of `benches/support/cuda_kernels.rs`
//! (`--features cuda`), as functions of all their inputs: central finite differences and
//! the dot-product test (`common::TOLS`) through `_fwd` run for every index and `cpu_rev`
//! (the adjoint kernel's form, gathered where the kernel is). The kernels' text, NVRTC and
//! the GPU are checked in `tests/cuda_kernels.rs`.

mod common;

#[path = "../benches/support/cuda_kernels.rs"]
mod kernels;

use common::*;
use kernels::*;

const N: usize = 9;

fn indices() -> Vec<usize> {
    (0..N).map(|k| (k * 7 + 3) % N).collect()
}

#[test]
fn cpu_reference_saxpy() {
    // Inputs: x, y (before), a; outputs: y (after).
    let point: Vec<f64> = (0..2 * N + 1)
        .map(|k| (0.37 * k as f64).sin() + 0.2)
        .collect();
    let primal = |p: &[f64]| {
        let (x, mut y, a) = (&p[..N], p[N..2 * N].to_vec(), p[2 * N]);
        saxpy_cuda::cpu(N, a, x, &mut y);
        y
    };
    check_fwd_rev(&Case {
        name: "saxpy kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (x, mut y, a) = (&p[..N], p[N..2 * N].to_vec(), p[2 * N]);
            let (dx, mut dy, da) = (&v[..N], v[N..2 * N].to_vec(), v[2 * N]);
            for i in 0..N {
                saxpy_fwd(i, a, da, x, dx, &mut y, &mut dy);
            }
            (y, dy)
        },
        vjp: &|p, w| {
            let (x, mut y, a) = (&p[..N], p[N..2 * N].to_vec(), p[2 * N]);
            let (mut dx, mut dy) = (zeros(N), w.to_vec());
            let da = saxpy_cuda::cpu_rev(N, a, x, &mut dx, &mut y, &mut dy);
            (y, cat(&[&dx, &dy, &[da]]))
        },
        tols: TOLS,
    });
}

#[test]
fn cpu_reference_heat() {
    // Inputs: u, r; outputs: out.
    let point: Vec<f64> = (0..N + 1).map(|k| (0.53 * k as f64).cos() * 0.4).collect();
    let primal = |p: &[f64]| {
        let mut out = zeros(N);
        heat_cuda::cpu(N, &p[..N], &mut out, p[N]);
        out
    };
    check_fwd_rev(&Case {
        name: "heat kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut out, mut dout) = (zeros(N), zeros(N));
            for i in 0..N {
                heat_fwd(i, &p[..N], &v[..N], &mut out, &mut dout, p[N], v[N]);
            }
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut out, mut dout, mut du) = (zeros(N), w.to_vec(), zeros(N));
            let dr = heat_cuda::cpu_rev(N, &p[..N], &mut du, &mut out, &mut dout, p[N]);
            (out, cat(&[&du, &[dr]]))
        },
        tols: TOLS,
    });
}

#[test]
fn cpu_reference_energy() {
    // Inputs: x, w, total (before); outputs: total (after).
    let point: Vec<f64> = (0..N + 2).map(|k| (0.29 * k as f64).sin()).collect();
    let primal = |p: &[f64]| {
        let mut total = vec![p[N + 1]];
        energy_cuda::cpu(N, &p[..N], p[N], &mut total);
        total
    };
    check_fwd_rev(&Case {
        name: "energy kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut t, mut dt) = (vec![p[N + 1]], vec![v[N + 1]]);
            for i in 0..N {
                energy_fwd(i, &p[..N], &v[..N], p[N], v[N], &mut t, &mut dt);
            }
            (t, dt)
        },
        vjp: &|p, w| {
            let (mut t, mut dt, mut dx) = (vec![p[N + 1]], w.to_vec(), zeros(N));
            let dw = energy_cuda::cpu_rev(N, &p[..N], &mut dx, p[N], &mut t, &mut dt);
            (t, cat(&[&dx, &[dw], &dt]))
        },
        tols: TOLS,
    });
}

#[test]
fn cpu_reference_split_energy() {
    // Inputs: x (both signs), c, totals (before); outputs: totals (after).
    let point: Vec<f64> = (0..N + 4).map(|k| (0.83 * k as f64 + 0.4).sin()).collect();
    assert!(point[..N].iter().any(|x| *x > 0.0) && point[..N].iter().any(|x| *x < 0.0));
    let primal = |p: &[f64]| {
        let mut totals = p[N + 2..].to_vec();
        split_energy_cuda::cpu(N, &p[..N], &p[N..N + 2], &mut totals);
        totals
    };
    check_fwd_rev(&Case {
        name: "split_energy kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut t, mut dt) = (p[N + 2..].to_vec(), v[N + 2..].to_vec());
            for i in 0..N {
                let (x, dx, c, dc) = (&p[..N], &v[..N], &p[N..N + 2], &v[N..N + 2]);
                split_energy_fwd(i, x, dx, c, dc, &mut t, &mut dt);
            }
            (t, dt)
        },
        vjp: &|p, w| {
            let (mut t, mut dt, mut dx, mut dc) =
                (p[N + 2..].to_vec(), w.to_vec(), zeros(N), zeros(2));
            split_energy_cuda::cpu_rev(N, &p[..N], &mut dx, &p[N..N + 2], &mut dc, &mut t, &mut dt);
            (t, cat(&[&dx, &dc, &dt]))
        },
        tols: TOLS,
    });
}

#[test]
fn cpu_reference_gather() {
    let idx = indices();
    let point: Vec<f64> = (0..N).map(|k| (0.61 * k as f64).cos() + 0.1).collect();
    let primal = |p: &[f64]| {
        let mut y = zeros(N);
        gather_cuda::cpu(N, p, &idx, &mut y);
        y
    };
    check_fwd_rev(&Case {
        name: "gather kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut y, mut dy) = (zeros(N), zeros(N));
            for i in 0..N {
                gather_fwd(i, p, v, &idx, &mut y, &mut dy);
            }
            (y, dy)
        },
        vjp: &|p, w| {
            let (mut y, mut dy, mut dx) = (zeros(N), w.to_vec(), zeros(N));
            gather_cuda::cpu_rev(N, p, &mut dx, &idx, &mut y, &mut dy);
            (y, dx)
        },
        tols: TOLS,
    });
}

#[test]
fn cpu_reference_score() {
    // 4 poses (x, y, z) and 6 atoms (x, y, z, charge): inputs poses then atoms.
    let (np, na) = (4, 6);
    let point: Vec<f64> = (0..3 * np + 4 * na)
        .map(|k| 1.3 * (0.71 * k as f64).sin())
        .collect();
    let split_at = 3 * np;
    let primal = |p: &[f64]| {
        let mut e = zeros(np);
        score_cuda::cpu(np, &p[..split_at], &p[split_at..], &mut e);
        e
    };
    // Both branches are taken at this point.
    let (mut near, mut far) = (false, false);
    for i in 0..np {
        for a in 0..na {
            let r2: f64 = (0..3)
                .map(|c| (point[split_at + 4 * a + c] - point[3 * i + c]).powi(2))
                .sum::<f64>()
                + 0.5;
            near |= r2 < 4.0;
            far |= r2 >= 4.0;
        }
    }
    assert!(near && far, "both branches");
    check_fwd_rev(&Case {
        name: "score kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut e, mut de) = (zeros(np), zeros(np));
            for i in 0..np {
                score_fwd(
                    i,
                    &p[..split_at],
                    &v[..split_at],
                    &p[split_at..],
                    &v[split_at..],
                    &mut e,
                    &mut de,
                );
            }
            (e, de)
        },
        vjp: &|p, w| {
            let (mut e, mut de) = (zeros(np), w.to_vec());
            let (mut dposes, mut datoms) = (zeros(split_at), zeros(4 * na));
            score_cuda::cpu_rev(
                np,
                &p[..split_at],
                &mut dposes,
                &p[split_at..],
                &mut datoms,
                &mut e,
                &mut de,
            );
            (e, cat(&[&dposes, &datoms]))
        },
        tols: TOLS,
    });
}

#[test]
fn cpu_reference_heat2d() {
    // A 5 × 4 grid: inputs u and r; outputs out.
    let (m, w) = (5, 4);
    let cells = m * w;
    let point: Vec<f64> = (0..cells + 1)
        .map(|k| (0.47 * k as f64).sin() * 0.8)
        .collect();
    let primal = |p: &[f64]| {
        let mut out = zeros(cells);
        heat2d_cuda::cpu(cells, &p[..cells], &mut out, w, p[cells]);
        out
    };
    check_fwd_rev(&Case {
        name: "heat2d kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut out, mut dout) = (zeros(cells), zeros(cells));
            for i in 0..cells {
                heat2d_fwd(
                    i,
                    &p[..cells],
                    &v[..cells],
                    &mut out,
                    &mut dout,
                    w,
                    p[cells],
                    v[cells],
                );
            }
            (out, dout)
        },
        vjp: &|p, wbar| {
            let (mut out, mut dout, mut du) = (zeros(cells), wbar.to_vec(), zeros(cells));
            let dr = heat2d_cuda::cpu_rev(
                cells,
                &p[..cells],
                &mut du,
                &mut out,
                &mut dout,
                w,
                p[cells],
            );
            (out, cat(&[&du, &[dr]]))
        },
        tols: TOLS,
    });
    // The four neighbours' adds are gathered: no atomic add into du.
    assert!(!heat2d_cuda::ADJOINT.contains("atomicAdd(&du["));
}

#[test]
fn cpu_reference_row_peak() {
    // 5 rows of 4, won by their first entry (rows 1 and 3) or by a later one; inputs a,
    // outputs out.
    let (rows, w) = (5, 4);
    let point = [
        0.2, 1.1, -0.4, 0.7, 1.9, 0.3, -1.2, 1.4, -0.6, -0.9, 0.8, 0.1, 1.5, -0.2, 0.4, 0.9, -0.3,
        0.6, 1.2, -0.8,
    ];
    let primal = |p: &[f64]| {
        let mut out = zeros(rows);
        row_peak_cuda::cpu(rows, p, &mut out, w);
        out
    };
    check_fwd_rev(&Case {
        name: "row_peak kernel (CPU)",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let (mut out, mut dout) = (zeros(rows), zeros(rows));
            for i in 0..rows {
                row_peak_fwd(i, p, v, &mut out, &mut dout, w);
            }
            (out, dout)
        },
        vjp: &|p, wbar| {
            let (mut out, mut dout, mut da) = (zeros(rows), wbar.to_vec(), zeros(rows * w));
            row_peak_cuda::cpu_rev(rows, p, &mut da, &mut out, &mut dout, w);
            (out, da)
        },
        tols: TOLS,
    });
    // The adjoint reaches the entry that won, at a computed index.
    assert!(row_peak_cuda::ADJOINT.contains("atomicAdd(&da[v"));
}

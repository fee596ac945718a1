//! Kernels from `#[differentiate(forward, reverse, cuda)]` element functions
//! (`--features cuda`):
//! - NVRTC compiles every generated primal and adjoint kernel to PTX (NVRTC comes from the
//!   wheel `scripts/test-all` installs; without it the test prints a notice, unless
//!   `PHIDIFF_REQUIRE_NVRTC=1`);
//! - the CPU reference — the element function run for every index — passes central
//!   finite differences and the dot-product test (`common::TOLS`) as a function of all
//!   its inputs, through `_fwd` and `_rev` run for every index;
//! - the adds of each adjoint kernel are classified as the module docs of
//!   `ad-macros/src/codegen/cuda.rs` say: plain at the thread index, warp-aggregated at a
//!   uniform address, atomic elsewhere.

mod common;

use common::*;
use phidiff::cuda::{compile, nvrtc_available, CudaError};
use phidiff::differentiate;

#[differentiate(forward, reverse, cuda)]
pub fn saxpy(i: usize, a: f64, x: &[f64], y: &mut [f64]) {
    y[i] = a * x[i] + y[i];
}

/// A nonlinear heat step with fixed ends (an early return at the boundary).
#[differentiate(forward, reverse, cuda)]
pub fn heat(i: usize, u: &[f64], out: &mut [f64], r: f64) {
    let n = u.len();
    if i == 0 || i == n - 1 {
        out[i] = u[i];
        return;
    }
    out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + u[i].sin());
}

/// A reduction of every element into one scalar (a uniform address).
#[differentiate(forward, reverse, cuda)]
pub fn energy(i: usize, x: &[f64], w: f64, total: &mut [f64]) {
    total[0] += w * x[i] * x[i].exp();
}

/// A gather at random indices (atomic adds in the adjoint).
#[differentiate(forward, reverse, cuda)]
pub fn gather(i: usize, x: &[f64], idx: &[usize], y: &mut [f64]) {
    y[i] = (0.3 * x[idx[i]]).sin() * x[i];
}

fn kernels() -> [(&'static str, &'static str, &'static str, &'static str); 4] {
    [
        (
            saxpy_cuda::PRIMAL_NAME,
            saxpy_cuda::PRIMAL,
            saxpy_cuda::ADJOINT_NAME,
            saxpy_cuda::ADJOINT,
        ),
        (
            heat_cuda::PRIMAL_NAME,
            heat_cuda::PRIMAL,
            heat_cuda::ADJOINT_NAME,
            heat_cuda::ADJOINT,
        ),
        (
            energy_cuda::PRIMAL_NAME,
            energy_cuda::PRIMAL,
            energy_cuda::ADJOINT_NAME,
            energy_cuda::ADJOINT,
        ),
        (
            gather_cuda::PRIMAL_NAME,
            gather_cuda::PRIMAL,
            gather_cuda::ADJOINT_NAME,
            gather_cuda::ADJOINT,
        ),
    ]
}

#[test]
fn every_kernel_compiles_with_nvrtc() {
    if !nvrtc_available() {
        if std::env::var("PHIDIFF_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("{}", CudaError::NoNvrtc);
        }
        eprintln!(
            "every_kernel_compiles_with_nvrtc: skipped, {}",
            CudaError::NoNvrtc
        );
        return;
    }
    for (primal_name, primal, adjoint_name, adjoint) in kernels() {
        for (name, source) in [(primal_name, primal), (adjoint_name, adjoint)] {
            let ptx = compile(name, source).unwrap_or_else(|e| panic!("{e}\n{source}"));
            assert!(
                ptx.to_src().contains(&format!(".entry {name}")),
                "{name}: no entry in the PTX"
            );
        }
    }
}

#[test]
fn adds_are_classified_by_index() {
    // saxpy: every add at the thread index; the scalar adjoint of `a` is warp-aggregated.
    assert!(saxpy_cuda::ADJOINT.contains("dx[i] += "));
    assert!(saxpy_cuda::ADJOINT.contains("phidiff_add_uniform(&phidiff_adjoints[0]"));
    assert!(!saxpy_cuda::ADJOINT.contains("atomicAdd(&dx"));
    // heat: the neighbours' adjoints are atomic, the own one is plain.
    assert!(heat_cuda::ADJOINT.contains("du[i] += "));
    assert!(heat_cuda::ADJOINT.contains("atomicAdd(&du["));
    // energy: one address for every thread, warp-aggregated in the primal too.
    assert!(energy_cuda::PRIMAL.contains("phidiff_add_uniform(&total[0LL]"));
    // gather: the computed index is atomic.
    assert!(gather_cuda::ADJOINT.contains("atomicAdd(&dx[v"));
}

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
        for i in 0..N {
            saxpy(i, a, x, &mut y);
        }
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
            let (mut dx, mut dy, mut da) = (zeros(N), w.to_vec(), 0.0);
            for i in 0..N {
                da += saxpy_rev(i, a, x, &mut dx, &mut y, &mut dy);
            }
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
        for i in 0..N {
            heat(i, &p[..N], &mut out, p[N]);
        }
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
            let (mut out, mut dout, mut du, mut dr) = (zeros(N), w.to_vec(), zeros(N), 0.0);
            for i in 0..N {
                dr += heat_rev(i, &p[..N], &mut du, &mut out, &mut dout, p[N]);
            }
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
        for i in 0..N {
            energy(i, &p[..N], p[N], &mut total);
        }
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
            let (mut t, mut dt, mut dx, mut dw) = (vec![p[N + 1]], w.to_vec(), zeros(N), 0.0);
            for i in 0..N {
                dw += energy_rev(i, &p[..N], &mut dx, p[N], &mut t, &mut dt);
            }
            (t, cat(&[&dx, &[dw], &dt]))
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
        for i in 0..N {
            gather(i, p, &idx, &mut y);
        }
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
            for i in 0..N {
                gather_rev(i, p, &mut dx, &idx, &mut y, &mut dy);
            }
            (y, dx)
        },
        tols: TOLS,
    });
}

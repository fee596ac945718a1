//! The element functions of the CUDA tests (`tests/cuda_kernels.rs`) and benchmark
//! (`examples/cuda_bench.rs`), each with `#[differentiate(forward, reverse, cuda)]`: its
//! `_fwd`, `_rev`, and `<name>_cuda` module (kernel sources, device and CPU launchers).
#![allow(dead_code)]

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

/// Pose scoring in the spirit of miniBUDE: pose `i` (a translation) against every atom
/// (position and charge), a branch on the distance.
#[differentiate(forward, reverse, cuda)]
pub fn score(i: usize, poses: &[f64], atoms: &[f64], energy: &mut [f64]) {
    let tx = poses[3 * i];
    let ty = poses[3 * i + 1];
    let tz = poses[3 * i + 2];
    let mut e = 0.0;
    for a in 0..atoms.len() / 4 {
        let dx = atoms[4 * a] - tx;
        let dy = atoms[4 * a + 1] - ty;
        let dz = atoms[4 * a + 2] - tz;
        let r2 = dx * dx + dy * dy + dz * dz + 0.5;
        let q = atoms[4 * a + 3];
        if r2 < 4.0 {
            e += q / r2;
        } else {
            e += q * (-r2).exp();
        }
    }
    energy[i] = e;
}

/// One explicit 2-D heat step on a `m × w` grid stored by rows, one thread per cell, with a
/// nonlinear conductivity; the boundary cells are copied.
#[differentiate(forward, reverse, cuda)]
pub fn heat2d(i: usize, u: &[f64], out: &mut [f64], w: usize, r: f64) {
    let m = u.len() / w;
    let row = i / w;
    let col = i % w;
    if row == 0 || row == m - 1 || col == 0 || col == w - 1 {
        out[i] = u[i];
        return;
    }
    let c = u[i];
    let lap = u[i - w] + u[i + w] + u[i - 1] + u[i + 1] - 4.0 * c;
    out[i] = c + r * lap * (1.0 + 0.1 * c * c);
}

/// The largest entry of row `i` (of `w`), squared: a max reduction, reversed through the
/// entry that won (`ad-macros/src/derivative/reverse/extremum.rs`), so its adjoint kernel
/// needs no tape.
#[differentiate(forward, reverse, cuda)]
pub fn row_peak(i: usize, a: &[f64], out: &mut [f64], w: usize) {
    let mut m = a[i * w];
    for j in 1..w {
        m = m.max(a[i * w + j]);
    }
    out[i] = m * m;
}

/// Two sums, one chosen per element by its sign: a branch that splits each warp, so the
/// adds at the shared addresses `totals[k]` (and, in the adjoint, `dc[k]`) run with part of
/// the warp active.
#[differentiate(forward, reverse, cuda)]
pub fn split_energy(i: usize, x: &[f64], c: &[f64], totals: &mut [f64]) {
    if x[i] > 0.0 {
        totals[0] += c[0] * x[i] * x[i];
    } else {
        totals[1] += (c[1] * x[i]).sin();
    }
}

//! Kernels from `#[differentiate(forward, reverse, cuda)]` element functions
//! (`--features cuda`):
//! - NVRTC compiles every generated primal and adjoint kernel to PTX (NVRTC comes from the
//!   wheel `scripts/test-all` installs; without it the test prints a notice, unless
//!   `PHIDIFF_REQUIRE_NVRTC=1`);
//! - the adds of each adjoint kernel are classified as the module docs of
//!   `ad-macros/src/codegen/cuda.rs` and `docs/cuda.md` say (owned, gathered, block-summed,
//!   warp-aggregated, atomic), `atomicAdd`s counted per kernel;
//! - the gather form's CPU launcher equals `_rev` run for every index; a kernel without a
//!   sound gather form keeps its atomics and passes finite differences;
//! - with a GPU, every kernel's launches equal the CPU launchers.
//!
//! The CPU launchers of the benchmark kernels against finite differences and the
//! dot-product test are in `tests/cuda_cpu_reference.rs`.

mod common;

#[path = "../benches/support/cuda_kernels.rs"]
mod kernels;

use common::*;
use kernels::*;
use phidiff::cuda::{compile, nvrtc_available, CudaError};

fn kernels() -> [(&'static str, &'static str, &'static str, &'static str); 8] {
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
        (
            heat2d_cuda::PRIMAL_NAME,
            heat2d_cuda::PRIMAL,
            heat2d_cuda::ADJOINT_NAME,
            heat2d_cuda::ADJOINT,
        ),
        (
            score_cuda::PRIMAL_NAME,
            score_cuda::PRIMAL,
            score_cuda::ADJOINT_NAME,
            score_cuda::ADJOINT,
        ),
        (
            row_peak_cuda::PRIMAL_NAME,
            row_peak_cuda::PRIMAL,
            row_peak_cuda::ADJOINT_NAME,
            row_peak_cuda::ADJOINT,
        ),
        (
            split_energy_cuda::PRIMAL_NAME,
            split_energy_cuda::PRIMAL,
            split_energy_cuda::ADJOINT_NAME,
            split_energy_cuda::ADJOINT,
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
    let finishing = [
        (heat_cuda::FINISH_NAME, heat_cuda::ADJOINT),
        (heat2d_cuda::FINISH_NAME, heat2d_cuda::ADJOINT),
        (conserve_cuda::FINISH_NAME, conserve_cuda::ADJOINT),
    ]
    .map(|(name, source)| (name.expect("a finishing kernel"), source));
    for (primal_name, primal, adjoint_name, adjoint) in kernels() {
        for (name, source) in [(primal_name, primal), (adjoint_name, adjoint)]
            .into_iter()
            .chain(finishing)
        {
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
    // saxpy: every add at the thread index; the scalar adjoint of `a` is summed over the
    // block, which every thread reaches (the threads past n skip the body, not return).
    assert!(saxpy_cuda::ADJOINT.contains("dx[i] += "));
    assert!(
        saxpy_cuda::ADJOINT.contains("phidiff_add_block(&phidiff_adjoints[0], phidiff_scalar0)")
    );
    assert!(!saxpy_cuda::ADJOINT.contains("return;"));
    assert!(saxpy_cuda::PRIMAL.contains("return;"));
    assert!(!saxpy_cuda::ADJOINT.contains("atomicAdd(&dx"));
    // heat: the gather form (derivative::gather): thread i sums what lands on du[i] (its
    // own adjoint and its neighbours' at i - 1 and i + 1, recomputed) and adds it once;
    // the neighbours it recomputes are guarded by the number of elements.
    for (adjoint, finish) in [
        (heat_cuda::ADJOINT, heat_cuda::FINISH_NAME),
        (heat2d_cuda::ADJOINT, heat2d_cuda::FINISH_NAME),
        (conserve_cuda::ADJOINT, conserve_cuda::FINISH_NAME),
    ] {
        let (gather, rest) = kernel_text(adjoint, finish.expect("a finishing kernel"));
        assert!(gather.contains("du[i] += "), "{gather}");
        assert!(!gather.contains("atomicAdd(&du"), "{gather}");
        assert!(gather.contains("< phidiff_elements"), "{gather}");
        // The neighbours read dout[i - 1] and dout[i + 1], so the clearing of dout[i]
        // waits for the finishing kernel.
        assert!(!gather.contains("dout[i] = 0.0;"), "{gather}");
        assert!(rest.contains("dout[i] = 0.0;"), "{rest}");
        assert!(!rest.contains("du["), "{rest}");
    }
    assert!(heat2d_cuda::ADJOINT.contains("i >= w"));
    // energy: one address for every thread, once per thread: summed over the block, one
    // atomic add per block, in the primal and in the adjoint's forward sweep.
    for source in [energy_cuda::PRIMAL, energy_cuda::ADJOINT] {
        assert!(source.contains("phidiff_add_block(&total[phidiff_at0], phidiff_sum0)"));
        assert!(!source.contains("phidiff_add_uniform("));
    }
    // gather: the computed index is atomic.
    assert!(gather_cuda::ADJOINT.contains("atomicAdd(&dx[v"));
    // score: the atom loop's index is the same in every thread (its bounds are), so the
    // atoms' adjoints are warp-aggregated; the poses' at 3i + k, k < 3, are the thread's
    // own: plain adds.
    assert!(score_cuda::ADJOINT.contains("phidiff_add_uniform(&datoms[v"));
    assert!(!score_cuda::ADJOINT.contains("atomicAdd(&datoms["));
    assert!(score_cuda::ADJOINT.contains("dposes[v"));
    assert!(!score_cuda::ADJOINT.contains("atomicAdd(&dposes"));
    assert_eq!(score_cuda::FINISH_NAME, None);
    // split_energy: warp-aggregated adds inside a branch, in both kernels.
    assert!(split_energy_cuda::PRIMAL.contains("phidiff_add_uniform(&totals[1LL]"));
    assert!(split_energy_cuda::ADJOINT.contains("phidiff_add_uniform(&dc[1LL]"));
    assert!(split_energy_cuda::ADJOINT.contains("dx[i] += "));
}

/// The text of the first kernel of `source` and of the rest from kernel `second` on.
fn kernel_text<'a>(source: &'a str, second: &str) -> (&'a str, &'a str) {
    let at = source
        .find(&format!("__global__ void {second}("))
        .unwrap_or_else(|| panic!("no kernel {second} in\n{source}"));
    source.split_at(at)
}

/// Each kernel of a source with its number of `atomicAdd` calls, not counting those of
/// the `phidiff_*` helpers (which first sum over a warp or a block).
fn atomics(source: &str) -> Vec<(String, usize)> {
    source
        .split("extern \"C\" __global__ void ")
        .skip(1)
        .map(|k| {
            let name = k.split('(').next().unwrap_or_default().to_string();
            // The body ends where the next generated text begins.
            let body = k
                .split("// Generated by phidiff")
                .next()
                .unwrap_or_default();
            (name, body.matches("atomicAdd(").count())
        })
        .collect()
}

#[test]
fn atomic_adds_per_adjoint_kernel() {
    // Before the gather form (issue 50): heat 4, heat2d 6, conserve 4, score 3.
    let want: [(&str, &[(&str, usize)]); 9] = [
        (saxpy_cuda::ADJOINT, &[("saxpy_rev", 0)]),
        (
            heat_cuda::ADJOINT,
            &[("heat_rev", 0), ("heat_rev_finish", 0)],
        ),
        (
            heat2d_cuda::ADJOINT,
            &[("heat2d_rev", 0), ("heat2d_rev_finish", 0)],
        ),
        (
            conserve_cuda::ADJOINT,
            &[("conserve_rev", 0), ("conserve_rev_finish", 0)],
        ),
        // adds at one address: summed over the block (energy), warp-aggregated
        // (`phidiff_add_uniform`) in a branch or a loop
        (energy_cuda::ADJOINT, &[("energy_rev", 0)]),
        (split_energy_cuda::ADJOINT, &[("split_energy_rev", 0)]),
        (score_cuda::ADJOINT, &[("score_rev", 0)]),
        // computed indices: x[idx[i]] (and x[i], which it may meet), a row's winner
        (gather_cuda::ADJOINT, &[("gather_rev", 2)]),
        (row_peak_cuda::ADJOINT, &[("row_peak_rev", 2)]),
    ];
    for (source, kernels) in want {
        let got = atomics(source);
        let want: Vec<(String, usize)> = kernels.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(got, want, "{source}");
    }
    assert_eq!(heat_cuda::FINISH_NAME, Some("heat_rev_finish"));
    assert_eq!(saxpy_cuda::FINISH_NAME, None);
    assert_eq!(gather_cuda::FINISH_NAME, None);
}

/// Elements of the CPU checks here.
const N: usize = 9;

/// With a CUDA device: every kernel's primal and adjoint launch equal the CPU reference.
/// Without one, a notice.
#[test]
fn gpu_matches_cpu() {
    use phidiff::cuda::Gpu;
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("gpu_matches_cpu: skipped, {e}");
            return;
        }
    };
    let n = 1000;
    let close = |what: &str, got: &[f64], want: &[f64]| {
        let scale = want.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * scale,
                "{what}[{k}]: GPU {g} vs CPU {w}"
            );
        }
    };
    let field = |salt: f64| -> Vec<f64> { (0..n).map(|k| (salt * k as f64).sin()).collect() };

    // saxpy
    let (x, y0, a) = (field(0.1), field(0.2), 1.7);
    let (dx_d, mut y_d) = (gpu.upload(&x).unwrap(), gpu.upload(&y0).unwrap());
    saxpy_cuda::launch(&gpu, n, a, &dx_d, &mut y_d).unwrap();
    let mut y = y0.clone();
    saxpy_cuda::cpu(n, a, &x, &mut y);
    close("saxpy y", &gpu.download(&y_d).unwrap(), &y);
    let ybar = field(0.3);
    let (mut y_d, mut gx_d, mut gy_d) = (
        gpu.upload(&y0).unwrap(),
        gpu.zeros::<f64>(n).unwrap(),
        gpu.upload(&ybar).unwrap(),
    );
    let ga = saxpy_cuda::launch_rev(&gpu, n, a, &dx_d, &mut gx_d, &mut y_d, &mut gy_d).unwrap();
    let (mut y, mut gx, mut gy) = (y0.clone(), zeros(n), ybar.clone());
    let ga_cpu = saxpy_cuda::cpu_rev(n, a, &x, &mut gx, &mut y, &mut gy);
    close("saxpy x̄", &gpu.download(&gx_d).unwrap(), &gx);
    close("saxpy ā", &[ga], &[ga_cpu]);

    // heat
    let u = field(0.05);
    let u_d = gpu.upload(&u).unwrap();
    let (mut out_d, mut dout_d, mut du_d) = (
        gpu.zeros::<f64>(n).unwrap(),
        gpu.upload(&ybar).unwrap(),
        gpu.zeros::<f64>(n).unwrap(),
    );
    let dr = heat_cuda::launch_rev(&gpu, n, &u_d, &mut du_d, &mut out_d, &mut dout_d, 0.2).unwrap();
    let (mut out, mut dout, mut du) = (zeros(n), ybar.clone(), zeros(n));
    let dr_cpu = heat_cuda::cpu_rev(n, &u, &mut du, &mut out, &mut dout, 0.2);
    close("heat ū", &gpu.download(&du_d).unwrap(), &du);
    close("heat r̄", &[dr], &[dr_cpu]);
    // Cleared by the finishing kernel, after the neighbours read it.
    close("heat dout", &gpu.download(&dout_d).unwrap(), &dout);

    // heat over a prefix of the elements: the gather kernel also runs on the elements
    // past the threads, which the last threads' neighbour adds reach.
    let part = n - 7;
    let (mut out_d, mut dout_d, mut du_d) = (
        gpu.zeros::<f64>(n).unwrap(),
        gpu.upload(&ybar).unwrap(),
        gpu.zeros::<f64>(n).unwrap(),
    );
    let dr =
        heat_cuda::launch_rev(&gpu, part, &u_d, &mut du_d, &mut out_d, &mut dout_d, 0.2).unwrap();
    let (mut out, mut dout, mut du) = (zeros(n), ybar.clone(), zeros(n));
    let dr_cpu = heat_cuda::cpu_rev(part, &u, &mut du, &mut out, &mut dout, 0.2);
    assert!(du[part] != 0.0);
    close("heat ū (prefix)", &gpu.download(&du_d).unwrap(), &du);
    close("heat dout (prefix)", &gpu.download(&dout_d).unwrap(), &dout);
    close("heat out (prefix)", &gpu.download(&out_d).unwrap(), &out);
    close("heat r̄ (prefix)", &[dr], &[dr_cpu]);

    // heat2d (a 2-D stencil step)
    let w = 40;
    let cells = (n / w) * w;
    let u2 = field(0.03)[..cells].to_vec();
    let u2_d = gpu.upload(&u2).unwrap();
    let (mut out_d, mut dout_d, mut du_d) = (
        gpu.zeros::<f64>(cells).unwrap(),
        gpu.upload(&ybar[..cells]).unwrap(),
        gpu.zeros::<f64>(cells).unwrap(),
    );
    heat2d_cuda::launch(&gpu, cells, &u2_d, &mut out_d, w, 0.2).unwrap();
    let mut out = zeros(cells);
    heat2d_cuda::cpu(cells, &u2, &mut out, w, 0.2);
    close("heat2d out", &gpu.download(&out_d).unwrap(), &out);
    let dr = heat2d_cuda::launch_rev(
        &gpu,
        cells,
        &u2_d,
        &mut du_d,
        &mut out_d,
        &mut dout_d,
        w,
        0.2,
    )
    .unwrap();
    let (mut out, mut dout, mut du) = (zeros(cells), ybar[..cells].to_vec(), zeros(cells));
    let dr_cpu = heat2d_cuda::cpu_rev(cells, &u2, &mut du, &mut out, &mut dout, w, 0.2);
    close("heat2d ū", &gpu.download(&du_d).unwrap(), &du);
    close("heat2d r̄", &[dr], &[dr_cpu]);

    // energy (warp-aggregated reduction)
    let (mut t_d, mut dt_d, mut dx_d) = (
        gpu.upload(&[0.5]).unwrap(),
        gpu.upload(&[1.0]).unwrap(),
        gpu.zeros::<f64>(n).unwrap(),
    );
    let x_d = gpu.upload(&x).unwrap();
    energy_cuda::launch(&gpu, n, &x_d, 0.3, &mut t_d).unwrap();
    let mut t = vec![0.5];
    energy_cuda::cpu(n, &x, 0.3, &mut t);
    close("energy total", &gpu.download(&t_d).unwrap(), &t);
    let mut t_d = gpu.upload(&[0.5]).unwrap();
    let dw = energy_cuda::launch_rev(&gpu, n, &x_d, &mut dx_d, 0.3, &mut t_d, &mut dt_d).unwrap();
    let (mut t, mut dt, mut gx) = (vec![0.5], vec![1.0], zeros(n));
    let dw_cpu = energy_cuda::cpu_rev(n, &x, &mut gx, 0.3, &mut t, &mut dt);
    close("energy x̄", &gpu.download(&dx_d).unwrap(), &gx);
    close("energy w̄", &[dw], &[dw_cpu]);

    // gather (atomic scatter)
    let idx: Vec<usize> = (0..n).map(|k| (k * 7919 + 13) % n).collect();
    let idx_d = gpu.upload(&idx).unwrap();
    let (mut y_d, mut dy_d, mut gx_d) = (
        gpu.zeros::<f64>(n).unwrap(),
        gpu.upload(&ybar).unwrap(),
        gpu.zeros::<f64>(n).unwrap(),
    );
    gather_cuda::launch_rev(&gpu, n, &x_d, &mut gx_d, &idx_d, &mut y_d, &mut dy_d).unwrap();
    let (mut y, mut dy, mut gx) = (zeros(n), ybar.clone(), zeros(n));
    gather_cuda::cpu_rev(n, &x, &mut gx, &idx, &mut y, &mut dy);
    close("gather x̄", &gpu.download(&gx_d).unwrap(), &gx);

    // score
    let (np, na) = (256, 64);
    let poses: Vec<f64> = (0..3 * np).map(|k| 2.0 * (0.37 * k as f64).sin()).collect();
    let atoms: Vec<f64> = (0..4 * na).map(|k| 2.0 * (0.53 * k as f64).cos()).collect();
    let (p_d, a_d) = (gpu.upload(&poses).unwrap(), gpu.upload(&atoms).unwrap());
    let ebar: Vec<f64> = (0..np).map(|k| (0.11 * k as f64).cos()).collect();
    let (mut e_d, mut de_d) = (gpu.zeros::<f64>(np).unwrap(), gpu.upload(&ebar).unwrap());
    let (mut dp_d, mut da_d) = (
        gpu.zeros::<f64>(3 * np).unwrap(),
        gpu.zeros::<f64>(4 * na).unwrap(),
    );
    score_cuda::launch_rev(
        &gpu, np, &p_d, &mut dp_d, &a_d, &mut da_d, &mut e_d, &mut de_d,
    )
    .unwrap();
    let (mut e, mut de, mut dp, mut da) = (zeros(np), ebar.clone(), zeros(3 * np), zeros(4 * na));
    score_cuda::cpu_rev(np, &poses, &mut dp, &atoms, &mut da, &mut e, &mut de);
    close("score pose adjoints", &gpu.download(&dp_d).unwrap(), &dp);
    close("score atom adjoints", &gpu.download(&da_d).unwrap(), &da);

    // row_peak (the adjoint reaches each row's winner)
    let (rows, w) = (n / 8, 8);
    let a = field(0.71)[..rows * w].to_vec();
    let a_d = gpu.upload(&a).unwrap();
    let (mut out_d, mut dout_d, mut da_d) = (
        gpu.zeros::<f64>(rows).unwrap(),
        gpu.upload(&ybar[..rows]).unwrap(),
        gpu.zeros::<f64>(rows * w).unwrap(),
    );
    row_peak_cuda::launch_rev(&gpu, rows, &a_d, &mut da_d, &mut out_d, &mut dout_d, w).unwrap();
    let (mut out, mut dout, mut da) = (zeros(rows), ybar[..rows].to_vec(), zeros(rows * w));
    row_peak_cuda::cpu_rev(rows, &a, &mut da, &mut out, &mut dout, w);
    close("row_peak out", &gpu.download(&out_d).unwrap(), &out);
    close("row_peak ā", &gpu.download(&da_d).unwrap(), &da);

    // conserve (a plain helper inlined into the kernels, issue 48)
    let (mut out_d, mut dout_d, mut du_d) = (
        gpu.zeros::<f64>(n).unwrap(),
        gpu.upload(&ybar).unwrap(),
        gpu.zeros::<f64>(n).unwrap(),
    );
    conserve_cuda::launch(&gpu, n, &u_d, &mut out_d, 0.3).unwrap();
    let mut out = zeros(n);
    conserve_cuda::cpu(n, &u, &mut out, 0.3);
    close("conserve out", &gpu.download(&out_d).unwrap(), &out);
    let dk =
        conserve_cuda::launch_rev(&gpu, n, &u_d, &mut du_d, &mut out_d, &mut dout_d, 0.3).unwrap();
    let (mut out, mut dout, mut du) = (zeros(n), ybar.clone(), zeros(n));
    let dk_cpu = conserve_cuda::cpu_rev(n, &u, &mut du, &mut out, &mut dout, 0.3);
    close("conserve ū", &gpu.download(&du_d).unwrap(), &du);
    close("conserve k̄", &[dk], &[dk_cpu]);

    // split_energy (aggregated adds with part of each warp active; n is no multiple of
    // 32): the CPU's results, for every block size below.
    let c = [0.7, 1.3];
    let (t0, tbar) = ([0.25, -0.5], [1.5, -0.75]);
    let mut t = t0.to_vec();
    split_energy_cuda::cpu(n, &x, &c, &mut t);
    let (mut t_rev, mut dt, mut gx, mut gc) = (t0.to_vec(), tbar.to_vec(), zeros(n), zeros(2));
    split_energy_cuda::cpu_rev(n, &x, &mut gx, &c, &mut gc, &mut t_rev, &mut dt);

    // Blocks of the default size and of others, down to less than a warp and with a
    // partial last warp: the block sums of the scalar adjoints (heat's r̄) and the
    // aggregated adds (split_energy's) leave out the lanes past the block's end.
    for block in [256, 1, 16, 100, 1024] {
        let gpu = Gpu::new(0).unwrap().with_block_size(block);
        let u_d = gpu.upload(&u).unwrap();
        let (mut out_d, mut dout_d, mut du_d) = (
            gpu.zeros::<f64>(n).unwrap(),
            gpu.upload(&ybar).unwrap(),
            gpu.zeros::<f64>(n).unwrap(),
        );
        let dr =
            heat_cuda::launch_rev(&gpu, n, &u_d, &mut du_d, &mut out_d, &mut dout_d, 0.2).unwrap();
        let (mut out, mut dout, mut du) = (zeros(n), ybar.clone(), zeros(n));
        let dr_cpu = heat_cuda::cpu_rev(n, &u, &mut du, &mut out, &mut dout, 0.2);
        let at = |what: &str| format!("{what}, block {block}");
        close(&at("heat ū"), &gpu.download(&du_d).unwrap(), &du);
        close(&at("heat r̄"), &[dr], &[dr_cpu]);

        // energy: one add per thread at total[0], summed over each block.
        let x_d = gpu.upload(&x).unwrap();
        let mut e_d = gpu.upload(&[0.5]).unwrap();
        energy_cuda::launch(&gpu, n, &x_d, 0.3, &mut e_d).unwrap();
        let mut e = vec![0.5];
        energy_cuda::cpu(n, &x, 0.3, &mut e);
        close(&at("energy total"), &gpu.download(&e_d).unwrap(), &e);
        let (mut e_d, mut de_d, mut gx_d) = (
            gpu.upload(&[0.5]).unwrap(),
            gpu.upload(&[1.0]).unwrap(),
            gpu.zeros::<f64>(n).unwrap(),
        );
        let dw =
            energy_cuda::launch_rev(&gpu, n, &x_d, &mut gx_d, 0.3, &mut e_d, &mut de_d).unwrap();
        let (mut e, mut de, mut gx) = (vec![0.5], vec![1.0], zeros(n));
        let dw_cpu = energy_cuda::cpu_rev(n, &x, &mut gx, 0.3, &mut e, &mut de);
        close(&at("energy total (rev)"), &gpu.download(&e_d).unwrap(), &e);
        close(&at("energy x̄"), &gpu.download(&gx_d).unwrap(), &gx);
        close(&at("energy w̄"), &[dw], &[dw_cpu]);

        let c_d = gpu.upload(&c).unwrap();
        let mut t_d = gpu.upload(&t0).unwrap();
        split_energy_cuda::launch(&gpu, n, &x_d, &c_d, &mut t_d).unwrap();
        close(&at("split_energy totals"), &gpu.download(&t_d).unwrap(), &t);
        let (mut t_d, mut dt_d, mut dx_d, mut dc_d) = (
            gpu.upload(&t0).unwrap(),
            gpu.upload(&tbar).unwrap(),
            gpu.zeros::<f64>(n).unwrap(),
            gpu.zeros::<f64>(2).unwrap(),
        );
        split_energy_cuda::launch_rev(
            &gpu, n, &x_d, &mut dx_d, &c_d, &mut dc_d, &mut t_d, &mut dt_d,
        )
        .unwrap();
        close(
            &at("split_energy totals (rev)"),
            &gpu.download(&t_d).unwrap(),
            &t_rev,
        );
        close(&at("split_energy x̄"), &gpu.download(&dx_d).unwrap(), &gx);
        close(&at("split_energy c̄"), &gpu.download(&dc_d).unwrap(), &gc);
    }
}

/// A plain helper (no attribute), inlined into the element function and so into both
/// kernels (issue 48).
fn flux(left: f64, right: f64, k: f64) -> f64 {
    k * (right - left) * (1.0 + 0.5 * (left * right).tanh())
}

/// A conservative update through the helper, fixed ends.
#[phidiff::differentiate(forward, reverse, cuda)]
pub fn conserve(i: usize, u: &[f64], out: &mut [f64], k: f64) {
    let n = u.len();
    if i == 0 || i == n - 1 {
        out[i] = u[i];
        return;
    }
    out[i] = u[i] + flux(u[i], u[i + 1], k) - flux(u[i - 1], u[i], k);
}

#[test]
fn helper_in_a_kernel() {
    assert!(!conserve_cuda::ADJOINT.contains("flux"));
    if nvrtc_available() {
        for (name, source) in [
            (conserve_cuda::PRIMAL_NAME, conserve_cuda::PRIMAL),
            (conserve_cuda::ADJOINT_NAME, conserve_cuda::ADJOINT),
        ] {
            compile(name, source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        }
    }
    // Inputs: u, k; outputs: out.
    let point: Vec<f64> = (0..N + 1).map(|k| (0.41 * k as f64).cos() * 0.8).collect();
    check_fwd_rev(&Case {
        name: "conserve kernel (CPU)",
        x: &point,
        primal: &|p| {
            let mut out = zeros(N);
            conserve_cuda::cpu(N, &p[..N], &mut out, p[N]);
            out
        },
        jvp: &|p, v| {
            let (mut out, mut dout) = (zeros(N), zeros(N));
            for i in 0..N {
                conserve_fwd(i, &p[..N], &v[..N], &mut out, &mut dout, p[N], v[N]);
            }
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut du, mut out, mut dout) = (zeros(N), zeros(N), w.to_vec());
            let dk = conserve_cuda::cpu_rev(N, &p[..N], &mut du, &mut out, &mut dout, p[N]);
            (out, cat(&[&du, &[dk]]))
        },
        tols: TOLS,
    });
}

/// The gather form of the CPU launcher (the same as the adjoint kernel's) against `_rev`
/// run for every index in order, the adjoint before the gather form: the same adjoints (up
/// to the order of the sums: rel 1e-13), outputs and cleared output shadows. Also when
/// the threads cover only a prefix of the elements: the last threads' adds at `i + 1`
/// (and `i + w`) then land on elements past the threads, which the gather form must
/// still sum.
#[test]
fn gather_form_equals_rev_per_index() {
    let len = 48;
    let u: Vec<f64> = (0..len).map(|k| (0.37 * k as f64).sin() + 0.1).collect();
    let ybar: Vec<f64> = (0..len).map(|k| (0.23 * k as f64).cos() - 0.3).collect();
    let same = |what: &str, n: usize, got: &[f64], want: &[f64]| {
        assert_all_close(&format!("{what}, n = {n}"), got, want, 1e-13, 1e-15);
    };
    for n in [len, len - 7, 2, 1, 0] {
        // heat and conserve: neighbours at i ± 1
        type Rev = fn(usize, &[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64;
        type Cpu = fn(usize, &[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64;
        let pairs: [(&str, Cpu, Rev); 2] = [
            ("heat", heat_cuda::cpu_rev, heat_rev),
            ("conserve", conserve_cuda::cpu_rev, conserve_rev),
        ];
        for (name, cpu, rev) in pairs {
            let (mut out, mut dout, mut du) = (zeros(len), ybar.clone(), zeros(len));
            let dr = cpu(n, &u, &mut du, &mut out, &mut dout, 0.2);
            let (mut out2, mut dout2, mut du2) = (zeros(len), ybar.clone(), zeros(len));
            let dr2: f64 = (0..n)
                .map(|i| rev(i, &u, &mut du2, &mut out2, &mut dout2, 0.2))
                .sum();
            same(&format!("{name} ū"), n, &du, &du2);
            same(&format!("{name} scalar adjoint"), n, &[dr], &[dr2]);
            assert_eq!(out, out2, "{name} out, n = {n}");
            assert_eq!(dout, dout2, "{name} cleared dout, n = {n}");
            if n > 1 && n < len {
                assert!(du[n] != 0.0, "{name}: the add past the threads, n = {n}");
            }
        }
        // heat2d: neighbours at i ± 1 and i ± w
        let w = 6;
        let (mut out, mut dout, mut du) = (zeros(len), ybar.clone(), zeros(len));
        let dr = heat2d_cuda::cpu_rev(n, &u, &mut du, &mut out, &mut dout, w, 0.2);
        let (mut out2, mut dout2, mut du2) = (zeros(len), ybar.clone(), zeros(len));
        let dr2: f64 = (0..n)
            .map(|i| heat2d_rev(i, &u, &mut du2, &mut out2, &mut dout2, w, 0.2))
            .sum();
        same("heat2d ū", n, &du, &du2);
        same("heat2d r̄", n, &[dr], &[dr2]);
        assert_eq!(out, out2, "heat2d out, n = {n}");
        assert_eq!(dout, dout2, "heat2d cleared dout, n = {n}");
    }
}

/// `cpu_rev` runs the gather form with rayon where each element writes only its own
/// elements (heat, conserve, heat2d): over several blocks of elements its results do not
/// depend on the thread count (bit for bit), and equal the gathering and finishing
/// programs run element after element (`ū`, the outputs and the cleared shadows bit for
/// bit: each element's sum is the same arithmetic; the scalar adjoint up to the order of
/// its sum, rel 1e-13). Where an output is shorter than the elements the adds reach, it
/// runs the elements in order, and still equals `_rev` per index.
#[test]
fn gather_form_runs_in_parallel() {
    let len = 5000; // about ten blocks of `ad_rayon`'s 512 elements
    let u: Vec<f64> = (0..len).map(|k| (0.37 * k as f64).sin() + 0.1).collect();
    let ybar: Vec<f64> = (0..len).map(|k| (0.23 * k as f64).cos() - 0.3).collect();
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
    };
    let (one, three) = (pool(1), pool(3));
    // The three have the parallel form (a compile error otherwise).
    type Parallel = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize, usize) -> f64;
    let _: [Parallel; 2] = [__phidiff_heat_rev_par, __phidiff_conserve_rev_par];
    let _: fn(&[f64], &mut [f64], &mut [f64], &mut [f64], usize, f64, usize, usize) -> f64 =
        __phidiff_heat2d_rev_par;
    type Launch<'a> = &'a (dyn Fn(usize, &mut [f64], &mut [f64], &mut [f64]) -> f64 + Sync);
    type Program = fn(usize, &[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize) -> f64;
    let check = |name: &str, n: usize, cpu: Launch, gather: Launch| {
        let run = |launch: Launch| {
            let (mut out, mut dout, mut du) = (zeros(len), ybar.clone(), zeros(len));
            let s = launch(n, &mut du, &mut out, &mut dout);
            (du, out, dout, s)
        };
        let serial = one.install(|| run(cpu));
        let parallel = three.install(|| run(cpu));
        assert_eq!(serial, parallel, "{name}, n = {n}: 1 thread against 3");
        let in_order = run(gather);
        assert_eq!(
            (&parallel.0, &parallel.1, &parallel.2),
            (&in_order.0, &in_order.1, &in_order.2),
            "{name}, n = {n}: ū, out, dout against the programs in order"
        );
        assert_close(
            &format!("{name} scalar adjoint, n = {n}"),
            parallel.3,
            in_order.3,
            1e-13,
            1e-15,
        );
        assert!(
            parallel.0.iter().all(|d| d.is_finite()) && parallel.0[n / 2] != 0.0,
            "{name}: ū"
        );
    };
    // The programs element after element, as the launcher runs them without rayon.
    let in_order = |main: Program, finish: Program| {
        move |n: usize, du: &mut [f64], out: &mut [f64], dout: &mut [f64], extra: f64, u: &[f64]| {
            let span = n.max(du.len());
            let s: f64 = (0..span).map(|i| main(i, u, du, out, dout, extra, n)).sum();
            for i in 0..n {
                finish(i, u, du, out, dout, extra, n);
            }
            s
        }
    };
    for n in [len, len - 700] {
        let heat_in_order = in_order(__phidiff_heat_rev_gather, __phidiff_heat_rev_finish);
        check(
            "heat",
            n,
            &|n, du, out, dout| heat_cuda::cpu_rev(n, &u, du, out, dout, 0.2),
            &|n, du, out, dout| heat_in_order(n, du, out, dout, 0.2, &u),
        );
        let conserve_in_order =
            in_order(__phidiff_conserve_rev_gather, __phidiff_conserve_rev_finish);
        check(
            "conserve",
            n,
            &|n, du, out, dout| conserve_cuda::cpu_rev(n, &u, du, out, dout, 0.2),
            &|n, du, out, dout| conserve_in_order(n, du, out, dout, 0.2, &u),
        );
        let w = 50;
        check(
            "heat2d",
            n,
            &|n, du, out, dout| heat2d_cuda::cpu_rev(n, &u, du, out, dout, w, 0.2),
            &|n, du, out, dout| {
                let span = n.max(du.len());
                let s: f64 = (0..span)
                    .map(|i| __phidiff_heat2d_rev_gather(i, &u, du, out, dout, w, 0.2, n))
                    .sum();
                for i in 0..n {
                    __phidiff_heat2d_rev_finish(i, &u, du, out, dout, w, 0.2, n);
                }
                s
            },
        );
    }
    // An output shorter than `ū`: the threads cover its elements, the adds reach one past.
    let short = 4300;
    let (mut out, mut dout, mut du) = (zeros(short), ybar[..short].to_vec(), zeros(len));
    let dr = three.install(|| heat_cuda::cpu_rev(short, &u, &mut du, &mut out, &mut dout, 0.2));
    let (mut out2, mut dout2, mut du2) = (zeros(short), ybar[..short].to_vec(), zeros(len));
    let dr2: f64 = (0..short)
        .map(|i| heat_rev(i, &u, &mut du2, &mut out2, &mut dout2, 0.2))
        .sum();
    assert_all_close("heat ū, short output", &du, &du2, 1e-13, 1e-15);
    assert_close("heat r̄, short output", dr, dr2, 1e-13, 1e-15);
    assert_eq!((out, dout), (out2, dout2), "heat, short output");
    assert!(du[short] != 0.0, "heat: the add past the threads");
}

/// A stencil that writes its output twice: its adjoint reads the output's shadow after
/// clearing it, so the clearing cannot wait for a second kernel while the neighbours read
/// it, and the adjoint keeps its atomic adds (no gather form) — still right.
#[phidiff::differentiate(forward, reverse, cuda)]
pub fn smooth_twice(i: usize, u: &[f64], out: &mut [f64]) {
    let n = u.len();
    if i == 0 || i == n - 1 {
        out[i] = u[i];
        return;
    }
    out[i] = 0.5 * (u[i - 1] + u[i + 1]);
    out[i] = out[i] * out[i].cos();
}

#[test]
fn no_gather_form_keeps_atomic_adds() {
    assert_eq!(smooth_twice_cuda::FINISH_NAME, None);
    assert!(smooth_twice_cuda::ADJOINT.contains("atomicAdd(&du["));
    assert!(!smooth_twice_cuda::ADJOINT.contains("phidiff_elements"));
    if nvrtc_available() {
        let (name, source) = (smooth_twice_cuda::ADJOINT_NAME, smooth_twice_cuda::ADJOINT);
        compile(name, source).unwrap_or_else(|e| panic!("{e}\n{source}"));
    }
    let point: Vec<f64> = (0..N).map(|k| (0.71 * k as f64).sin() * 0.9).collect();
    check_fwd_rev(&Case {
        name: "smooth_twice kernel (CPU)",
        x: &point,
        primal: &|p| {
            let mut out = zeros(N);
            smooth_twice_cuda::cpu(N, p, &mut out);
            out
        },
        jvp: &|p, v| {
            let (mut out, mut dout) = (zeros(N), zeros(N));
            for i in 0..N {
                smooth_twice_fwd(i, p, v, &mut out, &mut dout);
            }
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut du, mut out, mut dout) = (zeros(N), zeros(N), w.to_vec());
            smooth_twice_cuda::cpu_rev(N, p, &mut du, &mut out, &mut dout);
            (out, du)
        },
        tols: TOLS,
    });
}

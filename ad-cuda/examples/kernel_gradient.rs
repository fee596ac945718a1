//! A CUDA kernel and its adjoint kernel with `ad_cuda`: compiled by NVRTC at run time
//! (once, then cached), launched on a GPU when there is one, and run on the CPU otherwise.
//! The kernels are written by hand here, in the form `#[differentiate(reverse, cuda)]`
//! generates them (`phidiff`'s `cuda` feature writes both, and their launchers, from one
//! Rust element function; see `docs/cuda.md`).
//!
//! The kernel is `y[i] += a·sin(x[i])`. For `J = Σ w_i·y_i` after the kernel, the adjoint
//! kernel gives `∂J/∂x_i = a·cos(x_i)·w_i` and `∂J/∂a = Σ sin(x_i)·w_i`. The program
//! checks the CPU adjoint against central finite differences, and the GPU results (when
//! there is a device) against the CPU; it exits non-zero if a check fails.
//!
//! ```sh
//! cargo run --release -p ad-cuda --example kernel_gradient
//! ```
//!
//! NVRTC is opened at run time: put NVIDIA's `libnvrtc` on `LD_LIBRARY_PATH` (the wheel
//! `nvidia-cuda-nvrtc-cu12` has it; `scripts/test-all` installs it). Without it the
//! kernels are not compiled and the CPU path still runs, unless `PHIDIFF_REQUIRE_NVRTC=1`.

use ad_cuda::cudarc::driver::PushKernelArg;
use ad_cuda::{compile, compile_count, nvrtc_available, CudaError, Gpu};
use rayon::prelude::*;

/// The primal kernel: one thread per element.
const PRIMAL: &str = r#"
extern "C" __global__ void sine_axpy(const double* x, double* y, const double a,
                                     const unsigned long long n) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] += a * sin(x[i]);
}
"#;

/// The adjoint kernel: `dx` at the thread's own index (a plain add), the scalar adjoint
/// `da[0]` shared by every thread (an atomic add). `dy` is unchanged: `y` is updated in
/// place, so the adjoint of its old value is the adjoint of its new one.
const ADJOINT: &str = r#"
extern "C" __global__ void sine_axpy_rev(const double* x, double* dx, const double* dy,
                                         const double a, double* da,
                                         const unsigned long long n) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    dx[i] += a * cos(x[i]) * dy[i];
    atomicAdd(&da[0], sin(x[i]) * dy[i]);
}
"#;

/// The CPU launcher of the primal kernel.
fn cpu(a: f64, x: &[f64], y: &mut [f64]) {
    y.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(yi, xi)| *yi += a * xi.sin());
}

/// The CPU launcher of the adjoint kernel: adds into `dx` and returns `∂/∂a`.
fn cpu_rev(a: f64, x: &[f64], dx: &mut [f64], dy: &[f64]) -> f64 {
    dx.par_iter_mut()
        .zip(x.par_iter().zip(dy.par_iter()))
        .map(|(dxi, (xi, dyi))| {
            *dxi += a * xi.cos() * dyi;
            xi.sin() * dyi
        })
        .sum()
}

/// Both kernels on the GPU: `(y after the primal, dx, ∂J/∂a)`.
fn on_gpu(
    gpu: &Gpu,
    a: f64,
    x: &[f64],
    y: &[f64],
    w: &[f64],
) -> Result<(Vec<f64>, Vec<f64>, f64), CudaError> {
    let driver = |e| CudaError::Driver(format!("{e:?}"));
    let n = x.len() as u64;
    let x_d = gpu.upload(x)?;
    let mut y_d = gpu.upload(y)?;
    let f = gpu.kernel("sine_axpy", PRIMAL)?;
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&x_d).arg(&mut y_d).arg(&a).arg(&n);
    // SAFETY: the arguments match the kernel's parameters in order and type.
    unsafe { b.launch(gpu.config(x.len())) }.map_err(driver)?;

    let (mut dx_d, w_d, mut da_d) = (
        gpu.zeros::<f64>(x.len())?,
        gpu.upload(w)?,
        gpu.zeros::<f64>(1)?,
    );
    let f = gpu.kernel("sine_axpy_rev", ADJOINT)?;
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&x_d)
        .arg(&mut dx_d)
        .arg(&w_d)
        .arg(&a)
        .arg(&mut da_d)
        .arg(&n);
    // SAFETY: as above.
    unsafe { b.launch(gpu.config(x.len())) }.map_err(driver)?;
    gpu.synchronize()?;
    Ok((
        gpu.download(&y_d)?,
        gpu.download(&dx_d)?,
        gpu.download(&da_d)?[0],
    ))
}

fn main() {
    let n = 4096;
    let a = 1.3;
    let x: Vec<f64> = (0..n).map(|i| (0.001 * i as f64).cos()).collect();
    let y0: Vec<f64> = (0..n).map(|i| 0.5 + (0.002 * i as f64).sin()).collect();
    let w: Vec<f64> = (0..n).map(|i| 1.0 / (1.0 + (i % 17) as f64)).collect();
    let mut failures = Vec::new();

    // 1. NVRTC: compile both kernels (cached: a second request compiles nothing).
    if nvrtc_available() {
        for (name, source) in [("sine_axpy", PRIMAL), ("sine_axpy_rev", ADJOINT)] {
            match compile(name, source) {
                Ok(ptx) if ptx.to_src().contains(&format!(".entry {name}")) => {}
                Ok(_) => failures.push(format!("{name}: no entry point in the PTX")),
                Err(e) => failures.push(e.to_string()),
            }
        }
        let before = compile_count();
        let _ = compile("sine_axpy", PRIMAL);
        if compile_count() != before {
            failures.push("a cached kernel was compiled again".into());
        }
        println!(
            "NVRTC: compiled 2 kernels to PTX ({} compilations)",
            compile_count()
        );
    } else if std::env::var("PHIDIFF_REQUIRE_NVRTC").as_deref() == Ok("1") {
        failures.push(CudaError::NoNvrtc.to_string());
    } else {
        println!(
            "NVRTC: not found, kernels not compiled ({})",
            CudaError::NoNvrtc
        );
    }

    // 2. The CPU launchers: the gradient of J = Σ w_i·y_i against finite differences.
    let j = |a: f64, x: &[f64]| {
        let mut y = y0.clone();
        cpu(a, x, &mut y);
        y.iter().zip(&w).map(|(yi, wi)| yi * wi).sum::<f64>()
    };
    let mut y = y0.clone();
    cpu(a, &x, &mut y);
    let mut dx = vec![0.0; n];
    let da = cpu_rev(a, &x, &mut dx, &w);
    let h = 1e-5;
    let fd_a = (j(a + h, &x) - j(a - h, &x)) / (2.0 * h);
    if (fd_a - da).abs() > 1e-6 * (1.0 + da.abs()) {
        failures.push(format!("∂J/∂a = {da}, finite differences {fd_a}"));
    }
    for &i in &[0, 1234, n - 1] {
        let shifted = |s: f64| {
            let mut xs = x.clone();
            xs[i] += s * h;
            j(a, &xs)
        };
        let fd = (shifted(1.0) - shifted(-1.0)) / (2.0 * h);
        if (fd - dx[i]).abs() > 1e-6 * (1.0 + fd.abs()) {
            failures.push(format!("∂J/∂x[{i}] = {}, finite differences {fd}", dx[i]));
        }
    }
    println!("CPU: ∂J/∂a = {da:.12}, checked with finite differences");

    // 3. The GPU, when there is one: the same numbers as the CPU.
    match Gpu::new(0) {
        Ok(gpu) => match on_gpu(&gpu, a, &x, &y0, &w) {
            Ok((y_gpu, dx_gpu, da_gpu)) => {
                let close = |p: f64, q: f64| (p - q).abs() <= 1e-12 * (1.0 + q.abs());
                let same = y_gpu.iter().zip(&y).all(|(p, q)| close(*p, *q))
                    && dx_gpu.iter().zip(&dx).all(|(p, q)| close(*p, *q))
                    && (da_gpu - da).abs() <= 1e-9 * da.abs();
                if !same {
                    failures.push("the GPU kernels differ from the CPU launchers".into());
                }
                println!("GPU: primal and adjoint kernels match the CPU (∂J/∂a = {da_gpu:.12})");
            }
            Err(e) => failures.push(format!("GPU: {e}")),
        },
        Err(e) => println!("GPU: none ({e}); the CPU launchers are the fallback"),
    }

    if !failures.is_empty() {
        for f in &failures {
            eprintln!("kernel_gradient: {f}");
        }
        std::process::exit(1);
    }
}

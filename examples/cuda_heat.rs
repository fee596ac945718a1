//! `#[differentiate(reverse, cuda)]` on a Rust element function: phidiff writes the CUDA C
//! of its primal and adjoint kernels, device launchers (NVRTC at run time, cached) and CPU
//! launchers. This program compiles both kernels with NVRTC, runs them on a GPU when there
//! is one and on the CPU otherwise, and checks the gradient of `J = Σ out_i²` after one
//! nonlinear heat step against finite differences (and the GPU against the CPU). It exits
//! non-zero if a check fails.
//!
//! ```sh
//! cargo run --release --features cuda --example cuda_heat
//! ```
//!
//! NVRTC is loaded from `LD_LIBRARY_PATH` (`scripts/test-all` installs NVIDIA's wheel in
//! `.venv-nvrtc/`); without it the kernels are not compiled and the CPU launchers still
//! run, unless `PHIDIFF_REQUIRE_NVRTC=1`.

use phidiff::cuda::{compile, nvrtc_available, CudaError, Gpu};
use phidiff::differentiate;

/// One explicit heat step with a nonlinear conductivity, for cell `i` (the thread index);
/// the end cells are copied.
#[differentiate(reverse, cuda)]
pub fn heat(i: usize, u: &[f64], out: &mut [f64], r: f64) {
    let n = u.len();
    if i == 0 || i == n - 1 {
        out[i] = u[i];
        return;
    }
    out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.5 * u[i].sin());
}

/// J(u, r) = Σ out², with `out` from the CPU launcher.
fn objective(u: &[f64], r: f64) -> f64 {
    let mut out = vec![0.0; u.len()];
    heat_cuda::cpu(u.len(), u, &mut out, r);
    out.iter().map(|o| o * o).sum()
}

/// (∂J/∂u, ∂J/∂r) from the CPU adjoint launcher.
fn gradient_cpu(u: &[f64], r: f64) -> (Vec<f64>, f64) {
    let n = u.len();
    let mut out = vec![0.0; n];
    heat_cuda::cpu(n, u, &mut out, r);
    let mut dout: Vec<f64> = out.iter().map(|o| 2.0 * o).collect(); // ∂J/∂out
    let mut du = vec![0.0; n];
    let dr = heat_cuda::cpu_rev(n, u, &mut du, &mut out, &mut dout, r);
    (du, dr)
}

/// The same gradient from the adjoint kernel on `gpu`.
fn gradient_gpu(gpu: &Gpu, u: &[f64], r: f64) -> Result<(Vec<f64>, f64), CudaError> {
    let n = u.len();
    let u_d = gpu.upload(u)?;
    let mut out_d = gpu.zeros::<f64>(n)?;
    heat_cuda::launch(gpu, n, &u_d, &mut out_d, r)?;
    let dout: Vec<f64> = gpu.download(&out_d)?.iter().map(|o| 2.0 * o).collect();
    let (mut du_d, mut dout_d) = (gpu.zeros::<f64>(n)?, gpu.upload(&dout)?);
    let dr = heat_cuda::launch_rev(gpu, n, &u_d, &mut du_d, &mut out_d, &mut dout_d, r)?;
    Ok((gpu.download(&du_d)?, dr))
}

fn main() {
    let n = 256;
    let r = 0.2;
    let u: Vec<f64> = (0..n).map(|i| (0.05 * i as f64).sin() + 0.1).collect();
    let mut failures = Vec::new();

    // 1. NVRTC compiles the generated kernels (`heat_cuda::PRIMAL`, `heat_cuda::ADJOINT`).
    if nvrtc_available() {
        for (name, source) in [
            (heat_cuda::PRIMAL_NAME, heat_cuda::PRIMAL),
            (heat_cuda::ADJOINT_NAME, heat_cuda::ADJOINT),
        ] {
            if let Err(e) = compile(name, source) {
                failures.push(format!("{e}\n{source}"));
            }
        }
        println!(
            "NVRTC: compiled `{}` and `{}`",
            heat_cuda::PRIMAL_NAME,
            heat_cuda::ADJOINT_NAME
        );
    } else if std::env::var("PHIDIFF_REQUIRE_NVRTC").as_deref() == Ok("1") {
        failures.push(CudaError::NoNvrtc.to_string());
    } else {
        println!(
            "NVRTC: not found, kernels not compiled ({})",
            CudaError::NoNvrtc
        );
    }

    // 2. The CPU launchers against central finite differences.
    let (du, dr) = gradient_cpu(&u, r);
    let h = 1e-5;
    let fd_r = (objective(&u, r + h) - objective(&u, r - h)) / (2.0 * h);
    if (fd_r - dr).abs() > 1e-6 * (1.0 + fd_r.abs()) {
        failures.push(format!("∂J/∂r = {dr}, finite differences {fd_r}"));
    }
    for &i in &[0, 1, n / 2, n - 1] {
        let mut v = u.clone();
        v[i] += h;
        let plus = objective(&v, r);
        v[i] -= 2.0 * h;
        let fd = (plus - objective(&v, r)) / (2.0 * h);
        if (fd - du[i]).abs() > 1e-6 * (1.0 + fd.abs()) {
            failures.push(format!("∂J/∂u[{i}] = {}, finite differences {fd}", du[i]));
        }
    }
    println!("CPU: ∂J/∂r = {dr:.12}, checked with finite differences");

    // 3. The kernels on a GPU, when there is one.
    match Gpu::new(0) {
        Ok(gpu) => match gradient_gpu(&gpu, &u, r) {
            Ok((du_gpu, dr_gpu)) => {
                let close = |p: f64, q: f64| (p - q).abs() <= 1e-12 * (1.0 + q.abs());
                if du_gpu.iter().zip(&du).all(|(p, q)| close(*p, *q)) && close(dr_gpu, dr) {
                    println!("GPU: ∂J/∂r = {dr_gpu:.12}, the adjoint kernel matches the CPU");
                } else {
                    failures.push("the adjoint kernel differs from the CPU launcher".into());
                }
            }
            Err(e) => failures.push(format!("GPU: {e}")),
        },
        Err(e) => println!("GPU: none ({e}); the CPU launchers are the fallback"),
    }

    if !failures.is_empty() {
        for f in &failures {
            eprintln!("cuda_heat: {f}");
        }
        std::process::exit(1);
    }
}

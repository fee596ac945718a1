//! GPU benchmark of the generated kernels (issue 7): for each kernel of
//! `benches/support/cuda_kernels.rs`, the primal and the adjoint kernel time on the device,
//! and adjoint / primal (target below 10×, the bound of Enzyme's GPU paper, SC'21). Where
//! PyTorch with CUDA is installed (`python3` on PATH, or `PHIDIFF_TORCH_PYTHON`), the same
//! computations' forward and backward in PyTorch are timed in the same run
//! (`benches/cuda/torch_peer.py`); our adjoint kernel, which runs the forward sweep too,
//! is compared with PyTorch's forward plus backward.
//!
//! ```text
//! cargo run --release --features cuda --example cuda_bench
//! ```
//!
//! Without a device it says so and exits successfully (the CPU launchers are the
//! fallback; `cargo test --features cuda --test cuda_kernels` checks them).

#[path = "../benches/support/cuda_kernels.rs"]
mod kernels;

use kernels::*;
use phidiff::cuda::{CudaError, Gpu};
use std::process::Command;
use std::time::Instant;

const REPS: usize = 20;

/// The fastest of `REPS` runs of `f` (after a warm-up), each ended by a synchronize.
fn fastest(gpu: &Gpu, f: &mut dyn FnMut() -> Result<(), CudaError>) -> Result<f64, CudaError> {
    f()?;
    gpu.synchronize()?;
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let t = Instant::now();
        f()?;
        gpu.synchronize()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best * 1e3)
}

fn main() -> Result<(), CudaError> {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("cuda_bench: no CUDA device ({e}); nothing to measure");
            return Ok(());
        }
    };
    let n: usize = 1 << 24;
    let field = |k: usize, s: f64| -> Vec<f64> { (0..k).map(|i| (s * i as f64).sin()).collect() };
    let mut rows: Vec<(&str, usize, f64, f64)> = Vec::new();

    let (x, y0) = (field(n, 0.1), field(n, 0.2));
    let x_d = gpu.upload(&x)?;
    let mut y_d = gpu.upload(&y0)?;
    let (mut gx_d, mut gy_d) = (gpu.zeros::<f64>(n)?, gpu.upload(&field(n, 0.3))?);
    let p = fastest(&gpu, &mut || {
        saxpy_cuda::launch(&gpu, n, 1.7, &x_d, &mut y_d)
    })?;
    let r = fastest(&gpu, &mut || {
        saxpy_cuda::launch_rev(&gpu, n, 1.7, &x_d, &mut gx_d, &mut y_d, &mut gy_d).map(drop)
    })?;
    rows.push(("saxpy", n, p, r));

    let u_d = gpu.upload(&field(n, 0.05))?;
    let (mut out_d, mut dout_d, mut du_d) = (
        gpu.zeros::<f64>(n)?,
        gpu.upload(&field(n, 0.3))?,
        gpu.zeros::<f64>(n)?,
    );
    let p = fastest(&gpu, &mut || {
        heat_cuda::launch(&gpu, n, &u_d, &mut out_d, 0.2)
    })?;
    let r = fastest(&gpu, &mut || {
        heat_cuda::launch_rev(&gpu, n, &u_d, &mut du_d, &mut out_d, &mut dout_d, 0.2).map(drop)
    })?;
    rows.push(("heat", n, p, r));

    let w = 4096;
    let p = fastest(&gpu, &mut || {
        heat2d_cuda::launch(&gpu, n, &u_d, &mut out_d, w, 0.2)
    })?;
    let r = fastest(&gpu, &mut || {
        heat2d_cuda::launch_rev(&gpu, n, &u_d, &mut du_d, &mut out_d, &mut dout_d, w, 0.2).map(drop)
    })?;
    rows.push(("heat2d", n, p, r));

    let (mut t_d, mut dt_d) = (gpu.upload(&[0.0])?, gpu.upload(&[1.0])?);
    let p = fastest(&gpu, &mut || {
        energy_cuda::launch(&gpu, n, &x_d, 0.3, &mut t_d)
    })?;
    let r = fastest(&gpu, &mut || {
        energy_cuda::launch_rev(&gpu, n, &x_d, &mut gx_d, 0.3, &mut t_d, &mut dt_d).map(drop)
    })?;
    rows.push(("energy (warp-aggregated)", n, p, r));

    let idx: Vec<usize> = (0..n).map(|k| (k * 7919 + 13) % n).collect();
    let idx_d = gpu.upload(&idx)?;
    let p = fastest(&gpu, &mut || {
        gather_cuda::launch(&gpu, n, &x_d, &idx_d, &mut y_d)
    })?;
    let r = fastest(&gpu, &mut || {
        gather_cuda::launch_rev(&gpu, n, &x_d, &mut gx_d, &idx_d, &mut y_d, &mut gy_d).map(drop)
    })?;
    rows.push(("gather (atomics)", n, p, r));

    let (np, na) = (1 << 16, 256);
    let poses: Vec<f64> = field(3 * np, 0.37).iter().map(|v| 2.0 * v).collect();
    let atoms: Vec<f64> = (0..4 * na).map(|k| 2.0 * (0.53 * k as f64).cos()).collect();
    let (p_d, a_d) = (gpu.upload(&poses)?, gpu.upload(&atoms)?);
    let (mut e_d, mut de_d) = (gpu.zeros::<f64>(np)?, gpu.upload(&field(np, 0.11))?);
    let (mut dp_d, mut da_d) = (gpu.zeros::<f64>(3 * np)?, gpu.zeros::<f64>(4 * na)?);
    let p = fastest(&gpu, &mut || {
        score_cuda::launch(&gpu, np, &p_d, &a_d, &mut e_d)
    })?;
    let r = fastest(&gpu, &mut || {
        score_cuda::launch_rev(
            &gpu, np, &p_d, &mut dp_d, &a_d, &mut da_d, &mut e_d, &mut de_d,
        )
        .map(drop)
    })?;
    rows.push(("score (miniBUDE-like)", np, p, r));

    // The PyTorch peer, when installed.
    let python = std::env::var("PHIDIFF_TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let torch: Vec<(String, f64, f64)> = Command::new(&python)
        .arg("benches/cuda/torch_peer.py")
        .arg(n.to_string())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    Some((
                        f.first()?.to_string(),
                        f.get(1)?.parse().ok()?,
                        f.get(2)?.parse().ok()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();

    println!("| kernel | threads | primal | adjoint | adjoint / primal | PyTorch forward + backward | adjoint / PyTorch |");
    println!("|---|---|---|---|---|---|---|");
    let mut worst: f64 = 0.0;
    for (name, threads, p, r) in &rows {
        worst = worst.max(r / p);
        let key = name.split_whitespace().next().unwrap_or(name);
        let peer = torch.iter().find(|(k, _, _)| k == key);
        let (peer_col, ratio_col) = match peer {
            Some((_, _, b)) => (format!("{b:.3} ms"), format!("{:.2}×", r / b)),
            None => ("—".into(), "—".into()),
        };
        println!(
            "| {name} | {threads} | {p:.3} ms | {r:.3} ms | {:.2}× | {peer_col} | {ratio_col} |",
            r / p
        );
    }
    println!();
    println!(
        "target: adjoint / primal below 10×; highest here {worst:.2}× ({}){}",
        if worst < 10.0 { "met" } else { "NOT met" },
        if torch.is_empty() {
            "; PyTorch with CUDA not installed, no peer column"
        } else {
            ""
        }
    );
    Ok(())
}

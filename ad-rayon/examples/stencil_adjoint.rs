//! A parallel adjoint written with `ad-rayon`, the runtime that the code generated for a
//! differentiated rayon loop calls. The primal is one smoothing step of a 2-D field,
//! parallel over rows; its adjoint adds into the neighbouring rows too, which a `Halo`
//! makes safe without atomics. The parallel gradient is checked against the serial
//! adjoint, finite differences, and itself on one thread (bitwise: the blocks never
//! depend on the thread count). Exits non-zero if a check fails.
//!
//! ```sh
//! cargo run --release -p ad-rayon --example stencil_adjoint
//! ```

use ad_rayon::{for_each_owned, sum, Halo, Rows};

const R: f64 = 0.2;

/// out = u + R·(u above + u below − 2u) on interior rows, u on the first and last row;
/// the energy J = Σ out².
fn step(u: &[f64], out: &mut [f64], w: usize) {
    let rows = u.len() / w;
    for_each_owned(
        0..rows,
        (Rows {
            data: out,
            width: w,
        },),
        |i, (out,)| {
            // The iteration's elements as one window, as generated code takes them: its
            // bounds stay in registers through the stores.
            let out = &mut out.iteration();
            for j in 0..w {
                let k = i * w + j;
                out[k] = if i == 0 || i == rows - 1 {
                    u[k]
                } else {
                    u[k] + R * (u[k - w] + u[k + w] - 2.0 * u[k])
                };
            }
        },
    );
}

fn energy(u: &[f64], w: usize) -> f64 {
    let mut out = vec![0.0; u.len()];
    step(u, &mut out, w);
    let [e] = sum(0..out.len(), |k| [out[k] * out[k]]);
    e
}

/// ∂J/∂u in parallel: row i of the adjoint adds into rows i−1, i, i+1 of `ubar`.
fn energy_grad(u: &[f64], w: usize) -> Vec<f64> {
    let rows = u.len() / w;
    let mut out = vec![0.0; u.len()];
    step(u, &mut out, w);
    let out_bar: Vec<f64> = out.iter().map(|o| 2.0 * o).collect();
    let mut ubar = vec![0.0; u.len()];
    let halo = Halo {
        data: &mut ubar,
        width: w,
        reach: 1,
    };
    for_each_owned(0..rows, (halo,), |i, (ubar,)| {
        let ubar = &mut ubar.iteration();
        for j in 0..w {
            let (k, b) = (i * w + j, out_bar[i * w + j]);
            if i == 0 || i == rows - 1 {
                ubar[k] += b;
            } else {
                ubar[k] += (1.0 - 2.0 * R) * b;
                ubar[k - w] += R * b;
                ubar[k + w] += R * b;
            }
        }
    });
    ubar
}

/// The same adjoint as a serial loop.
fn energy_grad_serial(u: &[f64], w: usize) -> Vec<f64> {
    let rows = u.len() / w;
    let mut out = vec![0.0; u.len()];
    step(u, &mut out, w);
    let mut ubar = vec![0.0; u.len()];
    for i in 0..rows {
        for j in 0..w {
            let (k, b) = (i * w + j, 2.0 * out[i * w + j]);
            if i == 0 || i == rows - 1 {
                ubar[k] += b;
            } else {
                ubar[k] += (1.0 - 2.0 * R) * b;
                ubar[k - w] += R * b;
                ubar[k + w] += R * b;
            }
        }
    }
    ubar
}

fn main() {
    let (rows, w) = (3000, 64);
    let u: Vec<f64> = (0..rows * w).map(|k| (0.01 * k as f64).sin()).collect();
    let mut failures = Vec::new();

    let grad = energy_grad(&u, w);
    let serial = energy_grad_serial(&u, w);
    let worst = grad
        .iter()
        .zip(&serial)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    if worst > 1e-14 {
        failures.push(format!("parallel and serial adjoints differ by {worst:e}"));
    }

    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let grad_1 = one_thread.install(|| energy_grad(&u, w));
    if grad
        .iter()
        .zip(&grad_1)
        .any(|(a, b)| a.to_bits() != b.to_bits())
    {
        failures.push("the gradient depends on the thread count".into());
    }

    // J is quadratic in u, so central differences have no truncation error: a large step
    // keeps the rounding of the 192 000-term sum small.
    let h = 1e-2;
    for &k in &[0, w + 3, rows * w / 2, rows * w - 1] {
        let mut v = u.clone();
        v[k] += h;
        let plus = energy(&v, w);
        v[k] -= 2.0 * h;
        let fd = (plus - energy(&v, w)) / (2.0 * h);
        if (fd - grad[k]).abs() > 1e-6 * (1.0 + fd.abs()) {
            failures.push(format!("∂J/∂u[{k}] = {}, finite differences {fd}", grad[k]));
        }
    }

    println!(
        "J = {:.6}, gradient of {} values on {} threads: serial adjoint, one thread (bitwise) and finite differences {}",
        energy(&u, w),
        u.len(),
        rayon::current_num_threads(),
        if failures.is_empty() { "agree" } else { "DISAGREE" }
    );
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("stencil_adjoint: {f}");
        }
        std::process::exit(1);
    }
}

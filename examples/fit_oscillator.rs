//! Fit a damped oscillator y(t) = a·e^(−λt)·cos(ωt + φ) to noisy samples by minimizing the
//! squared misfit with L-BFGS, the gradient coming from phidiff's generated `misfit_grad`.
//!
//! Run with `cargo run --release --example fit_oscillator`.

use phidiff::{check, differentiate};

/// Sum of squared residuals of the model with parameters `p = (a, λ, ω, φ)` on samples
/// (t_k, y_k).
#[differentiate(forward, reverse, wrt(p))]
fn misfit(p: &[f64], t: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..t.len() {
        let model = p[0] * (-p[1] * t[k]).exp() * (p[2] * t[k] + p[3]).cos();
        let r = model - y[k];
        s += r * r;
    }
    0.5 * s
}

/// A small deterministic generator for the synthetic noise (xorshift64*).
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let u = (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        2.0 * u - 1.0
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Limited-memory BFGS with a backtracking (Armijo) line search.
fn lbfgs(
    mut x: Vec<f64>,
    f: impl Fn(&[f64]) -> (f64, Vec<f64>),
    iters: usize,
) -> (Vec<f64>, f64, usize) {
    let m = 6;
    let (mut fx, mut g) = f(&x);
    let mut s_hist: Vec<Vec<f64>> = Vec::new();
    let mut y_hist: Vec<Vec<f64>> = Vec::new();
    for it in 0..iters {
        let gnorm = dot(&g, &g).sqrt();
        if it % 10 == 0 || gnorm < 1e-8 {
            println!("iter {it:3}  misfit {fx:.6e}  |grad| {gnorm:.3e}");
        }
        if gnorm < 1e-8 {
            return (x, fx, it);
        }
        // Two-loop recursion: d = −H·g.
        let mut q = g.clone();
        let mut alpha = vec![0.0; s_hist.len()];
        for k in (0..s_hist.len()).rev() {
            let rho = 1.0 / dot(&y_hist[k], &s_hist[k]);
            alpha[k] = rho * dot(&s_hist[k], &q);
            q.iter_mut()
                .zip(&y_hist[k])
                .for_each(|(qi, yi)| *qi -= alpha[k] * yi);
        }
        if let (Some(s), Some(y)) = (s_hist.last(), y_hist.last()) {
            let gamma = dot(s, y) / dot(y, y);
            q.iter_mut().for_each(|qi| *qi *= gamma);
        }
        for k in 0..s_hist.len() {
            let rho = 1.0 / dot(&y_hist[k], &s_hist[k]);
            let beta = rho * dot(&y_hist[k], &q);
            q.iter_mut()
                .zip(&s_hist[k])
                .for_each(|(qi, si)| *qi += (alpha[k] - beta) * si);
        }
        let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
        if dot(&d, &g) >= 0.0 {
            d = g.iter().map(|v| -v).collect();
        }
        let mut step = 1.0;
        let (x_new, f_new, g_new) = loop {
            let xn: Vec<f64> = x.iter().zip(&d).map(|(xi, di)| xi + step * di).collect();
            let (fnew, gnew) = f(&xn);
            if fnew <= fx + 1e-4 * step * dot(&g, &d) || step < 1e-12 {
                break (xn, fnew, gnew);
            }
            step *= 0.5;
        };
        let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        if dot(&s, &y) > 1e-12 {
            s_hist.push(s);
            y_hist.push(y);
            if s_hist.len() > m {
                s_hist.remove(0);
                y_hist.remove(0);
            }
        }
        x = x_new;
        fx = f_new;
        g = g_new;
    }
    (x, fx, iters)
}

fn main() {
    let truth = [2.0, 0.3, 3.0, 0.5];
    let n = 400;
    let t: Vec<f64> = (0..n).map(|k| k as f64 * 10.0 / n as f64).collect();
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let y: Vec<f64> = t
        .iter()
        .map(|&tk| {
            truth[0] * (-truth[1] * tk).exp() * (truth[2] * tk + truth[3]).cos()
                + 0.02 * noise.next()
        })
        .collect();

    let start = vec![1.0, 0.1, 2.9, 0.0];
    // Check the generated gradient once against central finite differences.
    let (_, g0) = misfit_grad(&start, &t, &y);
    let report = check::gradient(
        |p| misfit(p, &t, &y),
        &start,
        &g0,
        check::Tolerance::default(),
    )
    .expect("the generated gradient agrees with finite differences");
    println!(
        "gradient check at the start: max relative error {:.2e}",
        report.max_rel_error
    );

    let (p, f, iters) = lbfgs(start, |p| misfit_grad(p, &t, &y), 200);
    println!("converged after {iters} iterations: misfit {f:.6e}");
    println!(
        "recovered (a, λ, ω, φ) = ({:.4}, {:.4}, {:.4}, {:.4})",
        p[0], p[1], p[2], p[3]
    );
    println!(
        "true      (a, λ, ω, φ) = ({:.4}, {:.4}, {:.4}, {:.4})",
        truth[0], truth[1], truth[2], truth[3]
    );
    let err = p
        .iter()
        .zip(&truth)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        err < 0.05,
        "the fit should recover the parameters (max error {err})"
    );
}

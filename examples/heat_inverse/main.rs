//! Recover the initial temperature of a plate from one noisy picture of it taken later.
//!
//! Heat spreads over a 128 × 128 plate for 200 explicit steps (`model.rs`: a rayon stencil
//! over the rows, with a conductivity that grows with temperature). We see the final
//! temperature with noise, and look for the initial temperature that explains it: L-BFGS
//! (the `argmin` crate) minimizes ½‖u_T(u₀) − observation‖² plus a small smoothness
//! penalty, with the gradient from phidiff's generated `objective_grad`, whose time loop is
//! reversed by Revolve checkpointing.
//!
//! Run with `cargo run --release --example heat_inverse [-- --out FILE.svg]`. It checks the
//! gradient against finite differences first, draws truth, observation and reconstruction
//! into an SVG (default `target/heat_inverse.svg`), and exits non-zero if the gradient
//! check or the reconstruction fails (CI runs it as a smoke test).

mod model;

use argmin::core::observers::{Observe, ObserverMode};
use argmin::core::{CostFunction, Error, Executor, Gradient, IterState, State, KV};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Plate of `ROWS × COLS` cells; `R = κ₀ dt / h²` (stable while |u| ≤ 1.15).
const ROWS: usize = 128;
const COLS: usize = 128;
const R: f64 = 0.15;
const STEPS: usize = 200;
/// Standard deviation of the observation noise.
const NOISE: f64 = 0.01;
/// Weight of the smoothness penalty ½ SMOOTHING ‖∇u₀‖².
const SMOOTHING: f64 = 5e-3;
const MAX_ITERS: u64 = 150;
/// The finite-difference check of the gradient fails above this relative error.
const FD_TOLERANCE: f64 = 1e-6;
/// The reconstruction must lower the misfit of the first guess (zero) by this factor.
const MIN_MISFIT_REDUCTION: f64 = 50.0;

fn main() -> ExitCode {
    let out = match output_path() {
        Ok(path) => path,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{ROWS} × {COLS} plate, {STEPS} steps, {} rayon threads",
        rayon::current_num_threads()
    );

    // The synthetic truth, its final temperature, and what we observe of it.
    let truth = initial_temperature();
    let mut noise = Gaussian::new(2024);
    let observation: Vec<f64> = model::simulate(&truth, COLS, R, STEPS)
        .iter()
        .map(|u| u + NOISE * noise.sample())
        .collect();
    let problem = HeatInverse::new(observation.clone());

    // 1. Check the generated gradient against central finite differences.
    let worst = check_gradient(&problem, &observation, &mut noise);
    if worst > FD_TOLERANCE {
        eprintln!("FAILED: gradient check, relative error {worst:.2e} > {FD_TOLERANCE:.0e}");
        return ExitCode::FAILURE;
    }

    // 2. Minimize with L-BFGS from a plate at zero, a progress bar over the iterations.
    let first_guess = vec![0.0; ROWS * COLS];
    let misfit_before = problem.misfit(&first_guess);
    let bar = ProgressBar::new(MAX_ITERS).with_style(
        ProgressStyle::with_template(
            "[{elapsed_precise}] {bar:30} {pos:>3}/{len} iterations  {msg}",
        )
        .expect("a valid template"),
    );
    let history = Arc::new(Mutex::new(Vec::new()));
    let observer = ProgressObserver {
        bar: bar.clone(),
        history: history.clone(),
    };
    let linesearch = MoreThuenteLineSearch::new();
    let solver = LBFGS::new(linesearch, 10);
    let result = Executor::new(problem, solver)
        .configure(|state| state.param(first_guess).max_iters(MAX_ITERS))
        .add_observer(observer, ObserverMode::Always)
        .run();
    bar.finish();
    let mut result = match result {
        Ok(result) => result,
        Err(e) => {
            eprintln!("FAILED: L-BFGS stopped with an error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let state = result.state();
    println!(
        "L-BFGS: {} iterations ({}), objective {:.4e}",
        state.get_iter(),
        state.get_termination_status(),
        state.get_best_cost()
    );
    let reconstruction = result
        .state
        .take_best_param()
        .expect("L-BFGS keeps its best point");
    let problem = result
        .problem
        .take_problem()
        .expect("the problem comes back");
    println!("gradient evaluations: {}", problem.evaluations());

    // 3. How good is it? The misfit, and the distance to the truth compared with simply
    //    taking the blurred observation as the answer.
    let misfit_after = problem.misfit(&reconstruction);
    let reduction = misfit_before / misfit_after;
    let noise_floor = 0.5 * NOISE * NOISE * (ROWS * COLS) as f64;
    println!(
        "misfit ½‖u_T − obs‖²: {misfit_before:.4e} → {misfit_after:.4e} \
         (reduced {reduction:.0}×; the noise alone gives ≈ {noise_floor:.2e})"
    );
    let error_of = |u: &[f64]| distance(u, &truth) / norm(&truth);
    println!(
        "relative error to the true initial temperature: {:.3} (the observation: {:.3})",
        error_of(&reconstruction),
        error_of(&observation)
    );

    let history = history.lock().expect("the observer is done").clone();
    let panels = [
        ("true initial temperature", truth.as_slice()),
        ("noisy observation at the end", &observation),
        ("reconstructed initial temperature", &reconstruction),
    ];
    match draw(&out, &panels, &history) {
        Ok(()) => println!("wrote {}", out.display()),
        Err(e) => {
            eprintln!("FAILED: could not write {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    }

    if reduction < MIN_MISFIT_REDUCTION {
        eprintln!("FAILED: the misfit fell only {reduction:.1}× (want ≥ {MIN_MISFIT_REDUCTION}×)");
        return ExitCode::FAILURE;
    }
    if error_of(&reconstruction) >= error_of(&observation) {
        eprintln!("FAILED: the reconstruction is no closer to the truth than the observation");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The inverse problem for argmin: the objective and its gradient at a candidate `u₀`.
struct HeatInverse {
    observation: Vec<f64>,
    /// The last evaluation: L-BFGS and its line search ask for the cost and the gradient
    /// separately, mostly at the same point.
    last: Mutex<Option<Evaluation>>,
    evaluations: Mutex<usize>,
}

struct Evaluation {
    at: Vec<f64>,
    objective: f64,
    gradient: Vec<f64>,
}

impl HeatInverse {
    fn new(observation: Vec<f64>) -> Self {
        HeatInverse {
            observation,
            last: Mutex::new(None),
            evaluations: Mutex::new(0),
        }
    }

    /// The objective alone (no gradient).
    fn objective(&self, u0: &[f64]) -> f64 {
        model::objective(u0, &self.observation, COLS, R, STEPS, SMOOTHING)
    }

    /// The data misfit ½‖u_T(u₀) − obs‖², without the smoothness penalty.
    fn misfit(&self, u0: &[f64]) -> f64 {
        model::objective(u0, &self.observation, COLS, R, STEPS, 0.0)
    }

    /// The objective and its gradient from phidiff's generated `objective_grad`.
    fn objective_and_gradient(&self, u0: &[f64]) -> (f64, Vec<f64>) {
        let mut last = self.last.lock().expect("not poisoned");
        if let Some(last) = last.as_ref().filter(|last| last.at == u0) {
            return (last.objective, last.gradient.clone());
        }
        let (objective, gradient) =
            model::objective_grad(u0, &self.observation, COLS, R, STEPS, SMOOTHING);
        *self.evaluations.lock().expect("not poisoned") += 1;
        *last = Some(Evaluation {
            at: u0.to_vec(),
            objective,
            gradient: gradient.clone(),
        });
        (objective, gradient)
    }

    fn evaluations(&self) -> usize {
        *self.evaluations.lock().expect("not poisoned")
    }
}

impl CostFunction for HeatInverse {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, u0: &Vec<f64>) -> Result<f64, Error> {
        Ok(self.objective_and_gradient(u0).0)
    }
}

impl Gradient for HeatInverse {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, u0: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(self.objective_and_gradient(u0).1)
    }
}

/// Moves the progress bar once per L-BFGS iteration, shows the objective and the gradient
/// norm in its message, prints them every 10 iterations (also where the bar is hidden, as
/// in CI), and keeps the objective for the convergence plot.
struct ProgressObserver {
    bar: ProgressBar,
    history: Arc<Mutex<Vec<f64>>>,
}

type LbfgsState = IterState<Vec<f64>, Vec<f64>, (), (), (), f64>;

impl Observe<LbfgsState> for ProgressObserver {
    fn observe_iter(&mut self, state: &LbfgsState, _kv: &KV) -> Result<(), Error> {
        let iter = state.get_iter() + 1;
        let grad_norm = state.get_gradient().map_or(f64::NAN, |g| norm(g));
        let message = format!("objective {:.4e}  |grad| {grad_norm:.2e}", state.get_cost());
        self.history
            .lock()
            .expect("not poisoned")
            .push(state.get_cost());
        self.bar.set_position(iter);
        if iter % 10 == 0 || iter == 1 {
            self.bar.suspend(|| println!("iter {iter:4}  {message}"));
        }
        self.bar.set_message(message);
        Ok(())
    }
}

/// Compares the directional derivative `∇f·v` from `objective_grad` with the central
/// difference `(f(x + hv) − f(x − hv)) / 2h` along three random unit directions `v`, at the
/// observation (a point where the plate is far from zero, so the nonlinearity counts).
/// Returns the largest relative error.
fn check_gradient(problem: &HeatInverse, at: &[f64], noise: &mut Gaussian) -> f64 {
    let (_, gradient) = problem.objective_and_gradient(at);
    let h = 1e-4;
    let mut worst: f64 = 0.0;
    for trial in 1..=3 {
        let mut v: Vec<f64> = (0..at.len()).map(|_| noise.sample()).collect();
        let length = norm(&v);
        v.iter_mut().for_each(|vi| *vi /= length);
        let along = |t: f64| -> Vec<f64> { at.iter().zip(&v).map(|(x, vi)| x + t * vi).collect() };
        let finite_difference =
            (problem.objective(&along(h)) - problem.objective(&along(-h))) / (2.0 * h);
        let phidiff: f64 = gradient.iter().zip(&v).map(|(g, vi)| g * vi).sum();
        let error = (phidiff - finite_difference).abs() / finite_difference.abs().max(1e-12);
        println!(
            "gradient check {trial}: ∇f·v = {phidiff:+.10e}, finite difference {finite_difference:+.10e}, \
             relative error {error:.1e}"
        );
        worst = worst.max(error);
    }
    worst
}

/// Two hot spots, a cold spot and a warm ring, in [−0.8, 1].
fn initial_temperature() -> Vec<f64> {
    let blob = |x: f64, y: f64, cx: f64, cy: f64, width: f64| {
        (-((x - cx).powi(2) + (y - cy).powi(2)) / (2.0 * width * width)).exp()
    };
    (0..ROWS * COLS)
        .map(|k| {
            let (y, x) = (
                (k / COLS) as f64 / ROWS as f64,
                (k % COLS) as f64 / COLS as f64,
            );
            let radius = ((x - 0.5).powi(2) + (y - 0.7).powi(2)).sqrt();
            blob(x, y, 0.28, 0.3, 0.07) + 0.7 * blob(x, y, 0.45, 0.22, 0.04)
                - 0.8 * blob(x, y, 0.72, 0.35, 0.07)
                + 0.6 * (-((radius - 0.16) / 0.04).powi(2)).exp()
        })
        .collect()
}

/// Standard normal samples: splitmix64 for uniform bits, Box–Muller for the normal.
struct Gaussian(u64);

impl Gaussian {
    fn new(seed: u64) -> Self {
        Gaussian(seed)
    }

    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // 53 random bits in (0, 1]: never 0, so the logarithm below is finite.
        ((z >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn sample(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// `--out FILE` or the default `target/heat_inverse.svg`.
fn output_path() -> Result<PathBuf, String> {
    let usage = "usage: heat_inverse [--out FILE.svg]";
    let mut args = std::env::args().skip(1);
    let mut out = PathBuf::from("target/heat_inverse.svg");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().ok_or(usage)?.into(),
            _ => return Err(usage.into()),
        }
    }
    Ok(out)
}

/// Blue (cold) through white to red (hot), on the scale ±`limit`.
fn colour(value: f64, limit: f64) -> RGBColor {
    let t = (value / limit).clamp(-1.0, 1.0);
    let (end, t) = if t >= 0.0 {
        ((178, 24, 43), t)
    } else {
        ((33, 102, 172), -t)
    };
    let mix = |e: u8| (255.0 + t * (e as f64 - 255.0)).round() as u8;
    RGBColor(mix(end.0), mix(end.1), mix(end.2))
}

/// Writes the heat maps (one colour scale for all) and the objective per iteration as SVG.
/// SVG needs no fonts here: the text is stored as text, and the viewer draws it.
fn draw(
    out: &Path,
    panels: &[(&str, &[f64])],
    history: &[f64],
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(out, (1360, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "phidiff: initial temperature recovered from a noisy final observation (L-BFGS)",
        ("sans-serif", 20),
    )?;
    let limit = panels[0].1.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let areas = root.split_evenly((1, panels.len() + 1));
    for ((title, field), area) in panels.iter().zip(&areas) {
        let mut chart = ChartBuilder::on(area)
            .caption(*title, ("sans-serif", 16))
            .margin(8)
            .build_cartesian_2d(0..COLS, 0..ROWS)?;
        chart.draw_series((0..ROWS * COLS).map(|k| {
            let (i, j) = (k / COLS, k % COLS);
            Rectangle::new([(j, i), (j + 1, i + 1)], colour(field[k], limit).filled())
        }))?;
    }
    let last = areas.last().expect("one area per panel and one more");
    if history.is_empty() {
        return Ok(root.present()?);
    }
    let (low, high) = history
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let mut chart = ChartBuilder::on(last)
        .caption("objective per L-BFGS iteration", ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0..history.len(), (low * 0.8..high * 1.25).log_scale())?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("iteration")
        .y_labels(5)
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    chart.draw_series(LineSeries::new(
        history.iter().enumerate().map(|(i, &v)| (i, v)),
        &RED,
    ))?;
    root.present()?;
    Ok(())
}

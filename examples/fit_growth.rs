//! Fitting a model kept in a struct: a logistic growth curve with a seasonal term,
//! `Growth { rate, capacity, midpoint, seasonal }`, whose `loss(&self, ..)` method (it calls
//! the method `self.predict(t)`) is differentiated with `#[differentiate]`. argmin's L-BFGS
//! minimizes it through `CostFunction` and `Gradient`, the gradient coming from the
//! generated `loss_rev` as a `Growth` of adjoints.
//!
//! ```text
//! cargo run --release --example fit_growth
//! ```
//!
//! It checks the gradient against finite differences at the first guess and that the fit
//! recovers the parameters the data were made with (exit code 1 otherwise).

use argmin::core::{CostFunction, Error, Executor, Gradient, State};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use phidiff::{differentiate, Differentiable};
use std::process::ExitCode;

/// The model: logistic growth to `capacity` at `rate` around `midpoint`, plus a yearly
/// oscillation of amplitude `seasonal[0]` and phase `seasonal[1]`.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Growth {
    pub rate: f64,
    pub capacity: f64,
    pub midpoint: f64,
    pub seasonal: [f64; 2],
}

impl Growth {
    /// The model at time `t` (years).
    #[differentiate(forward, reverse)]
    pub fn predict(&self, t: f64) -> f64 {
        // The logistic 1 / (1 + e^{-r (t - m)}) as ½(1 + tanh(½ r (t - m))): no overflow
        // however far the line search steps.
        let logistic = 0.5 * self.capacity * (1.0 + (0.5 * self.rate * (t - self.midpoint)).tanh());
        logistic + self.seasonal[0] * (2.0 * std::f64::consts::PI * t + self.seasonal[1]).sin()
    }

    /// Half the sum of squared residuals against observations `ys` at times `ts`.
    #[differentiate(reverse, wrt(self))]
    pub fn loss(&self, ts: &[f64], ys: &[f64]) -> f64 {
        let mut total = 0.0;
        for (&t, &y) in ts.iter().zip(ys) {
            let r = self.predict(t) - y;
            total += 0.5 * r * r;
        }
        total
    }

    fn from_params(p: &[f64]) -> Growth {
        Growth {
            rate: p[0],
            capacity: p[1],
            midpoint: p[2],
            seasonal: [p[3], p[4]],
        }
    }

    fn params(&self) -> Vec<f64> {
        vec![
            self.rate,
            self.capacity,
            self.midpoint,
            self.seasonal[0],
            self.seasonal[1],
        ]
    }
}

/// The fitting problem for argmin: the observations.
struct Fit {
    ts: Vec<f64>,
    ys: Vec<f64>,
}

impl CostFunction for Fit {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        Ok(Growth::from_params(p).loss(&self.ts, &self.ys))
    }
}

impl Gradient for Fit {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, p: &Vec<f64>) -> Result<Vec<f64>, Error> {
        let model = Growth::from_params(p);
        let mut adjoint = model.zero_like();
        model.loss_rev(&mut adjoint, &self.ts, &self.ys, 1.0);
        Ok(adjoint.params())
    }
}

/// Deterministic noise in [-1, 1] (a linear congruential generator).
fn noise(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

fn main() -> ExitCode {
    let truth = Growth {
        rate: 1.3,
        capacity: 8.0,
        midpoint: 4.0,
        seasonal: [0.4, 0.7],
    };
    let mut state = 7;
    let ts: Vec<f64> = (0..120).map(|k| 0.08 * k as f64).collect();
    let ys: Vec<f64> = ts
        .iter()
        .map(|&t| truth.predict(t) + 0.05 * noise(&mut state))
        .collect();
    let fit = Fit { ts, ys };

    let guess = Growth {
        rate: 0.8,
        capacity: 6.0,
        midpoint: 3.0,
        seasonal: [0.2, 0.3],
    };
    let gradient = fit.gradient(&guess.params()).expect("a gradient");
    if let Err(e) = phidiff::check::gradient(
        |p: &[f64]| Growth::from_params(p).loss(&fit.ts, &fit.ys),
        &guess.params(),
        &gradient,
        phidiff::check::Tolerance::default(),
    ) {
        eprintln!("FAILED: loss_rev disagrees with finite differences: {e:?}");
        return ExitCode::FAILURE;
    }
    println!("the gradient from loss_rev agrees with finite differences at the first guess");

    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
    let result = Executor::new(fit, solver)
        .configure(|s| s.param(guess.params()).max_iters(200))
        .run();
    let mut result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("FAILED: L-BFGS stopped with an error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let iterations = result.state().get_iter();
    let cost = result.state().get_best_cost();
    let best = Growth::from_params(&result.state.take_best_param().expect("a best point"));
    println!("L-BFGS: {iterations} iterations, loss {cost:.5}");
    println!("fitted: {best:.4?}");
    println!("truth:  {truth:.4?}");
    let recovered = best
        .params()
        .iter()
        .zip(truth.params())
        .all(|(b, t)| (b - t).abs() <= 0.05 * t.abs().max(1.0));
    if !recovered {
        eprintln!("FAILED: the fit did not recover the parameters the data were made with");
        return ExitCode::FAILURE;
    }
    println!("the fit recovers the parameters within 5 %");
    ExitCode::SUCCESS
}

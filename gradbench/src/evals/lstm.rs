//! GradBench's `lstm` eval (from ADBench): `l` stacked LSTM layers of width `b` with
//! diagonal weights predict each of the `c` vectors of a sequence from the one before;
//! the objective is the mean negative log-likelihood, and `jacobian` its gradient with
//! respect to `main_params` and `extra_params` (each flattened row after row, then
//! concatenated). As in GradBench's reference, the log-sum-exp of a prediction adds 2
//! inside the logarithm, and the initial `state` is an input, not a variable.

use phidiff::differentiate;
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{parse_input, Evaluation};
use crate::runs::{time_runs, Runs};

#[derive(Debug, Deserialize)]
pub struct Input {
    pub main_params: Vec<Vec<f64>>,
    pub extra_params: Vec<Vec<f64>>,
    pub state: Vec<Vec<f64>>,
    pub sequence: Vec<Vec<f64>>,
}

/// The flat problem: `main_params` is `2l × 4b` (per layer a row of weights, then a row
/// of biases, each for the forget, input and output gates and the change), `extra_params`
/// `3 × b` (input weight, output weight, output bias), `state` `2l × b` (per layer the
/// hidden state, then the cell), `sequence` `c × b`.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub l: usize,
    pub c: usize,
    pub b: usize,
    pub main_params: Vec<f64>,
    pub extra_params: Vec<f64>,
    pub state: Vec<f64>,
    pub sequence: Vec<f64>,
}

impl Problem {
    pub fn from_input(input: Input) -> Result<Problem, String> {
        let l = input.main_params.len() / 2;
        let b = input.main_params.first().map_or(0, |r| r.len() / 4);
        let c = input.sequence.len();
        let check = |rows: &[Vec<f64>], n_rows: usize, width: usize, name: &str| {
            if rows.len() != n_rows || rows.iter().any(|r| r.len() != width) {
                Err(format!("lstm: `{name}` is not {n_rows} × {width}"))
            } else {
                Ok(())
            }
        };
        if l == 0 || b == 0 || c < 2 {
            return Err("lstm: needs a layer, a width and two sequence entries".into());
        }
        check(&input.main_params, 2 * l, 4 * b, "main_params")?;
        check(&input.extra_params, 3, b, "extra_params")?;
        check(&input.state, 2 * l, b, "state")?;
        check(&input.sequence, c, b, "sequence")?;
        Ok(Problem {
            l,
            c,
            b,
            main_params: input.main_params.concat(),
            extra_params: input.extra_params.concat(),
            state: input.state.concat(),
            sequence: input.sequence.concat(),
        })
    }

    pub fn objective(&self) -> f64 {
        lstm_objective(
            &self.main_params,
            &self.extra_params,
            &self.state,
            &self.sequence,
            self.l,
            self.c,
            self.b,
        )
    }

    /// The gradient of `main_params`, then of `extra_params`.
    pub fn jacobian(&self) -> Vec<f64> {
        let (_, (main, extra)) = lstm_objective_grad(
            &self.main_params,
            &self.extra_params,
            &self.state,
            &self.sequence,
            self.l,
            self.c,
            self.b,
        );
        [main, extra].concat()
    }
}

/// The objective; the state evolves in a copy of `state`.
#[differentiate(forward, reverse, wrt(main_params, extra_params))]
pub fn lstm_objective(
    main_params: &[f64],
    extra_params: &[f64],
    state: &[f64],
    sequence: &[f64],
    l: usize,
    c: usize,
    b: usize,
) -> f64 {
    let mut hidden_cell = state.to_vec();
    let mut x = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..c - 1 {
        for i in 0..b {
            x[i] = sequence[t * b + i] * extra_params[i];
        }
        for layer in 0..l {
            let w = layer * 8 * b;
            let s = layer * 2 * b;
            for i in 0..b {
                let forget =
                    1.0 / (1.0 + (-(x[i] * main_params[w + i] + main_params[w + 4 * b + i])).exp());
                let ingate = 1.0
                    / (1.0
                        + (-(hidden_cell[s + i] * main_params[w + b + i]
                            + main_params[w + 5 * b + i]))
                            .exp());
                let outgate = 1.0
                    / (1.0
                        + (-(x[i] * main_params[w + 2 * b + i] + main_params[w + 6 * b + i]))
                            .exp());
                let change = (hidden_cell[s + i] * main_params[w + 3 * b + i]
                    + main_params[w + 7 * b + i])
                    .tanh();
                let cell = hidden_cell[s + b + i] * forget + ingate * change;
                hidden_cell[s + b + i] = cell;
                hidden_cell[s + i] = outgate * cell.tanh();
                x[i] = hidden_cell[s + i];
            }
        }
        for i in 0..b {
            ypred[i] = x[i] * extra_params[b + i] + extra_params[2 * b + i];
        }
        let mut sum_exp = 0.0;
        for i in 0..b {
            sum_exp += ypred[i].exp();
        }
        let lse = (sum_exp + 2.0).ln();
        for i in 0..b {
            total += sequence[(t + 1) * b + i] * (ypred[i] - lse);
        }
    }
    -total / ((c - 1) * b) as f64
}

pub fn evaluate(function: &str, input: &Value) -> Result<Evaluation, String> {
    let problem = Problem::from_input(parse_input(input)?)?;
    let runs = Runs::from_input(input);
    match function {
        "objective" => Ok(time_runs(runs, || problem.objective())),
        "jacobian" => Ok(time_runs(runs, || problem.jacobian())),
        _ => Err(super::unknown_function("lstm", function)),
    }
}

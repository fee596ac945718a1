//! ADBench's LSTM objective (the `lstm` program of issue 8) written with
//! `#[differentiate]`: `l` stacked LSTM layers of width `b` predict each character of a
//! sequence of `c` one-hot-like vectors from the previous one; the objective is the mean
//! negative log-likelihood. It follows ADBench's reference definition
//! (`ADBench/src/cpp/shared/lstm.h`): per layer, weights then biases, `4b` each, for the
//! forget, input and output gates and the change; the state holds each layer's hidden
//! state then its cell.
#![allow(dead_code)]

use phidiff::differentiate;

/// The objective; `state` (`2lb`) evolves over the sequence (`c × b`).
#[differentiate(reverse, wrt(main_params, extra_params, state))]
pub fn lstm_objective(
    main_params: &[f64],
    extra_params: &[f64],
    state: &mut [f64],
    sequence: &[f64],
    l: usize,
    c: usize,
    b: usize,
) -> f64 {
    let mut x = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..c - 1 {
        // The input scaled by the first extra parameters.
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
                        + (-(state[s + i] * main_params[w + b + i] + main_params[w + 5 * b + i]))
                            .exp());
                let outgate = 1.0
                    / (1.0
                        + (-(x[i] * main_params[w + 2 * b + i] + main_params[w + 6 * b + i]))
                            .exp());
                let change =
                    (state[s + i] * main_params[w + 3 * b + i] + main_params[w + 7 * b + i]).tanh();
                let cell = state[s + b + i] * forget + ingate * change;
                state[s + b + i] = cell;
                state[s + i] = outgate * cell.tanh();
                x[i] = state[s + i];
            }
        }
        for i in 0..b {
            ypred[i] = x[i] * extra_params[b + i] + extra_params[2 * b + i];
        }
        // ADBench's `logsumexp` adds 2 inside the logarithm (ADBench issue #143); kept so
        // the objective is ADBench's.
        let mut se = 0.0;
        for i in 0..b {
            se += ypred[i].exp();
        }
        let lse = (se + 2.0).ln();
        for i in 0..b {
            total += sequence[(t + 1) * b + i] * (ypred[i] - lse);
        }
    }
    -total / ((c - 1) * b) as f64
}

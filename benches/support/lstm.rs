//! ADBench's LSTM objective (the `lstm` program of issue 8) written with
//! `#[differentiate]`: `l` stacked LSTM layers of width `b` predict each character of a
//! sequence of `c` one-hot-like vectors from the previous one; the objective is the mean
//! negative log-likelihood. It follows ADBench's reference definition
//! (`ADBench/src/cpp/shared/lstm.h`): per layer, weights then biases, `4b` each, for the
//! forget, input and output gates and the change; the state holds each layer's hidden
//! state then its cell.
//!
//! [`lstm_objective`] is the program the way a Rust user writes it (issue 47): a slice of
//! layer structs walked together with a slice of state structs, the sequence as rows, a
//! `sigmoid` closure. [`lstm_objective_flat`] is the same objective on flat slices with the
//! sizes passed, as it had to be written before structs were accepted.
#![allow(dead_code)]

use phidiff::{differentiate, Differentiable};

/// One layer's weights and biases, `4b` each: forget gate, input gate, output gate, change.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct LstmLayer {
    pub weight: Vec<f64>,
    pub bias: Vec<f64>,
}

/// One layer's state.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct LayerState {
    pub hidden: Vec<f64>,
    pub cell: Vec<f64>,
}

/// The input scale, and the output's scale and offset, `b` each.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Extra {
    pub in_scale: Vec<f64>,
    pub out_scale: Vec<f64>,
    pub out_bias: Vec<f64>,
}

/// The layers of ADBench's flat `main_params` (`l × 8b`).
pub fn layers_from_flat(main: &[f64], b: usize) -> Vec<LstmLayer> {
    main.chunks(8 * b)
        .map(|w| LstmLayer {
            weight: w[..4 * b].to_vec(),
            bias: w[4 * b..].to_vec(),
        })
        .collect()
}

/// The extra parameters of ADBench's flat `extra_params` (`3b`).
pub fn extra_from_flat(extra: &[f64], b: usize) -> Extra {
    Extra {
        in_scale: extra[..b].to_vec(),
        out_scale: extra[b..2 * b].to_vec(),
        out_bias: extra[2 * b..].to_vec(),
    }
}

/// The states of ADBench's flat `state` (`l × 2b`).
pub fn state_from_flat(state: &[f64], b: usize) -> Vec<LayerState> {
    state
        .chunks(2 * b)
        .map(|s| LayerState {
            hidden: s[..b].to_vec(),
            cell: s[b..].to_vec(),
        })
        .collect()
}

/// `rows` one after the other into `out` (as far as `out` reaches).
fn write_flat<'a>(rows: impl IntoIterator<Item = &'a [f64]>, out: &mut [f64]) {
    for (o, v) in out.iter_mut().zip(rows.into_iter().flatten()) {
        *o = *v;
    }
}

/// ADBench's flat parameters of `layers` and `extra` (the main ones, then the extra ones)
/// written into `out`; an `out` of the main ones' length takes only those.
pub fn write_params(layers: &[LstmLayer], extra: &Extra, out: &mut [f64]) {
    let main = layers.iter().flat_map(|l| [&l.weight[..], &l.bias[..]]);
    let extras = [
        &extra.in_scale[..],
        &extra.out_scale[..],
        &extra.out_bias[..],
    ];
    write_flat(main.chain(extras), out);
}

/// ADBench's flat state of `states` (each layer's hidden state, then its cell).
pub fn write_state(states: &[LayerState], out: &mut [f64]) {
    write_flat(
        states.iter().flat_map(|s| [&s.hidden[..], &s.cell[..]]),
        out,
    );
}

/// The objective; `state` evolves over the sequence (`c` rows of `b`).
#[differentiate(reverse, wrt(layers, extra, state))]
pub fn lstm_objective(
    layers: &[LstmLayer],
    extra: &Extra,
    state: &mut [LayerState],
    sequence: &[Vec<f64>],
) -> f64 {
    let b = extra.in_scale.len();
    // The logistic function, a local closure (a `fn sigmoid` helper with its own
    // `#[differentiate]` works too, but costs about 40 % here until small helpers are
    // inlined, issue 48).
    let sigmoid = |z: f64| 1.0 / (1.0 + (-z).exp());
    let mut x = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..sequence.len() - 1 {
        // The input scaled by the first extra parameters.
        for i in 0..b {
            x[i] = sequence[t][i] * extra.in_scale[i];
        }
        for (layer, s) in layers.iter().zip(state.iter_mut()) {
            let (w, bias) = (&layer.weight, &layer.bias);
            for i in 0..b {
                let forget = sigmoid(x[i] * w[i] + bias[i]);
                let ingate = sigmoid(s.hidden[i] * w[b + i] + bias[b + i]);
                let outgate = sigmoid(x[i] * w[2 * b + i] + bias[2 * b + i]);
                let change = (s.hidden[i] * w[3 * b + i] + bias[3 * b + i]).tanh();
                s.cell[i] = s.cell[i] * forget + ingate * change;
                s.hidden[i] = outgate * s.cell[i].tanh();
                x[i] = s.hidden[i];
            }
        }
        for i in 0..b {
            ypred[i] = x[i] * extra.out_scale[i] + extra.out_bias[i];
        }
        // ADBench's `logsumexp` adds 2 inside the logarithm (ADBench issue #143); kept so
        // the objective is ADBench's.
        let lse = (ypred.iter().map(|y| y.exp()).sum::<f64>() + 2.0).ln();
        for (target, y) in sequence[t + 1].iter().zip(&ypred) {
            total += target * (y - lse);
        }
    }
    -total / ((sequence.len() - 1) * b) as f64
}

/// The objective as first written for phidiff, on flat slices with the sizes passed (kept
/// to measure the struct form against, in one run); `state` (`2lb`) evolves over the
/// sequence (`c × b`).
#[differentiate(reverse, wrt(main_params, extra_params, state))]
pub fn lstm_objective_flat(
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

//! A hand-written reverse-mode gradient of ADBench's LSTM objective (`lstm.rs`), derived
//! analytically without AD: the baseline phidiff's generated `lstm_objective_rev` is
//! measured against (what a careful person writes by hand).
//!
//! ADBench's LSTM is elementwise: unit `i` of a layer sees only its input `x_i`, its
//! hidden state `h_i` and cell `s_i`. The forward sweep records each unit's inputs and
//! gate values (one [`CellRecord`] per step, layer and unit); the reverse sweep walks the
//! steps and layers backwards. Derivation, for one unit with `h' = o·tanh(s')`,
//! `s' = s·f + g·ch` (`f`, `g`, `o` sigmoids of `x·W_f + b_f`, `h·W_g + b_g`,
//! `x·W_o + b_o`; `ch = tanh(h·W_c + b_c)`) and `h̄'`, `s̄'` the adjoints of its outputs:
//! - `s̄'_total = s̄' + h̄'·o·(1 − tanh²s')`, `ō = h̄'·tanh s'`;
//! - pre-activation adjoints `f̄·f(1−f)` with `f̄ = s̄'_total·s`, `ḡ·g(1−g)` with
//!   `ḡ = s̄'_total·ch`, `ō·o(1−o)`, and `s̄'_total·g·(1 − ch²)` for the change;
//! - each weight gets its pre-activation adjoint times its input, each bias the adjoint;
//! - `x̄ = f̄_pre·W_f + ō_pre·W_o`, `h̄ = ḡ_pre·W_g + ch̄_pre·W_c`, `s̄ = s̄'_total·f`.
//!
//! The output `ypred = x·e_out + e_off` of each step enters `−Σ y_j (ypred_j − lse)/N`,
//! so `∂/∂ypred_j = −(y_j − (Σ_i y_i)·e^{ypred_j}/(Σ_i e^{ypred_i} + 2))/N`; that is known
//! in the forward sweep, which stores the resulting adjoint of the top layer's output.
#![allow(dead_code)]

/// One unit of one layer at one step: what its reverse step needs.
#[derive(Clone, Copy, Debug, Default)]
struct CellRecord {
    /// The unit's input `x_i` (the scaled sequence, or the layer below's output).
    input: f64,
    /// The hidden state and cell before the step.
    hidden: f64,
    cell: f64,
    forget: f64,
    ingate: f64,
    outgate: f64,
    change: f64,
    /// `tanh` of the updated cell.
    tanh_cell: f64,
}

/// The objective of `lstm::lstm_objective_flat` (same value, same rounding; `state` is left
/// at its final value as there). The gradient w.r.t. `main_params` and `extra_params` is
/// *added* into `d_main` and `d_extra`; `d_state` follows the generated `_rev`'s
/// convention for a `&mut` slice: on entry it holds the adjoint of the final state (zero
/// for the plain gradient), on exit that of the initial state.
#[allow(clippy::too_many_arguments)]
pub fn lstm_objective_hand(
    main_params: &[f64],
    extra_params: &[f64],
    state: &mut [f64],
    sequence: &[f64],
    l: usize,
    c: usize,
    b: usize,
    d_main: &mut [f64],
    d_extra: &mut [f64],
    d_state: &mut [f64],
) -> f64 {
    assert_eq!(
        d_main.len(),
        main_params.len(),
        "d_main has the length of main_params"
    );
    assert_eq!(
        d_extra.len(),
        extra_params.len(),
        "d_extra has the length of extra_params"
    );
    assert_eq!(
        d_state.len(),
        state.len(),
        "d_state has the length of state"
    );
    let n_steps = c - 1;
    let n_terms = ((c - 1) * b) as f64;

    // Forward sweep: the primal, recording every unit, and the adjoint of each step's
    // top-layer output (the loss term of a step depends on nothing later).
    let mut tape = Vec::with_capacity(n_steps * l * b);
    let mut d_top = vec![0.0; n_steps * b];
    let mut x = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    let mut exp_ypred = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..n_steps {
        for i in 0..b {
            x[i] = sequence[t * b + i] * extra_params[i];
        }
        for layer in 0..l {
            let w = layer * 8 * b;
            let s = layer * 2 * b;
            for i in 0..b {
                let hidden = state[s + i];
                let cell_before = state[s + b + i];
                let forget =
                    1.0 / (1.0 + (-(x[i] * main_params[w + i] + main_params[w + 4 * b + i])).exp());
                let ingate = 1.0
                    / (1.0
                        + (-(hidden * main_params[w + b + i] + main_params[w + 5 * b + i])).exp());
                let outgate = 1.0
                    / (1.0
                        + (-(x[i] * main_params[w + 2 * b + i] + main_params[w + 6 * b + i]))
                            .exp());
                let change =
                    (hidden * main_params[w + 3 * b + i] + main_params[w + 7 * b + i]).tanh();
                let cell = cell_before * forget + ingate * change;
                let tanh_cell = cell.tanh();
                tape.push(CellRecord {
                    input: x[i],
                    hidden,
                    cell: cell_before,
                    forget,
                    ingate,
                    outgate,
                    change,
                    tanh_cell,
                });
                state[s + b + i] = cell;
                state[s + i] = outgate * tanh_cell;
                x[i] = state[s + i];
            }
        }
        let mut se = 0.0;
        for i in 0..b {
            ypred[i] = x[i] * extra_params[b + i] + extra_params[2 * b + i];
            exp_ypred[i] = ypred[i].exp();
            se += exp_ypred[i];
        }
        let lse = (se + 2.0).ln();
        let next = &sequence[(t + 1) * b..(t + 2) * b];
        let mut sum_y = 0.0;
        for i in 0..b {
            total += next[i] * (ypred[i] - lse);
            sum_y += next[i];
        }
        for i in 0..b {
            let d_ypred = -(next[i] - sum_y * exp_ypred[i] / (se + 2.0)) / n_terms;
            d_extra[b + i] += d_ypred * x[i];
            d_extra[2 * b + i] += d_ypred;
            d_top[t * b + i] = d_ypred * extra_params[b + i];
        }
    }
    let loss = -total / n_terms;

    // Reverse sweep; `d_state` is the adjoint of the state after step `t`, `d_x` that of
    // the current layer's output at step `t`.
    let mut d_x = vec![0.0; b];
    for t in (0..n_steps).rev() {
        d_x.copy_from_slice(&d_top[t * b..(t + 1) * b]);
        for layer in (0..l).rev() {
            let w = layer * 8 * b;
            let s = layer * 2 * b;
            let records = &tape[(t * l + layer) * b..(t * l + layer + 1) * b];
            for (i, r) in records.iter().enumerate() {
                // The new hidden state is both this layer's output and next step's state.
                let d_hidden_out = d_x[i] + d_state[s + i];
                let d_cell = d_state[s + b + i]
                    + d_hidden_out * r.outgate * (1.0 - r.tanh_cell * r.tanh_cell);
                let d_forget_pre = d_cell * r.cell * r.forget * (1.0 - r.forget);
                let d_ingate_pre = d_cell * r.change * r.ingate * (1.0 - r.ingate);
                let d_outgate_pre = d_hidden_out * r.tanh_cell * r.outgate * (1.0 - r.outgate);
                let d_change_pre = d_cell * r.ingate * (1.0 - r.change * r.change);
                d_main[w + i] += d_forget_pre * r.input;
                d_main[w + b + i] += d_ingate_pre * r.hidden;
                d_main[w + 2 * b + i] += d_outgate_pre * r.input;
                d_main[w + 3 * b + i] += d_change_pre * r.hidden;
                d_main[w + 4 * b + i] += d_forget_pre;
                d_main[w + 5 * b + i] += d_ingate_pre;
                d_main[w + 6 * b + i] += d_outgate_pre;
                d_main[w + 7 * b + i] += d_change_pre;
                d_state[s + i] = d_ingate_pre * main_params[w + b + i]
                    + d_change_pre * main_params[w + 3 * b + i];
                d_state[s + b + i] = d_cell * r.forget;
                d_x[i] =
                    d_forget_pre * main_params[w + i] + d_outgate_pre * main_params[w + 2 * b + i];
            }
        }
        for i in 0..b {
            d_extra[i] += d_x[i] * sequence[t * b + i];
        }
    }
    loss
}

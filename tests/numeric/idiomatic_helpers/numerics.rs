//! Helpers in a file of their own (issue 48), without attributes: the top of a chain
//! three deep across modules (this file → `act::deep` → `act`), with a private constant.

use super::act::deep::gate;

const SCALE: f64 = 0.5;

/// Half the sum of the gated pairs `(a[i], b[i])`.
pub fn pair_energy(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += gate(a[i], b[i]);
    }
    SCALE * s
}

use phidiff::differentiate;

// `state` is written from `w` and read back: its values depend on `w`.
#[differentiate(reverse, wrt(w))]
fn f(w: &[f64], state: &mut [f64]) -> f64 {
    for i in 0..state.len() {
        state[i] = state[i] * w[i];
    }
    state[0] * state[1]
}

fn main() {}

use phidiff::differentiate;

// Constants made by a macro are not in the source phidiff reads.
macro_rules! constants {
    () => {
        const SCALE: f64 = 2.0;
        const WEIGHTS: [f64; 2] = [0.5, 1.5];
    };
}
constants!();

#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    x[0] * SCALE
}

#[differentiate(forward, reverse)]
fn g(x: &[f64]) -> f64 {
    x[0] * WEIGHTS[1]
}

fn main() {
    let _ = (f(&[1.0]), g(&[1.0]));
}

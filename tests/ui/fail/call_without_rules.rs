use phidiff::differentiate;

// A helper with an early `return` is not inlined, so the derivative calls `helper_fwd` and
// `helper_rev`, which nobody wrote.
fn helper(v: f64) -> f64 {
    if v < 0.0 {
        return 0.0;
    }
    v * v
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    helper(a) * x[0]
}

fn main() {}

use phidiff::differentiate;

// A helper with a `return` inside a loop is not inlined, so the derivative calls
// `helper_fwd` and `helper_rev`, which nobody wrote.
fn helper(v: f64) -> f64 {
    let mut s = v;
    for _ in 0..3 {
        if s > 10.0 {
            return s;
        }
        s = s * s;
    }
    s
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    helper(a) * x[0]
}

fn main() {}

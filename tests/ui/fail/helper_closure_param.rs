use phidiff::differentiate;

// A helper taking a closure is not inlined, and has no rules.
fn apply(f: impl Fn(f64) -> f64, v: f64) -> f64 {
    f(v) * v
}

#[differentiate(forward, reverse)]
fn g(x: &[f64]) -> f64 {
    apply(|t| t.sin(), x[0])
}

fn main() {}

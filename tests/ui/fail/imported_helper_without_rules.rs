use phidiff::differentiate;

mod stats {
    /// Not inlined (it ends in a `match` holding a `return`), no rules beside it.
    pub fn clipped(v: f64, lo: f64) -> f64 {
        match v > lo {
            true => return v,
            false => {}
        }
        lo
    }
}

// A helper brought in by `use`, under another name: the error names where it is defined.
use stats::clipped as clip;

#[differentiate(reverse)]
fn f(x: f64) -> f64 {
    clip(x * x, 0.5)
}

// And through a glob import of the parent module, as a nested module writes it.
mod inner {
    use super::*;

    #[differentiate(forward)]
    pub fn g(x: f64) -> f64 {
        clip(x, 0.25) * x
    }
}

fn main() {}

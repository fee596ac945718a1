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

// A helper of another module of this crate: the error names the path it is called by.
#[differentiate(reverse)]
fn f(x: f64) -> f64 {
    stats::clipped(x * x, 0.5)
}

fn main() {}

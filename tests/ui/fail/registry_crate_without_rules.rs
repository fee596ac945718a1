use phidiff::differentiate;

// A function of a registry crate (num-traits) that phidiff reads but does not inline (generic
// over `T: PartialOrd`), with no rules: one phidiff error, suggesting a wrapper of the user's
// own with hand-written rules.
#[differentiate(reverse)]
fn squash(x: f64) -> f64 {
    num_traits::clamp(x * x, 0.0, 1.0) + x
}

fn main() {}

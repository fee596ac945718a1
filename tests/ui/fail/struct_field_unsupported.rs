// A float inside a type phidiff does not split (here an `Option`) cannot be an active field.
#[derive(phidiff::Differentiable)]
pub struct Params {
    pub k: f64,
    pub damping: Option<f64>,
}

fn main() {}

use phidiff::differentiate;

pub struct Params {
    pub k: f64,
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let p = Params { k: a };
    x[0] * p.k
}

fn main() {}

use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Debug)]
pub struct Params {
    pub k: f64,
    pub w: Vec<f64>,
}

#[differentiate(forward, reverse)]
pub fn inner(p: &Params, x: &[f64]) -> f64 {
    p.k * x[0] + p.w[0] * x[1]
}

#[differentiate(forward, reverse)]
pub fn outer(p: &Params, x: &[f64]) -> f64 {
    let a = inner(p, x);
    a * a
}

fn main() {
    let p = Params {
        k: 2.0,
        w: vec![3.0],
    };
    let (v, (dp, dx)) = outer_grad(&p, &[0.5, 0.25]);
    println!("{v} {dp:?} {dx:?}");
}

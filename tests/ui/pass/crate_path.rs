//! `crate = path` names where the runtime lives (here under a renamed import).
use phidiff as pd;
use pd::differentiate;

#[differentiate(forward, reverse, crate = ::phidiff)]
pub fn absolute(x: &[f64], k: f64) -> f64 {
    k * x[0] * x[1]
}

mod inner {
    use super::pd;

    #[pd::differentiate(forward, reverse, crate = pd)]
    pub fn renamed(x: &[f64], k: f64) -> f64 {
        (k * x[0]).exp() + x[1]
    }
}

fn main() {
    let (v, (gx, gk)) = absolute_grad(&[2.0, 3.0], 4.0);
    assert_eq!(v, 24.0);
    assert_eq!(gx, vec![12.0, 8.0]);
    assert_eq!(gk, 6.0);
    let (_, (gx, _)) = inner::renamed_grad(&[0.0, 1.0], 1.0);
    assert!((gx[0] - 1.0).abs() < 1e-12 && (gx[1] - 1.0).abs() < 1e-12);
}

//! `coarsen = off` (the one-operation-per-segment baseline) gives the same numbers.
use phidiff::differentiate;

#[differentiate(forward, reverse)]
pub fn smooth(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let t = (a * x[i]).tanh();
        s += t * t + x[i].exp() / (1.0 + a * a);
    }
    s
}

#[differentiate(forward, reverse, coarsen = off)]
pub fn smooth_base(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let t = (a * x[i]).tanh();
        s += t * t + x[i].exp() / (1.0 + a * a);
    }
    s
}

fn main() {
    let x = [0.1, -0.4, 0.9];
    let (v1, (g1, a1)) = smooth_grad(&x, 0.7);
    let (v2, (g2, a2)) = smooth_base_grad(&x, 0.7);
    assert!((v1 - v2).abs() < 1e-12);
    assert!((a1 - a2).abs() < 1e-12);
    for (p, q) in g1.iter().zip(&g2) {
        assert!((p - q).abs() < 1e-12);
    }
}

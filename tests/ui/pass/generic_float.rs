//! Generic code stays generic: `T: Float` works for f64 and f32, with the same generics.
use phidiff::{differentiate, Float};

#[differentiate(forward, reverse)]
pub fn energy<T: Float>(x: &[T], k: T, n: usize) -> T {
    let half = T::from(0.5).unwrap();
    let mut s = T::zero();
    for i in 0..n {
        s += half * k * x[i] * x[i];
    }
    s
}

#[differentiate(forward, reverse)]
pub fn rosenbrock<T>(x: &[T]) -> T
where
    T: phidiff::Float,
{
    let mut s = T::zero();
    for i in 0..x.len() - 1 {
        let a = T::one() - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + T::from(100.0).unwrap() * b * b;
    }
    s
}

fn main() {
    let _: fn(&[f64], &[f64], f64, f64, usize) -> (f64, f64) = energy_fwd::<f64>;
    let _: fn(&[f32], &mut [f32], f32, usize, f32) -> (f32, f32) = energy_rev::<f32>;
    let _: fn(&[f64], f64, usize) -> (f64, (Vec<f64>, f64)) = energy_grad::<f64>;
    let _: fn(&[f64]) -> (f64, Vec<f64>) = rosenbrock_grad::<f64>;

    let (v, (gx, gk)) = energy_grad(&[1.0f64, 2.0], 3.0, 2);
    assert_eq!(v, 7.5);
    assert_eq!(gx, vec![3.0, 6.0]);
    assert_eq!(gk, 2.5);
    let (v32, _) = energy_grad(&[1.0f32, 2.0], 3.0, 2);
    assert_eq!(v32, 7.5f32);
    let (r, g) = rosenbrock_grad(&[1.0f64, 1.0, 1.0]);
    assert_eq!(r, 0.0);
    assert!(g.iter().all(|d| d.abs() < 1e-12));
}

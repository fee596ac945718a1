//! `reverse(width = N)`: each shadow becomes an array of N shadows, the seed an array of N
//! seeds and each scalar adjoint an array of N; the default name is `<name>_rev<N>`, and
//! `name = ..` renames it. It sits next to the scalar `_rev` and `_grad`.
//! `forward(width = N)`: each tangent parameter becomes an array of N tangents of its type
//! and a float result's tangent an array of N; the default name is `<name>_fwd<N>`.
use phidiff::differentiate;

#[differentiate(
    reverse,
    reverse(width = 2),
    reverse(width = 1, name = energy_one),
    forward(width = 2)
)]
pub fn energy(x: &[f64], k: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += k * x[i] * x[i];
    }
    s
}

#[differentiate(reverse(name = scale_adj, width = 3), forward(width = 2, name = scale_tan))]
pub fn scale<T: phidiff::Float>(x: &[T], out: &mut [T], k: T) {
    for i in 0..x.len() {
        out[i] = k * x[i];
    }
}

fn main() {
    let _: fn(&[f64], &mut [f64], f64, usize, f64) -> (f64, f64) = energy_rev;
    let _: fn(&[f64], [&mut [f64]; 2], f64, usize, [f64; 2]) -> (f64, [f64; 2]) = energy_rev2;
    let _: fn(&[f64], [&mut [f64]; 1], f64, usize, [f64; 1]) -> (f64, [f64; 1]) = energy_one;
    let _: fn(&[f64], [&mut [f64]; 3], &mut [f64], [&mut [f64]; 3], f64) -> [f64; 3] =
        scale_adj::<f64>;
    let _: fn(&[f64], [&[f64]; 2], f64, [f64; 2], usize) -> (f64, [f64; 2]) = energy_fwd2;
    let _: fn(&[f64], [&[f64]; 2], &mut [f64], [&mut [f64]; 2], f64, [f64; 2]) = scale_tan::<f64>;

    let x = [1.0, 2.0, 3.0];
    let (mut d0, mut d1) = ([0.0; 3], [0.0; 3]);
    let (v, dk) = energy_rev2(&x, [&mut d0, &mut d1], 2.0, 3, [1.0, -1.0]);
    assert_eq!(v, energy(&x, 2.0, 3));
    assert_eq!(dk, [14.0, -14.0]);
    assert_eq!(d0, [4.0, 8.0, 12.0]);
    assert_eq!(d1, [-4.0, -8.0, -12.0]);
    // Tangents (ẋ, k̇) = (x, 0) and (x + e₀, 1): 2k x·ẋ + k̇ |x|².
    let (v, t) = energy_fwd2(&x, [&x, &[2.0, 2.0, 3.0]], 2.0, [0.0, 1.0], 3);
    assert_eq!(v, energy(&x, 2.0, 3));
    assert_eq!(t, [56.0, 74.0]);
}

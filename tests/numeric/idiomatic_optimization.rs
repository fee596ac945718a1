//! Issue 46's corpus, optimization test functions: written as a Rust crate of such
//! functions writes them (generic over `num_traits::Float` imported as `Float`, with
//! `FromPrimitive` constants, `Sum` for iterator sums, destructured array parameters,
//! named constants, iterator chains), with only `#[differentiate]` added. Each is checked
//! by `check_generic`: num-dual's forward mode along every axis, finite differences, the
//! dot-product test and num-dual's hyper-dual H·v against `_rev::<Dual<f64>>`.

use super::differentiate;
use crate::common::*;
use num_traits::{Float, FromPrimitive};
use std::f64::consts::{E, PI};
use std::iter::Sum;

/// Ackley's function with its usual parameters.
#[differentiate(forward, reverse)]
pub fn ackley<T: Float + FromPrimitive + Sum>(param: &[T]) -> T {
    let a = T::from_f64(20.0).unwrap();
    let b = T::from_f64(0.2).unwrap();
    let c = T::from_f64(2.0 * PI).unwrap();
    let n = T::from_usize(param.len()).unwrap();
    let squares = param.iter().map(|&x| x * x).sum::<T>() / n;
    let cosines = param.iter().map(|&x| (c * x).cos()).sum::<T>() / n;
    -a * (-b * squares.sqrt()).exp() - cosines.exp() + a + T::from_f64(E).unwrap()
}

/// Beale's function of a point `[x, y]`.
#[differentiate(forward, reverse)]
pub fn beale<T: Float + FromPrimitive>(param: &[T; 2]) -> T {
    let [x1, x2] = *param;
    let c = |k: f64| T::from_f64(k).unwrap();
    (c(1.5) - x1 + x1 * x2).powi(2)
        + (c(2.25) - x1 + x1 * x2.powi(2)).powi(2)
        + (c(2.625) - x1 + x1 * x2.powi(3)).powi(2)
}

/// Rosenbrock's function, summed over neighbouring pairs with `zip(skip(1))`.
#[differentiate(forward, reverse)]
pub fn rosenbrock<T: Float + FromPrimitive + Sum>(param: &[T]) -> T {
    let (a, b) = (T::one(), T::from_f64(100.0).unwrap());
    param
        .iter()
        .zip(param.iter().skip(1))
        .map(|(&x, &y)| (a - x).powi(2) + b * (y - x.powi(2)).powi(2))
        .sum()
}

/// Rastrigin's function, with `A` a named constant.
#[differentiate(forward, reverse)]
pub fn rastrigin<T: Float + FromPrimitive + Sum>(param: &[T]) -> T {
    const A: f64 = 10.0;
    let a = T::from_f64(A).unwrap();
    let n = T::from_usize(param.len()).unwrap();
    a * n
        + param
            .iter()
            .map(|&x| x.powi(2) - a * (T::from_f64(2.0 * PI).unwrap() * x).cos())
            .sum::<T>()
}

/// Styblinski–Tang, halved, with a `fold`.
#[differentiate(forward, reverse)]
pub fn styblinski_tang<T: Float + FromPrimitive>(param: &[T]) -> T {
    let half = T::from_f64(0.5).unwrap();
    half * param.iter().fold(T::zero(), |acc, &x| {
        acc + x.powi(4) - T::from_f64(16.0).unwrap() * x.powi(2) + T::from_f64(5.0).unwrap() * x
    })
}

/// Zakharov's function: the weights are the positions (`enumerate`).
#[differentiate(forward, reverse)]
pub fn zakharov<T: Float + FromPrimitive + Sum>(param: &[T]) -> T {
    let half = T::from_f64(0.5).unwrap();
    let sum1 = param.iter().map(|&x| x.powi(2)).sum::<T>();
    let sum2 = param
        .iter()
        .enumerate()
        .map(|(i, &x)| half * T::from_usize(i + 1).unwrap() * x)
        .sum::<T>();
    sum1 + sum2.powi(2) + sum2.powi(4)
}

/// Lévy's function: the first and last terms apart, the middle ones over windows.
#[differentiate(forward, reverse)]
pub fn levy<T: Float + FromPrimitive + Sum>(param: &[T]) -> T {
    let (one, four) = (T::one(), T::from_f64(4.0).unwrap());
    let pi = T::from_f64(PI).unwrap();
    let w = |x: T| one + (x - one) / four;
    let first = w(param[0]);
    let last = w(param[param.len() - 1]);
    let middle: T = param
        .windows(2)
        .map(|pair| {
            let wi = w(pair[0]);
            (wi - one).powi(2)
                * (one + T::from_f64(10.0).unwrap() * (pi * wi + one).sin().powi(2))
        })
        .sum();
    (pi * first).sin().powi(2)
        + middle
        + (last - one).powi(2) * (one + (T::from_f64(2.0).unwrap() * pi * last).sin().powi(2))
}

/// The sphere function over the positive coordinates only (`filter`), plus the largest
/// coordinate (`max_by` with `partial_cmp`).
#[differentiate(forward, reverse)]
pub fn positive_sphere_with_peak<T: Float + FromPrimitive + Sum>(param: &[T]) -> T {
    let positive: T = param.iter().filter(|&&x| x > T::zero()).map(|&x| x * x).sum();
    let peak = *param
        .iter()
        .max_by(|a, b| a.partial_cmp(b).unwrap())
        .unwrap();
    positive + peak
}

/// Himmelblau's function of a destructured pair, with a deferred `let`.
#[differentiate(forward, reverse)]
pub fn himmelblau<T: Float + FromPrimitive>(param: &[T; 2]) -> T {
    let [x, y] = *param;
    let seven = T::from_f64(7.0).unwrap();
    let r;
    if x > y {
        r = (x * x + y - T::from_f64(11.0).unwrap()).powi(2) + (x + y * y - seven).powi(2);
    } else {
        r = (y * y + x - seven).powi(2) + (x * x + y - T::from_f64(11.0).unwrap()).powi(2);
    }
    r
}

/// Wrappers of the array functions on slices, for the harness.
fn beale_s<T: Float + FromPrimitive>(x: &[T]) -> T {
    beale(&[x[0], x[1]])
}

fn himmelblau_s<T: Float + FromPrimitive>(x: &[T]) -> T {
    himmelblau(&[x[0], x[1]])
}

pub fn generic_test_functions_against_num_dual() {
    let x = [0.31, -0.72, 1.13, 0.44, -0.25];
    crate::check_slice_fn!(ackley, ackley_fwd, ackley_rev, ackley_grad, x);
    crate::check_slice_fn!(rosenbrock, rosenbrock_fwd, rosenbrock_rev, rosenbrock_grad, x);
    crate::check_slice_fn!(rastrigin, rastrigin_fwd, rastrigin_rev, rastrigin_grad, x);
    crate::check_slice_fn!(
        styblinski_tang,
        styblinski_tang_fwd,
        styblinski_tang_rev,
        styblinski_tang_grad,
        x
    );
    crate::check_slice_fn!(zakharov, zakharov_fwd, zakharov_rev, zakharov_grad, x);
    crate::check_slice_fn!(levy, levy_fwd, levy_rev, levy_grad, x);
    crate::check_slice_fn!(
        positive_sphere_with_peak,
        positive_sphere_with_peak_fwd,
        positive_sphere_with_peak_rev,
        positive_sphere_with_peak_grad,
        x
    );
}

pub fn array_parameters_against_num_dual() {
    for (name, p) in [("beale", [1.2, 0.4]), ("beale", [-0.6, 0.9])] {
        let _ = name;
        check_generic(&Generic {
            name: "beale",
            x: &p,
            f: &|x| beale_s(x),
            f_dual: &|x| beale_s(x),
            f_hyper: &|x| beale_s(x),
            grad: &|x| {
                let (v, g) = beale_grad(&[x[0], x[1]]);
                (v, g.to_vec())
            },
            fwd: &|x, d| beale_fwd(&[x[0], x[1]], &[d[0], d[1]]),
            rev: &|x, s| {
                let mut g = [0.0; 2];
                let v = beale_rev(&[x[0], x[1]], &mut g, s);
                (v, g.to_vec())
            },
            hvp: &|x, v| {
                let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
                let mut g = [d(0.0, 0.0); 2];
                beale_rev(&[d(x[0], v[0]), d(x[1], v[1])], &mut g, phidiff::Dual::constant(1.0));
                g.iter().map(|d| d.eps).collect()
            },
        });
    }
    // Both branches of the deferred `let`.
    for p in [[2.5, 1.5], [-1.5, 2.5]] {
        check_generic(&Generic {
            name: "himmelblau",
            x: &p,
            f: &|x| himmelblau_s(x),
            f_dual: &|x| himmelblau_s(x),
            f_hyper: &|x| himmelblau_s(x),
            grad: &|x| {
                let (v, g) = himmelblau_grad(&[x[0], x[1]]);
                (v, g.to_vec())
            },
            fwd: &|x, d| himmelblau_fwd(&[x[0], x[1]], &[d[0], d[1]]),
            rev: &|x, s| {
                let mut g = [0.0; 2];
                let v = himmelblau_rev(&[x[0], x[1]], &mut g, s);
                (v, g.to_vec())
            },
            hvp: &|x, v| {
                let d = |re: f64, eps: f64| phidiff::Dual { re, eps };
                let mut g = [d(0.0, 0.0); 2];
                himmelblau_rev(&[d(x[0], v[0]), d(x[1], v[1])], &mut g, phidiff::Dual::constant(1.0));
                g.iter().map(|d| d.eps).collect()
            },
        });
    }
}

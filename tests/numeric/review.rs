//! The reproducers of issue 45's adversarial review (D4–D6 and the misleading messages),
//! each written as the user wrote it and checked against finite differences and the
//! dot-product test (`TOLS`), or against hand-derived values at 1e-15.

use super::differentiate;
use crate::common::*;
use num_traits::Float;

/// D4: explicit lifetimes, in generic code (`_grad` called `_rev::<'a, T>`: E0794).
#[differentiate(forward, reverse)]
pub fn scaled_energy<'a, T: phidiff::Float>(x: &'a [T], k: T) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        s += k * x[i] * x[i] + x[i].sin();
    }
    s
}

/// D4: two lifetimes, one outliving the other, and an output slice.
#[differentiate(forward, reverse)]
pub fn scaled_copy<'a, 'b: 'a>(x: &'a [f64], y: &'b mut [f64], k: f64) -> f64 {
    for i in 0..x.len() {
        y[i] = k * x[i] * x[i];
    }
    y[0] + y[y.len() - 1]
}

pub fn explicit_lifetimes() {
    let x = [0.3, -1.1, 0.7];
    let mut p = x.to_vec();
    p.push(1.9);
    check_grad(
        "scaled_energy",
        &p,
        &|p| scaled_energy(&p[..3], p[3]),
        &|p| {
            let (v, (mut g, gk)) = scaled_energy_grad(&p[..3], p[3]);
            g.push(gk);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "scaled_copy",
        x: &p,
        primal: &|p| {
            let mut y = zeros(3);
            let v = scaled_copy(&p[..3], &mut y, p[3]);
            y.push(v);
            y
        },
        jvp: &|p, d| {
            let (mut y, mut dy) = (zeros(3), zeros(3));
            let (v, dv) = scaled_copy_fwd(&p[..3], &d[..3], &mut y, &mut dy, p[3], d[3]);
            y.push(v);
            dy.push(dv);
            (y, dy)
        },
        vjp: &|p, w| {
            let (mut dx, mut y, mut dy) = (zeros(3), zeros(3), w[..3].to_vec());
            let (v, dk) = scaled_copy_rev(&p[..3], &mut dx, &mut y, &mut dy, p[3], w[3]);
            y.push(v);
            dx.push(dk);
            (y, dx)
        },
        tols: TOLS,
    });
}

/// D5: `swap` of two rows of a `&mut [Vec<f64>]` (the macro failed with an internal error).
#[differentiate(forward, reverse)]
pub fn swapped_rows(a: &mut [Vec<f64>], k: f64) -> f64 {
    a.swap(0, 2);
    a[0][1] * k + a[2][0] * a[0][0] + a[1][1]
}

/// D5: `swap` of rows of `&mut [[f64; 2]]`.
#[differentiate(forward, reverse)]
pub fn swapped_pairs(a: &mut [[f64; 2]], k: f64) -> f64 {
    a.swap(1, 0);
    a[0][1] * k + a[1][0] * a[0][0]
}

/// D5: `swap` of rows of a local `vec![vec![..]]`, inside a loop.
#[differentiate(forward, reverse)]
pub fn swapped_local(x: &[f64]) -> f64 {
    let mut a = vec![vec![0.0; 2]; 3];
    for i in 0..3 {
        for j in 0..2 {
            a[i][j] = x[2 * i + j];
        }
    }
    for s in 0..2 {
        a.swap(s, s + 1);
        a[0][0] = a[0][0] * a[1][1] + 0.5;
    }
    a[0][0] + a[1][0] * a[2][1]
}

pub fn swapped_rows_of_2d_buffers() {
    // a = [[1, 2], [3, 4], [5, 6]], k = 2: after the swap a = [[5, 6], [3, 4], [1, 2]],
    // f = 6·2 + 1·5 + 4 = 21; ∂f/∂(original rows): a0 = (a2'[0] ← a0[0]: 5, 0),
    // a1 = (0, 1), a2 = (a0'[0] ← a2[0]: 1, k = 2); ∂f/∂k = 6.
    let a0 = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]];
    assert_eq!(swapped_rows(&mut a0.clone(), 2.0), 21.0);
    let mut a = a0.clone();
    let (v, (da, dk)) = swapped_rows_grad(&mut a, 2.0);
    assert_eq!(a, [[5.0, 6.0], [3.0, 4.0], [1.0, 2.0]], "swapped_rows: the rows on exit");
    assert_rel("swapped_rows: value", &[v, dk], &[21.0, 6.0], 1e-15);
    assert_rel("swapped_rows: ∂/∂a", &from_rows(&da), &[5.0, 0.0, 0.0, 1.0, 1.0, 2.0], 1e-15);
    assert_eq!(swapped_pairs(&mut [[1.0, 2.0], [3.0, 4.0]], 2.0), 11.0);
    let mut b = [[1.0, 2.0], [3.0, 4.0]];
    let (v, (db, dk)) = swapped_pairs_grad(&mut b, 2.0);
    assert_rel("swapped_pairs: value", &[v, dk], &[11.0, 4.0], 1e-15);
    assert_rel("swapped_pairs: ∂/∂a", &[db[0][0], db[0][1], db[1][0], db[1][1]], &[3.0, 0.0, 1.0, 2.0], 1e-15);
    let x: Vec<f64> = (0..6).map(|i| 0.4 + 0.15 * i as f64).collect();
    check_grad("swapped_local", &x, &|x| swapped_local(x), &|x| swapped_local_grad(x), TOLS);
    check_fwd_rev(&Case {
        name: "swapped_local",
        x: &x,
        primal: &|x| vec![swapped_local(x)],
        jvp: &|x, d| {
            let (v, t) = swapped_local_fwd(x, d);
            (vec![v], vec![t])
        },
        vjp: &|x, s| {
            let mut g = zeros(6);
            let v = swapped_local_rev(x, &mut g, s[0]);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

pub fn swapping_rows_of_different_lengths_panics() {
    let mut a = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]];
    swapped_rows_grad(&mut a, 2.0);
}

#[differentiate(forward, reverse)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// D6: the same slice passed twice to a differentiated callee (`dot(w, w)`).
#[differentiate(forward, reverse)]
pub fn norm_sq(w: &[f64]) -> f64 {
    dot(w, w)
}

#[differentiate(forward, reverse)]
pub fn axpy_sq(a: f64, x: &[f64], y: &[f64], out: &mut [f64]) {
    for i in 0..x.len() {
        out[i] = a * x[i] + y[i] * y[i];
    }
}

/// D6: a slice passed twice beside an output, in a loop, and a scalar passed twice.
#[differentiate(forward, reverse)]
pub fn repeated_arguments(u: &[f64], out: &mut [f64], a: f64) -> f64 {
    let mut s = 0.0;
    for _ in 0..2 {
        axpy_sq(a, u, u, out);
        s += dot(out, u) + dot(u, out) * a;
    }
    s
}

pub fn a_buffer_passed_twice() {
    let w = [0.5, -1.5, 2.0];
    let (v, g) = norm_sq_grad(&w);
    assert_rel("norm_sq: value", &[v, norm_sq(&w)], &[6.5, 6.5], 1e-15);
    assert_rel("norm_sq: gradient", &g, &[1.0, -3.0, 4.0], 1e-15);
    let n = 3;
    let mut p = w.to_vec();
    p.push(0.7);
    check_grad(
        "repeated_arguments",
        &p,
        &|p| repeated_arguments(&p[..n], &mut zeros(n), p[n]),
        &|p| {
            let (v, (mut du, _, da)) = repeated_arguments_grad(&p[..n], &mut zeros(n), p[n]);
            du.push(da);
            (v, du)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "repeated_arguments",
        x: &p,
        primal: &|p| vec![repeated_arguments(&p[..n], &mut zeros(n), p[n])],
        jvp: &|p, d| {
            let (mut out, mut dout) = (zeros(n), zeros(n));
            let (v, t) = repeated_arguments_fwd(&p[..n], &d[..n], &mut out, &mut dout, p[n], d[n]);
            (vec![v], vec![t])
        },
        vjp: &|p, s| {
            let (mut du, mut out, mut dout) = (zeros(n), zeros(n), zeros(n));
            let (v, da) = repeated_arguments_rev(&p[..n], &mut du, &mut out, &mut dout, p[n], s[0]);
            du.push(da);
            (vec![v], du)
        },
        tols: TOLS,
    });
}

/// A callee whose derivatives have names of its own choosing: its callers call them.
#[differentiate(forward(name = weighted_tangent), reverse(name = weighted_adjoint))]
pub fn weighted(x: &[f64], w: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w * x[i] * x[i].cos();
    }
    s
}

#[differentiate(forward, reverse)]
pub fn calls_a_renamed_callee(x: &[f64], w: f64) -> f64 {
    weighted(x, w).sin() + weighted(x, 2.0 * w)
}

/// `let mut x = x;`, `let y = x;` and `let w = &mut u;`: other names for the buffer.
#[differentiate(forward, reverse)]
pub fn rebound_buffers(x: &[f64], state: &mut Vec<f64>) -> f64 {
    let state = state;
    let y = x;
    let mut u = y.to_vec();
    let w = &mut u;
    for i in 0..w.len() {
        w[i] = w[i] * state[i];
        state[i] = state[i].sin() + y[i];
    }
    let mut u = u;
    u[0] += 1.0;
    u[0] * u[1] + state[2]
}

/// Float predicates as passive conditions.
#[differentiate(forward, reverse)]
pub fn guarded_terms<T: phidiff::Float>(x: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        let v = x[i] * x[i] * x[i];
        if v.is_finite() && x[i].is_sign_positive() && !v.is_nan() {
            s += v;
        } else if x[i].is_sign_negative() && !x[i].is_infinite() {
            s += x[i].sin();
        }
    }
    s
}

/// A generic function bounded by `num_traits::Float` as users import it.
#[differentiate(forward, reverse)]
pub fn softplus_sum<T: Float>(x: &[T], beta: T) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        s = s + (T::one() + (beta * x[i]).exp()).ln() / beta;
    }
    s
}

pub fn names_bindings_predicates_and_bounds() {
    let x = [0.4, -0.9, 1.3];
    let mut p = x.to_vec();
    p.push(0.8);
    check_grad(
        "calls_a_renamed_callee",
        &p,
        &|p| calls_a_renamed_callee(&p[..3], p[3]),
        &|p| {
            let (v, (mut g, gw)) = calls_a_renamed_callee_grad(&p[..3], p[3]);
            g.push(gw);
            (v, g)
        },
        TOLS,
    );
    let mut q = x.to_vec();
    q.extend([0.2, 1.1, -0.6]);
    check_fwd_rev(&Case {
        name: "rebound_buffers",
        x: &q,
        primal: &|q| {
            let mut state = q[3..].to_vec();
            let v = rebound_buffers(&q[..3], &mut state);
            state.push(v);
            state
        },
        jvp: &|q, d| {
            let (mut state, mut ds) = (q[3..].to_vec(), d[3..].to_vec());
            let (v, t) = rebound_buffers_fwd(&q[..3], &d[..3], &mut state, &mut ds);
            state.push(v);
            ds.push(t);
            (state, ds)
        },
        vjp: &|q, w| {
            let (mut dx, mut state, mut ds) = (zeros(3), q[3..].to_vec(), w[..3].to_vec());
            let v = rebound_buffers_rev(&q[..3], &mut dx, &mut state, &mut ds, w[3]);
            state.push(v);
            dx.extend(ds);
            (state, dx)
        },
        tols: TOLS,
    });
    // Every branch: positive, negative, and zeros of either sign.
    let g = guarded_terms_grad(&[0.5, -2.0, -0.0, 0.0]).1;
    assert_rel("guarded_terms: gradient", &g, &[0.75, (-2.0_f64).cos(), 1.0, 0.0], 1e-15);
    check_grad("guarded_terms", &x, &|x| guarded_terms(x), &|x| guarded_terms_grad(x), TOLS);
    check_grad(
        "softplus_sum",
        &p,
        &|p| softplus_sum(&p[..3], p[3]),
        &|p| {
            let (v, (mut g, gb)) = softplus_sum_grad(&p[..3], p[3]);
            g.push(gb);
            (v, g)
        },
        TOLS,
    );
    // Through `Dual<f64>`: the x-part of H·e_k, against differences of the gradient.
    let h = 1e-5;
    for k in 0..3 {
        let dual = |re: f64, eps: f64| phidiff::Dual { re, eps };
        let xd: Vec<_> = x.iter().enumerate().map(|(i, &v)| dual(v, (i == k) as u8 as f64)).collect();
        let mut dx = vec![dual(0.0, 0.0); 3];
        softplus_sum_rev(&xd, &mut dx, dual(0.8, 0.0), dual(1.0, 0.0));
        let at = |t: f64| {
            let mut y = x.to_vec();
            y[k] += t;
            softplus_sum_grad(&y, 0.8).1 .0
        };
        let (gp, gm) = (at(h), at(-h));
        for i in 0..3 {
            let fd = (gp[i] - gm[i]) / (2.0 * h);
            assert_close(&format!("softplus_sum: H[{i}][{k}]"), dx[i].eps, fd, 1e-6, 1e-8);
        }
    }
}

/// The run-time error of `snapshots = 0` names the attribute it came from.
#[differentiate(forward, reverse)]
pub fn damped_steps(x: &[f64], snapshots: usize) -> f64 {
    let mut s = x[0];
    #[checkpoint(revolve(snapshots = snapshots))]
    for _ in 0..5 {
        s = s.sin() + 0.5 * s;
    }
    s
}

pub fn zero_snapshots_names_the_attribute() {
    // With snapshots, the value is the primal's.
    let (v, _) = damped_steps_grad(&[0.3], 2);
    assert_rel("damped_steps: value", &[v], &[damped_steps(&[0.3], 2)], 1e-15);
    damped_steps_grad(&[0.3], 0);
}

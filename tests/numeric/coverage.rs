//! Derivative paths the other modules do not reach: a buffer filled with an active value
//! (`vec![a; n]`), a buffer allocated inside a loop body, `iter_mut`, a method call on an
//! opaque receiver with a hand-written `_fwd`/`_rev` pair, a branch inside a `while` loop,
//! nested loops with a triangular trip count, and 2-D local buffers (copied and filled).

use super::differentiate;
use crate::common::*;

/// `vec![a; n]` with an active fill value: its adjoint is the sum of the shadow.
#[differentiate(forward, reverse)]
pub fn filled(x: &[f64], a: f64) -> f64 {
    let n = x.len();
    let mut w = vec![a; n];
    for i in 0..n {
        w[i] = w[i] * x[i] + a.sin();
    }
    w.iter().map(|v| v * v).sum()
}

/// A scratch buffer allocated in every outer iteration.
#[differentiate(forward, reverse)]
pub fn scratch_per_step(x: &[f64], steps: usize) -> f64 {
    let n = x.len();
    let mut acc = 0.0;
    for s in 0..steps {
        let mut t = vec![0.0; n];
        for i in 0..n {
            t[i] = x[i] * (s as f64 + 1.0) + x[(i + 1) % n];
        }
        for i in 0..n {
            acc += t[i].tanh();
        }
    }
    acc
}

/// `iter_mut` writes through the element binding.
#[differentiate(forward, reverse)]
pub fn scale_in_place(x: &mut [f64], a: f64) -> f64 {
    for v in x.iter_mut() {
        *v = *v * a + 0.5 * *v * *v;
    }
    let mut s = 0.0;
    for v in x.iter() {
        s += *v;
    }
    s
}

/// A type the compiler does not model; its methods have hand-written rules.
pub struct Scaler {
    pub factor: f64,
}

impl Scaler {
    pub fn apply(&self, x: f64) -> f64 {
        self.factor * x * x
    }
    pub fn apply_fwd(&self, x: f64, dx: f64) -> (f64, f64) {
        (self.apply(x), 2.0 * self.factor * x * dx)
    }
    pub fn apply_rev(&self, x: f64, seed: f64) -> (f64, f64) {
        (self.apply(x), 2.0 * self.factor * x * seed)
    }
}

#[differentiate(forward, reverse)]
pub fn through_method(sc: &Scaler, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += sc.apply(x[i]).sin();
    }
    s
}

/// A branch inside a `while` loop whose trip count depends on the data.
#[differentiate(forward, reverse)]
pub fn bounce(a: f64, b: f64) -> f64 {
    let mut x = a;
    let mut k = 0;
    while x.abs() < 50.0 && k < 40 {
        if x > 0.0 {
            x = x * 1.7 + b;
        } else {
            x = x * 1.3 - b * b;
        }
        k += 1;
    }
    x
}

/// Nested loops with a triangular inner trip count.
#[differentiate(forward, reverse)]
pub fn triangle(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut p = 1.0;
        for j in 0..i + 1 {
            p *= (x[j] + 0.1 * x[i]).cos();
        }
        s += p;
    }
    s
}

fn scalar_case(
    name: &str,
    x: &[f64],
    f: &dyn Fn(&[f64]) -> f64,
    grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    fwd: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    rev: &dyn Fn(&[f64], &mut [f64], f64) -> f64,
) {
    check_grad(name, x, f, grad, TOLS);
    check_fwd_rev(&Case {
        name,
        x,
        primal: &|x| vec![f(x)],
        jvp: &|x, v| {
            let (y, t) = fwd(x, v);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = zeros(x.len());
            let y = rev(x, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn filled_buffer_adjoint_sums_the_shadow() {
    let n = 5;
    let x = [0.3, -0.7, 1.1, 0.4, -1.5, 0.8];
    scalar_case(
        "filled",
        &x,
        &|p| filled(&p[..n], p[n]),
        &|p| {
            let (v, (g, ga)) = filled_grad(&p[..n], p[n]);
            (v, cat(&[&g, &[ga]]))
        },
        &|p, d| filled_fwd(&p[..n], &d[..n], p[n], d[n]),
        &|p, g, seed| {
            let (head, tail) = g.split_at_mut(n);
            let (v, ga) = filled_rev(&p[..n], head, p[n], seed);
            tail[0] += ga;
            v
        },
    );
}

pub fn scratch_buffer_allocated_in_a_loop() {
    let x = [0.2, -0.4, 0.9, 0.1];
    scalar_case(
        "scratch_per_step",
        &x,
        &|p| scratch_per_step(p, 3),
        &|p| scratch_per_step_grad(p, 3),
        &|p, d| scratch_per_step_fwd(p, d, 3),
        &|p, g, seed| scratch_per_step_rev(p, g, 3, seed),
    );
}

pub fn iter_mut_updates_in_place() {
    let n = 4;
    let x = [0.3, -0.6, 1.2, 0.5, 1.5];
    // Outputs: the returned sum, then the final x.
    let primal = |p: &[f64]| {
        let mut xs = p[..n].to_vec();
        let s = scale_in_place(&mut xs, p[n]);
        cat(&[&[s], &xs])
    };
    check_fwd_rev(&Case {
        name: "scale_in_place",
        x: &x,
        primal: &primal,
        jvp: &|p, v| {
            let mut xs = p[..n].to_vec();
            let mut dxs = v[..n].to_vec();
            let (s, ds) = scale_in_place_fwd(&mut xs, &mut dxs, p[n], v[n]);
            (cat(&[&[s], &xs]), cat(&[&[ds], &dxs]))
        },
        vjp: &|p, w| {
            let mut xs = p[..n].to_vec();
            // The shadow holds the adjoint of the final x on entry, of the initial x on exit.
            let mut dxs = w[1..].to_vec();
            let (s, ga) = scale_in_place_rev(&mut xs, &mut dxs, p[n], w[0]);
            (cat(&[&[s], &xs]), cat(&[&dxs, &[ga]]))
        },
        tols: TOLS,
    });
}

pub fn method_on_opaque_receiver_uses_its_rules() {
    let sc = Scaler { factor: 0.7 };
    let x = [0.5, -1.0, 1.5];
    scalar_case(
        "through_method",
        &x,
        &|p| through_method(&sc, p),
        &|p| through_method_grad(&sc, p),
        &|p, d| through_method_fwd(&sc, p, d),
        &|p, g, seed| through_method_rev(&sc, p, g, seed),
    );
}

pub fn branch_inside_data_dependent_while() {
    let x = [0.8, 0.3];
    scalar_case(
        "bounce",
        &x,
        &|p| bounce(p[0], p[1]),
        &|p| {
            let (v, (ga, gb)) = bounce_grad(p[0], p[1]);
            (v, vec![ga, gb])
        },
        &|p, d| bounce_fwd(p[0], d[0], p[1], d[1]),
        &|p, g, seed| {
            let (v, ga, gb) = bounce_rev(p[0], p[1], seed);
            g[0] += ga;
            g[1] += gb;
            v
        },
    );
}

pub fn triangular_nested_loops() {
    let x = [0.3, -0.2, 0.7, 1.1, -0.5];
    scalar_case(
        "triangle",
        &x,
        &|p| triangle(p),
        &|p| triangle_grad(p),
        &|p, d| triangle_fwd(p, d),
        &|p, g, seed| triangle_rev(p, g, seed),
    );
}

/// 2-D local buffers: a copy of a 2-D parameter (adjoint added back row by row) and a
/// 2-D buffer filled with an active value (adjoint summed over all elements).
#[differentiate(forward, reverse)]
pub fn grid(a: &[Vec<f64>], s: f64) -> f64 {
    let mut b = a.to_vec();
    let mut c = vec![vec![s; 3]; 2];
    for i in 0..2 {
        for j in 0..3 {
            b[i][j] = b[i][j] * c[i][j] + s;
            c[i][j] = c[i][j].sin() * b[i][j];
        }
    }
    let mut t = 0.0;
    for i in 0..2 {
        for j in 0..3 {
            t += b[i][j] * c[i][j];
        }
    }
    t
}

pub fn two_dimensional_local_buffers() {
    let x = [0.3, -0.5, 0.9, 1.2, -0.1, 0.4, 0.7];
    let rows = |p: &[f64]| vec![p[0..3].to_vec(), p[3..6].to_vec()];
    scalar_case(
        "grid",
        &x,
        &|p| grid(&rows(p), p[6]),
        &|p| {
            let (v, (ga, gs)) = grid_grad(&rows(p), p[6]);
            (v, cat(&[&ga[0], &ga[1], &[gs]]))
        },
        &|p, d| grid_fwd(&rows(p), &rows(d), p[6], d[6]),
        &|p, g, seed| {
            let mut ga = vec![vec![0.0; 3]; 2];
            let (v, gs) = grid_rev(&rows(p), &mut ga, p[6], seed);
            for (k, gk) in ga.concat().iter().enumerate() {
                g[k] += gk;
            }
            g[6] += gs;
            v
        },
    );
}

//! Issue 47, several results taken apart by the caller: `let (m, v) = stats(x);`, a tuple
//! bound whole (`let t = stats(..); t.0`), a generic callee, a struct result
//! (`let a = stepped(s, dt);`, passed on to the next call), a method returning `Self`, and
//! tuple results inside a Revolve-checkpointed loop.
//!
//! Each is checked by finite differences and the dot-product test (`TOLS`); the generic one
//! also against num-dual and its `Dual` H·v against hyper-dual numbers (`check_generic`).

use super::differentiate;
use crate::common::*;
use num_traits::Float;
use phidiff::Differentiable;

/// Mean and variance.
#[differentiate(forward, reverse)]
pub fn stats(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / n;
    (m, v)
}

/// The results of `stats` taken apart by a pattern, and bound whole (`t.0`, `t.1`).
#[differentiate(forward, reverse)]
pub fn zscore(x: &[f64], y: f64) -> f64 {
    let (m, v) = stats(x);
    let t = stats(&x[1..]);
    (y - m) / v.sqrt() + t.0 * t.1
}

pub fn tuple_results_taken_apart() {
    let x = [0.3, 1.2, -0.4, 2.0, 0.7];
    check_grad(
        "zscore",
        &x,
        &|x| zscore(&x[..4], x[4]),
        &|x| {
            let (v, (dx, dy)) = zscore_grad(&x[..4], x[4]);
            let mut g = dx;
            g.push(dy);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "zscore",
        x: &x,
        primal: &|x| vec![zscore(&x[..4], x[4])],
        jvp: &|x, d| {
            let (v, t) = zscore_fwd(&x[..4], &d[..4], x[4], d[4]);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let mut dx = vec![0.0; 4];
            let (v, dy) = zscore_rev(&x[..4], &mut dx, x[4], w[0]);
            dx.push(dy);
            (vec![v], dx)
        },
        tols: TOLS,
    });
}

#[differentiate(forward, reverse)]
pub fn moments<T: Float>(x: &[T]) -> (T, T) {
    (x[0] * x[1], x[0] + x[1].sin())
}

/// A generic caller of a generic callee with two results.
#[differentiate(forward, reverse)]
pub fn moment_product<T: Float>(x: &[T]) -> T {
    let (a, b) = moments(x);
    a * b + moments(&x[1..]).0.cos()
}

pub fn generic_results_taken_apart() {
    let x = [0.3, 1.2, -0.7];
    check_generic(&Generic {
        name: "moment_product",
        x: &x,
        f: &|x| moment_product(x),
        f_dual: &|x| moment_product(x),
        f_hyper: &|x| moment_product(x),
        grad: &|x| moment_product_grad(x),
        fwd: &|x, d| moment_product_fwd(x, d),
        rev: &|x, seed| {
            let mut dx = vec![0.0; x.len()];
            let v = moment_product_rev(x, &mut dx, seed);
            (v, dx)
        },
        hvp: &|x, v| {
            let xd: Vec<phidiff::Dual<f64>> = x
                .iter()
                .zip(v)
                .map(|(&a, &b)| phidiff::Dual { re: a, eps: b })
                .collect();
            let mut dx = vec![phidiff::Dual::constant(0.0); x.len()];
            moment_product_rev(&xd, &mut dx, phidiff::Dual::constant(1.0));
            dx.iter().map(|d| d.eps).collect()
        },
    });
}

/// A state returned by value, with an array field.
#[derive(phidiff::Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub pos: [f64; 2],
    pub energy: f64,
}

#[differentiate(forward, reverse)]
pub fn stepped(s: &Phase, dt: f64) -> Phase {
    Phase {
        pos: [s.pos[0] + dt * s.pos[1], s.pos[1] - dt * s.pos[0].sin()],
        energy: s.energy * (1.0 - dt) + s.pos[0] * s.pos[1],
    }
}

/// A struct result taken apart (its fields read), twice.
#[differentiate(forward, reverse)]
pub fn two_steps(s: &Phase, dt: f64) -> f64 {
    let a = stepped(s, dt);
    let e = stepped(s, 2.0 * dt).energy;
    a.pos[0] * a.pos[1] + a.energy * e
}

/// A pendulum's state (floats only).
#[derive(phidiff::Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Swing {
    pub angle: f64,
    pub speed: f64,
}

#[differentiate]
impl Swing {
    #[differentiate(forward, reverse)]
    pub fn advanced(&self, dt: f64) -> Self {
        Swing {
            angle: self.angle + dt * self.speed,
            speed: self.speed - dt * self.angle.sin(),
        }
    }

    /// A method taking apart another method's `Self` result and calling it on the result.
    #[differentiate(forward, reverse)]
    pub fn advanced_twice(&self, dt: f64) -> f64 {
        let a = self.advanced(dt);
        let b = a.advanced(dt);
        b.angle * b.speed + a.angle
    }
}

/// A struct result passed on to the next call.
#[differentiate(forward, reverse)]
pub fn three_swings(s: &Swing, dt: f64) -> f64 {
    let a = s.advanced(dt);
    let b = a.advanced(dt);
    let c = b.advanced(dt);
    c.angle + c.speed * b.speed
}

fn phase_from(x: &[f64]) -> Phase {
    Phase {
        pos: [x[0], x[1]],
        energy: x[2],
    }
}

fn phase_flat(p: &Phase) -> Vec<f64> {
    vec![p.pos[0], p.pos[1], p.energy]
}

fn swing_from(x: &[f64]) -> Swing {
    Swing {
        angle: x[0],
        speed: x[1],
    }
}

fn swing_flat(s: &Swing) -> Vec<f64> {
    vec![s.angle, s.speed]
}

/// FD and dot product of `value(s, dt)` over the flat state `x` (the state, then `dt`).
#[allow(clippy::type_complexity)]
fn check_state_fn<S: Differentiable>(
    name: &str,
    x: &[f64],
    from: fn(&[f64]) -> S,
    flat: fn(&S) -> Vec<f64>,
    value: &dyn Fn(&S, f64) -> f64,
    fwd: &dyn Fn(&S, &S, f64, f64) -> (f64, f64),
    rev: &dyn Fn(&S, &mut S, f64, f64) -> (f64, f64),
) {
    let n = x.len() - 1;
    check_fwd_rev(&Case {
        name,
        x,
        primal: &|x| vec![value(&from(x), x[n])],
        jvp: &|x, d| {
            let (v, t) = fwd(&from(x), &from(d), x[n], d[n]);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let s = from(x);
            let mut ds = s.zero_like();
            let (v, ddt) = rev(&s, &mut ds, x[n], w[0]);
            let mut g = flat(&ds);
            g.push(ddt);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

pub fn struct_results_taken_apart() {
    check_state_fn(
        "two_steps",
        &[0.4, -0.2, 1.5, 0.1],
        phase_from,
        phase_flat,
        &two_steps,
        &two_steps_fwd,
        &two_steps_rev,
    );
    let x = [0.7, -0.3, 0.2];
    check_state_fn(
        "Swing::advanced_twice",
        &x,
        swing_from,
        swing_flat,
        &|s, dt| s.advanced_twice(dt),
        &|s, ds, dt, ddt| s.advanced_twice_fwd(ds, dt, ddt),
        &|s, ds, dt, seed| s.advanced_twice_rev(ds, dt, seed),
    );
    check_state_fn(
        "three_swings",
        &x,
        swing_from,
        swing_flat,
        &three_swings,
        &three_swings_fwd,
        &three_swings_rev,
    );
}

/// A rotation by `a`, scaled.
#[differentiate(forward, reverse)]
pub fn rotate(x: f64, y: f64, a: f64) -> (f64, f64) {
    (x * a.cos() - y * a.sin(), x * a.sin() + y * a.cos())
}

/// A tuple result taken apart in each step of a checkpointed loop.
#[differentiate(forward, reverse)]
pub fn spiral(p: &[f64], a: f64, steps: usize) -> f64 {
    let mut x = p[0];
    let mut y = p[1];
    #[checkpoint(revolve(snapshots = 3))]
    for k in 0..steps {
        let (nx, ny) = rotate(x, y, a);
        x = 0.99 * nx + 0.01 * (k as f64);
        y = 0.99 * ny;
    }
    x * y
}

pub fn results_in_loops() {
    let (a, steps) = (0.3, 17);
    let p = [0.8, -0.5, a];
    check_fwd_rev(&Case {
        name: "spiral",
        x: &p,
        primal: &|x| vec![spiral(&x[..2], x[2], steps)],
        jvp: &|x, d| {
            let (v, t) = spiral_fwd(&x[..2], &d[..2], x[2], d[2], steps);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let mut dp = vec![0.0; 2];
            let (v, da) = spiral_rev(&x[..2], &mut dp, x[2], steps, w[0]);
            dp.push(da);
            (vec![v], dp)
        },
        tols: TOLS,
    });
}

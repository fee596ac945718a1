//! Issue 48, helpers on small `Copy` structs as geometry and simulation code writes them:
//! structs passed and returned **by value** (`fn sub(a: V3<T>, b: V3<T>) -> V3<T>`),
//! constructors (`V3::new`, `Self { .. }`), methods taking `self` by value and `mut self`
//! (`fn scaled(mut self, k: T) -> Self`), a method on a call's result
//! (`sub(c, a).scaled(h)`) and a field of one (`cross(&v, &u).z`), copies (`let last = s;`, `let a = beads[i - 1];`) and whole
//! assignments (`s = leapfrog(s, k, dt);`, `*out = Summary { .. };`), in a plain loop, in
//! a Revolve-checkpointed one, in the branches of an `if` in a `while` loop and in a rayon
//! closure; `let`s shadowing the struct they read. And helpers taking numbers behind
//! shared references (`fn huber<T: Float>(r: &T, delta: &T)`), called with elements, loop
//! elements and borrows of locals. None of the helpers carries an attribute.
//!
//! Checked by finite differences and the dot-product test (`TOLS`); the generic mesh
//! energy also against num-dual (rel 1e-12 of the gradient) and its `_rev::<Dual<f64>>`
//! H·v against hyper-dual numbers (rel 1e-10), `check_generic`.

use super::differentiate;
use crate::common::*;
use num_traits::Float;
use phidiff::Differentiable;
use rayon::prelude::*;

#[derive(Clone, Copy, Debug, Differentiable)]
pub struct V3<T> {
    pub x: T,
    pub y: T,
    pub z: T,
}

impl<T: Float> V3<T> {
    fn new(x: T, y: T, z: T) -> Self {
        V3 { x, y, z }
    }

    /// Point `k` of a flat coordinate array.
    fn at(p: &[T], k: usize) -> Self {
        Self::new(p[3 * k], p[3 * k + 1], p[3 * k + 2])
    }

    fn dot(self, o: Self) -> T {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    fn norm(&self) -> T {
        self.dot(*self).sqrt()
    }

    fn scaled(mut self, k: T) -> Self {
        self.x = self.x * k;
        self.y = self.y * k;
        self.z = self.z * k;
        self
    }
}

fn sub<T: Float>(a: V3<T>, b: V3<T>) -> V3<T> {
    V3::new(a.x - b.x, a.y - b.y, a.z - b.z)
}

fn cross<T: Float>(a: &V3<T>, b: &V3<T>) -> V3<T> {
    let c = V3 {
        x: a.y * b.z - a.z * b.y,
        y: a.z * b.x - a.x * b.z,
        z: a.x * b.y - a.y * b.x,
    };
    c
}

/// Areas of a triangle mesh plus a shear term: every value form above, generic.
#[differentiate(forward, reverse)]
pub fn mesh_energy<T: Float>(p: &[T], tris: &[usize]) -> T {
    let half = T::from(0.5).unwrap();
    let mut e = T::zero();
    for t in 0..tris.len() / 3 {
        let a = V3::at(p, tris[3 * t]);
        let b = V3::at(p, tris[3 * t + 1]);
        let c = V3 {
            x: p[3 * tris[3 * t + 2]],
            y: p[3 * tris[3 * t + 2] + 1],
            z: p[3 * tris[3 * t + 2] + 2],
        };
        let u = sub(b, a);
        let v = sub(c, a).scaled(half);
        let n = cross(&u, &v);
        e = e + n.norm() + u.dot(v) * T::from(0.1).unwrap() + cross(&v, &u).z * half;
    }
    e
}

/// The same energy written out with arrays, as the reference a user would compare with.
fn mesh_energy_by_hand(p: &[f64], tris: &[usize]) -> f64 {
    let mut e = 0.0;
    for t in tris.chunks(3) {
        let pt = |k: usize| [p[3 * k], p[3 * k + 1], p[3 * k + 2]];
        let (a, b, c) = (pt(t[0]), pt(t[1]), pt(t[2]));
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [
            0.5 * (c[0] - a[0]),
            0.5 * (c[1] - a[1]),
            0.5 * (c[2] - a[2]),
        ];
        let n = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        e += (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt()
            + 0.1 * (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
            - 0.5 * n[2];
    }
    e
}

pub fn vectors_by_value() {
    // Five points, three triangles sharing edges.
    let p = [
        0.1, 0.2, 0.3, 1.0, 0.5, -0.2, 0.3, 1.4, 0.9, -0.6, 0.8, 0.2, 0.9, -0.4, 0.5,
    ];
    let tris = [0, 1, 2, 0, 2, 3, 1, 4, 2];
    assert_close(
        "mesh_energy against the written-out energy",
        mesh_energy(&p, &tris),
        mesh_energy_by_hand(&p, &tris),
        1e-13,
        1e-14,
    );
    check_generic(&Generic {
        name: "mesh_energy",
        x: &p,
        f: &|x| mesh_energy(x, &tris),
        f_dual: &|x| mesh_energy(x, &tris),
        f_hyper: &|x| mesh_energy(x, &tris),
        grad: &|x| mesh_energy_grad(x, &tris),
        fwd: &|x, d| mesh_energy_fwd(x, d, &tris),
        rev: &|x, seed| {
            let mut dx = zeros(x.len());
            let v = mesh_energy_rev(x, &mut dx, &tris, seed);
            (v, dx)
        },
        hvp: &|x, v| hvp_of(&|x, dx, s| mesh_energy_rev(x, dx, &tris, s), x, v),
    });
}

#[derive(Clone, Copy, Debug, Differentiable)]
pub struct Pendulum {
    pub q: f64,
    pub p: f64,
    /// The last two squared momenta.
    pub trail: [f64; 2],
}

#[derive(Clone, Copy, Debug, Differentiable)]
pub struct Summary {
    pub energy: f64,
    pub action: f64,
}

fn torque(s: &Pendulum, k: f64) -> f64 {
    -k * s.q.sin()
}

/// One symplectic Euler step, returning the new state.
fn leapfrog(s: Pendulum, k: f64, dt: f64) -> Pendulum {
    let p = s.p + dt * torque(&s, k);
    Pendulum {
        q: s.q + dt * p,
        p,
        trail: [s.trail[1], p * p],
    }
}

/// A state updated by value in a checkpointed loop (`s = leapfrog(s, ..)`, a copy of
/// the state before the step), a copy after it, and a whole struct written to `out`.
#[differentiate(forward, reverse)]
pub fn swing(x: &[f64], k: f64, steps: usize, out: &mut Summary) -> f64 {
    let mut s = Pendulum {
        q: x[0],
        p: x[1],
        trail: [0.0, 0.0],
    };
    let mut action = 0.0;
    #[checkpoint(revolve(snapshots = 3))]
    for _ in 0..steps {
        let before = s;
        s = leapfrog(s, k, 0.1);
        action += before.p * (s.q - before.q);
    }
    let last = s;
    *out = Summary {
        energy: 0.5 * last.p * last.p - k * last.q.cos(),
        action,
    };
    s.trail[0] + s.trail[1]
}

/// `swing` written out (the primal the derivatives are compared with by FD).
fn swing_by_hand(x: &[f64], k: f64, steps: usize) -> [f64; 3] {
    let (mut q, mut p, mut trail) = (x[0], x[1], [0.0, 0.0]);
    let mut action = 0.0;
    for _ in 0..steps {
        let (q0, p0) = (q, p);
        p += 0.1 * (-k * q.sin());
        q += 0.1 * p;
        trail = [trail[1], p * p];
        action += p0 * (q - q0);
    }
    [trail[0] + trail[1], 0.5 * p * p - k * q.cos(), action]
}

#[derive(Clone, Copy, Debug, Differentiable)]
pub struct Bead {
    pub pos: [f64; 2],
    pub m: f64,
}

fn heavier(mut b: Bead, f: f64) -> Bead {
    b.m *= f;
    b
}

fn spring(a: Bead, b: Bead) -> f64 {
    let dx = a.pos[0] - b.pos[0];
    let dy = a.pos[1] - b.pos[1];
    a.m * b.m * (dx * dx + dy * dy)
}

/// Copies of a slice's elements changed locally (the slice keeps its values), passed by
/// value to helpers.
#[differentiate(forward, reverse)]
pub fn chain_energy(beads: &[Bead], f: f64) -> f64 {
    let mut e = 0.0;
    for i in 1..beads.len() {
        let a = beads[i - 1];
        let mut b = beads[i];
        b = heavier(b, f);
        e += spring(a, b);
    }
    let first = beads[0];
    e + first.m * f + beads[1].m
}

fn beads_of(x: &[f64]) -> Vec<Bead> {
    x.chunks(3)
        .map(|c| Bead {
            pos: [c[0], c[1]],
            m: c[2],
        })
        .collect()
}

fn flat_beads(b: &[Bead]) -> Vec<f64> {
    b.iter().flat_map(|b| [b.pos[0], b.pos[1], b.m]).collect()
}

pub fn states_by_value() {
    let x = [0.3, 0.1, 1.3];
    let steps = 9;
    let summary = |s: &Summary| vec![s.energy, s.action];
    let zero = Summary {
        energy: 0.0,
        action: 0.0,
    };
    let mut out = zero;
    let y = swing(&x[..2], x[2], steps, &mut out);
    let by_hand = swing_by_hand(&x[..2], x[2], steps);
    assert_close("swing", y, by_hand[0], 1e-13, 1e-14);
    assert_close("swing energy", out.energy, by_hand[1], 1e-13, 1e-14);
    assert_close("swing action", out.action, by_hand[2], 1e-13, 1e-14);
    check_fwd_rev(&Case {
        name: "swing",
        x: &x,
        primal: &|x| {
            let mut out = zero;
            let y = swing(&x[..2], x[2], steps, &mut out);
            cat(&[&[y], &summary(&out)])
        },
        jvp: &|x, d| {
            let (mut out, mut dout) = (zero, zero);
            let (y, dy) = swing_fwd(&x[..2], &d[..2], x[2], d[2], steps, &mut out, &mut dout);
            (
                cat(&[&[y], &summary(&out)]),
                cat(&[&[dy], &summary(&dout)]),
            )
        },
        vjp: &|x, w| {
            let mut out = zero;
            let mut dout = Summary {
                energy: w[1],
                action: w[2],
            };
            let mut dx = zeros(2);
            let (y, dk) = swing_rev(&x[..2], &mut dx, x[2], steps, &mut out, &mut dout, w[0]);
            (cat(&[&[y], &summary(&out)]), cat(&[&dx, &[dk]]))
        },
        tols: TOLS,
    });

    // Four beads and the factor.
    let x = [
        0.2, 0.1, 1.1, 0.9, -0.3, 0.8, 1.4, 0.5, 1.3, 2.0, 0.2, 0.6, 1.7,
    ];
    let n = x.len() - 1;
    check_fwd_rev(&Case {
        name: "chain_energy",
        x: &x,
        primal: &|x| vec![chain_energy(&beads_of(&x[..n]), x[n])],
        jvp: &|x, d| {
            let (y, dy) = chain_energy_fwd(&beads_of(&x[..n]), &beads_of(&d[..n]), x[n], d[n]);
            (vec![y], vec![dy])
        },
        vjp: &|x, w| {
            let beads = beads_of(&x[..n]);
            let mut db = beads_of(&zeros(n));
            let (y, df) = chain_energy_rev(&beads, &mut db, x[n], w[0]);
            (vec![y], cat(&[&flat_beads(&db), &[df]]))
        },
        tols: TOLS,
    });
}

#[derive(Clone, Copy, Debug, Differentiable)]
pub struct Phase {
    pub q: f64,
    pub p: f64,
}

impl Phase {
    /// Point `i` of interleaved `q, p` pairs.
    fn at(x: &[f64], i: usize) -> Self {
        Phase {
            q: x[2 * i],
            p: x[2 * i + 1],
        }
    }

    fn energy(self) -> f64 {
        0.5 * self.p * self.p + (1.0 - self.q.cos())
    }

    fn kicked(mut self, f: f64) -> Self {
        self.p += f * self.q.sin();
        self
    }
}

fn drift(s: Phase, dt: f64) -> Phase {
    Phase {
        q: s.q + dt * s.p,
        ..s
    }
}

/// Struct values in a rayon closure (a method on a constructor's result, reading
/// interleaved pairs `x[2i]`, `x[2i + 1]`), whole assignments in the branches of an `if`
/// in a `while` loop, a copy kept while the original changes, `let`s shadowing the struct
/// they read, and a literal reading the fields it replaces (`Phase { q: s.p, p: s.q }`).
#[differentiate(forward, reverse)]
pub fn phase_walk(x: &[f64], out: &mut [f64], k: f64) -> f64 {
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let v = Phase::at(x, i).kicked(k);
        *o = v.energy();
    });
    let mut s = Phase::at(x, 0);
    let mut n = 0;
    while n < 4 {
        if s.q > 0.5 {
            s = drift(s, 0.1);
        } else {
            s = s.kicked(k);
        }
        n += 1;
    }
    let before = s;
    s.q += 1.0;
    let s = drift(s, 0.2);
    let s = Phase { q: s.p, p: s.q };
    before.q * s.q + s.energy()
}

/// `phase_walk` written out.
fn phase_walk_by_hand(x: &[f64], k: f64) -> Vec<f64> {
    let energy = |q: f64, p: f64| 0.5 * p * p + (1.0 - q.cos());
    let mut out: Vec<f64> = (0..x.len() / 2)
        .map(|i| {
            let (q, p) = (x[2 * i], x[2 * i + 1]);
            energy(q, p + k * q.sin())
        })
        .collect();
    let (mut q, mut p) = (x[0], x[1]);
    for _ in 0..4 {
        if q > 0.5 {
            q += 0.1 * p;
        } else {
            p += k * q.sin();
        }
    }
    let q_before = q;
    q += 1.0;
    q += 0.2 * p;
    let (q, p) = (p, q);
    out.insert(0, q_before * q + energy(q, p));
    out
}

pub fn values_in_branches_and_rayon() {
    // Three (q, p) pairs and k; the first pair takes both branches of the `if`.
    let x = [0.3, 0.9, 0.9, -0.4, 0.1, 0.5, 0.7];
    let m = 3;
    let n = 2 * m;
    let run = |x: &[f64]| {
        let mut out = zeros(m);
        let y = phase_walk(&x[..n], &mut out, x[n]);
        cat(&[&[y], &out])
    };
    assert_all_close("phase_walk", &run(&x), &phase_walk_by_hand(&x[..n], x[n]), 1e-13, 1e-14);
    check_fwd_rev(&Case {
        name: "phase_walk",
        x: &x,
        primal: &run,
        jvp: &|x, d| {
            let (mut out, mut dout) = (zeros(m), zeros(m));
            let (y, dy) = phase_walk_fwd(&x[..n], &d[..n], &mut out, &mut dout, x[n], d[n]);
            (cat(&[&[y], &out]), cat(&[&[dy], &dout]))
        },
        vjp: &|x, w| {
            let mut out = zeros(m);
            let mut dout = w[1..].to_vec();
            let mut dx = zeros(n);
            let (y, dk) = phase_walk_rev(&x[..n], &mut dx, &mut out, &mut dout, x[n], w[0]);
            (cat(&[&[y], &out]), cat(&[&dx, &[dk]]))
        },
        tols: TOLS,
    });
}

/// Huber's loss of a residual, both behind shared references (`&T`), as a helper of a
/// robust regression writes it.
fn huber<T: Float>(r: &T, delta: &T) -> T {
    let a = r.abs();
    let half = T::from(0.5).unwrap();
    if a <= *delta {
        half * *r * *r
    } else {
        *delta * (a - half * *delta)
    }
}

fn weighted(v: &f64, w: f64) -> f64 {
    v * w + v.sin()
}

/// A helper taking `&T` called with loop elements (`for r in x.iter()`), `&x[0]` and
/// `&delta`.
#[differentiate(forward, reverse)]
pub fn robust_loss<T: Float>(x: &[T], delta: T) -> T {
    let mut s = T::zero();
    for r in x.iter() {
        s = s + huber(r, &delta);
    }
    s + huber(&x[0], &delta)
}

/// A helper taking `&f64` with an element, a local's borrow and in an iterator chain; a
/// borrow of a local read through (`*r * r.cos()`).
#[differentiate(forward, reverse)]
pub fn weighted_sum(x: &[f64]) -> f64 {
    let t = x[1] * 2.0;
    let r = &t;
    weighted(&x[0], 3.0)
        + weighted(&t, x[2])
        + x.iter().map(|v| weighted(v, 0.5)).sum::<f64>()
        + *r * r.cos()
}

pub fn scalar_references_to_helpers() {
    // Residuals on both sides of δ = 1 (away from the kinks at ±1), and δ.
    let x = [0.3, -2.0, 1.5, -0.4, 1.0];
    let n = x.len() - 1;
    check_generic(&Generic {
        name: "robust_loss",
        x: &x,
        f: &|x| robust_loss(&x[..n], x[n]),
        f_dual: &|x| robust_loss(&x[..n], x[n]),
        f_hyper: &|x| robust_loss(&x[..n], x[n]),
        grad: &|x| {
            let (v, (mut g, gd)) = robust_loss_grad(&x[..n], x[n]);
            g.push(gd);
            (v, g)
        },
        fwd: &|x, d| robust_loss_fwd(&x[..n], &d[..n], x[n], d[n]),
        rev: &|x, seed| {
            let mut dx = zeros(n);
            let (v, dd) = robust_loss_rev(&x[..n], &mut dx, x[n], seed);
            dx.push(dd);
            (v, dx)
        },
        hvp: &|x, v| {
            let xd: Vec<phidiff::Dual<f64>> = x
                .iter()
                .zip(v)
                .map(|(&re, &eps)| phidiff::Dual { re, eps })
                .collect();
            let mut dx = vec![phidiff::Dual { re: 0.0, eps: 0.0 }; n];
            let (_, dd) = robust_loss_rev(&xd[..n], &mut dx, xd[n], phidiff::Dual::constant(1.0));
            dx.iter().chain([&dd]).map(|d| d.eps).collect()
        },
    });
    let x = [0.3, -2.0, 1.5];
    check_fwd_rev(&Case {
        name: "weighted_sum",
        x: &x,
        primal: &|x| vec![weighted_sum(x)],
        jvp: &|x, d| {
            let (y, dy) = weighted_sum_fwd(x, d);
            (vec![y], vec![dy])
        },
        vjp: &|x, w| {
            let mut dx = zeros(x.len());
            let y = weighted_sum_rev(x, &mut dx, w[0]);
            (vec![y], dx)
        },
        tols: TOLS,
    });
}

/// Adds a weighted square into an accumulator behind `&mut`, as a reduction helper does.
fn accumulate<T: Float>(acc: &mut T, v: T, w: T) {
    *acc = *acc + w * v * v;
}

/// Adds the square of a positive part; the body ends in an `if` (no value).
fn add_positive<T: Float>(acc: &mut T, v: T) {
    if v > T::zero() {
        *acc = *acc + v * v;
    }
}

/// One explicit Euler step of `v' = -k sin v` in place (a method of `v` read through it),
/// returning the old value; one accumulator is passed on to a `&mut f64` helper by name,
/// and `v` to a `&f64` one.
fn euler_step(v: &mut f64, k: f64, dt: f64, energy: &mut f64, kinetic: &mut f64) -> f64 {
    let old = *v;
    *v -= dt * k * v.sin();
    accumulate(energy, *v, 0.5);
    *kinetic += half_square(v);
    old
}

fn half_square(v: &f64) -> f64 {
    0.5 * v * v
}

#[derive(Clone, Copy, Debug, Differentiable)]
pub struct Tally {
    pub e: f64,
    pub n: f64,
    pub kin: f64,
}

/// `&mut f64` helpers on a local, an element of an output, a struct field, the caller's own
/// `&mut f64` output passed on by name, and in a `while` loop; generic.
#[differentiate(forward, reverse)]
pub fn weighted_squares<T: Float>(x: &[T], w: T, total: &mut T) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        accumulate(&mut s, x[i], w);
    }
    let mut k = 0;
    let mut t = T::zero();
    while k + 1 < x.len() {
        add_positive(&mut t, x[k] - x[k + 1]);
        k += 1;
    }
    *total = T::zero();
    accumulate(total, s, w);
    accumulate(total, t, T::one());
    s * t
}

/// Euler steps of each element in place, a struct field accumulating, and output slice
/// elements written through `&mut y[i]` and `&mut y[v.len() - 1 - i]`.
#[differentiate(forward, reverse)]
pub fn pendulum_walk(v: &mut [f64], y: &mut [f64], k: f64) -> f64 {
    let mut tally = Tally {
        e: 0.0,
        n: 0.0,
        kin: 0.0,
    };
    let mut last = 0.0;
    for _ in 0..3 {
        for i in 0..v.len() {
            last += euler_step(&mut v[i], k, 0.1, &mut tally.e, &mut tally.kin);
            y[i] = 0.0;
            accumulate(&mut y[i], v[i], k);
        }
        tally.n += 1.0;
    }
    // An element whose index calls something: read once, into the copy and back.
    for i in 0..v.len() {
        accumulate(&mut y[v.len() - 1 - i], v[i], 0.5);
    }
    (tally.e + tally.kin) * last / tally.n
}

fn pendulum_walk_by_hand(v: &[f64], k: f64) -> (f64, Vec<f64>, Vec<f64>) {
    let mut v = v.to_vec();
    let mut y = vec![0.0; v.len()];
    let (mut e, mut last) = (0.0, 0.0);
    for _ in 0..3 {
        for i in 0..v.len() {
            let old = v[i];
            v[i] -= 0.1 * k * old.sin();
            e += 0.5 * v[i] * v[i];
            last += old;
            y[i] = k * v[i] * v[i];
        }
    }
    let m = v.len();
    for i in 0..m {
        y[m - 1 - i] += 0.5 * v[i] * v[i];
    }
    (2.0 * e * last / 3.0, v, y)
}

/// The value plus 0.7 times the `&mut` output, at any float type (num-dual's too).
fn weighted_squares_and_total<T: Float>(x: &[T]) -> T {
    let n = x.len() - 1;
    let mut total = T::zero();
    let v = weighted_squares(&x[..n], x[n], &mut total);
    v + total * T::from(0.7).unwrap()
}

pub fn mutable_scalar_references_to_helpers() {
    let x = [0.3, -2.0, 1.5, -0.4, 0.8];
    let n = x.len() - 1;
    // The value and the `&mut` output, by hand.
    let (s, t): (f64, f64) = (
        x[..n].iter().map(|v| x[n] * v * v).sum(),
        x[..n].windows(2).map(|p| (p[0] - p[1]).max(0.0).powi(2)).sum(),
    );
    let mut total = 0.0;
    assert_close("weighted_squares", weighted_squares(&x[..n], x[n], &mut total), s * t, 1e-14, 1e-15);
    assert_close("weighted_squares total", total, x[n] * s * s + t * t, 1e-14, 1e-15);
    // The value, and (a weight on) the output through `&mut total`'s shadow.
    let both = |x: &[f64]| {
        let mut total = 0.0;
        let v = weighted_squares(&x[..n], x[n], &mut total);
        v + 0.7 * total
    };
    check_generic(&Generic {
        name: "weighted_squares",
        x: &x,
        f: &both,
        f_dual: &|x| weighted_squares_and_total(x),
        f_hyper: &|x| weighted_squares_and_total(x),
        grad: &|x| {
            let mut dx = zeros(n);
            let (mut total, mut dtotal) = (0.0, 0.7);
            let (v, dw) = weighted_squares_rev(&x[..n], &mut dx, x[n], &mut total, &mut dtotal, 1.0);
            dx.push(dw);
            (v + 0.7 * total, dx)
        },
        fwd: &|x, d| {
            let (mut total, mut dtotal) = (0.0, 0.0);
            let (v, dv) =
                weighted_squares_fwd(&x[..n], &d[..n], x[n], d[n], &mut total, &mut dtotal);
            (v + 0.7 * total, dv + 0.7 * dtotal)
        },
        rev: &|x, seed| {
            let mut dx = zeros(n);
            let (mut total, mut dtotal) = (0.0, 0.7 * seed);
            let (v, dw) =
                weighted_squares_rev(&x[..n], &mut dx, x[n], &mut total, &mut dtotal, seed);
            dx.push(dw);
            (v + 0.7 * total, dx)
        },
        hvp: &|x, v| {
            type D = phidiff::Dual<f64>;
            let xd: Vec<D> = x.iter().zip(v).map(|(&re, &eps)| D { re, eps }).collect();
            let mut dx = vec![D::constant(0.0); n];
            let (mut total, mut dtotal) = (D::constant(0.0), D::constant(0.7));
            let (_, dw) = weighted_squares_rev(
                &xd[..n],
                &mut dx,
                xd[n],
                &mut total,
                &mut dtotal,
                D::constant(1.0),
            );
            dx.iter().chain([&dw]).map(|d| d.eps).collect()
        },
    });

    // Inputs v (4) and k; outputs the value, v after the steps, y.
    let x = [0.4, -1.1, 0.9, 2.0, 0.6];
    let m = x.len() - 1;
    let run = |x: &[f64]| {
        let mut v = x[..m].to_vec();
        let mut y = zeros(m);
        let r = pendulum_walk(&mut v, &mut y, x[m]);
        cat(&[&[r], &v, &y])
    };
    let (r, v, y) = pendulum_walk_by_hand(&x[..m], x[m]);
    assert_all_close("pendulum_walk", &run(&x), &cat(&[&[r], &v, &y]), 1e-13, 1e-14);
    check_fwd_rev(&Case {
        name: "pendulum_walk",
        x: &x,
        primal: &run,
        jvp: &|x, d| {
            let (mut v, mut dv) = (x[..m].to_vec(), d[..m].to_vec());
            let (mut y, mut dy) = (zeros(m), zeros(m));
            let (r, dr) = pendulum_walk_fwd(&mut v, &mut dv, &mut y, &mut dy, x[m], d[m]);
            (cat(&[&[r], &v, &y]), cat(&[&[dr], &dv, &dy]))
        },
        vjp: &|x, w| {
            let mut v = x[..m].to_vec();
            let mut dv = w[1..=m].to_vec();
            let mut y = zeros(m);
            let mut dy = w[m + 1..].to_vec();
            let (r, dk) = pendulum_walk_rev(&mut v, &mut dv, &mut y, &mut dy, x[m], w[0]);
            (cat(&[&[r], &v, &y]), cat(&[&dv, &[dk]]))
        },
        tols: TOLS,
    });
}

/// `&mut f64` helpers inside the other features: Euler steps in place in a
/// Revolve-checkpointed loop, and an accumulator local to a rayon closure.
#[differentiate(forward, reverse)]
pub fn stepped_in_place(v: &mut [f64], out: &mut [f64], k: f64, steps: usize) -> f64 {
    let (mut e, mut kin, mut last) = (0.0, 0.0, 0.0);
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        for i in 0..v.len() {
            last += euler_step(&mut v[i], k, 0.1, &mut e, &mut kin);
        }
    }
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let mut s = 0.0;
        accumulate(&mut s, v[i], k);
        add_positive(&mut s, v[i]);
        *o = s;
    });
    (e + kin) * last
}

fn stepped_in_place_by_hand(v: &[f64], k: f64, steps: usize) -> Vec<f64> {
    let mut v = v.to_vec();
    let (mut e, mut last) = (0.0, 0.0);
    for _ in 0..steps {
        for x in v.iter_mut() {
            last += *x;
            *x -= 0.1 * k * x.sin();
            e += *x * *x;
        }
    }
    let out: Vec<f64> = v.iter().map(|x| k * x * x + x.max(0.0).powi(2)).collect();
    let mut all = vec![e * last];
    all.extend(&v);
    all.extend(out);
    all
}

pub fn mutable_scalar_references_in_checkpoints_and_rayon() {
    let x = [0.4, -1.1, 0.9, 2.0, 0.6];
    let m = x.len() - 1;
    let steps = 5;
    let run = |x: &[f64]| {
        let mut v = x[..m].to_vec();
        let mut out = zeros(m);
        let r = stepped_in_place(&mut v, &mut out, x[m], steps);
        cat(&[&[r], &v, &out])
    };
    assert_all_close(
        "stepped_in_place",
        &run(&x),
        &stepped_in_place_by_hand(&x[..m], x[m], steps),
        1e-13,
        1e-14,
    );
    check_fwd_rev(&Case {
        name: "stepped_in_place",
        x: &x,
        primal: &run,
        jvp: &|x, d| {
            let (mut v, mut dv) = (x[..m].to_vec(), d[..m].to_vec());
            let (mut o, mut dout) = (zeros(m), zeros(m));
            let (r, dr) = stepped_in_place_fwd(&mut v, &mut dv, &mut o, &mut dout, x[m], d[m], steps);
            (cat(&[&[r], &v, &o]), cat(&[&[dr], &dv, &dout]))
        },
        vjp: &|x, w| {
            let mut v = x[..m].to_vec();
            let mut dv = w[1..=m].to_vec();
            let mut o = zeros(m);
            let mut dout = w[m + 1..].to_vec();
            let (r, dk) = stepped_in_place_rev(&mut v, &mut dv, &mut o, &mut dout, x[m], steps, w[0]);
            (cat(&[&[r], &v, &o]), cat(&[&dv, &[dk]]))
        },
        tols: TOLS,
    });
}

//! Issue 47's corpus: functions taking structs that derive `phidiff::Differentiable` —
//! by reference (`&Params`, shadow `&mut Params`), by `&mut` (`&mut State`, updated in
//! place), by value (the adjoint returned as a struct), generic over the float type, from
//! another module, with scalar, array, `Vec`, integer and skipped fields, in checkpointed
//! loops. Each is checked by finite differences and the dot-product test on the flattened
//! fields; the generic one against num-dual (gradient and H·v through
//! `_rev::<phidiff::Dual<f64>>`), and some by hand.

use super::differentiate;
use crate::common::nd::Nd;
use crate::common::*;
use num_dual::{Dual64, HyperDual64};
use num_traits::Float;
use phidiff::Differentiable;
use rayon::prelude::*;

/// A small model's parameters: a rate, weights, an anchor point, a count and a constant.
#[derive(phidiff::Differentiable, Clone, Debug, PartialEq)]
pub struct Params<T> {
    pub rate: T,
    pub weights: Vec<T>,
    pub anchor: [T; 2],
    pub order: usize,
    #[differentiable(skip)]
    pub label_weight: T,
}

impl<T: Float> Params<T> {
    /// The active fields in order: rate, weights, anchor (`label_weight` is skipped).
    fn from_flat(x: &[T], n: usize, order: usize, label_weight: T) -> Self {
        Params {
            rate: x[0],
            weights: x[1..1 + n].to_vec(),
            anchor: [x[1 + n], x[2 + n]],
            order,
            label_weight,
        }
    }
}

impl Params<f64> {
    fn flat(&self) -> Vec<f64> {
        let mut v = vec![self.rate];
        v.extend(&self.weights);
        v.extend(self.anchor);
        v
    }
}

/// The model and its loss live in another module, as in a crate's `model.rs`.
pub mod model {
    use super::{differentiate, Params};
    use num_traits::Float;

    /// A polynomial-in-`t` fit with a soft pull of the anchor: reads every kind of field
    /// (`p.rate`, `p.weights[k]`, `p.weights.len()`, `p.anchor[0]`, `p.order`, and the skipped
    /// `p.label_weight`, a constant).
    #[differentiate(forward, reverse, wrt(p))]
    pub fn loss<T: Float>(p: &Params<T>, ts: &[T], ys: &[T]) -> T {
        let mut total = T::zero();
        for (&t, &y) in ts.iter().zip(ys) {
            let mut pred = p.anchor[0];
            let mut tk = T::one();
            for k in 0..p.order.min(p.weights.len()) {
                tk = tk * t;
                pred = pred + p.weights[k] * tk;
            }
            let r = (p.rate * pred).tanh() - y;
            total = total + r * r;
        }
        let pull = p.anchor[0] - p.anchor[1];
        total + p.label_weight * pull * pull
    }
}

pub fn struct_by_reference_generic() {
    let (n, order) = (3, 3);
    let ts = [0.1, 0.4, 0.8, 1.1];
    let ys = [0.2, -0.1, 0.5, 0.3];
    let x = [0.9, 0.3, -0.5, 0.25, 0.1, -0.2];
    let lw = 0.7;
    let f = |x: &[f64]| model::loss(&Params::from_flat(x, n, order, lw), &ts, &ys);
    fn nd_of(v: &[f64]) -> Vec<Nd<Dual64>> {
        v.iter().map(|&c| Nd::constant(c)).collect()
    }
    check_generic(&Generic {
        name: "loss",
        x: &x,
        f: &f,
        f_dual: &|x| {
            let (ts, ys) = (nd_of(&ts), nd_of(&ys));
            model::loss(&Params::from_flat(x, n, order, Nd::constant(lw)), &ts, &ys)
        },
        f_hyper: &|x| {
            let c = |v: &[f64]| v.iter().map(|&c| Nd::<HyperDual64>::constant(c)).collect::<Vec<_>>();
            model::loss(&Params::from_flat(x, n, order, Nd::constant(lw)), &c(&ts), &c(&ys))
        },
        grad: &|x| {
            let (v, g) = model::loss_grad(&Params::from_flat(x, n, order, lw), &ts, &ys);
            // `_grad` returns the struct: its constant fields are the primal's.
            assert_eq!((g.order, g.label_weight), (order, lw));
            (v, g.flat())
        },
        fwd: &|x, d| {
            let (p, dp) = (Params::from_flat(x, n, order, lw), Params::from_flat(d, n, order, 0.0));
            model::loss_fwd(&p, &dp, &ts, &ys)
        },
        rev: &|x, seed| {
            let p = Params::from_flat(x, n, order, lw);
            let mut dp = p.zero_like();
            let v = model::loss_rev(&p, &mut dp, &ts, &ys, seed);
            (v, dp.flat())
        },
        hvp: &|x, v| {
            let d = |a: f64, b: f64| phidiff::Dual { re: a, eps: b };
            let pd = Params {
                rate: d(x[0], v[0]),
                weights: (0..n).map(|i| d(x[1 + i], v[1 + i])).collect(),
                anchor: [d(x[1 + n], v[1 + n]), d(x[2 + n], v[2 + n])],
                order,
                label_weight: phidiff::Dual::constant(lw),
            };
            let c = |v: &[f64]| v.iter().map(|&c| phidiff::Dual::constant(c)).collect::<Vec<_>>();
            let mut dpd = pd.zero_like();
            model::loss_rev(&pd, &mut dpd, &c(&ts), &c(&ys), phidiff::Dual::constant(1.0));
            let mut out = vec![dpd.rate.eps];
            out.extend(dpd.weights.iter().map(|w| w.eps));
            out.extend(dpd.anchor.iter().map(|a| a.eps));
            out
        },
    });
    // The shadow accumulates (`+=`), like a slice's.
    let p = Params::from_flat(&x, n, order, lw);
    let mut dp = p.zero_like();
    model::loss_rev(&p, &mut dp, &ts, &ys, 1.0);
    let once = dp.flat();
    model::loss_rev(&p, &mut dp, &ts, &ys, 1.0);
    let twice: Vec<f64> = once.iter().map(|v| 2.0 * v).collect();
    assert_rel("loss: shadow accumulates", &dp.flat(), &twice, 1e-15);
}

/// A particle's state, advanced in place.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct State {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub energy: f64,
    pub trail: Vec<f64>,
    pub steps: usize,
}

impl State {
    fn flat(&self) -> Vec<f64> {
        let mut v = self.pos.to_vec();
        v.extend(self.vel);
        v.push(self.energy);
        v.extend(&self.trail);
        v
    }
    fn from_flat(x: &[f64], steps: usize) -> State {
        State {
            pos: [x[0], x[1]],
            vel: [x[2], x[3]],
            energy: x[4],
            trail: x[5..].to_vec(),
            steps,
        }
    }
}

/// Symplectic Euler in a soft anharmonic well, the state a `&mut State` written field by
/// field (`s.vel[d] -= ..`, `s.energy = ..`, `s.trail[k] = ..`) over a Revolve-checkpointed
/// loop whose carried state is the struct's fields.
#[differentiate(forward, reverse)]
pub fn advance(s: &mut State, dt: f64, stiffness: f64) {
    #[checkpoint(revolve(snapshots = 3))]
    for step in 0..s.steps {
        for d in 0..2 {
            let force = -stiffness * s.pos[d] - 0.1 * s.pos[d] * s.pos[d] * s.pos[d];
            s.vel[d] += dt * force;
        }
        for d in 0..2 {
            s.pos[d] += dt * s.vel[d];
        }
        let kinetic = 0.5 * (s.vel[0] * s.vel[0] + s.vel[1] * s.vel[1]);
        s.energy = 0.9 * s.energy + 0.1 * kinetic;
        let k = step % s.trail.len();
        s.trail[k] = 0.5 * s.trail[k] + s.pos[0];
    }
}

pub fn struct_by_mut_reference_checkpointed() {
    let steps = 9;
    let x0 = [0.6, -0.3, 0.2, 0.5, 0.1, 0.0, 0.3, -0.2];
    let (dt, stiffness) = (0.1, 1.3);
    // Inputs: the state's fields, then the stiffness.
    let n = x0.len();
    let mut x = x0.to_vec();
    x.push(stiffness);
    let primal = |x: &[f64]| {
        let mut s = State::from_flat(&x[..n], steps);
        advance(&mut s, dt, x[n]);
        s.flat()
    };
    check_fwd_rev(&Case {
        name: "advance",
        x: &x,
        primal: &primal,
        jvp: &|x, v| {
            let mut s = State::from_flat(&x[..n], steps);
            let mut ds = State::from_flat(&v[..n], steps);
            advance_fwd(&mut s, &mut ds, dt, 0.0, x[n], v[n]);
            (s.flat(), ds.flat())
        },
        vjp: &|x, w| {
            let mut s = State::from_flat(&x[..n], steps);
            let mut ds = State::from_flat(w, steps);
            let dk = advance_rev(&mut s, &mut ds, dt, x[n]).1;
            let mut adj = ds.flat();
            adj.push(dk);
            (s.flat(), adj)
        },
        tols: TOLS,
    });
}

/// A struct by value: its adjoint comes back as a struct (`_rev` returns `(value,
/// Params, adjoint of a)`).
#[differentiate(forward, reverse)]
pub fn spread(p: Params<f64>, a: f64) -> f64 {
    let mean = p.weights.iter().sum::<f64>() / p.weights.len() as f64;
    let var = p.weights.iter().map(|w| (w - mean) * (w - mean)).sum::<f64>();
    (p.rate * a).sin() * var + p.anchor[1].exp() * p.label_weight
}

pub fn struct_by_value() {
    let n = 4;
    let x = [0.8, 0.1, -0.4, 0.9, 0.3, 0.2, -0.6, 1.7];
    let lw = 0.25;
    let f = |x: &[f64]| spread(Params::from_flat(&x[..x.len() - 1], n, 0, lw), x[x.len() - 1]);
    let g = check_grad(
        "spread",
        &x,
        &f,
        &|x| {
            let (v, (dp, da)) = spread_grad(Params::from_flat(&x[..x.len() - 1], n, 0, lw), x[x.len() - 1]);
            let mut g = dp.flat();
            g.push(da);
            (v, g)
        },
        TOLS,
    );
    // By hand: ∂/∂anchor[1] = e^{anchor[1]}·label_weight, ∂/∂anchor[0] = 0.
    assert_close("spread: d anchor[1]", g[2 + n], (-0.6f64).exp() * lw, 1e-14, 0.0);
    assert_eq!(g[1 + n], 0.0, "spread: anchor[0] is not read");
    let m = x.len() - 1;
    check_fwd_rev(&Case {
        name: "spread",
        x: &x,
        primal: &|x| vec![f(x)],
        jvp: &|x, v| {
            let (v, t) = spread_fwd(
                Params::from_flat(&x[..m], n, 0, lw),
                Params::from_flat(&v[..m], n, 0, 0.0),
                x[m],
                v[m],
            );
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let (v, dp, da) = spread_rev(Params::from_flat(&x[..m], n, 0, lw), x[m], w[0]);
            let mut g = dp.flat();
            g.push(da);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

/// A mismatched `Vec` field in the shadow is reported by its field path.
pub fn shadow_length_named_by_field() {
    let p = Params { rate: 1.0, weights: vec![0.5; 3], anchor: [0.0; 2], order: 2, label_weight: 0.0 };
    let mut dp = Params { weights: vec![0.0; 2], ..p.zero_like() };
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model::loss_rev(&p, &mut dp, &[0.5], &[0.1], 1.0)
    }))
    .expect_err("a short shadow field panics");
    let msg = panic_message(err);
    assert!(msg.contains("`dp.weights` has length 2 but `p.weights` has length 3"), "{msg}");
    assert!(msg.contains("zero_like"), "{msg}");
}

/// A body of an n-body system.
#[derive(phidiff::Differentiable, Clone, Copy, Debug)]
pub struct Body {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
}

fn bodies_from_flat(x: &[f64]) -> Vec<Body> {
    x.chunks(7)
        .map(|c| Body {
            pos: [c[0], c[1], c[2]],
            vel: [c[3], c[4], c[5]],
            mass: c[6],
        })
        .collect()
}

fn bodies_flat(bodies: &[Body]) -> Vec<f64> {
    bodies
        .iter()
        .flat_map(|b| b.pos.iter().chain(&b.vel).chain([&b.mass]).copied().collect::<Vec<_>>())
        .collect()
}

/// The total energy of a system: kinetic by `for (i, b) in bodies.iter().enumerate()`,
/// potential over the pairs by `for b2 in &bodies[i + 1..]`.
#[differentiate(forward, reverse)]
pub fn system_energy(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for (i, b) in bodies.iter().enumerate() {
        e += 0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1] + b.vel[2] * b.vel[2]);
        for b2 in &bodies[i + 1..] {
            let mut d2 = 0.0;
            for k in 0..3 {
                let d = b.pos[k] - b2.pos[k];
                d2 += d * d;
            }
            e -= b.mass * b2.mass / d2.sqrt();
        }
    }
    e
}

/// Leapfrog-free symplectic Euler of the system, written on `bodies: &mut [Body]`
/// (`bodies[i].vel[k] -= ..`, `let mi = bodies[i].mass;`, `for b in bodies.iter_mut()`), the
/// steps Revolve-checkpointed, a local array `let mut d = [0.0; 3];` per pair.
#[differentiate(forward, reverse)]
pub fn advance_system(bodies: &mut [Body], dt: f64, steps: usize) {
    #[checkpoint(revolve(snapshots = 3))]
    for _ in 0..steps {
        for i in 0..bodies.len() {
            for j in (i + 1)..bodies.len() {
                let mut d = [0.0; 3];
                let mut d2 = 0.0;
                for k in 0..3 {
                    d[k] = bodies[i].pos[k] - bodies[j].pos[k];
                    d2 += d[k] * d[k];
                }
                let mag = dt / (d2 * d2.sqrt());
                let mi = bodies[i].mass;
                let mj = bodies[j].mass;
                for k in 0..3 {
                    bodies[i].vel[k] -= d[k] * mj * mag;
                    bodies[j].vel[k] += d[k] * mi * mag;
                }
            }
        }
        for b in bodies.iter_mut() {
            for k in 0..3 {
                b.pos[k] += dt * b.vel[k];
            }
        }
    }
}

fn three_bodies() -> Vec<f64> {
    vec![
        0.0, 0.0, 0.0, 0.01, -0.02, 0.0, 10.0, //
        1.0, 0.1, 0.0, 0.0, 3.0, 0.1, 0.1, //
        -0.3, 2.0, 0.5, -2.0, 0.0, 0.1, 0.2,
    ]
}

pub fn slices_of_structs() {
    let x = three_bodies();
    check_grad(
        "system_energy",
        &x,
        &|x| system_energy(&bodies_from_flat(x)),
        &|x| {
            let (e, g) = system_energy_grad(&bodies_from_flat(x));
            (e, bodies_flat(&g))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "system_energy",
        x: &x,
        primal: &|x| vec![system_energy(&bodies_from_flat(x))],
        jvp: &|x, v| {
            let (e, t) = system_energy_fwd(&bodies_from_flat(x), &bodies_from_flat(v));
            (vec![e], vec![t])
        },
        vjp: &|x, w| {
            let b = bodies_from_flat(x);
            let mut db: Vec<Body> = b.iter().map(Differentiable::zero_like).collect();
            let e = system_energy_rev(&b, &mut db, w[0]);
            (vec![e], bodies_flat(&db))
        },
        tols: TOLS,
    });
    let (dt, steps) = (0.01, 12);
    check_fwd_rev(&Case {
        name: "advance_system",
        x: &x,
        primal: &|x| {
            let mut b = bodies_from_flat(x);
            advance_system(&mut b, dt, steps);
            bodies_flat(&b)
        },
        jvp: &|x, v| {
            let (mut b, mut db) = (bodies_from_flat(x), bodies_from_flat(v));
            advance_system_fwd(&mut b, &mut db, dt, 0.0, steps);
            (bodies_flat(&b), bodies_flat(&db))
        },
        vjp: &|x, w| {
            let (mut b, mut db) = (bodies_from_flat(x), bodies_from_flat(w));
            advance_system_rev(&mut b, &mut db, dt, steps);
            (bodies_flat(&b), bodies_flat(&db))
        },
        tols: TOLS,
    });
}

/// A polynomial model with its methods: `loss` calls the method `self.predict(t)` and the
/// free function `ridge(self, lambda)`, each differentiated by its own attribute.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Poly<T> {
    pub bias: T,
    pub coef: Vec<T>,
}

impl<T: Float> Poly<T> {
    #[differentiate(forward, reverse)]
    pub fn predict(&self, t: T) -> T {
        let mut s = self.bias;
        let mut tk = T::one();
        for c in self.coef.iter() {
            tk = tk * t;
            s = s + *c * tk;
        }
        s
    }

    #[differentiate(forward, reverse, wrt(self))]
    pub fn loss(&self, ts: &[T], ys: &[T]) -> T {
        let mut total = T::zero();
        for i in 0..ts.len() {
            let r = self.predict(ts[i]) - ys[i];
            total = total + r * r;
        }
        total + ridge(self, T::from(0.05).unwrap())
    }
}

/// A free function of the model.
#[differentiate(forward, reverse)]
pub fn ridge<T: Float>(p: &Poly<T>, lambda: T) -> T {
    lambda * p.coef.iter().fold(T::zero(), |a, &c| a + c * c)
}

/// A damped oscillator stepped by a `&mut self` method that `run` calls in a
/// Revolve-checkpointed loop.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Oscillator {
    pub x: f64,
    pub v: f64,
    pub stiffness: f64,
    pub damping: f64,
}

impl Oscillator {
    #[differentiate(forward, reverse)]
    pub fn step(&mut self, dt: f64) {
        self.v -= dt * (self.stiffness * self.x + self.damping * self.v);
        self.x += dt * self.v;
    }

    #[differentiate(forward, reverse)]
    pub fn run(&mut self, dt: f64, n: usize) {
        #[checkpoint(revolve(snapshots = 2))]
        for _ in 0..n {
            self.step(dt);
        }
    }
}

pub fn methods_and_calls_with_structs() {
    let ts = [0.1, 0.4, 0.8, 1.1];
    let ys = [0.3, 0.1, 0.5, 0.2];
    let x = [0.2, 0.7, -0.4, 0.25];
    let poly = |x: &[f64]| Poly { bias: x[0], coef: x[1..].to_vec() };
    fn nd_poly<D: crate::common::nd::Inner>(x: &[Nd<D>]) -> Poly<Nd<D>> {
        Poly { bias: x[0], coef: x[1..].to_vec() }
    }
    check_generic(&Generic {
        name: "Poly::loss",
        x: &x,
        f: &|x| poly(x).loss(&ts, &ys),
        f_dual: &|x| {
            let c = |v: &[f64]| v.iter().map(|&c| Nd::<Dual64>::constant(c)).collect::<Vec<_>>();
            nd_poly(x).loss(&c(&ts), &c(&ys))
        },
        f_hyper: &|x| {
            let c = |v: &[f64]| v.iter().map(|&c| Nd::<HyperDual64>::constant(c)).collect::<Vec<_>>();
            nd_poly(x).loss(&c(&ts), &c(&ys))
        },
        grad: &|x| {
            let (v, g) = poly(x).loss_grad(&ts, &ys);
            let mut flat = vec![g.bias];
            flat.extend(&g.coef);
            (v, flat)
        },
        fwd: &|x, d| poly(x).loss_fwd(&poly(d), &ts, &ys),
        rev: &|x, seed| {
            let p = poly(x);
            let mut dp = p.zero_like();
            let v = p.loss_rev(&mut dp, &ts, &ys, seed);
            let mut flat = vec![dp.bias];
            flat.extend(&dp.coef);
            (v, flat)
        },
        hvp: &|x, v| {
            let d = |a: f64, b: f64| phidiff::Dual { re: a, eps: b };
            let p = Poly { bias: d(x[0], v[0]), coef: (1..x.len()).map(|i| d(x[i], v[i])).collect() };
            let c = |v: &[f64]| v.iter().map(|&c| phidiff::Dual::constant(c)).collect::<Vec<_>>();
            let mut dp = p.zero_like();
            p.loss_rev(&mut dp, &c(&ts), &c(&ys), phidiff::Dual::constant(1.0));
            let mut out = vec![dp.bias.eps];
            out.extend(dp.coef.iter().map(|c| c.eps));
            out
        },
    });
    // The oscillator: state and parameters through `&mut self` calls in a checkpointed loop.
    let (dt, n) = (0.05, 17);
    let osc = |x: &[f64]| Oscillator { x: x[0], v: x[1], stiffness: x[2], damping: x[3] };
    let flat = |o: &Oscillator| vec![o.x, o.v, o.stiffness, o.damping];
    check_fwd_rev(&Case {
        name: "Oscillator::run",
        x: &[1.0, -0.2, 2.5, 0.3],
        primal: &|x| {
            let mut o = osc(x);
            o.run(dt, n);
            flat(&o)
        },
        jvp: &|x, v| {
            let (mut o, mut d) = (osc(x), osc(v));
            o.run_fwd(&mut d, dt, 0.0, n);
            (flat(&o), flat(&d))
        },
        vjp: &|x, w| {
            let (mut o, mut d) = (osc(x), osc(w));
            o.run_rev(&mut d, dt, n);
            (flat(&o), flat(&d))
        },
        tols: TOLS,
    });
}

/// A tuple parameter by value (its adjoint returned as a tuple), taken apart by a `let`
/// pattern; a tuple local (`let t = (..)`, `t.0`); a tuple result with an `if` whose
/// branches give the tuple (two outputs: `_rev` takes a seed tuple).
#[differentiate(forward, reverse)]
pub fn polar(p: (f64, f64), scale: f64) -> (f64, f64) {
    let (r, theta) = p;
    let t = (r * theta.cos(), r * theta.sin());
    if scale > 0.0 {
        (scale * t.0, scale * t.1)
    } else {
        t
    }
}

/// Generic, with a mutable tuple accumulator and a tuple result.
#[differentiate(forward, reverse)]
pub fn mean_and_variance<T: Float>(x: &[T]) -> (T, T) {
    let n = T::from(x.len()).unwrap();
    let mut s = (T::zero(), T::zero());
    for &v in x {
        s.0 = s.0 + v;
        s.1 = s.1 + v * v;
    }
    let mean = s.0 / n;
    (mean, s.1 / n - mean * mean)
}

/// A tuple parameter written as a pattern.
#[differentiate(forward, reverse)]
pub fn weighted_pair((a, b): (f64, f64), x: &[f64]) -> f64 {
    a * x[0] + b * x[1] * x[1]
}

pub fn tuples() {
    for scale in [1.5, -1.0] {
        check_fwd_rev(&Case {
            name: "polar",
            x: &[2.0, 0.5, scale],
            primal: &|x| {
                let (a, b) = polar((x[0], x[1]), x[2]);
                vec![a, b]
            },
            jvp: &|x, v| {
                let (y, t) = polar_fwd((x[0], x[1]), (v[0], v[1]), x[2], v[2]);
                (vec![y.0, y.1], vec![t.0, t.1])
            },
            vjp: &|x, w| {
                let (y, dp, ds) = polar_rev((x[0], x[1]), x[2], (w[0], w[1]));
                (vec![y.0, y.1], vec![dp.0, dp.1, ds])
            },
            tols: TOLS,
        });
    }
    // By hand: ∂(scale·r·cos θ)/∂(r, θ, scale).
    let (_, dp, ds) = polar_rev((2.0, 0.5), 1.5, (1.0, 0.0));
    assert_rel("polar: adjoint", &[dp.0, dp.1, ds], &[1.5 * 0.5f64.cos(), -3.0 * 0.5f64.sin(), 2.0 * 0.5f64.cos()], 1e-15);
    let x = [1.0, 2.0, 4.0, -0.5];
    check_fwd_rev(&Case {
        name: "mean_and_variance",
        x: &x,
        primal: &|x| {
            let (m, v) = mean_and_variance(x);
            vec![m, v]
        },
        jvp: &|x, d| {
            let (y, t) = mean_and_variance_fwd(x, d);
            (vec![y.0, y.1], vec![t.0, t.1])
        },
        vjp: &|x, w| {
            let mut dx = zeros(x.len());
            let y = mean_and_variance_rev(x, &mut dx, (w[0], w[1]));
            (vec![y.0, y.1], dx)
        },
        tols: TOLS,
    });
    // The variance's gradient against num-dual: 2(xᵢ − mean)/n.
    for k in 0..x.len() {
        let mut e = zeros(x.len());
        e[k] = 1.0;
        let xd = Nd::seeded(&x, &e);
        let (_, var) = mean_and_variance(&xd);
        let mut dx = zeros(x.len());
        mean_and_variance_rev(&x, &mut dx, (0.0, 1.0));
        assert_close("mean_and_variance: ∂var vs num-dual", dx[k], var.eps(), 1e-14, 1e-15);
    }
    let (v, (dab, dx)) = weighted_pair_grad((0.5, 2.0), &[1.0, 3.0]);
    assert_eq!(v, 18.5);
    assert_rel("weighted_pair: gradient", &[dab.0, dab.1, dx[0], dx[1]], &[1.0, 9.0, 0.5, 12.0], 1e-15);
    check_grad(
        "weighted_pair",
        &[0.5, 2.0, 1.0, 3.0],
        &|x| weighted_pair((x[0], x[1]), &x[2..]),
        &|x| {
            let (v, (dab, dx)) = weighted_pair_grad((x[0], x[1]), &x[2..]);
            (v, vec![dab.0, dab.1, dx[0], dx[1]])
        },
        TOLS,
    );
}

/// Forces and a kick over a slice of structs in rayon closures
/// (`bodies.par_iter_mut().enumerate().for_each(|(i, b)| ..)`, `par_iter_mut().for_each`),
/// inside a serial time loop.
#[differentiate(forward, reverse)]
pub fn parallel_kicks(bodies: &mut [Body], dt: f64, steps: usize) {
    for _ in 0..steps {
        bodies.par_iter_mut().enumerate().for_each(|(i, b)| {
            let phase = 0.1 * i as f64;
            for k in 0..3 {
                b.vel[k] -= dt * (b.pos[k] + phase) * b.mass;
            }
        });
        bodies.par_iter_mut().for_each(|b| {
            for k in 0..3 {
                b.pos[k] += dt * b.vel[k];
            }
        });
    }
}

pub fn rayon_over_slices_of_structs() {
    let x = three_bodies();
    let (dt, steps) = (0.05, 6);
    check_fwd_rev(&Case {
        name: "parallel_kicks",
        x: &x,
        primal: &|x| {
            let mut b = bodies_from_flat(x);
            parallel_kicks(&mut b, dt, steps);
            bodies_flat(&b)
        },
        jvp: &|x, v| {
            let (mut b, mut db) = (bodies_from_flat(x), bodies_from_flat(v));
            parallel_kicks_fwd(&mut b, &mut db, dt, 0.0, steps);
            (bodies_flat(&b), bodies_flat(&db))
        },
        vjp: &|x, w| {
            let (mut b, mut db) = (bodies_from_flat(x), bodies_from_flat(w));
            parallel_kicks_rev(&mut b, &mut db, dt, steps);
            (bodies_flat(&b), bodies_flat(&db))
        },
        tols: TOLS,
    });
}

/// A struct taken apart by a pattern (`let Params { rate, weights, anchor, .. } = p;`),
/// with match ergonomics: `rate` a `&f64`, `weights` a `&Vec<f64>`.
#[differentiate(forward, reverse, wrt(p))]
pub fn pattern_loss(p: &Params<f64>, x: &[f64]) -> f64 {
    let Params {
        rate,
        weights,
        anchor,
        ..
    } = p;
    let mut s = 0.0;
    for (w, v) in weights.iter().zip(x) {
        s += w * v;
    }
    (*rate * s).sin() + anchor[0] * anchor[1]
}

pub fn struct_patterns() {
    let n = 3;
    let xs = [0.3, -0.2, 0.7];
    let x = [0.9, 0.3, -0.5, 0.25, 0.1, -0.2];
    let f = |x: &[f64]| pattern_loss(&Params::from_flat(x, n, 1, 0.0), &xs);
    check_grad(
        "pattern_loss",
        &x,
        &f,
        &|x| {
            let (v, g) = pattern_loss_grad(&Params::from_flat(x, n, 1, 0.0), &xs);
            (v, g.flat())
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "pattern_loss",
        x: &x,
        primal: &|x| vec![f(x)],
        jvp: &|x, d| {
            let (v, t) = pattern_loss_fwd(&Params::from_flat(x, n, 1, 0.0), &Params::from_flat(d, n, 1, 0.0), &xs);
            (vec![v], vec![t])
        },
        vjp: &|x, w| {
            let p = Params::from_flat(x, n, 1, 0.0);
            let mut dp = p.zero_like();
            let v = pattern_loss_rev(&p, &mut dp, &xs, w[0]);
            (vec![v], dp.flat())
        },
        tols: TOLS,
    });
}

/// A struct the body only passes on (no field read here): still split, so the calls pass
/// its fields.
#[differentiate(forward, reverse)]
pub fn passed_on(p: &Poly<f64>, t: f64) -> f64 {
    let r = ridge(p, 0.5);
    r * r + p.predict(t)
}

pub fn structs_passed_on() {
    let poly = |x: &[f64]| Poly { bias: x[0], coef: x[1..x.len() - 1].to_vec() };
    let flat = |p: &Poly<f64>| {
        let mut v = vec![p.bias];
        v.extend(&p.coef);
        v
    };
    let x = [0.2, 0.7, -0.4, 0.6];
    let n = x.len() - 1;
    check_grad(
        "passed_on",
        &x,
        &|x| passed_on(&poly(x), x[n]),
        &|x| {
            let (v, (g, dt)) = passed_on_grad(&poly(x), x[n]);
            let mut v2 = flat(&g);
            v2.push(dt);
            (v, v2)
        },
        TOLS,
    );
    // By hand: ∂/∂coef_k = 2r·(2·0.5·coef_k) + t^(k+1), ∂/∂bias = 1.
    let p = poly(&x);
    let (_, (g, _)) = passed_on_grad(&p, x[n]);
    let r = 0.5 * (0.7f64 * 0.7 + 0.4 * 0.4);
    let want = [1.0, 2.0 * r * 0.7 + 0.6, 2.0 * r * -0.4 + 0.36];
    assert_rel("passed_on: by hand", &flat(&g), &want, 1e-13);
}

/// Struct-valued locals: a literal (`Body { pos: [..], vel: [0.0; 3], mass }`, array
/// literals inside), fields written (`b.vel[k] -= ..`), update syntax (`Body { mass: .., ..b }`)
/// and array literals (`let w = [0.5, 1.0, 2.0];`).
#[differentiate(forward, reverse)]
pub fn kicked_energy(x: &[f64], dt: f64) -> f64 {
    let mut b = Body {
        pos: [x[0], x[1], x[2]],
        vel: [0.0; 3],
        mass: x[3],
    };
    for k in 0..3 {
        b.vel[k] -= dt * b.pos[k] * b.mass;
    }
    let heavier = Body {
        mass: 2.0 * b.mass,
        ..b
    };
    let w = [0.5, 1.0, 2.0];
    let mut e = 0.0;
    for k in 0..3 {
        e += w[k] * heavier.vel[k] * heavier.vel[k];
    }
    heavier.mass * e
}

pub fn struct_locals() {
    let x = [0.5, -0.3, 0.2, 1.5];
    let dt = 0.1;
    check_grad(
        "kicked_energy",
        &[x[0], x[1], x[2], x[3], dt],
        &|y| kicked_energy(&y[..4], y[4]),
        &|y| {
            let (v, (mut g, gdt)) = kicked_energy_grad(&y[..4], y[4]);
            g.push(gdt);
            (v, g)
        },
        TOLS,
    );
    // By hand: vel_k = −dt·pos_k·m, e = 2m·Σ w_k vel_k² = 2 dt² m³ Σ w_k pos_k².
    let s: f64 = [0.5, 1.0, 2.0].iter().zip(&x[..3]).map(|(w, p)| w * p * p).sum();
    let (v, _) = kicked_energy_grad(&x, dt);
    assert_close("kicked_energy: value by hand", v, 2.0 * dt * dt * x[3].powi(3) * s, 1e-14, 0.0);
}

/// A `Vec` of structs by value (its shadow a `&mut [Body]`), walked by a `for` loop.
#[differentiate(forward, reverse)]
pub fn kinetic_of_owned(bodies: Vec<Body>) -> f64 {
    let mut e = 0.0;
    for b in bodies.iter() {
        e += 0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1] + b.vel[2] * b.vel[2]);
    }
    e
}

/// Tuples by reference: `&(f64, f64)` read, `&mut (f64, f64)` updated in place.
#[differentiate(forward, reverse)]
pub fn rotate_pair(angle: &(f64, f64), point: &mut (f64, f64)) {
    let (c, s) = (angle.0.cos() * angle.1, angle.0.sin() * angle.1);
    let x = point.0;
    point.0 = c * x - s * point.1;
    point.1 = s * x + c * point.1;
}

pub fn owned_slices_and_borrowed_tuples() {
    let x = three_bodies();
    check_grad(
        "kinetic_of_owned",
        &x,
        &|x| kinetic_of_owned(bodies_from_flat(x)),
        &|x| {
            let (v, g) = kinetic_of_owned_grad(bodies_from_flat(x));
            (v, bodies_flat(&g))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "kinetic_of_owned",
        x: &x,
        primal: &|x| vec![kinetic_of_owned(bodies_from_flat(x))],
        jvp: &|x, v| {
            let (y, t) = kinetic_of_owned_fwd(bodies_from_flat(x), bodies_from_flat(v));
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let b = bodies_from_flat(x);
            let mut db: Vec<Body> = b.iter().map(Differentiable::zero_like).collect();
            let y = kinetic_of_owned_rev(b, &mut db, w[0]);
            (vec![y], bodies_flat(&db))
        },
        tols: TOLS,
    });
    check_fwd_rev(&Case {
        name: "rotate_pair",
        x: &[0.7, 1.3, 0.4, -0.9],
        primal: &|x| {
            let mut p = (x[2], x[3]);
            rotate_pair(&(x[0], x[1]), &mut p);
            vec![p.0, p.1]
        },
        jvp: &|x, v| {
            let (mut p, mut dp) = ((x[2], x[3]), (v[2], v[3]));
            rotate_pair_fwd(&(x[0], x[1]), &(v[0], v[1]), &mut p, &mut dp);
            (vec![p.0, p.1], vec![dp.0, dp.1])
        },
        vjp: &|x, w| {
            let (mut p, mut dp) = ((x[2], x[3]), (w[0], w[1]));
            let mut da = (0.0, 0.0);
            rotate_pair_rev(&(x[0], x[1]), &mut da, &mut p, &mut dp);
            (vec![p.0, p.1], vec![da.0, da.1, dp.0, dp.1])
        },
        tols: TOLS,
    });
}

//! Issue 47, structs inside structs: a model holding a struct from another module
//! (`m.origin.x`) and a `Vec` of layers that hold structs themselves (`layer.gate.w[j]`,
//! `m.layers[0].gate.b`, `for layer in m.layers.iter()`), passed on to a helper as
//! `&m.origin`; a `&mut self` system whose `Vec` of bodies (each with a nested state) is
//! stepped in a Revolve-checkpointed loop and in rayon closures; a struct by value and a
//! slice of structs with nested fields.
//!
//! Each is checked by finite differences and the dot-product test on the flattened fields
//! (`TOLS`); the generic model also against num-dual (rel 1e-12 of the gradient's size) and
//! its `Dual` Hessian-vector product against hyper-dual numbers (`check_generic`).

use super::differentiate;
use crate::common::*;
use num_traits::Float;
use phidiff::Differentiable;
use rayon::prelude::*;

pub mod geom {
    /// A point, in a module of its own.
    #[derive(phidiff::Differentiable, Clone, Debug)]
    pub struct Vec3<T> {
        pub x: T,
        pub y: T,
        pub z: T,
    }
}

/// A gate's weights.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Gate<T> {
    pub w: Vec<T>,
    pub b: T,
}

/// A layer holding a gate.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Layer<T> {
    pub scale: T,
    pub gate: Gate<T>,
    /// A constant: how the layer was built.
    pub id: usize,
}

/// A model holding a struct and a `Vec` of structs holding structs.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Model<T> {
    pub origin: geom::Vec3<T>,
    pub layers: Vec<Layer<T>>,
    pub k: T,
}

/// A helper taking the nested struct.
#[differentiate(forward, reverse)]
pub fn norm2<T: Float>(v: &geom::Vec3<T>) -> T {
    v.x * v.x + v.y * v.y + v.z * v.z
}

#[differentiate(forward, reverse)]
pub fn model_loss<T: Float>(m: &Model<T>, xs: &[T]) -> T {
    let mut s = m.k * m.origin.x + m.origin.y * m.origin.z.sin();
    let mut acts = vec![T::zero(); m.layers.len()];
    for (layer, act) in m.layers.iter().zip(acts.iter_mut()) {
        let mut a = layer.gate.b;
        for (j, &x) in xs.iter().enumerate() {
            a = a + layer.gate.w[j] * x;
        }
        *act = layer.scale * a.tanh();
    }
    for a in &acts {
        s = s + *a * *a;
    }
    let first = &m.layers[0];
    s + first.gate.b * m.layers[m.layers.len() - 1].scale + norm2(&m.origin) * m.k
}

const INPUTS: usize = 3;
const LAYERS: usize = 2;

/// origin (3), then per layer scale, w (INPUTS), b; then k; then the inputs.
fn model_from_flat<T: Float>(x: &[T]) -> (Model<T>, Vec<T>) {
    let per = INPUTS + 2;
    let layers = (0..LAYERS)
        .map(|l| {
            let at = &x[3 + l * per..3 + (l + 1) * per];
            Layer {
                scale: at[0],
                gate: Gate {
                    w: at[1..1 + INPUTS].to_vec(),
                    b: at[1 + INPUTS],
                },
                id: l,
            }
        })
        .collect();
    let k_at = 3 + LAYERS * per;
    let m = Model {
        origin: geom::Vec3 {
            x: x[0],
            y: x[1],
            z: x[2],
        },
        layers,
        k: x[k_at],
    };
    (m, x[k_at + 1..].to_vec())
}

fn model_flat<T: Copy>(m: &Model<T>) -> Vec<T> {
    let mut v = vec![m.origin.x, m.origin.y, m.origin.z];
    for l in &m.layers {
        v.push(l.scale);
        v.extend(l.gate.w.iter().copied());
        v.push(l.gate.b);
    }
    v.push(m.k);
    v
}

pub fn nested_model() {
    let n = 3 + LAYERS * (INPUTS + 2) + 1 + INPUTS;
    let x: Vec<f64> = (0..n).map(|i| 0.4 * ((i as f64) * 0.91).sin() + 0.1).collect();
    let rev = |x: &[f64], seed: f64| {
        let (m, xs) = model_from_flat(x);
        let (mut dm, mut dxs) = (m.zero_like(), vec![0.0; xs.len()]);
        let v = model_loss_rev(&m, &mut dm, &xs, &mut dxs, seed);
        // The constant field of the shadow is the primal's (from `zero_like`), untouched.
        assert_eq!(dm.layers[1].id, 1);
        let mut g = model_flat(&dm);
        g.extend(dxs);
        (v, g)
    };
    check_generic(&Generic {
        name: "model_loss",
        x: &x,
        f: &|x| {
            let (m, xs) = model_from_flat(x);
            model_loss(&m, &xs)
        },
        f_dual: &|x| {
            let (m, xs) = model_from_flat(x);
            model_loss(&m, &xs)
        },
        f_hyper: &|x| {
            let (m, xs) = model_from_flat(x);
            model_loss(&m, &xs)
        },
        grad: &|x| {
            let (m, xs) = model_from_flat(x);
            let (v, (dm, dxs)) = model_loss_grad(&m, &xs);
            let mut g = model_flat(&dm);
            g.extend(dxs);
            (v, g)
        },
        fwd: &|x, d| {
            let ((m, xs), (dm, dxs)) = (model_from_flat(x), model_from_flat(d));
            model_loss_fwd(&m, &dm, &xs, &dxs)
        },
        rev: &rev,
        hvp: &|x, v| {
            let xd: Vec<phidiff::Dual<f64>> = x
                .iter()
                .zip(v)
                .map(|(&a, &b)| phidiff::Dual { re: a, eps: b })
                .collect();
            let (m, xs) = model_from_flat(&xd);
            let (mut dm, mut dxs) = (m.zero_like(), vec![phidiff::Dual::constant(0.0); xs.len()]);
            model_loss_rev(&m, &mut dm, &xs, &mut dxs, phidiff::Dual::constant(1.0));
            let mut g: Vec<f64> = model_flat(&dm).iter().map(|d| d.eps).collect();
            g.extend(dxs.iter().map(|d| d.eps));
            g
        },
    });
}

/// A body's state, nested in the body.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct State {
    pub x: [f64; 2],
    pub v: [f64; 2],
}

#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Body {
    pub state: State,
    pub mass: f64,
}

/// A soft wall.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Wall {
    pub k: f64,
    pub at: f64,
}

/// Bodies tied to the origin by springs, pushed back by a wall.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct System {
    pub bodies: Vec<Body>,
    pub wall: Wall,
    pub g: f64,
}

impl System {
    /// `steps` symplectic Euler steps (Revolve-checkpointed) of every body, then the
    /// energy: the state written through `self.bodies[i].state` and
    /// `for b in self.bodies.iter_mut()`, the wall read as `self.wall.k`.
    #[differentiate(forward, reverse)]
    pub fn advance(&mut self, dt: f64, steps: usize) -> f64 {
        #[checkpoint(revolve(snapshots = 3))]
        for _ in 0..steps {
            for b in self.bodies.iter_mut() {
                for d in 0..2 {
                    let mut f = -self.g * b.state.x[d];
                    if b.state.x[d] > self.wall.at {
                        f = f - self.wall.k * (b.state.x[d] - self.wall.at);
                    }
                    b.state.v[d] = b.state.v[d] + dt * f / b.mass;
                }
            }
            for i in 0..self.bodies.len() {
                for d in 0..2 {
                    self.bodies[i].state.x[d] += dt * self.bodies[i].state.v[d];
                }
            }
        }
        let mut e = 0.0;
        for b in self.bodies.iter() {
            let s = &b.state;
            e += 0.5 * b.mass * (s.v[0] * s.v[0] + s.v[1] * s.v[1])
                + 0.5 * self.g * (s.x[0] * s.x[0] + s.x[1] * s.x[1]);
        }
        e
    }

    /// A kick and a drift in rayon closures over the `Vec` field, inside a time loop.
    #[differentiate(forward, reverse)]
    pub fn drift(&mut self, dt: f64, steps: usize) {
        for _ in 0..steps {
            let g = self.g;
            self.bodies.par_iter_mut().for_each(|b| {
                for d in 0..2 {
                    b.state.v[d] -= dt * g * b.state.x[d] / b.mass;
                }
            });
            self.bodies.par_iter_mut().enumerate().for_each(|(i, b)| {
                let phase = 0.01 * i as f64;
                for d in 0..2 {
                    b.state.x[d] += dt * (b.state.v[d] + phase);
                }
            });
        }
    }
}

/// bodies (x, v, mass each), then wall k, at, then g.
fn system_from_flat(x: &[f64], n: usize) -> System {
    let bodies = (0..n)
        .map(|i| {
            let b = &x[5 * i..5 * i + 5];
            Body {
                state: State {
                    x: [b[0], b[1]],
                    v: [b[2], b[3]],
                },
                mass: b[4],
            }
        })
        .collect();
    System {
        bodies,
        wall: Wall {
            k: x[5 * n],
            at: x[5 * n + 1],
        },
        g: x[5 * n + 2],
    }
}

fn system_flat(s: &System) -> Vec<f64> {
    let mut v = Vec::new();
    for b in &s.bodies {
        v.extend(b.state.x);
        v.extend(b.state.v);
        v.push(b.mass);
    }
    v.extend([s.wall.k, s.wall.at, s.g]);
    v
}

fn system_point(n: usize) -> Vec<f64> {
    let mut x: Vec<f64> = (0..5 * n)
        .map(|i| match i % 5 {
            4 => 1.0 + 0.3 * i as f64 / 5.0,
            _ => 0.6 * ((i as f64) * 1.3).sin() + 0.2,
        })
        .collect();
    // The wall sits where some bodies cross it during the steps.
    x.extend([3.0, 0.5, 1.7]);
    x
}

pub fn nested_mut_state_checkpointed() {
    let n = 3;
    let (dt, steps) = (0.05, 12);
    let x = system_point(n);
    check_fwd_rev(&Case {
        name: "System::advance",
        x: &x,
        primal: &|x| {
            let mut s = system_from_flat(x, n);
            let e = s.advance(dt, steps);
            let mut out = vec![e];
            out.extend(system_flat(&s));
            out
        },
        jvp: &|x, v| {
            let (mut s, mut ds) = (system_from_flat(x, n), system_from_flat(v, n));
            let (e, de) = s.advance_fwd(&mut ds, dt, 0.0, steps);
            let (mut y, mut t) = (vec![e], vec![de]);
            y.extend(system_flat(&s));
            t.extend(system_flat(&ds));
            (y, t)
        },
        vjp: &|x, w| {
            let mut s = system_from_flat(x, n);
            // The shadow of the final state holds the output weights on entry.
            let mut ds = system_from_flat(&w[1..], n);
            let (e, _ddt) = s.advance_rev(&mut ds, dt, steps, w[0]);
            let mut y = vec![e];
            y.extend(system_flat(&s));
            (y, system_flat(&ds))
        },
        tols: TOLS,
    });
}

pub fn nested_in_rayon_closures() {
    let n = 4;
    let (dt, steps) = (0.05, 5);
    let x = system_point(n);
    check_fwd_rev(&Case {
        name: "System::drift",
        x: &x,
        primal: &|x| {
            let mut s = system_from_flat(x, n);
            s.drift(dt, steps);
            system_flat(&s)
        },
        jvp: &|x, v| {
            let (mut s, mut ds) = (system_from_flat(x, n), system_from_flat(v, n));
            s.drift_fwd(&mut ds, dt, 0.0, steps);
            (system_flat(&s), system_flat(&ds))
        },
        vjp: &|x, w| {
            let mut s = system_from_flat(x, n);
            let mut ds = system_from_flat(w, n);
            s.drift_rev(&mut ds, dt, steps);
            (system_flat(&s), system_flat(&ds))
        },
        tols: TOLS,
    });
}

/// A center by value holding a point.
#[derive(phidiff::Differentiable, Clone, Copy, Debug)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[derive(phidiff::Differentiable, Clone, Copy, Debug)]
pub struct Center {
    pub p: Point,
    pub weight: f64,
}

/// A slice of structs with nested fields (`b.state.x[0]`, `bodies[i].state.v[1]`,
/// `let st = &bodies[i].state;`) and a struct by value holding one (`c.p.x`).
#[differentiate(forward, reverse)]
pub fn spread(bodies: &[Body], c: Center) -> f64 {
    let mut s = 0.0;
    for b in bodies {
        let dx = b.state.x[0] - c.p.x;
        let dy = b.state.x[1] - c.p.y;
        s += b.mass * (dx * dx + dy * dy);
    }
    for i in 0..bodies.len() {
        let st = &bodies[i].state;
        s += c.weight * bodies[i].state.v[1] * st.v[0];
    }
    s
}

pub fn nested_by_value_and_in_slices() {
    let n = 3;
    let x: Vec<f64> = system_point(n)[..5 * n]
        .iter()
        .copied()
        .chain([0.3, -0.2, 1.5])
        .collect();
    let split = |x: &[f64]| {
        let s = system_from_flat(&[&x[..5 * n], &[0.0; 3]].concat(), n);
        let c = Center {
            p: Point {
                x: x[5 * n],
                y: x[5 * n + 1],
            },
            weight: x[5 * n + 2],
        };
        (s.bodies, c)
    };
    let bodies_flat = |b: &[Body], c: &Center| {
        let mut v = system_flat(&System {
            bodies: b.to_vec(),
            wall: Wall { k: 0.0, at: 0.0 },
            g: 0.0,
        });
        v.truncate(5 * b.len());
        v.extend([c.p.x, c.p.y, c.weight]);
        v
    };
    check_fwd_rev(&Case {
        name: "spread",
        x: &x,
        primal: &|x| {
            let (b, c) = split(x);
            vec![spread(&b, c)]
        },
        jvp: &|x, v| {
            let ((b, c), (db, dc)) = (split(x), split(v));
            let (y, t) = spread_fwd(&b, &db, c, dc);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let (b, c) = split(x);
            let mut db: Vec<Body> = b.iter().map(|b| b.zero_like()).collect();
            let (y, dc) = spread_rev(&b, &mut db, c, w[0]);
            (vec![y], bodies_flat(&db, &dc))
        },
        tols: TOLS,
    });
}

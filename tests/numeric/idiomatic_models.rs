//! Issue 47, models written the way the ADBench programs are in Rust (`benches/support/`):
//! slices of structs walked together (`layers.iter().zip(cells.iter_mut())`, with
//! `.enumerate()` and sub-slices), the batched `reverse(width = 2)` of a function taking a
//! struct (a camera's two residual rows in one sweep), `let (s, c) = x.sin_cos();`, and
//! tuples chosen by `if`/`match` (`let (q0, q1) = if .. { (..) } else { (..) };`).
//!
//! Each is checked by finite differences and the dot-product test on the flattened fields
//! (`TOLS`); the generic ones also against num-dual (`nd::directional`, rel 1e-12 of the
//! gradient's size); the batched sweep lane by lane against `_rev` (bit for bit, the
//! contract).

use super::differentiate;
use crate::common::nd::{self, Nd};
use crate::common::*;
use num_dual::Dual64;
use num_traits::Float;
use phidiff::Differentiable;

/// One recurrent layer's weights.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Layer<T> {
    pub w: Vec<T>,
    pub b: T,
}

/// One layer's state.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Cell<T> {
    pub h: Vec<T>,
    pub c: T,
}

/// A stack of small recurrent layers fed a sequence: each layer walked together with its
/// state (`layers.iter().zip(cells.iter_mut())`), then an enumerated zip of a sub-slice
/// with a shorter walk (`layers[1..]` with `&cells[..]`: the zip stops at the shorter), and
/// slices of structs zipped with plain buffers.
#[differentiate(forward, reverse)]
pub fn stacked<T: Float>(layers: &[Layer<T>], cells: &mut [Cell<T>], xs: &[T]) -> T {
    let half = T::from(0.5).unwrap();
    let mut total = T::zero();
    for &x in xs {
        let mut input = x;
        for (layer, cell) in layers.iter().zip(cells.iter_mut()) {
            let mut s = layer.b + cell.c;
            for k in 0..cell.h.len() {
                s = s + layer.w[k] * cell.h[k] * input;
            }
            let out = s.tanh();
            for k in 0..cell.h.len() {
                cell.h[k] = half * cell.h[k] + out * layer.w[k];
            }
            cell.c = cell.c * T::from(0.9).unwrap() + out;
            input = out;
        }
        total = total + input * input;
    }
    for (i, (layer, cell)) in layers[1..].iter().zip(&cells[..]).enumerate() {
        total = total + T::from(i + 1).unwrap() * layer.b * cell.c;
    }
    // Zipped with plain buffers: read by value (`&x`), by reference, written (`iter_mut`).
    for (layer, &x) in layers.iter().zip(xs) {
        total = total + x * layer.b;
    }
    let mut squares = vec![T::zero(); cells.len()];
    for ((cell, sq), x) in cells.iter().zip(squares.iter_mut()).zip(xs.iter()) {
        *sq = cell.c * cell.c * *x;
    }
    for v in &squares {
        total = total + *v;
    }
    total
}

const WIDTH: usize = 2;

/// `L` layers then `L` cells then the sequence, each struct's fields in order.
fn stack_from_flat<T: Float>(x: &[T], l: usize) -> (Vec<Layer<T>>, Vec<Cell<T>>, Vec<T>) {
    let per = WIDTH + 1;
    let layers = (0..l)
        .map(|i| Layer {
            w: x[i * per..i * per + WIDTH].to_vec(),
            b: x[i * per + WIDTH],
        })
        .collect();
    let at = l * per;
    let cells = (0..l)
        .map(|i| Cell {
            h: x[at + i * per..at + i * per + WIDTH].to_vec(),
            c: x[at + i * per + WIDTH],
        })
        .collect();
    (layers, cells, x[2 * at..].to_vec())
}

fn cells_flat(cells: &[Cell<f64>]) -> Vec<f64> {
    cells
        .iter()
        .flat_map(|c| c.h.iter().copied().chain([c.c]))
        .collect()
}

fn layers_flat(layers: &[Layer<f64>]) -> Vec<f64> {
    layers
        .iter()
        .flat_map(|c| c.w.iter().copied().chain([c.b]))
        .collect()
}

pub fn zipped_slices_of_structs() {
    let l = 3;
    let x: Vec<f64> = (0..2 * l * (WIDTH + 1) + 4)
        .map(|i| 0.3 * ((i as f64) * 0.77).sin() + 0.05)
        .collect();
    let primal = |x: &[f64]| {
        let (layers, mut cells, xs) = stack_from_flat(x, l);
        let v = stacked(&layers, &mut cells, &xs);
        let mut out = vec![v];
        out.extend(cells_flat(&cells));
        out
    };
    check_fwd_rev(&Case {
        name: "stacked",
        x: &x,
        primal: &primal,
        jvp: &|x, d| {
            let (layers, mut cells, xs) = stack_from_flat(x, l);
            let (dlayers, mut dcells, dxs) = stack_from_flat(d, l);
            let (v, t) = stacked_fwd(&layers, &dlayers, &mut cells, &mut dcells, &xs, &dxs);
            let (mut y, mut ty) = (vec![v], vec![t]);
            y.extend(cells_flat(&cells));
            ty.extend(cells_flat(&dcells));
            (y, ty)
        },
        vjp: &|x, w| {
            let (layers, mut cells, xs) = stack_from_flat(x, l);
            let mut dlayers: Vec<Layer<f64>> = layers.iter().map(|c| c.zero_like()).collect();
            // The shadow of the final state holds the output weights on entry.
            let (_, mut dcells, _) = stack_from_flat(&[&vec![0.0; l * (WIDTH + 1)][..], &w[1..], &[0.0; 4]].concat(), l);
            let mut dxs = vec![0.0; xs.len()];
            let v = stacked_rev(&layers, &mut dlayers, &mut cells, &mut dcells, &xs, &mut dxs, w[0]);
            let mut y = vec![v];
            y.extend(cells_flat(&cells));
            let mut g = layers_flat(&dlayers);
            g.extend(cells_flat(&dcells));
            g.extend(dxs);
            (y, g)
        },
        tols: TOLS,
    });
    // The value's gradient against num-dual (an independent forward mode).
    let (layers, mut cells, xs) = stack_from_flat(&x, l);
    let mut dlayers: Vec<Layer<f64>> = layers.iter().map(|c| c.zero_like()).collect();
    let mut dcells: Vec<Cell<f64>> = cells.iter().map(|c| c.zero_like()).collect();
    let mut dxs = vec![0.0; xs.len()];
    stacked_rev(&layers, &mut dlayers, &mut cells, &mut dcells, &xs, &mut dxs, 1.0);
    let mut g = layers_flat(&dlayers);
    g.extend(cells_flat(&dcells));
    g.extend(dxs);
    let scale: f64 = g.iter().map(|v| v.abs()).sum();
    for k in 0..x.len() {
        let mut e = vec![0.0; x.len()];
        e[k] = 1.0;
        let (_, d) = nd::directional(
            |p: &[Nd<Dual64>]| {
                let (layers, mut cells, xs) = stack_from_flat(p, l);
                stacked(&layers, &mut cells, &xs)
            },
            &x,
            &e,
        );
        assert_close(&format!("stacked: ∂/∂x[{k}] vs num-dual"), g[k], d, 0.0, 1e-12 * scale);
    }
}

/// A camera as a struct (ADBench's bundle adjustment keeps eleven numbers in a row).
#[derive(phidiff::Differentiable, Clone, Copy, Debug, Default, PartialEq)]
pub struct Camera {
    pub rotation: [f64; 3],
    pub center: [f64; 3],
    pub focal: f64,
    pub principal: [f64; 2],
    pub distortion: f64,
}

impl Camera {
    fn from_flat(x: &[f64]) -> Camera {
        Camera {
            rotation: [x[0], x[1], x[2]],
            center: [x[3], x[4], x[5]],
            focal: x[6],
            principal: [x[7], x[8]],
            distortion: x[9],
        }
    }

    fn flat(&self) -> Vec<f64> {
        let mut v = self.rotation.to_vec();
        v.extend(self.center);
        v.push(self.focal);
        v.extend(self.principal);
        v.push(self.distortion);
        v
    }
}

/// The weighted reprojection residual of point `x` (two rows): a rotation to first order
/// about a small axis, or by Rodrigues' formula (a tuple chosen by `if`, `sin_cos`),
/// perspective division and a radial distortion; both rows in one batched sweep.
#[differentiate(forward, reverse, reverse(width = 2), forward(width = 2), wrt(cam, x, w, err))]
pub fn residual(cam: &Camera, x: &[f64; 3], w: f64, feat: &[f64; 2], err: &mut [f64; 2]) {
    let (p0, p1, p2) = (x[0] - cam.center[0], x[1] - cam.center[1], x[2] - cam.center[2]);
    let r = &cam.rotation;
    let sq = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    let (q0, q1, q2) = if sq > 1e-12 {
        let theta = sq.sqrt();
        let (s, c) = theta.sin_cos();
        let (a0, a1, a2) = (r[0] / theta, r[1] / theta, r[2] / theta);
        let along = (a0 * p0 + a1 * p1 + a2 * p2) * (1.0 - c);
        (
            p0 * c + (a1 * p2 - a2 * p1) * s + a0 * along,
            p1 * c + (a2 * p0 - a0 * p2) * s + a1 * along,
            p2 * c + (a0 * p1 - a1 * p0) * s + a2 * along,
        )
    } else {
        (
            p0 + (r[1] * p2 - r[2] * p1),
            p1 + (r[2] * p0 - r[0] * p2),
            p2 + (r[0] * p1 - r[1] * p0),
        )
    };
    let (u, v) = (q0 / q2, q1 / q2);
    let d = 1.0 + cam.distortion * (u * u + v * v);
    err[0] = w * (cam.focal * d * u + cam.principal[0] - feat[0]);
    err[1] = w * (cam.focal * d * v + cam.principal[1] - feat[1]);
}

pub fn batched_rows_of_a_struct() {
    let feat = [0.3, -0.2];
    let cams = [
        // Rodrigues' branch, then the first-order one.
        [0.1, -0.2, 0.05, 0.5, 0.1, -3.0, 1.3, 0.1, 0.2, 0.01],
        [0.0, 0.0, 0.0, 0.5, 0.1, -3.0, 1.3, 0.1, 0.2, 0.01],
    ];
    for cam0 in cams {
        let x: Vec<f64> = cam0.iter().copied().chain([0.3, 0.2, 1.0, 0.8]).collect();
        let split = |x: &[f64]| (Camera::from_flat(x), [x[10], x[11], x[12]], x[13]);
        let rev = |x: &[f64], w: &[f64]| {
            let (cam, p, wt) = split(x);
            let (mut dcam, mut dp, mut e, mut de) = (Camera::default(), [0.0; 3], [0.0; 2], [w[0], w[1]]);
            let dw = residual_rev(&cam, &mut dcam, &p, &mut dp, wt, &feat, &mut e, &mut de);
            let mut g = dcam.flat();
            g.extend(dp);
            g.push(dw);
            (e.to_vec(), g)
        };
        check_fwd_rev(&Case {
            name: "residual",
            x: &x,
            primal: &|x| {
                let (cam, p, wt) = split(x);
                let mut e = [0.0; 2];
                residual(&cam, &p, wt, &feat, &mut e);
                e.to_vec()
            },
            jvp: &|x, d| {
                let ((cam, p, wt), (dcam, dp, dw)) = (split(x), split(d));
                let (mut e, mut de) = ([0.0; 2], [0.0; 2]);
                residual_fwd(&cam, &dcam, &p, &dp, wt, dw, &feat, &mut e, &mut de);
                (e.to_vec(), de.to_vec())
            },
            vjp: &rev,
            tols: TOLS,
        });
        // Both rows in one sweep: lane l is `_rev` with lane l's seed, bit for bit, and the
        // shadows accumulate lane by lane.
        let (cam, p, wt) = split(&x);
        let mut dcam = [Camera::default(), Camera { focal: 1.0, ..Camera::default() }];
        let (mut dp0, mut dp1) = ([0.0; 3], [0.5; 3]);
        let (mut e, mut de0, mut de1) = ([0.0; 2], [1.0, 0.0], [0.0, 1.0]);
        let [dc0, dc1] = &mut dcam;
        let dw = residual_rev2(&cam, [dc0, dc1], &p, [&mut dp0, &mut dp1], wt, &feat, &mut e, [&mut de0, &mut de1]);
        for (lane, seed) in [[1.0, 0.0], [0.0, 1.0]].iter().enumerate() {
            let (_, g) = rev(&x, seed);
            let mut want = g;
            if lane == 1 {
                want[6] += 1.0;
                for v in &mut want[10..13] {
                    *v += 0.5;
                }
            }
            let dp = [dp0, dp1][lane];
            let mut got = dcam[lane].flat();
            got.extend(dp);
            got.push(dw[lane]);
            assert_eq!(got, want, "residual_rev2: lane {lane}");
        }
        // Two tangents in one sweep: lane l is `_fwd` with lane l's tangents, bit for bit.
        let dirs = [
            Camera { focal: 1.0, rotation: [0.3, 0.0, -0.2], ..Camera::default() },
            Camera { center: [0.1, 0.5, 0.0], distortion: 2.0, ..Camera::default() },
        ];
        let (dps, dws) = ([[0.2, 0.0, 0.1], [0.0, -0.4, 0.0]], [0.5, 0.0]);
        let (mut e2, mut t0, mut t1) = ([0.0; 2], [0.0; 2], [0.0; 2]);
        residual_fwd2(&cam, [&dirs[0], &dirs[1]], &p, [&dps[0], &dps[1]], wt, dws, &feat, &mut e2, [&mut t0, &mut t1]);
        for (lane, t) in [t0, t1].iter().enumerate() {
            let (mut e1, mut t1) = ([0.0; 2], [0.0; 2]);
            residual_fwd(&cam, &dirs[lane], &p, &dps[lane], wt, dws[lane], &feat, &mut e1, &mut t1);
            assert_eq!((e2, *t), (e1, t1), "residual_fwd2: lane {lane}");
        }
    }
}

/// A rotation written with `sin_cos` and quadrant logic choosing a pair by `match` inside
/// `if` (a diverging arm, a branch reading the names the pattern rebinds).
#[differentiate(forward, reverse)]
pub fn turned<T: Float>(x: &[T], quadrant: usize) -> T {
    let (s, c) = x[0].sin_cos();
    let (a, b) = (x[1], x[2]);
    let (a, b) = if quadrant == 0 {
        (c * a - s * b, s * a + c * b)
    } else {
        match quadrant {
            1 => (b, a),
            2 => {
                let t = a * b;
                (t, -a)
            }
            3 => return a * b * s,
            _ => (a, b),
        }
    };
    a * a + T::from(3.0).unwrap() * b + s * c
}

pub fn tuples_chosen_by_branches() {
    let x = [0.7, 1.3, -0.4];
    for quadrant in 0..5 {
        let f = |x: &[f64]| turned(x, quadrant);
        check_generic(&Generic {
            name: "turned",
            x: &x,
            f: &f,
            f_dual: &|x| turned(x, quadrant),
            f_hyper: &|x| turned(x, quadrant),
            grad: &|x| turned_grad(x, quadrant),
            fwd: &|x, d| turned_fwd(x, d, quadrant),
            rev: &|x, seed| {
                let mut g = vec![0.0; x.len()];
                let v = turned_rev(x, &mut g, quadrant, seed);
                (v, g)
            },
            hvp: &|x, v| {
                let xd: Vec<phidiff::Dual<f64>> =
                    x.iter().zip(v).map(|(&a, &b)| phidiff::Dual { re: a, eps: b }).collect();
                let mut g = vec![phidiff::Dual::constant(0.0); x.len()];
                turned_rev(&xd, &mut g, quadrant, phidiff::Dual::constant(1.0));
                g.iter().map(|d| d.eps).collect()
            },
        });
    }
}

/// A swing's state, updated in place.
#[derive(phidiff::Differentiable, Clone, Debug, Default, PartialEq)]
pub struct Swing {
    pub angle: f64,
    pub speed: f64,
    pub trail: Vec<f64>,
}

/// A `&mut` struct in a batched sweep: its float fields are one-element lanes, its `Vec`
/// field a buffer per lane.
#[differentiate(forward, reverse, reverse(width = 2), forward(width = 2))]
pub fn swing(s: &mut Swing, k: f64) {
    s.angle += k * s.speed.sin();
    s.speed -= k * s.angle;
    s.trail[0] *= s.angle;
    s.trail[1] = s.trail[0] + s.speed * s.speed;
}

pub fn batched_mut_struct() {
    let from = |x: &[f64]| Swing {
        angle: x[0],
        speed: x[1],
        trail: x[2..4].to_vec(),
    };
    let flat = |s: &Swing| vec![s.angle, s.speed, s.trail[0], s.trail[1]];
    let rev = |x: &[f64], w: &[f64]| {
        let (mut s, mut ds) = (from(x), from(w));
        let dk = swing_rev(&mut s, &mut ds, x[4]);
        let mut g = flat(&ds);
        g.push(dk);
        (flat(&s), g)
    };
    let x = [0.4, -0.7, 1.1, 0.3, 0.25];
    check_fwd_rev(&Case {
        name: "swing",
        x: &x,
        primal: &|x| {
            let mut s = from(x);
            swing(&mut s, x[4]);
            flat(&s)
        },
        jvp: &|x, d| {
            let (mut s, mut ds) = (from(x), from(d));
            swing_fwd(&mut s, &mut ds, x[4], d[4]);
            (flat(&s), flat(&ds))
        },
        vjp: &rev,
        tols: TOLS,
    });
    let seeds = [[1.0, 0.5, -0.3, 0.2], [0.0, -1.0, 0.7, 0.4]];
    let mut s = from(&x);
    let mut ds = [from(&seeds[0]), from(&seeds[1])];
    let [d0, d1] = &mut ds;
    let dk = swing_rev2(&mut s, [d0, d1], x[4]);
    for lane in 0..2 {
        let (y, g) = rev(&x, &seeds[lane]);
        assert_eq!(flat(&s), y, "swing_rev2: the final state");
        let mut got = flat(&ds[lane]);
        got.push(dk[lane]);
        assert_eq!(got, g, "swing_rev2: lane {lane}");
    }
    // Tangents of a `&mut` struct, two per sweep, each lane updated in place as `_fwd` does.
    let mut s2 = from(&x);
    let mut dirs = [from(&seeds[0]), from(&seeds[1])];
    let [t0, t1] = &mut dirs;
    swing_fwd2(&mut s2, [t0, t1], x[4], [0.5, -1.0]);
    for (lane, dk) in [0.5, -1.0].iter().enumerate() {
        let (mut s1, mut t1) = (from(&x), from(&seeds[lane]));
        swing_fwd(&mut s1, &mut t1, x[4], *dk);
        assert_eq!((&s2, &dirs[lane]), (&s1, &t1), "swing_fwd2: lane {lane}");
    }
}

/// A potential as a trait, implemented by a model struct.
pub trait Potential<T> {
    fn energy(&self, x: &[T]) -> T;
    fn stretch(&self, d: T) -> T;
    fn stiffness(&self) -> T;
}

/// A chain of springs of stiffness `k` with rest positions `rest`.
#[derive(phidiff::Differentiable, Clone, Debug)]
pub struct Springs<T> {
    pub k: T,
    pub rest: Vec<T>,
}

/// The trait's methods differentiated where they are: the derivatives (`energy_rev`, ..)
/// land in an inherent impl of `Springs` beside the trait impl; `energy` calls the trait
/// method `stretch` of the same impl, and `stiffness` is not differentiated.
#[differentiate]
impl<T: Float> Potential<T> for Springs<T> {
    #[differentiate(forward, reverse)]
    fn energy(&self, x: &[T]) -> T {
        let mut e = T::zero();
        for (&xi, &r) in x.iter().zip(&self.rest) {
            e = e + self.stretch(xi - r);
        }
        T::from(0.5).unwrap() * self.k * e
    }

    #[differentiate(forward, reverse)]
    fn stretch(&self, d: T) -> T {
        d * d + T::from(0.1).unwrap() * self.k * d * d * d * d
    }

    fn stiffness(&self) -> T {
        self.k
    }
}

/// The energy through the trait, as generic code calls it.
fn energy_of<T, P: Potential<T>>(p: &P, x: &[T]) -> T {
    p.energy(x)
}

pub fn trait_impls() {
    // Flat: k, two rest positions, two positions.
    let split = |x: &[f64]| {
        (
            Springs {
                k: x[0],
                rest: x[1..3].to_vec(),
            },
            x[3..5].to_vec(),
        )
    };
    let x = [1.3, 0.2, -0.4, 0.9, 0.1];
    assert_eq!(split(&x).0.stiffness(), 1.3);
    fn nd_split<D: Float>(x: &[D]) -> (Springs<D>, Vec<D>) {
        (
            Springs {
                k: x[0],
                rest: x[1..3].to_vec(),
            },
            x[3..5].to_vec(),
        )
    }
    check_generic(&Generic {
        name: "Springs::energy",
        x: &x,
        f: &|x| {
            let (s, p) = split(x);
            energy_of(&s, &p)
        },
        f_dual: &|x| {
            let (s, p) = nd_split(x);
            energy_of(&s, &p)
        },
        f_hyper: &|x| {
            let (s, p) = nd_split(x);
            energy_of(&s, &p)
        },
        grad: &|x| {
            let (s, p) = split(x);
            let (v, (ds, dp)) = s.energy_grad(&p);
            let mut g = vec![ds.k];
            g.extend(ds.rest);
            g.extend(dp);
            (v, g)
        },
        fwd: &|x, d| {
            let ((s, p), (ds, dp)) = (split(x), split(d));
            s.energy_fwd(&ds, &p, &dp)
        },
        rev: &|x, seed| {
            let (s, p) = split(x);
            let (mut ds, mut dp) = (s.zero_like(), vec![0.0; 2]);
            let v = s.energy_rev(&mut ds, &p, &mut dp, seed);
            let mut g = vec![ds.k];
            g.extend(ds.rest);
            g.extend(dp);
            (v, g)
        },
        hvp: &|x, v| {
            let xd: Vec<phidiff::Dual<f64>> =
                x.iter().zip(v).map(|(&a, &b)| phidiff::Dual { re: a, eps: b }).collect();
            let (s, p) = nd_split(&xd);
            let (mut ds, mut dp) = (s.zero_like(), vec![phidiff::Dual::constant(0.0); 2]);
            s.energy_rev(&mut ds, &p, &mut dp, phidiff::Dual::constant(1.0));
            let mut g = vec![ds.k.eps];
            g.extend(ds.rest.iter().map(|d| d.eps));
            g.extend(dp.iter().map(|d| d.eps));
            g
        },
    });
}

/// A state returned by value.
#[derive(phidiff::Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub energy: f64,
}

impl Phase {
    fn from_flat(x: &[f64]) -> Phase {
        Phase {
            pos: [x[0], x[1]],
            vel: [x[2], x[3]],
            energy: x[4],
        }
    }

    fn flat(&self) -> Vec<f64> {
        vec![self.pos[0], self.pos[1], self.vel[0], self.vel[1], self.energy]
    }
}

/// A struct result (`-> Phase`): each field an output; array fields from a local array
/// and an array literal, an early `return` with update syntax (`..*s`).
#[differentiate(forward, reverse)]
pub fn stepped(s: &Phase, dt: f64, k: f64) -> Phase {
    let mut vel = [0.0; 2];
    for d in 0..2 {
        vel[d] = s.vel[d] - dt * k * s.pos[d].sin();
    }
    let pos = [s.pos[0] + dt * vel[0], s.pos[1] + dt * vel[1]];
    let e = 0.5 * (vel[0] * vel[0] + vel[1] * vel[1]) + k * (2.0 - pos[0].cos() - pos[1].cos());
    if e > 100.0 {
        return Phase { energy: e, ..*s };
    }
    Phase { pos, vel, energy: e }
}

/// A point in polar form.
#[derive(phidiff::Differentiable, Clone, Debug, PartialEq)]
pub struct Polar<T> {
    pub r: T,
    pub theta: T,
}

#[differentiate]
impl<T: Float> Polar<T> {
    /// A method returning `Self`, generic over the float type.
    #[differentiate(forward, reverse)]
    pub fn warped(&self, by: T) -> Self {
        let (s, c) = by.sin_cos();
        Polar {
            r: self.r * (c + s * s * self.theta),
            theta: self.theta + by * self.r,
        }
    }
}

pub fn struct_results() {
    // x: the phase (5), dt, k; outputs: the new phase. Both paths (the early return at a
    // large energy).
    for scale in [1.0, 80.0] {
        let x = [0.4 * scale, -0.3, 0.2 * scale, 0.5, 0.0, 0.1, 1.5];
        let early = stepped(&Phase::from_flat(&x), x[5], x[6]).pos == [x[0], x[1]];
        assert_eq!(early, scale > 1.0, "stepped: the path taken");
        check_fwd_rev(&Case {
            name: "stepped",
            x: &x,
            primal: &|x| stepped(&Phase::from_flat(x), x[5], x[6]).flat(),
            jvp: &|x, d| {
                let (v, t) = stepped_fwd(
                    &Phase::from_flat(x),
                    &Phase::from_flat(d),
                    x[5],
                    d[5],
                    x[6],
                    d[6],
                );
                (v.flat(), t.flat())
            },
            vjp: &|x, w| {
                let s = Phase::from_flat(x);
                let mut ds = s.zero_like();
                let (v, ddt, dk) = stepped_rev(&s, &mut ds, x[5], x[6], Phase::from_flat(w));
                let mut g = ds.flat();
                g.extend([ddt, dk]);
                (v.flat(), g)
            },
            tols: TOLS,
        });
    }
    // The generic method against num-dual, output by output.
    let x = [1.3, 0.4, 0.7];
    let polar = |x: &[f64]| Polar { r: x[0], theta: x[1] };
    check_fwd_rev(&Case {
        name: "Polar::warped",
        x: &x,
        primal: &|x| {
            let p = polar(x).warped(x[2]);
            vec![p.r, p.theta]
        },
        jvp: &|x, d| {
            let (v, t) = polar(x).warped_fwd(&polar(d), x[2], d[2]);
            (vec![v.r, v.theta], vec![t.r, t.theta])
        },
        vjp: &|x, w| {
            let p = polar(x);
            let mut dp = p.zero_like();
            let (v, dby) = p.warped_rev(&mut dp, x[2], Polar { r: w[0], theta: w[1] });
            (vec![v.r, v.theta], vec![dp.r, dp.theta, dby])
        },
        tols: TOLS,
    });
    for (out, seed) in [[1.0, 0.0], [0.0, 1.0]].iter().enumerate() {
        let p = polar(&x);
        let mut dp = p.zero_like();
        let (_, dby) = p.warped_rev(&mut dp, x[2], Polar { r: seed[0], theta: seed[1] });
        let g = [dp.r, dp.theta, dby];
        for k in 0..3 {
            let mut e = [0.0; 3];
            e[k] = 1.0;
            let (_, d) = nd::directional(
                |v: &[Nd<Dual64>]| {
                    let q = Polar { r: v[0], theta: v[1] }.warped(v[2]);
                    if out == 0 {
                        q.r
                    } else {
                        q.theta
                    }
                },
                &x,
                &e,
            );
            assert_close(&format!("Polar::warped: output {out}, ∂/∂x[{k}] vs num-dual"), g[k], d, 0.0, 1e-13);
        }
    }
}

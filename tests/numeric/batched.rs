//! Batched reverse mode, `reverse(width = N)`: N seeds in one sweep. Each function is
//! checked lane by lane: its `_fwd` against finite differences, and every lane of the
//! batched function against `_fwd` with the dot-product test while the other lanes carry
//! other seeds (a lane that read another lane's adjoints fails it). Every lane must also
//! equal the scalar `_rev` run with that lane's seed, bit for bit: the lanes repeat the
//! scalar sweep's adjoint arithmetic in the same order.
//!
//! Batched forward mode, `forward(width = N)`: N tangents in one sweep, checked alike
//! (`check_forward_lanes`): every lane against finite differences and, with the
//! dot-product test, against `_rev`, while the other lanes carry other tangents; and bit
//! for bit against the scalar `_fwd` with that lane's tangent.

use super::differentiate;
use crate::common::*;
use phidiff::Float;

/// A local buffer, two loops (the second carries a value), a scalar active and a seed.
#[differentiate(forward, reverse, reverse(width = 3), forward(width = 3))]
pub fn looped<T: Float>(x: &[T], k: T) -> T {
    let n = x.len();
    let mut s = T::zero();
    let mut v = vec![T::zero(); n];
    for i in 0..n {
        v[i] = (x[i] * k).sin();
        s += v[i] * x[i];
    }
    let mut t = T::one();
    for i in 0..n {
        t = t * T::from(0.5).unwrap() + v[i] * s;
    }
    t + s * k
}

/// Local buffers whose lanes the batched modes store interleaved (`Vec<[T; N]>`): one
/// allocated in a loop (each pass), filled with a nonzero constant, sized by another's
/// `len()`, written at a shifted index and read at two; one written whole each pass.
#[differentiate(forward, reverse, reverse(width = 3), forward(width = 4))]
pub fn smoothed_passes(x: &[f64], k: f64) -> f64 {
    let n = x.len();
    let mut s = vec![0.0; n];
    for i in 0..n {
        s[i] = (k * x[i]).sin();
    }
    let mut e = 0.0;
    for _pass in 0..2 {
        let mut t = vec![0.25; s.len() + 1];
        for i in 0..n {
            t[i + 1] += s[i] * x[i];
        }
        for i in 0..n {
            s[i] = 0.5 * (t[i] + t[i + 1]);
            e += s[i] * s[i];
        }
    }
    e * k
}

/// Cube roots by Newton's method, element by element, until the step is small: a
/// `while` whose trip count depends on the data, writing an output slice.
#[differentiate(forward, reverse, reverse(width = 2), forward(width = 2))]
pub fn cube_roots(a: &[f64], out: &mut [f64]) {
    for i in 0..a.len() {
        let mut r = 1.0 + a[i] / 3.0;
        let mut step: f64 = 1.0;
        while step.abs() > 1e-14 {
            let next = r - (r * r * r - a[i]) / (3.0 * r * r);
            step = next - r;
            r = next;
        }
        out[i] = r;
    }
}

/// Each row's largest entry, squared and weighted: a max reduction per row, reversed
/// through the entry that won (`reverse/extremum.rs`, a search that stops there), in
/// every lane.
#[differentiate(forward, reverse, reverse(width = 2), forward(width = 2))]
pub fn weighted_row_maxima(a: &[f64], w: &[f64]) -> f64 {
    let n = a.len() / w.len();
    let mut s = 0.0;
    for r in 0..w.len() {
        let mut m = a[r * n];
        for j in 1..n {
            m = m.max(a[r * n + j]);
        }
        s += w[r] * m * m;
    }
    s
}

/// Rows of a matrix (`&[Vec<f64>]`), a branch per entry and a running value per row.
#[differentiate(forward, reverse, reverse(width = 2), forward(width = 2))]
pub fn rows_energy(a: &[Vec<f64>], x: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..a.len() {
        let mut acc = 0.0;
        for j in 0..x.len() {
            let p = a[i][j] * x[j];
            acc = if p > 0.0 { acc + p * p } else { acc - 0.5 * p };
        }
        e += acc.sqrt() * (i as f64 + 1.0);
    }
    e
}

/// A state scaled and normalized in place: the shadow of `v` holds the adjoint of its
/// final value on entry and of its initial value on exit; `scale`'s adjoints are
/// returned, one per lane.
#[differentiate(forward, reverse, reverse(width = 4), forward(width = 3))]
pub fn normalize_in_place(v: &mut [f64], scale: f64) {
    let mut norm = 0.0;
    for i in 0..v.len() {
        v[i] *= scale;
        norm += v[i] * v[i];
    }
    let norm = norm.sqrt();
    for i in 0..v.len() {
        v[i] /= norm;
    }
}

/// A helper with a scalar and a slice argument, called from a batched function.
#[differentiate(forward, reverse)]
pub fn bump(a: f64, v: &[f64]) -> f64 {
    (a * v[0]).sin() + v[1] * a
}

/// Calls of another function's derivatives: one `_rev` call per lane.
#[differentiate(forward, reverse, reverse(width = 2))]
pub fn calls_a_helper(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    let mut pair = vec![0.0; 2];
    for i in 0..x.len() - 1 {
        pair[0] = x[i];
        pair[1] = x[i + 1];
        s += bump(x[i] * k, &pair);
    }
    s * s
}

/// A seed of lane `lane` that is not the one under test (entry `k`).
fn other_seed(lane: usize, k: usize) -> f64 {
    0.37 * (lane as f64 + 1.0) - 0.11 * k as f64
}

/// The `width` lanes of a batched call that tests lane `lane` with `v`: the other lanes
/// carry other seeds or tangents of `v`'s length.
fn around(lane: usize, width: usize, v: &[f64]) -> Vec<Vec<f64>> {
    (0..width)
        .map(|m| {
            if m == lane {
                v.to_vec()
            } else {
                (0..v.len()).map(|k| other_seed(m, k)).collect()
            }
        })
        .collect()
}

/// `(x, v) ↦ (y, w)`: a scalar sweep, `_fwd` (`w = J v`) or `_rev` (`w = Jᵀ v`, shadows
/// from zero).
type Sweep = Box<dyn Fn(&[f64], &[f64]) -> (Vec<f64>, Vec<f64>)>;

/// A function under test on its flattened inputs: the point, the primal and the scalar
/// `_fwd` and `_rev`. Its reverse and forward lane checks share it.
struct Scalar {
    name: &'static str,
    x: Vec<f64>,
    primal: Box<dyn Fn(&[f64]) -> Vec<f64>>,
    jvp: Sweep,
    vjp: Sweep,
}

/// `(x, [v per lane]) ↦ (y, [w per lane])` through a batched function: seeds to adjoints
/// (`reverse(width = N)`) or tangents to tangents (`forward(width = N)`).
type Batched<'a> = &'a dyn Fn(&[f64], &[Vec<f64>]) -> (Vec<f64>, Vec<Vec<f64>>);

/// Checks every lane of a batched reverse function of `f` (see the file's docs).
fn check_lanes(f: &Scalar, width: usize, batched: Batched) {
    let (name, x) = (f.name, &f.x[..]);
    let n_out = (f.primal)(x).len();
    for lane in 0..width {
        let vjp = |x: &[f64], w: &[f64]| {
            let (y, adjoints) = batched(x, &around(lane, width, w));
            assert_eq!(adjoints.len(), width, "{name}: lanes");
            (y, adjoints[lane].clone())
        };
        check_fwd_rev(&Case {
            name: &format!("{name}, lane {lane} of {width}"),
            x,
            primal: &*f.primal,
            jvp: &*f.jvp,
            vjp: &vjp,
            tols: TOLS,
        });
    }
    let seeds: Vec<Vec<f64>> = (0..width)
        .map(|m| phidiff::check::random_vector(3000 + m as u64, n_out))
        .collect();
    let (y, adjoints) = batched(x, &seeds);
    for (lane, seed) in seeds.iter().enumerate() {
        let (ys, adjoint) = (f.vjp)(x, seed);
        assert_eq!(y, ys, "{name}: value of the batched and the scalar sweep");
        assert_eq!(
            adjoints[lane], adjoint,
            "{name}: lane {lane} differs from the scalar sweep"
        );
    }
}

/// Checks every lane of a batched forward function of `f` (see the file's docs).
fn check_forward_lanes(f: &Scalar, width: usize, batched: Batched) {
    let (name, x) = (f.name, &f.x[..]);
    for lane in 0..width {
        let jvp = |x: &[f64], v: &[f64]| {
            let (y, ys) = batched(x, &around(lane, width, v));
            assert_eq!(ys.len(), width, "{name}: lanes");
            (y, ys[lane].clone())
        };
        check_fwd_rev(&Case {
            name: &format!("{name}, forward lane {lane} of {width}"),
            x,
            primal: &*f.primal,
            jvp: &jvp,
            vjp: &*f.vjp,
            tols: TOLS,
        });
    }
    let tangents: Vec<Vec<f64>> = (0..width)
        .map(|m| phidiff::check::random_vector(4000 + m as u64, x.len()))
        .collect();
    let (y, ys) = batched(x, &tangents);
    for (lane, v) in tangents.iter().enumerate() {
        let (y1, dy) = (f.jvp)(x, v);
        assert_eq!(y, y1, "{name}: value of the batched and the scalar forward sweep");
        assert_eq!(ys[lane], dy, "{name}: forward lane {lane} differs from the scalar sweep");
    }
}

/// `looped` at 7 points; input `(x, k)`.
fn looped_scalar() -> Scalar {
    let x0: Vec<f64> = (0..7).map(|i| 0.3 * i as f64 - 0.8).collect();
    let n = x0.len();
    Scalar {
        name: "looped",
        x: cat(&[&x0, &[1.3]]),
        primal: Box::new(move |x: &[f64]| vec![looped(&x[..n], x[n])]),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (y, dy) = looped_fwd(&x[..n], &dx[..n], x[n], dx[n]);
            (vec![y], vec![dy])
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let mut dx = zeros(n);
            let (y, dk) = looped_rev(&x[..n], &mut dx, x[n], w[0]);
            (vec![y], cat(&[&dx, &[dk]]))
        }),
    }
}

pub fn looped_lanes() {
    let f = looped_scalar();
    let n = f.x.len() - 1;
    check_lanes(&f, 3, &|x, w| {
        let mut d = [zeros(n), zeros(n), zeros(n)];
        let [d0, d1, d2] = &mut d;
        let (y, dk) = looped_rev3(&x[..n], [d0, d1, d2], x[n], [w[0][0], w[1][0], w[2][0]]);
        let lanes = (0..3).map(|l| cat(&[&d[l], &[dk[l]]])).collect();
        (vec![y], lanes)
    });
}

pub fn looped_forward_lanes() {
    let f = looped_scalar();
    let n = f.x.len() - 1;
    check_forward_lanes(&f, 3, &|x, v| {
        let (y, dy) = looped_fwd3(
            &x[..n],
            [&v[0][..n], &v[1][..n], &v[2][..n]],
            x[n],
            [v[0][n], v[1][n], v[2][n]],
        );
        (vec![y], dy.iter().map(|d| vec![*d]).collect())
    });
}

/// `smoothed_passes` at 6 points; input `(x, k)`.
fn smoothed_passes_scalar() -> Scalar {
    let x0: Vec<f64> = (0..6).map(|i| 0.4 * i as f64 - 0.9).collect();
    let n = x0.len();
    Scalar {
        name: "smoothed_passes",
        x: cat(&[&x0, &[0.7]]),
        primal: Box::new(move |x: &[f64]| vec![smoothed_passes(&x[..n], x[n])]),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (y, dy) = smoothed_passes_fwd(&x[..n], &dx[..n], x[n], dx[n]);
            (vec![y], vec![dy])
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let mut dx = zeros(n);
            let (y, dk) = smoothed_passes_rev(&x[..n], &mut dx, x[n], w[0]);
            (vec![y], cat(&[&dx, &[dk]]))
        }),
    }
}

pub fn smoothed_passes_lanes() {
    let f = smoothed_passes_scalar();
    let n = f.x.len() - 1;
    check_lanes(&f, 3, &|x, w| {
        let mut d = [zeros(n), zeros(n), zeros(n)];
        let [d0, d1, d2] = &mut d;
        let (y, dk) =
            smoothed_passes_rev3(&x[..n], [d0, d1, d2], x[n], [w[0][0], w[1][0], w[2][0]]);
        let lanes = (0..3).map(|l| cat(&[&d[l], &[dk[l]]])).collect();
        (vec![y], lanes)
    });
}

pub fn smoothed_passes_forward_lanes() {
    let f = smoothed_passes_scalar();
    let n = f.x.len() - 1;
    check_forward_lanes(&f, 4, &|x, v| {
        let (y, dy) = smoothed_passes_fwd4(
            &x[..n],
            std::array::from_fn(|l| &v[l][..n]),
            x[n],
            std::array::from_fn(|l| v[l][n]),
        );
        (vec![y], dy.iter().map(|d| vec![*d]).collect())
    });
}

/// `weighted_row_maxima`'s matrix: rows and columns.
const MAXIMA_SHAPE: (usize, usize) = (3, 4);

/// `weighted_row_maxima` of a 3 × 4 matrix; input `(a, w)`. Rows 0 and 2 are won by a
/// later entry, row 1 by its first.
fn weighted_row_maxima_scalar() -> Scalar {
    let (rows, cols) = MAXIMA_SHAPE;
    let a = [0.2, 1.1, -0.4, 0.7, 1.9, 0.3, -1.2, 1.4, -0.6, -0.9, 0.8, 0.1];
    let m = rows * cols;
    Scalar {
        name: "weighted_row_maxima",
        x: cat(&[&a, &[0.5, -1.3, 2.1]]),
        primal: Box::new(move |x: &[f64]| vec![weighted_row_maxima(&x[..m], &x[m..])]),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (y, dy) = weighted_row_maxima_fwd(&x[..m], &dx[..m], &x[m..], &dx[m..]);
            (vec![y], vec![dy])
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let (mut da, mut dw) = (zeros(m), zeros(rows));
            let y = weighted_row_maxima_rev(&x[..m], &mut da, &x[m..], &mut dw, w[0]);
            (vec![y], cat(&[&da, &dw]))
        }),
    }
}

pub fn weighted_row_maxima_lanes() {
    let f = weighted_row_maxima_scalar();
    let (rows, cols) = MAXIMA_SHAPE;
    let m = rows * cols;
    check_lanes(&f, 2, &|x, w| {
        let mut da = [zeros(m), zeros(m)];
        let mut dw = [zeros(rows), zeros(rows)];
        let [da0, da1] = &mut da;
        let [dw0, dw1] = &mut dw;
        let y = weighted_row_maxima_rev2(
            &x[..m],
            [da0, da1],
            &x[m..],
            [dw0, dw1],
            [w[0][0], w[1][0]],
        );
        let lanes = (0..2).map(|l| cat(&[&da[l], &dw[l]])).collect();
        (vec![y], lanes)
    });
}

pub fn weighted_row_maxima_forward_lanes() {
    let f = weighted_row_maxima_scalar();
    let m = MAXIMA_SHAPE.0 * MAXIMA_SHAPE.1;
    check_forward_lanes(&f, 2, &|x, v| {
        let (y, dy) = weighted_row_maxima_fwd2(
            &x[..m],
            [&v[0][..m], &v[1][..m]],
            &x[m..],
            [&v[0][m..], &v[1][m..]],
        );
        (vec![y], dy.iter().map(|d| vec![*d]).collect())
    });
}

/// `cube_roots` of 5 numbers; input `(a, out)` (`out` overwritten), output the final `out`.
fn cube_roots_scalar() -> Scalar {
    let a = [0.5, 2.0, 8.0, 27.5, 0.1];
    let n = a.len();
    Scalar {
        name: "cube_roots",
        x: cat(&[&a, &[0.0; 5]]),
        primal: Box::new(move |x: &[f64]| {
            let mut out = x[n..].to_vec();
            cube_roots(&x[..n], &mut out);
            out
        }),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (mut out, mut dout) = (x[n..].to_vec(), dx[n..].to_vec());
            cube_roots_fwd(&x[..n], &dx[..n], &mut out, &mut dout);
            (out, dout)
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let (mut da, mut out, mut dout) = (zeros(n), x[n..].to_vec(), w.to_vec());
            cube_roots_rev(&x[..n], &mut da, &mut out, &mut dout);
            (out, cat(&[&da, &dout]))
        }),
    }
}

pub fn cube_roots_lanes() {
    let f = cube_roots_scalar();
    let n = f.x.len() / 2;
    check_lanes(&f, 2, &|x, w| {
        let mut da = [zeros(n), zeros(n)];
        let mut dout = [w[0].clone(), w[1].clone()];
        let mut out = x[n..].to_vec();
        let [da0, da1] = &mut da;
        let [do0, do1] = &mut dout;
        cube_roots_rev2(&x[..n], [da0, da1], &mut out, [do0, do1]);
        let lanes = (0..2).map(|l| cat(&[&da[l], &dout[l]])).collect();
        (out, lanes)
    });
}

pub fn cube_roots_forward_lanes() {
    let f = cube_roots_scalar();
    let n = f.x.len() / 2;
    check_forward_lanes(&f, 2, &|x, v| {
        let mut out = x[n..].to_vec();
        let mut dout = [v[0][n..].to_vec(), v[1][n..].to_vec()];
        let [d0, d1] = &mut dout;
        cube_roots_fwd2(&x[..n], [&v[0][..n], &v[1][..n]], &mut out, [d0, d1]);
        (out, dout.to_vec())
    });
}

/// `rows_energy`'s matrix: rows and columns.
const ENERGY_SHAPE: (usize, usize) = (3, 4);

/// `rows_energy` of a 3 × 4 matrix given as rows; input `(a flattened, x)`.
fn rows_energy_scalar() -> Scalar {
    let (m, n) = ENERGY_SHAPE;
    let a: Vec<f64> = (0..m * n)
        .map(|k| ((k * 7 % 11) as f64 - 4.5) * 0.3)
        .collect();
    Scalar {
        name: "rows_energy",
        x: cat(&[&a, &[0.9, -0.4, 1.7, 0.6]]),
        primal: Box::new(move |x: &[f64]| {
            vec![rows_energy(&to_rows(&x[..m * n], n), &x[m * n..])]
        }),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (a, da) = (to_rows(&x[..m * n], n), to_rows(&dx[..m * n], n));
            let (y, dy) = rows_energy_fwd(&a, &da, &x[m * n..], &dx[m * n..]);
            (vec![y], vec![dy])
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let (mut da, mut dx) = (vec![zeros(n); m], zeros(n));
            let a = to_rows(&x[..m * n], n);
            let y = rows_energy_rev(&a, &mut da, &x[m * n..], &mut dx, w[0]);
            (vec![y], cat(&[&from_rows(&da), &dx]))
        }),
    }
}

pub fn rows_energy_lanes() {
    let f = rows_energy_scalar();
    let (m, n) = ENERGY_SHAPE;
    check_lanes(&f, 2, &|x, w| {
        let mut da = [vec![zeros(n); m], vec![zeros(n); m]];
        let mut dx = [zeros(n), zeros(n)];
        let [da0, da1] = &mut da;
        let [dx0, dx1] = &mut dx;
        let y = rows_energy_rev2(
            &to_rows(&x[..m * n], n),
            [da0, da1],
            &x[m * n..],
            [dx0, dx1],
            [w[0][0], w[1][0]],
        );
        let lanes = (0..2).map(|l| cat(&[&from_rows(&da[l]), &dx[l]])).collect();
        (vec![y], lanes)
    });
}

pub fn rows_energy_forward_lanes() {
    let f = rows_energy_scalar();
    let (m, n) = ENERGY_SHAPE;
    check_forward_lanes(&f, 2, &|x, v| {
        let (r0, r1) = (to_rows(&v[0][..m * n], n), to_rows(&v[1][..m * n], n));
        let (y, dy) = rows_energy_fwd2(
            &to_rows(&x[..m * n], n),
            [&r0, &r1],
            &x[m * n..],
            [&v[0][m * n..], &v[1][m * n..]],
        );
        (vec![y], dy.iter().map(|d| vec![*d]).collect())
    });
}

/// `normalize_in_place` of 5 entries; input `(v, scale)`, output the final `v`.
fn normalize_in_place_scalar() -> Scalar {
    let v0 = [0.4, -1.2, 2.5, 0.7, -0.3];
    let n = v0.len();
    Scalar {
        name: "normalize_in_place",
        x: cat(&[&v0, &[1.7]]),
        primal: Box::new(move |x: &[f64]| {
            let mut v = x[..n].to_vec();
            normalize_in_place(&mut v, x[n]);
            v
        }),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (mut v, mut dv) = (x[..n].to_vec(), dx[..n].to_vec());
            normalize_in_place_fwd(&mut v, &mut dv, x[n], dx[n]);
            (v, dv)
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let (mut v, mut dv) = (x[..n].to_vec(), w.to_vec());
            let ds = normalize_in_place_rev(&mut v, &mut dv, x[n]);
            (v, cat(&[&dv, &[ds]]))
        }),
    }
}

pub fn normalize_in_place_lanes() {
    let f = normalize_in_place_scalar();
    let n = f.x.len() - 1;
    check_lanes(&f, 4, &|x, w| {
        let mut v = x[..n].to_vec();
        let mut dv = [w[0].clone(), w[1].clone(), w[2].clone(), w[3].clone()];
        let [d0, d1, d2, d3] = &mut dv;
        let ds = normalize_in_place_rev4(&mut v, [d0, d1, d2, d3], x[n]);
        let lanes = (0..4).map(|l| cat(&[&dv[l], &[ds[l]]])).collect();
        (v, lanes)
    });
}

pub fn normalize_in_place_forward_lanes() {
    let f = normalize_in_place_scalar();
    let n = f.x.len() - 1;
    check_forward_lanes(&f, 3, &|x, t| {
        let mut v = x[..n].to_vec();
        let mut dv = [t[0][..n].to_vec(), t[1][..n].to_vec(), t[2][..n].to_vec()];
        let [d0, d1, d2] = &mut dv;
        normalize_in_place_fwd3(&mut v, [d0, d1, d2], x[n], [t[0][n], t[1][n], t[2][n]]);
        (v, dv.to_vec())
    });
}

/// Batched reverse only: `forward(width = N)` does not take calls with active arguments.
pub fn calls_a_helper_lanes() {
    let x0 = [0.4, -1.1, 0.8, 1.5, -0.2];
    let n = x0.len();
    let f = Scalar {
        name: "calls_a_helper",
        x: cat(&[&x0, &[0.7]]),
        primal: Box::new(move |x: &[f64]| vec![calls_a_helper(&x[..n], x[n])]),
        jvp: Box::new(move |x: &[f64], dx: &[f64]| {
            let (y, dy) = calls_a_helper_fwd(&x[..n], &dx[..n], x[n], dx[n]);
            (vec![y], vec![dy])
        }),
        vjp: Box::new(move |x: &[f64], w: &[f64]| {
            let mut dx = zeros(n);
            let (y, dk) = calls_a_helper_rev(&x[..n], &mut dx, x[n], w[0]);
            (vec![y], cat(&[&dx, &[dk]]))
        }),
    };
    check_lanes(&f, 2, &|x, w| {
        let mut d = [zeros(n), zeros(n)];
        let [d0, d1] = &mut d;
        let (y, dk) = calls_a_helper_rev2(&x[..n], [d0, d1], x[n], [w[0][0], w[1][0]]);
        let lanes = (0..2).map(|l| cat(&[&d[l], &[dk[l]]])).collect();
        (vec![y], lanes)
    });
}

/// A shadow of the wrong length in any lane panics naming the lane.
pub fn short_shadow_in_a_lane_panics() {
    let x = [0.1, 0.2, 0.3];
    let (mut d0, mut d1, mut d2) = (zeros(3), zeros(2), zeros(3));
    looped_rev3(&x, [&mut d0, &mut d1, &mut d2], 0.5, [1.0; 3]);
}

/// A tangent of the wrong length in any lane panics naming the lane.
pub fn short_tangent_in_a_lane_panics() {
    let x = [0.1, 0.2, 0.3];
    looped_fwd3(&x, [&x, &x[..2], &x], 0.5, [1.0; 3]);
}

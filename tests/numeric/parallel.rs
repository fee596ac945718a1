//! The user's rayon loops (`par_iter_mut().enumerate().for_each`, `(a..b).into_par_iter()`,
//! `par_iter().map(..).sum()`, `.zip`): each is differentiated beside the same computation
//! written as a serial loop. The two gradients must agree (rel 1e-12; a parallel sum may
//! add in another order), and every parallel function passes finite differences and the
//! dot-product test.

use super::differentiate;
use crate::common::*;
use rayon::prelude::*;

/// One FTCS heat step into `out`, as a parallel loop over the output.
#[differentiate(forward, reverse)]
pub fn heat_par(u: &[f64], out: &mut [f64], r: f64) {
    let n = u.len();
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        if i > 0 && i < n - 1 {
            *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.1 * u[i]);
        } else {
            *o = u[i];
        }
    });
}

/// [`heat_par`] as a serial loop.
#[differentiate(forward, reverse)]
pub fn heat_serial(u: &[f64], out: &mut [f64], r: f64) {
    let n = u.len();
    for i in 0..n {
        if i > 0 && i < n - 1 {
            out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.1 * u[i]);
        } else {
            out[i] = u[i];
        }
    }
}

/// A parallel map-sum over a buffer and one over a range, with a zip in between.
#[differentiate(forward, reverse)]
pub fn energy_par(x: &[f64], y: &mut [f64], w: f64) -> f64 {
    let n = x.len();
    y.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(yi, xi)| *yi = (w * xi).sin() + *yi * xi);
    let a: f64 = y.par_iter().map(|v| v * v).sum();
    let b = (0..n).into_par_iter().map(|i| x[i] * y[i]).sum::<f64>();
    a + w * b
}

/// [`energy_par`] as serial loops.
#[differentiate(forward, reverse)]
pub fn energy_serial(x: &[f64], y: &mut [f64], w: f64) -> f64 {
    let n = x.len();
    for i in 0..n {
        y[i] = (w * x[i]).sin() + y[i] * x[i];
    }
    let mut a = 0.0;
    for i in 0..n {
        a += y[i] * y[i];
    }
    let mut b = 0.0;
    for i in 0..n {
        b += x[i] * y[i];
    }
    a + w * b
}

pub fn input(n: usize) -> Vec<f64> {
    (0..n).map(|i| 0.3 + (1.3 * i as f64).sin() * 0.5).collect()
}

pub fn heat_step_parallel_equals_serial() {
    let n = 9;
    let (u, r) = (input(n), 0.35);
    let seed: Vec<f64> = (0..n).map(|i| 1.0 + 0.25 * i as f64).collect();
    let run = |rev: fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64| {
        let (mut du, mut out, mut dout) = (zeros(n), zeros(n), seed.clone());
        let dr = rev(&u, &mut du, &mut out, &mut dout, r);
        (du, dr, out)
    };
    let (du_p, dr_p, out_p) = run(heat_par_rev);
    let (du_s, dr_s, out_s) = run(heat_serial_rev);
    assert_all_close("heat_par: output", &out_p, &out_s, 1e-14, 0.0);
    let (mut a, mut b) = (zeros(n), zeros(n));
    heat_par(&u, &mut a, r);
    heat_serial(&u, &mut b, r);
    assert_all_close("heat_par: primal", &a, &b, 1e-15, 0.0);
    assert_all_close("heat_par: _rev's output", &out_p, &a, 1e-15, 0.0);
    assert_all_close("heat_par: ∂/∂u", &du_p, &du_s, 1e-12, 1e-15);
    assert_close("heat_par: ∂/∂r", dr_p, dr_s, 1e-12, 1e-15);
    let mut point = u.clone();
    point.push(r);
    check_fwd_rev(&Case {
        name: "heat_par",
        x: &point,
        primal: &|p| {
            let mut out = zeros(n);
            heat_par(&p[..n], &mut out, p[n]);
            out
        },
        jvp: &|p, d| {
            let (mut out, mut dout) = (zeros(n), zeros(n));
            heat_par_fwd(&p[..n], &d[..n], &mut out, &mut dout, p[n], d[n]);
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut du, mut out, mut dout) = (zeros(n), zeros(n), w.to_vec());
            let dr = heat_par_rev(&p[..n], &mut du, &mut out, &mut dout, p[n]);
            du.push(dr);
            (out, du)
        },
        tols: TOLS,
    });
}

pub fn map_sum_and_zip_parallel_equal_serial() {
    let n = 11;
    let (x, y0, w) = (input(n), input(n + 3)[3..].to_vec(), 0.8);
    let grad = |g: fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, f64) -> (f64, f64)| {
        let (mut dx, mut y, mut dy) = (zeros(n), y0.clone(), zeros(n));
        let (v, dw) = g(&x, &mut dx, &mut y, &mut dy, w, 1.0);
        (v, dx, dy, dw)
    };
    let (v_p, dx_p, dy_p, dw_p) = grad(energy_par_rev);
    let (v_s, dx_s, dy_s, dw_s) = grad(energy_serial_rev);
    assert_close("energy_par: value", v_p, v_s, 1e-12, 0.0);
    let (mut ya, mut yb) = (y0.clone(), y0.clone());
    let (pa, pb) = (energy_par(&x, &mut ya, w), energy_serial(&x, &mut yb, w));
    assert_close("energy_par: primal", pa, pb, 1e-12, 0.0);
    assert_close("energy_par: _rev's value", v_p, pa, 1e-12, 0.0);
    assert_all_close("energy_par: ∂/∂x", &dx_p, &dx_s, 1e-12, 1e-15);
    assert_all_close("energy_par: ∂/∂y", &dy_p, &dy_s, 1e-12, 1e-15);
    assert_close("energy_par: ∂/∂w", dw_p, dw_s, 1e-12, 1e-15);
    // x, y (input values of the in-place buffer) and w as one point.
    let mut point = x.clone();
    point.extend(&y0);
    point.push(w);
    check_grad(
        "energy_par",
        &point,
        &|p| energy_par(&p[..n], &mut p[n..2 * n].to_vec(), p[2 * n]),
        &|p| {
            let (mut dx, mut y, mut dy) = (zeros(n), p[n..2 * n].to_vec(), zeros(n));
            let (v, dw) = energy_par_rev(&p[..n], &mut dx, &mut y, &mut dy, p[2 * n], 1.0);
            dx.extend(dy);
            dx.push(dw);
            (v, dx)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "energy_par",
        x: &point,
        primal: &|p| vec![energy_par(&p[..n], &mut p[n..2 * n].to_vec(), p[2 * n])],
        jvp: &|p, d| {
            let mut y = p[n..2 * n].to_vec();
            let mut dy = d[n..2 * n].to_vec();
            let (v, t) = energy_par_fwd(&p[..n], &d[..n], &mut y, &mut dy, p[2 * n], d[2 * n]);
            (vec![v], vec![t])
        },
        vjp: &|p, s| {
            let (mut dx, mut y, mut dy) = (zeros(n), p[n..2 * n].to_vec(), zeros(n));
            let (v, dw) = energy_par_rev(&p[..n], &mut dx, &mut y, &mut dy, p[2 * n], s[0]);
            dx.extend(dy);
            dx.push(dw);
            (vec![v], dx)
        },
        tols: TOLS,
    });
}

/// `y[i] = x[idx[i]]·w[i] + sin(x[idx[i]]/2)`: a gather at random indices, whose adjoint
/// scatters into `x̄` at computed indices.
#[differentiate(forward, reverse, wrt(x, y))]
pub fn gather_par(x: &[f64], idx: &[usize], w: &[f64], y: &mut [f64]) {
    y.par_iter_mut().enumerate().for_each(|(i, yi)| {
        *yi = x[idx[i]] * w[i] + (0.5 * x[idx[i]]).sin();
    });
}

/// [`gather_par`] as a serial loop.
#[differentiate(forward, reverse, wrt(x, y))]
pub fn gather_serial(x: &[f64], idx: &[usize], w: &[f64], y: &mut [f64]) {
    for i in 0..y.len() {
        y[i] = x[idx[i]] * w[i] + (0.5 * x[idx[i]]).sin();
    }
}

/// `Σᵢ h[bin[i]]·xᵢ²`: the adjoint of `h` is a histogram of `xᵢ²` over the bins.
#[differentiate(forward, reverse)]
pub fn histogram_par(h: &[f64], bin: &[usize], x: &[f64]) -> f64 {
    (0..x.len())
        .into_par_iter()
        .map(|i| h[bin[i]] * x[i] * x[i])
        .sum::<f64>()
}

/// [`histogram_par`] as a serial loop.
#[differentiate(forward, reverse)]
pub fn histogram_serial(h: &[f64], bin: &[usize], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += h[bin[i]] * x[i] * x[i];
    }
    s
}

/// One explicit step of periodic viscous Burgers, upwinded by the sign of `uᵢ`: the
/// neighbours `(i ± 1) mod n` are computed indices.
#[differentiate(forward, reverse)]
pub fn burgers_par(u: &[f64], next: &mut [f64], nu: f64) {
    let n = u.len();
    let dx = 1.0 / n as f64;
    next.par_iter_mut().enumerate().for_each(|(i, o)| {
        let l = u[(i + n - 1) % n];
        let c = u[i];
        let r = u[(i + 1) % n];
        let adv = if c >= 0.0 { c * (c - l) / dx } else { c * (r - c) / dx };
        *o = c + 1e-3 * (nu * (l - 2.0 * c + r) / (dx * dx) - adv);
    });
}

/// [`burgers_par`] as a serial loop.
#[differentiate(forward, reverse)]
pub fn burgers_serial(u: &[f64], next: &mut [f64], nu: f64) {
    let n = u.len();
    let dx = 1.0 / n as f64;
    for i in 0..n {
        let l = u[(i + n - 1) % n];
        let c = u[i];
        let r = u[(i + 1) % n];
        let adv = if c >= 0.0 { c * (c - l) / dx } else { c * (r - c) / dx };
        next[i] = c + 1e-3 * (nu * (l - 2.0 * c + r) / (dx * dx) - adv);
    }
}

/// A checkpointed time loop whose step is a parallel stencil, and a parallel sum after it.
#[differentiate(forward, reverse)]
pub fn heat_steps_par(u0: &[f64], r: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut next = vec![0.0; n];
    #[checkpoint(revolve(snapshots = 3))]
    for _ in 0..steps {
        next.par_iter_mut().enumerate().for_each(|(i, o)| {
            if i > 0 && i < n - 1 {
                *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.2 * u[i]);
            } else {
                *o = 0.0;
            }
        });
        std::mem::swap(&mut u, &mut next);
    }
    u.par_iter().map(|v| v * v).sum()
}

/// [`heat_steps_par`] with serial loops and no checkpointing.
#[differentiate(forward, reverse)]
pub fn heat_steps_serial(u0: &[f64], r: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut next = vec![0.0; n];
    for _ in 0..steps {
        for i in 0..n {
            if i > 0 && i < n - 1 {
                next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.2 * u[i]);
            } else {
                next[i] = 0.0;
            }
        }
        std::mem::swap(&mut u, &mut next);
    }
    let mut s = 0.0;
    for i in 0..n {
        s += u[i] * u[i];
    }
    s
}

/// Deterministic pseudo-random indices below `m` (with repeats).
pub fn indices(n: usize, m: usize, seed: u64) -> Vec<usize> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % m as u64) as usize
        })
        .collect()
}

/// Results as a flat list of floats, to compare them.
pub trait Flat {
    fn flat(&self, out: &mut Vec<f64>);
}

impl Flat for f64 {
    fn flat(&self, out: &mut Vec<f64>) {
        out.push(*self);
    }
}

impl Flat for Vec<f64> {
    fn flat(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(self);
    }
}

macro_rules! flat_tuple {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Flat),+> Flat for ($($t,)+) {
            fn flat(&self, out: &mut Vec<f64>) {
                $(self.$i.flat(out);)+
            }
        }
    };
}
flat_tuple!(A 0, B 1);
flat_tuple!(A 0, B 1, C 2);
flat_tuple!(A 0, B 1, C 2, D 3);

/// How results on different thread counts compare.
#[derive(Clone, Copy, PartialEq)]
pub enum Across {
    /// Bitwise: blocked loops and sums, owned writes, gathers.
    Bitwise,
    /// To rounding (relative 1e-12 of the largest component): adds at computed indices
    /// go through one private copy per thread, so their order depends on the count.
    Rounding,
}

/// `run` on pools of 1, 2 and 8 threads: twice on each, bitwise equal (reproducible for
/// a thread count); and equal across thread counts as `across` says.
pub fn same_on_1_2_8_threads<T: Flat + Send>(name: &str, across: Across, run: impl Fn() -> T + Sync) {
    let flat = |r: T| {
        let mut out = Vec::new();
        r.flat(&mut out);
        out
    };
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    let results: Vec<Vec<f64>> = [1, 2, 8]
        .iter()
        .map(|&t| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .expect("a thread pool");
            let (first, again) = (flat(pool.install(&run)), flat(pool.install(&run)));
            assert_eq!(bits(&first), bits(&again), "{name}: two runs on {t} threads");
            first
        })
        .collect();
    for (t, r) in [2, 8].iter().zip(&results[1..]) {
        match across {
            Across::Bitwise => {
                assert_eq!(bits(&results[0]), bits(r), "{name}: 1 vs {t} threads");
            }
            Across::Rounding => {
                assert_eq!(r.len(), results[0].len(), "{name}: 1 vs {t} threads");
                let scale = results[0].iter().fold(f64::MIN_POSITIVE, |m, v| m.max(v.abs()));
                for (k, (a, b)) in results[0].iter().zip(r).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-12 * scale,
                        "{name}: 1 vs {t} threads, component {k}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

pub fn gather_at_random_indices() {
    // Large enough for several blocks of ad_rayon::BLOCK iterations.
    let (n, m) = (1500, 97);
    let x = input(m);
    let idx = indices(n, m, 7);
    let w = input(n + 5)[5..].to_vec();
    let seed: Vec<f64> = (0..n).map(|i| ((i % 7) as f64 - 3.0) * 0.3).collect();
    let rev = |f: fn(&[f64], &mut [f64], &[usize], &[f64], &mut [f64], &mut [f64])| {
        let (mut dx, mut y, mut dy) = (zeros(m), zeros(n), seed.clone());
        f(&x, &mut dx, &idx, &w, &mut y, &mut dy);
        (dx, y)
    };
    let (dx_p, y_p) = rev(gather_par_rev);
    let (dx_s, y_s) = rev(gather_serial_rev);
    assert_all_close("gather: y", &y_p, &y_s, 0.0, 0.0);
    let (mut ya, mut yb) = (zeros(n), zeros(n));
    gather_par(&x, &idx, &w, &mut ya);
    gather_serial(&x, &idx, &w, &mut yb);
    assert_all_close("gather: primal", &ya, &yb, 0.0, 0.0);
    assert_all_close("gather: x̄", &dx_p, &dx_s, 1e-12, 1e-14);
    same_on_1_2_8_threads("gather x̄", Across::Rounding, || rev(gather_par_rev).0);
    // Finite differences and the dot product on a small instance.
    let (n, m) = (12, 5);
    let idx = indices(n, m, 3);
    let w = input(n + 1)[1..].to_vec();
    check_fwd_rev(&Case {
        name: "gather_par",
        x: &input(m),
        primal: &|p| {
            let mut y = zeros(n);
            gather_par(p, &idx, &w, &mut y);
            y
        },
        jvp: &|p, d| {
            let (mut y, mut dy) = (zeros(n), zeros(n));
            gather_par_fwd(p, d, &idx, &w, &mut y, &mut dy);
            (y, dy)
        },
        vjp: &|p, s| {
            let (mut dx, mut y, mut dy) = (zeros(m), zeros(n), s.to_vec());
            gather_par_rev(p, &mut dx, &idx, &w, &mut y, &mut dy);
            (y, dx)
        },
        tols: TOLS,
    });
}

pub fn histogram_scatter() {
    let (n, bins) = (2000, 13);
    let h = input(bins);
    let bin = indices(n, bins, 11);
    let x = input(n + 2)[2..].to_vec();
    let grad = |g: fn(&[f64], &[usize], &[f64]) -> (f64, (Vec<f64>, Vec<f64>))| g(&h, &bin, &x);
    let (v_p, (dh_p, dx_p)) = grad(histogram_par_grad);
    let (v_s, (dh_s, dx_s)) = grad(histogram_serial_grad);
    assert_close("histogram: value", v_p, v_s, 1e-12, 0.0);
    assert_all_close("histogram: h̄", &dh_p, &dh_s, 1e-12, 1e-14);
    assert_all_close("histogram: x̄", &dx_p, &dx_s, 1e-12, 1e-14);
    assert_close("histogram: primal", histogram_par(&h, &bin, &x), v_s, 1e-12, 0.0);
    assert_close("histogram: serial primal", histogram_serial(&h, &bin, &x), v_s, 0.0, 0.0);
    same_on_1_2_8_threads("histogram", Across::Rounding, || grad(histogram_par_grad));
    let (n, bins) = (9, 4);
    let bin = indices(n, bins, 5);
    let mut point = input(bins);
    point.extend(input(n + 3)[3..].iter());
    check_grad(
        "histogram_par",
        &point,
        &|p| histogram_par(&p[..bins], &bin, &p[bins..]),
        &|p| {
            let (v, (mut dh, dx)) = histogram_par_grad(&p[..bins], &bin, &p[bins..]);
            dh.extend(dx);
            (v, dh)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "histogram_par",
        x: &point,
        primal: &|p| vec![histogram_par(&p[..bins], &bin, &p[bins..])],
        jvp: &|p, d| {
            let (v, t) = histogram_par_fwd(&p[..bins], &d[..bins], &bin, &p[bins..], &d[bins..]);
            (vec![v], vec![t])
        },
        vjp: &|p, s| {
            let (mut dh, mut dx) = (zeros(bins), zeros(n));
            let v = histogram_par_rev(&p[..bins], &mut dh, &bin, &p[bins..], &mut dx, s[0]);
            dh.extend(dx);
            (vec![v], dh)
        },
        tols: TOLS,
    });
}

pub fn burgers_step_parallel_equals_serial() {
    let n = 1100;
    let u: Vec<f64> = (0..n)
        .map(|i| (2.0 * std::f64::consts::PI * i as f64 / n as f64).sin() + 0.5)
        .collect();
    let seed: Vec<f64> = (0..n).map(|i| 1.0 + 0.001 * i as f64).collect();
    let rev = |f: fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64| {
        let (mut du, mut next, mut dnext) = (zeros(n), zeros(n), seed.clone());
        let dnu = f(&u, &mut du, &mut next, &mut dnext, 0.01);
        (du, dnu, next)
    };
    let (du_p, dnu_p, next_p) = rev(burgers_par_rev);
    let (du_s, dnu_s, next_s) = rev(burgers_serial_rev);
    assert_all_close("burgers: step", &next_p, &next_s, 0.0, 0.0);
    let mut primal = zeros(n);
    burgers_serial(&u, &mut primal, 0.01);
    let mut par = zeros(n);
    burgers_par(&u, &mut par, 0.01);
    assert_all_close("burgers: primal", &par, &primal, 0.0, 0.0);
    assert_all_close("burgers: ū", &du_p, &du_s, 1e-12, 1e-14);
    assert_close("burgers: ν̄", dnu_p, dnu_s, 1e-12, 1e-14);
    same_on_1_2_8_threads("burgers", Across::Rounding, || {
        let (du, dnu, _) = rev(burgers_par_rev);
        (du, dnu)
    });
    let n = 8;
    let mut point: Vec<f64> = (0..n).map(|i| (0.8 * i as f64).sin() + 0.2).collect();
    point.push(0.02);
    check_fwd_rev(&Case {
        name: "burgers_par",
        x: &point,
        primal: &|p| {
            let mut next = zeros(n);
            burgers_par(&p[..n], &mut next, p[n]);
            next
        },
        jvp: &|p, d| {
            let (mut next, mut dnext) = (zeros(n), zeros(n));
            burgers_par_fwd(&p[..n], &d[..n], &mut next, &mut dnext, p[n], d[n]);
            (next, dnext)
        },
        vjp: &|p, s| {
            let (mut du, mut next, mut dnext) = (zeros(n), zeros(n), s.to_vec());
            let dnu = burgers_par_rev(&p[..n], &mut du, &mut next, &mut dnext, p[n]);
            du.push(dnu);
            (next, du)
        },
        tols: TOLS,
    });
}

pub fn checkpointed_parallel_stencil() {
    let n = 700;
    let u0: Vec<f64> = (0..n)
        .map(|i| (std::f64::consts::PI * i as f64 / (n - 1) as f64).sin())
        .collect();
    let (r, steps) = (0.3, 9);
    let (v_p, (g_p, gr_p)) = heat_steps_par_grad(&u0, r, steps);
    let (v_s, (g_s, gr_s)) = heat_steps_serial_grad(&u0, r, steps);
    assert_close("checkpointed parallel heat: value", v_p, v_s, 1e-12, 0.0);
    let primal = heat_steps_serial(&u0, r, steps);
    assert_close("checkpointed parallel heat: primal", heat_steps_par(&u0, r, steps), primal, 1e-12, 0.0);
    assert_all_close("checkpointed parallel heat: ∂/∂u0", &g_p, &g_s, 1e-12, 1e-14);
    assert_close("checkpointed parallel heat: ∂/∂r", gr_p, gr_s, 1e-12, 1e-14);
    same_on_1_2_8_threads("checkpointed parallel heat", Across::Bitwise, || heat_steps_par_grad(&u0, r, steps));
    let n = 7;
    let mut point: Vec<f64> = (0..n).map(|i| (0.9 * i as f64).sin() + 0.1).collect();
    point.push(0.25);
    check_grad(
        "heat_steps_par",
        &point,
        &|p| heat_steps_par(&p[..n], p[n], 5),
        &|p| {
            let (v, (mut g, gr)) = heat_steps_par_grad(&p[..n], p[n], 5);
            g.push(gr);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "heat_steps_par",
        x: &point,
        primal: &|p| vec![heat_steps_par(&p[..n], p[n], 5)],
        jvp: &|p, d| {
            let (v, t) = heat_steps_par_fwd(&p[..n], &d[..n], p[n], d[n], 5);
            (vec![v], vec![t])
        },
        vjp: &|p, s| {
            let mut g = zeros(n);
            let (v, gr) = heat_steps_par_rev(&p[..n], &mut g, p[n], 5, s[0]);
            g.push(gr);
            (vec![v], g)
        },
        tols: TOLS,
    });
}

/// A recurrence in a loop nested in a parallel loop: its values are saved in the row of
/// the parallel iteration (`tape[i][k]`), and the counter restarts in every iteration.
#[differentiate(forward, reverse)]
pub fn nested_recurrence_par(x: &[f64], y: &mut [f64], a: f64) {
    y.par_iter_mut().enumerate().for_each(|(i, yi)| {
        let mut s = x[i];
        for k in 0..(i % 4 + 1) {
            s = (s * a).sin() * s + 0.1 * k as f64;
        }
        *yi = s;
    });
}

/// [`nested_recurrence_par`] as serial loops.
#[differentiate(forward, reverse)]
pub fn nested_recurrence_serial(x: &[f64], y: &mut [f64], a: f64) {
    for i in 0..y.len() {
        let mut s = x[i];
        for k in 0..(i % 4 + 1) {
            s = (s * a).sin() * s + 0.1 * k as f64;
        }
        y[i] = s;
    }
}

pub fn nested_recurrence_in_parallel_loop() {
    type Rev = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64;
    let n = 1300;
    let x: Vec<f64> = (0..n).map(|i| 0.2 + (i as f64 * 0.7).sin() * 0.5).collect();
    let seed: Vec<f64> = (0..n).map(|i| 1.0 - 0.001 * i as f64).collect();
    let rev = |f: Rev| {
        let (mut dx, mut y, mut dy) = (zeros(n), zeros(n), seed.clone());
        let da = f(&x, &mut dx, &mut y, &mut dy, 1.3);
        (dx, da, y)
    };
    let (dx_p, da_p, y_p) = rev(nested_recurrence_par_rev);
    let (dx_s, da_s, y_s) = rev(nested_recurrence_serial_rev);
    let (mut a, mut b) = (zeros(n), zeros(n));
    nested_recurrence_par(&x, &mut a, 1.3);
    nested_recurrence_serial(&x, &mut b, 1.3);
    assert_all_close("nested recurrence: primal", &a, &b, 0.0, 0.0);
    assert_all_close("nested recurrence: y", &y_p, &y_s, 0.0, 0.0);
    assert_all_close("nested recurrence: x̄", &dx_p, &dx_s, 1e-12, 1e-14);
    assert_close("nested recurrence: ā", da_p, da_s, 1e-12, 1e-14);
    same_on_1_2_8_threads("nested recurrence", Across::Bitwise, || rev(nested_recurrence_par_rev));
    let n = 6;
    let mut point: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * i as f64).collect();
    point.push(0.9);
    check_fwd_rev(&Case {
        name: "nested_recurrence_par",
        x: &point,
        primal: &|p| {
            let mut y = zeros(n);
            nested_recurrence_par(&p[..n], &mut y, p[n]);
            y
        },
        jvp: &|p, d| {
            let (mut y, mut dy) = (zeros(n), zeros(n));
            nested_recurrence_par_fwd(&p[..n], &d[..n], &mut y, &mut dy, p[n], d[n]);
            (y, dy)
        },
        vjp: &|p, w| {
            let (mut dx, mut y, mut dy) = (zeros(n), zeros(n), w.to_vec());
            let da = nested_recurrence_par_rev(&p[..n], &mut dx, &mut y, &mut dy, p[n]);
            dx.push(da);
            (y, dx)
        },
        tols: TOLS,
    });
}

/// An ADBench-style Gaussian mixture log-likelihood (isotropic, unit variance), parallel
/// over the points: the adjoint adds into `means[c·d + j]` and `w[c]` from inner loops,
/// the same elements from every point (scatter targets: private lanes).
#[differentiate(forward, reverse, wrt(means, w))]
pub fn gmm_par(x: &[f64], means: &[f64], w: &[f64], d: usize) -> f64 {
    let k = w.len();
    let n = x.len() / d;
    (0..n)
        .into_par_iter()
        .map(|i| {
            let mut total = 0.0;
            for c in 0..k {
                let mut s = 0.0;
                for j in 0..d {
                    let t = x[i * d + j] - means[c * d + j];
                    s += t * t;
                }
                total += w[c].exp() * (-0.5 * s).exp();
            }
            total.ln()
        })
        .sum::<f64>()
}

/// [`gmm_par`] as serial loops.
#[differentiate(forward, reverse, wrt(means, w))]
pub fn gmm_serial(x: &[f64], means: &[f64], w: &[f64], d: usize) -> f64 {
    let k = w.len();
    let n = x.len() / d;
    let mut ll = 0.0;
    for i in 0..n {
        let mut total = 0.0;
        for c in 0..k {
            let mut s = 0.0;
            for j in 0..d {
                let t = x[i * d + j] - means[c * d + j];
                s += t * t;
            }
            total += w[c].exp() * (-0.5 * s).exp();
        }
        ll += total.ln();
    }
    ll
}

pub fn gmm_parallel_over_points() {
    type Grad = fn(&[f64], &[f64], &[f64], usize) -> (f64, (Vec<f64>, Vec<f64>));
    let (n, k, d) = (1200, 5, 3);
    let x: Vec<f64> = (0..n * d).map(|q| (q as f64 * 0.618).sin() * 2.0).collect();
    let means: Vec<f64> = (0..k * d).map(|q| (q as f64 * 1.3).cos()).collect();
    let w: Vec<f64> = (0..k).map(|c| 0.1 * c as f64 - 0.2).collect();
    let grad = |g: Grad| g(&x, &means, &w, d);
    let (v_p, (gm_p, gw_p)) = grad(gmm_par_grad);
    let (v_s, (gm_s, gw_s)) = grad(gmm_serial_grad);
    assert_close("gmm: primal", gmm_par(&x, &means, &w, d), gmm_serial(&x, &means, &w, d), 1e-12, 0.0);
    assert_close("gmm: value", v_p, v_s, 1e-12, 0.0);
    assert_all_close("gmm: ∂/∂means", &gm_p, &gm_s, 1e-12, 1e-13);
    assert_all_close("gmm: ∂/∂w", &gw_p, &gw_s, 1e-12, 1e-13);
    same_on_1_2_8_threads("gmm", Across::Rounding, || grad(gmm_par_grad));
    // Finite differences and the dot product on a small instance.
    let (n, k, d) = (7, 3, 2);
    let x: Vec<f64> = (0..n * d).map(|q| (q as f64 * 0.618).sin()).collect();
    let mut point: Vec<f64> = (0..k * d).map(|q| (q as f64 * 1.3).cos() * 0.5).collect();
    point.extend((0..k).map(|c| 0.2 * c as f64));
    let m = k * d;
    check_grad(
        "gmm_par",
        &point,
        &|p| gmm_par(&x, &p[..m], &p[m..], d),
        &|p| {
            let (v, (mut gm, gw)) = gmm_par_grad(&x, &p[..m], &p[m..], d);
            gm.extend(gw);
            (v, gm)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "gmm_par",
        x: &point,
        primal: &|p| vec![gmm_par(&x, &p[..m], &p[m..], d)],
        jvp: &|p, t| {
            let (v, dv) = gmm_par_fwd(&x, &p[..m], &t[..m], &p[m..], &t[m..], d);
            (vec![v], vec![dv])
        },
        vjp: &|p, s| {
            let (mut gm, mut gw) = (zeros(m), zeros(k));
            let v = gmm_par_rev(&x, &p[..m], &mut gm, &p[m..], &mut gw, d, s[0]);
            gm.extend(gw);
            (vec![v], gm)
        },
        tols: TOLS,
    });
}

/// A stencil with a factor read at a computed index: own, shifted and computed-index
/// additions in its adjoint, here all atomic (the ablation arm of the benchmark).
#[differentiate(forward, reverse, parallel_adjoint = atomic)]
pub fn mixed_atomic(u: &[f64], idx: &[usize], out: &mut [f64], r: f64) {
    let n = u.len();
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        if i > 0 && i < n - 1 {
            *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[idx[i]];
        } else {
            *o = u[i];
        }
    });
}

/// [`mixed_atomic`] with the default summation-aware adjoint.
#[differentiate(forward, reverse)]
pub fn mixed_par(u: &[f64], idx: &[usize], out: &mut [f64], r: f64) {
    let n = u.len();
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        if i > 0 && i < n - 1 {
            *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[idx[i]];
        } else {
            *o = u[i];
        }
    });
}

/// [`mixed_atomic`] as a serial loop.
#[differentiate(forward, reverse)]
pub fn mixed_serial(u: &[f64], idx: &[usize], out: &mut [f64], r: f64) {
    let n = u.len();
    for i in 0..n {
        if i > 0 && i < n - 1 {
            out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[idx[i]];
        } else {
            out[i] = u[i];
        }
    }
}

pub fn atomic_and_summation_aware_adjoints_equal_serial() {
    type Rev = fn(&[f64], &mut [f64], &[usize], &mut [f64], &mut [f64], f64) -> f64;
    type Primal = fn(&[f64], &[usize], &mut [f64], f64);
    let n = 1500;
    let u: Vec<f64> = (0..n).map(|i| 0.5 + (i as f64 * 0.37).sin() * 0.3).collect();
    let idx = indices(n, n, 17);
    let seed: Vec<f64> = (0..n).map(|i| 1.0 + 0.01 * (i % 13) as f64).collect();
    let rev = |f: Rev| {
        let (mut du, mut out, mut dout) = (zeros(n), zeros(n), seed.clone());
        let dr = f(&u, &mut du, &idx, &mut out, &mut dout, 0.3);
        (du, dr, out)
    };
    let (du_s, dr_s, out_s) = rev(mixed_serial_rev);
    for (name, f, primal) in [
        ("atomic", mixed_atomic_rev as Rev, mixed_atomic as Primal),
        ("summation-aware", mixed_par_rev, mixed_par),
    ] {
        let (du, dr, out) = rev(f);
        let mut p = zeros(n);
        primal(&u, &idx, &mut p, 0.3);
        let mut q = zeros(n);
        mixed_serial(&u, &idx, &mut q, 0.3);
        assert_all_close(&format!("mixed {name}: primal"), &p, &q, 0.0, 0.0);
        assert_all_close(&format!("mixed {name}: output"), &out, &out_s, 0.0, 0.0);
        assert_all_close(&format!("mixed {name}: ū"), &du, &du_s, 1e-12, 1e-14);
        assert_close(&format!("mixed {name}: r̄"), dr, dr_s, 1e-12, 1e-14);
    }
    let n = 8;
    let idx = indices(n, n, 4);
    let mut point: Vec<f64> = (0..n).map(|i| 0.4 + 0.1 * i as f64).collect();
    point.push(0.25);
    check_fwd_rev(&Case {
        name: "mixed_atomic",
        x: &point,
        primal: &|p| {
            let mut out = zeros(n);
            mixed_atomic(&p[..n], &idx, &mut out, p[n]);
            out
        },
        jvp: &|p, d| {
            let (mut out, mut dout) = (zeros(n), zeros(n));
            mixed_atomic_fwd(&p[..n], &d[..n], &idx, &mut out, &mut dout, p[n], d[n]);
            (out, dout)
        },
        vjp: &|p, w| {
            let (mut du, mut out, mut dout) = (zeros(n), zeros(n), w.to_vec());
            let dr = mixed_atomic_rev(&p[..n], &mut du, &idx, &mut out, &mut dout, p[n]);
            du.push(dr);
            (out, du)
        },
        tols: TOLS,
    });
}

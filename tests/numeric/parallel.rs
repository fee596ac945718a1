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

fn input(n: usize) -> Vec<f64> {
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

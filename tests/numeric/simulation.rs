//! Time steppers and particle systems: Lorenz-63 with RK4 (calls a differentiated
//! right-hand side), an explicit heat equation with swapped buffers, Lennard-Jones pairs.

use super::differentiate;
use crate::common::*;

/// Lorenz-63 right-hand side (σ = 10, ρ = 28, β = 8/3), written into `ds`.
#[differentiate(forward, reverse)]
pub fn lorenz_rhs(s: &[f64], ds: &mut [f64]) {
    let sigma = 10.0;
    let rho = 28.0;
    let beta = 8.0 / 3.0;
    ds[0] = sigma * (s[1] - s[0]);
    ds[1] = s[0] * (rho - s[2]) - s[1];
    ds[2] = s[0] * s[1] - beta * s[2];
}

/// z after `steps` classical RK4 steps of size 0.01 from `x0`.
#[differentiate(forward, reverse)]
pub fn lorenz_z(x0: &[f64], steps: usize) -> f64 {
    let dt = 0.01;
    let mut y = x0.to_vec();
    let mut stage = vec![0.0; 3];
    let mut k1 = vec![0.0; 3];
    let mut k2 = vec![0.0; 3];
    let mut k3 = vec![0.0; 3];
    let mut k4 = vec![0.0; 3];
    for _ in 0..steps {
        lorenz_rhs(&y, &mut k1);
        for i in 0..3 {
            stage[i] = y[i] + 0.5 * dt * k1[i];
        }
        lorenz_rhs(&stage, &mut k2);
        for i in 0..3 {
            stage[i] = y[i] + 0.5 * dt * k2[i];
        }
        lorenz_rhs(&stage, &mut k3);
        for i in 0..3 {
            stage[i] = y[i] + dt * k3[i];
        }
        lorenz_rhs(&stage, &mut k4);
        for i in 0..3 {
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    y[2]
}

/// Explicit (FTCS) heat equation with zero Dirichlet ends and mesh ratio `r`;
/// returns Σᵢ (i+1)·uᵢ² of the final field.
#[differentiate(forward, reverse)]
pub fn heat_explicit(u0: &[f64], r: f64, steps: usize) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    let mut next = vec![0.0; n];
    for _ in 0..steps {
        next[0] = 0.0;
        next[n - 1] = 0.0;
        for i in 1..n - 1 {
            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut u, &mut next);
    }
    let mut s = 0.0;
    for i in 0..n {
        s += (i + 1) as f64 * u[i] * u[i];
    }
    s
}

/// Lennard-Jones energy 4ε Σ_{i<j} ((σ/r)¹² − (σ/r)⁶) of particles at `pos` (xyz each),
/// through a table of squared distances.
#[differentiate(forward, reverse)]
pub fn lennard_jones(pos: &[f64], epsilon: f64, sigma: f64) -> f64 {
    let n = pos.len() / 3;
    let mut r2 = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in (i + 1)..n {
            let mut s = 0.0;
            for k in 0..3 {
                let d = pos[3 * i + k] - pos[3 * j + k];
                s += d * d;
            }
            r2[i][j] = s;
        }
    }
    let mut e = 0.0;
    for i in 0..n {
        for j in (i + 1)..n {
            let sr6 = (sigma * sigma / r2[i][j]).powi(3);
            e += 4.0 * epsilon * (sr6 * sr6 - sr6);
        }
    }
    e
}

pub fn lorenz_rhs_in_out() {
    // inputs: s (3) and the initial ds (3, overwritten); outputs: final ds
    let x = [1.0, -2.0, 20.0, 5.0, 5.0, 5.0];
    let rhs = |x: &[f64]| {
        let mut ds = x[3..].to_vec();
        lorenz_rhs(&x[..3], &mut ds);
        ds
    };
    assert_rel(
        "rhs",
        &rhs(&x),
        &[-30.0, 1.0 * 8.0 + 2.0, -2.0 - 8.0 / 3.0 * 20.0],
        1e-15,
    );
    check_fwd_rev(&Case {
        name: "lorenz_rhs",
        x: &x,
        primal: &rhs,
        jvp: &|x, v| {
            let mut ds = x[3..].to_vec();
            let mut d_ds = v[3..].to_vec();
            lorenz_rhs_fwd(&x[..3], &v[..3], &mut ds, &mut d_ds);
            (ds, d_ds)
        },
        vjp: &|x, w| {
            let mut ds = x[3..].to_vec();
            let mut adj_s = zeros(3);
            let mut adj_ds = w.to_vec();
            lorenz_rhs_rev(&x[..3], &mut adj_s, &mut ds, &mut adj_ds);
            // ds is overwritten, so the adjoint of its initial value is zero
            assert_eq!(
                adj_ds, [0.0; 3],
                "lorenz_rhs: adjoint of the overwritten ds"
            );
            (rhs(x), cat(&[&adj_s, &adj_ds]))
        },
        tols: TOLS,
    });
}

pub fn lorenz_rk4_published() {
    let x0 = [1.0, 1.0, 1.0];
    let g = check_grad(
        "lorenz_z",
        &x0,
        &|x| lorenz_z(x, 10),
        &|x| lorenz_z_grad(x, 10),
        TOLS,
    );
    let want = [0.39303113844645154, 0.3007893638417931, 0.7517309736472598];
    assert_rel("∂z(T)/∂x₀ after 10 steps", &g, &want, 1e-10);
    let mut t = zeros(3);
    for (k, tk) in t.iter_mut().enumerate() {
        let mut e = zeros(3);
        e[k] = 1.0;
        *tk = lorenz_z_fwd(&x0, &e, 10).1;
    }
    assert_rel("forward ∂z(T)/∂x₀ after 10 steps", &t, &want, 1e-10);
}

pub fn lorenz_rk4_longer_horizons() {
    // 200 RK4 steps (t = 2) chain 800 stage Jacobians whose products grow; rounding in the
    // tangent and adjoint sums grows with them, so that case asks the dot-product identity
    // to 1e-10 instead of 1e-12. Central FD stays well inside 1e-6 relative.
    let long = Tols {
        dot_rel: 1e-10,
        ..TOLS
    };
    for (steps, x0, tols) in [
        (0, [1.0, 1.0, 1.0], TOLS),
        (1, [1.0, 1.0, 1.0], TOLS),
        (200, [-3.0, 2.0, 15.0], long),
    ] {
        check_grad(
            "lorenz_z",
            &x0,
            &|x| lorenz_z(x, steps),
            &|x| lorenz_z_grad(x, steps),
            tols,
        );
        check_fwd_rev(&Case {
            name: "lorenz_z",
            x: &x0,
            primal: &|x| vec![lorenz_z(x, steps)],
            jvp: &|x, v| {
                let (y, t) = lorenz_z_fwd(x, v, steps);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut g = zeros(3);
                let y = lorenz_z_rev(x, &mut g, steps, w[0]);
                (vec![y], g)
            },
            tols,
        });
    }
    // zero steps: z(0) = x0[2] exactly
    let (z, g) = lorenz_z_grad(&[1.0, 2.0, 3.0], 0);
    assert_eq!(z, 3.0);
    assert_eq!(g, [0.0, 0.0, 1.0]);
}

fn heat_point(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let s = i as f64 / (n - 1) as f64;
            (std::f64::consts::PI * s).sin() + 0.3 * (5.0 * s).cos()
        })
        .collect()
}

pub fn heat_explicit_gradient() {
    let n = 12;
    let steps = 30;
    let r = 0.4;
    let u0 = heat_point(n);
    let (f, (gu, _)) = heat_explicit_grad(&u0, r, steps);
    // f is a quadratic form in u0 for fixed r, so ∇f·u0 = 2f (Euler's theorem)
    let euler: f64 = gu.iter().zip(&u0).map(|(g, u)| g * u).sum();
    assert_rel("∇f·u0 = 2f", &[euler], &[2.0 * f], 1e-12);
    let point = cat(&[&u0, &[r]]);
    let f = |p: &[f64]| heat_explicit(&p[..n], p[n], steps);
    check_grad(
        "heat_explicit",
        &point,
        &f,
        &|p| {
            let (v, (mut g, gr)) = heat_explicit_grad(&p[..n], p[n], steps);
            g.push(gr);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "heat_explicit",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = heat_explicit_fwd(&p[..n], &v[..n], p[n], v[n], steps);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut g = zeros(n);
            let (y, gr) = heat_explicit_rev(&p[..n], &mut g, p[n], steps, w[0]);
            g.push(gr);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn heat_explicit_odd_and_even_step_counts() {
    // the buffers are swapped once per step; both parities must give the same gradient
    // as finite differences
    let u0 = heat_point(9);
    for steps in [1, 2, 7] {
        check_grad(
            "heat_explicit",
            &u0,
            &|u| heat_explicit(u, 0.25, steps),
            &|u| {
                let (v, (g, _)) = heat_explicit_grad(u, 0.25, steps);
                (v, g)
            },
            TOLS,
        );
    }
}

/// Five particles near a small cluster, no pair closer than 0.9σ.
fn lj_positions() -> Vec<f64> {
    vec![
        0.0, 0.0, 0.0, //
        1.12, 0.05, -0.1, //
        0.5, 1.0, 0.2, //
        -0.3, 0.6, 1.05, //
        1.4, 1.1, 0.9,
    ]
}

pub fn lennard_jones_gradient_and_invariants() {
    let pos = lj_positions();
    let (eps, sigma) = (0.8, 1.0);
    let (e, (gpos, geps, _gsigma)) = lennard_jones_grad(&pos, eps, sigma);
    // translation invariance: the forces sum to zero in each coordinate
    for k in 0..3 {
        let total: f64 = (0..5).map(|i| gpos[3 * i + k]).sum();
        let scale: f64 = (0..5).map(|i| gpos[3 * i + k].abs()).sum();
        assert!(total.abs() <= 1e-13 * scale, "Σ forces[{k}] = {total:e}");
    }
    // E is linear in ε
    assert_rel("∂E/∂ε = E/ε", &[geps], &[e / eps], 1e-13);
    let m = pos.len();
    let point = cat(&[&pos, &[eps, sigma]]);
    let f = |p: &[f64]| lennard_jones(&p[..m], p[m], p[m + 1]);
    check_grad(
        "lennard_jones",
        &point,
        &f,
        &|p| {
            let (v, (mut g, ge, gs)) = lennard_jones_grad(&p[..m], p[m], p[m + 1]);
            g.push(ge);
            g.push(gs);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "lennard_jones",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = lennard_jones_fwd(&p[..m], &v[..m], p[m], v[m], p[m + 1], v[m + 1]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut g = zeros(m);
            let (y, ge, gs) = lennard_jones_rev(&p[..m], &mut g, p[m], p[m + 1], w[0]);
            g.push(ge);
            g.push(gs);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

//! The coarsening benchmark programs (`benches/support/coarsening.rs`), each compiled by
//! default (`coarse`) and with `coarsen = off` (`fine`), checked before anything times them.
//!
//! For every program and both modes:
//! - `_grad` against central finite differences (`phidiff::check::gradient` through
//!   `common::check_grad`) with `common::TOLS` (rel 1e-6, abs 1e-8): the Richardson
//!   differences are accurate to ~1e-10 relative on these smooth, well-scaled functions,
//!   so 1e-6 leaves a wide margin yet rejects any wrong partial; the value `_grad` returns
//!   equals the primal (rel 1e-12);
//! - `_fwd` against finite-difference directional derivatives, `_fwd` against `_rev` by
//!   the dot-product identity (rel 1e-12, no step size involved), and the value `_rev`
//!   returns equals the primal (rel 1e-12) — all through `common::check_fwd_rev`;
//! - `_rev` with seed 1 gives `_grad`'s gradient (rel 1e-14: the same code path).
//!
//! Then coarse against fine: gradients and one tangent agree to 1e-10 relative to the
//! largest component. Both are exact derivatives of the same primal, so only rounding may
//! separate them (a coarsened segment reassociates its partials); 1e-10 is far above
//! that rounding on these sizes and far below any real difference.
//!
//! Sizes are small so each test takes milliseconds in a debug build.

mod common;

#[path = "../benches/support/coarsening.rs"]
mod programs;

use common::*;
use programs::*;

type FlatValue<'a> = Box<dyn Fn(&[f64]) -> f64 + 'a>;
type FlatTangent<'a> = Box<dyn Fn(&[f64], &[f64]) -> (f64, f64) + 'a>;
type FlatAdjoint<'a> = Box<dyn Fn(&[f64], f64) -> (f64, Vec<f64>) + 'a>;
type FlatGradient<'a> = Box<dyn Fn(&[f64]) -> (f64, Vec<f64>) + 'a>;

/// One program in one mode, viewed as a map from its flat active inputs to its value.
struct Flat<'a> {
    primal: FlatValue<'a>,
    /// `(x, ẋ) ↦ (value, tangent)` through `_fwd`.
    jvp: FlatTangent<'a>,
    /// `(x, seed) ↦ (value, adjoint)` through `_rev` with zeroed shadows.
    vjp: FlatAdjoint<'a>,
    /// `x ↦ (value, gradient)` through `_grad`.
    grad: FlatGradient<'a>,
}

/// Runs every check of the module doc on `coarse` and `fine` at `x`.
fn check_program(name: &str, x: &[f64], coarse: &Flat, fine: &Flat) {
    let mut gradients = Vec::new();
    let mut tangents = Vec::new();
    let v = phidiff::check::random_vector(77, x.len());
    for (mode, p) in [("coarse", coarse), ("fine", fine)] {
        let label = format!("{name} ({mode})");
        let g = check_grad(&label, x, &*p.primal, &*p.grad, TOLS);
        check_fwd_rev(&Case {
            name: &label,
            x,
            primal: &|x| vec![(p.primal)(x)],
            jvp: &|x, v| {
                let (y, t) = (p.jvp)(x, v);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let (y, g) = (p.vjp)(x, w[0]);
                (vec![y], g)
            },
            tols: TOLS,
        });
        let (_, g_rev) = (p.vjp)(x, 1.0);
        assert_all_close(
            &format!("{label}: _rev(seed 1) vs _grad"),
            &g_rev,
            &g,
            1e-14,
            0.0,
        );
        gradients.push(g);
        tangents.push((p.jvp)(x, &v).1);
    }
    let e = rel_err(&gradients[0], &gradients[1]);
    assert!(
        e <= 1e-10,
        "{name}: coarse and fine gradients differ by {e:e} (relative to max |g|)\n\
         coarse {:?}\nfine   {:?}",
        gradients[0],
        gradients[1]
    );
    let e = rel_err(&tangents[0..1], &tangents[1..2]);
    assert!(
        e <= 1e-10,
        "{name}: coarse and fine tangents differ by {e:e}"
    );
}

// ---------------------------------------------------------------------------------------
// BGDHyperOpt
// ---------------------------------------------------------------------------------------

type BgdPrimal = fn(&[f64], &[f64], f64, f64, usize) -> f64;
type BgdFwd = fn(&[f64], &[f64], f64, f64, f64, usize) -> (f64, f64);
type BgdRev = fn(&[f64], &[f64], f64, f64, usize, f64) -> (f64, f64);
type BgdGrad = fn(&[f64], &[f64], f64, f64, usize) -> (f64, f64);

/// Flat input: `[r]`.
fn bgd_flat(d: &BgdData, f: BgdPrimal, fwd: BgdFwd, rev: BgdRev, grad: BgdGrad) -> Flat<'_> {
    Flat {
        primal: Box::new(move |p| f(&d.x, &d.y, p[0], BGD_TOL, BGD_MAX_ITER)),
        jvp: Box::new(move |p, v| fwd(&d.x, &d.y, p[0], v[0], BGD_TOL, BGD_MAX_ITER)),
        vjp: Box::new(move |p, seed| {
            let (y, dr) = rev(&d.x, &d.y, p[0], BGD_TOL, BGD_MAX_ITER, seed);
            (y, vec![dr])
        }),
        grad: Box::new(move |p| {
            let (y, dr) = grad(&d.x, &d.y, p[0], BGD_TOL, BGD_MAX_ITER);
            (y, vec![dr])
        }),
    }
}

/// The number of descent steps `bgd_rmse` takes: its loop, counting instead of fitting.
fn bgd_trip_count(d: &BgdData, r: f64) -> usize {
    let inv_m = 1.0 / d.x.len() as f64;
    let (mut w, mut b) = (0.0, 0.0);
    let mut iter = 0;
    loop {
        let (mut gw, mut gb) = (0.0, 0.0);
        for (xi, yi) in d.x.iter().zip(&d.y) {
            let e = w * xi + b - yi;
            gw += e * xi;
            gb += e;
        }
        let (dw, db) = (r * gw * inv_m, r * gb * inv_m);
        w -= dw;
        b -= db;
        iter += 1;
        if dw.abs() + db.abs() < BGD_TOL || iter >= BGD_MAX_ITER {
            return iter;
        }
    }
}

#[test]
fn bgd_hyperopt() {
    let d = bgd_data(50);
    // Finite differences move r by at most h = 2⁻¹³·max(1, r); the trip count must not
    // change within 4h, or the difference quotient would straddle a jump of the rmse.
    let h = 2f64.powi(-13);
    let trips = bgd_trip_count(&d, BGD_R);
    assert!((100..1000).contains(&trips), "{trips} steps");
    for s in [-4.0, -1.0, -0.5, 0.5, 1.0, 4.0] {
        assert_eq!(bgd_trip_count(&d, BGD_R + s * h), trips, "r + {s}h");
    }
    let coarse = bgd_flat(
        &d,
        coarse::bgd_rmse,
        coarse::bgd_rmse_fwd,
        coarse::bgd_rmse_rev,
        coarse::bgd_rmse_grad,
    );
    let fine = bgd_flat(
        &d,
        fine::bgd_rmse,
        fine::bgd_rmse_fwd,
        fine::bgd_rmse_rev,
        fine::bgd_rmse_grad,
    );
    // Stopping early keeps the fit dependent on r: the derivative is far from zero.
    let dr = (coarse.grad)(&[BGD_R]).1[0];
    assert!(dr.abs() > 1e-3, "d rmse / d r = {dr:e}");
    check_program("bgd_rmse", &[BGD_R], &coarse, &fine);
}

// ---------------------------------------------------------------------------------------
// HMC potential
// ---------------------------------------------------------------------------------------

type HmcPrimal = fn(&[f64], &[f64], &[f64], f64) -> f64;
type HmcFwd = fn(&[f64], &[f64], &[f64], &[f64], f64) -> (f64, f64);
type HmcRev = fn(&[f64], &mut [f64], &[f64], &[f64], f64, f64) -> f64;
type HmcGrad = fn(&[f64], &[f64], &[f64], f64) -> (f64, Vec<f64>);

/// Flat input: β.
fn hmc_flat(d: &HmcData, f: HmcPrimal, fwd: HmcFwd, rev: HmcRev, grad: HmcGrad) -> Flat<'_> {
    Flat {
        primal: Box::new(move |b| f(b, &d.x, &d.y, d.sigma)),
        jvp: Box::new(move |b, v| fwd(b, v, &d.x, &d.y, d.sigma)),
        vjp: Box::new(move |b, seed| {
            let mut gb = zeros(b.len());
            let y = rev(b, &mut gb, &d.x, &d.y, d.sigma, seed);
            (y, gb)
        }),
        grad: Box::new(move |b| grad(b, &d.x, &d.y, d.sigma)),
    }
}

#[test]
fn hmc_potential() {
    let d = hmc_data(30, 4);
    let coarse = hmc_flat(
        &d,
        coarse::hmc_potential::<f64>,
        coarse::hmc_potential_fwd::<f64>,
        coarse::hmc_potential_rev::<f64>,
        coarse::hmc_potential_grad::<f64>,
    );
    let fine = hmc_flat(
        &d,
        fine::hmc_potential::<f64>,
        fine::hmc_potential_fwd::<f64>,
        fine::hmc_potential_rev::<f64>,
        fine::hmc_potential_grad::<f64>,
    );
    // ∇U = Σᵢ (σ(tᵢ) − yᵢ) xᵢ + β/σ², written out independently.
    let dim = d.beta.len();
    let mut want: Vec<f64> = d.beta.iter().map(|b| b / (d.sigma * d.sigma)).collect();
    for (row, yi) in d.x.chunks(dim).zip(&d.y) {
        let t: f64 = row.iter().zip(&d.beta).map(|(a, b)| a * b).sum();
        let s = 1.0 / (1.0 + (-t).exp());
        for j in 0..dim {
            want[j] += (s - yi) * row[j];
        }
    }
    assert_rel("∇U", &(coarse.grad)(&d.beta).1, &want, 1e-12);
    check_program("hmc_potential", &d.beta, &coarse, &fine);
}

// ---------------------------------------------------------------------------------------
// Hookean spring
// ---------------------------------------------------------------------------------------

type SpringPrimal = fn(f64, f64, f64, &[f64], f64, f64) -> f64;
type SpringFwd = fn(f64, f64, f64, f64, f64, f64, &[f64], f64, f64) -> (f64, f64);
type SpringRev = fn(f64, f64, f64, &[f64], f64, f64, f64) -> (f64, f64, f64, f64);
type SpringGrad = fn(f64, f64, f64, &[f64], f64, f64) -> (f64, (f64, f64, f64));

/// Flat input: `[k, x0, v0]`.
fn spring_flat(
    d: &SpringData,
    f: SpringPrimal,
    fwd: SpringFwd,
    rev: SpringRev,
    grad: SpringGrad,
) -> Flat<'_> {
    Flat {
        primal: Box::new(move |p| f(p[0], p[1], p[2], &d.obs, d.mass, d.dt)),
        jvp: Box::new(move |p, v| fwd(p[0], v[0], p[1], v[1], p[2], v[2], &d.obs, d.mass, d.dt)),
        vjp: Box::new(move |p, seed| {
            let (y, dk, dx0, dv0) = rev(p[0], p[1], p[2], &d.obs, d.mass, d.dt, seed);
            (y, vec![dk, dx0, dv0])
        }),
        grad: Box::new(move |p| {
            let (y, (dk, dx0, dv0)) = grad(p[0], p[1], p[2], &d.obs, d.mass, d.dt);
            (y, vec![dk, dx0, dv0])
        }),
    }
}

#[test]
fn hookean_spring() {
    let d = spring_data(200);
    let coarse = spring_flat(
        &d,
        coarse::spring_misfit,
        coarse::spring_misfit_fwd,
        coarse::spring_misfit_rev,
        coarse::spring_misfit_grad,
    );
    let fine = spring_flat(
        &d,
        fine::spring_misfit,
        fine::spring_misfit_fwd,
        fine::spring_misfit_rev,
        fine::spring_misfit_grad,
    );
    check_program("spring_misfit", &[d.k, d.x0, d.v0], &coarse, &fine);
}

// ---------------------------------------------------------------------------------------
// Brachistochrone
// ---------------------------------------------------------------------------------------

type BrachPrimal = fn(&[f64], f64, f64, f64, f64) -> f64;
type BrachFwd = fn(&[f64], &[f64], f64, f64, f64, f64) -> (f64, f64);
type BrachRev = fn(&[f64], &mut [f64], f64, f64, f64, f64, f64) -> f64;
type BrachGrad = fn(&[f64], f64, f64, f64, f64) -> (f64, Vec<f64>);

/// Flat input: the interior heights.
fn brachistochrone_flat(
    d: &BrachistochroneData,
    f: BrachPrimal,
    fwd: BrachFwd,
    rev: BrachRev,
    grad: BrachGrad,
) -> Flat<'_> {
    Flat {
        primal: Box::new(move |y| f(y, d.y_start, d.y_end, d.length, d.v_start)),
        jvp: Box::new(move |y, v| fwd(y, v, d.y_start, d.y_end, d.length, d.v_start)),
        vjp: Box::new(move |y, seed| {
            let mut gy = zeros(y.len());
            let t = rev(y, &mut gy, d.y_start, d.y_end, d.length, d.v_start, seed);
            (t, gy)
        }),
        grad: Box::new(move |y| grad(y, d.y_start, d.y_end, d.length, d.v_start)),
    }
}

#[test]
fn brachistochrone() {
    let d = brachistochrone_data(20);
    assert!(d.y.iter().all(|&y| y < d.y_start));
    let coarse = brachistochrone_flat(
        &d,
        coarse::brachistochrone_time,
        coarse::brachistochrone_time_fwd,
        coarse::brachistochrone_time_rev,
        coarse::brachistochrone_time_grad,
    );
    let fine = brachistochrone_flat(
        &d,
        fine::brachistochrone_time,
        fine::brachistochrone_time_fwd,
        fine::brachistochrone_time_rev,
        fine::brachistochrone_time_grad,
    );
    // A straight chute from rest at speed v0: T = 2L / (v0 + v_end), L its length.
    let straight = [0.75, 0.5, 0.25];
    let (g, v0) = (9.81, d.v_start);
    let v_end = (v0 * v0 + 2.0 * g * d.y_start).sqrt();
    let want = 2.0 * (4.0 + 1.0_f64).sqrt() / (v0 + v_end);
    let got = coarse::brachistochrone_time(&straight, 1.0, 0.0, 2.0, v0);
    assert_rel("straight chute", &[got], &[want], 1e-14);
    check_program("brachistochrone_time", &d.y, &coarse, &fine);
}

// ---------------------------------------------------------------------------------------
// Extended Rosenbrock
// ---------------------------------------------------------------------------------------

fn rosenbrock_flat<'a>(
    f: fn(&[f64]) -> f64,
    fwd: fn(&[f64], &[f64]) -> (f64, f64),
    rev: fn(&[f64], &mut [f64], f64) -> f64,
    grad: fn(&[f64]) -> (f64, Vec<f64>),
) -> Flat<'a> {
    Flat {
        primal: Box::new(f),
        jvp: Box::new(fwd),
        vjp: Box::new(move |x, seed| {
            let mut gx = zeros(x.len());
            let y = rev(x, &mut gx, seed);
            (y, gx)
        }),
        grad: Box::new(grad),
    }
}

#[test]
fn rosenbrock() {
    let x = rosenbrock_data(20);
    let coarse = rosenbrock_flat(
        coarse::rosenbrock::<f64>,
        coarse::rosenbrock_fwd::<f64>,
        coarse::rosenbrock_rev::<f64>,
        coarse::rosenbrock_grad::<f64>,
    );
    let fine = rosenbrock_flat(
        fine::rosenbrock::<f64>,
        fine::rosenbrock_fwd::<f64>,
        fine::rosenbrock_rev::<f64>,
        fine::rosenbrock_grad::<f64>,
    );
    // the minimum: value 0, gradient 0
    let (f, g) = (coarse.grad)(&[1.0; 6]);
    assert_eq!((f, g), (0.0, vec![0.0; 6]));
    check_program("rosenbrock", &x, &coarse, &fine);
}

// ---------------------------------------------------------------------------------------
// ADBench GMM
// ---------------------------------------------------------------------------------------

type GmmPrimal = fn(&[f64], &[f64], &[f64], &[f64], usize, f64, usize) -> f64;
type GmmFwd =
    fn(&[f64], &[f64], &[f64], &[f64], &[f64], &[f64], &[f64], usize, f64, usize) -> (f64, f64);
type GmmRev = fn(
    &[f64],
    &mut [f64],
    &[f64],
    &mut [f64],
    &[f64],
    &mut [f64],
    &[f64],
    usize,
    f64,
    usize,
    f64,
) -> f64;
type GmmGrad =
    fn(&[f64], &[f64], &[f64], &[f64], usize, f64, usize) -> (f64, (Vec<f64>, Vec<f64>, Vec<f64>));

/// Flat input: alphas, means, icf.
fn gmm_flat(d: &GmmData, f: GmmPrimal, fwd: GmmFwd, rev: GmmRev, grad: GmmGrad) -> Flat<'_> {
    let lens = [d.alphas.len(), d.means.len(), d.icf.len()];
    let (gamma, m) = (d.wishart_gamma, d.wishart_m);
    Flat {
        primal: Box::new(move |p| {
            let s = split(p, &lens);
            f(s[0], s[1], s[2], &d.x, d.d, gamma, m)
        }),
        jvp: Box::new(move |p, v| {
            let (s, t) = (split(p, &lens), split(v, &lens));
            fwd(s[0], t[0], s[1], t[1], s[2], t[2], &d.x, d.d, gamma, m)
        }),
        vjp: Box::new(move |p, seed| {
            let s = split(p, &lens);
            let (mut ga, mut gm, mut gi) = (zeros(lens[0]), zeros(lens[1]), zeros(lens[2]));
            let y = rev(
                s[0], &mut ga, s[1], &mut gm, s[2], &mut gi, &d.x, d.d, gamma, m, seed,
            );
            (y, cat(&[&ga, &gm, &gi]))
        }),
        grad: Box::new(move |p| {
            let s = split(p, &lens);
            let (y, (ga, gm, gi)) = grad(s[0], s[1], s[2], &d.x, d.d, gamma, m);
            (y, cat(&[&ga, &gm, &gi]))
        }),
    }
}

/// The GMM objective computed independently: each Qₖ built as a dense lower-triangular
/// matrix, log det Qₖ from its diagonal, and the mixture summed without the max shift:
/// Σᵢ ln Σₖ exp(αₖ + ln det Qₖ − ½‖Qₖ(xᵢ − μₖ)‖²) − n ln Σₖ exp(αₖ) − ½nd ln 2π
/// + Σₖ (½γ²‖Qₖ‖²_F − m ln det Qₖ).
fn gmm_reference(d: &GmmData) -> f64 {
    let dim = d.d;
    let k = d.alphas.len();
    let icf_len = dim * (dim + 1) / 2;
    let q = |c: usize| {
        let icf = &d.icf[c * icf_len..(c + 1) * icf_len];
        let mut q = vec![vec![0.0; dim]; dim];
        let mut lower = icf[dim..].iter();
        for col in 0..dim {
            q[col][col] = icf[col].exp();
            for q_row in q.iter_mut().skip(col + 1) {
                q_row[col] = *lower.next().unwrap();
            }
        }
        q
    };
    let mut total = 0.0;
    for point in d.x.chunks(dim) {
        let mut density = 0.0;
        for c in 0..k {
            let qc = q(c);
            let z: Vec<f64> = (0..dim).map(|j| point[j] - d.means[c * dim + j]).collect();
            let sq: f64 = (0..dim)
                .map(|r| (0..dim).map(|j| qc[r][j] * z[j]).sum::<f64>().powi(2))
                .sum();
            let log_det: f64 = (0..dim).map(|j| qc[j][j].ln()).sum();
            density += (d.alphas[c] + log_det - 0.5 * sq).exp();
        }
        total += density.ln();
    }
    let n = (d.x.len() / dim) as f64;
    let weights: f64 = d.alphas.iter().map(|a| a.exp()).sum();
    total -= n * weights.ln() + 0.5 * n * dim as f64 * (2.0 * std::f64::consts::PI).ln();
    for c in 0..k {
        let qc = q(c);
        let frobenius: f64 = qc.iter().flatten().map(|v| v * v).sum();
        let log_det: f64 = (0..dim).map(|j| qc[j][j].ln()).sum();
        total += 0.5 * d.wishart_gamma.powi(2) * frobenius - d.wishart_m as f64 * log_det;
    }
    total
}

#[test]
fn gmm_adbench() {
    let mut d = gmm_data(3, 4, 10);
    d.wishart_m = 2; // ADBench uses m = 0; 2 exercises the −m Σ log diag term
    let coarse = gmm_flat(
        &d,
        coarse::gmm_objective,
        coarse::gmm_objective_fwd,
        coarse::gmm_objective_rev,
        coarse::gmm_objective_grad,
    );
    let fine = gmm_flat(
        &d,
        fine::gmm_objective,
        fine::gmm_objective_fwd,
        fine::gmm_objective_rev,
        fine::gmm_objective_grad,
    );
    let point = cat(&[&d.alphas, &d.means, &d.icf]);
    assert_rel(
        "objective",
        &[(coarse.primal)(&point)],
        &[gmm_reference(&d)],
        1e-12,
    );
    check_program("gmm_objective", &point, &coarse, &fine);
}

// ---------------------------------------------------------------------------------------
// Benchmark wiring
// ---------------------------------------------------------------------------------------

/// The closures the bench and the report time, built at small sizes, pass the same
/// `verify` (coarse vs fine gradients 1e-10, values vs primal 1e-12) that runs before
/// timing: a wrongly wired argument in an instance fails here, not in a timing run.
#[test]
fn benchmark_instances_pass_verify() {
    for mut instance in [
        bgd_instance(50),
        hmc_instance(20, 3),
        spring_instance(100),
        brachistochrone_instance(20),
        rosenbrock_instance(20),
        gmm_instance(2, 3, 20),
    ] {
        verify(&mut instance);
    }
}

//! Ratio report for `benches/rosenbrock_lorenz.rs`: in ONE process, interleaved
//! repetitions (each repetition times every variant of every function once, as a batch of
//! calls sized to ~20 ms), median of 15 repetitions per variant, then the table of
//! gradient/primal, generated/hand-written and forward/primal ratios.
//!
//! ```text
//! cargo run --release --example bench_report
//! ```
//!
//! `_rev` and the hand adjoint add into a preallocated shadow that is not re-zeroed
//! between calls (zeroing is reported on its own line); FD is ONE directional derivative
//! (2 primal evaluations); a full FD gradient costs 2n primals.

#[path = "../benches/support/functions.rs"]
mod functions;
use functions::*;
#[path = "../benches/support/adbench.rs"]
mod adbench;
#[path = "../benches/support/ba.rs"]
mod ba;
#[path = "../benches/support/gmm.rs"]
mod gmm;
#[path = "../benches/support/lstm.rs"]
mod lstm;

use std::hint::black_box;
use std::time::{Duration, Instant};

const REPS: usize = 15;
const BATCH_TARGET: Duration = Duration::from_millis(20);

/// One timed variant: a closure run `batch` times per repetition.
struct Variant<'a> {
    name: &'static str,
    run: Box<dyn FnMut() + 'a>,
    batch: usize,
    samples: Vec<f64>,
}

impl<'a> Variant<'a> {
    fn new(name: &'static str, run: impl FnMut() + 'a) -> Self {
        Variant {
            name,
            run: Box::new(run),
            batch: 1,
            samples: Vec::new(),
        }
    }

    fn calibrate(&mut self) {
        (self.run)();
        let t = Instant::now();
        (self.run)();
        let one = t.elapsed().max(Duration::from_nanos(1));
        self.batch =
            ((BATCH_TARGET.as_secs_f64() / one.as_secs_f64()) as usize).clamp(1, 1_000_000);
    }

    /// One repetition: a call untimed (so the variant before it, whose data evicted this
    /// one's from the caches, does not count against it), then the timed batch.
    fn sample(&mut self) {
        (self.run)();
        let t = Instant::now();
        for _ in 0..self.batch {
            (self.run)();
        }
        self.samples
            .push(t.elapsed().as_secs_f64() / self.batch as f64);
    }

    fn median(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        s[s.len() / 2]
    }

    /// The fastest repetition, less moved by a noisy machine than the median.
    fn fastest(&self) -> f64 {
        self.samples.iter().cloned().fold(f64::INFINITY, f64::min)
    }

    /// (max − min) / median over the repetitions: the noise of this variant.
    fn spread(&self) -> f64 {
        let lo = self.fastest();
        let hi = self.samples.iter().cloned().fold(0.0, f64::max);
        (hi - lo) / self.median()
    }
}

struct Bench<'a> {
    function: &'static str,
    variants: Vec<Variant<'a>>,
}

impl<'a> Bench<'a> {
    /// The variant called `name`.
    fn variant(&self, name: &str) -> &Variant<'a> {
        self.variants
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("{}: no variant {name}", self.function))
    }
}

fn fmt_time(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn main() {
    let x = rosen_input();
    let vx = direction(x.len());
    let x0 = lorenz_input();
    let v3 = direction(3);
    let u0 = heat_input();
    let vu = direction(u0.len());
    let (r, hsteps, lsteps) = (HEAT_R, HEAT_STEPS, LORENZ_STEPS);

    eprintln!("verifying generated gradients against the hand-written adjoints (1e-10 rel)...");
    verify_rosenbrock(&x);
    verify_lorenz(&x0, lsteps);
    verify_heat(&u0, r, hsteps);

    // Issue 48: helpers without attributes against the same code written out.
    let (nh, nx) = (64, 256);
    let w1: Vec<f64> = (0..nh * nx)
        .map(|i| 0.01 * (i as f64 * 0.37).sin())
        .collect();
    let w2: Vec<f64> = (0..nh).map(|i| 0.1 * (i as f64 * 0.11).cos()).collect();
    let xin: Vec<f64> = (0..nx).map(|i| (i as f64 * 0.05).sin()).collect();
    let (mut dw1, mut dw2, mut dxin) = (vec![0.0; nh * nx], vec![0.0; nh], vec![0.0; nx]);
    let (mut ew1, mut ew2, mut exin) = (vec![0.0; nh * nx], vec![0.0; nh], vec![0.0; nx]);
    {
        let (mut a1, mut a2, mut ax) = (vec![0.0; nh * nx], vec![0.0; nh], vec![0.0; nx]);
        let (mut b1, mut b2, mut bx) = (vec![0.0; nh * nx], vec![0.0; nh], vec![0.0; nx]);
        let va = two_layer_helpers_rev(&w1, &mut a1, &w2, &mut a2, &xin, &mut ax, 1.0);
        let vb = two_layer_inline_rev(&w1, &mut b1, &w2, &mut b2, &xin, &mut bx, 1.0);
        let same = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs()))
        };
        assert!(
            (va - vb).abs() <= 1e-12 * vb.abs()
                && same(&a1, &b1)
                && same(&a2, &b2)
                && same(&ax, &bx),
            "the helper form and the written-out form differ"
        );
    }

    // Issue 47: structs against the flat parameters they stand for.
    let poly = Poly {
        bias: 0.3,
        coef: vec![0.5, -0.2, 0.1, 0.05],
    };
    let pts: Vec<f64> = (0..100_000).map(|i| (i as f64 * 1e-5).sin()).collect();
    let pys: Vec<f64> = pts.iter().map(|t| (2.0 * t).cos()).collect();
    let mut dpoly = phidiff::Differentiable::zero_like(&poly);
    let (mut dbias, mut dcoef) = (0.0, vec![0.0; 4]);
    let bodies: Vec<Body> = (0..400)
        .map(|i| {
            let a = i as f64;
            Body {
                pos: [a.sin() * 10.0, a.cos() * 10.0, 0.1 * a],
                vel: [0.01 * a.cos(), 0.02, -0.01],
                mass: 1.0 + 0.01 * a,
            }
        })
        .collect();
    let mut dbodies: Vec<Body> = bodies
        .iter()
        .map(phidiff::Differentiable::zero_like)
        .collect();
    let mut hbodies = dbodies.clone();
    let bpos: Vec<[f64; 3]> = bodies.iter().map(|b| b.pos).collect();
    let bvel: Vec<[f64; 3]> = bodies.iter().map(|b| b.vel).collect();
    let (mesh_p, mesh_t) = mesh_grid(40);
    let (mut dmesh_v, mut dmesh_i) = (vec![0.0; mesh_p.len()], vec![0.0; mesh_p.len()]);
    let bmass: Vec<f64> = bodies.iter().map(|b| b.mass).collect();
    let (mut dbpos, mut dbvel, mut dbmass) =
        (vec![[0.0; 3]; 400], vec![[0.0; 3]; 400], vec![0.0; 400]);
    {
        let (v1, g1) = poly_loss_grad(&poly, &pts, &pys);
        let (v2, (gb, gc)) = poly_loss_flat_grad(poly.bias, &poly.coef, &pts, &pys);
        assert!(
            (v1 - v2).abs() <= 1e-12 * v1.abs() && (g1.bias - gb).abs() <= 1e-9 * gb.abs(),
            "poly_loss"
        );
        assert!(
            g1.coef
                .iter()
                .zip(&gc)
                .all(|(a, b)| (a - b).abs() <= 1e-9 * b.abs()),
            "poly_loss's coef"
        );
        let (mut mv, mut mi) = (vec![0.0; mesh_p.len()], vec![0.0; mesh_p.len()]);
        let a0 = mesh_area_values_rev(&mesh_p, &mut mv, &mesh_t, 1.0);
        let a1 = mesh_area_inline_rev(&mesh_p, &mut mi, &mesh_t, 1.0);
        assert!(
            (a0 - a1).abs() <= 1e-12 * a1.abs()
                && mv
                    .iter()
                    .zip(&mi)
                    .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())),
            "the Vec3 value form and the written-out mesh area differ"
        );
        let mut hb: Vec<Body> = bodies
            .iter()
            .map(phidiff::Differentiable::zero_like)
            .collect();
        let e0 = system_energy_helpers_rev(&bodies, &mut hb, 1.0);
        let (e1, h1) = system_energy_grad(&bodies);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
        assert!(
            close(e0, e1)
                && hb.iter().zip(&h1).all(|(p, q)| {
                    (0..3).all(|k| close(p.pos[k], q.pos[k]) && close(p.vel[k], q.vel[k]))
                        && close(p.mass, q.mass)
                }),
            "the struct helper form and the written-out form differ"
        );
        let (e2, (hp, _, hm)) = system_energy_flat_grad(&bpos, &bvel, &bmass);
        assert!((e1 - e2).abs() <= 1e-12 * e1.abs(), "system_energy");
        assert!(
            h1.iter()
                .zip(&hm)
                .all(|(b, m)| (b.mass - m).abs() <= 1e-9 * m.abs()),
            "system_energy's masses"
        );
        assert!(
            h1.iter()
                .zip(&hp)
                .all(|(b, p)| (b.pos[0] - p[0]).abs() <= 1e-9 * (1.0 + p[0].abs())),
            "system_energy's positions"
        );
    }

    // Issue 47: the ADBench programs as users write them (structs, rows, helpers) against
    // the flat programs first written for phidiff, on the scoreboard's inputs.
    let gd = adbench::read_gmm(&adbench::data("gmm/1k/gmm_d10_K25.txt"));
    let glg = adbench::ln_multigamma(0.5 * (gd.d + gd.m + 1) as f64, gd.d);
    let theta = gmm::GmmParams::from_flat(&gd.alphas, &gd.means, &gd.icf, gd.d);
    let gpoints: Vec<Vec<f64>> = gd.x.chunks(gd.d).map(<[f64]>::to_vec).collect();
    let wishart = gmm::Wishart {
        gamma: gd.gamma,
        m: gd.m,
    };
    let mut dtheta = phidiff::Differentiable::zero_like(&theta);
    let (mut gda, mut gdm, mut gdi) = (
        vec![0.0; gd.alphas.len()],
        vec![0.0; gd.means.len()],
        vec![0.0; gd.icf.len()],
    );
    let ld = adbench::read_lstm(&adbench::data("lstm/lstm_l2_c1024.txt"));
    let layers = lstm::layers_from_flat(&ld.main_params, ld.b);
    let extra = lstm::extra_from_flat(&ld.extra_params, ld.b);
    let lrows: Vec<Vec<f64>> = ld.sequence.chunks(ld.b).map(<[f64]>::to_vec).collect();
    let mut dlayers: Vec<lstm::LstmLayer> = layers
        .iter()
        .map(phidiff::Differentiable::zero_like)
        .collect();
    let mut dextra = phidiff::Differentiable::zero_like(&extra);
    let (mut ldm, mut lde) = (
        vec![0.0; ld.main_params.len()],
        vec![0.0; ld.extra_params.len()],
    );
    let bd = adbench::read_ba(&adbench::data("ba/ba1_n49_m7776_p31843.txt"));
    let (mut bj, mut bj2) = (ba::SparseJ::new(&bd), ba::SparseJ::new(&bd));
    {
        let v1 = gmm::gmm_objective_rev(&theta, &mut dtheta, &gpoints, &wishart, glg, 1.0);
        let v2 = gmm::gmm_objective_flat_rev(
            &gd.alphas, &mut gda, &gd.means, &mut gdm, &gd.icf, &mut gdi, &gd.x, gd.d, gd.k, gd.n,
            gd.gamma, gd.m, glg, 1.0,
        );
        let mut g1 = vec![0.0; gd.alphas.len() + gd.means.len() + gd.icf.len()];
        dtheta.write_flat(&mut g1);
        let g2 = [&gda[..], &gdm, &gdi].concat();
        assert!(
            (v1 - v2).abs() <= 1e-12 * v1.abs()
                && g1
                    .iter()
                    .zip(&g2)
                    .all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + b.abs())),
            "gmm: struct and flat forms"
        );
        let mut state = lstm::state_from_flat(&ld.state, ld.b);
        let mut dstate: Vec<lstm::LayerState> = state
            .iter()
            .map(phidiff::Differentiable::zero_like)
            .collect();
        let v3 = lstm::lstm_objective_rev(
            &layers,
            &mut dlayers,
            &extra,
            &mut dextra,
            &mut state,
            &mut dstate,
            &lrows,
            1.0,
        );
        let (mut flat_state, mut dflat_state) = (ld.state.clone(), vec![0.0; ld.state.len()]);
        let v4 = lstm::lstm_objective_flat_rev(
            &ld.main_params,
            &mut ldm,
            &ld.extra_params,
            &mut lde,
            &mut flat_state,
            &mut dflat_state,
            &ld.sequence,
            ld.l,
            ld.c,
            ld.b,
            1.0,
        );
        let mut g3 = vec![0.0; ld.main_params.len()];
        lstm::write_params(&dlayers, &dextra, &mut g3);
        assert!(
            (v3 - v4).abs() <= 1e-12 * v3.abs()
                && g3
                    .iter()
                    .zip(&ldm)
                    .all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + b.abs())),
            "lstm: struct and flat forms"
        );
        ba::ba_jacobian(&bd, &mut bj);
        ba::ba_jacobian_flat(&bd, &mut bj2);
        assert!(
            bj.vals
                .iter()
                .zip(&bj2.vals)
                .all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + b.abs())),
            "ba: struct and flat forms"
        );
    }

    // Issue 46: iterator chains against the index loops they stand for.
    let qn = 1000;
    let qm: Vec<Vec<f64>> = (0..qn)
        .map(|i| {
            (0..qn)
                .map(|j| ((i * qn + j) as f64 * 1e-3).sin())
                .collect()
        })
        .collect();
    let qx: Vec<f64> = (0..qn).map(|i| (i as f64 * 0.01).cos()).collect();
    let (mut qgm, mut qgm2) = (vec![vec![0.0; qn]; qn], vec![vec![0.0; qn]; qn]);
    let (mut qgx, mut qgx2) = (vec![0.0; qn], vec![0.0; qn]);
    {
        let (v1, g1) = rosenbrock_grad(&x);
        let (v2, g2) = rosenbrock_zip_grad(&x);
        assert!((v1 - v2).abs() <= 1e-9 * v1.abs(), "rosenbrock_zip's value");
        assert!(
            g1.iter()
                .zip(&g2)
                .all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + a.abs())),
            "rosenbrock_zip's gradient"
        );
        let (w1, h1) = sin_weighted_loop_grad(&x);
        let (w2, h2) = sin_weighted_fold_grad(&x);
        assert!(
            (w1 - w2).abs() <= 1e-9 * w1.abs(),
            "sin_weighted_fold's value"
        );
        assert!(
            h1.iter()
                .zip(&h2)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + a.abs())),
            "sin_weighted_fold's gradient"
        );
        let (q1, (gm1, gx1)) = quad_rows_iter_grad(&qm, &qx);
        let (q2, (gm2, gx2)) = quad_rows_index_grad(&qm, &qx);
        assert!((q1 - q2).abs() <= 1e-9 * q1.abs(), "quad_rows_iter's value");
        assert!(
            gm1.iter()
                .flatten()
                .chain(&gx1)
                .zip(gm2.iter().flatten().chain(&gx2))
                .all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + a.abs())),
            "quad_rows_iter's gradient"
        );
        let (w3, h3) = sin_weighted_pushed_grad(&x);
        let (w4, h4) = sin_weighted_buffer_grad(&x);
        assert!(
            (w3 - w1).abs() <= 1e-9 * w1.abs() && w3 == w4,
            "sin_weighted_pushed's value"
        );
        assert!(
            h3.iter()
                .zip(h4.iter().zip(&h1))
                .all(|(a, (b, c))| a == b && (a - c).abs() <= 1e-12 * (1.0 + c.abs())),
            "sin_weighted_pushed's gradient"
        );
    }
    let (mut ps, mut ps2) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    let (mut zs, mut zs2, mut fs, mut fs2) = (
        vec![0.0; x.len()],
        vec![0.0; x.len()],
        vec![0.0; x.len()],
        vec![0.0; x.len()],
    );
    let mut rs = vec![0.0; x.len()];
    let mut rs2 = vec![0.0; x.len()];
    let mut rs3 = vec![0.0; x.len()];
    let mut rz = vec![0.0; x.len()];
    let (mut xp, mut xm) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    let (mut ls, mut ls2) = (vec![0.0; 3], vec![0.0; 3]);
    let (mut hs, mut hs2) = (vec![0.0; u0.len()], vec![0.0; u0.len()]);
    let (mut up, mut um) = (vec![0.0; u0.len()], vec![0.0; u0.len()]);

    let mut benches = vec![
        Bench {
            function: "rosenbrock n=1e6",
            variants: vec![
                Variant::new("primal", || {
                    black_box(rosenbrock(black_box(&x)));
                }),
                Variant::new("fwd", || {
                    black_box(rosenbrock_fwd(black_box(&x), black_box(&vx)));
                }),
                Variant::new("rev", || {
                    black_box(rosenbrock_rev(black_box(&x), black_box(&mut rs), 1.0));
                }),
                Variant::new("hand", || {
                    black_box(rosenbrock_hand(black_box(&x), black_box(&mut rs2), 1.0));
                }),
                Variant::new("hand_naive", || {
                    black_box(rosenbrock_hand_naive(
                        black_box(&x),
                        black_box(&mut rs3),
                        1.0,
                    ));
                }),
                Variant::new("fd", || {
                    black_box(rosenbrock_fd(
                        black_box(&x),
                        black_box(&vx),
                        &mut xp,
                        &mut xm,
                    ));
                }),
                Variant::new("grad", || {
                    black_box(rosenbrock_grad(black_box(&x)));
                }),
                Variant::new("zero", || {
                    black_box(&mut rz).fill(0.0);
                }),
            ],
        },
        Bench {
            function: "helper forms",
            variants: vec![
                Variant::new("helpers rev", || {
                    black_box(two_layer_helpers_rev(
                        black_box(&w1),
                        black_box(&mut dw1),
                        &w2,
                        &mut dw2,
                        &xin,
                        &mut dxin,
                        1.0,
                    ));
                }),
                Variant::new("written out rev", || {
                    black_box(two_layer_inline_rev(
                        black_box(&w1),
                        black_box(&mut ew1),
                        &w2,
                        &mut ew2,
                        &xin,
                        &mut exin,
                        1.0,
                    ));
                }),
            ],
        },
        Bench {
            function: "value forms",
            variants: vec![
                Variant::new("values rev", || {
                    black_box(mesh_area_values_rev(
                        black_box(&mesh_p),
                        black_box(&mut dmesh_v),
                        &mesh_t,
                        1.0,
                    ));
                }),
                Variant::new("written out rev", || {
                    black_box(mesh_area_inline_rev(
                        black_box(&mesh_p),
                        black_box(&mut dmesh_i),
                        &mesh_t,
                        1.0,
                    ));
                }),
            ],
        },
        Bench {
            function: "struct forms",
            variants: vec![
                Variant::new("struct rev", || {
                    black_box(poly_loss_rev(
                        black_box(&poly),
                        black_box(&mut dpoly),
                        &pts,
                        &pys,
                        1.0,
                    ));
                }),
                Variant::new("flat rev", || {
                    let (v, b) = poly_loss_flat_rev(
                        black_box(poly.bias),
                        black_box(&poly.coef),
                        black_box(&mut dcoef),
                        &pts,
                        &pys,
                        1.0,
                    );
                    dbias += b;
                    black_box(v);
                }),
                Variant::new("bodies rev", || {
                    black_box(system_energy_rev(
                        black_box(&bodies),
                        black_box(&mut dbodies),
                        1.0,
                    ));
                }),
                Variant::new("bodies helpers rev", || {
                    black_box(system_energy_helpers_rev(
                        black_box(&bodies),
                        black_box(&mut hbodies),
                        1.0,
                    ));
                }),
                Variant::new("fields rev", || {
                    black_box(system_energy_flat_rev(
                        black_box(&bpos),
                        black_box(&mut dbpos),
                        black_box(&bvel),
                        black_box(&mut dbvel),
                        black_box(&bmass),
                        black_box(&mut dbmass),
                        1.0,
                    ));
                }),
            ],
        },
        Bench {
            function: "ADBench as users write it",
            variants: vec![
                Variant::new("gmm struct rev", || {
                    black_box(gmm::gmm_objective_rev(
                        black_box(&theta),
                        black_box(&mut dtheta),
                        &gpoints,
                        &wishart,
                        glg,
                        1.0,
                    ));
                }),
                Variant::new("gmm flat rev", || {
                    black_box(gmm::gmm_objective_flat_rev(
                        black_box(&gd.alphas),
                        &mut gda,
                        &gd.means,
                        &mut gdm,
                        &gd.icf,
                        &mut gdi,
                        &gd.x,
                        gd.d,
                        gd.k,
                        gd.n,
                        gd.gamma,
                        gd.m,
                        glg,
                        1.0,
                    ));
                }),
                Variant::new("lstm struct rev", || {
                    let mut state = lstm::state_from_flat(&ld.state, ld.b);
                    let mut dstate: Vec<lstm::LayerState> = state
                        .iter()
                        .map(phidiff::Differentiable::zero_like)
                        .collect();
                    black_box(lstm::lstm_objective_rev(
                        black_box(&layers),
                        &mut dlayers,
                        &extra,
                        &mut dextra,
                        &mut state,
                        &mut dstate,
                        &lrows,
                        1.0,
                    ));
                }),
                Variant::new("lstm flat rev", || {
                    let (mut state, mut dstate) = (ld.state.clone(), vec![0.0; ld.state.len()]);
                    black_box(lstm::lstm_objective_flat_rev(
                        black_box(&ld.main_params),
                        &mut ldm,
                        &ld.extra_params,
                        &mut lde,
                        &mut state,
                        &mut dstate,
                        &ld.sequence,
                        ld.l,
                        ld.c,
                        ld.b,
                        1.0,
                    ));
                }),
                Variant::new("ba struct jacobian", || {
                    ba::ba_jacobian(black_box(&bd), &mut bj);
                    black_box(&bj);
                }),
                Variant::new("ba flat jacobian", || {
                    ba::ba_jacobian_flat(black_box(&bd), &mut bj2);
                    black_box(&bj2);
                }),
            ],
        },
        Bench {
            function: "iterator forms n=1e6",
            variants: vec![
                Variant::new("rosen loop rev", || {
                    black_box(rosenbrock_rev(black_box(&x), black_box(&mut zs), 1.0));
                }),
                Variant::new("rosen zip rev", || {
                    black_box(rosenbrock_zip_rev(black_box(&x), black_box(&mut zs2), 1.0));
                }),
                Variant::new("rosen loop primal", || {
                    black_box(rosenbrock(black_box(&x)));
                }),
                Variant::new("rosen zip primal", || {
                    black_box(rosenbrock_zip(black_box(&x)));
                }),
                Variant::new("for rev", || {
                    black_box(sin_weighted_loop_rev(
                        black_box(&x),
                        black_box(&mut fs),
                        1.0,
                    ));
                }),
                Variant::new("fold rev", || {
                    black_box(sin_weighted_fold_rev(
                        black_box(&x),
                        black_box(&mut fs2),
                        1.0,
                    ));
                }),
                Variant::new("pushed rev", || {
                    black_box(sin_weighted_pushed_rev(
                        black_box(&x),
                        black_box(&mut ps),
                        1.0,
                    ));
                }),
                Variant::new("buffer rev", || {
                    black_box(sin_weighted_buffer_rev(
                        black_box(&x),
                        black_box(&mut ps2),
                        1.0,
                    ));
                }),
                Variant::new("rows iter rev", || {
                    black_box(quad_rows_iter_rev(
                        black_box(&qm),
                        black_box(&mut qgm),
                        black_box(&qx),
                        black_box(&mut qgx),
                        1.0,
                    ));
                }),
                Variant::new("rows index rev", || {
                    black_box(quad_rows_index_rev(
                        black_box(&qm),
                        black_box(&mut qgm2),
                        black_box(&qx),
                        black_box(&mut qgx2),
                        1.0,
                    ));
                }),
            ],
        },
        Bench {
            function: "lorenz rk4 10k",
            variants: vec![
                Variant::new("primal", || {
                    black_box(lorenz(black_box(&x0), black_box(lsteps)));
                }),
                Variant::new("fwd", || {
                    black_box(lorenz_fwd(
                        black_box(&x0),
                        black_box(&v3),
                        black_box(lsteps),
                    ));
                }),
                Variant::new("rev", || {
                    black_box(lorenz_rev(
                        black_box(&x0),
                        black_box(&mut ls),
                        black_box(lsteps),
                        1.0,
                    ));
                }),
                Variant::new("hand", || {
                    black_box(lorenz_hand(
                        black_box(&x0),
                        black_box(&mut ls2),
                        black_box(lsteps),
                        1.0,
                    ));
                }),
                Variant::new("fd", || {
                    black_box(lorenz_fd(black_box(&x0), black_box(&v3), black_box(lsteps)));
                }),
            ],
        },
        Bench {
            function: "heat n=1000 x1000",
            variants: vec![
                Variant::new("primal", || {
                    black_box(heat(black_box(&u0), black_box(r), black_box(hsteps)));
                }),
                Variant::new("fwd", || {
                    black_box(heat_fwd(
                        black_box(&u0),
                        black_box(&vu),
                        black_box(r),
                        0.3,
                        black_box(hsteps),
                    ));
                }),
                Variant::new("rev", || {
                    black_box(heat_rev(
                        black_box(&u0),
                        black_box(&mut hs),
                        black_box(r),
                        black_box(hsteps),
                        1.0,
                    ));
                }),
                Variant::new("hand", || {
                    black_box(heat_hand(
                        black_box(&u0),
                        black_box(&mut hs2),
                        black_box(r),
                        black_box(hsteps),
                        1.0,
                    ));
                }),
                Variant::new("fd", || {
                    black_box(heat_fd(
                        black_box(&u0),
                        black_box(&vu),
                        black_box(r),
                        0.3,
                        black_box(hsteps),
                        &mut up,
                        &mut um,
                    ));
                }),
            ],
        },
    ];

    for b in &mut benches {
        for v in &mut b.variants {
            v.calibrate();
        }
    }
    eprintln!(
        "timing: {REPS} interleaved repetitions, batches of ~{} ms...",
        BATCH_TARGET.as_millis()
    );
    for _ in 0..REPS {
        for b in &mut benches {
            for v in &mut b.variants {
                v.sample();
            }
        }
    }

    println!();
    println!(
        "| function | primal | fwd | rev | hand adjoint | FD (1 dir) | rev/primal | rev/hand | hand/primal | fwd/primal |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for b in benches
        .iter()
        .filter(|b| b.variants.iter().any(|v| v.name == "primal"))
    {
        let m = |name: &str| b.variant(name).median();
        let (p, f, rv, h, fd) = (m("primal"), m("fwd"), m("rev"), m("hand"), m("fd"));
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2}× | {:.2}× | {:.2}× | {:.2}× |",
            b.function,
            fmt_time(p),
            fmt_time(f),
            fmt_time(rv),
            fmt_time(h),
            fmt_time(fd),
            rv / p,
            rv / h,
            h / p,
            f / p
        );
    }
    println!();
    for b in benches.iter().filter(|b| b.function == "helper forms") {
        let m = |name: &str| b.variant(name).median();
        let fastest = |name: &str| b.variant(name).fastest();
        println!(
            "helper forms: two_layer with helpers (layer → sigmoid, dot) rev {} vs written out {} ({:.3}×, fastest {:.3}×)",
            fmt_time(m("helpers rev")),
            fmt_time(m("written out rev")),
            m("helpers rev") / m("written out rev"),
            fastest("helpers rev") / fastest("written out rev"),
        );
    }
    for b in benches.iter().filter(|b| b.function == "value forms") {
        let m = |name: &str| b.variant(name).median();
        let fastest = |name: &str| b.variant(name).fastest();
        println!(
            "helper forms: mesh area through Vec3 values (Vec3::at, vsub, vcross, n.norm()) rev {} vs written out {} ({:.3}×, fastest {:.3}×)",
            fmt_time(m("values rev")),
            fmt_time(m("written out rev")),
            m("values rev") / m("written out rev"),
            fastest("values rev") / fastest("written out rev"),
        );
    }
    for b in benches.iter().filter(|b| b.function == "struct forms") {
        let m = |name: &str| b.variant(name).median();
        let fastest = |name: &str| b.variant(name).fastest();
        println!(
            "struct forms: poly_loss(p: &Poly) rev {} vs fields as parameters {} ({:.3}×, fastest {:.3}×); energy(&[Body]) rev {} vs one slice per field {} ({:.3}×, fastest {:.3}×)",
            fmt_time(m("struct rev")),
            fmt_time(m("flat rev")),
            m("struct rev") / m("flat rev"),
            fastest("struct rev") / fastest("flat rev"),
            fmt_time(m("bodies rev")),
            fmt_time(m("fields rev")),
            m("bodies rev") / m("fields rev"),
            fastest("bodies rev") / fastest("fields rev"),
        );
        println!(
            "helper forms: energy(&[Body]) through b.kinetic() and pair_potential(b, other) rev {} vs written out {} ({:.3}×, fastest {:.3}×)",
            fmt_time(m("bodies helpers rev")),
            fmt_time(m("bodies rev")),
            m("bodies helpers rev") / m("bodies rev"),
            fastest("bodies helpers rev") / fastest("bodies rev"),
        );
    }
    for b in benches
        .iter()
        .filter(|b| b.function == "ADBench as users write it")
    {
        let m = |name: &str| b.variant(name).median();
        let fastest = |name: &str| b.variant(name).fastest();
        let row = |what: &str, a: &str, b: &str| {
            format!(
                "{what} {} vs flat {} ({:.3}×, fastest {:.3}×)",
                fmt_time(m(a)),
                fmt_time(m(b)),
                m(a) / m(b),
                fastest(a) / fastest(b)
            )
        };
        println!(
            "ADBench as users write it: {}; {}; {}",
            row("GMM d=10 K=25 rev", "gmm struct rev", "gmm flat rev"),
            row("LSTM l=2 c=1024 rev", "lstm struct rev", "lstm flat rev"),
            row("BA ba1 Jacobian", "ba struct jacobian", "ba flat jacobian"),
        );
    }
    for b in benches
        .iter()
        .filter(|b| b.function.starts_with("iterator"))
    {
        let m = |name: &str| b.variant(name).median();
        println!(
            "iterator forms (n=1e6): rosenbrock zip(skip(1)) rev {} vs index loop {} ({:.3}×; primals {:.3}×); fold rev {} vs for loop {} ({:.3}×); pushed Vec rev {} vs vec![0.0; n] {} ({:.3}×); rows as views (xᵀMx, 1000×1000) rev {} vs index loops {} ({:.3}×)",
            fmt_time(m("rosen zip rev")),
            fmt_time(m("rosen loop rev")),
            m("rosen zip rev") / m("rosen loop rev"),
            m("rosen zip primal") / m("rosen loop primal"),
            fmt_time(m("fold rev")),
            fmt_time(m("for rev")),
            m("fold rev") / m("for rev"),
            fmt_time(m("pushed rev")),
            fmt_time(m("buffer rev")),
            m("pushed rev") / m("buffer rev"),
            fmt_time(m("rows iter rev")),
            fmt_time(m("rows index rev")),
            m("rows iter rev") / m("rows index rev"),
        );
        // The fastest repetition of each, less moved by a noisy machine than the median.
        let fastest = |name: &str| b.variant(name).fastest();
        let ratio = |a: &str, b: &str| fastest(a) / fastest(b);
        println!(
            "iterator forms, fastest repetitions: zip(skip(1)) {:.3}×, fold {:.3}×, pushed Vec {:.3}×, rows as views {:.3}×",
            ratio("rosen zip rev", "rosen loop rev"),
            ratio("fold rev", "for rev"),
            ratio("pushed rev", "buffer rev"),
            ratio("rows iter rev", "rows index rev"),
        );
    }
    for b in benches
        .iter()
        .filter(|b| b.variants.iter().any(|v| v.name == "primal"))
    {
        let m = |name: &str| {
            b.variants
                .iter()
                .find(|v| v.name == name)
                .map(|v| v.median())
        };
        let (p, rv) = (m("primal").unwrap(), m("rev").unwrap());
        if let Some(naive) = m("hand_naive") {
            println!(
                "{}: naive fused hand adjoint (g[i] += …; g[i+1] += …) {} ({:.2}× primal; rev/naive {:.2}×)",
                b.function,
                fmt_time(naive),
                naive / p,
                rv / naive
            );
        }
        if let (Some(z), Some(g)) = (m("zero"), m("grad")) {
            println!(
                "{}: zeroing the shadow {} ({:.2}× primal); _grad (allocates its zeroed buffer) {} ({:.2}× primal)",
                b.function,
                fmt_time(z),
                z / p,
                fmt_time(g),
                g / p
            );
        }
    }
    println!("noise, (max−min)/median over the {REPS} repetitions:");
    for b in &benches {
        let parts: Vec<String> = b
            .variants
            .iter()
            .map(|v| format!("{} {:.0}%", v.name, 100.0 * v.spread()))
            .collect();
        println!("  {}: {}", b.function, parts.join(", "));
    }
}

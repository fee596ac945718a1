//! Parallel adjoint report (issue 5, item 6): for each program of
//! `benches/support/parallel_programs.rs`, the primal and the gradient on 1 and 2 rayon
//! threads, the gradient's parallel speedup against the primal's (the target is at least
//! 90 % of it), and ParDiff's three-way ablation of the adjoint:
//! - the serial program (serial loops, a counter-indexed tape);
//! - the parallel program with every shared adjoint addition atomic
//!   (`parallel_adjoint = atomic`);
//! - the parallel program with the summation-aware adjoint (the default).
//!
//! ```text
//! cargo run --release --example parallel_report
//! ```
//!
//! Every gradient is first checked against the serial program's (relative 1e-9 of the
//! largest component: the atomic variant adds in the threads' order). Then each variant is
//! timed on each pool, the runs of all variants and pools of a program interleaved, and
//! the table shows the fastest of 15 runs (interference only slows runs down). The gradients reuse their buffers, as the primal reuses its output, so
//! allocation and first-touch page faults are not timed. Ratios come from one run; the
//! machine is shared, so read them, not the absolute times.
//!
//! A last line times the gather's two memory patterns in plain Rust loops: reads at
//! random indices (its primal) and adds at random indices into one private array per
//! thread (the least its adjoint's scatter can cost). How far each one speeds up on 2
//! threads bounds what the gather's gradient speedup can be on the machine.

#[path = "../benches/support/parallel_programs.rs"]
mod programs;
use programs::*;

use rayon::prelude::*;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

const REPS: usize = 15;

/// The fastest of `REPS` runs of each job `(function, pool)` of `plan`. The jobs are
/// interleaved, one run of each per round after a warm-up round, so that a stretch of
/// interference on the shared machine slows all of them alike instead of one; and
/// interference only ever slows a run down, so the minimum is the stable statistic.
fn time_interleaved(
    fns: &mut [&mut (dyn FnMut() + Send)],
    pools: &[rayon::ThreadPool],
    plan: &[(usize, usize)],
) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; plan.len()];
    for round in 0..=REPS {
        for (&(f, pool), best) in plan.iter().zip(&mut best) {
            let f = &mut *fns[f];
            let t = pools[pool].install(|| {
                let s = Instant::now();
                f();
                s.elapsed().as_secs_f64()
            });
            if round > 0 {
                *best = best.min(t);
            }
        }
    }
    best
}

/// Largest difference relative to the largest component of `want`.
fn rel_diff(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(f64::MIN_POSITIVE, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
        / scale
}

/// A gradient variant: its own buffers, allocated once. `fresh` zeroes them first and
/// returns the flattened gradient (checking); timed calls reuse them as they are (the
/// gradient then accumulates, which costs the same), so allocation and first-touch page
/// faults stay out of the times, as they do for the primal's output buffer.
type Variant<'a> = Box<dyn FnMut(bool) -> Vec<f64> + Send + 'a>;

/// One program: its primal, and its gradient in the three variants.
struct Program<'a> {
    name: &'static str,
    size: String,
    primal: Box<dyn FnMut() + Send + 'a>,
    par: Variant<'a>,
    atomic: Variant<'a>,
    serial: Variant<'a>,
}

fn main() -> ExitCode {
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .iter()
        .map(|&t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .expect("a pool")
        })
        .collect();
    let mut failures = Vec::new();

    let n1 = 1 << 20;
    let u1 = field(n1);
    let (m2, w2) = (1000, 1000);
    let u2 = field(m2 * w2);
    let ng = 1 << 20;
    let xg = field(ng);
    let idx = indices(ng, ng);
    let (np, k, d) = (100_000, 8, 4);
    let xp: Vec<f64> = (0..np * d)
        .map(|q| (q as f64 * 0.618).sin() * 2.0)
        .collect();
    let means: Vec<f64> = (0..k * d).map(|q| (q as f64 * 1.3).cos()).collect();
    let w: Vec<f64> = (0..k).map(|c| 0.1 * c as f64 - 0.2).collect();

    type Heat1d = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, f64) -> (f64, f64);
    let heat1d = |f: Heat1d| -> Variant {
        let (mut du, mut out, mut dout) = (vec![0.0; n1], vec![0.0; n1], vec![0.0; n1]);
        let u1 = &u1;
        Box::new(move |fresh| {
            if fresh {
                du.fill(0.0);
            }
            let (_, dr) = f(u1, &mut du, &mut out, &mut dout, 0.2, 1.0);
            if !fresh {
                return Vec::new();
            }
            let mut g = du.clone();
            g.push(dr);
            g
        })
    };
    type Heat2d = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64);
    let heat2d = |f: Heat2d| -> Variant {
        let n = m2 * w2;
        let (mut du, mut out, mut dout) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let u2 = &u2;
        Box::new(move |fresh| {
            if fresh {
                du.fill(0.0);
            }
            let (_, dr) = f(u2, &mut du, &mut out, &mut dout, 0.2, w2, 1.0);
            if !fresh {
                return Vec::new();
            }
            let mut g = du.clone();
            g.push(dr);
            g
        })
    };
    let gather = |f: fn(&[f64], &mut [f64], &[usize], f64) -> f64| -> Variant {
        let mut dx = vec![0.0; ng];
        let (xg, idx) = (&xg, &idx);
        Box::new(move |fresh| {
            if fresh {
                dx.fill(0.0);
            }
            f(xg, &mut dx, idx, 1.0);
            if fresh {
                dx.clone()
            } else {
                Vec::new()
            }
        })
    };
    type Gmm = fn(&[f64], &[f64], &mut [f64], &[f64], &mut [f64], usize, f64) -> f64;
    let gmm = |f: Gmm| -> Variant {
        let (mut gm, mut gw) = (vec![0.0; k * d], vec![0.0; k]);
        let (xp, means, w) = (&xp, &means, &w);
        Box::new(move |fresh| {
            if fresh {
                gm.fill(0.0);
                gw.fill(0.0);
            }
            f(xp, means, &mut gm, w, &mut gw, d, 1.0);
            let mut g = gm.clone();
            g.extend(&gw);
            g
        })
    };
    let mut out1 = vec![0.0; n1];
    let mut out2 = vec![0.0; m2 * w2];
    let mut programs = vec![
        Program {
            name: "heat 1-D step",
            size: format!("{n1} cells"),
            primal: Box::new(|| {
                black_box(heat1d_par(&u1, &mut out1, 0.2));
            }),
            par: heat1d(heat1d_par_rev),
            atomic: heat1d(heat1d_atomic_rev),
            serial: heat1d(heat1d_serial_rev),
        },
        Program {
            name: "heat 2-D step (rows)",
            size: format!("{m2}×{w2}"),
            primal: Box::new(|| {
                black_box(heat2d_par(&u2, &mut out2, 0.2, w2));
            }),
            par: heat2d(heat2d_par_rev),
            atomic: heat2d(heat2d_atomic_rev),
            serial: heat2d(heat2d_serial_rev),
        },
        Program {
            name: "gather at random indices",
            size: format!("{ng}"),
            primal: Box::new(|| {
                black_box(gather_par(&xg, &idx));
            }),
            par: gather(gather_par_rev),
            atomic: gather(gather_atomic_rev),
            serial: gather(gather_serial_rev),
        },
        Program {
            name: "GMM over points",
            size: format!("n={np} k={k} d={d}"),
            primal: Box::new(|| {
                black_box(gmm_par(&xp, &means, &w, d));
            }),
            par: gmm(gmm_par_rev),
            atomic: gmm(gmm_atomic_rev),
            serial: gmm(gmm_serial_rev),
        },
    ];

    println!("| program | size | primal 1 / 2 threads | gradient 1 / 2 threads | gradient / primal (2 threads) | primal speedup | gradient speedup | gradient speedup / primal's | atomics everywhere 1 / 2 threads | serial tape |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let ms = |s: f64| format!("{:.2} ms", s * 1e3);
    let mut worst: f64 = f64::INFINITY;
    for p in &mut programs {
        let want = (p.serial)(true);
        for (variant, got) in [
            ("summation-aware", (p.par)(true)),
            ("atomic", (p.atomic)(true)),
        ] {
            let diff = rel_diff(&got, &want);
            if diff.is_nan() || diff > 1e-9 {
                failures.push(format!(
                    "{} {variant}: gradient differs from the serial one by {diff:e}",
                    p.name
                ));
            }
        }
        let Program {
            primal,
            par,
            atomic,
            serial,
            ..
        } = p;
        let mut par = || {
            black_box(par(false));
        };
        let mut atomic = || {
            black_box(atomic(false));
        };
        let mut serial = || {
            black_box(serial(false));
        };
        let t = time_interleaved(
            &mut [&mut **primal, &mut par, &mut atomic, &mut serial],
            &pools,
            &[(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0)],
        );
        let (primal, grad, atom, ser) = ([t[0], t[1]], [t[2], t[3]], [t[4], t[5]], t[6]);
        let (sp, sg) = (primal[0] / primal[1], grad[0] / grad[1]);
        worst = worst.min(sg / sp);
        println!(
            "| {} | {} | {} / {} | {} / {} | {:.2}× | {:.2}× | {:.2}× | {:.0} % | {} / {} | {} |",
            p.name,
            p.size,
            ms(primal[0]),
            ms(primal[1]),
            ms(grad[0]),
            ms(grad[1]),
            grad[1] / primal[1],
            sp,
            sg,
            100.0 * sg / sp,
            ms(atom[0]),
            ms(atom[1]),
            ms(ser),
        );
    }
    // What the machine allows: the gather's primal reads at random indices, its adjoint
    // adds at random indices. The same patterns in plain Rust loops (no phidiff): a
    // parallel sum of `x[idx[i]]`, and `a[idx[i]] += 1` with one private array per thread
    // (each thread takes half the indices), the cheapest parallel scatter there is.
    let mut reads = || {
        black_box(
            (0..ng)
                .into_par_iter()
                .with_min_len(512)
                .map(|i| xg[idx[i]])
                .sum::<f64>(),
        );
    };
    let mut arrays = vec![vec![0.0_f64; ng]; 2];
    let mut adds = || {
        let (a, b) = arrays.split_at_mut(1);
        let add = |cells: &mut [f64], part: &[usize]| part.iter().for_each(|&j| cells[j] += 1.0);
        if rayon::current_num_threads() == 1 {
            add(&mut a[0], &idx);
        } else {
            let (first, second) = idx.split_at(ng / 2);
            rayon::join(|| add(&mut a[0], first), || add(&mut b[0], second));
        }
    };
    let t = time_interleaved(
        &mut [&mut reads, &mut adds],
        &pools,
        &[(0, 0), (0, 1), (1, 0), (1, 1)],
    );
    println!();
    println!(
        "machine, plain loops over {ng} random indices: reads {} / {} (speedup {:.2}×), adds into one private array per thread {} / {} (speedup {:.2}×)",
        ms(t[0]),
        ms(t[1]),
        t[0] / t[1],
        ms(t[2]),
        ms(t[3]),
        t[2] / t[3],
    );
    println!();
    println!(
        "target: gradient speedup ≥ 90 % of the primal's on the same threads; lowest here {:.0} % ({})",
        100.0 * worst,
        if worst >= 0.9 { "met" } else { "NOT met" }
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("FAILED: {f}");
        }
        ExitCode::FAILURE
    }
}

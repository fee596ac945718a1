//! Checkpointed loops reversed straight from the restored state of each step (no taped
//! re-run), and the bodies that must not be: the reverse sweep may re-read a state buffer
//! only where the step has not yet overwritten it. Each body below is written three ways
//! (un-checkpointed, Revolve in memory, periodic on disk) and every checkpointed gradient
//! must equal the un-checkpointed one (rel 1e-12) and finite differences; every `_fwd`
//! passes the dot-product test against its `_rev`.
//!
//! - `swap_step`: reads `u`, writes `next`, swaps: re-read from the restored state.
//! - `copy_back`: a nonlinear read of the scratch `w` written earlier in the same step,
//!   then `u` overwritten from it: `w` as the adjoint needs it is not the restored `w`.
//! - `in_place`: a Gauss–Seidel-like sweep that reads `u[i − 1]` after writing it.
//! - `scalar_while`: scalar states only, read from the restored state, in a `while` loop.
//! - `scalar_and_buffer`: a scalar state (`e`) and a buffer state updated from each
//!   other, with a `while` loop's data-dependent trip count.
//! - `call_step`: the step is a call of a differentiated function, then a swap: a
//!   `Reverse` records the call's snapshots without running it (nothing after it reads
//!   its output).
//! - `call_then_read`: the same call, but its output is read after it (into a scalar
//!   state), so a `Reverse` must run it.

use super::differentiate;
use crate::common::*;

/// One explicit diffusion step with a nonlinear factor, called by `call_step` and
/// `call_then_read`.
#[differentiate(forward, reverse)]
pub fn diffuse(u: &[f64], next: &mut [f64], r: f64) {
    let n = u.len();
    next[0] = u[0];
    next[n - 1] = u[n - 1];
    for i in 1..n - 1 {
        next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[i].cos();
    }
}

macro_rules! bodies {
    ($($suffix:ident $(, #[$ck:meta])?;)*) => { $(
        pub mod $suffix {
            use super::differentiate;
            use super::{diffuse, diffuse_fwd, diffuse_rev};

            #[differentiate(forward, reverse)]
            pub fn call_step(u0: &[f64], r: f64, steps: usize) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                let mut next = vec![0.0; n];
                $(#[$ck])?
                for _ in 0..steps {
                    diffuse(&u, &mut next, r);
                    std::mem::swap(&mut u, &mut next);
                }
                let mut j = 0.0;
                for i in 0..n {
                    j += u[i] * u[i] * (i as f64 + 1.0);
                }
                j
            }

            #[differentiate(forward, reverse)]
            pub fn call_then_read(u0: &[f64], r: f64, steps: usize) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                let mut next = vec![0.0; n];
                let mut e = 1.0;
                $(#[$ck])?
                for _ in 0..steps {
                    diffuse(&u, &mut next, r * e);
                    e = e + 0.1 * next[1].sin();
                    std::mem::swap(&mut u, &mut next);
                }
                let mut j = e;
                for i in 0..n {
                    j += u[i] * u[i] * (i as f64 + 1.0);
                }
                j
            }

            #[differentiate(forward, reverse)]
            pub fn swap_step(u0: &[f64], r: f64, steps: usize) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                let mut next = vec![0.0; n];
                $(#[$ck])?
                for _ in 0..steps {
                    next[0] = u[0];
                    next[n - 1] = u[n - 1];
                    for i in 1..n - 1 {
                        next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[i].cos();
                    }
                    std::mem::swap(&mut u, &mut next);
                }
                let mut j = 0.0;
                for i in 0..n {
                    j += u[i] * u[i] * (i as f64 + 1.0);
                }
                j
            }

            #[differentiate(forward, reverse)]
            pub fn copy_back(u0: &[f64], r: f64, steps: usize) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                let mut w = vec![0.0; n];
                $(#[$ck])?
                for _ in 0..steps {
                    for i in 1..n - 1 {
                        w[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
                    }
                    for i in 1..n - 1 {
                        u[i] = 0.5 * w[i] + 0.5 * w[i].sin() * w[i];
                    }
                }
                let mut j = 0.0;
                for i in 0..n {
                    j += u[i] * w[i];
                }
                j
            }

            #[differentiate(forward, reverse)]
            pub fn in_place(u0: &[f64], a: f64, steps: usize) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                $(#[$ck])?
                for _ in 0..steps {
                    for i in 1..n - 1 {
                        u[i] = a * (u[i - 1] + u[i + 1]) * (0.3 + 0.2 * u[i].cos());
                    }
                }
                let mut j = 0.0;
                for i in 0..n {
                    j += u[i] * u[i];
                }
                j
            }

            #[differentiate(forward, reverse)]
            pub fn scalar_while(x0: &[f64], a: f64) -> f64 {
                let mut x = x0[0];
                let mut y = x0[1];
                let mut t = 0;
                $(#[$ck])?
                while x < 6.0 && t < 80 {
                    x = x + 0.1 * (x * a).sin() + 0.05 * y;
                    y = y * 0.98 + 0.01 * x;
                    t += 1;
                }
                x * y
            }

            #[differentiate(forward, reverse)]
            pub fn scalar_and_buffer(u0: &[f64], k: f64) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                let mut next = vec![0.0; n];
                let mut e = 1.0;
                let mut t = 0;
                $(#[$ck])?
                while e < 3.0 && t < 60 {
                    for i in 0..n {
                        next[i] = u[i] + 0.05 * e * (k * u[(i + 1) % n] - u[i]).tanh();
                    }
                    let mut s = 0.0;
                    for i in 0..n {
                        s += next[i] * next[i];
                    }
                    e = e + 0.02 * s.sqrt() + 0.01 * e;
                    std::mem::swap(&mut u, &mut next);
                    t += 1;
                }
                let mut j = e;
                for i in 0..n {
                    j += u[i] * (i as f64 + 0.5);
                }
                j
            }
        }
    )* };
}

bodies! {
    taped;
    revolve, #[checkpoint(revolve(snapshots = 3))];
    periodic, #[checkpoint(periodic(every = 4), storage = disk)];
}

type BufGrad = fn(&[f64], f64, usize) -> (f64, (Vec<f64>, f64));
type BufPrimal = fn(&[f64], f64, usize) -> f64;
type BufFwd = fn(&[f64], &[f64], f64, f64, usize) -> (f64, f64);
type BufRev = fn(&[f64], &mut [f64], f64, usize, f64) -> (f64, f64);

/// One function of the three-parameter shape `(u0, scalar, steps)`, in its three forms.
struct Variant {
    name: &'static str,
    f: BufPrimal,
    grad: BufGrad,
    fwd: BufFwd,
    rev: BufRev,
}

/// The three forms of one function of shape `(u0, scalar, steps)`, un-checkpointed first.
macro_rules! variants {
    ($f:ident, $grad:ident, $fwd:ident, $rev:ident) => {
        [
            Variant { name: "taped", f: taped::$f, grad: taped::$grad, fwd: taped::$fwd, rev: taped::$rev },
            Variant { name: "revolve", f: revolve::$f, grad: revolve::$grad, fwd: revolve::$fwd, rev: revolve::$rev },
            Variant { name: "periodic", f: periodic::$f, grad: periodic::$grad, fwd: periodic::$fwd, rev: periodic::$rev },
        ]
    };
}

fn check_buf_family(family: &str, variants: &[Variant], u0: &[f64], s: f64, steps: usize) {
    let (v0, (g0, gs0)) = (variants[0].grad)(u0, s, steps);
    assert!(
        g0.iter().any(|g| g.abs() > 1e-6) && gs0.abs() > 1e-9,
        "{family}: the reference gradient is degenerate"
    );
    for v in variants {
        let name = format!("{family} {}", v.name);
        let (val, (g, gs)) = (v.grad)(u0, s, steps);
        assert_close(&format!("{name}: value"), val, v0, 1e-12, 0.0);
        assert_all_close(&format!("{name}: gradient"), &g, &g0, 1e-12, 1e-14);
        assert_close(&format!("{name}: scalar"), gs, gs0, 1e-12, 1e-14);
        let mut point = u0.to_vec();
        point.push(s);
        let m = u0.len();
        check_grad(
            &name,
            &point,
            &|p| (v.f)(&p[..m], p[m], steps),
            &|p| {
                let (val, (mut g, gs)) = (v.grad)(&p[..m], p[m], steps);
                g.push(gs);
                (val, g)
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: &name,
            x: &point,
            primal: &|p| vec![(v.f)(&p[..m], p[m], steps)],
            jvp: &|p, d| {
                let (y, t) = (v.fwd)(&p[..m], &d[..m], p[m], d[m], steps);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(m);
                let (y, gs) = (v.rev)(&p[..m], &mut g, p[m], steps, w[0]);
                g.push(gs);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

fn profile(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.4 + 0.3 * (0.9 * i as f64).sin() + 0.05 * i as f64)
        .collect()
}

pub fn swap_step_every_scheme() {
    let v = variants!(swap_step, swap_step_grad, swap_step_fwd, swap_step_rev);
    check_buf_family("swap_step", &v, &profile(9), 0.3, 13);
}

pub fn copy_back_every_scheme() {
    let v = variants!(copy_back, copy_back_grad, copy_back_fwd, copy_back_rev);
    check_buf_family("copy_back", &v, &profile(8), 0.25, 11);
}

pub fn call_step_every_scheme() {
    let v = variants!(call_step, call_step_grad, call_step_fwd, call_step_rev);
    check_buf_family("call_step", &v, &profile(9), 0.3, 13);
}

pub fn call_then_read_every_scheme() {
    let v = variants!(call_then_read, call_then_read_grad, call_then_read_fwd, call_then_read_rev);
    check_buf_family("call_then_read", &v, &profile(8), 0.25, 12);
}

pub fn in_place_every_scheme() {
    let v = variants!(in_place, in_place_grad, in_place_fwd, in_place_rev);
    check_buf_family("in_place", &v, &profile(7), 0.45, 10);
}

type Grad2 = fn(&[f64], f64) -> (f64, (Vec<f64>, f64));
type Primal2 = fn(&[f64], f64) -> f64;
type Fwd2 = fn(&[f64], &[f64], f64, f64) -> (f64, f64);
type Rev2 = fn(&[f64], &mut [f64], f64, f64) -> (f64, f64);

/// As `check_buf_family`, for functions of shape `(u0, k)` (a `while` loop's own trip count).
fn check_while_family(family: &str, forms: [(&str, Primal2, Grad2, Fwd2, Rev2); 3], u0: &[f64], k: f64) {
    let (v0, (g0, gk0)) = (forms[0].2)(u0, k);
    assert!(gk0.abs() > 1e-9, "{family}: degenerate reference");
    let m = u0.len();
    for (name, f, grad, fwd, rev) in forms {
        let name = format!("{family} {name}");
        let (v, (g, gk)) = grad(u0, k);
        assert_close(&format!("{name}: value"), v, v0, 1e-12, 0.0);
        assert_all_close(&format!("{name}: gradient"), &g, &g0, 1e-12, 1e-14);
        assert_close(&format!("{name}: scalar"), gk, gk0, 1e-12, 1e-14);
        let mut point = u0.to_vec();
        point.push(k);
        check_grad(
            &name,
            &point,
            &|p| f(&p[..m], p[m]),
            &|p| {
                let (v, (mut g, gk)) = grad(&p[..m], p[m]);
                g.push(gk);
                (v, g)
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: &name,
            x: &point,
            primal: &|p| vec![f(&p[..m], p[m])],
            jvp: &|p, d| {
                let (y, t) = fwd(&p[..m], &d[..m], p[m], d[m]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(m);
                let (y, gk) = rev(&p[..m], &mut g, p[m], w[0]);
                g.push(gk);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

macro_rules! while_forms {
    ($f:ident, $grad:ident, $fwd:ident, $rev:ident) => {
        [
            (
                "taped",
                taped::$f as Primal2,
                taped::$grad as Grad2,
                taped::$fwd as Fwd2,
                taped::$rev as Rev2,
            ),
            ("revolve", revolve::$f, revolve::$grad, revolve::$fwd, revolve::$rev),
            ("periodic", periodic::$f, periodic::$grad, periodic::$fwd, periodic::$rev),
        ]
    };
}

pub fn scalar_while_every_scheme() {
    let forms = while_forms!(scalar_while, scalar_while_grad, scalar_while_fwd, scalar_while_rev);
    // a = 1.1 stops on x ≥ 6 (a data-dependent trip count), a = 0.2 on t = 80.
    check_while_family("scalar_while", forms, &[0.3, 0.8], 1.1);
    check_while_family("scalar_while", forms, &[0.3, 0.8], 0.2);
}

pub fn scalar_and_buffer_every_scheme() {
    let forms = while_forms!(
        scalar_and_buffer,
        scalar_and_buffer_grad,
        scalar_and_buffer_fwd,
        scalar_and_buffer_rev
    );
    check_while_family("scalar_and_buffer", forms, &profile(6), 1.7);
}

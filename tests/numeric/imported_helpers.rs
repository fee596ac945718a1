//! Issue 48, helpers brought in by `use` as Rust code imports them: by name
//! (`use kernels::soft_plus;`), renamed (`use kernels::first_hit as hit;`), through a
//! module that re-exports them (`use api::first_hit;` with `pub use super::kernels::first_hit;`
//! in `api`), and through a glob of a nested module (`use super::*;`). The helpers here are
//! the ones phidiff calls rather than inlines: one carries `#[differentiate]` with a chosen
//! reverse name (`soft_plus_adj`), one has hand-written rules beside it (`first_hit_fwd`,
//! `first_hit_rev`; its `return` inside a loop keeps it from being inlined). The caller
//! imports only the helper; its derivatives are called where the helper is defined, by the
//! path the `use` takes.
//!
//! Checked by finite differences and the dot-product test (`TOLS`), against values
//! written out by hand (rel 1e-14), and the hand-written rules are counted to show they ran.

use super::differentiate;
use crate::common::*;
use std::sync::atomic::{AtomicUsize, Ordering};

static FIRST_HIT_RULES: AtomicUsize = AtomicUsize::new(0);

pub mod kernels {
    use super::{differentiate, Ordering, FIRST_HIT_RULES};

    /// Σ ln(1 + e^{k xᵢ}) / k.
    #[differentiate(forward, reverse(name = soft_plus_adj))]
    pub fn soft_plus(x: &[f64], k: f64) -> f64 {
        let mut s = 0.0;
        for &v in x {
            s += (k * v).exp().ln_1p();
        }
        s / k
    }

    /// The first element above `t`, times `t`; `t²` when there is none.
    pub fn first_hit(v: &[f64], t: f64) -> f64 {
        for &x in v {
            if x > t {
                return x * t;
            }
        }
        t * t
    }

    pub fn first_hit_fwd(v: &[f64], dv: &[f64], t: f64, dt: f64) -> (f64, f64) {
        FIRST_HIT_RULES.fetch_add(1, Ordering::Relaxed);
        for (i, &x) in v.iter().enumerate() {
            if x > t {
                return (x * t, dv[i] * t + x * dt);
            }
        }
        (t * t, 2.0 * t * dt)
    }

    pub fn first_hit_rev(v: &[f64], dv: &mut [f64], t: f64, seed: f64) -> (f64, f64) {
        FIRST_HIT_RULES.fetch_add(1, Ordering::Relaxed);
        for (i, &x) in v.iter().enumerate() {
            if x > t {
                dv[i] += t * seed;
                return (x * t, x * seed);
            }
        }
        (t * t, 2.0 * t * seed)
    }
}

/// Re-exports, as a crate's public surface does.
pub mod api {
    pub use super::kernels::first_hit;
}

use api::first_hit;
use kernels::first_hit as hit;
use kernels::soft_plus;

/// Helpers imported by name, renamed, and through a re-export.
#[differentiate(forward, reverse)]
pub fn imported(x: &[f64], t: f64) -> f64 {
    let a = soft_plus(&x[..4], t);
    let b = hit(&x[2..], t);
    a * b + first_hit(x, 0.5 * t)
}

/// A nested module reaching the helpers through a glob of its parent.
pub mod solvers {
    use super::*;

    #[differentiate(forward, reverse)]
    pub fn relaxed(x: &[f64], t: f64) -> f64 {
        let mut s = 0.0;
        for k in 0..3 {
            s += hit(&x[k..], t) * soft_plus(&x[..2], t + k as f64);
        }
        s
    }
}

fn soft_plus_by_hand(x: &[f64], k: f64) -> f64 {
    x.iter().map(|v| (k * v).exp().ln_1p()).sum::<f64>() / k
}

fn first_hit_by_hand(v: &[f64], t: f64) -> f64 {
    v.iter().find(|&&x| x > t).map_or(t * t, |x| x * t)
}

pub fn imported_helpers() {
    // No element is within 0.05 of a threshold, so finite differences stay on one branch.
    let x = [0.3, -0.8, 0.45, 1.7, -0.2, 2.6];
    let t = 1.1;
    let mut xt = x.to_vec();
    xt.push(t);
    let split = |xt: &[f64]| (xt[..6].to_vec(), xt[6]);
    let by_hand = soft_plus_by_hand(&x[..4], t) * first_hit_by_hand(&x[2..], t)
        + first_hit_by_hand(&x, 0.5 * t);
    assert_close("imported", imported(&x, t), by_hand, 1e-14, 1e-15);
    let by_hand: f64 = (0..3)
        .map(|k| first_hit_by_hand(&x[k..], t) * soft_plus_by_hand(&x[..2], t + k as f64))
        .sum();
    assert_close("relaxed", solvers::relaxed(&x, t), by_hand, 1e-14, 1e-15);

    let before = FIRST_HIT_RULES.load(Ordering::Relaxed);
    check_fwd_rev(&Case {
        name: "imported",
        x: &xt,
        primal: &|xt| {
            let (x, t) = split(xt);
            vec![imported(&x, t)]
        },
        jvp: &|xt, d| {
            let ((x, t), (dx, dt)) = (split(xt), split(d));
            let (v, tan) = imported_fwd(&x, &dx, t, dt);
            (vec![v], tan_vec(tan))
        },
        vjp: &|xt, w| {
            let (x, t) = split(xt);
            let mut dx = zeros(6);
            let (v, dt) = imported_rev(&x, &mut dx, t, w[0]);
            dx.push(dt);
            (vec![v], dx)
        },
        tols: TOLS,
    });
    check_fwd_rev(&Case {
        name: "relaxed",
        x: &xt,
        primal: &|xt| {
            let (x, t) = split(xt);
            vec![solvers::relaxed(&x, t)]
        },
        jvp: &|xt, d| {
            let ((x, t), (dx, dt)) = (split(xt), split(d));
            let (v, tan) = solvers::relaxed_fwd(&x, &dx, t, dt);
            (vec![v], tan_vec(tan))
        },
        vjp: &|xt, w| {
            let (x, t) = split(xt);
            let mut dx = zeros(6);
            let (v, dt) = solvers::relaxed_rev(&x, &mut dx, t, w[0]);
            dx.push(dt);
            (vec![v], dx)
        },
        tols: TOLS,
    });
    assert!(
        FIRST_HIT_RULES.load(Ordering::Relaxed) > before,
        "the hand-written first_hit rules were not called"
    );

    // ∂imported/∂t written out: soft_plus' and first_hit' by hand at the hit elements
    // (x[3] = 1.7 above t in x[2..]; x[3] also the first above 0.55 in x).
    let sp = soft_plus_by_hand(&x[..4], t);
    let dsp_dt = x[..4]
        .iter()
        .map(|v| v / (1.0 + (-t * v).exp()))
        .sum::<f64>()
        / t
        - sp / t;
    let want = dsp_dt * (x[3] * t) + sp * x[3] + x[3] * 0.5;
    let mut dx = zeros(6);
    let (_, dt) = imported_rev(&x, &mut dx, t, 1.0);
    assert_close("∂imported/∂t", dt, want, 1e-13, 1e-14);
}

fn tan_vec(t: f64) -> Vec<f64> {
    vec![t]
}

//! Checkpointed `for` loops over reversed, strided ranges with an early `break`: the
//! reverse sweep re-runs steps from the index kept in each snapshot (stepped down by the
//! stride), and a `break` makes the trip count unknown at entry (Revolve runs online).
//! Each variant is checked against the un-checkpointed function (rel 1e-12), finite
//! differences and the dot-product test.

use super::differentiate;
use crate::common::*;

macro_rules! strided {
    ($name:ident $(, #[$ck:meta])?) => {
        #[differentiate(forward, reverse)]
        pub fn $name(x: &[f64], a: f64, n: usize) -> f64 {
            let mut v = x[0];
            let mut s = 0.0;
            $(#[$ck])?
            for i in (0..n).rev().step_by(3) {
                v = (v * a).sin() + 0.01 * (i as f64) * x[1];
                s += v * v;
                if s > 4.0 {
                    break;
                }
            }
            s
        }
    };
}

strided!(strided_taped);
strided!(strided_revolve, #[checkpoint(revolve(snapshots = 2))]);
strided!(strided_periodic, #[checkpoint(periodic(every = 3), storage = disk)]);
strided!(strided_online, #[checkpoint(online(snapshots = 2))]);

type Grad = fn(&[f64], f64, usize) -> (f64, (Vec<f64>, f64));

pub fn reversed_strided_range_with_break() {
    let variants: [(&str, Grad, fn(&[f64], f64, usize) -> f64); 4] = [
        ("taped", strided_taped_grad, strided_taped),
        ("revolve", strided_revolve_grad, strided_revolve),
        ("periodic", strided_periodic_grad, strided_periodic),
        ("online", strided_online_grad, strided_online),
    ];
    // n = 40: 14 steps without the break; a = 1.3 breaks early, a = 0.4 runs them all.
    for (a, n) in [(1.3, 40), (0.4, 40)] {
        let x = [0.7, 0.9];
        let (v0, (g0, ga0)) = strided_taped_grad(&x, a, n);
        for (name, grad, f) in variants {
            let name = format!("strided {name} (a = {a})");
            let (v, (g, ga)) = grad(&x, a, n);
            assert_close(&format!("{name}: value"), v, v0, 1e-12, 0.0);
            assert_all_close(&format!("{name}: gradient"), &g, &g0, 1e-12, 1e-15);
            assert_close(&format!("{name}: ∂/∂a"), ga, ga0, 1e-12, 1e-15);
            let point = [x[0], x[1], a];
            check_grad(
                &name,
                &point,
                &|p| f(&p[..2], p[2], n),
                &|p| {
                    let (v, (mut g, ga)) = grad(&p[..2], p[2], n);
                    g.push(ga);
                    (v, g)
                },
                TOLS,
            );
        }
    }
    // Every variant's _fwd matches finite differences and agrees with its _rev (dot
    // product).
    type Fwd = fn(&[f64], &[f64], f64, f64, usize) -> (f64, f64);
    type Rev = fn(&[f64], &mut [f64], f64, usize, f64) -> (f64, f64);
    let pairs: [(&str, Fwd, Rev, fn(&[f64], f64, usize) -> f64); 4] = [
        ("taped", strided_taped_fwd, strided_taped_rev, strided_taped),
        (
            "revolve",
            strided_revolve_fwd,
            strided_revolve_rev,
            strided_revolve,
        ),
        (
            "periodic",
            strided_periodic_fwd,
            strided_periodic_rev,
            strided_periodic,
        ),
        (
            "online",
            strided_online_fwd,
            strided_online_rev,
            strided_online,
        ),
    ];
    let x = [0.7, 0.9, 1.3];
    for (name, fwd, rev, f) in pairs {
        check_fwd_rev(&Case {
            name: &format!("strided {name}"),
            x: &x,
            primal: &|p| vec![f(&p[..2], p[2], 40)],
            jvp: &|p, d| {
                let (y, t) = fwd(&p[..2], &d[..2], p[2], d[2], 40);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(2);
                let (y, ga) = rev(&p[..2], &mut g, p[2], 40, w[0]);
                g.push(ga);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

//! Long straight-line code, as code generators and hand-unrolled integrators write it.
//!
//! Every `let` opens a scope nested in the one before, and rustc's debug-info writer
//! recurses once per scope. A derivative has several `let`s per operation, so before the
//! generated blocks were cut into chunks (`ad-macros/src/codegen/scope.rs`) the debug build
//! of these tests crashed rustc (SIGSEGV) from 64 unrolled steps on. Both functions here
//! have more: 128 steps in a row, and 64 steps in a loop body (whose tapes and index
//! windows are as many `let`s again). The straight function's 128 steps equal two runs of
//! the loop's 64, so the two must agree too. (CI builds its tests without debug info, where
//! no crash can happen; there `codegen::scope`'s unit test
//! `every_generated_function_of_a_long_one_nests_few_lets` holds the nesting down.)

use super::differentiate;
use crate::common::*;

/// Writes `#[differentiate] pub fn $name($x: &[f64]) -> f64` whose body is `$head`, then
/// `$steps` doubled once per `x` in the count, wrapped in `$wrap` (`[]` or a loop header),
/// then `$tail`.
macro_rules! unrolled {
    ($name:ident $x:ident $head:tt $wrap:tt [$($steps:tt)*] $tail:tt [x $($count:tt)*]) => {
        unrolled!($name $x $head $wrap [$($steps)* $($steps)*] $tail [$($count)*]);
    };
    ($name:ident $x:ident [$($head:tt)*] [] [$($steps:tt)*] [$($tail:tt)*] []) => {
        #[differentiate(forward, reverse)]
        pub fn $name($x: &[f64]) -> f64 { $($head)* $($steps)* $($tail)* }
    };
    ($name:ident $x:ident [$($head:tt)*] [$($wrap:tt)+] [$($steps:tt)*] [$($tail:tt)*] []) => {
        #[differentiate(forward, reverse)]
        pub fn $name($x: &[f64]) -> f64 { $($head)* $($wrap)+ { $($steps)* } $($tail)* }
    };
}

// A damped pendulum (angle `a`, velocity `b`, damping `k`) by the midpoint rule with step
// 0.05, unrolled; the objective sums the squared angle over the steps and adds the final
// kinetic energy.
unrolled!(unrolled_pendulum x [
    let mut a = x[0];
    let mut b = x[1];
    let k = x[2];
    let mut acc = 0.0;
] [] [
    let am = a + 0.025 * b;
    let bm = b + 0.025 * (-a.sin() - k * b);
    a += 0.05 * bm;
    b += 0.05 * (-am.sin() - k * bm);
    acc += a * a;
] [acc + 0.5 * b * b] [x x x x x x x]);

unrolled!(unrolled_pendulum_loop x [
    let mut a = x[0];
    let mut b = x[1];
    let k = x[2];
    let mut acc = 0.0;
    let rounds = x.len() - 2;
] [for _ in 0..rounds] [
    let am = a + 0.025 * b;
    let bm = b + 0.025 * (-a.sin() - k * b);
    a += 0.05 * bm;
    b += 0.05 * (-am.sin() - k * bm);
    acc += a * a;
] [acc + 0.5 * b * b] [x x x x x x]);

fn check(name: &str, x: &[f64], f: fn(&[f64]) -> f64, fwd: Fwd, rev: Rev, grad: Grad) {
    check_grad(name, x, &f, &grad, TOLS);
    check_fwd_rev(&Case {
        name,
        x,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, dy) = fwd(p, v);
            (vec![y], vec![dy])
        },
        vjp: &|p, w| {
            let mut g = zeros(p.len());
            let y = rev(p, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

type Fwd = fn(&[f64], &[f64]) -> (f64, f64);
type Rev = fn(&[f64], &mut [f64], f64) -> f64;
type Grad = fn(&[f64]) -> (f64, Vec<f64>);

pub fn unrolled_integrator() {
    for x in [[0.3, 0.7, 0.1], [-1.2, 0.4, 0.5]] {
        check(
            "unrolled_pendulum",
            &x,
            unrolled_pendulum,
            unrolled_pendulum_fwd,
            unrolled_pendulum_rev,
            unrolled_pendulum_grad,
        );
    }
}

pub fn unrolled_integrator_in_a_loop() {
    // Two rounds of 64 steps are the straight function's 128 (`x[3]` only sets the count:
    // `x.len() − 2` rounds).
    let x = [0.3, 0.7, 0.1, 0.0];
    let (y, dy) = unrolled_pendulum_loop_fwd(&x, &[1.0, 0.0, 0.0, 0.0]);
    let (y_straight, dy_straight) = unrolled_pendulum_fwd(&x[..3], &[1.0, 0.0, 0.0]);
    assert_close("two rounds against 128 steps", y, y_straight, 1e-13, 0.0);
    assert_close("their tangents", dy, dy_straight, 1e-12, 0.0);
    for rounds in [1, 3] {
        let mut x = vec![-0.8, 0.2, 0.3];
        x.resize(rounds + 2, 0.0);
        check(
            "unrolled_pendulum_loop",
            &x,
            unrolled_pendulum_loop,
            unrolled_pendulum_loop_fwd,
            unrolled_pendulum_loop_rev,
            unrolled_pendulum_loop_grad,
        );
    }
}

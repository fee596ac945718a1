//! Classic optimization test functions with published values and gradients.

use super::differentiate;
use crate::common::*;
use phidiff::Float;

/// Extended Rosenbrock: Σᵢ 100 (x[i+1] − x[i]²)² + (1 − x[i])².
#[differentiate(forward, reverse)]
pub fn rosenbrock<T: Float>(x: &[T]) -> T {
    let hundred = T::from(100.0).unwrap();
    let mut f = T::zero();
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = T::one() - x[i];
        f += hundred * a * a + b * b;
    }
    f
}

/// Himmelblau: (x² + y − 11)² + (x + y² − 7)².
#[differentiate(forward, reverse)]
pub fn himmelblau<T: Float>(x: T, y: T) -> T {
    let a = x * x + y - T::from(11.0).unwrap();
    let b = x + y * y - T::from(7.0).unwrap();
    a.powi(2) + b.powi(2)
}

/// Beale: Σₖ (cₖ − x + x yᵏ)², k = 1..3, c = (1.5, 2.25, 2.625).
#[differentiate(forward, reverse)]
pub fn beale(x: f64, y: f64) -> f64 {
    let mut f = 0.0;
    for k in 1..4 {
        let c = match k {
            1 => 1.5,
            2 => 2.25,
            _ => 2.625,
        };
        let t = c - x + x * y.powi(k as i32);
        f += t * t;
    }
    f
}

/// Wood's four-variable function (Colville).
#[differentiate(forward, reverse)]
pub fn wood(x: &[f64]) -> f64 {
    let a = x[0] * x[0] - x[1];
    let b = x[2] * x[2] - x[3];
    100.0 * a * a
        + (x[0] - 1.0).powi(2)
        + (x[2] - 1.0).powi(2)
        + 90.0 * b * b
        + 10.1 * ((x[1] - 1.0).powi(2) + (x[3] - 1.0).powi(2))
        + 19.8 * (x[1] - 1.0) * (x[3] - 1.0)
}

/// Speelpenning's product Πᵢ xᵢ.
#[differentiate(forward, reverse)]
pub fn speelpenning<T: Float>(x: &[T]) -> T {
    let mut p = T::one();
    for xi in x.iter() {
        p *= *xi;
    }
    p
}

fn rosenbrock_case(name: &str, x: &[f64]) {
    check_fwd_rev(&Case {
        name,
        x,
        primal: &|x| vec![rosenbrock(x)],
        jvp: &|x, v| {
            let (y, t) = rosenbrock_fwd(x, v);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = zeros(x.len());
            let y = rosenbrock_rev(x, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn rosenbrock_published_n2() {
    let x = [-1.2, 1.0];
    let g = check_grad(
        "rosenbrock n=2",
        &x,
        &|x| rosenbrock(x),
        &|x| rosenbrock_grad(x),
        TOLS,
    );
    assert_rel("rosenbrock n=2 f", &[rosenbrock(&x)], &[24.2], 1e-12);
    assert_rel("rosenbrock n=2 ∇f", &g, &[-215.6, -88.0], 1e-12);
    rosenbrock_case("rosenbrock n=2", &x);
}

pub fn rosenbrock_published_n4() {
    let x = [-1.2, 1.0, -1.2, 1.0];
    let (f, g) = rosenbrock_grad(&x);
    assert_rel("rosenbrock n=4 f", &[f], &[532.4], 1e-12);
    assert_rel(
        "rosenbrock n=4 ∇f",
        &g,
        &[-215.6, 792.0, -655.6, -88.0],
        1e-12,
    );
    check_grad(
        "rosenbrock n=4",
        &x,
        &|x| rosenbrock(x),
        &|x| rosenbrock_grad(x),
        TOLS,
    );
    rosenbrock_case("rosenbrock n=4", &x);
}

pub fn rosenbrock_longer_vector() {
    let x = [0.3, -0.7, 1.1, 0.9, -1.4, 0.2, 0.5];
    check_grad(
        "rosenbrock n=7",
        &x,
        &|x| rosenbrock(x),
        &|x| rosenbrock_grad(x),
        TOLS,
    );
    rosenbrock_case("rosenbrock n=7", &x);
}

/// 20 inputs: the fused loop's 19 iterations run as two strips of eight and three more
/// (`reverse/strip.rs`), so the strip-mined code is checked against finite differences
/// and the dot-product test as well.
pub fn rosenbrock_strips() {
    let x: Vec<f64> = (0..20).map(|i| (0.7 * i as f64).sin() + 0.2).collect();
    check_grad(
        "rosenbrock n=20",
        &x,
        &|x| rosenbrock(x),
        &|x| rosenbrock_grad(x),
        TOLS,
    );
    rosenbrock_case("rosenbrock n=20", &x);
}

/// The reverse mode adds into the shadow: a pre-filled shadow ends as its old content
/// plus the gradient, and a second call adds the gradient again.
pub fn rosenbrock_rev_adds_into_shadow() {
    let x = [-1.2, 1.0];
    let mut shadow = vec![1.0, -2.0];
    let f = rosenbrock_rev(&x, &mut shadow, 1.0);
    assert_rel("value", &[f], &[24.2], 1e-12);
    assert_rel(
        "shadow after one call",
        &shadow,
        &[1.0 - 215.6, -2.0 - 88.0],
        1e-12,
    );
    rosenbrock_rev(&x, &mut shadow, 0.5);
    assert_rel(
        "shadow after a second call with seed 0.5",
        &shadow,
        &[1.0 - 1.5 * 215.6, -2.0 - 1.5 * 88.0],
        1e-12,
    );
}

/// The contract: a shadow of the wrong length panics with a message naming the parameter
/// (an index-out-of-bounds panic would not mention `x`). Listed in `tests/numeric.rs` with
/// `#[should_panic(expected = "`x`")]`.
pub fn rosenbrock_rev_rejects_short_shadow() {
    let mut shadow = vec![0.0; 1];
    rosenbrock_rev(&[-1.2, 1.0], &mut shadow, 1.0);
}

pub fn himmelblau_published() {
    let (f, (gx, gy)) = himmelblau_grad(0.0, 0.0);
    assert_rel("himmelblau f", &[f], &[170.0], 1e-12);
    assert_rel("himmelblau ∇f", &[gx, gy], &[-14.0, -22.0], 1e-12);
    // at a minimum the gradient vanishes exactly: (3, 2)
    let (f, (gx, gy)) = himmelblau_grad(3.0, 2.0);
    assert_all_close("himmelblau at (3, 2)", &[f, gx, gy], &[0.0; 3], 0.0, 1e-12);
    for p in [[0.0, 0.0], [-1.3, 2.7], [2.2, -0.4]] {
        let f = |p: &[f64]| himmelblau(p[0], p[1]);
        check_grad(
            "himmelblau",
            &p,
            &f,
            &|p| {
                let (v, (gx, gy)) = himmelblau_grad(p[0], p[1]);
                (v, vec![gx, gy])
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "himmelblau",
            x: &p,
            primal: &|p| vec![himmelblau(p[0], p[1])],
            jvp: &|p, v| {
                let (y, t) = himmelblau_fwd(p[0], v[0], p[1], v[1]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, ax, ay) = himmelblau_rev(p[0], p[1], w[0]);
                (vec![y], vec![ax, ay])
            },
            tols: TOLS,
        });
    }
}

pub fn beale_published() {
    let (f, (gx, gy)) = beale_grad(1.0, 4.0);
    assert_rel("beale f", &[f], &[4624.453125], 1e-12);
    assert_rel("beale ∇f", &[gx, gy], &[8813.25, 6585.0], 1e-12);
    // the global minimum (3, 0.5) has zero gradient
    let (f, (gx, gy)) = beale_grad(3.0, 0.5);
    assert_all_close("beale at (3, 0.5)", &[f, gx, gy], &[0.0; 3], 0.0, 1e-12);
    for p in [[1.0, 4.0], [0.4, -1.1]] {
        check_grad(
            "beale",
            &p,
            &|p| beale(p[0], p[1]),
            &|p| {
                let (v, (gx, gy)) = beale_grad(p[0], p[1]);
                (v, vec![gx, gy])
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "beale",
            x: &p,
            primal: &|p| vec![beale(p[0], p[1])],
            jvp: &|p, v| {
                let (y, t) = beale_fwd(p[0], v[0], p[1], v[1]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, ax, ay) = beale_rev(p[0], p[1], w[0]);
                (vec![y], vec![ax, ay])
            },
            tols: TOLS,
        });
    }
}

pub fn wood_published() {
    let x = [-3.0, -1.0, -3.0, -1.0];
    let g = check_grad("wood", &x, &|x| wood(x), &|x| wood_grad(x), TOLS);
    assert_rel("wood f", &[wood(&x)], &[19192.0], 1e-12);
    assert_rel(
        "wood ∇f",
        &g,
        &[-12008.0, -2080.0, -10808.0, -1880.0],
        1e-12,
    );
    // the minimum (1, 1, 1, 1)
    let (f, g) = wood_grad(&[1.0; 4]);
    assert_all_close("wood at the minimum", &[f], &[0.0], 0.0, 1e-12);
    assert_all_close("wood ∇f at the minimum", &g, &[0.0; 4], 0.0, 1e-12);
    check_fwd_rev(&Case {
        name: "wood",
        x: &x,
        primal: &|x| vec![wood(x)],
        jvp: &|x, v| {
            let (y, t) = wood_fwd(x, v);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = zeros(4);
            let y = wood_rev(x, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn speelpenning_published() {
    let x = [0.5, 1.0, 1.5, 2.0, 2.5];
    let (f, g) = speelpenning_grad(&x);
    assert_rel("speelpenning f", &[f], &[3.75], 1e-12);
    assert_rel("speelpenning ∇f", &g, &[7.5, 3.75, 2.5, 1.875, 1.5], 1e-12);
    check_grad(
        "speelpenning",
        &x,
        &|x| speelpenning(x),
        &|x| speelpenning_grad(x),
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "speelpenning",
        x: &x,
        primal: &|x| vec![speelpenning(x)],
        jvp: &|x, v| {
            let (y, t) = speelpenning_fwd(x, v);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = zeros(x.len());
            let y = speelpenning_rev(x, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

/// With a zero factor the gradient is the product of the others, which a rule that
/// divides the product by xᵢ gets wrong (0/0).
pub fn speelpenning_with_a_zero_factor() {
    let x = [0.5, 0.0, 1.5, 2.0];
    let (f, g) = speelpenning_grad(&x);
    assert_eq!(f, 0.0);
    assert_all_close("∇f", &g, &[0.0, 1.5, 0.0, 0.0], 1e-12, 0.0);
    let (_, t) = speelpenning_fwd(&x, &[0.0, 1.0, 0.0, 0.0]);
    assert_rel("tangent along e₁", &[t], &[1.5], 1e-12);
}

//! Branches, data-dependent loops, `match`, `loop`/`break`/`continue` and early `return`.
//! Every point is chosen away from branch switches, so finite differences see one branch.

use super::differentiate;
use crate::common::*;
use phidiff::Float;

/// Babylonian square root, iterated until two iterates agree to ~6 ulp.
#[differentiate(forward, reverse)]
pub fn babylonian_sqrt(a: f64) -> f64 {
    let mut x = if a > 1.0 { a } else { 1.0 };
    let mut prev = 0.0;
    while (x - prev).abs() > 1e-15 * x {
        prev = x;
        x = 0.5 * (x + a / x);
    }
    x
}

/// Σᵢ mᵢ xᵢ + m with mᵢ the running maximum of x[0..=i].
#[differentiate(forward, reverse)]
pub fn running_max_weighted(x: &[f64]) -> f64 {
    let mut m = x[0];
    let mut s = 0.0;
    for i in 1..x.len() {
        if x[i] > m {
            m = x[i];
        }
        s += m * x[i];
    }
    s + m
}

/// Insertion sort of a copy, then Σ_{r<k} (r+1)·v_r² over the k largest values v_0 ≥ v_1 ≥ ….
#[differentiate(forward, reverse)]
pub fn sorted_top_k(x: &[f64], k: usize) -> f64 {
    let n = x.len();
    let mut a = x.to_vec();
    for i in 1..n {
        let key = a[i];
        let mut j = i;
        while j > 0 && a[j - 1] > key {
            a[j] = a[j - 1];
            j -= 1;
        }
        a[j] = key;
    }
    let mut s = 0.0;
    for r in 0..k {
        let v = a[n - 1 - r];
        s += (r + 1) as f64 * v * v;
    }
    s
}

/// Accumulates squares; returns early from inside the loop once the sum passes `limit`.
#[differentiate(forward, reverse)]
pub fn sum_until_limit(x: &[f64], limit: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
        if s > limit {
            return s.sqrt() * limit + i as f64;
        }
    }
    s / limit
}

/// Newton's method for ∛c, returning from inside the loop when the residual is small.
#[differentiate(forward, reverse)]
pub fn cube_root_newton(c: f64) -> f64 {
    let mut x = if c > 1.0 { c } else { 1.0 };
    for _ in 0..100 {
        let r = x * x * x - c;
        if r.abs() <= 1e-14 * c {
            return x;
        }
        x -= r / (3.0 * x * x);
    }
    x
}

/// Fractional index where the samples first rise through `level` (linear interpolation);
/// `x.len()` if they never do.
#[differentiate(forward, reverse)]
pub fn first_crossing<T: Float>(x: &[T], level: T) -> T {
    for i in 0..x.len() - 1 {
        if x[i] < level {
            if x[i + 1] >= level {
                let frac = (level - x[i]) / (x[i + 1] - x[i]);
                return T::from(i).unwrap() + frac;
            }
        }
    }
    T::from(x.len()).unwrap()
}

/// Σ v^{3/2} over the positive entries (`continue` skips the others) until the sum passes 50.
#[differentiate(forward, reverse)]
pub fn positive_part_energy(x: &[f64]) -> f64 {
    let mut i = 0;
    let mut s = 0.0;
    loop {
        if i == x.len() {
            break;
        }
        let v = x[i];
        i += 1;
        if v <= 0.0 {
            continue;
        }
        s += v * v.sqrt();
        if s > 50.0 {
            break;
        }
    }
    s
}

/// sin of a four-piece function chosen by an `else if` chain used as an expression.
#[differentiate(forward, reverse)]
pub fn piecewise(x: f64) -> f64 {
    let y = if x < -1.0 {
        -x.powi(3)
    } else if x < 0.0 {
        x * x + 2.0 * x + 2.0
    } else if x < 2.0 {
        (x + 1.0).ln() + 2.0
    } else {
        3.0 * x.sqrt()
    };
    y.sin()
}

/// Σᵢ t(xᵢ) with t chosen by an integer `mode`.
#[differentiate(forward, reverse)]
pub fn mode_energy(x: &[f64], mode: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let t = match mode {
            0 => x[i] * x[i],
            1 => x[i].sin(),
            2 => 0.5 * x[i].exp(),
            _ => (1.0 + x[i] * x[i]).sqrt(),
        };
        s += t;
    }
    s
}

/// `mode_energy` with its arms chosen by guards that read the arm's binding.
#[differentiate(forward, reverse)]
pub fn guarded_mode_energy(x: &[f64], mode: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let t = match mode {
            m if m == 0 => x[i] * x[i],
            m if m + 1 == 2 => x[i].sin(),
            _ => x[i],
        };
        s += t;
    }
    s
}

/// Σ cos(x[2j]) x[2j+1] over even strides plus Σ x[i]³ over i = 1, 4, 7, ….
#[differentiate(forward, reverse)]
pub fn strided_pairs(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in (0..x.len() - 1).step_by(2) {
        s += x[i].cos() * x[i + 1];
    }
    for i in (1..x.len()).step_by(3) {
        s += x[i].powi(3);
    }
    s
}

/// a + a r + a r² + … summed by a `while` until the terms fall below 1e-17·|a|.
#[differentiate(forward, reverse)]
pub fn geometric_series(a: f64, r: f64) -> f64 {
    let mut term = a;
    let mut s = 0.0;
    while term.abs() > 1e-17 * a.abs() {
        s += term;
        term *= r;
    }
    s
}

/// Shadowed bindings of both parameters.
#[differentiate(forward, reverse)]
pub fn shadowed<T: Float>(x: T, y: T) -> T {
    let x = x * y;
    let x = x.sin() + y;
    let y = x * x + T::one();
    y.sqrt() * x
}

/// Cases of functions of one scalar.
fn scalar_case(
    name: &str,
    a: f64,
    f: &dyn Fn(f64) -> f64,
    fwd: &dyn Fn(f64, f64) -> (f64, f64),
    rev: &dyn Fn(f64, f64) -> (f64, f64),
    grad: &dyn Fn(f64) -> (f64, f64),
    tols: Tols,
) -> f64 {
    let g = check_grad(
        name,
        &[a],
        &|x| f(x[0]),
        &|x| {
            let (v, g) = grad(x[0]);
            (v, vec![g])
        },
        tols,
    );
    check_fwd_rev(&Case {
        name,
        x: &[a],
        primal: &|x| vec![f(x[0])],
        jvp: &|x, v| {
            let (y, t) = fwd(x[0], v[0]);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let (y, g) = rev(x[0], w[0]);
            (vec![y], vec![g])
        },
        tols,
    });
    g[0]
}

/// Cases of `fn(&[f64]) -> f64`.
fn slice_case(
    name: &str,
    x: &[f64],
    f: &dyn Fn(&[f64]) -> f64,
    fwd: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    rev: &dyn Fn(&[f64], &mut [f64], f64) -> f64,
    grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    tols: Tols,
) -> Vec<f64> {
    let g = check_grad(name, x, f, grad, tols);
    check_fwd_rev(&Case {
        name,
        x,
        primal: &|x| vec![f(x)],
        jvp: &|x, v| {
            let (y, t) = fwd(x, v);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = zeros(x.len());
            let y = rev(x, &mut g, w[0]);
            (vec![y], g)
        },
        tols,
    });
    g
}

pub fn babylonian_sqrt_published() {
    for a in [2.0, 0.3, 10.0, 1234.5] {
        let g = scalar_case(
            "babylonian_sqrt",
            a,
            &babylonian_sqrt,
            &babylonian_sqrt_fwd,
            &babylonian_sqrt_rev,
            &babylonian_sqrt_grad,
            TOLS,
        );
        assert_rel("√a", &[babylonian_sqrt(a)], &[a.sqrt()], 1e-15);
        // the derivative of the converged iteration is 1/(2√a)
        assert_rel("d√a/da", &[g], &[0.5 / a.sqrt()], 1e-10);
    }
    let (_, g) = babylonian_sqrt_grad(2.0);
    assert_rel("d√a/da at 2", &[g], &[0.35355339059327373], 1e-10);
}

pub fn running_max_weighted_matches_hand_gradient() {
    // running maxima: 0.5, 0.5, 1.7, 1.7, 2.4, 2.4
    let x = [0.5, -0.3, 1.7, 0.9, 2.4, 1.1];
    let g = slice_case(
        "running_max_weighted",
        &x,
        &running_max_weighted,
        &running_max_weighted_fwd,
        &running_max_weighted_rev,
        &running_max_weighted_grad,
        TOLS,
    );
    // s = m₀x₁ + m₂x₂ + m₂x₃ + m₄x₄ + m₄x₅ + m₄ with m₀ = x₀, m₂ = x₂, m₄ = x₄
    let want = [
        x[1],
        x[0],
        2.0 * x[2] + x[3],
        x[2],
        2.0 * x[4] + x[5] + 1.0,
        x[4],
    ];
    assert_rel("∇f", &g, &want, 1e-12);
}

pub fn sorted_top_k_matches_hand_gradient() {
    let x = [0.3, -1.2, 2.5, 0.7, 1.9, -0.4];
    let (f, g) = sorted_top_k_grad(&x, 3);
    // top three: 2.5 (weight 1), 1.9 (weight 2), 0.7 (weight 3)
    assert_rel("f", &[f], &[6.25 + 2.0 * 3.61 + 3.0 * 0.49], 1e-12);
    assert_rel("∇f", &g, &[0.0, 0.0, 5.0, 4.2, 7.6, 0.0], 1e-12);
    for k in [1, 3, 6] {
        slice_case(
            "sorted_top_k",
            &x,
            &|x| sorted_top_k(x, k),
            &|x, v| sorted_top_k_fwd(x, v, k),
            &|x, g, s| sorted_top_k_rev(x, g, k, s),
            &|x| sorted_top_k_grad(x, k),
            TOLS,
        );
    }
    // the sort is on a copy: the input order must not matter
    let (f2, _) = sorted_top_k_grad(&[2.5, 0.7, -0.4, 1.9, 0.3, -1.2], 3);
    assert_rel("permuted input", &[f2], &[f], 1e-15);
}

pub fn sum_until_limit_early_and_late_exit() {
    // early exit at i = 2: f = √14·limit + 2
    let x = [1.0, 2.0, 3.0, 4.0];
    let (f, (gx, gl)) = sum_until_limit_grad(&x, 10.0);
    let r = 14.0_f64.sqrt();
    assert_rel("f (early)", &[f], &[r * 10.0 + 2.0], 1e-14);
    assert_rel(
        "∇ₓf (early)",
        &gx,
        &[10.0 / r, 20.0 / r, 30.0 / r, 0.0],
        1e-12,
    );
    assert_rel("∂f/∂limit (early)", &[gl], &[r], 1e-12);
    // no early exit: f = Σx²/limit
    let (f, (gx, gl)) = sum_until_limit_grad(&x, 40.0);
    assert_rel("f (late)", &[f], &[30.0 / 40.0], 1e-14);
    assert_rel("∇ₓf (late)", &gx, &[0.05, 0.1, 0.15, 0.2], 1e-12);
    assert_rel("∂f/∂limit (late)", &[gl], &[-30.0 / 1600.0], 1e-12);
    for point in [[1.0, 2.0, 3.0, 4.0, 10.0], [0.5, -1.5, 2.5, 0.1, 40.0]] {
        let name = "sum_until_limit";
        let f = |p: &[f64]| sum_until_limit(&p[..4], p[4]);
        check_grad(
            name,
            &point,
            &f,
            &|p| {
                let (v, (mut g, gl)) = sum_until_limit_grad(&p[..4], p[4]);
                g.push(gl);
                (v, g)
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name,
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, v| {
                let (y, t) = sum_until_limit_fwd(&p[..4], &v[..4], p[4], v[4]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(4);
                let (y, gl) = sum_until_limit_rev(&p[..4], &mut g, p[4], w[0]);
                g.push(gl);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn cube_root_newton_matches_analytic() {
    for c in [8.0, 0.5, 100.0] {
        let g = scalar_case(
            "cube_root_newton",
            c,
            &cube_root_newton,
            &cube_root_newton_fwd,
            &cube_root_newton_rev,
            &cube_root_newton_grad,
            TOLS,
        );
        let root = c.cbrt();
        assert_rel("∛c", &[cube_root_newton(c)], &[root], 1e-13);
        assert_rel("d∛c/dc", &[g], &[1.0 / (3.0 * root * root)], 1e-10);
    }
}

pub fn first_crossing_interpolates() {
    let x = [0.1, 0.4, 0.35, 0.9, 1.6];
    // first rise through 0.6 is between x[2] = 0.35 and x[3] = 0.9
    let (f, (gx, gl)) = first_crossing_grad(&x, 0.6);
    let d = 0.9 - 0.35;
    assert_rel("f", &[f], &[2.0 + 0.25 / d], 1e-12);
    let want = [0.0, 0.0, (0.25 - d) / (d * d), -0.25 / (d * d), 0.0];
    assert_all_close("∇ₓf", &gx, &want, 1e-12, 0.0);
    assert_rel("∂f/∂level", &[gl], &[1.0 / d], 1e-12);
    // never crossing: constant result, zero gradient
    let (f, (gx, gl)) = first_crossing_grad(&x, 5.0);
    assert_eq!(f, 5.0);
    assert_all_close("no crossing", &cat(&[&gx, &[gl]]), &[0.0; 6], 0.0, 0.0);
    for level in [0.6, 0.25, 1.2] {
        let point = cat(&[&x, &[level]]);
        let f = |p: &[f64]| first_crossing(&p[..5], p[5]);
        check_grad(
            "first_crossing",
            &point,
            &f,
            &|p| {
                let (v, (mut g, gl)) = first_crossing_grad(&p[..5], p[5]);
                g.push(gl);
                (v, g)
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "first_crossing",
            x: &point,
            primal: &|p| vec![f(p)],
            jvp: &|p, v| {
                let (y, t) = first_crossing_fwd(&p[..5], &v[..5], p[5], v[5]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let mut g = zeros(5);
                let (y, gl) = first_crossing_rev(&p[..5], &mut g, p[5], w[0]);
                g.push(gl);
                (vec![y], g)
            },
            tols: TOLS,
        });
    }
}

pub fn positive_part_energy_break_and_continue() {
    // negative entries skipped; the sum passes 50 at x = 9 (27 + 8 + 27 > 50), so 16 is never read
    let x = [9.0, -1.0, 4.0, -2.5, 9.0, 16.0];
    let g = slice_case(
        "positive_part_energy (break)",
        &x,
        &positive_part_energy,
        &positive_part_energy_fwd,
        &positive_part_energy_rev,
        &positive_part_energy_grad,
        TOLS,
    );
    // d(v^{3/2})/dv = 1.5 √v
    assert_rel("∇f", &g, &[4.5, 0.0, 3.0, 0.0, 4.5, 0.0], 1e-12);
    let x = [0.7, -0.2, 1.3, 2.2, -0.9];
    slice_case(
        "positive_part_energy (no break)",
        &x,
        &positive_part_energy,
        &positive_part_energy_fwd,
        &positive_part_energy_rev,
        &positive_part_energy_grad,
        TOLS,
    );
}

pub fn piecewise_each_branch() {
    // (x, dy/dx) on each of the four pieces, y' written by hand
    let pieces: [(f64, fn(f64) -> (f64, f64)); 4] = [
        (-2.0, |x| (-x.powi(3), -3.0 * x * x)),
        (-0.5, |x| (x * x + 2.0 * x + 2.0, 2.0 * x + 2.0)),
        (0.7, |x| ((x + 1.0).ln() + 2.0, 1.0 / (x + 1.0))),
        (3.1, |x| (3.0 * x.sqrt(), 1.5 / x.sqrt())),
    ];
    for (x, piece) in pieces {
        let g = scalar_case(
            "piecewise",
            x,
            &piecewise,
            &piecewise_fwd,
            &piecewise_rev,
            &piecewise_grad,
            TOLS,
        );
        let (y, dy) = piece(x);
        assert_rel("f'", &[g], &[y.cos() * dy], 1e-12);
    }
}

pub fn mode_energy_every_arm() {
    let x = [0.3, -1.1, 2.0, 0.8];
    let derivative: [fn(f64) -> f64; 4] = [
        |v| 2.0 * v,
        |v| v.cos(),
        |v| 0.5 * v.exp(),
        |v| v / (1.0 + v * v).sqrt(),
    ];
    for mode in 0..4 {
        let g = slice_case(
            "mode_energy",
            &x,
            &|x| mode_energy(x, mode),
            &|x, v| mode_energy_fwd(x, v, mode),
            &|x, g, s| mode_energy_rev(x, g, mode, s),
            &|x| mode_energy_grad(x, mode),
            TOLS,
        );
        let want: Vec<f64> = x.iter().map(|&v| derivative[mode](v)).collect();
        assert_rel(&format!("∇f (mode {mode})"), &g, &want, 1e-12);
    }
}

pub fn guarded_mode_energy_every_arm() {
    let x = [0.3, -1.1, 2.0, 0.8];
    let derivative: [fn(f64) -> f64; 3] = [|v| 2.0 * v, |v| v.cos(), |_| 1.0];
    for mode in 0..3 {
        let g = slice_case(
            "guarded_mode_energy",
            &x,
            &|x| guarded_mode_energy(x, mode),
            &|x, v| guarded_mode_energy_fwd(x, v, mode),
            &|x, g, s| guarded_mode_energy_rev(x, g, mode, s),
            &|x| guarded_mode_energy_grad(x, mode),
            TOLS,
        );
        let want: Vec<f64> = x.iter().map(|&v| derivative[mode](v)).collect();
        assert_rel(&format!("∇f (mode {mode})"), &g, &want, 1e-12);
    }
}

pub fn strided_pairs_step_by() {
    let x = [0.3, -1.1, 2.0, 0.8, -0.6, 1.4, 0.9];
    let g = slice_case(
        "strided_pairs",
        &x,
        &strided_pairs,
        &strided_pairs_fwd,
        &strided_pairs_rev,
        &strided_pairs_grad,
        TOLS,
    );
    // pairs (0,1), (2,3), (4,5); cubes at 1 and 4; x[6] only in no term
    let mut want = zeros(7);
    for i in [0, 2, 4] {
        want[i] += -x[i].sin() * x[i + 1];
        want[i + 1] += x[i].cos();
    }
    for i in [1, 4] {
        want[i] += 3.0 * x[i] * x[i];
    }
    assert_all_close("∇f", &g, &want, 1e-12, 1e-15);
}

pub fn geometric_series_matches_closed_form() {
    for (a, r) in [(1.5, 0.5), (-2.0, 0.3), (0.7, -0.6)] {
        let (f, (ga, gr)) = geometric_series_grad(a, r);
        assert_rel("Σ a rᵏ", &[f], &[a / (1.0 - r)], 1e-13);
        assert_rel("∂/∂a", &[ga], &[1.0 / (1.0 - r)], 1e-12);
        // truncation leaves N rᴺ ≈ 1e-15 of the tail of Σ k a rᵏ⁻¹
        assert_rel("∂/∂r", &[gr], &[a / ((1.0 - r) * (1.0 - r))], 1e-12);
        let point = [a, r];
        check_grad(
            "geometric_series",
            &point,
            &|p| geometric_series(p[0], p[1]),
            &|p| {
                let (v, (ga, gr)) = geometric_series_grad(p[0], p[1]);
                (v, vec![ga, gr])
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "geometric_series",
            x: &point,
            primal: &|p| vec![geometric_series(p[0], p[1])],
            jvp: &|p, v| {
                let (y, t) = geometric_series_fwd(p[0], v[0], p[1], v[1]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, ga, gr) = geometric_series_rev(p[0], p[1], w[0]);
                (vec![y], vec![ga, gr])
            },
            tols: TOLS,
        });
    }
}

pub fn shadowed_bindings() {
    for point in [[0.4, 1.3], [-1.7, 0.6]] {
        check_grad(
            "shadowed",
            &point,
            &|p| shadowed(p[0], p[1]),
            &|p| {
                let (v, (gx, gy)) = shadowed_grad(p[0], p[1]);
                (v, vec![gx, gy])
            },
            TOLS,
        );
        check_fwd_rev(&Case {
            name: "shadowed",
            x: &point,
            primal: &|p| vec![shadowed(p[0], p[1])],
            jvp: &|p, v| {
                let (y, t) = shadowed_fwd(p[0], v[0], p[1], v[1]);
                (vec![y], vec![t])
            },
            vjp: &|p, w| {
                let (y, gx, gy) = shadowed_rev(p[0], p[1], w[0]);
                (vec![y], vec![gx, gy])
            },
            tols: TOLS,
        });
    }
}

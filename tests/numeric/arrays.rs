//! Slices and buffers: zip/enumerate loops, reversed ranges, flat and nested 2-D
//! indexing, `()` functions writing an output slice, `&mut` in/out parameters,
//! `copy_from_slice`/`clone`, `is_empty`, and the non-smooth methods away from (and at) their kinks.

use super::differentiate;
use crate::common::*;
use phidiff::Float;

/// Σ aᵢ bᵢ over a zip.
#[differentiate(forward, reverse)]
pub fn dot<T: Float>(a: &[T], b: &[T]) -> T {
    let mut s = T::zero();
    for (ai, bi) in a.iter().zip(b.iter()) {
        s += *ai * *bi;
    }
    s
}

/// Σ cᵢ xⁱ by Horner's rule over a reversed range.
#[differentiate(forward, reverse)]
pub fn horner<T: Float>(c: &[T], x: T) -> T {
    let mut p = T::zero();
    for i in (0..c.len()).rev() {
        p = p * x + c[i];
    }
    p
}

/// Σᵢ (i+1)·xᵢ² over an enumerate.
#[differentiate(forward, reverse)]
pub fn weighted_squares<T: Float>(x: &[T]) -> T {
    let mut s = T::zero();
    for (i, v) in x.iter().enumerate() {
        let w = T::from(i + 1).unwrap();
        s += w * *v * *v;
    }
    s
}

/// y = A x with A row-major m × n in a flat slice; y is overwritten.
#[differentiate(forward, reverse)]
pub fn matvec_flat(a: &[f64], x: &[f64], y: &mut [f64], n: usize) {
    let m = y.len();
    assert!(a.len() == m * n);
    for i in 0..m {
        let mut acc = 0.0;
        for j in 0..n {
            acc += a[i * n + j] * x[j];
        }
        y[i] = acc;
    }
}

/// ½‖A x‖² with A given as rows.
#[differentiate(forward, reverse)]
pub fn half_norm_sq_nested(a: &[Vec<f64>], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        let mut yi = 0.0;
        for j in 0..x.len() {
            yi += a[i][j] * x[j];
        }
        s += 0.5 * yi * yi;
    }
    s
}

/// y[i] += α·sin(x[i]): an accumulating in/out slice and a scalar coefficient.
#[differentiate(forward, reverse)]
pub fn scale_add_sin(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (i, xi) in x.iter().enumerate() {
        y[i] += alpha * xi.sin();
    }
}

/// Scales `x` to unit length in place and returns its original norm.
#[differentiate(forward, reverse)]
pub fn normalize(x: &mut [f64]) -> f64 {
    let sq: f64 = x.iter().map(|v| v * v).sum();
    let norm = sq.sqrt();
    for i in 0..x.len() {
        x[i] /= norm;
    }
    norm
}

/// out[i] = sin(Σ_{j≥i} 0.9^{j−i} x[j]), accumulated over a reversed range.
#[differentiate(forward, reverse)]
pub fn discounted_suffix(x: &[f64], out: &mut [f64]) {
    let mut acc = 0.0;
    for i in (0..x.len()).rev() {
        acc = 0.9 * acc + x[i];
        out[i] = acc.sin();
    }
}

/// `Σ x²` scaled by `x[0]` when a half-length local buffer is non-empty; 1 for an empty
/// `x`: `is_empty` on a parameter and on a local buffer, both ways.
#[differentiate(forward, reverse)]
pub fn empty_or_scaled(x: &[f64]) -> f64 {
    let mut s = 0.0;
    if x.is_empty() {
        s = 1.0;
    } else {
        for i in 0..x.len() {
            s += x[i] * x[i];
        }
    }
    let half = vec![0.0; x.len() / 2];
    if !half.is_empty() {
        s *= x[0];
    }
    s
}

/// `sweeps` three-point averages between two buffers, then Σ aᵢ³.
#[differentiate(forward, reverse)]
pub fn smoothed_cubes(x: &[f64], sweeps: usize) -> f64 {
    let n = x.len();
    let mut a = vec![0.0; n];
    a.copy_from_slice(x);
    let mut b = a.clone();
    for _ in 0..sweeps {
        for i in 1..n - 1 {
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
        }
        a.copy_from_slice(&b);
    }
    let s: f64 = a.iter().map(|v| v * v * v).sum();
    s
}

/// abs, max, min, powf, atan2, hypot and tanh, to be evaluated away from their kinks.
#[differentiate(forward, reverse)]
pub fn kinks(x: &[f64]) -> f64 {
    let a = x[0].abs() * x[1].max(x[2]);
    let b = x[3].min(0.5).powf(1.5);
    let c = x[0].atan2(x[1]) + x[2].hypot(x[3]);
    a + b + c + (x[1] * x[2]).tanh()
}

/// Only for the tie conventions: max/min send the adjoint to the first argument on ties,
/// abs′(0) = 0.
#[differentiate(forward, reverse)]
pub fn tie_rules(x: &[f64]) -> f64 {
    x[0].max(x[1]) + 2.0 * x[2].min(x[3]) + 3.0 * x[4].abs()
}

/// `_grad`, `_fwd` and `_rev` of a `fn(&[f64]) -> f64`.
fn slice_case(
    name: &str,
    x: &[f64],
    f: &dyn Fn(&[f64]) -> f64,
    fwd: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    rev: &dyn Fn(&[f64], &mut [f64], f64) -> f64,
    grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
) -> Vec<f64> {
    let g = check_grad(name, x, f, grad, TOLS);
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
        tols: TOLS,
    });
    g
}

pub fn dot_gradient_is_the_other_vector() {
    let a = [0.3, -1.2, 2.0, 0.7];
    let b = [1.5, 0.25, -0.5, 4.0];
    let (f, (ga, gb)) = dot_grad(&a, &b);
    assert_rel("a·b", &[f], &[0.45 - 0.3 - 1.0 + 2.8], 1e-14);
    assert_rel("∇_a", &ga, &b, 1e-15);
    assert_rel("∇_b", &gb, &a, 1e-15);
    let point = cat(&[&a, &b]);
    check_grad(
        "dot",
        &point,
        &|p| dot(&p[..4], &p[4..]),
        &|p| {
            let (v, (ga, gb)) = dot_grad(&p[..4], &p[4..]);
            (v, cat(&[&ga, &gb]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "dot",
        x: &point,
        primal: &|p| vec![dot(&p[..4], &p[4..])],
        jvp: &|p, v| {
            let (y, t) = dot_fwd(&p[..4], &v[..4], &p[4..], &v[4..]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let (mut ga, mut gb) = (zeros(4), zeros(4));
            let y = dot_rev(&p[..4], &mut ga, &p[4..], &mut gb, w[0]);
            (vec![y], cat(&[&ga, &gb]))
        },
        tols: TOLS,
    });
}

pub fn horner_matches_power_basis() {
    let c = [1.0, -2.0, 0.5, 3.0, -1.0];
    let x: f64 = 0.7;
    let (p, (gc, gx)) = horner_grad(&c, x);
    let want_p: f64 = (0..5).map(|i| c[i] * x.powi(i as i32)).sum();
    assert_rel("p(x)", &[p], &[want_p], 1e-14);
    let want_gc: Vec<f64> = (0..5).map(|i| x.powi(i as i32)).collect();
    assert_rel("∂p/∂c", &gc, &want_gc, 1e-14);
    let want_gx: f64 = (1..5).map(|i| i as f64 * c[i] * x.powi(i as i32 - 1)).sum();
    assert_rel("p′(x)", &[gx], &[want_gx], 1e-13);
    let point = cat(&[&c, &[x]]);
    check_grad(
        "horner",
        &point,
        &|p| horner(&p[..5], p[5]),
        &|p| {
            let (v, (mut g, gx)) = horner_grad(&p[..5], p[5]);
            g.push(gx);
            (v, g)
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "horner",
        x: &point,
        primal: &|p| vec![horner(&p[..5], p[5])],
        jvp: &|p, v| {
            let (y, t) = horner_fwd(&p[..5], &v[..5], p[5], v[5]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut g = zeros(5);
            let (y, gx) = horner_rev(&p[..5], &mut g, p[5], w[0]);
            g.push(gx);
            (vec![y], g)
        },
        tols: TOLS,
    });
}

pub fn weighted_squares_enumerate() {
    let x = [0.3, -1.2, 2.0, 0.7];
    let g = slice_case(
        "weighted_squares",
        &x,
        &|x| weighted_squares(x),
        &|x, v| weighted_squares_fwd(x, v),
        &|x, g, s| weighted_squares_rev(x, g, s),
        &|x| weighted_squares_grad(x),
    );
    assert_rel("∇f", &g, &[0.6, -4.8, 12.0, 5.6], 1e-14);
}

pub fn matvec_flat_writes_output() {
    let (m, n) = (3, 4);
    let a: Vec<f64> = (0..m * n)
        .map(|k| ((k * 7 % 11) as f64 - 5.0) / 4.0)
        .collect();
    let x = [0.3, -1.2, 2.0, 0.7];
    // inputs: a, x and the initial y (overwritten); outputs: final y
    let point = cat(&[&a, &x, &[5.0, 5.0, 5.0]]);
    let lens = [m * n, n, m];
    let primal = |p: &[f64]| {
        let s = split(p, &lens);
        let mut y = s[2].to_vec();
        matvec_flat(s[0], s[1], &mut y, n);
        y
    };
    // the tangent of A x along (Ȧ, ẋ) is Ȧ x + A ẋ, independent of ẏ₀
    let (da, dx) = (vec![0.5; m * n], [1.0, 0.0, -1.0, 2.0]);
    let mut y = zeros(m);
    let mut dy = vec![7.0; m];
    matvec_flat_fwd(&a, &da, &x, &dx, &mut y, &mut dy, n);
    for i in 0..m {
        let want: f64 = (0..n)
            .map(|j| da[i * n + j] * x[j] + a[i * n + j] * dx[j])
            .sum();
        assert_close("(A x)˙", dy[i], want, 1e-14, 1e-14);
    }
    check_fwd_rev(&Case {
        name: "matvec_flat",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let s = split(p, &lens);
            let t = split(v, &lens);
            let mut y = s[2].to_vec();
            let mut dy = t[2].to_vec();
            matvec_flat_fwd(s[0], t[0], s[1], t[1], &mut y, &mut dy, n);
            (y, dy)
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let mut y = s[2].to_vec();
            let (mut ga, mut gx, mut gy) = (zeros(m * n), zeros(n), w.to_vec());
            matvec_flat_rev(s[0], &mut ga, s[1], &mut gx, &mut y, &mut gy, n);
            (primal(p), cat(&[&ga, &gx, &gy]))
        },
        tols: TOLS,
    });
}

/// The generated functions keep the primal's `assert!`. Listed in `tests/numeric.rs` with
/// `#[should_panic(expected = "assertion failed")]`.
pub fn matvec_flat_assert_is_kept() {
    let mut y = zeros(3);
    let mut dy = zeros(3);
    // 3 × 4 needs exactly 12 entries of a; 13 would index fine but break the assert
    matvec_flat_fwd(
        &[1.0; 13], &[0.0; 13], &[1.0; 4], &[0.0; 4], &mut y, &mut dy, 4,
    );
}

pub fn half_norm_sq_nested_rows() {
    let rows = vec![
        vec![1.0, 0.5, -1.2],
        vec![0.3, -0.7, 2.0],
        vec![-1.5, 0.2, 0.4],
        vec![0.9, 1.1, -0.3],
    ];
    let x = [0.4, -0.3, 0.8];
    let (f, (ga, gx)) = half_norm_sq_nested_grad(&rows, &x);
    // y = A x, f = ½‖y‖², ∇ₓ = Aᵀy, ∂f/∂A_ij = yᵢ xⱼ
    let y: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().zip(&x).map(|(a, b)| a * b).sum())
        .collect();
    assert_rel(
        "f",
        &[f],
        &[0.5 * y.iter().map(|v| v * v).sum::<f64>()],
        1e-14,
    );
    let want_gx: Vec<f64> = (0..3)
        .map(|j| (0..4).map(|i| rows[i][j] * y[i]).sum())
        .collect();
    assert_rel("∇ₓ", &gx, &want_gx, 1e-13);
    let want_ga: Vec<f64> = (0..12).map(|k| y[k / 3] * x[k % 3]).collect();
    assert_eq!(ga.len(), 4, "one gradient row per row of A");
    assert_rel("∇_A", &from_rows(&ga), &want_ga, 1e-13);
    let point = cat(&[&from_rows(&rows), &x]);
    let f = |p: &[f64]| half_norm_sq_nested(&to_rows(&p[..12], 3), &p[12..]);
    check_grad(
        "half_norm_sq_nested",
        &point,
        &f,
        &|p| {
            let (v, (ga, gx)) = half_norm_sq_nested_grad(&to_rows(&p[..12], 3), &p[12..]);
            (v, cat(&[&from_rows(&ga), &gx]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "half_norm_sq_nested",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (a, da) = (to_rows(&p[..12], 3), to_rows(&v[..12], 3));
            let (y, t) = half_norm_sq_nested_fwd(&a, &da, &p[12..], &v[12..]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let a = to_rows(&p[..12], 3);
            let mut ga = vec![zeros(3); 4];
            let mut gx = zeros(3);
            let y = half_norm_sq_nested_rev(&a, &mut ga, &p[12..], &mut gx, w[0]);
            (vec![y], cat(&[&from_rows(&ga), &gx]))
        },
        tols: TOLS,
    });
}

pub fn scale_add_sin_accumulates() {
    let n = 4;
    let x = [0.3, -1.2, 2.0, 0.7];
    let y0 = [1.0, -1.0, 0.5, 2.0];
    let alpha = 1.7;
    // inputs: α, x, initial y; outputs: final y = y₀ + α sin x
    let point = cat(&[&[alpha], &x, &y0]);
    let lens = [1, n, n];
    let primal = |p: &[f64]| {
        let s = split(p, &lens);
        let mut y = s[2].to_vec();
        scale_add_sin(s[0][0], s[1], &mut y);
        y
    };
    // reverse: ȳ passes through to the initial y unchanged (y += …), x̄ = α cos(x) ȳ,
    // ᾱ = Σ sin(xᵢ) ȳᵢ
    let w = [0.5, -2.0, 1.0, 3.0];
    let mut y = y0.to_vec();
    let mut gx = zeros(n);
    let mut gy = w.to_vec();
    let galpha = scale_add_sin_rev(alpha, &x, &mut gx, &mut y, &mut gy);
    assert_rel("ȳ on exit", &gy, &w, 1e-15);
    let want_gx: Vec<f64> = (0..n).map(|i| alpha * x[i].cos() * w[i]).collect();
    assert_rel("x̄", &gx, &want_gx, 1e-14);
    let want_ga: f64 = (0..n).map(|i| x[i].sin() * w[i]).sum();
    assert_rel("ᾱ", &[galpha], &[want_ga], 1e-14);
    check_fwd_rev(&Case {
        name: "scale_add_sin",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let s = split(p, &lens);
            let t = split(v, &lens);
            let mut y = s[2].to_vec();
            let mut dy = t[2].to_vec();
            scale_add_sin_fwd(s[0][0], t[0][0], s[1], t[1], &mut y, &mut dy);
            (y, dy)
        },
        vjp: &|p, w| {
            let s = split(p, &lens);
            let mut y = s[2].to_vec();
            let mut gx = zeros(n);
            let mut gy = w.to_vec();
            let galpha = scale_add_sin_rev(s[0][0], s[1], &mut gx, &mut y, &mut gy);
            (primal(p), cat(&[&[galpha], &gx, &gy]))
        },
        tols: TOLS,
    });
}

pub fn normalize_in_place() {
    let x0 = [0.3, -1.2, 2.0, 0.7];
    let n = x0.len();
    // outputs: the returned norm, then the final x
    let primal = |p: &[f64]| {
        let mut x = p.to_vec();
        let norm = normalize(&mut x);
        cat(&[&[norm], &x])
    };
    let norm = x0.iter().map(|v| v * v).sum::<f64>().sqrt();
    // fwd updates x and its tangent in place: ẋ_final = (ẋ − x̂ (x̂·ẋ)) / ‖x‖
    let v = [1.0, 0.5, -0.25, 2.0];
    let mut x = x0.to_vec();
    let mut dx = v.to_vec();
    let (value, dnorm) = normalize_fwd(&mut x, &mut dx);
    assert_rel("norm", &[value], &[norm], 1e-14);
    let unit: Vec<f64> = x0.iter().map(|v| v / norm).collect();
    assert_rel("x normalized in place", &x, &unit, 1e-14);
    let uv: f64 = unit.iter().zip(&v).map(|(a, b)| a * b).sum();
    assert_rel("norm tangent", &[dnorm], &[uv], 1e-14);
    let want: Vec<f64> = (0..n).map(|i| (v[i] - unit[i] * uv) / norm).collect();
    assert_all_close("ẋ_final", &dx, &want, 1e-13, 1e-15);
    // _grad: gradient of the returned norm with respect to the initial x
    let mut x = x0.to_vec();
    let (value, g) = normalize_grad(&mut x);
    assert_rel("norm from _grad", &[value], &[norm], 1e-14);
    assert_rel("∇‖x‖", &g, &unit, 1e-14);
    check_fwd_rev(&Case {
        name: "normalize",
        x: &x0,
        primal: &primal,
        jvp: &|p, v| {
            let mut x = p.to_vec();
            let mut dx = v.to_vec();
            let (norm, dnorm) = normalize_fwd(&mut x, &mut dx);
            (cat(&[&[norm], &x]), cat(&[&[dnorm], &dx]))
        },
        vjp: &|p, w| {
            // shadow on entry: adjoint of the final x; on exit: of the initial x
            let mut x = p.to_vec();
            let mut gx = w[1..].to_vec();
            let norm = normalize_rev(&mut x, &mut gx, w[0]);
            (cat(&[&[norm], &primal(p)[1..]]), gx)
        },
        tols: TOLS,
    });
}

pub fn discounted_suffix_reversed_range() {
    let n = 5;
    let x = [0.3, -1.2, 2.0, 0.7, -0.4];
    let point = cat(&[&x, &[0.0; 5]]);
    let primal = |p: &[f64]| {
        let mut out = p[n..].to_vec();
        discounted_suffix(&p[..n], &mut out);
        out
    };
    let suffix: Vec<f64> = (0..n)
        .map(|i| (i..n).map(|j| 0.9f64.powi((j - i) as i32) * x[j]).sum())
        .collect();
    let want: Vec<f64> = suffix.iter().map(|s| s.sin()).collect();
    assert_rel("out", &primal(&point), &want, 1e-14);
    check_fwd_rev(&Case {
        name: "discounted_suffix",
        x: &point,
        primal: &primal,
        jvp: &|p, v| {
            let mut out = p[n..].to_vec();
            let mut dout = v[n..].to_vec();
            discounted_suffix_fwd(&p[..n], &v[..n], &mut out, &mut dout);
            (out, dout)
        },
        vjp: &|p, w| {
            let mut out = p[n..].to_vec();
            let mut gx = zeros(n);
            let mut gout = w.to_vec();
            discounted_suffix_rev(&p[..n], &mut gx, &mut out, &mut gout);
            (primal(p), cat(&[&gx, &gout]))
        },
        tols: TOLS,
    });
}

pub fn is_empty_both_ways() {
    // Length 1: the local buffer is empty (Σx²); length 4: it is not (x₀ Σx²).
    for x in [&[0.7][..], &[0.3, -1.2, 2.0, 0.7]] {
        let g = slice_case(
            "empty_or_scaled",
            x,
            &empty_or_scaled,
            &empty_or_scaled_fwd,
            &empty_or_scaled_rev,
            &empty_or_scaled_grad,
        );
        let sq: f64 = x.iter().map(|v| v * v).sum();
        let scale = if x.len() > 1 { x[0] } else { 1.0 };
        let mut want: Vec<f64> = x.iter().map(|v| 2.0 * scale * v).collect();
        if x.len() > 1 {
            want[0] += sq;
        }
        assert_rel("∇ empty_or_scaled", &g, &want, 1e-14);
    }
    assert_eq!(empty_or_scaled(&[]), 1.0);
    assert_eq!(empty_or_scaled_grad(&[]), (1.0, vec![]));
}

pub fn smoothed_cubes_buffers() {
    let x = [0.3, -1.2, 2.0, 0.7, -0.4, 1.5];
    for sweeps in [0, 1, 4] {
        let g = slice_case(
            "smoothed_cubes",
            &x,
            &|x| smoothed_cubes(x, sweeps),
            &|x, v| smoothed_cubes_fwd(x, v, sweeps),
            &|x, g, s| smoothed_cubes_rev(x, g, sweeps, s),
            &|x| smoothed_cubes_grad(x, sweeps),
        );
        if sweeps == 0 {
            let want: Vec<f64> = x.iter().map(|v| 3.0 * v * v).collect();
            assert_rel("∇Σx³", &g, &want, 1e-14);
        }
    }
}

pub fn kinks_away_from_kinks() {
    // x[0] < 0, x[2] > x[1], x[3] < 0.5
    let x = [-0.7, 0.4, 1.3, 0.2];
    let g = slice_case("kinks", &x, &kinks, &kinks_fwd, &kinks_rev, &kinks_grad);
    let r2 = x[0] * x[0] + x[1] * x[1];
    let h = x[2].hypot(x[3]);
    let sech2 = 1.0 / (x[1] * x[2]).cosh().powi(2);
    let want = [
        -x[2] + x[1] / r2,
        -x[0] / r2 + sech2 * x[2],
        -x[0] + x[2] / h + sech2 * x[1],
        1.5 * x[3].sqrt() + x[3] / h,
    ];
    assert_rel("∇f", &g, &want, 1e-12);
    // x[0] > 0, x[1] > x[2], x[3] > 0.5 (min picks the constant)
    slice_case(
        "kinks",
        &[0.9, 1.6, -0.3, 0.8],
        &kinks,
        &kinks_fwd,
        &kinks_rev,
        &kinks_grad,
    );
}

pub fn tie_conventions() {
    // ties: max(1, 1), min(2, 2), |0|
    let x = [1.0, 1.0, 2.0, 2.0, 0.0];
    assert_eq!(tie_rules(&x), 5.0);
    let (f, g) = tie_rules_grad(&x);
    assert_eq!(f, 5.0);
    assert_eq!(g, [1.0, 0.0, 2.0, 0.0, 0.0]);
    let mut shadow = zeros(5);
    tie_rules_rev(&x, &mut shadow, 1.0);
    assert_eq!(shadow, [1.0, 0.0, 2.0, 0.0, 0.0]);
    // forward agrees: the tangent of max/min follows the first argument, |·|′(0) = 0
    let (_, t) = tie_rules_fwd(&x, &[0.0, 1.0, 0.0, 1.0, 1.0]);
    assert_eq!(t, 0.0);
    let (_, t) = tie_rules_fwd(&x, &[1.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(t, 3.0);

    // NaN arguments: `f64::max(2, NaN)` is 2 and `f64::min(NaN, 3)` is 3, so the
    // derivative goes to the argument returned (as `ad_core::nonsmooth` and `Dual` do);
    // `abs′(NaN)` is NaN.
    let nan = f64::NAN;
    for x in [[2.0, nan, nan, 3.0, nan], [nan, 2.0, 3.0, nan, nan]] {
        let (_, g) = tie_rules_grad(&x);
        let picked_first = !x[0].is_nan();
        let want_max = if picked_first { [1.0, 0.0] } else { [0.0, 1.0] };
        let want_min = if x[2].is_nan() { [0.0, 2.0] } else { [2.0, 0.0] };
        assert_eq!(g[..4], [want_max[0], want_max[1], want_min[0], want_min[1]], "{x:?}");
        assert!(g[4].is_nan(), "abs'(NaN) = {}", g[4]);
        // Dual numbers agree, argument by argument.
        for k in 0..4 {
            let d: Vec<phidiff::Dual<f64>> = (0..5)
                .map(|j| phidiff::Dual::new(x[j], if j == k { 1.0 } else { 0.0 }))
                .collect();
            use num_traits::Float as _;
            let y = d[0].max(d[1]) + phidiff::Dual::constant(2.0) * d[2].min(d[3]);
            assert_eq!(y.eps, g[k], "Dual vs _grad, argument {k}, x = {x:?}");
            let mut t = [0.0; 5];
            t[k] = 1.0;
            let (_, tf) = tie_rules_fwd(&[x[0], x[1], x[2], x[3], 0.5], &t);
            assert_eq!(tf, g[k], "_fwd vs _grad, argument {k}, x = {x:?}");
        }
    }
}

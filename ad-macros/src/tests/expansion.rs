//! Expansion snapshots: what `cargo expand` shows for small functions, pinned as
//! prettyplease-formatted files under `src/tests/snapshots/`. Run with `PHIDIFF_BLESS=1`
//! to rewrite them after an intended change, then review the diff.

use quote::quote;
use std::path::PathBuf;

fn check(name: &str, args: proc_macro2::TokenStream, item: proc_macro2::TokenStream) {
    let out = crate::expand::expand(args, item);
    let file: syn::File = syn::parse2(out).expect("the expansion parses as Rust items");
    let text = prettyplease::unparse(&file);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("src/tests/snapshots/{name}.expanded.rs"));
    if std::env::var_os("PHIDIFF_BLESS").is_some() || !path.exists() {
        std::fs::write(&path, &text).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("read snapshot");
    assert!(want == text, "expansion of `{name}` changed; rerun with PHIDIFF_BLESS=1 and review.\n--- got ---\n{text}");
}

#[test]
fn straight_line_scalar() {
    check(
        "straight_line",
        quote!(forward, reverse),
        quote! {
            pub fn f(a: f64, b: f64) -> f64 {
                let t = a * b + a.sin();
                t / b
            }
        },
    );
}

/// `reverse(width = 2)`: the shadows and the seed as arrays, destructured into lanes; the
/// forward sweep and the partials once, each adjoint statement once per lane.
#[test]
fn batched_reverse() {
    check(
        "batched_reverse",
        quote!(reverse(width = 2)),
        quote! {
            pub fn f(x: &[f64], k: f64, y: &mut [f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    y[i] = (k * x[i]).sin();
                    s += y[i] * x[i];
                }
                s
            }
        },
    );
}

/// `forward(width = 2)`: the tangents as arrays, destructured into lanes; the primal
/// values and the partials once, each tangent statement once per lane.
#[test]
fn batched_forward() {
    check(
        "batched_forward",
        quote!(forward(width = 2)),
        quote! {
            pub fn f(x: &[f64], k: f64, y: &mut [f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    y[i] = (k * x[i]).sin();
                    s += y[i] * x[i];
                }
                s
            }
        },
    );
}

/// Interleaved lanes: the tangent of a local buffer is one `Vec<[f64; 2]>` (lane `l` of
/// element `i` at `[i][l]`), allocated once for both lanes and read and written through
/// one window per loop.
#[test]
fn batched_interleaved() {
    check(
        "batched_interleaved",
        quote!(forward(width = 2)),
        quote! {
            pub fn f(x: &[f64], k: f64) -> f64 {
                let n = x.len();
                let mut t = vec![0.5; n + 1];
                for i in 0..n {
                    t[i + 1] += (k * x[i]).sin();
                }
                let mut e = 0.0;
                for i in 0..n {
                    e += t[i] * t[i + 1];
                }
                e
            }
        },
    );
}

#[test]
fn rosenbrock_generic_loop() {
    check(
        "rosenbrock",
        quote!(forward, reverse),
        quote! {
            pub fn rosenbrock<T: Float>(x: &[T]) -> T {
                let mut s = T::zero();
                for i in 0..x.len() - 1 {
                    let a = x[i + 1] - x[i] * x[i];
                    let b = T::one() - x[i];
                    s += T::from(100.0).unwrap() * a * a + b * b;
                }
                s
            }
        },
    );
}

#[test]
fn branch_as_expression() {
    check(
        "branch",
        quote!(reverse),
        quote! {
            fn relu_sum(x: &[f64], w: f64) -> f64 {
                let mut s = 0.0;
                for v in x.iter() {
                    let y = if *v > 0.0 { w * *v } else { 0.01 * w * *v };
                    s += y;
                }
                s
            }
        },
    );
}

#[test]
fn while_loop_with_tape() {
    check(
        "babylonian",
        quote!(reverse(name = sqrt_adj)),
        quote! {
            fn babylonian(a: f64) -> f64 {
                let mut x = a;
                let mut k = 0;
                while k < 20 && (x * x - a).abs() > 1e-14 * a {
                    x = 0.5 * (x + a / x);
                    k += 1;
                }
                x
            }
        },
    );
}

#[test]
fn output_slice_and_call() {
    check(
        "axpy_call",
        quote!(forward, reverse, wrt(x)),
        quote! {
            fn scaled(x: &[f64], y: &mut [f64], a: f64) {
                for i in 0..x.len() {
                    y[i] += a * softplus(x[i]);
                }
            }
        },
    );
}

#[test]
fn early_return_in_loop() {
    check(
        "early_return",
        quote!(forward, reverse),
        quote! {
            fn first_big(x: &[f64], limit: f64) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += x[i] * x[i];
                    if s > limit {
                        return s.sqrt();
                    }
                }
                s
            }
        },
    );
}

/// BGDHyperOpt (Shen et al.'s benchmark) coarsened and with `coarsen = off`: the coarsened
/// `_rev` computes the inner loop's sums Σx², Σx, Σxy, Σ1, Σy once before the training loop
/// and each training step in O(1); `docs/coarsening.md` shows both.
#[test]
fn bgd_hyperopt_coarsened_and_off() {
    let item = quote! {
        pub fn bgd_rmse(x: &[f64], y: &[f64], r: f64, tol: f64, max_iter: usize) -> f64 {
            let m = x.len();
            let inv_m = 1.0 / m as f64;
            let mut w = 0.0;
            let mut b = 0.0;
            let mut iter = 0;
            loop {
                let mut gw = 0.0;
                let mut gb = 0.0;
                for i in 0..m {
                    let e = w * x[i] + b - y[i];
                    gw += e * x[i];
                    gb += e;
                }
                let dw = r * gw * inv_m;
                let db = r * gb * inv_m;
                w -= dw;
                b -= db;
                iter += 1;
                if dw.abs() + db.abs() < tol || iter >= max_iter {
                    break;
                }
            }
            let mut sq = 0.0;
            for i in 0..m {
                let e = w * x[i] + b - y[i];
                sq += e * e;
            }
            (sq * inv_m).sqrt()
        }
    };
    check("bgd_coarsened", quote!(reverse, wrt(r)), item.clone());
    check(
        "bgd_coarsen_off",
        quote!(reverse, wrt(r), coarsen = off),
        item,
    );
}

#[test]
fn checkpointed_time_loop() {
    check(
        "checkpointed_heat",
        quote!(reverse),
        quote! {
            pub fn heat(u0: &[f64], r: f64, steps: usize) -> f64 {
                let n = u0.len();
                let mut u = u0.to_vec();
                let mut next = vec![0.0; n];
                #[checkpoint(revolve(snapshots = 16), storage = disk)]
                for _ in 0..steps {
                    next[0] = 0.0;
                    next[n - 1] = 0.0;
                    for i in 1..n - 1 {
                        next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
                    }
                    std::mem::swap(&mut u, &mut next);
                }
                let mut j = 0.0;
                for i in 0..n {
                    j += u[i] * u[i];
                }
                j
            }
        },
    );
}

#[test]
fn parallel_stencil_and_sum() {
    check(
        "parallel_stencil",
        quote!(forward, reverse),
        quote! {
            pub fn smooth(u: &[f64], out: &mut [f64], r: f64, idx: &[usize]) -> f64 {
                let n = u.len();
                out.par_iter_mut().enumerate().for_each(|(i, o)| {
                    if i > 0 && i < n - 1 {
                        *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * u[idx[i]];
                    } else {
                        *o = u[i];
                    }
                });
                out.par_iter().map(|v| v * v).sum()
            }
        },
    );
}

/// The CUDA C of an element function's primal and adjoint kernels, pinned as
/// `src/tests/snapshots/{name}.cu` (bless as above).
fn check_cuda(name: &str, item: proc_macro2::TokenStream) {
    let item: syn::ItemFn = syn::parse2(item).expect("a function");
    let compiled = crate::expand::compile_with_for_tests("reverse, cuda", &item).expect("compiles");
    let float = crate::parse::signature::FloatTy::F64;
    let int_elem = |_: &str| Some("unsigned long long");
    let fname = item.sig.ident.to_string();
    let primal = crate::codegen::cuda::kernel(&compiled.primal, &fname, &float, &int_elem)
        .expect("primal kernel");
    let (adjoint, _) =
        crate::expand::cuda_adjoint(&compiled, &item, &float, &int_elem).expect("adjoint kernel");
    let text = format!("{primal}\n{adjoint}");
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("src/tests/snapshots/{name}.cu"));
    if std::env::var_os("PHIDIFF_BLESS").is_some() || !path.exists() {
        std::fs::write(&path, &text).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("read snapshot");
    assert!(want == text, "CUDA text of `{name}` changed; rerun with PHIDIFF_BLESS=1 and review.\n--- got ---\n{text}");
}

#[test]
fn cuda_stencil_kernels() {
    check_cuda(
        "cuda_heat",
        quote! {
            pub fn heat(i: usize, u: &[f64], out: &mut [f64], r: f64) {
                let n = u.len();
                if i == 0 || i == n - 1 {
                    out[i] = u[i];
                    return;
                }
                out[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + u[i].sin());
            }
        },
    );
}

#[test]
fn cuda_reduction_and_gather_kernels() {
    check_cuda(
        "cuda_energy",
        quote! {
            pub fn energy(i: usize, x: &[f64], w: f64, total: &mut [f64]) {
                total[0] += w * x[i] * x[i].exp();
            }
        },
    );
    check_cuda(
        "cuda_gather",
        quote! {
            pub fn gather(i: usize, x: &[f64], idx: &[usize], y: &mut [f64]) {
                y[i] = (0.3 * x[idx[i]]).sin() * x[i];
            }
        },
    );
}

#[test]
fn cuda_rejects_what_a_kernel_cannot_do() {
    let item: syn::ItemFn = syn::parse_quote! {
        pub fn k(i: usize, x: &[f64], y: &mut [f64]) {
            let t = vec![0.0; 3];
            y[i] = x[i] + t[0];
        }
    };
    let compiled = crate::expand::compile_with_for_tests("reverse, cuda", &item).expect("compiles");
    let float = crate::parse::signature::FloatTy::F64;
    let err = crate::codegen::cuda::kernel(&compiled.primal, "k", &float, &|_| None)
        .expect_err("a local buffer");
    assert!(err.contains("a buffer allocated in a CUDA kernel"), "{err}");
}

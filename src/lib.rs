//! Automatic differentiation for Rust by source transformation.
//!
//! The attribute macro [`differentiate`] reads a Rust function at compile time and writes
//! its derivatives next to it as ordinary Rust: a forward (tangent) version `NAME_fwd`, a
//! reverse (adjoint) version `NAME_rev` and, for a scalar result, `NAME_grad`. Nothing is
//! recorded at run time that the compiler could plan; `cargo expand` shows the generated
//! code.
//!
//! ```
//! use phidiff::{differentiate, Float};
//!
//! #[differentiate(forward, reverse)]
//! pub fn rosenbrock<T: Float>(x: &[T]) -> T {
//!     let mut s = T::zero();
//!     for i in 0..x.len() - 1 {
//!         let a = x[i + 1] - x[i] * x[i];
//!         let b = T::one() - x[i];
//!         s += T::from(100.0).unwrap() * a * a + b * b;
//!     }
//!     s
//! }
//!
//! let x = [-1.2_f64, 1.0];
//! // _grad: the value and the gradient, here against the closed form.
//! let (f, g) = rosenbrock_grad(&x);
//! let a = x[1] - x[0] * x[0];
//! assert_eq!(f, 100.0 * a * a + (1.0 - x[0]) * (1.0 - x[0]));
//! let want = [-400.0 * x[0] * a - 2.0 * (1.0 - x[0]), 200.0 * a];
//! assert!((g[0] - want[0]).abs() < 1e-12 && (g[1] - want[1]).abs() < 1e-12);
//!
//! // _fwd: the value and the directional derivative ∇f·v.
//! let v = [0.5, -2.0];
//! let (f_fwd, df) = rosenbrock_fwd(&x, &v);
//! assert_eq!(f_fwd, f);
//! assert!((df - (g[0] * v[0] + g[1] * v[1])).abs() < 1e-9);
//!
//! // _rev: adds seed·∇f into the shadow `dx`.
//! let mut dx = [1.0, 1.0];
//! let f_rev = rosenbrock_rev(&x, &mut dx, 2.0);
//! assert_eq!(f_rev, f);
//! assert!((dx[0] - (1.0 + 2.0 * g[0])).abs() < 1e-9);
//! ```
//!
//! The contract (what is generated, for which parameters, and which Rust is supported) is
//! the documentation of [`differentiate`]. This crate is the facade users depend on; it
//! re-exports:
//!
//! | item | from | what |
//! |---|---|---|
//! | [`differentiate`] | `ad-macros` | the attribute macro (the compiler) |
//! | [`Float`] | `ad-core` | the bound differentiable functions are generic over |
//! | [`Dual`] | `ad-core` | dual numbers: forward mode at run time, Hessian-vector products through `_rev::<Dual<f64>>` |
//! | [`check`] | `ad-core` | gradient checks: [`check::gradient`] (finite differences) and [`check::dot_product`] |
//! | [`checkpoint`] | `ad-core` | the checkpointing schemes behind `#[checkpoint(..)]` loops, and [`checkpoint::record`] to see what they did |
//! | [`Tape`], [`TapeMeter`] | `ad-core` | the direct-indexed tape of generated code, and a meter of its bytes |
//! | `par` (feature `rayon`, default) | `ad-rayon` | the runtime of differentiated rayon loops |
//! | `mpi` (feature `mpi`) | `ad-mpi` | a differentiable MPI communicator, `mpi::Comm` |
//! | `cuda` (feature `cuda`) | `ad-cuda` | NVRTC compilation and launches for `#[differentiate(reverse, cuda)]` kernels |
//!
//! # Cargo features
//!
//! - `rayon` (default): the runtime of differentiated rayon loops. A function with a
//!   rayon loop needs it.
//! - `count-atomics`: counts the atomic float adds of parallel adjoints
//!   (`par::atomic_ops`).
//! - `mpi`: the `mpi` module; needs a system MPI (Open MPI) and libclang to build.
//! - `cuda`: the `cuda` module; NVRTC and the CUDA driver are loaded at run time, so it
//!   builds on machines without CUDA.
//!
//! # Examples of the repository
//!
//! `examples/` holds programs to copy that check their own gradients: `heat_inverse` (the
//! initial state of a 2-D heat equation recovered with L-BFGS, through a checkpointed
//! loop of rayon steps), `fit_oscillator` (least squares with L-BFGS), `checkpoint_memory` (a loop whose full tape would need
//! 8 GiB), `mpi_burgers` (distributed 2-D Burgers under `mpirun`), `cuda_heat` (generated
//! CUDA kernels, with the CPU as fallback); each runtime crate has its own in
//! `<crate>/examples/`. The README's table lists them all.

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

pub use ad_core::*;
/// Differentiates a function at compile time: writes `NAME_fwd`, `NAME_rev` and
/// `NAME_grad` next to it. Examples first; the reference follows them.
///
/// # Examples
///
/// Each example runs as a doc test and checks its derivatives against a closed form or
/// finite differences.
///
/// ## The three generated functions
///
/// ```
/// use phidiff::{check, differentiate, Float};
///
/// /// E = k · Σ_{i<n} x_i².
/// #[differentiate(forward, reverse)]
/// pub fn energy<T: Float>(x: &[T], k: T, n: usize) -> T {
///     let mut s = T::zero();
///     for i in 0..n {
///         s += x[i] * x[i];
///     }
///     k * s
/// }
///
/// // The signatures of the contract (`n: usize` is constant, so it gets no tangent).
/// let _: fn(&[f64], &[f64], f64, f64, usize) -> (f64, f64) = energy_fwd::<f64>;
/// let _: fn(&[f64], &mut [f64], f64, usize, f64) -> (f64, f64) = energy_rev::<f64>;
/// let _: fn(&[f64], f64, usize) -> (f64, (Vec<f64>, f64)) = energy_grad::<f64>;
///
/// let (x, k) = ([1.0, -2.0, 3.0], 0.5);
/// // ∂E/∂x_i = 2k·x_i for i < n, ∂E/∂k = Σ x_i².
/// let (e, (dx, dk)) = energy_grad(&x, k, 2);
/// assert_eq!((e, dk), (2.5, 5.0));
/// assert_eq!(dx, [1.0, -2.0, 0.0]);
///
/// // _rev adds seed·∂E/∂x into the shadow and returns (value, seed·∂E/∂k).
/// let mut shadow = [10.0, 10.0, 10.0];
/// assert_eq!(energy_rev(&x, &mut shadow, k, 2, 2.0), (2.5, 10.0));
/// assert_eq!(shadow, [12.0, 6.0, 10.0]);
///
/// // _fwd: the derivative along (ẋ, k̇), against finite differences of `energy`.
/// let (xd, kd) = ([0.3, 0.1, -0.7], 0.2);
/// let (_, de) = energy_fwd(&x, &xd, k, kd, 2);
/// let h = 1e-6;
/// let at = |t: f64| {
///     let xt: Vec<f64> = x.iter().zip(&xd).map(|(a, b)| a + t * b).collect();
///     energy(&xt, k + t * kd, 2)
/// };
/// assert!((de - (at(h) - at(-h)) / (2.0 * h)).abs() < 1e-8);
///
/// // The same gradient through the gradient check of `phidiff::check`.
/// check::gradient(|x| energy(x, k, 2), &x, &dx, check::Tolerance::default()).unwrap();
/// ```
///
/// ## A `&mut` buffer, several scalars, a `()` result
///
/// A `&mut [T]` parameter is updated in place by all three functions. In `_rev` its shadow
/// holds the adjoint of the *final* value on entry and the adjoint of the *initial* value
/// on exit, and the buffer is left holding the final value.
///
/// ```
/// use phidiff::differentiate;
///
/// /// u ← a·u + b (elementwise).
/// #[differentiate(forward, reverse)]
/// pub fn affine(u: &mut [f64], a: f64, b: f64) {
///     for i in 0..u.len() {
///         u[i] = a * u[i] + b;
///     }
/// }
///
/// // No result: `_fwd` returns `()`, `_rev` has no seed and returns (ā, b̄), no `_grad`.
/// let mut u = [1.0, 2.0];
/// let mut du = [1.0, 0.0];
/// affine_fwd(&mut u, &mut du, 3.0, 0.5, 1.0, 0.0);
/// assert_eq!((u, du), ([4.0, 7.0], [3.5, 1.0])); // u̇ ← a·u̇ + ȧ·u + ḃ
///
/// let mut u = [1.0, 2.0];
/// let mut ubar = [1.0, 10.0]; // adjoint of the final u
/// let (abar, bbar) = affine_rev(&mut u, &mut ubar, 3.0, 0.5);
/// assert_eq!(u, [3.5, 6.5]); // the final value
/// assert_eq!(ubar, [3.0, 30.0]); // a·ū: adjoint of the initial u
/// assert_eq!((abar, bbar), (1.0 * 1.0 + 10.0 * 2.0, 11.0)); // Σ ū·u₀, Σ ū
/// ```
///
/// ## Shadow lengths are checked
///
/// ```
/// use phidiff::differentiate;
///
/// #[differentiate(reverse)]
/// fn sum_sq(x: &[f64]) -> f64 {
///     x.iter().map(|v| v * v).sum()
/// }
///
/// let panic = std::panic::catch_unwind(|| {
///     let mut dx = [0.0; 2]; // one too short
///     sum_sq_rev(&[1.0, 2.0, 3.0], &mut dx, 1.0)
/// });
/// let message = panic.unwrap_err().downcast::<String>().unwrap();
/// assert_eq!(
///     *message,
///     "phidiff: `dx` has length 2 but `x` has length 3; the derivative buffer passed after \
///      `x` (its tangent in `_fwd`, its shadow in `_rev`) must have the same length: allocate \
///      it with `vec![0.0; x.len()]`"
/// );
/// ```
///
/// ## `wrt`, custom names, `f64` without generics
///
/// ```
/// use phidiff::differentiate;
///
/// /// ½ Σ (p0·t_k + p1 − y_k)²: only `p` is active.
/// #[differentiate(forward(name = misfit_tangent), reverse(name = misfit_adjoint), wrt(p))]
/// fn misfit(p: &[f64], t: &[f64], y: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for k in 0..t.len() {
///         let r = p[0] * t[k] + p[1] - y[k];
///         s += r * r;
///     }
///     0.5 * s
/// }
///
/// let (t, y) = ([0.0, 1.0, 2.0], [1.0, 2.0, 4.0]);
/// let p = [1.0, 1.0];
/// // `_grad` keeps the function's name; its gradient is the lone active parameter's.
/// let (f, g) = misfit_grad(&p, &t, &y);
/// // residuals (0, 0, −1): ∂/∂p0 = Σ r·t = −2, ∂/∂p1 = Σ r = −1.
/// assert_eq!((f, g), (0.5, vec![-2.0, -1.0]));
/// let mut pbar = [0.0; 2];
/// assert_eq!(misfit_adjoint(&p, &mut pbar, &t, &y, 1.0), 0.5);
/// assert_eq!(pbar, [-2.0, -1.0]);
/// assert_eq!(misfit_tangent(&p, &[1.0, 0.0], &t, &y), (0.5, -2.0));
/// ```
///
/// ## Calls and custom derivative rules
///
/// A call with active arguments calls the callee's `_fwd`/`_rev`, so a hand-written pair
/// following the convention is a custom rule, here for a numerically stable softplus.
///
/// ```
/// use phidiff::differentiate;
///
/// /// ln(1 + eˣ) without overflow.
/// fn softplus(x: f64) -> f64 {
///     x.max(0.0) + (-x.abs()).exp().ln_1p()
/// }
/// fn sigmoid(x: f64) -> f64 {
///     1.0 / (1.0 + (-x).exp())
/// }
/// /// The rule for `_fwd`: (value, tangent).
/// fn softplus_fwd(x: f64, dx: f64) -> (f64, f64) {
///     (softplus(x), sigmoid(x) * dx)
/// }
/// /// The rule for `_rev`: (value, adjoint of x).
/// fn softplus_rev(x: f64, seed: f64) -> (f64, f64) {
///     (softplus(x), sigmoid(x) * seed)
/// }
///
/// #[differentiate(forward, reverse)]
/// fn loss(w: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for i in 0..w.len() {
///         s += softplus(w[i] * (i as f64 + 1.0));
///     }
///     s
/// }
///
/// let w = [0.3, -800.0, 2.0]; // softplus(-1600) underflows to 0, not NaN
/// let (_, g) = loss_grad(&w);
/// for i in 0..3 {
///     let c = i as f64 + 1.0;
///     assert!((g[i] - c * sigmoid(c * w[i])).abs() < 1e-15);
/// }
/// ```
///
/// ## Checkpointed loops
///
/// `#[checkpoint(..)]` on a top-level loop reverses it from a few snapshots of its state
/// instead of a tape of every iteration; the gradient is the same to rounding.
///
/// ```
/// use phidiff::checkpoint::{record, revolve_forward_steps};
/// use phidiff::differentiate;
///
/// /// Explicit heat steps, then Σ u²: a full tape…
/// #[differentiate(reverse)]
/// pub fn heat(u0: &[f64], r: f64, steps: usize) -> f64 {
///     let n = u0.len();
///     let mut u = u0.to_vec();
///     let mut next = vec![0.0; n];
///     for _ in 0..steps {
///         for i in 1..n - 1 {
///             next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
///         }
///         std::mem::swap(&mut u, &mut next);
///     }
///     u.iter().map(|v| v * v).sum()
/// }
///
/// /// …and the same loop with Revolve and `snapshots` snapshots.
/// #[differentiate(reverse)]
/// pub fn heat_revolve(u0: &[f64], r: f64, steps: usize, snapshots: usize) -> f64 {
///     let n = u0.len();
///     let mut u = u0.to_vec();
///     let mut next = vec![0.0; n];
///     #[checkpoint(revolve(snapshots = snapshots))]
///     for _ in 0..steps {
///         for i in 1..n - 1 {
///             next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
///         }
///         std::mem::swap(&mut u, &mut next);
///     }
///     u.iter().map(|v| v * v).sum()
/// }
///
/// let u0: Vec<f64> = (0..20).map(|i| (0.3 * i as f64).sin()).collect();
/// let (e, (g, dr)) = heat_grad(&u0, 0.25, 200);
/// // `record` collects what each checkpointed loop did.
/// let ((e_ck, (g_ck, dr_ck)), reports) = record(|| heat_revolve_grad(&u0, 0.25, 200, 5));
/// assert!((e - e_ck).abs() <= 1e-12 * e && (dr - dr_ck).abs() <= 1e-12 * dr.abs());
/// assert!(g.iter().zip(&g_ck).all(|(a, b)| (a - b).abs() <= 1e-12 * e));
/// assert_eq!(reports[0].stats.forward_steps, revolve_forward_steps(200, 5));
/// ```
///
/// ## Parallel loops (rayon)
///
/// ```
/// use phidiff::differentiate;
/// use rayon::prelude::*;
///
/// /// One smoothing step into `out`, in parallel over the output, then Σ out².
/// #[differentiate(reverse)]
/// pub fn smooth(u: &[f64], out: &mut [f64], r: f64) -> f64 {
///     let n = u.len();
///     out.par_iter_mut().enumerate().for_each(|(i, o)| {
///         if i > 0 && i < n - 1 {
///             *o = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
///         } else {
///             *o = u[i];
///         }
///     });
///     out.iter().map(|v| v * v).sum()
/// }
///
/// let u: Vec<f64> = (0..1000).map(|i| (0.01 * i as f64).cos()).collect();
/// let mut out = vec![0.0; u.len()];
/// let (mut du, mut dout) = (vec![0.0; u.len()], vec![0.0; u.len()]);
/// let (_, dr) = smooth_rev(&u, &mut du, &mut out, &mut dout, 0.3, 1.0);
/// // Against finite differences in r.
/// let f = |r: f64| smooth(&u, &mut vec![0.0; u.len()], r);
/// let h = 1e-6;
/// assert!((dr - (f(0.3 + h) - f(0.3 - h)) / (2.0 * h)).abs() < 1e-6 * dr.abs().max(1.0));
/// ```
///
/// ## Hessian-vector products
///
/// A generic `_rev` instantiated with [`Dual`] numbers is forward over reverse: with the
/// direction `v` in the inputs' `eps`, the shadows' `eps` parts are `H·v`.
///
/// ```
/// use phidiff::{differentiate, Dual, Float};
///
/// /// f(x) = x0²·x1 + x1³
/// #[differentiate(reverse)]
/// pub fn f<T: Float>(x: &[T]) -> T {
///     x[0] * x[0] * x[1] + x[1] * x[1] * x[1]
/// }
///
/// let (x, v) = ([1.5, -0.5], [1.0, 2.0]);
/// let xd: Vec<Dual<f64>> = x.iter().zip(&v).map(|(&a, &b)| Dual::new(a, b)).collect();
/// let mut shadow = vec![Dual::constant(0.0); 2];
/// f_rev(&xd, &mut shadow, Dual::constant(1.0));
/// // H = [[2·x1, 2·x0], [2·x0, 6·x1]]
/// let hv = [2.0 * x[1] * v[0] + 2.0 * x[0] * v[1], 2.0 * x[0] * v[0] + 6.0 * x[1] * v[1]];
/// assert_eq!([shadow[0].eps, shadow[1].eps], hv);
/// assert_eq!(shadow[0].re, 2.0 * x[0] * x[1]); // the gradient itself
/// ```
///
/// ## Unsupported code is a compile error
///
/// ```compile_fail
/// use phidiff::differentiate;
///
/// #[differentiate(reverse)]
/// fn f(x: &[f64], a: f64) -> f64 {
///     // error: phidiff cannot differentiate `a % 2.0` here: `%` on floats has no
///     // supported derivative; …
///     (a % 2.0) * x[0]
/// }
/// ```
pub use ad_macros::differentiate;
pub use ad_macros::Differentiable;

/// Runtime for differentiated rayon loops: deterministic blocked loops and
/// reductions, owned writes, private accumulators, atomic float adds.
#[cfg(feature = "rayon")]
pub mod par {
    pub use ad_rayon::*;
}

/// Differentiable MPI (feature `mpi`, needs a system MPI): `Comm` and its
/// communication methods with `_fwd`/`_rev`, so a differentiated function that takes
/// `comm: &Comm` is differentiated through its communication.
#[cfg(feature = "mpi")]
pub mod mpi {
    pub use ad_mpi::*;
}

/// The CUDA runtime (feature `cuda`): NVRTC compilation with a cache, devices and
/// launches over cudarc, for the kernels of `#[differentiate(reverse, cuda)]`.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use ad_cuda::*;
}

/// The user guide's snippets, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
pub struct UserGuideSnippets;

#[doc(hidden)]
pub mod __private {
    pub use ad_core::__private::*;
    pub use ad_macros::differentiate_coarsen_off;
    pub use ad_macros::differentiate_resume;
    pub use ad_macros::layout_chain;
    #[cfg(feature = "rayon")]
    pub use ad_rayon as par;
}

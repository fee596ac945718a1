//! The phidiff compiler: `#[differentiate]` rewrites a Rust function into its forward
//! (tangent) and reverse (adjoint) versions. This file only parses the attribute's input and
//! calls `expand::expand`; every pass works on `proc_macro2` and is unit-tested without rustc.

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

mod aggregate;
mod analysis;
mod codegen;
mod derivative;
mod desugar;
mod diagnostics;
mod expand;
mod ir;
mod lower;
mod missing_rule;
mod parse;
mod pipeline;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// The reference of `#[differentiate]`: it writes the forward (`NAME_fwd`), reverse
/// (`NAME_rev`) and gradient (`NAME_grad`) versions of a function next to it, as ordinary
/// Rust with the function's visibility and generics, and emits the function itself
/// unchanged.
///
/// Use it through the facade crate, `use phidiff::differentiate;`: the generated code
/// names its runtime `::phidiff::…` (see `crate = path` below). The runnable examples are
/// in `phidiff`'s documentation of this macro, which shows them before this reference (a
/// proc-macro crate cannot run its own macro in a doc test without the runtime).
///
/// # Generated functions
///
/// For
///
/// ```ignore
/// #[differentiate(forward, reverse)]
/// pub fn energy<T: Float>(x: &[T], k: T, n: usize) -> T { ... }
/// ```
///
/// the macro writes
///
/// ```ignore
/// pub fn energy_fwd<T: Float>(x: &[T], dx: &[T], k: T, dk: T, n: usize) -> (T, T);        // (value, tangent)
/// pub fn energy_rev<T: Float>(x: &[T], dx: &mut [T], k: T, n: usize, seed: T) -> (T, T); // (value, adjoint of k)
/// pub fn energy_grad<T: Float>(x: &[T], k: T, n: usize) -> (T, (Vec<T>, T));           // (value, (dx, dk))
/// ```
///
/// - **Activity is read from types.** Active parameters: `T` (the type bounded by
///   `Float`), `f64`, `f32`, and slices, arrays and `Vec`s of them, by value or by
///   reference (`&[T]`, `&mut [T]`, `[T; N]`, `&[T; N]`, `Vec<T>`, `&Vec<T>`, …, and
///   buffers of buffers such as `&[Vec<T>]`). Integers, `bool` and every other type are
///   constant and passed through. Structs deriving `phidiff::Differentiable`, tuples and
///   methods (`self`) are split into their fields (see the guide, "Structs, tuples and
///   methods").
/// - **`_fwd`**: a tangent parameter of the same type follows each active parameter
///   (`dx` for `x`; `&mut` tangents are updated in place like their primals). It returns
///   `(value, tangent)`, or `()` for a function returning `()`.
/// - **`_rev`**: an active slice, array or `Vec` gets a shadow `&mut [E]` right after it,
///   and its adjoint is *added* into the shadow. For a `&mut [T]` parameter the shadow holds
///   the adjoint of the final value on entry and of the initial value on exit. Active
///   scalars get no shadow; their adjoints are returned. A function with a float result
///   takes a last parameter `seed` (the adjoint of the result). The result is the tuple
///   `(value, adjoint of each active scalar in order)`, a 1-tuple collapsed to its element
///   and an empty one to `()`.
/// - **`_grad`** exists when `reverse` is asked for and the function returns a float: it
///   calls `_rev` with seed 1 and fresh zeroed shadows and returns `(value, gradient)`,
///   the gradient being the lone one if one parameter is active, else a tuple in
///   parameter order (`Vec<E>` for a buffer, the float for a scalar).
/// - Tangent and shadow lengths are checked: a mismatch panics with a message naming the
///   parameter and saying how to allocate it (``phidiff: `dx` has length 2 but `x` has
///   length 3; the derivative buffer passed after `x` (its tangent in `_fwd`, its shadow in
///   `_rev`) must have the same length: allocate it with `vec![0.0; x.len()]` ``).
/// - Generic functions stay generic, so `energy_rev::<phidiff::Dual<f64>>` gives
///   Hessian-vector products (forward over reverse).
///
/// # Arguments of the attribute
///
/// | argument | effect |
/// |---|---|
/// | `forward`, `forward(name = f_tan)` | generate the tangent function (default name `NAME_fwd`) |
/// | `reverse`, `reverse(name = f_adj)` | generate the adjoint function (default `NAME_rev`) and, for a float result, `NAME_grad` (named after the function whatever the adjoint's name) |
/// | `wrt(a, b)` | only `a` and `b` are active; the other parameters are constant |
/// | `coarsen = off` | one adjoint per operation, every intermediate taped (the baseline the coarsening is measured against); default `on` |
/// | `coarsen(limit = N)` | the largest symbolically differentiated segment, in expression nodes (default 64, at least 2) |
/// | `parallel_adjoint = atomic` | every adjoint `+=` of a parallel loop into a shared array is an atomic add (an ablation baseline); default `summation_aware` |
/// | `cuda` | with `reverse`, on an element function `fn k(i: usize, ..)`: also generate `mod k_cuda` with the CUDA C of the primal and adjoint kernels and their launchers (feature `cuda` of `phidiff`) |
/// | `crate = path` | where the runtime is (default `::phidiff`), for crates that rename or re-export it |
///
/// At least one of `forward` and `reverse` is required.
///
/// # Inside the body
///
/// `let`/`let mut` and shadowing; `+ - * /` and compound assignment; indexing reads and
/// writes (`a[i]`, `a[i][j]`, `a[i * n + j]`); `if`/`else` as statement and expression;
/// `match` on integers; `for` over ranges (with `rev()`, `step_by`), over `iter()`,
/// `iter().enumerate()`, `zip`; `while`, `loop`, `break`, `continue`, early `return`;
/// `vec![v; n]`, `.to_vec()`, `.clone()`, `.len()`, `copy_from_slice`,
/// `std::mem::swap` of buffers, `iter().sum()`, `iter().map(|v| ..).sum()`; float methods
/// (`sin cos tan exp exp2 ln log log2 log10 sqrt cbrt powi powf abs max min tanh sinh cosh
/// asin acos atan atan2 hypot mul_add recip ln_1p exp_m1 …`), `f64::consts`,
/// `T::from(..)`, `T::zero()`, `T::one()`; integer arithmetic; `assert!`.
///
/// - **Calls.** A call whose arguments are active calls the callee's derivative by the same
///   convention (`g(x, a)` becomes `g_fwd(..)` / `g_rev(..)`, a method `c.m(..)` becomes
///   `c.m_fwd(..)` / `c.m_rev(..)`), so a hand-written `_fwd`/`_rev` pair is a custom
///   derivative rule. Calls with only inactive arguments pass through.
/// - **Non-smooth points.** `abs'(0) = 0`; `max`/`min` send the adjoint to the first
///   argument on ties; comparisons have zero derivative.
/// - **Loops in reverse mode** save what the reverse sweep needs on a tape indexed by the
///   iteration. A top-level loop may carry `#[checkpoint(revolve(snapshots = S))]`,
///   `#[checkpoint(periodic(every = K))]` or `#[checkpoint(online(snapshots = S))]`,
///   optionally with `storage = disk`; it is then reversed from `S` snapshots of its
///   loop-carried state (`S`, `K`: literals or integer expressions of the parameters).
///   See `phidiff::checkpoint`.
/// - **Parallel loops (rayon).** `(a..b).into_par_iter().for_each(|i| ..)`,
///   `v.par_iter_mut().enumerate().for_each(|(i, vi)| ..)`, `.par_iter().map(..).sum()`,
///   with `zip`/`enumerate`, get parallel adjoints (runtime: `phidiff::par`, feature
///   `rayon`).
///
/// Anything else is a compile error at the exact span ("phidiff cannot differentiate `X`
/// here: …" with what to write instead), and the original function is still emitted so the
/// rest of the crate keeps compiling. The user guide (`docs/guide.md` in the repository)
/// lists the supported subset in detail and every compile error with its fix.
///
/// Set `PHIDIFF_DUMP_IR=1` while building to print the intermediate representation of
/// the primal, forward and reverse programs, and `PHIDIFF_DUMP_CODE=1` to print the
/// generated functions (one line each; `rustfmt` makes them readable).
#[proc_macro_attribute]
pub fn differentiate(args: TokenStream, item: TokenStream) -> TokenStream {
    // The file the function is in, to tell a missing `g_rev` apart (see `missing_rule`).
    let path = proc_macro::Span::call_site().local_file();
    let text = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
    let source = text.as_deref().map(|text| expand::SourceFile {
        text,
        path: path.as_deref(),
    });
    expand::expand_in(args.into(), item.into(), source).into()
}

/// `#[differentiate(..)]` with `coarsen = off` forced: lets the test suite compile the same
/// sources in both modes and compare them. Not part of the user contract.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn differentiate_coarsen_off(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut args: proc_macro2::TokenStream = args.into();
    if !args.is_empty() {
        args.extend(quote::quote!(,));
    }
    args.extend(quote::quote!(coarsen = off));
    let path = proc_macro::Span::call_site().local_file();
    let text = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
    let source = text.as_deref().map(|text| expand::SourceFile {
        text,
        path: path.as_deref(),
    });
    expand::expand_in(args, item.into(), source).into()
}

/// `#[derive(phidiff::Differentiable)]`: `Differentiable::zero_like` (float fields zero,
/// the others cloned) and the struct's fields for `#[differentiate]` (see
/// `phidiff::Differentiable`). `#[differentiable(skip)]` on a field makes it a constant.
#[proc_macro_derive(Differentiable, attributes(differentiable))]
pub fn derive_differentiable(input: TokenStream) -> TokenStream {
    aggregate::derive::derive(input.into()).into()
}

/// Where a struct's derive resumes once a struct in its fields has given its layout.
#[doc(hidden)]
#[proc_macro]
pub fn layout_chain(input: TokenStream) -> TokenStream {
    aggregate::derive::chain(input.into()).into()
}

/// Where `#[differentiate]` resumes once a struct's derive has given its fields.
#[doc(hidden)]
#[proc_macro]
pub fn differentiate_resume(input: TokenStream) -> TokenStream {
    // The file of the function (its last group), for constants and missing rules.
    let path = input
        .clone()
        .into_iter()
        .last()
        .and_then(|t| match t {
            proc_macro::TokenTree::Group(g) => g.stream().into_iter().next(),
            _ => None,
        })
        .and_then(|t| t.span().local_file());
    let text = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
    let source = text.as_deref().map(|text| expand::SourceFile {
        text,
        path: path.as_deref(),
    });
    aggregate::resume(input.into(), source).into()
}

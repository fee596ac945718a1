//! Desugaring: surface Rust → the core the lowering builds IR from, as rustc lowers surface
//! syntax before it type-checks. The core is a small subset of Rust itself: `let`s, index
//! places (`x[i]`, `m[i][j]`) and views of buffers (`&x[a..b]`, `&m[i]`, `&t[i]`), range
//! loops, `if`/`match`/`while`, calls, and four internal macros marking failures. What
//! this layer writes is syn, so the lowering has one input language; every token it
//! writes carries the span of the user code it comes from (`quote_spanned!`), which is
//! the source map: errors in the lowering, and rustc's own, point at the user's code.
//!
//! - [`fallible`]: a function returning `Option`/`Result` → a function returning its
//!   value, with failure sites (`Some(v)` → `v`, `None`/`Err(e)`/`?` → internal macros);
//!   `if let Some(v) = x.get(i)` and its kin → tests of optional elements. Whole body,
//!   before lowering.
//! - [`growable`]: `Vec::new()` filled by pushes → a buffer sized by counting loops, and a
//!   view of the part written. Whole body, before lowering.
//! - [`pipeline`]: iterator chains (sources, adaptors, consumers) → index loops over
//!   element places; local closures (`let f = |x| ..;`) → their bodies inlined where they
//!   are called or passed to an adaptor. On demand, as the lowering meets each chain: a
//!   chain's shape depends on what its names are (a buffer of two dimensions iterates
//!   rows, a view has an offset), which the lowering's environment knows where the chain
//!   stands. It asks through [`Scope`], and never sees the IR.
//!
//! The passes after lowering (derivative/, codegen/) see only scalars and buffers.

pub mod arrays;
pub mod fallible;
pub mod growable;
pub mod inline;
pub mod pipeline;
pub mod scan;
pub mod tuples;

pub use pipeline::peel_copied;

use crate::parse::signature::Signature;
use fallible::Site;

/// The whole-body passes, in order: fallible code (failure sites), then growable `Vec`s.
/// `item` with its body desugared, and the failure sites of a fallible function.
pub fn body(item: &syn::ItemFn, sig: &Signature) -> syn::Result<(syn::ItemFn, Vec<Site>)> {
    let fallible = sig.fallible.as_ref();
    let mut item = item.clone();
    tuples::desugar(&mut item.block);
    arrays::desugar(&mut item.block);
    let item = &item;
    let (mut block, sites) = fallible::desugar(
        item,
        fallible.is_some(),
        fallible.is_some_and(|f| f.option),
        !sig.returns_float,
    )?;
    growable::desugar(&mut block);
    let item = syn::ItemFn {
        block: Box::new(block),
        ..item.clone()
    };
    Ok((item, sites))
}

/// Whether `op` assigns in place (`+=`, `-=`, .., `<<=`, `>>=`): its left side is written.
pub fn assigns_in_place(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// What a name is where a chain uses it, as the desugaring needs to know it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// A scalar, an element reference, a parameter of a type phidiff does not model, or
    /// `let r;` before its assignment.
    Value,
    /// A buffer (slice, array, `Vec`) of this many dimensions.
    Buffer(usize),
    /// A view of part of a buffer (a row, a sub-slice, a plane), of this many dimensions.
    View(usize),
}

/// The lowering's answers about the names at the point being desugared.
pub trait Scope {
    /// What the variable `name` is; `None` when no variable has that name.
    fn shape(&self, name: &str) -> Option<Shape>;
    /// The local closure `name` (`let f = |x| ..;`) when no variable hides it: `Ok` with
    /// the closure, or `Err(n)` when a name `n` it captured has been rebound since it was
    /// defined (so its body would not mean what it meant there).
    fn closure(&self, name: &str) -> Option<Result<syn::ExprClosure, String>>;
}

/// What an optional value (`x.get(i)`, `..reduce(..)`) gives where it is `None`.
#[derive(Clone, Copy)]
pub enum Missing<'e> {
    /// `unwrap`/`expect`: a panic.
    Panic,
    /// `unwrap_or(v)`: `v`.
    Default(&'e syn::Expr),
    /// `?`: the failure of this site.
    Fail(u32),
}

/// The on-demand desugaring of iterator chains and local closures at one point of the
/// lowering: the names' shapes there, and the counter for fresh names (shared with the
/// lowering's own, so no two generated names meet).
pub struct Desugarer<'a, S: Scope> {
    pub scope: S,
    pub next: &'a mut u32,
}

/// A phidiff error at `tokens` (the unsupported-form message).
fn err<T: quote::ToTokens>(tokens: T, what: &str, why: &str) -> syn::Error {
    syn::Error::new_spanned(tokens, crate::diagnostics::unsupported(what, why))
}

fn text<T: quote::ToTokens>(t: &T) -> String {
    crate::diagnostics::source_text(t)
}

type DResult<T> = Result<T, syn::Error>;

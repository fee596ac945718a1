//! Iterator pipelines desugared into index loops, before anything is lowered (as rustc
//! desugars `for` before type checking): a chain of a source (`a..b`, `x.iter()`,
//! `x.iter_mut()`, `for v in x`, `x.windows(k)`, `x.chunks_exact(w)`, ...), adaptors
//! (`enumerate`, `zip`, `skip`, `take`, `step_by`, `rev`, `map`, `filter`, `copied`,
//! `cloned`, `chain`) and a consumer (a `for` body, `for_each`, `sum`, `product`, `fold`,
//! `reduce`, `min_by`/`max_by` with `partial_cmp`/`total_cmp`, `count`, `any`, `all`,
//! `collect`) becomes Rust the rest of the lowering already knows:
//!
//! ```text
//! x.iter().zip(x.iter().skip(1)).map(|(&a, &b)| (b - a) * (b - a)).sum::<f64>()
//!   ⇒ { let __pd_n0 = min(x.len(), x.len() - min(1, x.len()));
//!       let mut __pd_acc0 = 0.0;
//!       for __pd_t0 in 0..__pd_n0 {
//!           let __pd_m1 = { let a = x[__pd_t0]; let b = x[__pd_t0 + 1]; (b - a) * (b - a) };
//!           __pd_acc0 += __pd_m1;
//!       }
//!       __pd_acc0 }
//! ```
//!
//! Items are element references (`&x[i]`, `&mut x[i]`, a view `&x[i..i + k]`), values, or
//! tuples of them; a closure's parameter patterns are matched against them (`|(i, &v)|`),
//! and its body is inlined in a block of its own. An element is an index into its buffer,
//! so the loops are the index loops a user would have written, and cost what they cost.
//! A `filter` guards what follows it; index adaptors (`skip`, `step_by`, `rev`, `zip`,
//! `take`) are not supported after one (a counter would be needed), and `enumerate`
//! after one counts the elements that passed. Rayon chains stay with `iter.rs`.

use super::{err, text, DResult as LResult, Desugarer, Missing, Scope, Shape};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Expr;

/// What one stage of a pipeline gives for each index.
#[derive(Clone)]
enum Item {
    /// A value (an index, a closure's result, a copied element).
    Value(TokenStream),
    /// `&place` or `&mut place`: an element (`x[i]`) or a view (`x[i..i + k]`).
    Ref {
        place: TokenStream,
        mutable: bool,
    },
    Tuple(Vec<Item>),
}

impl Item {
    /// The item as a value expression (an element is read).
    fn value(&self) -> Option<TokenStream> {
        match self {
            Item::Value(v) => Some(v.clone()),
            Item::Ref { place, .. } => Some(quote!(#place)),
            Item::Tuple(_) => None,
        }
    }
}

/// A stage of a pipeline.
enum Stage {
    /// `a..b`: `start + i`, `len` items.
    Range {
        start: Ident,
    },
    /// The elements of a buffer or view (`x.iter()`, `for v in &x`).
    Elems {
        base: TokenStream,
        mutable: bool,
    },
    /// `x.windows(k)`: views `x[i..i + k]`.
    Windows {
        base: TokenStream,
        k: Ident,
    },
    /// `x.chunks(w)` / `x.chunks_exact(w)`: views of `w` elements (the last one shorter for
    /// `chunks`).
    Chunks {
        base: TokenStream,
        w: Ident,
        full: Ident,
        mutable: bool,
    },
    Zip(Vec<Stage>),
    Enumerate(Box<Stage>, Option<Ident>),
    /// `skip(k)`: `k` a literal where it is one, so that the index stays a constant shift
    /// of the loop's (whose adjoint adds can then be carried in a register).
    Skip(Box<Stage>, TokenStream),
    Take(Box<Stage>),
    StepBy(Box<Stage>, Ident),
    Rev(Box<Stage>, Ident),
    Map(Box<Stage>, syn::ExprClosure),
    Filter(Box<Stage>, syn::ExprClosure),
    Copied(Box<Stage>),
    /// `.flatten()` of rows or views: the elements of each, in an inner loop (the `Ident`
    /// is the method's, for errors).
    Flatten(Box<Stage>, Ident),
}

impl Stage {
    fn has_filter(&self) -> bool {
        match self {
            Stage::Range { .. }
            | Stage::Elems { .. }
            | Stage::Windows { .. }
            | Stage::Chunks { .. } => false,
            // A flattened count is known only by walking it.
            Stage::Filter(..) | Stage::Flatten(..) => true,
            Stage::Zip(parts) => parts.iter().any(Stage::has_filter),
            Stage::Enumerate(s, _)
            | Stage::Skip(s, _)
            | Stage::Take(s)
            | Stage::StepBy(s, _)
            | Stage::Rev(s, _)
            | Stage::Map(s, _)
            | Stage::Copied(s) => s.has_filter(),
        }
    }
}

/// A parsed pipeline: the statements before its loop, its stages, and the name of its
/// item count (an upper bound when it filters).
struct Pipeline {
    pre: Vec<TokenStream>,
    stage: Stage,
    len: Ident,
    /// `a.chain(b)`: the pipelines run one after the other.
    then: Option<Box<Pipeline>>,
}

/// Why a chain is not a pipeline this module desugars; `None` lets `iter.rs` try it.
enum NotAPipeline {
    /// Not a chain (a plain expression): leave it.
    Other,
    /// A chain with a form that is known to be wrong here, with the reason.
    Error(syn::Error),
}

/// The methods this module adds to the ones `iter.rs` lowers directly: a chain using one of
/// them (or a consumer other than a `for` loop and `sum`) is desugared here.
const NEW_FORMS: &[&str] = &[
    "skip",
    "take",
    "windows",
    "chunks_exact",
    "chunks_exact_mut",
    "chain",
    "filter",
    "copied",
    "cloned",
    "fold",
    "product",
    "count",
    "reduce",
    "max_by",
    "min_by",
    "any",
    "all",
    "collect",
    "into_iter",
    "flatten",
];

impl<S: Scope> Desugarer<'_, S> {
    fn fresh(&mut self, what: &str) -> Ident {
        *self.next += 1;
        format_ident!("__pd_{}{}", what, *self.next)
    }

    fn error<T: ToTokens>(&self, tokens: T, what: &str, why: &str) -> syn::Error {
        err(tokens, what, why)
    }

    /// The method names along a chain `a.b().c()` and in the chains it takes as arguments
    /// (`a.zip(b.skip(1))`), not inside closures.
    fn chain_methods(e: &Expr) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = e;
        loop {
            match at {
                Expr::MethodCall(m) => {
                    out.push(m.method.to_string());
                    for a in &m.args {
                        if matches!(strip(a), Expr::MethodCall(_)) {
                            out.extend(Self::chain_methods(a));
                        }
                    }
                    at = &m.receiver;
                }
                Expr::Paren(p) => at = &p.expr,
                Expr::Reference(r) => at = &r.expr,
                _ => break,
            }
        }
        out.reverse();
        out
    }

    /// Whether a chain needs this module: a form `iter.rs` does not lower, or one it
    /// lowers only in another order (its `enumerate` numbers the underlying positions, so
    /// `.rev().enumerate()` and `.step_by(k).enumerate()` are this module's).
    fn needs_desugar(methods: &[String]) -> bool {
        let at = |m: &str| methods.iter().position(|x| x == m);
        let (enumerate, rev, step) = (at("enumerate"), at("rev"), at("step_by"));
        methods.iter().any(|m| NEW_FORMS.contains(&m.as_str()))
            || methods.iter().filter(|m| *m == "map").count() > 1
            || (enumerate.is_some() && (rev.is_some() || step.is_some()))
            || matches!((step, rev), (Some(s), Some(r)) if s < r)
    }

    /// Whether a chain starts from a view (`row.iter()`, a window, `&x[a..b]`), which only
    /// this module walks.
    fn walks_a_view(&self, e: &Expr) -> bool {
        match strip(e) {
            Expr::MethodCall(m) => {
                self.walks_a_view(&m.receiver) || m.args.iter().any(|a| self.walks_a_view(a))
            }
            Expr::Reference(r) => self.walks_a_view(&r.expr),
            Expr::Index(ix) => {
                matches!(&*ix.index, Expr::Range(_)) || self.is_row(ix) || self.is_deep_row(ix)
            }
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| matches!(self.scope.shape(&i.to_string()), Some(Shape::View(_)))),
            _ => false,
        }
    }

    /// Whether a chain is rayon's (left to `iter.rs`).
    fn is_parallel(methods: &[String]) -> bool {
        methods
            .iter()
            .any(|m| m.starts_with("par_") || m == "into_par_iter")
    }

    /// Parses `e` as a pipeline, hoisting what is evaluated once into `pre`.
    fn pipeline(&mut self, e: &Expr) -> Result<Pipeline, NotAPipeline> {
        let span = e.span();
        let err =
            |what: &dyn ToTokens, why: &str| NotAPipeline::Error(err(what, &text_of(what), why));
        match e {
            Expr::Paren(p) => self.pipeline(&p.expr),
            Expr::Group(g) => self.pipeline(&g.expr),
            Expr::Range(r) => {
                let (Some(a), Some(b)) = (&r.start, &r.end) else {
                    return Err(err(r, "a range needs both bounds here"));
                };
                let (start, end, len) = (self.fresh("s"), self.fresh("e"), self.fresh("n"));
                let closed = matches!(r.limits, syn::RangeLimits::Closed(_));
                let end_expr = if closed { quote!((#b) + 1) } else { quote!(#b) };
                let pre = vec![
                    quote_spanned!(span=> let #start: usize = #a;),
                    quote_spanned!(span=> let #end: usize = #end_expr;),
                    quote_spanned!(span=> let #len = if #end > #start { #end - #start } else { 0 };),
                ];
                Ok(Pipeline {
                    pre,
                    stage: Stage::Range { start },
                    len,
                    then: None,
                })
            }
            Expr::MethodCall(m) => {
                let method = m.method.to_string();
                let recv = &*m.receiver;
                match (method.as_str(), m.args.len()) {
                    ("iter" | "iter_mut" | "into_iter", 0) => {
                        if method == "into_iter" {
                            if let Ok(p) = self.pipeline(recv) {
                                return Ok(p);
                            }
                        }
                        self.elements(recv, method == "iter_mut", span)
                    }
                    ("windows", 1)
                    | ("chunks" | "chunks_mut" | "chunks_exact" | "chunks_exact_mut", 1) => {
                        let mutable = method.ends_with("_mut");
                        let (mut pre, base) = self
                            .base_of(recv, mutable)
                            .ok_or_else(|| err(recv, "windows and chunks of a buffer by name"))?;
                        let arg = &m.args[0];
                        let (k, n, len) = (self.fresh("k"), self.fresh("full"), self.fresh("n"));
                        pre.extend([
                            quote_spanned!(span=> let #k: usize = #arg;),
                            quote_spanned!(span=> let #n = #base.len();),
                        ]);
                        let stage = match method.as_str() {
                            "windows" => {
                                pre.push(quote_spanned!(span=> let #len = if #n >= #k { #n - #k + 1 } else { 0 };));
                                Stage::Windows { base, k }
                            }
                            "chunks" | "chunks_mut" => {
                                pre.push(quote_spanned!(span=> let #len = (#n + #k - 1) / #k;));
                                Stage::Chunks {
                                    base,
                                    w: k,
                                    full: n,
                                    mutable: method.ends_with("_mut"),
                                }
                            }
                            _ => {
                                pre.push(quote_spanned!(span=> let #len = #n / #k;));
                                Stage::Chunks {
                                    base,
                                    w: k,
                                    full: n,
                                    mutable: method.ends_with("_mut"),
                                }
                            }
                        };
                        Ok(Pipeline {
                            pre,
                            stage,
                            len,
                            then: None,
                        })
                    }
                    ("enumerate", 0) => {
                        let mut p = self.pipeline(recv)?;
                        // After a filter, the position among the elements that passed.
                        let counter = p.stage.has_filter().then(|| self.fresh("k"));
                        if let Some(c) = &counter {
                            p.pre.push(quote_spanned!(span=> let mut #c: usize = 0;));
                        }
                        p.stage = Stage::Enumerate(Box::new(p.stage), counter);
                        Ok(p)
                    }
                    ("copied" | "cloned", 0) => {
                        let mut p = self.pipeline(recv)?;
                        p.stage = Stage::Copied(Box::new(p.stage));
                        Ok(p)
                    }
                    ("flatten", 0) => {
                        let mut p = self.pipeline(recv)?;
                        let mut at = Some(&mut p);
                        while let Some(q) = at {
                            let s = std::mem::replace(
                                &mut q.stage,
                                Stage::Range {
                                    start: format_ident!("_"),
                                },
                            );
                            q.stage = Stage::Flatten(Box::new(s), m.method.clone());
                            at = q.then.as_deref_mut();
                        }
                        Ok(p)
                    }
                    ("skip" | "take" | "step_by" | "rev", _) => {
                        let mut p = self.pipeline(recv)?;
                        if p.stage.has_filter() || p.then.is_some() {
                            return Err(err(m, &format!("`.{method}(..)` after a `.filter(..)`, a `.flatten()` or a `.chain(..)` is not supported; put it before")));
                        }
                        let len = p.len.clone();
                        let new_len = self.fresh("n");
                        match method.as_str() {
                            "skip" if m.args.len() == 1 => {
                                let arg = &m.args[0];
                                let k = match int_literal(arg) {
                                    Some(lit) => {
                                        p.pre.push(quote_spanned!(span=> let #new_len = if #len > #lit { #len - #lit } else { 0 };));
                                        quote!(#lit)
                                    }
                                    None => {
                                        let k = self.fresh("k");
                                        p.pre.push(quote_spanned!(span=> let #k: usize = if (#arg) < #len { #arg } else { #len };));
                                        p.pre
                                            .push(quote_spanned!(span=> let #new_len = #len - #k;));
                                        quote!(#k)
                                    }
                                };
                                p.stage = Stage::Skip(Box::new(p.stage), k);
                            }
                            "take" if m.args.len() == 1 => {
                                let arg = &m.args[0];
                                p.pre.push(quote_spanned!(span=> let #new_len = if (#arg) < #len { #arg } else { #len };));
                                p.stage = Stage::Take(Box::new(p.stage));
                            }
                            "step_by" if m.args.len() == 1 => {
                                let arg = &m.args[0];
                                let s = self.fresh("step");
                                p.pre.push(quote_spanned!(span=> let #s: usize = #arg;));
                                p.pre.push(
                                    quote_spanned!(span=> let #new_len = (#len + #s - 1) / #s;),
                                );
                                p.stage = Stage::StepBy(Box::new(p.stage), s);
                            }
                            "rev" if m.args.is_empty() => {
                                p.pre.push(quote_spanned!(span=> let #new_len = #len;));
                                p.stage = Stage::Rev(Box::new(p.stage), len);
                            }
                            _ => return Err(err(m, &format!("`.{method}` takes one argument"))),
                        }
                        p.len = new_len;
                        Ok(p)
                    }
                    ("zip", 1) => {
                        let mut a = self.pipeline(recv)?;
                        let b = match self.pipeline(&m.args[0]) {
                            Ok(b) => b,
                            // `a.zip(&y)`, `a.zip(y)`: the elements of a buffer.
                            Err(NotAPipeline::Other) => self.elements(&m.args[0], false, span)?,
                            Err(e) => return Err(e),
                        };
                        if a.stage.has_filter()
                            || b.stage.has_filter()
                            || a.then.is_some()
                            || b.then.is_some()
                        {
                            return Err(err(
                                m,
                                "`.zip(..)` of a filtered, flattened or chained iterator is not supported",
                            ));
                        }
                        let len = self.fresh("n");
                        let (la, lb) = (&a.len, &b.len);
                        a.pre.extend(b.pre);
                        a.pre.push(
                            quote_spanned!(span=> let #len = if #la < #lb { #la } else { #lb };),
                        );
                        let parts = match a.stage {
                            Stage::Zip(mut parts) if matches!(recv, Expr::MethodCall(r) if r.method == "zip") =>
                            {
                                parts.push(b.stage);
                                parts
                            }
                            other => vec![other, b.stage],
                        };
                        a.stage = Stage::Zip(parts);
                        a.len = len;
                        Ok(a)
                    }
                    ("chain", 1) => {
                        let mut a = self.pipeline(recv)?;
                        let b = match self.pipeline(&m.args[0]) {
                            Ok(b) => b,
                            Err(NotAPipeline::Other) => self.elements(&m.args[0], false, span)?,
                            Err(e) => return Err(e),
                        };
                        let mut last = &mut a;
                        while last.then.is_some() {
                            last = last.then.as_mut().expect("checked");
                        }
                        last.then = Some(Box::new(b));
                        Ok(a)
                    }
                    ("map" | "filter", 1) => {
                        let mut p = self.pipeline(recv)?;
                        let c = self
                            .closure_arg(&m.args[0], 1)
                            .map_err(NotAPipeline::Error)?;
                        let stage_of = |p: &mut Pipeline| {
                            let s = std::mem::replace(
                                &mut p.stage,
                                Stage::Range {
                                    start: format_ident!("_"),
                                },
                            );
                            p.stage = match method.as_str() {
                                "map" => Stage::Map(Box::new(s), c.clone()),
                                _ => Stage::Filter(Box::new(s), c.clone()),
                            };
                        };
                        let mut at = Some(&mut p);
                        while let Some(q) = at {
                            stage_of(q);
                            at = q.then.as_deref_mut();
                        }
                        Ok(p)
                    }
                    _ => Err(NotAPipeline::Other),
                }
            }
            _ => Err(NotAPipeline::Other),
        }
    }

    /// The elements of the buffer or view `e` names (`x`, `&x`, `&mut x`, `x[a..b]`).
    fn elements(&mut self, e: &Expr, mutable: bool, span: Span) -> Result<Pipeline, NotAPipeline> {
        let mutable = mutable || matches!(e, Expr::Reference(r) if r.mutability.is_some());
        let (mut pre, base) = self.base_of(e, mutable).ok_or(NotAPipeline::Other)?;
        let len = self.fresh("n");
        pre.push(quote_spanned!(span=> let #len = #base.len();));
        Ok(Pipeline {
            pre,
            stage: Stage::Elems { base, mutable },
            len,
            then: None,
        })
    }

    /// A buffer or view by name, as an expression to index (`x`, a view `v`), or a
    /// sub-slice of one (`x[a..b]`, `&mut x[a..]`) bound to a fresh view first: the
    /// statements to run before the loop, and the name to index.
    fn base_of(&mut self, e: &Expr, mutable: bool) -> Option<(Vec<TokenStream>, TokenStream)> {
        match e {
            Expr::Paren(p) => self.base_of(&p.expr, mutable),
            Expr::Group(g) => self.base_of(&g.expr, mutable),
            Expr::Reference(r) => self.base_of(&r.expr, mutable || r.mutability.is_some()),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.base_of(&u.expr, mutable),
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                match self.scope.shape(&p.path.segments[0].ident.to_string()) {
                    Some(Shape::Buffer(_) | Shape::View(_)) => Some((vec![], quote!(#p))),
                    _ => None,
                }
            }
            Expr::MethodCall(m) if m.method == "as_slice" || m.method == "as_mut_slice" => {
                self.base_of(&m.receiver, mutable || m.method == "as_mut_slice")
            }
            Expr::Index(ix) if matches!(strip(&ix.index), Expr::Range(_)) => {
                let (mut pre, inner) = self.base_of(&ix.expr, mutable)?;
                let range = &ix.index;
                let view = self.fresh("view");
                let span = e.span();
                pre.push(if mutable {
                    quote_spanned!(span=> let #view = &mut #inner[#range];)
                } else {
                    quote_spanned!(span=> let #view = &#inner[#range];)
                });
                Some((pre, quote!(#view)))
            }
            // A row of a 2-D buffer (`m[i]`): its elements are `m[row][k]`, its length
            // `m[row].len()`.
            // A row of a 3-D buffer (`t[i][j]`): bound to a view first.
            Expr::Index(ix) if self.is_deep_row(ix) => {
                let view = self.fresh("row");
                let span = e.span();
                Some((
                    vec![if mutable {
                        quote_spanned!(span=> let #view = &mut #e;)
                    } else {
                        quote_spanned!(span=> let #view = &#e;)
                    }],
                    quote!(#view),
                ))
            }
            Expr::Index(ix) if self.is_row(ix) => {
                let m = &ix.expr;
                let index = &ix.index;
                let row = self.fresh("row");
                let span = e.span();
                Some((
                    vec![quote_spanned!(span=> let #row: usize = #index;)],
                    quote!(#m[#row]),
                ))
            }
            _ => None,
        }
    }

    /// Whether `ix` is a row `t[i][j]` of a 3-D buffer `t` named by a variable, or a row
    /// `plane[j]` of a view of it.
    fn is_deep_row(&self, ix: &syn::ExprIndex) -> bool {
        let mut at = strip(&ix.expr);
        let mut n = 1;
        while let Expr::Index(inner) = at {
            if matches!(strip(&inner.index), Expr::Range(_)) {
                return false;
            }
            n += 1;
            at = strip(&inner.expr);
        }
        !matches!(strip(&ix.index), Expr::Range(_))
            && match at {
                Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                    match self.scope.shape(&i.to_string()) {
                        Some(Shape::Buffer(rank)) => n >= 2 && rank == n + 1,
                        // A row of a view of two or more dimensions (`plane[j]`, `rows[k]`).
                        Some(Shape::View(rank)) => rank == n + 1,
                        _ => false,
                    }
                }),
                _ => false,
            }
    }

    /// Whether `ix` is a row `m[i]` of a 2-D buffer `m` named by a variable.
    fn is_row(&self, ix: &syn::ExprIndex) -> bool {
        match strip(&ix.expr) {
            Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                matches!(self.scope.shape(&i.to_string()), Some(Shape::Buffer(2)))
            }),
            _ => false,
        }
    }

    /// A closure argument of `arity` parameters, or `f64::max`-like paths as the closure
    /// `|a, b| a.max(b)`.
    fn closure_arg(&self, e: &Expr, arity: usize) -> LResult<syn::ExprClosure> {
        match e {
            Expr::Closure(c) if c.inputs.len() == arity => {
                let scan = super::scan::scan_expr(&c.body);
                let outer = scan.assigned.iter().any(|n| !scan.declared.contains(n));
                if outer || scan.ret || scan.brk || scan.cont {
                    return Err(self.error(
                        &c.body,
                        "closure",
                        "an iterator closure computes a value: assignments to outside variables and jumps inside it are not supported (write a `for` loop)",
                    ));
                }
                Ok(c.clone())
            }
            Expr::Path(p) if arity == 2 => {
                let m = p.path.segments.last().map(|s| s.ident.clone());
                match m {
                    Some(m) if m == "max" || m == "min" || m == "add" || m == "mul" => {
                        let body: Expr = match m.to_string().as_str() {
                            "add" => syn::parse_quote!(a + b),
                            "mul" => syn::parse_quote!(a * b),
                            _ => syn::parse_quote!(a.#m(b)),
                        };
                        Ok(syn::parse_quote!(|a, b| #body))
                    }
                    _ => Err(self.error(e, &text(e), "a function passed to an iterator adaptor is one of `f64::max`, `f64::min` (or `T::max`, `T::min`); otherwise write a closure")),
                }
            }
            Expr::Path(p) => {
                // A local closure by name.
                let name = p.path.get_ident().map(|i| i.to_string());
                match name.and_then(|n| self.scope.closure(&n)) {
                    Some(Ok(c)) if c.inputs.len() == arity => Ok(c),
                    Some(Err(rebound)) => Err(rebound_error(e, &rebound)),
                    _ => Err(self.error(
                        e,
                        &text(e),
                        &format!("this adaptor takes a closure of {arity} parameter(s)"),
                    )),
                }
            }
            other => Err(self.error(
                other,
                &text(other),
                &format!("this adaptor takes a closure of {arity} parameter(s)"),
            )),
        }
    }

    /// The statements of one iteration at index `idx`: what computes the item, guards for
    /// filters, then `consume(item)`.
    fn emit(
        &mut self,
        stage: &Stage,
        idx: TokenStream,
        consume: &mut dyn FnMut(&mut Self, Item) -> LResult<TokenStream>,
    ) -> LResult<TokenStream> {
        match stage {
            Stage::Range { start } => consume(self, Item::Value(quote!((#start + #idx)))),
            Stage::Elems { base, mutable } => consume(
                self,
                Item::Ref {
                    place: quote!(#base[#idx]),
                    mutable: *mutable,
                },
            ),
            Stage::Windows { base, k } => consume(
                self,
                Item::Ref {
                    place: quote!(#base[#idx..#idx + #k]),
                    mutable: false,
                },
            ),
            Stage::Chunks {
                base,
                w,
                full,
                mutable,
            } => {
                let end = quote!(if (#idx + 1) * #w < #full { (#idx + 1) * #w } else { #full });
                consume(
                    self,
                    Item::Ref {
                        place: quote!(#base[#idx * #w..#end]),
                        mutable: *mutable,
                    },
                )
            }
            Stage::Zip(parts) => self.emit_zip(parts, idx, Vec::new(), consume),
            Stage::Enumerate(s, counter) => match counter {
                None => {
                    let i = idx.clone();
                    self.emit(s, idx, &mut |l, item| {
                        consume(l, Item::Tuple(vec![Item::Value(i.clone()), item]))
                    })
                }
                Some(c) => {
                    let c = c.clone();
                    self.emit(s, idx, &mut |l, item| {
                        let at = l.fresh("i");
                        let rest = consume(l, Item::Tuple(vec![Item::Value(quote!(#at)), item]))?;
                        Ok(quote!(let #at = #c; #c += 1; #rest))
                    })
                }
            },
            Stage::Skip(s, k) => self.emit(s, quote!((#idx + #k)), consume),
            Stage::Take(s) => self.emit(s, idx, consume),
            Stage::StepBy(s, step) => self.emit(s, quote!((#idx * #step)), consume),
            Stage::Rev(s, len) => self.emit(s, quote!((#len - 1 - #idx)), consume),
            Stage::Flatten(s, method) => self.emit(s, idx, &mut |l, item| {
                // Each item is a row or view: its elements, by an inner index loop.
                let Item::Ref { place, mutable } = item else {
                    return Err(l.error(
                        method,
                        "flatten",
                        "`.flatten()` walks rows of buffers or views (`m.iter().flatten()`, `t.iter().flatten().flatten()`), not values",
                    ));
                };
                let (row, k) = (l.fresh("row"), l.fresh("k"));
                let bind = match mutable {
                    true => quote!(let #row = &mut #place;),
                    false => quote!(let #row = &#place;),
                };
                let inner = consume(
                    l,
                    Item::Ref {
                        place: quote!(#row[#k]),
                        mutable,
                    },
                )?;
                Ok(quote!(#bind for #k in 0..#row.len() { #inner }))
            }),
            Stage::Copied(s) => self.emit(s, idx, &mut |l, item| {
                let v = match item {
                    Item::Ref { place, .. } => Item::Value(quote!(#place)),
                    other => other,
                };
                consume(l, v)
            }),
            Stage::Map(s, c) => {
                let c = c.clone();
                self.emit(s, idx, &mut |l, item| {
                    let v = l.fresh("m");
                    let binds = l.bind_closure(&c.inputs[0], &item)?;
                    let body = &c.body;
                    let rest = consume(l, Item::Value(quote!(#v)))?;
                    Ok(quote!(let #v = { #binds #body }; #rest))
                })
            }
            Stage::Filter(s, c) => {
                let c = c.clone();
                self.emit(s, idx, &mut |l, item| {
                    // The predicate sees `&item`: a pattern `|x|` binds the reference,
                    // `|&x|` (or `|&&x|` over references) the value.
                    let binds = l.bind_filtered(&c.inputs[0], &item)?;
                    let body = &c.body;
                    let rest = consume(l, item)?;
                    Ok(quote!(if { #binds #body } { #rest }))
                })
            }
        }
    }

    fn emit_zip(
        &mut self,
        parts: &[Stage],
        idx: TokenStream,
        mut got: Vec<Item>,
        consume: &mut dyn FnMut(&mut Self, Item) -> LResult<TokenStream>,
    ) -> LResult<TokenStream> {
        let Some((first, rest)) = parts.split_first() else {
            // `a.zip(b).zip(c)` gives ((a, b), c): nested pairs, left to right.
            let mut it = got.into_iter();
            let mut item = it.next().expect("a zip has parts");
            for next in it {
                item = Item::Tuple(vec![item, next]);
            }
            return consume(self, item);
        };
        let i = idx.clone();
        self.emit(first, idx, &mut |l, item| {
            got.push(item);
            let r = l.emit_zip(rest, i.clone(), got.clone(), consume);
            got.pop();
            r
        })
    }

    /// `let`s binding a closure parameter (or a `for` pattern) to an item.
    fn bind_closure(&self, pat: &syn::Pat, item: &Item) -> LResult<TokenStream> {
        match (pat, item) {
            (syn::Pat::Type(pt), _) => self.bind_closure(&pt.pat, item),
            (syn::Pat::Paren(pp), _) => self.bind_closure(&pp.pat, item),
            (syn::Pat::Wild(_), _) => Ok(quote!()),
            (syn::Pat::Tuple(t), Item::Tuple(items)) if t.elems.len() == items.len() => {
                let mut out = quote!();
                for (p, it) in t.elems.iter().zip(items) {
                    out.extend(self.bind_closure(p, it)?);
                }
                Ok(out)
            }
            (syn::Pat::Reference(r), Item::Ref { place, .. }) => {
                let inner = &r.pat;
                Ok(quote!(let #inner = #place;))
            }
            (syn::Pat::Reference(r), Item::Value(v)) => {
                // `|&x|` on a value item (`.copied()` then `|&x|` is a type error in Rust;
                // over `filter`'s `&&x` the outer `&` is the filter's).
                let inner = &r.pat;
                Ok(quote!(let #inner = #v;))
            }
            (syn::Pat::Ident(pi), Item::Ref { place, mutable }) if pi.subpat.is_none() => {
                let name = &pi.ident;
                Ok(match mutable {
                    true => quote!(let #name = &mut #place;),
                    false => quote!(let #name = &#place;),
                })
            }
            (syn::Pat::Ident(pi), Item::Value(v)) if pi.subpat.is_none() => {
                let name = &pi.ident;
                let m = &pi.mutability;
                Ok(quote!(let #m #name = #v;))
            }
            (p, Item::Tuple(_)) => Err(self.error(
                p,
                &text(p),
                "the items here are tuples: match them with a tuple pattern (`|(i, x)|`, `|(&a, &b)|`)",
            )),
            (p, _) => Err(self.error(p, &text(p), "a closure parameter is a name, `&name`, `_` or a tuple of them")),
        }
    }

    /// `filter`'s predicate takes `&item`: `|&&x|`/`|&x|`/`|x|` over an element, `|&x|`
    /// over a value, `|&(i, x)|` over a tuple.
    fn bind_filtered(&self, pat: &syn::Pat, item: &Item) -> LResult<TokenStream> {
        match pat {
            syn::Pat::Reference(r) => self.bind_closure(&r.pat, item),
            syn::Pat::Type(pt) => self.bind_filtered(&pt.pat, item),
            syn::Pat::Ident(pi) if pi.subpat.is_none() => match item {
                // `|x| **x > 0.0` over elements, `|v| *v > 0.0` over values: the element
                // (reading through any number of `*`), or the value.
                Item::Ref { place, .. } => {
                    let name = &pi.ident;
                    Ok(quote!(let #name = &#place;))
                }
                Item::Value(v) => {
                    let name = &pi.ident;
                    Ok(quote!(let #name = #v;))
                }
                Item::Tuple(_) => Err(self.error(
                    pat,
                    &text(pat),
                    "the items here are tuples: match them with `|&(i, x)|`",
                )),
            },
            other => self.bind_closure(other, item),
        }
    }

    /// The loop over `p` (and the pipelines chained after it) with `consume` run on each
    /// item.
    fn emit_loops(
        &mut self,
        p: &Pipeline,
        span: Span,
        consume: &mut dyn FnMut(&mut Self, Item) -> LResult<TokenStream>,
    ) -> LResult<TokenStream> {
        let pre = &p.pre;
        let mut out = quote_spanned!(span=> #(#pre)*);
        out.extend(self.emit_loops_after_pre(p, span, consume)?);
        Ok(out)
    }

    /// [`Self::emit_loops`] without the first pipeline's `pre` (emitted already).
    fn emit_loops_after_pre(
        &mut self,
        p: &Pipeline,
        span: Span,
        consume: &mut dyn FnMut(&mut Self, Item) -> LResult<TokenStream>,
    ) -> LResult<TokenStream> {
        let t = self.fresh("t");
        let body = self.emit(&p.stage, quote!(#t), consume)?;
        let len = &p.len;
        let mut out = quote_spanned!(span=> for #t in 0..#len { #body });
        if let Some(next) = &p.then {
            out.extend(self.emit_loops(next, span, consume)?);
        }
        Ok(out)
    }

    /// `for pat in chain { body }` when the chain uses a form `iter.rs` does not lower
    /// directly; `None` leaves the loop to it.
    pub fn desugar_for(&mut self, f: &syn::ExprForLoop) -> LResult<Option<Expr>> {
        let methods = Self::chain_methods(&f.expr);
        if Self::is_parallel(&methods) {
            return Ok(None);
        }
        let bare = methods.is_empty() && !matches!(strip(&f.expr), Expr::Range(_));
        if !bare
            && !Self::needs_desugar(&methods)
            && !methods.iter().any(|m| m == "map")
            && !self.walks_a_view(&f.expr)
        {
            return Ok(None);
        }
        let p = match self.pipeline(&f.expr) {
            Ok(p) => p,
            Err(NotAPipeline::Other) if bare => {
                match self.elements(&f.expr, false, f.expr.span()) {
                    Ok(p) => p,
                    Err(_) => return Ok(None),
                }
            }
            Err(NotAPipeline::Other) => return Ok(None),
            Err(NotAPipeline::Error(e)) => return Err(e),
        };
        if p.then.is_some() {
            let scan = super::scan::scan_stmts(&f.body.stmts);
            if scan.brk || scan.cont || scan.ret {
                return Err(self.error(&f.expr, &text(&f.expr), "`break`, `continue` and `return` in a loop over `.chain(..)` are not supported"));
            }
        }
        if let Some(attr) = f.attrs.first() {
            return Err(self.error(attr, &text(attr), "attributes on a loop over an iterator chain (`#[checkpoint]`) need a range loop (`for i in a..b`)"));
        }
        let pat = &*f.pat;
        let stmts = &f.body.stmts;
        let span = f.expr.span();
        let code = self.emit_loops(&p, span, &mut |l, item| {
            let binds = l.bind_closure(pat, &item)?;
            Ok(quote!(#binds #(#stmts)*))
        })?;
        syn::parse2(quote!({ #code })).map(Some)
    }

    /// A consumer at the end of a chain (`sum`, `fold`, `max_by(..).unwrap()`, ...) when the
    /// chain or the consumer is one `iter.rs` does not lower; `None` leaves it.
    pub fn desugar_consumer(&mut self, m: &syn::ExprMethodCall) -> LResult<Option<Expr>> {
        // `.unwrap()`/`.expect(..)`/`.unwrap_or(v)`/`.copied()` around an `Option` consumer.
        let (m, missing): (&syn::ExprMethodCall, Option<Missing>) =
            match m.method.to_string().as_str() {
                "unwrap" | "expect" => match strip(&m.receiver) {
                    Expr::MethodCall(inner) => (peel_copied(inner), Some(Missing::Panic)),
                    _ => return Ok(None),
                },
                "unwrap_or" if m.args.len() == 1 => match strip(&m.receiver) {
                    Expr::MethodCall(inner) => {
                        (peel_copied(inner), Some(Missing::Default(&m.args[0])))
                    }
                    _ => return Ok(None),
                },
                _ => (m, None),
            };
        self.desugar_consumer_with(m, missing)
    }

    /// [`Self::desugar_consumer`] of the consumer `m`, which gives an `Option` where
    /// `missing` says what its `None` gives.
    pub fn desugar_consumer_with(
        &mut self,
        m: &syn::ExprMethodCall,
        missing: Option<Missing>,
    ) -> LResult<Option<Expr>> {
        let whole = Expr::MethodCall(m.clone());
        let unwrap = missing.is_some();
        let method = m.method.to_string();
        let methods = Self::chain_methods(&m.receiver);
        if Self::is_parallel(&methods) || methods.is_empty() {
            return Ok(None);
        }
        let optional = matches!(
            method.as_str(),
            "reduce" | "max_by" | "min_by" | "max_by_key" | "min_by_key"
        );
        if optional != unwrap {
            if optional {
                return Err(self.error(m, &text(m), &format!("`.{method}(..)` gives an `Option`: write `.{method}(..).unwrap()` (or `.unwrap_or(v)`)")));
            }
            return Ok(None);
        }
        let consumer_is_new = !matches!(method.as_str(), "sum" | "for_each");
        let chain_is_new = Self::needs_desugar(&methods)
            || (method == "for_each" && methods.iter().any(|x| x == "map"))
            || self.walks_a_view(&m.receiver);
        if !consumer_is_new && !chain_is_new {
            return Ok(None);
        }
        let p = match self.pipeline(&m.receiver) {
            Ok(p) => p,
            Err(NotAPipeline::Other) => return Ok(None),
            Err(NotAPipeline::Error(e)) => return Err(e),
        };
        let span = whole.span();
        let acc = self.fresh("acc");
        let code = match method.as_str() {
            "sum" | "product" => {
                let int = turbofish_is_int(m);
                let (init, op) = match (method.as_str(), int) {
                    ("sum", false) => (quote!(0.0), quote!(+=)),
                    ("sum", true) => (quote!(0), quote!(+=)),
                    (_, false) => (quote!(1.0), quote!(*=)),
                    (_, true) => (quote!(1), quote!(*=)),
                };
                let acc2 = acc.clone();
                let loops = self.emit_loops(&p, span, &mut |l, item| {
                    let v = item.value().ok_or_else(|| {
                        l.error(m, &text(m), "summing tuples: map them to numbers first")
                    })?;
                    Ok(quote!(#acc2 #op #v;))
                })?;
                quote_spanned!(span=> { let mut #acc = #init; #loops #acc })
            }
            "count" => {
                let acc2 = acc.clone();
                let loops = self.emit_loops(&p, span, &mut |_, _| Ok(quote!(#acc2 += 1;)))?;
                quote_spanned!(span=> { let mut #acc: usize = 0; #loops #acc })
            }
            "fold" if m.args.len() == 2 => {
                let init = &m.args[0];
                let c = self.closure_arg(&m.args[1], 2)?;
                let acc2 = acc.clone();
                let loops = self.emit_loops(&p, span, &mut |l, item| {
                    let a = l.bind_closure(&c.inputs[0], &Item::Value(quote!(#acc2)))?;
                    let x = l.bind_closure(&c.inputs[1], &item)?;
                    let body = &c.body;
                    Ok(quote!(#acc2 = { #a #x #body };))
                })?;
                quote_spanned!(span=> { let mut #acc = #init; #loops #acc })
            }
            "any" | "all" if m.args.len() == 1 => {
                let c = self.closure_arg(&m.args[0], 1)?;
                let any = method == "any";
                let acc2 = acc.clone();
                let loops = self.emit_loops(&p, span, &mut |l, item| {
                    let x = l.bind_closure(&c.inputs[0], &item)?;
                    let body = &c.body;
                    Ok(match any {
                        true => quote!(#acc2 = #acc2 || { #x #body };),
                        false => quote!(#acc2 = #acc2 && { #x #body };),
                    })
                })?;
                let init = !any;
                quote_spanned!(span=> { let mut #acc = #init; #loops #acc })
            }
            "for_each" if m.args.len() == 1 => {
                let c = self.closure_arg_for_each(&m.args[0])?;
                let body = &c.body;
                let loops = self.emit_loops(&p, span, &mut |l, item| {
                    let x = l.bind_closure(&c.inputs[0], &item)?;
                    Ok(quote!(#x #body;))
                })?;
                quote_spanned!(span=> { #loops })
            }
            "reduce" | "max_by" | "min_by" if m.args.len() == 1 => {
                let c = self.closure_arg(&m.args[0], 2)?;
                let first = self.fresh("first");
                let (acc2, first2) = (acc.clone(), first.clone());
                let meth = method.clone();
                let loops = self.emit_loops(&p, span, &mut |l, item| {
                    let v = item.value().ok_or_else(|| {
                        l.error(m, &text(m), "reducing tuples: map them to numbers first")
                    })?;
                    let next = match meth.as_str() {
                        "reduce" => {
                            let a = l.bind_closure(&c.inputs[0], &Item::Value(quote!(#acc2)))?;
                            let b = l.bind_closure(&c.inputs[1], &Item::Value(v.clone()))?;
                            let body = &c.body;
                            quote!({ #a #b #body })
                        }
                        _ => {
                            // `compare(&acc, &x) == Greater`, read off the comparator.
                            let greater = l.comparison(&c, quote!(#acc2), v.clone())?;
                            match meth.as_str() {
                                // The last of equal maxima, the first of equal minima (Rust's).
                                "max_by" => quote!(if #greater { #acc2 } else { #v }),
                                _ => quote!(if #greater { #v } else { #acc2 }),
                            }
                        }
                    };
                    Ok(quote!(if #first2 { #acc2 = #v; #first2 = false; } else { #acc2 = #next; }))
                })?;
                let none = match missing {
                    Some(Missing::Default(d)) => quote!(if #first { #d } else { #acc }),
                    Some(Missing::Fail(k)) => {
                        let fail = syn::Ident::new(super::fallible::FAIL, span);
                        quote!({ if #first { #fail!(#k); } #acc })
                    }
                    _ => {
                        quote!({ assert!(!#first, "called `Option::unwrap()` on a `None` value"); #acc })
                    }
                };
                quote_spanned!(span=> { let mut #first = true; let mut #acc = 0.0; #loops #none })
            }
            "collect" => {
                return Err(self.error(m, &text(m), "`.collect()` is supported as the value of a `let` (`let v: Vec<f64> = ...collect();`)"));
            }
            _ => return Ok(None),
        };
        syn::parse2(code).map(Some)
    }

    /// `f(a, b)` for a local closure `f`: its body in a block of its own, the arguments
    /// evaluated first (left to right), then bound to its parameters.
    pub fn inline_closure_call(&mut self, c: &syn::ExprCall) -> LResult<Option<Expr>> {
        let Expr::Path(p) = strip(&c.func) else {
            return Ok(None);
        };
        let Some(name) = p.path.get_ident().map(|i| i.to_string()) else {
            return Ok(None);
        };
        let closure = match self.scope.closure(&name) {
            None => return Ok(None),
            Some(Err(rebound)) => return Err(rebound_error(&c.func, &rebound)),
            Some(Ok(closure)) => closure,
        };
        if closure.inputs.len() != c.args.len() {
            return Err(self.error(
                c,
                &text(c),
                &format!("`{name}` takes {} argument(s)", closure.inputs.len()),
            ));
        }
        let mut stmts = quote!();
        let mut binds = quote!();
        for (pat, arg) in closure.inputs.iter().zip(&c.args) {
            let a = self.fresh("arg");
            stmts.extend(quote_spanned!(arg.span()=> let #a = #arg;));
            binds.extend(quote!(let #pat = #a;));
        }
        let body = &closure.body;
        syn::parse2(quote_spanned!(c.span()=> { #stmts { #binds #body } })).map(Some)
    }

    /// `for_each`'s closure: one parameter, any statements.
    fn closure_arg_for_each(&self, e: &Expr) -> LResult<syn::ExprClosure> {
        match e {
            Expr::Closure(c) if c.inputs.len() == 1 => Ok(c.clone()),
            other => Err(self.error(
                other,
                &text(other),
                "`.for_each` takes a closure of one parameter",
            )),
        }
    }

    /// `compare(&a, &b) == Ordering::Greater` for a comparator closure
    /// `|a, b| A.partial_cmp(&B).unwrap()` (or `.total_cmp(&B)`, `.partial_cmp(B).unwrap()`),
    /// with `a` bound to `acc` and `b` to `x`: `A > B`.
    fn comparison(
        &self,
        c: &syn::ExprClosure,
        acc: TokenStream,
        x: TokenStream,
    ) -> LResult<TokenStream> {
        let mut body = &*c.body;
        if let Expr::Block(b) = body {
            if let [syn::Stmt::Expr(e, None)] = b.block.stmts.as_slice() {
                body = e;
            }
        }
        let call = match body {
            Expr::MethodCall(u) if (u.method == "unwrap" || u.method == "expect") => {
                match &*u.receiver {
                    Expr::MethodCall(inner) if inner.method == "partial_cmp" => inner,
                    _ => return Err(self.comparator_error(c)),
                }
            }
            Expr::MethodCall(inner) if inner.method == "total_cmp" => inner,
            _ => return Err(self.comparator_error(c)),
        };
        let (lhs, rhs) = (&call.receiver, &call.args[0]);
        let rhs = match rhs {
            Expr::Reference(r) => &r.expr,
            other => other,
        };
        let a = self.bind_closure(&c.inputs[0], &Item::Value(acc))?;
        let b = self.bind_closure(&c.inputs[1], &Item::Value(x))?;
        Ok(quote!({ #a #b (#lhs) > (#rhs) }))
    }

    fn comparator_error(&self, c: &syn::ExprClosure) -> syn::Error {
        self.error(
            c,
            &text(c),
            "the comparator of `max_by`/`min_by` is `|a, b| A.partial_cmp(&B).unwrap()` or `|a, b| A.total_cmp(&B)`",
        )
    }

    /// `let v: Vec<f64> = chain.collect();` (or `collect::<Vec<_>>()`): a new buffer of the
    /// chain's values; `None` when `e` is not such a chain.
    pub fn desugar_collect(&mut self, e: &Expr, name: &Ident) -> LResult<Option<TokenStream>> {
        let Expr::MethodCall(m) = strip(e) else {
            return Ok(None);
        };
        // An array's `.map(f)` (`let y = x.map(|v| v * v);`): the same as collecting
        // `x.iter().copied().map(f)`.
        if m.method == "map" && m.args.len() == 1 && matches!(m.args[0], Expr::Closure(_)) {
            let is_buffer = match strip(&m.receiver) {
                Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                    matches!(self.scope.shape(&i.to_string()), Some(Shape::Buffer(1)))
                }),
                _ => false,
            };
            if is_buffer {
                let (x, f) = (&m.receiver, &m.args[0]);
                let collected: Expr =
                    syn::parse_quote_spanned!(m.span()=> #x.iter().copied().map(#f).collect());
                return self.desugar_collect(&collected, name);
            }
        }
        if m.method != "collect" || !m.args.is_empty() {
            return Ok(None);
        }
        let methods = Self::chain_methods(&m.receiver);
        if Self::is_parallel(&methods) {
            return Ok(None);
        }
        let p = match self.pipeline(&m.receiver) {
            Ok(p) => p,
            Err(NotAPipeline::Other) => return Ok(None),
            Err(NotAPipeline::Error(e)) => return Err(e),
        };
        if p.stage.has_filter() || p.then.is_some() {
            return Err(self.error(m, &text(m), "collecting a filtered, flattened or chained iterator (a `Vec` of unknown length) is not supported yet; push its items in a `for` loop (`for &v in it { out.push(v); }`)"));
        }
        let span = m.span();
        let k = self.fresh("k");
        let k2 = k.clone();
        let name2 = name.clone();
        let loops = self.emit_loops_after_pre(&p, span, &mut |l, item| {
            let v = item
                .value()
                .ok_or_else(|| l.error(m, &text(m), "collecting tuples is not supported"))?;
            Ok(quote!(#name2[#k2] = #v; #k2 += 1;))
        })?;
        let pre = &p.pre;
        let len = &p.len;
        Ok(Some(
            quote_spanned!(span=> #(#pre)* let mut #name = vec![0.0; #len]; let mut #k: usize = 0; #loops),
        ))
    }
}

/// The integer literal `e` is (`1`, `2usize`), as an unsuffixed token.
fn int_literal(e: &Expr) -> Option<proc_macro2::Literal> {
    match strip(e) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i
            .base10_parse::<usize>()
            .ok()
            .map(proc_macro2::Literal::usize_unsuffixed),
        _ => None,
    }
}

/// `e` without parentheses.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// `x.max_by(..).copied()` → `x.max_by(..)`.
pub fn peel_copied(m: &syn::ExprMethodCall) -> &syn::ExprMethodCall {
    if m.method == "copied" || m.method == "cloned" {
        if let Expr::MethodCall(inner) = strip(&m.receiver) {
            return inner;
        }
    }
    m
}

/// Whether `sum::<usize>()` (or another integer type) was asked for.
fn turbofish_is_int(m: &syn::ExprMethodCall) -> bool {
    let Some(t) = &m.turbofish else { return false };
    t.args.iter().any(|a| {
        let s = quote!(#a).to_string();
        matches!(
            s.as_str(),
            "usize" | "isize" | "u32" | "u64" | "i32" | "i64"
        )
    })
}

fn text_of(t: &dyn ToTokens) -> String {
    crate::diagnostics::source_text(&t.to_token_stream())
}

/// The error for a local closure called or passed after a name it reads was rebound.
fn rebound_error(at: &Expr, name: &str) -> syn::Error {
    err(
        at,
        &text(at),
        &format!("the closure reads `{name}`, which has been rebound or changed since the closure was defined; define the closure after it, or pass `{name}` as a parameter"),
    )
}

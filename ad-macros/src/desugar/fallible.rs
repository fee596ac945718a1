//! Fallible code and optional elements, desugared before lowering.
//!
//! A function returning `Option<R>` or `Result<R, E>` (see `parse::signature::Fallible`)
//! is lowered as a function returning `R` with *failure sites*: in result positions (the
//! body's value, `if`/`match` arms of it, `return`), `Some(v)`/`Ok(v)` become `v` and
//! `None`/`Err(e)` become `__phidiff_fail!(k)`; `e?` becomes `__phidiff_try!(k, e)`, with
//! `e.ok_or(err)` read as the error `err`. Site `k` is an IR `Fail` (a condition and the
//! site's number); the generated derivatives return the site's `None`/`Err(..)` there, so
//! the failure path carries no derivative and the reverse sweep never starts on it.
//!
//! In every function, `if let Some(p) = x.get(i)` (and `while let`, `let .. else`) on the
//! optional elements `first()`, `last()` and `get(i)` become a test of
//! `__phidiff_has!(x.get(i))` and `let p = __phidiff_get!(x.get(i));`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Stmt};

/// The internal macros this pass writes and the lowering reads.
pub const FAIL: &str = "__phidiff_fail";
pub const TRY: &str = "__phidiff_try";
pub const HAS: &str = "__phidiff_has";
pub const GET: &str = "__phidiff_get";

/// What the function returns at a failure site: `None` (no error), `Err(error)`, or for
/// a `?`, `Err(From::from(error))`.
pub struct Site {
    pub error: Option<Expr>,
    pub convert: bool,
    /// The variables the error value reads, bound to their values where it fails (the
    /// `args` of its `Fail`s).
    pub locals: Vec<syn::Ident>,
}

impl Site {
    /// The value returned at this site.
    pub fn tokens(&self) -> TokenStream {
        match (&self.error, self.convert) {
            (None, _) => quote!(::core::option::Option::None),
            (Some(e), false) => quote!(::core::result::Result::Err(#e)),
            (Some(e), true) => {
                quote!(::core::result::Result::Err(::core::convert::From::from(#e)))
            }
        }
    }
}

/// The body of `item` with fallible forms and optional patterns desugared, and the
/// failure sites it names; `fallible` when the function returns `Option`/`Result`
/// (`option`: an `Option`; `unit`: of `()`).
pub fn desugar(
    item: &syn::ItemFn,
    fallible: bool,
    option: bool,
    unit: bool,
) -> syn::Result<(syn::Block, Vec<Site>)> {
    let mut d = Desugar {
        fallible,
        option,
        unit,
        sites: Vec::new(),
        errors: Vec::new(),
    };
    let mut block = (*item.block).clone();
    d.visit_block_mut(&mut block);
    if fallible {
        d.result_block(&mut block);
    }
    match d.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok((block, d.sites)),
    }
}

struct Desugar {
    fallible: bool,
    option: bool,
    unit: bool,
    sites: Vec<Site>,
    errors: Vec<syn::Error>,
}

fn macro_expr(name: &str, span: Span, args: TokenStream) -> Expr {
    let name = syn::Ident::new(name, span);
    syn::parse2(quote_spanned!(span=> #name!(#args))).expect("an internal macro call")
}

/// `Some(p)` → `p`.
fn some_pattern(p: &syn::Pat) -> Option<&syn::Pat> {
    match p {
        syn::Pat::TupleStruct(t) if t.path.is_ident("Some") && t.elems.len() == 1 => {
            Some(&t.elems[0])
        }
        _ => None,
    }
}

/// `&v` → `v`: the element is read as a value either way.
fn value_pattern(p: &syn::Pat) -> syn::Pat {
    match p {
        syn::Pat::Reference(r) => value_pattern(&r.pat),
        other => other.clone(),
    }
}

fn is_call_of(e: &Expr, name: &str) -> Option<Expr> {
    match e {
        Expr::Call(c) if c.args.len() == 1 => match &*c.func {
            Expr::Path(p) if p.path.is_ident(name) => Some(c.args[0].clone()),
            _ => None,
        },
        _ => None,
    }
}

impl Desugar {
    fn site(&mut self, error: Option<Expr>, convert: bool) -> usize {
        self.sites.push(Site {
            error,
            convert,
            locals: Vec::new(),
        });
        self.sites.len() - 1
    }

    fn fail(&mut self, error: Option<Expr>, span: Span) -> Expr {
        let k = self.site(error, false);
        macro_expr(FAIL, span, quote!(#k))
    }

    /// `e` in a result position: `Some(v)`/`Ok(v)` → `v`, `None`/`Err(e)` → a failure.
    fn result_expr(&mut self, e: &mut Expr) {
        let span = e.span();
        if let Some(v) = is_call_of(e, "Some").or_else(|| is_call_of(e, "Ok")) {
            *e = match &v {
                Expr::Tuple(t) if t.elems.is_empty() => syn::parse_quote_spanned!(span=> {}),
                _ => v,
            };
            return;
        }
        if let Some(err) = is_call_of(e, "Err") {
            *e = self.fail(Some(err), span);
            return;
        }
        match e {
            Expr::Path(p) if p.path.is_ident("None") => *e = self.fail(None, span),
            Expr::If(i) => {
                self.result_block(&mut i.then_branch);
                if let Some((_, els)) = &mut i.else_branch {
                    self.result_expr(els);
                }
            }
            Expr::Match(m) => {
                for arm in &mut m.arms {
                    self.result_expr(&mut arm.body);
                }
            }
            Expr::Block(b) if b.label.is_none() => self.result_block(&mut b.block),
            Expr::Paren(p) => self.result_expr(&mut p.expr),
            // `return ..` was rewritten where it stands; `panic!` and our macros diverge
            // or are failures already.
            Expr::Return(_) | Expr::Macro(_) => {}
            Expr::MethodCall(m) if !self.unit && matches!(m.method.to_string().as_str(), "ok_or" | "ok_or_else") => {
                let (inner, err) = ok_or(m);
                let k = self.site(Some(err), false);
                *e = macro_expr(TRY, span, quote!(#k, #inner));
            }
            // `x.first().copied()`, `x.iter().copied().reduce(f64::max)`: an optional value.
            Expr::MethodCall(_) if !self.unit && self.option => {
                let k = self.site(None, false);
                let inner = e.clone();
                *e = macro_expr(TRY, span, quote!(#k, #inner));
            }
            _ => self.errors.push(syn::Error::new(
                span,
                "phidiff cannot differentiate this result: the value of a function returning `Option` or `Result` is read as `Some(value)`/`None` or `Ok(value)`/`Err(error)` (also in the arms of an `if` or `match`, and in `return`), or as `x.first()`, `x.get(i)`, `..reduce(..)` and the like (with `.ok_or(error)` for a `Result`); the supported subset of Rust is listed in phidiff's guide (docs/guide.md, \"The supported subset\")",
            )),
        }
    }

    fn result_block(&mut self, b: &mut syn::Block) {
        match b.stmts.last_mut() {
            Some(Stmt::Expr(e, None)) => self.result_expr(e),
            // A block ending in a statement: `()`, or it diverges.
            _ => {}
        }
    }
}

/// `if let Some(p) = x.get(i) { body }` (or `while let`): the condition becomes
/// `has(x.get(i))` and `body` starts with `let p = get(x.get(i));`.
fn optional_test(cond: &mut Expr, body: &mut syn::Block, span: Span) {
    let Expr::Let(l) = cond else { return };
    let Some(p) = some_pattern(&l.pat) else {
        return;
    };
    let p = value_pattern(p);
    let x = &l.expr;
    let get = macro_expr(GET, span, quote!(#x));
    body.stmts
        .insert(0, syn::parse_quote_spanned!(span=> let #p = #get;));
    *cond = macro_expr(HAS, span, quote!(#x));
}

/// `inner.ok_or(err)` / `inner.ok_or_else(|| err)` → `(inner, err)`.
fn ok_or(m: &syn::ExprMethodCall) -> (Expr, Expr) {
    let arg = m
        .args
        .first()
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(()));
    let err = match (m.method == "ok_or_else", arg) {
        (true, Expr::Closure(c)) if c.inputs.is_empty() => (*c.body).clone(),
        (true, f) => syn::parse_quote!((#f)()),
        (false, a) => a,
    };
    ((*m.receiver).clone(), err)
}

impl VisitMut for Desugar {
    // A closure's `?` and `return` are its own.
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut out = Vec::with_capacity(b.stmts.len());
        for mut st in std::mem::take(&mut b.stmts) {
            self.visit_stmt_mut(&mut st);
            // `let Some(p) = e else { .. };` → `if !has(e) { .. } let p = get(e);`
            if let Stmt::Local(local) = &st {
                if let (Some(p), Some(init)) = (some_pattern(&local.pat), &local.init) {
                    if let Some((_, els)) = &init.diverge {
                        let e = &init.expr;
                        let span = local.span();
                        let has = macro_expr(HAS, span, quote!(#e));
                        let get = macro_expr(GET, span, quote!(#e));
                        let p = value_pattern(p);
                        out.push(syn::parse_quote_spanned!(span=> if !#has #els));
                        out.push(syn::parse_quote_spanned!(span=> let #p = #get;));
                        continue;
                    }
                }
            }
            out.push(st);
        }
        b.stmts = out;
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let span = e.span();
        match e {
            Expr::Try(t) if self.fallible => {
                let (inner, error, convert) = match &*t.expr {
                    Expr::MethodCall(m)
                        if matches!(m.method.to_string().as_str(), "ok_or" | "ok_or_else") =>
                    {
                        let (inner, err) = ok_or(m);
                        (inner, Some(err), true)
                    }
                    other => (other.clone(), None, false),
                };
                let k = self.site(error, convert);
                *e = macro_expr(TRY, span, quote!(#k, #inner));
            }
            Expr::Return(r) if self.fallible => {
                if let Some(v) = &mut r.expr {
                    let unit_ok = matches!(is_call_of(v, "Ok").or_else(|| is_call_of(v, "Some")),
                        Some(Expr::Tuple(t)) if t.elems.is_empty());
                    if unit_ok {
                        r.expr = None;
                    } else {
                        self.result_expr(v);
                    }
                }
            }
            Expr::If(i) => optional_test(&mut i.cond, &mut i.then_branch, span),
            Expr::While(w) => optional_test(&mut w.cond, &mut w.body, span),
            _ => {}
        }
    }
}

//! Fallible code after desugaring (see `desugar::fallible`): the internal macros that pass
//! writes (`__phidiff_fail!`, `__phidiff_try!`, `__phidiff_has!`, `__phidiff_get!`) lowered
//! to IR `Fail` instructions and tests, `.unwrap()`/`?` on calls of fallible functions
//! (`Callee.then`), and the check that no failure sits in a parallel or checkpointed loop.

use crate::desugar::fallible::{FAIL, GET, HAS, TRY};
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::Expr;
/// A failure inside a rayon loop (its iterations run in closures, which a failure could
/// not leave) or a checkpointed loop (its steps are replayed in the reverse sweep, after
/// adjoints were written) is an error at its span.
pub fn check_failures(f: &crate::ir::Function, diag: &crate::diagnostics::Diagnostics) {
    use crate::ir::InstKind;
    let mut spans = Vec::new();
    f.walk(f.body, &mut |l| {
        let what = if f.parallel.contains_key(&l) {
            "a rayon parallel loop, whose iterations run in closures"
        } else if f.checkpoints.contains_key(&l) {
            "a checkpointed loop, whose steps are replayed in the reverse sweep"
        } else {
            return;
        };
        for b in f.child_blocks(l) {
            f.walk(b, &mut |i| match &f.inst(i).kind {
                InstKind::Fail { .. } => spans.push((f.inst(i).span, what)),
                InstKind::Call { callee, .. } if !callee.then.0.is_empty() => {
                    spans.push((f.inst(i).span, what))
                }
                _ => {}
            });
        }
    });
    spans.sort_by_key(|(s, _)| format!("{s:?}"));
    spans.dedup_by_key(|(s, _)| format!("{s:?}"));
    for (span, what) in spans {
        diag.push(syn::Error::new(
            span,
            format!("phidiff cannot differentiate a failure (`?`, `None`, `Err`) inside {what}; check the condition before the loop; the supported subset of Rust is listed in phidiff's guide (docs/guide.md, \"The supported subset\")"),
        ));
    }
}

use super::{Binding, LResult, Lowerer, Missing};
use crate::ir::{InstKind, Ty, Value};

impl Lowerer<'_> {
    /// One of this pass's macros (`mac`), lowered: `Some(value)` when it is one (the value
    /// `None` for a failure where the function's value is `()` or no value is wanted).
    pub(super) fn lower_internal_macro(
        &mut self,
        mac: &syn::Macro,
        want: bool,
    ) -> LResult<Option<Option<Value>>> {
        let Some(name) = mac.path.get_ident().map(|i| i.to_string()) else {
            return Ok(None);
        };
        let args = || {
            mac.parse_body_with(
                syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
            )
        };
        let site = |e: &Expr| -> u32 {
            match e {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(k),
                    ..
                }) => k.base10_parse().expect("a site number"),
                _ => unreachable!("a site number"),
            }
        };
        let v = match name.as_str() {
            FAIL => {
                let k = site(&args()?[0]);
                let args = self.error_values(k)?;
                let cond = self.b.bconst(true);
                self.b.stmt(InstKind::Fail {
                    cond,
                    site: k,
                    args,
                });
                (want && self.returns_float).then(|| self.b.fconst(0.0))
            }
            TRY => {
                let a = args()?;
                let k = site(&a[0]);
                let args = self.error_values(k)?;
                self.fail_args.insert(k, args);
                Some(self.lower_try(k, &a[1])?)
            }
            HAS => {
                let a = args()?;
                match self.element_present(&a[0])? {
                    Some((present, ..)) => Some(present),
                    None => {
                        return Err(self.not_optional(
                            &a[0],
                            "`if let`/`while let`/`let .. else` on `Some(..)`",
                        ))
                    }
                }
            }
            GET => {
                let a = args()?;
                match self.optional_element(&a[0], Missing::Panic)? {
                    Some(v) => Some(v),
                    None => {
                        return Err(self.not_optional(
                            &a[0],
                            "`if let`/`while let`/`let .. else` on `Some(..)`",
                        ))
                    }
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    fn not_optional(&self, e: &Expr, what: &str) -> syn::Error {
        self.error(
            e,
            &super::text(e),
            &format!("{what} reads `x.first()`, `x.last()` or `x.get(i)` of a slice (and `?` also `reduce`/`min_by`/`max_by` of an iterator chain; with `.ok_or(error)` in a function returning `Result`)"),
        )
    }

    /// `g(x)?` of a fallible function `g`: the call, followed by `?` in the generated code
    /// (where `g_fwd`/`g_rev` are fallible too: the failure returns before the reverse
    /// sweep starts, as the caller's own failures do).
    fn lower_tried_call(&mut self, e: &Expr) -> LResult<Value> {
        self.lower_call_then(e, quote::quote!(?))
    }

    /// The call `e` of a fallible function followed by `then` (`?`, `.unwrap()`,
    /// `.expect(..)`), in the generated code too (`Callee::then`).
    pub(super) fn lower_call_then(
        &mut self,
        e: &Expr,
        then: proc_macro2::TokenStream,
    ) -> LResult<Value> {
        self.call_then = Some(crate::ir::Code(then));
        let v = self.lower_expr(e);
        if self.call_then.take().is_some() {
            return Err(self.error(
                e,
                &super::text(e),
                "`?`, `unwrap()` and `expect(..)` apply here to the call of a function (`g(x)?`, `obj.g(x).unwrap()`) that returns an `Option` or a `Result`",
            ));
        }
        v
    }

    /// `e?` at failure site `k`: the value, after a `Fail` where there is none.
    fn lower_try(&mut self, k: u32, e: &Expr) -> LResult<Value> {
        if let Some(v) = self.optional_element(e, Missing::Fail(k))? {
            return Ok(v);
        }
        // `T::from_usize(n)?`, `T::from(c)?`, `v.to_f64()?`: conversions into the float type
        // that cannot fail, read as their `unwrap()`.
        if let Expr::Call(c) = e {
            if let Some(v) = self.try_float_from(c)? {
                return Ok(v);
            }
            return self.lower_tried_call(e);
        }
        if let Expr::MethodCall(m) = e {
            if self.is_user_method(m) {
                return self.lower_tried_call(e);
            }
        }
        let conversion = match e {
            Expr::MethodCall(m) => {
                m.args.is_empty() && matches!(m.method.to_string().as_str(), "to_f64" | "to_f32")
            }
            _ => false,
        };
        if conversion {
            let unwrapped = syn::ExprMethodCall {
                attrs: Vec::new(),
                receiver: Box::new(e.clone()),
                dot_token: Default::default(),
                method: syn::Ident::new("unwrap", e.span()),
                turbofish: None,
                paren_token: Default::default(),
                args: Default::default(),
            };
            return self.lower_method_value(&unwrapped);
        }
        if let Expr::MethodCall(m) = e {
            let m = crate::desugar::peel_copied(m);
            if let Some(d) = self
                .desugarer()
                .desugar_consumer_with(m, Some(Missing::Fail(k)))?
            {
                let v = self.lower_expr(&d)?;
                self.expect_ty(v, Ty::Float, e, "an optional value")?;
                return Ok(v);
            }
        }
        Err(self.not_optional(e, "`?`"))
    }

    /// The values of the variables the error value of site `k` reads, in the order of the
    /// site's `locals` (which this records): the scalar variables it names. Parameters
    /// that are buffers are read where it fails as they are (not `&mut` ones inside
    /// loops, where the derivatives may hold parts of them); other buffers are an error.
    fn error_values(&mut self, k: u32) -> LResult<Vec<Value>> {
        let Some(error) = &self.fail_sites[k as usize].error else {
            return Ok(Vec::new());
        };
        let mut names = Vec::new();
        names_in(quote!(#error), &mut names);
        let mut locals: Vec<syn::Ident> = Vec::new();
        let mut values = Vec::new();
        for id in names {
            let name = id.to_string();
            if locals.iter().any(|l| *l == name) {
                continue;
            }
            let now = match self.env.lookup(&name) {
                None | Some(Binding::Opaque) => continue,
                Some(Binding::Scalar(v)) => {
                    locals.push(id.clone());
                    values.push(v);
                    continue;
                }
                Some(b) => b,
            };
            let param = self
                .error_params
                .iter()
                .find(|(n, b, _)| *n == name && *b == Some(now));
            match param {
                None => {
                    return Err(self.error(
                        &id,
                        &name,
                        "an error value may name scalar variables, the function's parameters and constants, not other buffers or views: phidiff's derivatives build the error where they fail",
                    ))
                }
                Some((_, _, true)) if !self.loops.is_empty() => {
                    return Err(self.error(
                        &id,
                        &name,
                        "inside a loop, an error value may not name a `&mut` parameter: fail after the loop, or check before it",
                    ))
                }
                Some(_) => {}
            }
        }
        self.fail_sites[k as usize].locals = locals;
        Ok(values)
    }
}

/// The identifiers in `tokens`, also inside macro calls, with the names a format string
/// reads (`"{n}"`, `"{x:?}"`): all names an error value may read (a field or method of
/// the same name as a variable is counted too, which costs an unused binding).
fn names_in(tokens: TokenStream, out: &mut Vec<syn::Ident>) {
    for t in tokens {
        match t {
            proc_macro2::TokenTree::Ident(i) => out.push(i),
            proc_macro2::TokenTree::Group(g) => names_in(g.stream(), out),
            proc_macro2::TokenTree::Literal(l) => {
                let text = l.to_string();
                if !text.starts_with('"') {
                    continue;
                }
                let mut rest = text.as_str();
                while let Some(at) = rest.find('{') {
                    rest = &rest[at + 1..];
                    if rest.starts_with('{') {
                        rest = &rest[1..];
                        continue;
                    }
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    let name = &rest[..end];
                    if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
                        if let Ok(id) = syn::parse_str::<syn::Ident>(name) {
                            out.push(syn::Ident::new(&id.to_string(), l.span()));
                        }
                    }
                }
            }
            proc_macro2::TokenTree::Punct(_) => {}
        }
    }
}

//! Helpers without attributes, inlined: a call `g(a, b)` of a plain function `g` of the
//! caller's module (the same file, no `#[differentiate]`, no hand-written `g_fwd`/`g_rev`)
//! whose parameters are floats, integers or slices of them and whose result is one value
//! becomes the block
//!
//! ```text
//! { let __pd_call1_0 = a; let __pd_call1_1 = b; { let x = __pd_call1_0; let y = __pd_call1_1; <g's body> } }
//! ```
//!
//! before anything else reads the body, so the helper is differentiated where it is called
//! like a local closure: coarsening sees through the call (no shadow buffers, no second
//! primal run in `_rev`), and no item is generated, so two differentiated functions
//! calling one helper never emit conflicting items. The arguments are bound first, in
//! order, so a parameter named like an argument (`g(y, x)` of `fn g(x, y)`) reads the
//! caller's value. A generic helper (`fn g<T: Float>(v: T)`) reads the caller's float type
//! (or the one of `g::<F>(..)`) in place of its own.
//!
//! A helper is left as a call (derived by the `_fwd`/`_rev` convention, so the missing
//! rule is reported by [`crate::missing_rule`]) when its body names something the caller
//! binds at the call (the inlined body would read the caller's local instead of the
//! module's item), or when it is outside what inlining covers: methods, struct or `&mut`
//! scalar parameters, several results, `return` and `?` in the body. A helper calling
//! itself, directly or through others, is an error at the call that closes the cycle.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::collections::{BTreeMap, HashSet};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Expr, Type};

/// `item` with the calls of its module's plain helpers inlined; `None` when it calls none
/// (or the file does not show `item`'s module). `float` is the caller's float type.
pub fn helpers(
    item: &syn::ItemFn,
    source: &str,
    float: &TokenStream,
) -> syn::Result<Option<syn::ItemFn>> {
    let Ok(file) = syn::parse_file(source) else {
        return Ok(None);
    };
    let Some(module) = caller_module(&file.items, &item.sig.ident.to_string()) else {
        return Ok(None);
    };
    let file_idents = idents(file.to_token_stream());
    let mut found = BTreeMap::new();
    for it in module {
        let syn::Item::Fn(f) = it else { continue };
        let name = f.sig.ident.to_string();
        let has_rule = ["_fwd", "_rev"]
            .iter()
            .any(|s| file_idents.contains(&format!("{name}{s}")));
        if !has_rule && !mentions_differentiate(&f.attrs) && inlinable(f) {
            found.insert(name, f);
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut inliner = Inliner {
        helpers: found,
        float: float.clone(),
        stack: vec![item.sig.ident.to_string()],
        bound: bound_names(item),
        next: 0,
        errors: Vec::new(),
        changed: false,
    };
    let mut out = item.clone();
    inliner.visit_block_mut(&mut out.block);
    if let Some(e) = inliner.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        return Err(e);
    }
    Ok(inliner.changed.then_some(out))
}

/// Inlines helper calls in the function it visits.
struct Inliner<'a> {
    helpers: BTreeMap<String, &'a syn::ItemFn>,
    /// The float type a generic helper is instantiated at.
    float: TokenStream,
    /// The functions being inlined into, outermost first (the caller, then helpers).
    stack: Vec<String>,
    /// The names the function being rewritten binds (parameters, locals, closures, items).
    bound: HashSet<String>,
    next: usize,
    errors: Vec<syn::Error>,
    changed: bool,
}

impl VisitMut for Inliner<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let Expr::Call(c) = e else { return };
        let Expr::Path(p) = &*c.func else { return };
        if p.qself.is_some() || p.path.segments.len() != 1 || p.path.leading_colon.is_some() {
            return;
        }
        let seg = &p.path.segments[0];
        let name = seg.ident.to_string();
        let Some(&helper) = self.helpers.get(&name) else {
            return;
        };
        if self.bound.contains(&name) || helper.sig.inputs.len() != c.args.len() {
            return;
        }
        if let Some(at) = self.stack.iter().position(|s| *s == name) {
            let cycle: Vec<&str> = self.stack[at..]
                .iter()
                .map(String::as_str)
                .chain([name.as_str()])
                .collect();
            self.errors.push(syn::Error::new_spanned(
                &c.func,
                format!(
                    "phidiff cannot differentiate `{name}` here: it calls itself ({}), and phidiff \
                     differentiates a helper without attributes by inlining its body where it is \
                     called; write the recursion as a loop, or give `{name}` hand-written \
                     derivatives `{name}_fwd`/`{name}_rev` (a custom rule, see the guide, \"Calls \
                     and custom rules\")",
                    cycle.join(" → ")
                ),
            ));
            return;
        }
        let float = match &seg.arguments {
            syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                Some(syn::GenericArgument::Type(t)) => t.to_token_stream(),
                _ => self.float.clone(),
            },
            _ => self.float.clone(),
        };
        // The file's text gives the helper's tokens no place in it: they take the call's
        // (the outermost one's, for a chain), so what is reported inside points there.
        let span = c.span();
        let Some(body) = self.prepared(helper, &float, span) else {
            return;
        };
        // The helper's free names must mean at the call what they mean in the module.
        if free_names(helper, &body)
            .iter()
            .any(|n| self.bound.contains(n))
        {
            return;
        }
        self.next += 1;
        let n = self.next;
        let mut temps = quote!();
        let mut binds = quote!();
        for (k, (arg, input)) in c.args.iter().zip(&helper.sig.inputs).enumerate() {
            let syn::FnArg::Typed(pt) = input else { return };
            let t = format_ident!("__pd_call{}_{}", n, k, span = arg.span());
            let pat = &pt.pat;
            temps.extend(quote_spanned!(arg.span()=> let #t = #arg;));
            let pat = respan(pat.to_token_stream(), span);
            binds.extend(quote_spanned!(span=> let #pat = #t;));
        }
        let stmts = &body.stmts;
        match syn::parse2::<Expr>(quote_spanned!(span=> { #temps { #binds #(#stmts)* } })) {
            Ok(inlined) => {
                *e = inlined;
                self.changed = true;
            }
            Err(err) => self.errors.push(err),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // Items nested in a body are not the function's code.
    }
}

impl Inliner<'_> {
    /// The body of `helper` at the float type `float`, with its own helper calls inlined.
    /// Its tokens are at `span`.
    fn prepared(
        &mut self,
        helper: &syn::ItemFn,
        float: &TokenStream,
        span: Span,
    ) -> Option<syn::Block> {
        let generic = helper
            .sig
            .generics
            .type_params()
            .next()
            .map(|t| t.ident.to_string());
        let mut tokens = respan(helper.block.to_token_stream(), span);
        if let Some(g) = generic {
            tokens = replace_ident(tokens, &g, float);
        }
        let mut block: syn::Block = syn::parse2(tokens).ok()?;
        let name = helper.sig.ident.to_string();
        let outer_bound = std::mem::replace(&mut self.bound, bound_names(helper));
        self.stack.push(name);
        let before = self.errors.len();
        self.visit_block_mut(&mut block);
        self.stack.pop();
        self.bound = outer_bound;
        (self.errors.len() == before).then_some(block)
    }
}

/// Whether `f` is a helper the inliner takes: a plain function of floats, integers and
/// slices of them (at least one float among them), with one value or none as its result,
/// generic at most over its float type, and a body without `return` or `?`.
fn inlinable(f: &syn::ItemFn) -> bool {
    let sig = &f.sig;
    if sig.asyncness.is_some() || sig.unsafety.is_some() || sig.variadic.is_some() {
        return false;
    }
    let mut float_generic = None;
    for p in &sig.generics.params {
        match p {
            syn::GenericParam::Lifetime(_) => {}
            syn::GenericParam::Type(t) if float_generic.is_none() && bounded_by_float(t) => {
                float_generic = Some(t.ident.to_string())
            }
            _ => return false,
        }
    }
    if sig
        .generics
        .where_clause
        .as_ref()
        .is_some_and(|w| !w.predicates.is_empty())
    {
        return false;
    }
    let g = float_generic.as_deref();
    let mut any_float = false;
    for input in &sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            return false;
        };
        match param_kind(&pt.ty, g) {
            Some(float) => any_float |= float,
            None => return false,
        }
    }
    let result_ok = match &sig.output {
        syn::ReturnType::Default => true,
        syn::ReturnType::Type(_, t) => scalar(t, g).is_some(),
    };
    result_ok && any_float && plain_body(&f.block)
}

fn bounded_by_float(t: &syn::TypeParam) -> bool {
    t.bounds.iter().any(|b| match b {
        syn::TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Float"),
        _ => false,
    })
}

/// `Some(is_float)` for a scalar type the inliner binds by value: a float (`f64`, `f32`,
/// the generic float), an integer or `bool`.
fn scalar(t: &Type, generic: Option<&str>) -> Option<bool> {
    let Type::Path(p) = t else { return None };
    let id = p.path.get_ident()?.to_string();
    if id == "f64" || id == "f32" || Some(id.as_str()) == generic {
        return Some(true);
    }
    let ints = [
        "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "bool",
    ];
    ints.contains(&id.as_str()).then_some(false)
}

/// `Some(has_float)` for a parameter type the inliner binds: a scalar, or a shared or
/// `&mut` slice, array or `Vec` of scalars.
fn param_kind(t: &Type, generic: Option<&str>) -> Option<bool> {
    match t {
        Type::Reference(r) => match &*r.elem {
            Type::Slice(s) => scalar(&s.elem, generic),
            Type::Array(a) => scalar(&a.elem, generic),
            Type::Path(p) if r.mutability.is_none() => {
                let seg = p.path.segments.last()?;
                if seg.ident != "Vec" {
                    return None;
                }
                match &seg.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
                        syn::GenericArgument::Type(e) => scalar(e, generic),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        },
        other => scalar(other, generic),
    }
}

/// Whether a body is free of what inlining cannot keep: `return`, `?`, items, `unsafe`.
fn plain_body(b: &syn::Block) -> bool {
    struct Plain(bool);
    impl<'a> Visit<'a> for Plain {
        fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
            self.0 = false;
        }
        fn visit_expr_try(&mut self, _: &'a syn::ExprTry) {
            self.0 = false;
        }
        fn visit_expr_unsafe(&mut self, _: &'a syn::ExprUnsafe) {
            self.0 = false;
        }
        fn visit_item(&mut self, _: &'a syn::Item) {
            self.0 = false;
        }
    }
    let mut v = Plain(true);
    v.visit_block(b);
    v.0
}

/// The names `f` binds: its parameters, and every name a pattern or an item in its body
/// binds (wherever it stands: a conservative set for the capture test).
fn bound_names(f: &syn::ItemFn) -> HashSet<String> {
    struct Bound(HashSet<String>);
    impl<'a> Visit<'a> for Bound {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.insert(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
            self.0.insert(f.sig.ident.to_string());
        }
        fn visit_item_const(&mut self, c: &'a syn::ItemConst) {
            self.0.insert(c.ident.to_string());
        }
        fn visit_item_static(&mut self, s: &'a syn::ItemStatic) {
            self.0.insert(s.ident.to_string());
        }
    }
    let mut v = Bound(HashSet::new());
    for input in &f.sig.inputs {
        v.visit_fn_arg(input);
    }
    v.visit_block(&f.block);
    v.0
}

/// The names `body` (the prepared body of `helper`) reads that it does not bind: module
/// items, and every identifier inside macro calls (conservatively).
fn free_names(helper: &syn::ItemFn, body: &syn::Block) -> HashSet<String> {
    struct Used(HashSet<String>);
    impl<'a> Visit<'a> for Used {
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if let Some(id) = p.path.get_ident() {
                self.0.insert(id.to_string());
            }
            syn::visit::visit_expr_path(self, p);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            self.0.extend(idents(m.tokens.clone()));
        }
    }
    let mut used = Used(HashSet::new());
    used.visit_block(body);
    let mut bound = bound_names(helper);
    let prepared = syn::ItemFn {
        block: Box::new(body.clone()),
        ..helper.clone()
    };
    bound.extend(bound_names(&prepared));
    used.0.retain(|n| !bound.contains(n));
    used.0
}

/// `tokens` with every identifier `from` replaced by `to` (at the identifier's span).
fn replace_ident(tokens: TokenStream, from: &str, to: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for t in tokens {
        match t {
            TokenTree::Ident(i) if i == from => {
                let span = i.span();
                out.extend(to.clone().into_iter().map(|mut t| {
                    t.set_span(span);
                    t
                }));
            }
            TokenTree::Group(g) => {
                let mut ng =
                    proc_macro2::Group::new(g.delimiter(), replace_ident(g.stream(), from, to));
                ng.set_span(g.span());
                out.extend([TokenTree::Group(ng)]);
            }
            other => out.extend([other]),
        }
    }
    out
}

/// The items of the module of the file that holds the differentiated function or method
/// `name` (an inline `mod` or the file itself); `None` unless exactly one module does.
fn caller_module<'a>(items: &'a [syn::Item], name: &str) -> Option<&'a [syn::Item]> {
    fn holds(items: &[syn::Item], name: &str) -> bool {
        items.iter().any(|it| match it {
            syn::Item::Fn(f) => f.sig.ident == name && mentions_differentiate(&f.attrs),
            syn::Item::Impl(imp) => imp.items.iter().any(|i| match i {
                syn::ImplItem::Fn(m) => {
                    m.sig.ident == name
                        && (mentions_differentiate(&m.attrs) || mentions_differentiate(&imp.attrs))
                }
                _ => false,
            }),
            _ => false,
        })
    }
    fn collect<'a>(items: &'a [syn::Item], name: &str, found: &mut Vec<&'a [syn::Item]>) {
        if holds(items, name) {
            found.push(items);
        }
        for it in items {
            if let syn::Item::Mod(m) = it {
                if let Some((_, inner)) = &m.content {
                    collect(inner, name, found);
                }
            }
        }
    }
    let mut found = Vec::new();
    collect(items, name, &mut found);
    match found.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

fn mentions_differentiate(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        idents(a.to_token_stream())
            .iter()
            .any(|i| i.starts_with("differentiate"))
    })
}

/// Every identifier in `tokens`, at any depth.
fn idents(tokens: TokenStream) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut stack = vec![tokens];
    while let Some(ts) = stack.pop() {
        for t in ts {
            match t {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    out
}

/// The caller's float type: its generic float parameter (also one of its `impl`), else
/// `f32` when its signature names `f32` and not `f64`, else `f64`.
pub fn caller_float(item: &syn::ItemFn, imp: Option<&syn::ItemImpl>) -> TokenStream {
    let generics = [Some(&item.sig.generics), imp.map(|i| &i.generics)];
    for g in generics.into_iter().flatten() {
        if let Some(t) = g.type_params().find(|t| bounded_by_float(t)) {
            return t.ident.to_token_stream();
        }
        if let Some(w) = &g.where_clause {
            for p in &w.predicates {
                if let syn::WherePredicate::Type(pt) = p {
                    let float = pt.bounds.iter().any(|b| {
                        matches!(b, syn::TypeParamBound::Trait(t)
                            if t.path.segments.last().is_some_and(|s| s.ident == "Float"))
                    });
                    if float {
                        return pt.bounded_ty.to_token_stream();
                    }
                }
            }
        }
    }
    let named = idents(item.sig.to_token_stream());
    if named.contains("f32") && !named.contains("f64") {
        return quote!(f32);
    }
    quote!(f64)
}

/// `tokens` with every token, at any depth, at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                ng.set_span(span);
                TokenTree::Group(ng)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

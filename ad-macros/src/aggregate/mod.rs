//! Structs: the derive, and functions that take them.
//!
//! A differentiated function whose body reads the fields of a struct parameter needs the
//! struct's layout, which only the struct's derive sees. So `#[differentiate]` emits the
//! function as written and then asks for the layouts, one struct type after the other:
//! `Params! { [resume] {args} {pending types} {layouts so far} {item} }` expands (through
//! the derive's hidden `macro_rules!`, see [`derive`]) to `resume! { @layout {struct ..} ..}`,
//! which asks for the next type or, with all layouts known, writes the derivatives: the
//! function with its struct parameters exploded into their fields ([`explode`]) goes through
//! the compiler as any other, and [`wrap`] writes the functions with the contract's
//! signatures around its derivatives.

pub mod derive;
pub mod explode;
mod impls;
mod outputs;
pub mod returned;
mod rewrite;
pub use rewrite::struct_of_tail;
pub mod shape;
mod wrap;

pub use impls::{expand_impl, impl_of, in_trait_impl};

use crate::expand::SourceFile;
use crate::parse::Options;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::collections::HashMap;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;

/// The struct types whose layouts the function needs: the types of the parameters whose
/// fields the body reads (`p.k`), as paths without generic arguments, with the span of the
/// parameter's type.
pub fn needed(
    item: &syn::ItemFn,
    imp: Option<&syn::ItemImpl>,
    text: Option<&str>,
) -> Vec<(syn::Path, proc_macro2::Span)> {
    // Structs the file derives `Differentiable` for: a parameter of one that the body only
    // passes on (`inner(p, x)`) is split too, so the call passes its fields.
    // (The file is parsed only for such a parameter.)
    let derived = std::cell::OnceCell::new();
    let derived = || derived.get_or_init(|| text.map(derived_structs).unwrap_or_default());
    let self_ty = imp.map(|i| &*i.self_ty);
    let body = item.block.to_token_stream();
    let mut out: Vec<(syn::Path, proc_macro2::Span)> = Vec::new();
    for arg in &item.sig.inputs {
        let (name, ty, span) = match arg {
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) => (pi.ident.clone(), (*pt.ty).clone(), pt.ty.span()),
                _ => continue,
            },
            syn::FnArg::Receiver(r) => match self_ty {
                Some(t) => (
                    syn::Ident::new("self", r.self_token.span),
                    t.clone(),
                    r.span(),
                ),
                None => continue,
            },
        };
        let Some((_, path, seq)) = explode::struct_param(&ty) else {
            continue;
        };
        let generic = item
            .sig
            .generics
            .type_params()
            .chain(imp.iter().flat_map(|i| i.generics.type_params()))
            .any(|t| path.path.is_ident(&t.ident));
        // A struct of the user's (a name like `Cell` is std's unless the file derives it).
        let known = matches!(
            shape::shape_of(&syn::Type::Path(path.clone()), &[]),
            shape::Shape::Nested(_)
        ) || path
            .path
            .segments
            .last()
            .is_some_and(|s| derived().contains(&s.ident.to_string()));
        let receiver = matches!(arg, syn::FnArg::Receiver(_));
        let used = match seq {
            true => mentions(body.clone(), &name),
            false => {
                receiver
                    || reads_fields(body.clone(), &name)
                    || destructures(&item.block, &name)
                    || (mentions(body.clone(), &name)
                        && path
                            .path
                            .segments
                            .last()
                            .is_some_and(|s| derived().contains(&s.ident.to_string())))
            }
        };
        if generic || !known || !used {
            continue;
        }
        let mut p = path.path.clone();
        for s in p.segments.iter_mut() {
            s.arguments = syn::PathArguments::None;
        }
        if !out.iter().any(|(q, _)| q == &p) {
            out.push((p, span));
        }
    }
    // A struct result (`-> State`): its fields are outputs.
    if let syn::ReturnType::Type(_, t) = &item.sig.output {
        if let syn::Type::Path(p) = crate::parse::signature::ungroup(t) {
            let generic = item
                .sig
                .generics
                .type_params()
                .chain(imp.iter().flat_map(|i| i.generics.type_params()))
                .any(|g| p.path.is_ident(&g.ident));
            // Not a fallible result (`FitResult<f64>`, an alias of `Result`) nor an alias
            // the file defines (`type Real = f64;`).
            let last = p.path.segments.last().map(|l| l.ident.to_string());
            let last = last.unwrap_or_default();
            let user = matches!(shape::shape_of(t, &[]), shape::Shape::Nested(_))
                && !p.path.is_ident("Self")
                && !last.ends_with("Result")
                && !last.ends_with("Option")
                && !text.is_some_and(|text| defines_alias(text, &last));
            if user && !generic {
                let mut path = p.path.clone();
                for s in path.segments.iter_mut() {
                    s.arguments = syn::PathArguments::None;
                }
                if !out.iter().any(|(q, _)| q == &path) {
                    out.push((path, t.span()));
                }
            }
        }
    }
    // The struct results of calls taken apart (`let n = stepped(&s, dt);`).
    if let Some(text) = text {
        let returns = returned::returned(text);
        for (r, span) in returned::calls(&item.block, &returns) {
            if let returned::Returned::Struct(p) = r {
                let mut path = p.path.clone();
                for s in path.segments.iter_mut() {
                    s.arguments = syn::PathArguments::None;
                }
                if !out.iter().any(|(q, _)| q == &path) {
                    out.push((path, span));
                }
            }
        }
    }
    // The types of struct literals in the body (`let b = Body { .. };`), of blocks giving
    // one (`let e = { ..; Body { .. } };`, what an inlined helper returning one leaves), and
    // of lets typed with a struct the file derives `Differentiable` for (`let c: Body = b;`).
    let typed = |t: &syn::TypePath, name: &syn::Ident| {
        let last = t.path.segments.last().map(|s| s.ident.to_string());
        name.to_string().starts_with("__pd_rets") || last.is_some_and(|l| derived().contains(&l))
    };
    for (p, span) in struct_literals(&item.block, &typed) {
        if !out.iter().any(|(q, _)| q == &p) && p.get_ident().is_none_or(|i| i != "Self") {
            out.push((p, span));
        }
    }
    out
}

/// The paths (without generic arguments) of the structs that lets bind: of a literal
/// (`let x = S { .. };`), of a block's tail (`let x = { ..; S { .. } };`), or a type that
/// `typed` takes (`let x: S = ..;`).
fn struct_literals(
    block: &syn::Block,
    typed: &dyn Fn(&syn::TypePath, &syn::Ident) -> bool,
) -> Vec<(syn::Path, proc_macro2::Span)> {
    struct Find<'t>(
        Vec<(syn::Path, proc_macro2::Span)>,
        &'t dyn Fn(&syn::TypePath, &syn::Ident) -> bool,
    );
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            let annotated = match &l.pat {
                syn::Pat::Type(t) => match (&*t.pat, &*t.ty) {
                    (syn::Pat::Ident(id), syn::Type::Path(ty))
                        if ty.qself.is_none() && (self.1)(ty, &id.ident) =>
                    {
                        Some(ty.path.clone())
                    }
                    _ => None,
                },
                _ => None,
            };
            let found = annotated.or_else(|| match l.init.as_ref().map(|i| &*i.expr) {
                Some(syn::Expr::Struct(st)) => Some(st.path.clone()),
                Some(syn::Expr::Block(b)) => rewrite::struct_of_tail(&b.block),
                _ => None,
            });
            if let Some(mut p) = found {
                for s in p.segments.iter_mut() {
                    s.arguments = syn::PathArguments::None;
                }
                let span = p.span();
                self.0.push((p, span));
            }
            syn::visit::visit_local(self, l);
        }
    }
    let mut f = Find(Vec::new(), typed);
    syn::visit::Visit::visit_block(&mut f, block);
    f.0
}

/// Whether the function takes or returns tuples (split like structs, without layouts), or
/// takes apart the several results of a call (`let (m, v) = stats(x);`).
pub fn has_tuples(item: &syn::ItemFn, text: Option<&str>) -> bool {
    let returns = text.map(returned::returned).unwrap_or_default();
    if !returned::calls(&item.block, &returns).is_empty() {
        return true;
    }
    let tuple_param = item.sig.inputs.iter().any(|a| match a {
        syn::FnArg::Typed(pt) => explode::tuple_param(&pt.ty).is_some(),
        syn::FnArg::Receiver(_) => false,
    });
    let tuple_result = matches!(&item.sig.output, syn::ReturnType::Type(_, t)
        if matches!(crate::parse::signature::ungroup(t), syn::Type::Tuple(t) if t.elems.len() >= 2));
    tuple_param || tuple_result
}

/// Whether `block` takes struct `name` apart with a pattern (`let Params { k, .. } = p;`).
fn destructures(block: &syn::Block, name: &syn::Ident) -> bool {
    struct Find<'a> {
        name: &'a syn::Ident,
        found: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let (syn::Pat::Struct(_), Some(init)) = (&l.pat, &l.init) {
                let mut e = &*init.expr;
                while let syn::Expr::Reference(syn::ExprReference { expr, .. })
                | syn::Expr::Unary(syn::ExprUnary { expr, .. })
                | syn::Expr::Paren(syn::ExprParen { expr, .. }) = e
                {
                    e = expr;
                }
                if matches!(e, syn::Expr::Path(p) if p.path.is_ident(self.name)) {
                    self.found = true;
                }
            }
            syn::visit::visit_local(self, l);
        }
    }
    let mut f = Find { name, found: false };
    syn::visit::Visit::visit_block(&mut f, block);
    f.found
}

/// Whether `tokens` contain `name`.
fn mentions(tokens: TokenStream, name: &syn::Ident) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Group(g) => mentions(g.stream(), name),
        TokenTree::Ident(id) => id == *name,
        _ => false,
    })
}

/// Whether `tokens` contain `name.field` (not a method call `name.f(..)`).
fn reads_fields(tokens: TokenStream, name: &syn::Ident) -> bool {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    tts.iter().enumerate().any(|(i, t)| match t {
        TokenTree::Group(g) => reads_fields(g.stream(), name),
        TokenTree::Ident(id) if id == name => {
            let dot = matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '.');
            let field = matches!(tts.get(i + 2), Some(TokenTree::Ident(_)) | Some(TokenTree::Literal(_)));
            let call = matches!(tts.get(i + 3), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
            dot && field && !call
        }
        _ => false,
    })
}

/// The request for the layout of the first pending type; the others follow.
pub fn chase(
    krate: &syn::Path,
    args: &TokenStream,
    pending: &[(syn::Path, proc_macro2::Span)],
    layouts: &TokenStream,
    imp: Option<&syn::ItemImpl>,
    item: &TokenStream,
) -> TokenStream {
    let (first, span) = &pending[0];
    let first = respan(first.to_token_stream(), *span);
    let rest = pending.iter().map(|(p, _)| quote!(#p ;));
    let callback = quote_spanned!(*span=> #krate::__private::differentiate_resume);
    quote! {
        #first! { [#callback] {#args} {#(#rest)*} {#layouts} {#imp} {#item} }
    }
}

/// `tokens` with every token at `span` (so that a missing layout macro is reported at the
/// parameter's type).
pub(super) fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

/// The input of `differentiate_resume!`.
struct Resume {
    /// The struct's definition, then the layouts of the structs in its fields
    /// (`member => { .. }`).
    layout: TokenStream,
    args: TokenStream,
    pending: Vec<syn::Path>,
    /// Layouts received before: `path => { struct }`.
    known: TokenStream,
    /// For a method, the header of its impl block (`impl<T> Model<T> {}`).
    imp: Option<syn::ItemImpl>,
    item: TokenStream,
}

fn braced(input: ParseStream) -> syn::Result<TokenStream> {
    let content;
    syn::braced!(content in input);
    content.parse()
}

impl Parse for Resume {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        input.parse::<syn::Token![@]>()?;
        let tag: syn::Ident = input.parse()?;
        if tag != "layout" {
            return Err(syn::Error::new(
                tag.span(),
                "phidiff internal: expected `@layout`",
            ));
        }
        let layout = braced(input)?;
        let args = braced(input)?;
        let pending_tokens = braced(input)?;
        let pending = syn::parse::Parser::parse2(
            |s: ParseStream| {
                let mut v = Vec::new();
                while !s.is_empty() {
                    v.push(s.call(syn::Path::parse_mod_style)?);
                    s.parse::<syn::Token![;]>()?;
                }
                Ok(v)
            },
            pending_tokens,
        )?;
        let known = braced(input)?;
        let imp = braced(input)?;
        let imp = match imp.is_empty() {
            true => None,
            false => Some(syn::parse2(imp)?),
        };
        let item = braced(input)?;
        Ok(Resume {
            layout,
            args,
            pending,
            known,
            imp,
            item,
        })
    }
}

/// `path => { struct .. member => { struct .. } .. }` pairs: each struct under its path
/// (`model::Params`), the structs in its fields under the path and the members
/// (`model::Params.inner`, `model::Params.inner.deep`).
fn parse_known(tokens: TokenStream) -> syn::Result<HashMap<String, syn::ItemStruct>> {
    fn layout(
        s: ParseStream,
        key: &str,
        m: &mut HashMap<String, syn::ItemStruct>,
    ) -> syn::Result<()> {
        m.insert(key.to_string(), s.parse()?);
        while !s.is_empty() {
            let member: syn::Member = s.parse()?;
            s.parse::<syn::Token![=>]>()?;
            let content;
            syn::braced!(content in s);
            let key = format!("{key}.{}", explode::member_text(&member));
            layout(&content, &key, m)?;
        }
        Ok(())
    }
    syn::parse::Parser::parse2(
        |s: ParseStream| {
            let mut m = HashMap::new();
            while !s.is_empty() {
                let p = s.call(syn::Path::parse_mod_style)?;
                s.parse::<syn::Token![=>]>()?;
                let content;
                syn::braced!(content in s);
                let key = crate::lower::consts::path_names(&p);
                layout(&content, &key.join("::"), &mut m)?;
            }
            Ok(m)
        },
        tokens,
    )
}

/// `differentiate_resume!`: one more layout; the next request, or the derivatives.
pub fn resume(input: TokenStream, source: Option<SourceFile<'_>>) -> TokenStream {
    let r: Resume = match syn::parse2(input) {
        Ok(r) => r,
        Err(e) => return e.to_compile_error(),
    };
    let (head, rest) = match r.pending.split_first() {
        Some(x) => x,
        None => return quote!(compile_error!("phidiff internal: a layout nobody asked for");),
    };
    let layout = &r.layout;
    let mut known = r.known.clone();
    known.extend(quote!(#head => { #layout }));
    let item: syn::ItemFn = match syn::parse2(r.item.clone()) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let opts: Options = match syn::parse2(r.args.clone()) {
        Ok(o) => o,
        Err(e) => return e.to_compile_error(),
    };
    if !rest.is_empty() {
        let spans = needed(&item, r.imp.as_ref(), source.map(|s| s.text));
        let pending: Vec<(syn::Path, proc_macro2::Span)> = rest
            .iter()
            .map(|p| {
                let span = spans
                    .iter()
                    .find(|(q, _)| q == p)
                    .map_or_else(proc_macro2::Span::call_site, |(_, s)| *s);
                (p.clone(), span)
            })
            .collect();
        return chase(
            &opts.krate,
            &r.args,
            &pending,
            &known,
            r.imp.as_ref(),
            &r.item,
        );
    }
    let layouts = match parse_known(known) {
        Ok(l) => l,
        Err(e) => return e.to_compile_error(),
    };
    match derivatives(opts, &item, &layouts, r.imp.as_ref(), source) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

/// The derivatives of `item`, whose struct parameters have `layouts`.
pub fn derivatives(
    mut opts: Options,
    item: &syn::ItemFn,
    layouts: &HashMap<String, syn::ItemStruct>,
    imp: Option<&syn::ItemImpl>,
    source: Option<SourceFile<'_>>,
) -> syn::Result<TokenStream> {
    opts.resolve_names(&item.sig.ident);
    if opts.cuda {
        return Err(syn::Error::new_spanned(
            &item.sig.ident,
            "phidiff: `cuda` element functions take slices and scalars, not structs",
        ));
    }
    let returns = source
        .map(|s| returned::returned(s.text))
        .unwrap_or_default();
    let zero = returned::caller_zero(item, imp);
    let mut exploded = explode::explode(item, layouts, imp.map(|i| &*i.self_ty), &returns, &zero)?;
    if let Some(e) = source.and_then(|s| unannotated_callees(&exploded.calls, s.text)) {
        return Err(e);
    }
    if let Some(imp) = imp {
        // A method's exploded function is compiled with the impl's generic parameters as its
        // own (the compiler reads the float type from them), and emitted without them.
        let g = &mut exploded.inner.sig.generics;
        let mut params: syn::punctuated::Punctuated<syn::GenericParam, syn::Token![,]> =
            imp.generics.params.clone();
        params.extend(g.params.iter().cloned());
        g.params = params;
        if let Some(w) = &imp.generics.where_clause {
            g.make_where_clause()
                .predicates
                .extend(w.predicates.iter().cloned());
        }
    }
    let inner_name = &exploded.inner.sig.ident;
    let mut inner_opts = opts.clone();
    inner_opts.grad = false;
    inner_opts.primal = Some(exploded.inner.sig.ident.clone());
    inner_opts.forward = opts
        .forward
        .as_ref()
        .map(|_| format_ident!("{}_fwd", inner_name));
    inner_opts.reverse = opts
        .reverse
        .as_ref()
        .map(|_| format_ident!("{}_rev", inner_name));
    inner_opts.wrt = Some(active_parts(&exploded, opts.wrt.as_deref())?);
    for b in &mut inner_opts.batched {
        let suffix = if b.forward { "fwd" } else { "rev" };
        b.name = Some(format_ident!("{}_{}{}", inner_name, suffix, b.width));
    }
    let inner_tokens = crate::expand::derive_all(&inner_opts, &exploded.inner, source)?;
    let diag = crate::diagnostics::Diagnostics::default();
    let inner_sig =
        crate::parse::signature::read(&exploded.inner.sig, inner_opts.wrt.as_deref(), &diag);
    diag.check()?;
    let mut inner_sig = inner_sig.expect("the exploded signature was compiled");
    inner_sig.note_body(&exploded.inner.block);
    let w = wrap::Wrapper {
        item,
        params: &exploded.params,
        inner: &inner_sig,
        inner_generics: &item.sig.generics,
        method: imp.is_some(),
        outputs: &exploded.outputs,
        result: exploded.result.as_ref(),
        krate: &opts.krate,
    };
    let mut out = hide(inner_tokens, imp);
    if let (Some(name), Some(inner)) = (&opts.forward, &inner_opts.forward) {
        out.extend(w.forward(name, inner));
    }
    if let (Some(name), Some(inner)) = (&opts.reverse, &inner_opts.reverse) {
        out.extend(w.reverse(name, inner));
        if inner_sig.returns_float && exploded.outputs.is_empty() {
            let grad = format_ident!("{}_grad", item.sig.ident);
            out.extend(w.grad(&grad, name));
        }
    }
    for (b, inner) in opts.batched.iter().zip(&inner_opts.batched) {
        let (name, inner) = (b.name.as_ref(), inner.name.as_ref());
        let (name, inner) = (
            name.expect("names are resolved"),
            inner.expect("named above"),
        );
        out.extend(match b.forward {
            true => w.forward_batched(name, inner, b.width)?,
            false => w.reverse_batched(name, inner, b.width)?,
        });
    }
    Ok(out)
}

/// The exploded parameters that are active: the float ones among the plain parameters and
/// the fields of the structs (less the skipped and constant fields), restricted to `wrt`.
fn active_parts(
    exploded: &explode::Exploded,
    wrt: Option<&[syn::Ident]>,
) -> syn::Result<Vec<syn::Ident>> {
    let diag = crate::diagnostics::Diagnostics::default();
    let all = crate::parse::signature::read(&exploded.inner.sig, None, &diag);
    diag.check()?;
    let all = all.map(|s| s.params).unwrap_or_default();
    let floats: Vec<String> = all
        .iter()
        .filter(|p| p.active)
        .map(|p| p.name.to_string())
        .collect();
    let named = |n: &syn::Ident| wrt.is_none_or(|w| w.contains(n));
    let mut out = Vec::new();
    for p in &exploded.params {
        match p {
            explode::Param::Plain(pt) => {
                if let syn::Pat::Ident(pi) = &*pt.pat {
                    // A name in `wrt` that is not active is reported by the compiler.
                    let listed = wrt.is_some_and(|w| w.contains(&pi.ident));
                    if (floats.contains(&pi.ident.to_string()) && named(&pi.ident)) || listed {
                        out.push(pi.ident.clone());
                    }
                }
            }
            explode::Param::Struct { name, parts, .. } => {
                if !named(name) {
                    continue;
                }
                out.extend(
                    parts
                        .iter()
                        .filter(|q| q.shape.is_active() && floats.contains(&q.ident.to_string()))
                        .map(|q| q.ident.clone()),
                );
            }
        }
    }
    // A tuple result's outputs carry derivatives.
    out.extend((0..exploded.outputs.len()).map(|k| format_ident!("__out{}", k)));
    Ok(out)
}

/// The exploded function and its derivatives, hidden from the documentation; for a method,
/// associated functions of its impl, without the impl's generic parameters they were
/// compiled with.
fn hide(tokens: TokenStream, imp: Option<&syn::ItemImpl>) -> TokenStream {
    let Ok(file) = syn::parse2::<syn::File>(tokens.clone()) else {
        return tokens;
    };
    let outer: Vec<String> = imp
        .map(|i| {
            i.generics
                .params
                .iter()
                .map(|g| match g {
                    syn::GenericParam::Type(t) => t.ident.to_string(),
                    syn::GenericParam::Const(c) => c.ident.to_string(),
                    syn::GenericParam::Lifetime(l) => l.lifetime.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    file.items
        .into_iter()
        .map(|mut i| {
            if let syn::Item::Fn(f) = &mut i {
                f.sig.generics.params = std::mem::take(&mut f.sig.generics.params)
                    .into_iter()
                    .filter(|g| {
                        let name = match g {
                            syn::GenericParam::Type(t) => t.ident.to_string(),
                            syn::GenericParam::Const(c) => c.ident.to_string(),
                            syn::GenericParam::Lifetime(l) => l.lifetime.to_string(),
                        };
                        !outer.contains(&name)
                    })
                    .collect();
            }
            quote!(#[doc(hidden)] #i)
        })
        .collect()
}

/// Whether an item carries `#[differentiate(..)]` (by any path).
fn annotated(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident.to_string().starts_with("differentiate"))
    })
}

/// A phidiff error at each call with a struct argument whose callee the file shows without
/// `#[differentiate]`: its split function (which the call now calls) does not exist.
fn unannotated_callees(
    calls: &[(syn::Ident, proc_macro2::Span)],
    text: &str,
) -> Option<syn::Error> {
    if calls.is_empty() {
        return None;
    }
    let file = syn::parse_file(text).ok()?;
    // Each function of the file: name, annotated, why it is not inlined (plain ones).
    type Seen = (String, bool, Option<String>);
    let mut fns: Vec<Seen> = Vec::new();
    fn walk(items: &[syn::Item], fns: &mut Vec<Seen>) {
        for i in items {
            match i {
                syn::Item::Fn(f) => fns.push((
                    f.sig.ident.to_string(),
                    annotated(&f.attrs),
                    crate::desugar::inline::why_not_inlined(f),
                )),
                syn::Item::Impl(imp) => {
                    for it in &imp.items {
                        if let syn::ImplItem::Fn(f) = it {
                            fns.push((f.sig.ident.to_string(), annotated(&f.attrs), None));
                        }
                    }
                }
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        walk(items, fns);
                    }
                }
                _ => {}
            }
        }
    }
    walk(&file.items, &mut fns);
    let mut err: Option<syn::Error> = None;
    for (callee, span) in calls {
        let name = callee.to_string();
        let seen: Vec<&Seen> = fns.iter().filter(|(n, ..)| *n == name).collect();
        if seen.is_empty() || seen.iter().any(|(_, a, _)| *a) {
            continue;
        }
        let why = seen
            .iter()
            .find_map(|(.., why)| why.as_ref())
            .map(|why| format!(", and phidiff does not inline it ({why})"))
            .unwrap_or_default();
        let e = syn::Error::new(
            *span,
            format!(
                "phidiff: `{name}` takes a struct here{why}, so the derivative calls its split derivatives, which only `#[differentiate]` writes: annotate `{name}` with `#[differentiate(forward, reverse)]`"
            ),
        );
        match &mut err {
            Some(a) => a.combine(e),
            None => err = Some(e),
        }
    }
    err
}

/// A phidiff error at the parameter when the file shows its struct without the derive.
pub fn missing_derive(
    item: &syn::ItemFn,
    needed: &[(syn::Path, proc_macro2::Span)],
    text: &str,
) -> Option<syn::Error> {
    let file = syn::parse_file(text).ok()?;
    let mut structs = Vec::new();
    collect_structs(&file.items, &mut structs);
    let mut err: Option<syn::Error> = None;
    for (path, span) in needed {
        let name = &path.segments.last()?.ident;
        let defs: Vec<&syn::ItemStruct> = structs
            .iter()
            .copied()
            .filter(|s| s.ident == *name)
            .collect();
        if defs.is_empty() || defs.iter().any(|s| derives_differentiable(&s.attrs)) {
            continue;
        }
        let e = syn::Error::new(
            *span,
            format!(
                "phidiff: `{}` {} `{name}`, so `{name}` must derive `Differentiable`: add `#[derive(phidiff::Differentiable)]` to `struct {name}` (its float fields become active, the others constant)",
                item.sig.ident,
                match item.sig.receiver() {
                    Some(_) => "is a method of",
                    None => "uses the fields of",
                }
            ),
        );
        match &mut err {
            Some(a) => a.combine(e),
            None => err = Some(e),
        }
    }
    err
}

/// The names of the structs `text` derives `Differentiable` for.
/// Whether the file defines a type alias `name` (`type Real = f64;`), in any inline module.
fn defines_alias(text: &str, name: &str) -> bool {
    fn walk(items: &[syn::Item], name: &str) -> bool {
        items.iter().any(|i| match i {
            syn::Item::Type(t) => t.ident == name,
            syn::Item::Mod(m) => m
                .content
                .as_ref()
                .is_some_and(|(_, items)| walk(items, name)),
            _ => false,
        })
    }
    syn::parse_file(text).is_ok_and(|f| walk(&f.items, name))
}

pub(super) fn derived_structs(text: &str) -> Vec<String> {
    let Ok(file) = syn::parse_file(text) else {
        return Vec::new();
    };
    let mut structs = Vec::new();
    collect_structs(&file.items, &mut structs);
    structs
        .into_iter()
        .filter(|s| derives_differentiable(&s.attrs))
        .map(|s| s.ident.to_string())
        .collect()
}

/// The names of the structs `items` (a file's, with its inline modules) define without
/// deriving `Differentiable` and do not also define with it: configuration, not
/// differentiated.
pub(crate) fn underived_structs(items: &[syn::Item]) -> std::collections::HashSet<String> {
    let mut structs = Vec::new();
    collect_structs(items, &mut structs);
    let derived: std::collections::HashSet<String> = structs
        .iter()
        .filter(|s| derives_differentiable(&s.attrs))
        .map(|s| s.ident.to_string())
        .collect();
    structs
        .into_iter()
        .map(|s| s.ident.to_string())
        .filter(|n| !derived.contains(n))
        .collect()
}

fn collect_structs<'a>(items: &'a [syn::Item], out: &mut Vec<&'a syn::ItemStruct>) {
    for i in items {
        match i {
            syn::Item::Struct(s) => out.push(s),
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_structs(items, out);
                }
            }
            _ => {}
        }
    }
}

pub(crate) fn derives_differentiable(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.meta
                .to_token_stream()
                .to_string()
                .contains("Differentiable")
    })
}

//! Several results taken apart in the caller: `let (m, v) = stats(x);`, `let t = stats(x);`,
//! `let n = stepped(&s, dt);` (a struct result), `let n = s.stepped(dt);`, where the callee
//! is a differentiated function of the same file returning a tuple or a struct.
//!
//! Such a callee is compiled as its split function, which writes its results into
//! one-element (or array-length) buffers after its parameters (see `explode`). The caller
//! does the same before anything else is rewritten: it allocates those buffers, calls the
//! split function, and binds the pattern to a tuple or struct literal of the results,
//! which the tuple and struct-local rewrites then take apart like any other.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Type};

/// What a differentiated function of the file returns, when it has several results.
#[derive(Clone, Debug)]
pub enum Returned {
    /// A tuple: its element types.
    Tuple(Vec<Type>),
    /// A struct: its path as the callee writes it (`Self` replaced by the impl's type).
    Struct(syn::TypePath),
}

/// The differentiated functions and methods of the file `text` returning a tuple or a
/// struct of the file that derives `Differentiable`, by name.
pub fn returned(text: &str) -> HashMap<String, Returned> {
    let Ok(file) = syn::parse_file(text) else {
        return HashMap::new();
    };
    let derived = super::derived_structs(text);
    let mut out = HashMap::new();
    let mut note = |sig: &syn::Signature, attrs: &[syn::Attribute], self_ty: Option<&Type>| {
        if !super::annotated(attrs) {
            return;
        }
        let syn::ReturnType::Type(_, t) = &sig.output else {
            return;
        };
        let r = match crate::parse::signature::ungroup(t) {
            Type::Tuple(t) if t.elems.len() >= 2 => {
                Returned::Tuple(t.elems.iter().cloned().collect())
            }
            Type::Path(p) if p.qself.is_none() => {
                let p = match (p.path.is_ident("Self"), self_ty) {
                    (true, Some(Type::Path(s))) => s.clone(),
                    _ => p.clone(),
                };
                let last = p.path.segments.last().map(|s| s.ident.to_string());
                if !last.is_some_and(|l| derived.contains(&l)) {
                    return;
                }
                Returned::Struct(p)
            }
            _ => return,
        };
        out.insert(sig.ident.to_string(), r);
    };
    fn walk(
        items: &[syn::Item],
        note: &mut dyn FnMut(&syn::Signature, &[syn::Attribute], Option<&Type>),
    ) {
        for i in items {
            match i {
                syn::Item::Fn(f) => note(&f.sig, &f.attrs, None),
                syn::Item::Impl(imp) => {
                    for it in &imp.items {
                        if let syn::ImplItem::Fn(f) = it {
                            note(&f.sig, &f.attrs, Some(&imp.self_ty));
                        }
                    }
                }
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        walk(items, note);
                    }
                }
                _ => {}
            }
        }
    }
    walk(&file.items, &mut note);
    out
}

/// The callee of `e` (`stats(..)`, `path::stats(..)`, `s.stepped(..)`), by name.
fn callee(e: &Expr) -> Option<&syn::Ident> {
    match e {
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
            _ => None,
        },
        Expr::MethodCall(m) => Some(&m.method),
        _ => None,
    }
}

/// The `let`s of `block` whose value is a call of a function in `returns`, and the fields
/// taken of such calls (`stats(x).0`): the callee's result, with the span of the call.
pub fn calls<'r>(
    block: &syn::Block,
    returns: &'r HashMap<String, Returned>,
) -> Vec<(&'r Returned, Span)> {
    struct Find<'a, 'r> {
        returns: &'r HashMap<String, Returned>,
        out: &'a mut Vec<(&'r Returned, Span)>,
    }
    impl<'ast> syn::visit::Visit<'ast> for Find<'_, '_> {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let Some(init) = &l.init {
                if let Some(r) = callee(&init.expr).and_then(|c| self.returns.get(&c.to_string())) {
                    self.out.push((r, init.expr.span()));
                }
            }
            syn::visit::visit_local(self, l);
        }

        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            if let Some(r) = callee(&f.base).and_then(|c| self.returns.get(&c.to_string())) {
                self.out.push((r, f.base.span()));
            }
            syn::visit::visit_expr_field(self, f);
        }
    }
    let mut out = Vec::new();
    syn::visit::Visit::visit_block(
        &mut Find {
            returns,
            out: &mut out,
        },
        block,
    );
    out
}

/// Rewrites the `let`s of `block` taking apart a call of a function in `returns` (see the
/// module); `zero` is the caller's float zero for results of a generic type, `layouts` give
/// a struct result's fields. The callees, with the calls' spans.
pub fn take_apart(
    block: &mut syn::Block,
    returns: &HashMap<String, Returned>,
    layouts: &HashMap<String, syn::ItemStruct>,
    zero: &TokenStream,
) -> syn::Result<Vec<(syn::Ident, Span)>> {
    let mut t = TakeApart {
        returns,
        layouts,
        zero,
        fresh: 0,
        calls: Vec::new(),
        errors: Vec::new(),
        parallel: 0,
    };
    t.visit_block_mut(block);
    match t.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok(t.calls),
    }
}

struct TakeApart<'a> {
    returns: &'a HashMap<String, Returned>,
    layouts: &'a HashMap<String, syn::ItemStruct>,
    zero: &'a TokenStream,
    fresh: usize,
    calls: Vec<(syn::Ident, Span)>,
    errors: Vec<syn::Error>,
    /// Inside the closures of a rayon chain.
    parallel: usize,
}

impl TakeApart<'_> {
    /// The zero of a result of type `ty`.
    fn zero_of(&self, ty: &Type, span: Span) -> TokenStream {
        match crate::parse::signature::ungroup(ty) {
            Type::Path(p) if p.path.is_ident("f64") => quote_spanned!(span=> 0.0f64),
            Type::Path(p) if p.path.is_ident("f32") => quote_spanned!(span=> 0.0f32),
            _ => self.zero.clone(),
        }
    }

    /// The statements replacing `let pat = call;`, if `call` is one of a function in
    /// `returns`.
    fn rewrite(&mut self, local: &syn::Local) -> Option<Vec<syn::Stmt>> {
        let init = local.init.as_ref()?;
        if init.diverge.is_some() {
            return None;
        }
        let (mut stmts, value) = self.setup(&init.expr)?;
        let mut bind = local.clone();
        bind.init = Some(syn::LocalInit {
            eq_token: init.eq_token,
            expr: Box::new(value),
            diverge: None,
        });
        stmts.push(syn::Stmt::Local(bind));
        Some(stmts)
    }

    /// `call(..).k` (`.field`) in `e`, where it is evaluated whenever `e` is (not inside a
    /// branch, loop, closure or the right of `&&`/`||`): replaced by the result, its call
    /// added to `out`.
    fn hoist(&mut self, e: &mut Expr, out: &mut Vec<syn::Stmt>) {
        if let Expr::Field(f) = e {
            if let Some((stmts, value)) = self.setup(&f.base) {
                out.extend(stmts);
                // The element or field of the tuple or struct literal of the results.
                let picked = match (&value, &f.member) {
                    (Expr::Tuple(t), syn::Member::Unnamed(i)) => {
                        t.elems.iter().nth(i.index as usize).cloned()
                    }
                    (Expr::Struct(st), m) => st
                        .fields
                        .iter()
                        .find(|v| v.member == *m)
                        .map(|v| v.expr.clone()),
                    _ => None,
                };
                match picked {
                    Some(v) => *e = v,
                    None => *f.base = value,
                }
                return;
            }
        }
        match e {
            Expr::Binary(b) => {
                self.hoist(&mut b.left, out);
                if !matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) {
                    self.hoist(&mut b.right, out);
                }
            }
            Expr::Unary(u) => self.hoist(&mut u.expr, out),
            Expr::Paren(p) => self.hoist(&mut p.expr, out),
            Expr::Reference(r) => self.hoist(&mut r.expr, out),
            Expr::Cast(c) => self.hoist(&mut c.expr, out),
            Expr::Field(f) => self.hoist(&mut f.base, out),
            Expr::Index(ix) => {
                self.hoist(&mut ix.expr, out);
                self.hoist(&mut ix.index, out);
            }
            Expr::MethodCall(m) => {
                self.hoist(&mut m.receiver, out);
                for a in m.args.iter_mut() {
                    self.hoist(a, out);
                }
            }
            Expr::Call(c) => {
                for a in c.args.iter_mut() {
                    self.hoist(a, out);
                }
            }
            Expr::Tuple(t) => {
                for a in t.elems.iter_mut() {
                    self.hoist(a, out);
                }
            }
            Expr::Array(t) => {
                for a in t.elems.iter_mut() {
                    self.hoist(a, out);
                }
            }
            Expr::Assign(a) => self.hoist(&mut a.right, out),
            Expr::If(i) => self.hoist(&mut i.cond, out),
            Expr::Match(m) => self.hoist(&mut m.expr, out),
            Expr::Return(r) => {
                if let Some(v) = &mut r.expr {
                    self.hoist(v, out);
                }
            }
            _ => {}
        }
    }

    /// The statements calling the split function of `call` into result buffers, and the
    /// tuple or struct literal of the results, if `call` is one of a function in `returns`.
    fn setup(&mut self, call: &Expr) -> Option<(Vec<syn::Stmt>, Expr)> {
        let name = callee(call)?;
        let r = self.returns.get(&name.to_string())?.clone();
        let span = call.span();
        if self.parallel > 0 {
            self.errors.push(syn::Error::new(
                span,
                format!("phidiff cannot take apart the results of `{name}` inside a parallel loop yet (its split function writes them into buffers, which parallel iterations do not snapshot); call it in a serial loop, or split `{name}` into functions of one result each"),
            ));
            return None;
        }
        let n = self.fresh;
        self.fresh += 1;
        // The result buffers: one element per float, an array field's length.
        let mut bufs: Vec<(syn::Ident, TokenStream, bool)> = Vec::new();
        let value: Expr = match &r {
            Returned::Tuple(elems) => {
                for (k, t) in elems.iter().enumerate() {
                    let b = format_ident!("__res{}_{}", n, k, span = span);
                    bufs.push((b, self.zero_of(t, span), false));
                }
                let vals = bufs.iter().map(|(b, _, _)| quote!(#b[0]));
                syn::parse_quote_spanned!(span=> (#(#vals),*))
            }
            Returned::Struct(path) => {
                let key = super::explode::layout_key(path);
                let Some(layout) = self.layouts.get(&key) else {
                    self.errors.push(syn::Error::new(
                        span,
                        format!(
                            "phidiff internal: no layout of `{key}` for the result of `{name}`"
                        ),
                    ));
                    return Some((Vec::new(), syn::parse_quote!(())));
                };
                let mut fields = Vec::new();
                for (k, f) in layout.fields.iter().enumerate() {
                    let member = match &f.ident {
                        Some(i) => syn::Member::Named(i.clone()),
                        None => syn::Member::Unnamed(syn::Index::from(k)),
                    };
                    let b = format_ident!("__res{}_{}", n, k, span = span);
                    let (elem, len) = match crate::parse::signature::ungroup(&f.ty) {
                        Type::Array(a) => (&*a.elem, Some(a.len.clone())),
                        other => (other, None),
                    };
                    let z = self.zero_of(elem, span);
                    let (init, value) = match &len {
                        Some(len) => (quote!([#z; #len]), quote!(#b)),
                        None => (quote!([#z; 1]), quote!(#b[0])),
                    };
                    bufs.push((b, init, true));
                    fields.push(quote!(#member: #value));
                }
                let mut p = path.path.clone();
                for s in p.segments.iter_mut() {
                    s.arguments = syn::PathArguments::None;
                }
                syn::parse_quote_spanned!(span=> #p { #(#fields),* })
            }
        };
        let mut stmts: Vec<syn::Stmt> = Vec::new();
        for (b, z, whole) in &bufs {
            let init = match whole {
                true => z.clone(),
                false => quote!([#z; 1]),
            };
            stmts.push(syn::parse_quote_spanned!(span=> let mut #b = #init;));
        }
        let outs = bufs.iter().map(|(b, _, _)| quote_spanned!(span=> &mut #b));
        // The split function, called as its callers call it (struct arguments split by
        // the rewrite that follows).
        let call: Expr = match call {
            Expr::Call(c) => {
                let mut c = c.clone();
                if let Expr::Path(p) = &mut *c.func {
                    let last = p.path.segments.last_mut().expect("a callee");
                    last.ident =
                        format_ident!("__phidiff_{}", last.ident, span = last.ident.span());
                }
                c.args
                    .extend(outs.map(|o| -> Expr { syn::parse_quote!(#o) }));
                Expr::Call(c)
            }
            Expr::MethodCall(m) => {
                let mut m = m.clone();
                m.method = format_ident!("__phidiff_{}", m.method, span = m.method.span());
                m.args
                    .extend(outs.map(|o| -> Expr { syn::parse_quote!(#o) }));
                Expr::MethodCall(m)
            }
            _ => return None,
        };
        self.calls.push((name.clone(), span));
        stmts.push(syn::parse_quote_spanned!(span=> #call;));
        Some((stmts, value))
    }
}

impl VisitMut for TakeApart<'_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut stmts = Vec::new();
        for mut s in std::mem::take(&mut b.stmts) {
            if let syn::Stmt::Local(l) = &s {
                if let Some(binds) = self.rewrite(l) {
                    stmts.extend(binds);
                    continue;
                }
            }
            // `stats(x).0` where the statement evaluates it.
            let mut before = Vec::new();
            match &mut s {
                syn::Stmt::Local(l) => {
                    if let Some(init) = &mut l.init {
                        self.hoist(&mut init.expr, &mut before);
                    }
                }
                syn::Stmt::Expr(e, _) => self.hoist(e, &mut before),
                _ => {}
            }
            stmts.extend(before);
            self.visit_stmt_mut(&mut s);
            stmts.push(s);
        }
        b.stmts = stmts;
    }

    fn visit_expr_method_call_mut(&mut self, m: &mut syn::ExprMethodCall) {
        // A rayon chain (`xs.par_iter_mut().for_each(|x| ..)`): its closures are parallel.
        let parallel = m
            .receiver
            .to_token_stream()
            .into_iter()
            .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i.to_string().starts_with("par_") || *i == "into_par_iter"));
        self.visit_expr_mut(&mut m.receiver);
        self.parallel += usize::from(parallel);
        for a in m.args.iter_mut() {
            self.visit_expr_mut(a);
        }
        self.parallel -= usize::from(parallel);
    }
}

/// The caller's float zero for results of a generic type: `T::zero()` of its float type
/// parameter, else a literal of the float its signature names.
pub fn caller_zero(item: &syn::ItemFn, imp: Option<&syn::ItemImpl>) -> TokenStream {
    let generic = item
        .sig
        .generics
        .type_params()
        .chain(imp.iter().flat_map(|i| i.generics.type_params()))
        .find(|t| {
            t.bounds
                .iter()
                .any(|b| b.to_token_stream().to_string().contains("Float"))
        });
    if let Some(t) = generic {
        let t = &t.ident;
        return quote!(#t::zero());
    }
    let sig = item.sig.to_token_stream().to_string();
    match sig.contains("f32") && !sig.contains("f64") {
        true => quote!(0.0f32),
        false => quote!(0.0f64),
    }
}

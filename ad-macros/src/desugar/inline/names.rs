//! Names and tokens of inlined bodies (see [`super`]): what a body binds and reads, the
//! renaming of identifiers and constants, spans, and where the caller is in its file.

use super::fit::struct_type;
use crate::lower::consts::{self, Module};
use crate::missing_rule::{idents, mentions_differentiate};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::HashSet;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Expr, Type};

/// Whether two modules are one.
pub(super) fn same_module(a: &Module, b: &Module) -> bool {
    a.file == b.file && a.inline == b.inline
}

/// Whether `module` defines or imports `name` (an item the inlined body could not reach
/// from another module by the same name).
pub(super) fn defines(module: &Module, name: &str) -> bool {
    let item = module.items.iter().any(|it| {
        let ident = match it {
            syn::Item::Fn(f) => Some(&f.sig.ident),
            syn::Item::Const(k) => Some(&k.ident),
            syn::Item::Static(s) => Some(&s.ident),
            syn::Item::Struct(s) => Some(&s.ident),
            syn::Item::Enum(e) => Some(&e.ident),
            syn::Item::Mod(m) => Some(&m.ident),
            syn::Item::Type(t) => Some(&t.ident),
            syn::Item::Trait(t) => Some(&t.ident),
            _ => None,
        };
        ident.is_some_and(|i| i == name)
    });
    item || consts::imports(&module.items)
        .iter()
        .any(|(n, _)| n == name)
}

/// `block` with each path expression `name` (a single identifier) renamed `to`.
pub(super) fn rename_path(block: &mut syn::Block, name: &str, to: &syn::Ident) {
    let mut r = Rename { name, to };
    r.visit_block_mut(block);
}

pub(super) fn rename_path_expr(e: &mut Expr, name: &str, to: &syn::Ident) {
    let mut r = Rename { name, to };
    r.visit_expr_mut(e);
}

pub(super) struct Rename<'a> {
    name: &'a str,
    to: &'a syn::Ident,
}

impl VisitMut for Rename<'_> {
    fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
        if p.qself.is_none() && p.path.is_ident(self.name) {
            let span = p.path.segments[0].ident.span();
            p.path.segments[0].ident = syn::Ident::new(&self.to.to_string(), span);
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = replace_ident(m.tokens.clone(), self.name, &self.to.to_token_stream());
    }
}

/// The names `f` binds: its parameters, and every name a pattern or an item in its body
/// binds (wherever it stands: a conservative set for the capture test).
pub(super) fn bound_names(f: &syn::ItemFn) -> HashSet<String> {
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
pub(super) fn free_names(helper: &syn::ItemFn, body: &syn::Block) -> HashSet<String> {
    struct Used(HashSet<String>);
    impl<'a> Visit<'a> for Used {
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            // A name, or the first segment of a path (`phys::G`); a method's receiver
            // `self` alone is no item (`self::G` is).
            if let (None, Some(first)) = (&p.qself, p.path.segments.first()) {
                if !(first.ident == "self" && p.path.segments.len() == 1) {
                    self.0.insert(first.ident.to_string());
                }
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
pub(super) fn replace_ident(tokens: TokenStream, from: &str, to: &TokenStream) -> TokenStream {
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

/// The inline modules from the file's top to the module that holds the differentiated
/// function or method `name`; `None` unless exactly one module does.
pub(super) fn caller_path(items: &[syn::Item], name: &str) -> Option<Vec<String>> {
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
    fn collect(
        items: &[syn::Item],
        name: &str,
        at: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if holds(items, name) {
            found.push(at.clone());
        }
        for it in items {
            if let syn::Item::Mod(m) = it {
                if let Some((_, inner)) = &m.content {
                    at.push(m.ident.to_string());
                    collect(inner, name, at, found);
                    at.pop();
                }
            }
        }
    }
    let mut found = Vec::new();
    collect(items, name, &mut Vec::new(), &mut found);
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// `tokens` with every token, at any depth, at `span`.
pub(super) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
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

/// The names pattern `p` binds.
pub(super) fn pattern_names(p: &syn::Pat) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'a> Visit<'a> for Names {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut v = Names(Vec::new());
    v.visit_pat(p);
    v.0
}

/// The structs `items` define, with their inline modules', by name.
pub(super) fn file_structs(
    items: &[syn::Item],
) -> std::collections::HashMap<String, syn::ItemStruct> {
    let mut out = std::collections::HashMap::new();
    for it in items {
        match it {
            syn::Item::Struct(s) => {
                out.insert(s.ident.to_string(), s.clone());
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    out.extend(file_structs(inner));
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether `t` is no buffer (a slice, an array, a `Vec`): a number behind `&mut`.
pub(super) fn is_number(t: &Type) -> bool {
    match t {
        Type::Slice(_) | Type::Array(_) => false,
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident != "Vec"),
        _ => false,
    }
}

/// `block` (the body of `helper`) with each `&mut` slice parameter passed on by name
/// (`solve(a, b, x)`) passed as `&mut x[..]`: inlined, the parameter is a local view,
/// which a call takes mutably only when it says so.
pub(super) fn reborrow_mut_params(helper: &syn::ItemFn, block: &mut syn::Block) {
    let names: Vec<syn::Ident> = helper
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => match (&*pt.pat, &*pt.ty) {
                (syn::Pat::Ident(id), Type::Reference(r))
                    if r.mutability.is_some()
                        && struct_type(&pt.ty).is_none()
                        && !is_number(&r.elem) =>
                {
                    Some(id.ident.clone())
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    if names.is_empty() {
        return;
    }
    struct Reborrow<'a>(&'a [syn::Ident]);
    impl Reborrow<'_> {
        fn args(&self, args: &mut syn::punctuated::Punctuated<Expr, syn::Token![,]>) {
            for a in args.iter_mut() {
                if let Expr::Path(p) = a {
                    if let Some(id) = p.path.get_ident().filter(|i| self.0.contains(i)) {
                        let id = id.clone();
                        *a = syn::parse_quote_spanned!(id.span()=> &mut #id[..]);
                    }
                }
            }
        }
    }
    impl VisitMut for Reborrow<'_> {
        fn visit_expr_call_mut(&mut self, c: &mut syn::ExprCall) {
            syn::visit_mut::visit_expr_call_mut(self, c);
            self.args(&mut c.args);
        }
    }
    Reborrow(&names).visit_block_mut(block);
}

/// `block` with the parameter `param: &mut f64` read and written through `copy`, a local
/// holding its value: `*param` and a method's receiver `param.sin()` are `copy`, and
/// `param` passed on (to a helper taking `&mut f64` or `&f64`) is `&mut copy`; not where a pattern binds another `param` (a `let`, a closure's
/// or a `for` loop's pattern, a `match` arm, `if let`/`while let`).
pub(super) fn through_copy(block: &mut syn::Block, param: &syn::Ident, copy: &syn::Ident) {
    struct Through<'a>(&'a syn::Ident, &'a syn::Ident);
    impl Through<'_> {
        fn binds(&self, pat: &syn::Pat) -> bool {
            struct Binds<'a>(&'a syn::Ident, bool);
            impl<'a> syn::visit::Visit<'a> for Binds<'_> {
                fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
                    self.1 |= p.ident == *self.0;
                    syn::visit::visit_pat_ident(self, p);
                }
            }
            let mut b = Binds(self.0, false);
            syn::visit::Visit::visit_pat(&mut b, pat);
            b.1
        }
    }
    impl VisitMut for Through<'_> {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            for stmt in &mut b.stmts {
                match stmt {
                    syn::Stmt::Local(l) => {
                        if let Some(init) = &mut l.init {
                            // `let v = acc;`: a helper's `&f64` parameter, inlined before
                            // (a shared borrow of a number reads as its value).
                            if matches!(&*init.expr, Expr::Path(p) if p.path.is_ident(self.0)) {
                                let copy = self.1;
                                *init.expr = syn::parse_quote_spanned!(copy.span()=> #copy);
                            }
                            self.visit_expr_mut(&mut init.expr);
                            if let Some((_, d)) = &mut init.diverge {
                                self.visit_expr_mut(d);
                            }
                        }
                        if self.binds(&l.pat) {
                            // Another `param` from here to the block's end.
                            return;
                        }
                    }
                    other => self.visit_stmt_mut(other),
                }
            }
        }

        fn visit_expr_mut(&mut self, e: &mut Expr) {
            let (param, copy) = (self.0, self.1);
            match e {
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                    if let Expr::Path(p) = &*u.expr {
                        if p.path.is_ident(param) {
                            *e = syn::parse_quote_spanned!(param.span()=> #copy);
                            return;
                        }
                    }
                }
                Expr::Path(p) if p.path.is_ident(param) => {
                    *e = syn::parse_quote_spanned!(param.span()=> &mut #copy);
                    return;
                }
                // `acc.sin()`: a method of the number.
                Expr::MethodCall(m) if matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident(param)) =>
                {
                    *m.receiver = syn::parse_quote_spanned!(param.span()=> #copy);
                    for a in m.args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                    return;
                }
                Expr::Closure(c) if c.inputs.iter().any(|p| self.binds(p)) => return,
                Expr::ForLoop(f) if self.binds(&f.pat) => {
                    self.visit_expr_mut(&mut f.expr);
                    return;
                }
                Expr::Match(m) => {
                    self.visit_expr_mut(&mut m.expr);
                    for arm in &mut m.arms {
                        if !self.binds(&arm.pat) {
                            self.visit_arm_mut(arm);
                        }
                    }
                    return;
                }
                Expr::If(i) => {
                    if let Expr::Let(l) = &mut *i.cond {
                        if self.binds(&l.pat) {
                            self.visit_expr_mut(&mut l.expr);
                            if let Some((_, e)) = &mut i.else_branch {
                                self.visit_expr_mut(e);
                            }
                            return;
                        }
                    }
                }
                Expr::While(w) => {
                    if let Expr::Let(l) = &mut *w.cond {
                        if self.binds(&l.pat) {
                            self.visit_expr_mut(&mut l.expr);
                            return;
                        }
                    }
                }
                _ => {}
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    Through(param, copy).visit_block_mut(block);
}

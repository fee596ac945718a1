//! A function taking structs → the same function taking their fields (scalar replacement of
//! aggregates at the source): `fn f(p: &Params, x: &[f64])` becomes
//! `fn __phidiff_f(p__k: &f64, p__w: &Vec<f64>, p__n: usize, x: &[f64])`, with `p.k` read
//! as `(*p__k)`, `p.w[i]` as `p__w[i]`, `p.n` as `p__n`. The compiler then sees only the
//! scalars and buffers it knows; `wrap` writes the functions the user calls, which take the
//! structs and pass their fields.

use super::shape::{is_skipped, shape_of, Shape};
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::collections::{HashMap, HashSet};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Ident, Type};

/// How a struct parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `p: &S`
    Ref,
    /// `s: &mut S`
    Mut,
    /// `p: S`
    Value,
}

/// One field of a struct parameter, as a parameter of the exploded function.
#[derive(Clone)]
pub struct Part {
    pub ident: Ident,
    pub member: syn::Member,
    pub shape: Shape,
    /// Its type as a parameter of the exploded function (`&f64`, `&Vec<f64>`, `usize`).
    pub ty: Type,
}

impl Part {
    /// Whether the exploded function holds this field through a reference.
    fn by_reference(&self, form: Form) -> bool {
        form != Form::Value && self.shape != Shape::Int
    }
}

/// A parameter of the user's function.
#[derive(Clone)]
pub enum Param {
    Plain(syn::PatType),
    Struct {
        name: Ident,
        /// The parameter's type as written (`&Params<T>`).
        ty: Type,
        /// The struct's type (`Params<T>`).
        struct_ty: Type,
        form: Form,
        mutable: bool,
        parts: Vec<Part>,
    },
}

pub struct Exploded {
    pub inner: syn::ItemFn,
    pub params: Vec<Param>,
}

/// The struct type a parameter's type names (through one reference), with its form.
pub fn struct_param(ty: &Type) -> Option<(Form, &syn::TypePath)> {
    let (form, inner) = match crate::parse::signature::ungroup(ty) {
        Type::Reference(r) if r.mutability.is_some() => (Form::Mut, &*r.elem),
        Type::Reference(r) => (Form::Ref, &*r.elem),
        other => (Form::Value, other),
    };
    match crate::parse::signature::ungroup(inner) {
        Type::Path(p) => Some((form, p)),
        _ => None,
    }
}

/// The key of a struct type in the layouts: its path without generic arguments.
pub fn layout_key(p: &syn::TypePath) -> String {
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    segs.join("::")
}

/// Explodes the struct parameters of `item` whose layouts are in `layouts`.
pub fn explode(
    item: &syn::ItemFn,
    layouts: &HashMap<String, syn::ItemStruct>,
    self_ty: Option<&Type>,
) -> syn::Result<Exploded> {
    let mut params = Vec::new();
    let mut roots = HashMap::new();
    for arg in &item.sig.inputs {
        // A receiver is a parameter `self` of the impl's type.
        let (name, ty, mutable): (Ident, Type, bool) = match arg {
            syn::FnArg::Receiver(r) => {
                let Some(self_ty) = self_ty else {
                    return Err(syn::Error::new_spanned(
                        arg,
                        "phidiff: `self` outside an impl block",
                    ));
                };
                let ty = match (&r.reference, &r.mutability) {
                    (Some((_, lt)), Some(_)) => syn::parse_quote!(& #lt mut #self_ty),
                    (Some((_, lt)), None) => syn::parse_quote!(& #lt #self_ty),
                    (None, _) => self_ty.clone(),
                };
                let mutable = r.reference.is_none() && r.mutability.is_some();
                (Ident::new("self", r.self_token.span), ty, mutable)
            }
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) => (pi.ident.clone(), (*pt.ty).clone(), pi.mutability.is_some()),
                _ => {
                    params.push(Param::Plain(pt.clone()));
                    continue;
                }
            },
        };
        let found = struct_param(&ty)
            .and_then(|(form, p)| layouts.get(&layout_key(p)).map(|l| (form, p.clone(), l)));
        let Some((form, path, layout)) = found else {
            match arg {
                syn::FnArg::Typed(pt) => params.push(Param::Plain(pt.clone())),
                syn::FnArg::Receiver(_) => {
                    return Err(syn::Error::new_spanned(
                        arg,
                        "phidiff: a method's `self` is split into its fields, which needs the layout of its type",
                    ))
                }
            }
            continue;
        };
        let fields = fields_of(layout, &path)?;
        let lifetime = match crate::parse::signature::ungroup(&ty) {
            Type::Reference(r) => r.lifetime.clone(),
            _ => None,
        };
        let parts: Vec<Part> = fields
            .into_iter()
            .map(|(member, shape, fty)| {
                let ident = format_ident!("{}__{}", name, member_text(&member), span = name.span());
                let ty: Type = match (form, &shape) {
                    (_, Shape::Int) | (Form::Value, _) => fty,
                    (Form::Ref, _) => syn::parse_quote!(& #lifetime #fty),
                    (Form::Mut, _) => syn::parse_quote!(& #lifetime mut #fty),
                };
                Part { ident, member, shape, ty }
            })
            .collect();
        roots.insert(name.to_string(), (form, parts.clone(), layout.ident.to_string()));
        let (ty, struct_ty) = match arg {
            // The wrappers are methods: `self: &Self`, and `Self` for the struct.
            syn::FnArg::Receiver(_) => {
                let ty = match form {
                    Form::Ref => syn::parse_quote!(&Self),
                    Form::Mut => syn::parse_quote!(&mut Self),
                    Form::Value => syn::parse_quote!(Self),
                };
                (ty, syn::parse_quote!(Self))
            }
            syn::FnArg::Typed(_) => (ty, Type::Path(path)),
        };
        params.push(Param::Struct {
            name,
            ty,
            struct_ty,
            form,
            mutable,
            parts,
        });
    }
    let mut rewriter = Rewriter {
        roots: &roots,
        used: HashSet::new(),
        errors: Vec::new(),
    };
    let mut block = (*item.block).clone();
    rewriter.visit_block_mut(&mut block);
    if let Some(e) = rewriter.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        return Err(e);
    }
    let used = rewriter.used;
    let mut inputs = syn::punctuated::Punctuated::<syn::FnArg, syn::Token![,]>::new();
    for p in &mut params {
        match p {
            Param::Plain(pt) => inputs.push(syn::FnArg::Typed(pt.clone())),
            Param::Struct { parts, mutable, .. } => {
                // Fields the compiler cannot hold as parameters are passed only when used
                // (and then rejected above); constant fields only when used.
                parts.retain(|part| match part.shape {
                    Shape::Float | Shape::Int => true,
                    Shape::Seq { .. } if part.shape.is_float_buffer() => true,
                    _ => used.contains(&part.ident.to_string()),
                });
                for part in parts.iter() {
                    let (id, ty) = (&part.ident, &part.ty);
                    let m = (*mutable).then(|| quote!(mut));
                    inputs.push(syn::parse_quote!(#m #id: #ty));
                }
            }
        }
    }
    let mut inner = item.clone();
    if let Some(t) = self_ty {
        // The exploded function is not a method: `Self` is the impl's type.
        block = syn::parse2(replace_self(block.to_token_stream(), t))?;
    }
    inner.attrs.clear();
    inner.sig.ident = format_ident!("__phidiff_{}", item.sig.ident, span = item.sig.ident.span());
    inner.sig.inputs = inputs;
    inner.block = Box::new(block);
    Ok(Exploded { inner, params })
}

fn member_text(m: &syn::Member) -> String {
    match m {
        syn::Member::Named(i) => i.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}

/// The fields of `layout` as used at type `path` (the struct's generic parameters replaced
/// by the arguments `path` gives): member, shape, type.
fn fields_of(
    layout: &syn::ItemStruct,
    path: &syn::TypePath,
) -> syn::Result<Vec<(syn::Member, Shape, Type)>> {
    let floats: Vec<Ident> = layout
        .generics
        .type_params()
        .map(|t| t.ident.clone())
        .collect();
    let params: Vec<Ident> = layout
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Type(t) => Some(t.ident.clone()),
            syn::GenericParam::Const(c) => Some(c.ident.clone()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect();
    let args: Vec<TokenStream> = match &path.path.segments.last().map(|s| &s.arguments) {
        Some(syn::PathArguments::AngleBracketed(a)) => a
            .args
            .iter()
            .filter(|a| !matches!(a, syn::GenericArgument::Lifetime(_)))
            .map(|a| a.to_token_stream())
            .collect(),
        _ => Vec::new(),
    };
    let map: HashMap<String, TokenStream> = params
        .iter()
        .zip(&args)
        .map(|(p, a)| (p.to_string(), a.clone()))
        .collect();
    let mut out = Vec::new();
    for (n, f) in layout.fields.iter().enumerate() {
        let member = match &f.ident {
            Some(i) => syn::Member::Named(i.clone()),
            None => syn::Member::Unnamed(syn::Index::from(n)),
        };
        let shape = if is_skipped(&f.attrs)? {
            Shape::Constant
        } else {
            shape_of(&f.ty, &floats)
        };
        let ty: Type = syn::parse2(substitute(f.ty.to_token_stream(), &map))?;
        out.push((member, shape, ty));
    }
    Ok(out)
}

/// `tokens` with `Self` replaced by `ty`.
fn replace_self(tokens: TokenStream, ty: &Type) -> TokenStream {
    let mut map = HashMap::new();
    map.insert("Self".to_string(), ty.to_token_stream());
    substitute(tokens, &map)
}

/// `tokens` with each identifier in `map` replaced by its tokens.
fn substitute(tokens: TokenStream, map: &HashMap<String, TokenStream>) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|t| match t {
            TokenTree::Ident(i) => match map.get(&i.to_string()) {
                Some(r) => r.clone(),
                None => TokenTree::Ident(i).into_token_stream(),
            },
            TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), substitute(g.stream(), map));
                ng.set_span(g.span());
                TokenTree::Group(ng).into_token_stream()
            }
            other => other.into_token_stream(),
        })
        .collect()
}

/// Rewrites field accesses of struct parameters into their exploded parameters.
struct Rewriter<'a> {
    /// Struct parameter name → (form, fields, struct name).
    roots: &'a HashMap<String, (Form, Vec<Part>, String)>,
    /// The exploded parameters the body uses.
    used: HashSet<String>,
    errors: Vec<syn::Error>,
}

/// A field access `p.a` (or `(*p).a`) on a struct parameter: root, members.
fn chain(e: &Expr) -> Option<(Ident, Vec<syn::Member>)> {
    match e {
        Expr::Field(f) => {
            let (root, mut members) =
                chain(&f.base).or_else(|| root_of(&f.base).map(|r| (r, vec![])))?;
            members.push(f.member.clone());
            Some((root, members))
        }
        _ => None,
    }
}

fn is_compound_assign(op: &syn::BinOp) -> bool {
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

fn root_of(e: &Expr) -> Option<Ident> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.clone())
        }
        Expr::Paren(p) => root_of(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => root_of(&u.expr),
        _ => None,
    }
}

/// Where a field access stands.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    /// A value or a place (`p.k * 2.0`, `s.k = ..`).
    Value,
    /// Indexed or the receiver of a method (`p.w[i]`, `p.w.len()`): auto-deref applies.
    Receiver,
    /// Borrowed: `&p.w` (`mutable`: `&mut s.w`).
    Borrow { mutable: bool },
    /// Assigned: `s.k = ..`, `s.k += ..`.
    Place,
}

impl Rewriter<'_> {
    /// The replacement of field access `e`, if it is one on a struct parameter (an empty
    /// expression where an error was reported instead, so nothing below it is visited).
    fn replace(&mut self, e: &Expr, ctx: Context) -> Option<Expr> {
        let (root, members) = chain(e)?;
        let (form, parts, struct_name) = self.roots.get(&root.to_string())?;
        let span = e.span();
        let failed = Some(Expr::Verbatim(quote!()));
        let Some(part) = parts.iter().find(|p| p.member == members[0]) else {
            self.errors.push(syn::Error::new_spanned(
                e,
                format!(
                    "phidiff: `{struct_name}` has no field `{}`",
                    member_text(&members[0])
                ),
            ));
            return failed;
        };
        match &part.shape {
            Shape::Nested(_) => {
                self.errors.push(syn::Error::new_spanned(
                    e,
                    format!(
                        "phidiff cannot differentiate `{}` here yet: fields of a struct inside a struct are not split; pass `{}` as its own parameter",
                        quote!(#e).to_string().replace(' ', ""),
                        member_text(&members[0])
                    ),
                ));
                return failed;
            }
            Shape::Seq { .. } if !part.shape.is_float_buffer() => {
                self.errors.push(syn::Error::new_spanned(
                    e,
                    format!(
                        "phidiff cannot differentiate `{}` here yet: a `Vec` or array of structs inside a struct is not split; pass it as its own parameter",
                        quote!(#e).to_string().replace(' ', "")
                    ),
                ));
                return failed;
            }
            Shape::Unsupported(why) => {
                self.errors.push(syn::Error::new_spanned(
                    e,
                    format!(
                        "phidiff: field `{}` of `{struct_name}`: {why}",
                        member_text(&members[0])
                    ),
                ));
                return failed;
            }
            _ => {}
        }
        if members.len() > 1 {
            self.errors.push(syn::Error::new_spanned(
                e,
                format!(
                    "phidiff: field `{}` of `{struct_name}` has no fields",
                    member_text(&members[0])
                ),
            ));
            return failed;
        }
        self.used.insert(part.ident.to_string());
        let id = Ident::new(&part.ident.to_string(), span);
        let by_ref = part.by_reference(*form);
        let tokens = match ctx {
            Context::Borrow { mutable } => match (by_ref, mutable, form) {
                (true, true, Form::Ref) => {
                    self.errors.push(syn::Error::new(
                        span,
                        format!("phidiff: `{root}` is borrowed immutably (`&{struct_name}`), its fields cannot be borrowed mutably"),
                    ));
                    return failed;
                }
                (true, true, _) | (true, false, Form::Ref) => quote_spanned!(span=> #id),
                (true, false, _) => quote_spanned!(span=> &*#id),
                (false, true, _) => quote_spanned!(span=> &mut #id),
                (false, false, _) => quote_spanned!(span=> &#id),
            },
            Context::Receiver => quote_spanned!(span=> #id),
            Context::Place if by_ref => quote_spanned!(span=> *#id),
            Context::Place => quote_spanned!(span=> #id),
            Context::Value if by_ref => quote_spanned!(span=> (*#id)),
            Context::Value => quote_spanned!(span=> #id),
        };
        Some(syn::parse2(tokens).expect("an exploded field is an expression"))
    }

    /// Field accesses inside a macro's tokens (`vec![p.k; n]`, `assert!(p.n > 0)`).
    fn rewrite_tokens(&mut self, tokens: TokenStream) -> TokenStream {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < tts.len() {
            let after_dot =
                i > 0 && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
            if let (TokenTree::Ident(root), false) = (&tts[i], after_dot) {
                if self.roots.contains_key(&root.to_string()) {
                    if let (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(field))) =
                        (tts.get(i + 1), tts.get(i + 2))
                    {
                        let is_call = matches!(tts.get(i + 3), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                        if dot.as_char() == '.' && !is_call {
                            let e: Expr =
                                syn::parse2(quote!(#root.#field)).expect("a field access");
                            if let Some(r) = self.replace(&e, Context::Value) {
                                out.push(TokenTree::Group(proc_macro2::Group::new(
                                    proc_macro2::Delimiter::Parenthesis,
                                    r.into_token_stream(),
                                )));
                                i += 3;
                                continue;
                            }
                        }
                    }
                }
            }
            out.push(match &tts[i] {
                TokenTree::Group(g) => {
                    let mut ng =
                        proc_macro2::Group::new(g.delimiter(), self.rewrite_tokens(g.stream()));
                    ng.set_span(g.span());
                    TokenTree::Group(ng)
                }
                t => t.clone(),
            });
            i += 1;
        }
        out.into_iter().collect()
    }

    fn whole_use(&mut self, name: &Ident) {
        self.errors.push(syn::Error::new(
            name.span(),
            format!(
                "phidiff cannot differentiate a use of the struct `{name}` as a whole here yet (passing it to a call, calling its methods, copying or matching it): use its fields (`{name}.field`), or pass them to the call"
            ),
        ));
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        let replaced = match e {
            Expr::Reference(r) => {
                let ctx = Context::Borrow {
                    mutable: r.mutability.is_some(),
                };
                self.replace(&r.expr, ctx)
            }
            Expr::Field(_) => self.replace(e, Context::Value),
            _ => None,
        };
        if let Some(r) = replaced {
            *e = r;
            return;
        }
        match e {
            Expr::Assign(a) => {
                if let Some(r) = self.replace(&a.left, Context::Place) {
                    *a.left = r;
                } else {
                    self.visit_expr_mut(&mut a.left);
                }
                self.visit_expr_mut(&mut a.right);
            }
            Expr::Binary(b) if is_compound_assign(&b.op) => {
                if let Some(r) = self.replace(&b.left, Context::Place) {
                    *b.left = r;
                } else {
                    self.visit_expr_mut(&mut b.left);
                }
                self.visit_expr_mut(&mut b.right);
            }
            Expr::Index(ix) => {
                if let Some(r) = self.replace(&ix.expr, Context::Receiver) {
                    *ix.expr = r;
                } else {
                    self.visit_expr_mut(&mut ix.expr);
                }
                self.visit_expr_mut(&mut ix.index);
            }
            Expr::MethodCall(m) => {
                if let Some(r) = self.replace(&m.receiver, Context::Receiver) {
                    *m.receiver = r;
                } else {
                    self.visit_expr_mut(&mut m.receiver);
                }
                for a in m.args.iter_mut() {
                    self.visit_expr_mut(a);
                }
            }
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let id = &p.path.segments[0].ident;
                if self.roots.contains_key(&id.to_string()) {
                    let id = id.clone();
                    self.whole_use(&id);
                }
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.rewrite_tokens(m.tokens.clone());
    }
}

//! The body of a function taking structs, rewritten for its exploded parameters (see
//! `explode`): `p.k` → `(*p__k)`, `s.k = v` → `*s__k = v`, `p.w[i]` → `p__w[i]`; for a
//! slice of structs `bodies[i].pos[d]` → `bodies__pos[i][d]`, `bodies.len()` →
//! `bodies__pos.len()`, and `for b in bodies.iter_mut() { b.vel[0] .. }` → an index loop
//! `for __k_b in 0..bodies__pos.len() { bodies__vel[__k_b][0] .. }`.

mod values;
mod walks;

pub use values::struct_of_tail;

use super::explode::{member_text, Form, Part};
use super::shape::Shape;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Ident};

/// A name the body reads fields through.
#[derive(Clone)]
pub enum Root {
    /// A struct parameter.
    Struct {
        form: Form,
        /// The path its methods are called by (`Params`, `Self`).
        path: TokenStream,
        parts: Vec<Part>,
        /// Every field of the struct (for messages about the ones not passed).
        all: Vec<(syn::Member, Shape)>,
        struct_name: String,
        /// The members from its parameter to it (`[inner]` for the root `p__inner` of
        /// `p.inner`): the `at` of its own fields among `parts`, which also holds the fields
        /// of the structs inside it.
        at: Vec<syn::Member>,
    },
    /// A slice, array or `Vec` of structs: each field a buffer.
    Seq {
        form: Form,
        parts: Vec<Part>,
        all: Vec<(syn::Member, Shape)>,
        struct_name: String,
        at: Vec<syn::Member>,
    },
    /// An element of a slice of structs: `b` of `for b in bodies.iter()` or of
    /// `let b = &bodies[i];`, at index `index`.
    Elem { seq: String, index: Expr },
}

/// Rewrites `block` for the exploded parameters of `roots`; the functions and methods it
/// now calls split (`g` of `__phidiff_g(..)`), with the calls' spans.
pub fn rewrite(
    block: &mut syn::Block,
    roots: HashMap<String, Root>,
    layouts: &HashMap<String, syn::ItemStruct>,
) -> syn::Result<Vec<(Ident, proc_macro2::Span)>> {
    Nest { roots: &roots }.visit_block_mut(block);
    let mut r = Rewriter {
        roots,
        layouts,
        errors: Vec::new(),
        fresh: 0,
        calls: Vec::new(),
        locals: Default::default(),
    };
    r.visit_block_mut(block);
    match r.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok(r.calls),
    }
}

/// `p.inner` → `p__inner` where `p.inner` is a struct, or a `Vec` or array of structs,
/// inside a struct parameter: the root of its fields, so that the rewrite reads
/// `p.inner.x`, `&p.inner`, `p.layers[k].w` and `p.layers.iter()` as it reads them on a
/// parameter of their own.
struct Nest<'a> {
    roots: &'a HashMap<String, Root>,
}

impl Nest<'_> {
    /// The root of `base.member` where `base` is a struct root with one inside it there.
    fn below(&self, base: &Ident, member: &str) -> Option<Ident> {
        if !matches!(self.roots.get(&base.to_string()), Some(Root::Struct { .. })) {
            return None;
        }
        let below = format!("{base}__{member}");
        self.roots
            .contains_key(&below)
            .then(|| Ident::new(&below, base.span()))
    }

    /// The same in a macro's tokens (`vec![0.0; p.layers.len()]`).
    fn tokens(&self, tokens: TokenStream) -> TokenStream {
        let mut out: Vec<TokenTree> = Vec::new();
        for t in tokens {
            let t = match t {
                TokenTree::Group(g) => {
                    let mut ng = proc_macro2::Group::new(g.delimiter(), self.tokens(g.stream()));
                    ng.set_span(g.span());
                    TokenTree::Group(ng)
                }
                t => t,
            };
            // `base . member` just pushed, with `base` not itself after a dot.
            if let (TokenTree::Ident(member), [.., TokenTree::Ident(base), TokenTree::Punct(dot)]) =
                (&t, out.as_slice())
            {
                let after_dot = out.len() >= 3
                    && matches!(&out[out.len() - 3], TokenTree::Punct(p) if p.as_char() == '.');
                if dot.as_char() == '.' && !after_dot {
                    if let Some(below) = self.below(base, &member.to_string()) {
                        out.truncate(out.len() - 2);
                        out.push(TokenTree::Ident(below));
                        continue;
                    }
                }
            }
            out.push(t);
        }
        out.into_iter().collect()
    }
}

impl VisitMut for Nest<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Expr::Field(f) = e {
            if let Some(below) =
                name_of(&f.base).and_then(|base| self.below(&base, &member_text(&f.member)))
            {
                let below = Ident::new(&below.to_string(), f.span());
                *e = syn::parse_quote!(#below);
            }
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.tokens(m.tokens.clone());
    }
}

struct Rewriter<'l> {
    roots: HashMap<String, Root>,
    /// The layouts of the structs (for struct literals).
    layouts: &'l HashMap<String, syn::ItemStruct>,
    errors: Vec<syn::Error>,
    /// Counter of the index variables introduced.
    fresh: usize,
    /// The callees whose split functions the body now calls.
    calls: Vec<(Ident, proc_macro2::Span)>,
    /// The struct-valued locals (`let b = Body { .. };`), whose fields are locals.
    locals: std::collections::HashSet<String>,
}

/// Where a field access stands.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    /// A value (`p.k * 2.0`).
    Value,
    /// Indexed or the receiver of a method (`p.w[i]`, `p.w.len()`): auto-deref applies.
    Receiver,
    /// Borrowed: `&p.w` (`mutable`: `&mut s.w`).
    Borrow { mutable: bool },
    /// Assigned: `s.k = ..`, `s.k += ..`.
    Place,
}

/// The base of a field access: a name, or an element `xs[i]` of a slice of structs.
enum Base {
    Name(Ident),
    Indexed(Ident, Expr),
}

/// A field access `p.a.b` (or `(*p).a`, `xs[i].a`): its base and members.
fn chain(e: &Expr) -> Option<(Base, Vec<syn::Member>)> {
    match e {
        Expr::Field(f) => {
            let (base, mut members) =
                chain(&f.base).or_else(|| base_of(&f.base).map(|b| (b, vec![])))?;
            members.push(f.member.clone());
            Some((base, members))
        }
        _ => None,
    }
}

fn base_of(e: &Expr) -> Option<Base> {
    match e {
        Expr::Index(ix) => name_of(&ix.expr).map(|n| Base::Indexed(n, (*ix.index).clone())),
        Expr::Paren(p) => base_of(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => base_of(&u.expr),
        other => name_of(other).map(Base::Name),
    }
}

fn name_of(e: &Expr) -> Option<Ident> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.clone())
        }
        Expr::Paren(p) => name_of(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => name_of(&u.expr),
        _ => None,
    }
}

/// `{ STMTS; TAIL }.m` as `{ STMTS; TAIL.m }` (again inside a tail that is a block), for a
/// block that gives a struct.
fn field_of_block(f: &syn::ExprField) -> Option<Expr> {
    let Expr::Block(b) = &*f.base else {
        return None;
    };
    if b.label.is_some() || values::struct_of_tail(&b.block).is_none() {
        return None;
    }
    let mut b = b.clone();
    let Some(syn::Stmt::Expr(tail, None)) = b.block.stmts.last_mut() else {
        return None;
    };
    let member = &f.member;
    let mut field: syn::ExprField = syn::parse_quote_spanned!(f.span()=> (#tail).#member);
    // `(X).m` read as `X.m` where `X` is a block again.
    if let Expr::Paren(p) = &*field.base {
        field.base = p.expr.clone();
    }
    *tail = field_of_block(&field).unwrap_or(Expr::Field(field));
    Some(Expr::Block(b))
}

fn text(e: &impl ToTokens) -> String {
    e.to_token_stream().to_string().replace(' ', "")
}

impl Rewriter<'_> {
    fn error(&mut self, at: &impl ToTokens, msg: String) -> Option<Expr> {
        self.errors.push(syn::Error::new_spanned(at, msg));
        // An empty expression: nothing below the access is visited again.
        Some(Expr::Verbatim(quote!()))
    }

    /// The part of struct `struct_name` for member `m`, or the error saying why there is none.
    fn part_of<'p>(
        &mut self,
        e: &Expr,
        parts: &'p [Part],
        all: &[(syn::Member, Shape)],
        struct_name: &str,
        at: &[syn::Member],
        members: &[syn::Member],
    ) -> Result<&'p Part, Option<Expr>> {
        let m = &members[0];
        if let Some(part) = parts.iter().find(|p| p.member == *m && p.at == at) {
            if members.len() > 1 {
                let msg = format!(
                    "phidiff: field `{}` of `{struct_name}` has no fields",
                    member_text(m)
                );
                return Err(self.error(e, msg));
            }
            return Ok(part);
        }
        let msg = match all.iter().find(|(f, _)| f == m).map(|(_, s)| s) {
            None => format!("phidiff: `{struct_name}` has no field `{}`", member_text(m)),
            Some(Shape::Nested(_)) => format!(
                "phidiff cannot differentiate `{}` here: `{}` is a struct inside {}; its fields are split where the struct is a parameter (`p.inner.x`), a slice of structs or a `Vec` field's element, not in a struct literal; pass `{}` as its own parameter",
                text(e),
                member_text(m),
                match struct_name {
                    "__Tuple" => "a tuple".to_string(),
                    _ => format!("`{struct_name}`"),
                },
                member_text(m)
            ),
            Some(Shape::Seq { .. }) => format!(
                "phidiff cannot differentiate `{}` here yet: a `Vec` or array of structs is split inside a struct parameter, not inside a slice of structs, a `Vec` of structs or a struct literal; pass it as its own parameter",
                text(e)
            ),
            Some(Shape::Unsupported(why)) => format!("phidiff: field `{}` of `{struct_name}`: {why}", member_text(m)),
            Some(_) => format!(
                "phidiff: field `{}` of `{struct_name}` is a constant of a type the derivative code does not pass (it passes floats, integers, `bool`s and buffers of floats); read it outside the differentiated function, or pass what it holds as a parameter",
                member_text(m)
            ),
        };
        Err(self.error(e, msg))
    }

    /// The replacement of field access `e`, if it is one on a struct parameter or an element
    /// of a slice of structs (an empty expression where an error was reported instead).
    fn replace(&mut self, e: &Expr, ctx: Context) -> Option<Expr> {
        let (base, members) = chain(e)?;
        let span = e.span();
        // An element `xs[i]` of a slice of structs, or a name bound to one.
        let (seq, index) = match &base {
            Base::Indexed(n, i) => (n.clone(), i.clone()),
            Base::Name(n) => match self.roots.get(&n.to_string())? {
                Root::Elem { seq, index } => (Ident::new(seq, n.span()), index.clone()),
                Root::Seq { .. } => return None,
                Root::Struct {
                    form,
                    parts,
                    all,
                    struct_name,
                    at,
                    ..
                } => {
                    let (form, parts, all, struct_name, at) = (
                        *form,
                        parts.clone(),
                        all.clone(),
                        struct_name.clone(),
                        at.clone(),
                    );
                    let part = match self.part_of(e, &parts, &all, &struct_name, &at, &members) {
                        Ok(p) => p.clone(),
                        Err(failed) => return failed,
                    };
                    return self.struct_field(e, n, form, &part, &struct_name, ctx);
                }
            },
        };
        // `xs[i].inner.x`: the field buffers of the structs inside the elements.
        let (mut seq, mut members) = (seq, members);
        while members.len() > 1 {
            let below = format!("{seq}__{}", member_text(&members[0]));
            if !matches!(self.roots.get(&below), Some(Root::Seq { .. })) {
                break;
            }
            seq = Ident::new(&below, seq.span());
            members.remove(0);
        }
        let Some(Root::Seq {
            parts,
            all,
            struct_name,
            at,
            ..
        }) = self.roots.get(&seq.to_string()).cloned()
        else {
            return None;
        };
        let part = match self.part_of(e, &parts, &all, &struct_name, &at, &members) {
            Ok(p) => p.clone(),
            Err(failed) => return failed,
        };
        let id = Ident::new(&part.ident.to_string(), span);
        let mut index = index;
        self.visit_expr_mut(&mut index);
        let tokens = match ctx {
            Context::Borrow { mutable: true } => quote_spanned!(span=> &mut #id[#index]),
            Context::Borrow { mutable: false } => quote_spanned!(span=> &#id[#index]),
            _ => quote_spanned!(span=> #id[#index]),
        };
        Some(syn::parse2(tokens).expect("an element of a field buffer is an expression"))
    }

    /// `p.k` of a struct parameter `p` passed by `form`, in context `ctx`.
    fn struct_field(
        &mut self,
        e: &Expr,
        root: &Ident,
        form: Form,
        part: &Part,
        struct_name: &str,
        ctx: Context,
    ) -> Option<Expr> {
        let span = e.span();
        let id = Ident::new(&part.ident.to_string(), span);
        let by_ref = part.by_reference(form);
        // Numbers of a struct are passed by value: one written would not reach the caller.
        let written = matches!(ctx, Context::Place | Context::Borrow { mutable: true });
        if written && !by_ref && form != Form::Value {
            let msg = format!(
                "phidiff cannot write the {} field `{}` of `{root}` yet: the derivatives pass a struct's numbers by value, so the write would not reach the caller; keep the count in a local, or in a float field",
                match part.shape {
                    Shape::Int => "integer",
                    _ => "constant",
                },
                member_text(&part.member)
            );
            return self.error(e, msg);
        }
        if part.one_element(form) {
            let tokens = match ctx {
                Context::Borrow { mutable: true } => quote_spanned!(span=> &mut #id[0]),
                Context::Borrow { mutable: false } => quote_spanned!(span=> &#id[0]),
                _ => quote_spanned!(span=> #id[0]),
            };
            return Some(syn::parse2(tokens).expect("an element"));
        }
        let tokens = match ctx {
            Context::Borrow { mutable } => match (by_ref, mutable, form) {
                (true, true, Form::Ref) => {
                    let msg = format!("phidiff: `{root}` is borrowed immutably (`&{struct_name}`), its fields cannot be borrowed mutably");
                    return self.error(e, msg);
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

    /// The buffer whose length is the length of slice of structs `seq`.
    fn len_of(&self, seq: &Ident) -> Option<Ident> {
        match self.roots.get(&seq.to_string()) {
            Some(Root::Seq { parts, .. }) => {
                Some(Ident::new(&parts[0].ident.to_string(), seq.span()))
            }
            _ => None,
        }
    }

    /// `let Params { k, w: weights, .. } = p;` (or `= *p`) of a struct parameter: one `let`
    /// per field named, a number by value (`let k = p.k;`), a buffer borrowed
    /// (`let weights = &p.w;`).
    fn struct_pattern(&mut self, local: &syn::Local) -> Option<Vec<syn::Stmt>> {
        let syn::Pat::Struct(ps) = &local.pat else {
            return None;
        };
        let init = local.init.as_ref()?;
        if init.diverge.is_some() {
            return None;
        }
        let root = match &*init.expr {
            Expr::Reference(r) => name_of(&r.expr)?,
            other => name_of(other)?,
        };
        let Some(Root::Struct { parts, at, .. }) = self.roots.get(&root.to_string()) else {
            return None;
        };
        let (parts, at) = (parts.clone(), at.clone());
        let mut stmts = Vec::new();
        for f in &ps.fields {
            let member = &f.member;
            let pat = &f.pat;
            let buffer = parts
                .iter()
                .find(|p| p.member == *member && p.at == at)
                .is_some_and(|p| matches!(p.shape, Shape::Seq { .. }));
            let mut access: Expr = match buffer {
                true => syn::parse_quote_spanned!(f.span()=> &#root.#member),
                false => syn::parse_quote_spanned!(f.span()=> #root.#member),
            };
            self.visit_expr_mut(&mut access);
            // `ref w` / `ref mut w`: the binding is the borrow itself.
            let pat = match &**pat {
                syn::Pat::Ident(p) if p.by_ref.is_some() => {
                    let id = &p.ident;
                    quote!(#id)
                }
                other => quote!(#other),
            };
            stmts.push(syn::parse_quote_spanned!(f.span()=> let #pat = #access;));
        }
        Some(stmts)
    }

    /// `let b = Body { pos, vel: [0.0; 3], ..a };`: one local per field (`b__pos`, ..), a
    /// field left to the update syntax taken from the base's; `b` then reads and writes
    /// them like a struct passed by value.
    fn struct_local(&mut self, local: &syn::Local) -> Option<Vec<syn::Stmt>> {
        let (p, annotated) = match &local.pat {
            syn::Pat::Ident(p) => (p, None),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(p) => (p, Some(&*t.ty)),
                _ => return None,
            },
            _ => return None,
        };
        if p.by_ref.is_some() || p.subpat.is_some() {
            return None;
        }
        let init = local.init.as_ref()?;
        if init.diverge.is_some() {
            return None;
        }
        let lit = match &*init.expr {
            Expr::Struct(lit) => lit,
            Expr::Block(b) if b.label.is_none() => {
                return self.block_local(local, p, annotated, &b.block)
            }
            other => return self.copy_local(local, p, other),
        };
        let key = crate::lower::consts::path_names(&lit.path);
        let layout = self.layouts.get(&key.join("::"))?.clone();
        let path = syn::TypePath {
            qself: None,
            path: lit.path.clone(),
        };
        let Some((parts, all)) = self.local_fields(&p.ident, &layout, &path) else {
            return Some(Vec::new());
        };
        let mut stmts = Vec::new();
        let mut values: Vec<(Ident, Expr)> = Vec::new();
        for (member, _) in &all {
            let given = lit.fields.iter().find(|f| f.member == *member);
            let Some(part) = parts.iter().find(|q| q.member == *member) else {
                if let Some(f) = given {
                    let nested = all.iter().any(|(m, s)| {
                        m == member && (matches!(s, Shape::Nested(_)) || s.is_active())
                    });
                    let msg = match nested {
                        true => format!("phidiff cannot hold field `{}` of a struct literal yet: a struct literal's fields holding structs are not split (those of a struct parameter are); keep the inner struct in a local of its own", member_text(member)),
                        false => format!("phidiff cannot hold field `{}` of a struct literal: the derivative code keeps a struct's floats, integers and float buffers", member_text(member)),
                    };
                    self.error(f, msg);
                }
                continue;
            };
            let mut value: Expr = match (given, &lit.rest) {
                (Some(f), _) => f.expr.clone(),
                (None, Some(base)) => syn::parse_quote_spanned!(base.span()=> (#base).#member),
                (None, None) => continue,
            };
            self.visit_expr_mut(&mut value);
            values.push((part.ident.clone(), value));
        }
        stmts.extend(self.bind_fields(local, &p.mutability, values));
        let mut path_tokens = lit.path.clone();
        for s in path_tokens.segments.iter_mut() {
            s.arguments = syn::PathArguments::None;
        }
        self.locals.insert(p.ident.to_string());
        self.roots.insert(
            p.ident.to_string(),
            Root::Struct {
                form: Form::Value,
                path: path_tokens.into_token_stream(),
                parts,
                all,
                struct_name: layout.ident.to_string(),
                at: Vec::new(),
            },
        );
        Some(stmts)
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
                        // `xs.len()` of a slice of structs: the length of a field buffer.
                        if let (true, true, Some(len)) =
                            (is_call, field == "len", self.len_of(root))
                        {
                            out.push(TokenTree::Ident(len));
                            i += 1;
                            continue;
                        }
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

    /// The exploded arguments of a struct (or slice of structs) passed to a call as `arg`
    /// (`p`, `&p`, `&mut p`, `&*p`), if it is one: each field as the callee's split
    /// parameter holds it.
    fn struct_arg(&self, arg: &Expr) -> Option<Vec<Expr>> {
        #[derive(PartialEq)]
        enum Borrow {
            None,
            Shared,
            Mut,
        }
        let (name, borrow) = match arg {
            Expr::Reference(r) if r.mutability.is_some() => (name_of(&r.expr)?, Borrow::Mut),
            Expr::Reference(r) => (name_of(&r.expr)?, Borrow::Shared),
            other => (name_of(other)?, Borrow::None),
        };
        let (form, parts) = match self.roots.get(&name.to_string())? {
            Root::Struct { form, parts, .. } | Root::Seq { form, parts, .. } => (*form, parts),
            Root::Elem { .. } => return None,
        };
        // The callee holds each field as its split parameter of the argument's type does.
        let callee = match borrow {
            Borrow::None => form,
            Borrow::Shared => Form::Ref,
            Borrow::Mut => Form::Mut,
        };
        let held = |form: Form, p: &Part| p.by_reference(form);
        let span = arg.span();
        Some(
            parts
                .iter()
                .map(|p| {
                    let id = Ident::new(&p.ident.to_string(), span);
                    let tokens = match (held(form, p), held(callee, p)) {
                        _ if p.one_element(form) && p.one_element(callee) => {
                            quote_spanned!(span=> #id)
                        }
                        _ if p.one_element(form) => quote_spanned!(span=> #id[0]),
                        (true, false) => quote_spanned!(span=> (*#id)),
                        (false, false) => quote_spanned!(span=> #id),
                        (true, true) if form == Form::Mut && callee == Form::Ref => {
                            quote_spanned!(span=> &*#id)
                        }
                        (true, true) => quote_spanned!(span=> #id),
                        (false, true) if callee == Form::Mut => quote_spanned!(span=> &mut #id),
                        (false, true) => quote_spanned!(span=> &#id),
                    };
                    syn::parse2(tokens).expect("an argument")
                })
                .collect(),
        )
    }

    /// `g(p, x)` with a struct argument → `__phidiff_g(p__k, p__w, .., x)`: the callee's
    /// function with its struct parameters split (written by its own `#[differentiate]`).
    fn struct_call(&mut self, c: &syn::ExprCall) -> Option<Expr> {
        let Expr::Path(f) = &*c.func else { return None };
        if f.qself.is_some() || !c.args.iter().any(|a| self.struct_arg(a).is_some()) {
            return None;
        }
        let mut path = f.path.clone();
        let last = path.segments.last_mut()?;
        // A call whose results are taken apart is already of the split function.
        if !last.ident.to_string().starts_with("__phidiff_") {
            self.calls.push((last.ident.clone(), c.span()));
            last.ident = format_ident!("__phidiff_{}", last.ident, span = last.ident.span());
        }
        let args = self.call_args(&c.args);
        Some(syn::parse_quote_spanned!(c.span()=> #path(#(#args),*)))
    }

    /// A struct-valued local passed to a call while it holds an array field: the derivative
    /// code keeps the field as a buffer of its own, which the callee's split function does
    /// not take for an array.
    fn local_with_array(&mut self, arg: &Expr) -> bool {
        let name = match arg {
            Expr::Reference(r) => name_of(&r.expr),
            other => name_of(other),
        };
        let Some(name) = name.filter(|n| self.locals.contains(&n.to_string())) else {
            return false;
        };
        let Some(Root::Struct { parts, .. }) = self.roots.get(&name.to_string()) else {
            return false;
        };
        let Some(array) = parts
            .iter()
            .find(|p| matches!(p.shape, Shape::Seq { vec: false, .. }))
        else {
            return false;
        };
        let msg = format!(
            "phidiff cannot pass `{name}` to a call yet: it is built in this function and holds an array field (`{}`), which the derivative code keeps as a buffer of its own; pass the struct the function received, or read its fields here",
            member_text(&array.member)
        );
        self.error(arg, msg);
        true
    }

    /// Call arguments, a struct one split into its fields.
    fn call_args<'a>(&mut self, args: impl IntoIterator<Item = &'a Expr>) -> Vec<Expr> {
        let mut out = Vec::new();
        for a in args {
            if self.local_with_array(a) {
                out.push(Expr::Verbatim(quote!(())));
                continue;
            }
            match self.struct_arg(a) {
                Some(parts) => out.extend(parts),
                None => {
                    let mut a = a.clone();
                    self.visit_expr_mut(&mut a);
                    out.push(a);
                }
            }
        }
        out
    }

    /// `p.m(x)` / `self.m(x)` of a struct → `Params::__phidiff_m(p__k, .., x)` (see
    /// [`Self::struct_call`]); a struct the caller owns is lent (`&p`) as to a `&self`
    /// method, one it borrows passed as it holds it.
    fn struct_method(&mut self, m: &syn::ExprMethodCall) -> Option<Expr> {
        let name = name_of(&m.receiver)?;
        let Some(Root::Struct { path, form, .. }) = self.roots.get(&name.to_string()) else {
            return None;
        };
        // A copy of the struct is not split (its fields would need names of their own).
        if m.method == "clone" || m.method == "to_owned" {
            return None;
        }
        let (path, form) = (path.clone(), *form);
        if self.local_with_array(&m.receiver) {
            return Some(Expr::Verbatim(quote!()));
        }
        let recv: Expr = match form {
            Form::Value => syn::parse_quote_spanned!(m.receiver.span()=> &#name),
            _ => syn::parse_quote_spanned!(m.receiver.span()=> #name),
        };
        let mut args = self.struct_arg(&recv)?;
        args.extend(self.call_args(&m.args));
        let method = match m.method.to_string().starts_with("__phidiff_") {
            true => m.method.clone(),
            false => {
                self.calls.push((m.method.clone(), m.span()));
                format_ident!("__phidiff_{}", m.method, span = m.method.span())
            }
        };
        let turbofish = &m.turbofish;
        Some(syn::parse_quote_spanned!(m.span()=> #path::#method #turbofish(#(#args),*)))
    }

    /// A tuple parameter `p` as a whole: the tuple of its elements' values.
    fn whole_tuple(&self, name: &Ident) -> Option<Expr> {
        let Some(Root::Struct {
            form,
            parts,
            all,
            struct_name,
            ..
        }) = self.roots.get(&name.to_string())
        else {
            return None;
        };
        if struct_name != "__Tuple" || parts.len() != all.len() {
            return None;
        }
        let span = name.span();
        let values = parts.iter().map(|p| {
            let id = Ident::new(&p.ident.to_string(), span);
            match (p.one_element(*form), p.by_reference(*form)) {
                (true, _) => quote_spanned!(span=> #id[0]),
                (false, true) => quote_spanned!(span=> (*#id)),
                (false, false) => quote_spanned!(span=> #id),
            }
        });
        Some(syn::parse_quote_spanned!(span=> (#(#values),*)))
    }

    fn whole_use(&mut self, name: &Ident) {
        let (key, span) = (name.to_string(), name.span());
        if key.starts_with("__pd_") {
            // A struct an inlined helper returns, used whole where it is called.
            let msg = "phidiff cannot differentiate this use of the struct this call returns yet (in a tuple, an array, a `match` or a closure, or returned): bind it first (`let v = ..;`) and use its fields (`v.field`), or read a field of the call (`g(..).field`)";
            self.errors.push(syn::Error::new(span, msg));
            return;
        }
        // `p__inner`, the root of `p.inner`, as written.
        let name = key.replace("__", ".");
        let msg = match self.roots.get(&key) {
            Some(Root::Seq { .. }) => format!(
                "phidiff cannot differentiate this use of the slice of structs `{name}` yet: index it (`{name}[i].field`), take its `len()`, or walk it with `for b in {name}.iter()` / `.iter_mut()` / `.iter().enumerate()` / `.iter().zip(ys.iter_mut())`"
            ),
            Some(Root::Elem { .. }) => format!(
                "phidiff cannot differentiate a use of the element `{name}` as a whole yet: read and write its fields (`{name}.field`)"
            ),
            _ => format!(
                "phidiff cannot differentiate a use of the struct `{name}` as a whole here yet (in a tuple, an array, a `match` or a closure, or returned): use its fields (`{name}.field`); a copy (`let c = {name};`, `{name}.clone()`), an assignment (`s = {name};`) and passing it to a function or method work"
            ),
        };
        self.errors.push(syn::Error::new(span, msg));
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let saved = self.roots.clone();
        let mut stmts = Vec::new();
        for mut s in std::mem::take(&mut b.stmts) {
            if let syn::Stmt::Local(l) = &s {
                if let Some(binds) = self.element_binding(l) {
                    stmts.extend(binds);
                    continue;
                }
                if let Some(binds) = self.struct_pattern(l) {
                    stmts.extend(binds);
                    continue;
                }
                if let Some(binds) = self.struct_local(l) {
                    stmts.extend(binds);
                    continue;
                }
            }
            self.visit_stmt_mut(&mut s);
            stmts.push(s);
        }
        b.stmts = stmts;
        self.roots = saved;
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // `g(..).x` of an inlined helper returning a struct: `{ ..; r }.x` → `{ ..; r.x }`.
        if let Expr::Field(f) = e {
            if let Some(inner) = field_of_block(f) {
                *e = inner;
            }
        }
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
            Expr::Call(c) => {
                if let Some(call) = self.struct_call(c) {
                    *e = call;
                } else {
                    syn::visit_mut::visit_expr_call_mut(self, c);
                }
            }
            Expr::ForLoop(f) => {
                if !self.for_over_structs(f) {
                    syn::visit_mut::visit_expr_for_loop_mut(self, f);
                }
            }
            Expr::Assign(a) => {
                if let Some(whole) = self.struct_assign(a) {
                    *e = whole;
                    return;
                }
                if let Some(r) = self.replace(&a.left, Context::Place) {
                    *a.left = r;
                } else {
                    self.visit_expr_mut(&mut a.left);
                }
                self.visit_expr_mut(&mut a.right);
            }
            Expr::Binary(b) if crate::desugar::assigns_in_place(&b.op) => {
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
                // `xs.len()`, `xs.is_empty()` of a slice of structs.
                let seq_len = match name_of(&m.receiver) {
                    Some(n)
                        if m.args.is_empty() && (m.method == "len" || m.method == "is_empty") =>
                    {
                        self.len_of(&n)
                    }
                    _ => None,
                };
                if let Some(len) = seq_len {
                    *m.receiver = syn::parse_quote!(#len);
                    return;
                }
                if let Some(call) = self.struct_method(m) {
                    *e = call;
                    return;
                }
                if let Some(par) = self.par_over_structs(m) {
                    *e = par;
                    return;
                }
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
                let id = p.path.segments[0].ident.clone();
                if let Some(t) = self.whole_tuple(&id) {
                    *e = t;
                } else if self.roots.contains_key(&id.to_string()) {
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

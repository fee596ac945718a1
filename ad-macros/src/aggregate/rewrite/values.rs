//! Struct values that are not literals: a copy of a struct the body holds (`let c = *p;`,
//! `let d = b;`, `let e = bodies[i];`) and a struct a block gives (`let e = { ..; V3 { .. } }`,
//! which is what an inlined helper returning a struct leaves): each becomes one local per
//! field, as a literal does.

use super::super::explode::{layout_key, local_parts, Form, Part};
use super::super::shape::Shape;
use super::{name_of, Expr, Rewriter, Root};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

impl Rewriter<'_> {
    /// `let c = SRC;` where `SRC` is a struct root (`b`, `*p`, `self`), an element of a
    /// slice of structs (`bodies[i]`) or a name bound to one: `let c__k = SRC.k;` for each
    /// field the derivative code holds, and `c` a struct local of the same type.
    pub(super) fn copy_local(
        &mut self,
        local: &syn::Local,
        p: &syn::PatIdent,
        source: &Expr,
    ) -> Option<Vec<syn::Stmt>> {
        // `b.clone()`: a copy that also clones its buffers.
        let (source, cloned) = match source {
            Expr::MethodCall(m)
                if m.args.is_empty() && (m.method == "clone" || m.method == "to_owned") =>
            {
                (&*m.receiver, true)
            }
            other => (other, false),
        };
        let (struct_name, path) = self.struct_of(source)?;
        let layout = self.layout_named(&struct_name)?;
        let layout_path = syn::TypePath {
            qself: None,
            path: layout.ident.clone().into(),
        };
        let Some((parts, all)) = self.local_fields(&p.ident, &layout, &layout_path) else {
            return Some(Vec::new());
        };
        let mut values = Vec::new();
        for part in &parts {
            let member = &part.member;
            let mut value: Expr = match &part.shape {
                Shape::Seq { .. } if cloned => {
                    syn::parse_quote_spanned!(source.span()=> (#source).#member.clone())
                }
                Shape::Seq { .. } => match array_len(&part.field_ty) {
                    // An array of numbers: element by element (a buffer is not copied whole).
                    Some(n) => {
                        let at = (0..n).map(syn::Index::from);
                        syn::parse_quote_spanned!(source.span()=> [#((#source).#member[#at]),*])
                    }
                    None => {
                        let msg = format!(
                            "phidiff cannot copy this struct yet: its field `{}` is a `Vec` or an array of more than {MAX_ARRAY} numbers; borrow it (`let {} = &{};`), clone it (`.clone()`), or read its fields",
                            super::member_text(member),
                            p.ident,
                            crate::diagnostics::source_text(source),
                        );
                        self.errors.push(syn::Error::new(source.span(), msg));
                        return Some(Vec::new());
                    }
                },
                _ => syn::parse_quote_spanned!(source.span()=> (#source).#member),
            };
            self.visit_expr_mut(&mut value);
            values.push((part.ident.clone(), value));
        }
        let stmts = self.bind_fields(local, &p.mutability, values);
        self.bind_struct_local(p, path, parts, all, layout.ident.to_string());
        Some(stmts)
    }

    /// `let FIELD = VALUE;` for each field of a struct local; where a value reads a field
    /// it binds again (`let s = S { q: s.p, p: s.q };`, `let s = beads[s.next];`), every
    /// value is taken first under a fresh name.
    pub(super) fn bind_fields(
        &mut self,
        local: &syn::Local,
        m: &Option<syn::Token![mut]>,
        values: Vec<(syn::Ident, Expr)>,
    ) -> Vec<syn::Stmt> {
        let own: std::collections::HashSet<String> =
            values.iter().map(|(id, _)| id.to_string()).collect();
        let rebinds = values.iter().any(|(_, v)| {
            crate::missing_rule::idents(v.to_token_stream())
                .iter()
                .any(|i| own.contains(i))
        });
        let span = local.span();
        if !rebinds {
            return values
                .iter()
                .map(|(id, value)| syn::parse_quote_spanned!(span=> let #m #id = #value;))
                .collect();
        }
        let fresh: Vec<syn::Ident> = (0..values.len())
            .map(|k| format_ident!("__pd_lit{}_{}", self.fresh, k, span = span))
            .collect();
        self.fresh += 1;
        let mut stmts: Vec<syn::Stmt> = fresh
            .iter()
            .zip(&values)
            .map(|(t, (_, value))| syn::parse_quote_spanned!(span=> let #t = #value;))
            .collect();
        stmts.extend(fresh.iter().zip(&values).map(|(t, (id, _))| -> syn::Stmt {
            syn::parse_quote_spanned!(span=> let #m #id = #t;)
        }));
        stmts
    }

    /// `let e = { STMTS; TAIL };` (or `let e: S = { .. };`) giving a struct: fresh names for
    /// its numbers declared first, then `{ STMTS; let __pd_tailN = TAIL; __pd_outM__k =
    /// __pd_tailN.k; .. }` (the tail a literal, a copy or again a block), then `let e__k =
    /// __pd_outM__k;`. Numbers and arrays of up to 16 of them: a buffer field would need its
    /// buffer declared before it is built.
    pub(super) fn block_local(
        &mut self,
        local: &syn::Local,
        p: &syn::PatIdent,
        annotated: Option<&syn::Type>,
        block: &syn::Block,
    ) -> Option<Vec<syn::Stmt>> {
        let (last, rest) = block.stmts.split_last()?;
        let syn::Stmt::Expr(tail, None) = last else {
            return None;
        };
        let ty: syn::Path = match annotated {
            Some(syn::Type::Path(t)) if t.qself.is_none() => t.path.clone(),
            Some(_) => return None,
            None => struct_of_tail(block)?,
        };
        let layout_path = syn::TypePath {
            qself: None,
            path: ty.clone(),
        };
        let layout = match self.layouts.get(&layout_key(&layout_path)) {
            Some(l) => l.clone(),
            None => self.layout_named(&ty.segments.last()?.ident.to_string())?,
        };
        let Some((parts, all)) = self.local_fields(&p.ident, &layout, &layout_path) else {
            return Some(Vec::new());
        };
        if !value_form(tail) {
            let msg = format!(
                "phidiff cannot take the struct `{}` from `{}` here yet: a block's struct is taken from a literal, a local or another block; bind the value first (`let v = ..;`) and end the block with `v`",
                layout.ident,
                crate::diagnostics::source_text(tail),
            );
            self.errors.push(syn::Error::new(tail.span(), msg));
            return Some(Vec::new());
        }
        let span = local.span();
        let m = &p.mutability;
        let t = format_ident!("__pd_tail{}", self.fresh, span = span);
        self.fresh += 1;
        // Each number of the struct is declared first under a fresh name (the block may read
        // the fields of a struct `e` this `let` shadows), assigned in the block, and bound to
        // `e`'s fields after it; an array field element by element (`__pd_outN__h__0`),
        // gathered after it (`let e__h = [..];`).
        let out = format_ident!("__pd_out{}", self.fresh, span = span);
        self.fresh += 1;
        let mut declared = Vec::new();
        let mut assigns = Vec::new();
        let mut arrays: Vec<syn::Stmt> = Vec::new();
        for q in &parts {
            let (id, member) = (&q.ident, &q.member);
            let field = format_ident!("{}__{}", out, super::member_text(member), span = span);
            match &q.shape {
                Shape::Float | Shape::Int | Shape::Constant => {
                    declared.push(field.clone());
                    assigns.push(quote!(#field = #t.#member;));
                    arrays.push(syn::parse_quote_spanned!(span=> let #m #id = #field;));
                }
                _ => {
                    let Some(n) = array_len(&q.field_ty) else {
                        let msg = format!(
                            "phidiff cannot take the struct `{}` out of a block or a helper's result yet: its field `{}` is a `Vec` or an array of more than {MAX_ARRAY} numbers; build it in a `let {} = {} {{ .. }};` of its own",
                            layout.ident,
                            super::member_text(member),
                            p.ident,
                            layout.ident
                        );
                        self.errors.push(syn::Error::new(tail.span(), msg));
                        return Some(Vec::new());
                    };
                    let elems: Vec<_> = (0..n)
                        .map(|k| format_ident!("{}__{}", field, k, span = span))
                        .collect();
                    for (k, e) in elems.iter().enumerate() {
                        let k = syn::Index::from(k);
                        declared.push(e.clone());
                        assigns.push(quote!(#e = #t.#member[#k];));
                    }
                    arrays.push(syn::parse_quote_spanned!(span=> let #m #id = [#(#elems),*];));
                }
            }
        }
        let mut stmts: Vec<syn::Stmt> = declared
            .iter()
            .map(|id| syn::parse_quote_spanned!(span=> let #id;))
            .collect();
        // The tail's type as the user wrote it; else the tail shows it (a literal, or a
        // local the block binds), and a path without its generic arguments would not do.
        let typed = annotated.map(|a| quote!(: #a));
        let mut fill: syn::Stmt = syn::parse_quote_spanned!(span=> {
            #(#rest)*
            let #t #typed = #tail;
            #(#assigns)*
        });
        self.visit_stmt_mut(&mut fill);
        stmts.push(fill);
        stmts.extend(arrays);
        let mut path = ty;
        for s in path.segments.iter_mut() {
            s.arguments = syn::PathArguments::None;
        }
        self.bind_struct_local(
            p,
            path.into_token_stream(),
            parts,
            all,
            layout.ident.to_string(),
        );
        Some(stmts)
    }

    /// `s = VALUE;` where `s` is a struct place the body holds (a local, `*out`, `self`,
    /// `bodies[i]`) and `VALUE` a struct (a literal, a block giving one, another such
    /// place): `{ let __pd_asgN = VALUE; s.k = __pd_asgN.k; .. }`, field by field.
    pub(super) fn struct_assign(&mut self, a: &syn::ExprAssign) -> Option<Expr> {
        let (struct_name, _) = self.struct_of(&a.left)?;
        if !once(&a.left) {
            return None;
        }
        let value = &*a.right;
        let shown = match value {
            Expr::Struct(_) => true,
            Expr::Block(b) => b.label.is_none() && struct_of_tail(&b.block).is_some(),
            other => self.struct_of(other).is_some(),
        };
        if !shown {
            return None;
        }
        let layout = self.layout_named(&struct_name)?;
        let layout_path = syn::TypePath {
            qself: None,
            path: layout.ident.clone().into(),
        };
        let t = format_ident!("__pd_asg{}", self.fresh, span = a.span());
        self.fresh += 1;
        let Some((parts, all)) = self.local_fields(&t, &layout, &layout_path) else {
            return Some(Expr::Verbatim(quote!()));
        };
        // A field the split does not hold (a struct inside) would keep its old value.
        if let Some((member, _)) = all
            .iter()
            .find(|(m, shape)| shape.is_active() && !parts.iter().any(|q| q.member == *m))
        {
            let msg = format!(
                "phidiff cannot assign a whole `{}` here yet: its field `{}` holds structs, which a whole assignment does not split; assign the fields one by one",
                layout.ident,
                super::member_text(member),
            );
            self.errors.push(syn::Error::new(a.span(), msg));
            return Some(Expr::Verbatim(quote!()));
        }
        let left = &a.left;
        let mut assigns = Vec::new();
        for part in &parts {
            let member = &part.member;
            match &part.shape {
                Shape::Seq { .. } => match array_len(&part.field_ty) {
                    Some(n) => assigns.extend(
                        (0..n)
                            .map(syn::Index::from)
                            .map(|k| quote!((#left).#member[#k] = #t.#member[#k];)),
                    ),
                    None => {
                        let msg = format!(
                            "phidiff cannot assign a whole struct here yet: its field `{}` is a `Vec` or an array of more than {MAX_ARRAY} numbers; assign its fields",
                            super::member_text(member),
                        );
                        self.errors.push(syn::Error::new(a.span(), msg));
                        return Some(Expr::Verbatim(quote!()));
                    }
                },
                _ => assigns.push(quote!((#left).#member = #t.#member;)),
            }
        }
        let mut block: Expr = syn::parse_quote_spanned!(a.span()=> {
            let #t = #value;
            #(#assigns)*
        });
        self.visit_expr_mut(&mut block);
        Some(block)
    }

    /// The fields of a struct local `name` of `layout` at type `path` ([`local_parts`]), or
    /// `None` with the error recorded.
    #[allow(clippy::type_complexity)]
    pub(super) fn local_fields(
        &mut self,
        name: &syn::Ident,
        layout: &syn::ItemStruct,
        path: &syn::TypePath,
    ) -> Option<(Vec<Part>, Vec<(syn::Member, Shape)>)> {
        match local_parts(name, layout, path) {
            Ok(x) => Some(x),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    /// `p` a struct local (of `struct_name`, called by `path`) whose fields are `parts`.
    fn bind_struct_local(
        &mut self,
        p: &syn::PatIdent,
        path: proc_macro2::TokenStream,
        parts: Vec<Part>,
        all: Vec<(syn::Member, Shape)>,
        struct_name: String,
    ) {
        self.locals.insert(p.ident.to_string());
        self.roots.insert(
            p.ident.to_string(),
            Root::Struct {
                form: Form::Value,
                path,
                parts,
                all,
                struct_name,
                at: Vec::new(),
            },
        );
    }

    /// The struct (name, and the path its methods are called by) that place `e` holds: a
    /// struct root (through `*` and parentheses), an element of a slice of structs, or a
    /// name bound to one.
    fn struct_of(&self, e: &Expr) -> Option<(String, proc_macro2::TokenStream)> {
        let seq_struct = |seq: &str| match self.roots.get(seq) {
            Some(Root::Seq { struct_name, .. }) => {
                let id = format_ident!("{}", struct_name);
                Some((struct_name.clone(), quote!(#id)))
            }
            _ => None,
        };
        match e {
            Expr::Paren(p) => self.struct_of(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.struct_of(&u.expr),
            Expr::Index(ix) => seq_struct(&name_of(&ix.expr)?.to_string()),
            Expr::Path(_) => match self.roots.get(&name_of(e)?.to_string())? {
                Root::Struct {
                    struct_name, path, ..
                } if struct_name != "__Tuple" => Some((struct_name.clone(), path.clone())),
                Root::Elem { seq, .. } => seq_struct(seq),
                _ => None,
            },
            _ => None,
        }
    }

    /// The layout of the struct named `name` (one of that name).
    fn layout_named(&self, name: &str) -> Option<syn::ItemStruct> {
        let mut found = self.layouts.values().filter(|l| l.ident == name);
        let first = found.next()?;
        found
            .all(|l| l.to_token_stream().to_string() == first.to_token_stream().to_string())
            .then(|| first.clone())
    }
}

/// Whether `e` is a form a struct value is taken from: a literal, a block, a place.
fn value_form(e: &Expr) -> bool {
    match e {
        Expr::Struct(_) | Expr::Block(_) | Expr::Path(_) | Expr::Index(_) | Expr::Field(_) => true,
        Expr::Paren(p) => value_form(&p.expr),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Deref(_)) && value_form(&u.expr),
        _ => false,
    }
}

/// Whether place `e` may be written more than once for one evaluation: names, `*`,
/// fields, and indices of names and literals.
fn once(e: &Expr) -> bool {
    match e {
        Expr::Path(_) | Expr::Lit(_) => true,
        Expr::Paren(p) => once(&p.expr),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Deref(_)) && once(&u.expr),
        Expr::Field(f) => once(&f.base),
        Expr::Index(ix) => once(&ix.expr) && arithmetic(&ix.index),
        _ => false,
    }
}

fn arithmetic(e: &Expr) -> bool {
    match e {
        Expr::Path(_) | Expr::Lit(_) => true,
        Expr::Binary(b) => arithmetic(&b.left) && arithmetic(&b.right),
        Expr::Paren(p) => arithmetic(&p.expr),
        _ => false,
    }
}

/// The longest array field copied element by element.
const MAX_ARRAY: usize = 16;

/// The length of `[T; N]` written with a literal `N` of at most [`MAX_ARRAY`].
fn array_len(ty: &syn::Type) -> Option<usize> {
    let syn::Type::Array(a) = ty else { return None };
    let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(n),
        ..
    }) = &a.len
    else {
        return None;
    };
    n.base10_parse::<usize>().ok().filter(|n| *n <= MAX_ARRAY)
}

/// The struct type a block gives, when its tail shows it: a struct literal (`S { .. }`), a
/// block giving one, or a name the block binds to one (`let r: S = ..;`, `let r = S { .. };`).
pub fn struct_of_tail(block: &syn::Block) -> Option<syn::Path> {
    let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last() else {
        return None;
    };
    struct_of_expr(tail, &block.stmts[..block.stmts.len() - 1], 0)
}

fn struct_of_expr(e: &Expr, before: &[syn::Stmt], depth: usize) -> Option<syn::Path> {
    if depth > 16 {
        return None;
    }
    match e {
        Expr::Struct(s) => Some(s.path.clone()),
        Expr::Paren(p) => struct_of_expr(&p.expr, before, depth + 1),
        Expr::Block(b) if b.label.is_none() => struct_of_tail(&b.block),
        Expr::Path(p) if p.qself.is_none() => {
            let name = p.path.get_ident()?;
            // The last `let` binding the name before the tail.
            let (k, l, ty) = before.iter().enumerate().rev().find_map(|(k, st)| {
                let syn::Stmt::Local(l) = st else { return None };
                let (id, ty) = match &l.pat {
                    syn::Pat::Ident(id) => (&id.ident, None),
                    syn::Pat::Type(t) => match &*t.pat {
                        syn::Pat::Ident(id) => (&id.ident, Some(&*t.ty)),
                        _ => return None,
                    },
                    _ => return None,
                };
                (id == name).then_some((k, l, ty))
            })?;
            match (ty, &l.init) {
                (Some(syn::Type::Path(t)), _) if t.qself.is_none() => Some(t.path.clone()),
                (None, Some(init)) => struct_of_expr(&init.expr, &before[..k], depth + 1),
                _ => None,
            }
        }
        _ => None,
    }
}

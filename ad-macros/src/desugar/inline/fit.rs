//! What inlining takes (see [`super`]): the helpers whose signatures and bodies it covers
//! ([`inlinable`]; [`why_not_inlined`] for the error of one it does not), with early
//! `return`s lifted into branches ([`lift`]), and the struct types of parameters.

use quote::quote;
use std::collections::HashSet;
use syn::visit::Visit;
use syn::{Expr, Type};

/// What an inlined helper gives back.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Returns {
    /// One value, or nothing: the inlined block's value.
    Value,
    /// A tuple or an array of scalars, taken apart by the `let` it initializes.
    Aggregate,
}

/// How `f` returns when it is a helper the inliner takes: a plain function of floats,
/// integers and slices of them (at least one float among them), returning one value, none,
/// or a tuple or array of scalars, generic at most over its float type, with a body whose
/// `return`s [`lift`] can take out and without `?`.
pub(super) fn inlinable(f: &syn::ItemFn) -> Option<Returns> {
    let sig = &f.sig;
    if sig.asyncness.is_some() || sig.unsafety.is_some() || sig.variadic.is_some() {
        return None;
    }
    let mut float_generic = None;
    for p in &sig.generics.params {
        match p {
            syn::GenericParam::Lifetime(_) => {}
            syn::GenericParam::Type(t) if float_generic.is_none() && bounded_by_float(t) => {
                float_generic = Some(t.ident.to_string())
            }
            _ => return None,
        }
    }
    if sig
        .generics
        .where_clause
        .as_ref()
        .is_some_and(|w| !w.predicates.is_empty())
    {
        return None;
    }
    let g = float_generic.as_deref();
    let mut any_float = false;
    for input in &sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            return None;
        };
        any_float |= param_kind(&pt.ty, g)?;
    }
    let returns = match &sig.output {
        syn::ReturnType::Default => Returns::Value,
        syn::ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) if !tt.elems.is_empty() => {
                for e in &tt.elems {
                    scalar(e, g)?;
                }
                Returns::Aggregate
            }
            Type::Array(a) => {
                scalar(&a.elem, g)?;
                Returns::Aggregate
            }
            other if returned_struct(other).is_some() => Returns::Value,
            other => {
                scalar(other, g)?;
                Returns::Value
            }
        },
    };
    (any_float && plain_body(&f.block) && lift(&f.block.stmts).is_some()).then_some(returns)
}

/// `stmts` (a function body) with its `return`s taken out: `return e;` ends the list with
/// `e` as its value, and an `if` holding one becomes the list's last expression, its
/// branches followed by the statements after it (`if c { return a; } rest` →
/// `if c { a } else { rest }`). `None` for a `return` anywhere else (in a loop, a `match`,
/// an expression).
pub(super) fn lift(stmts: &[syn::Stmt]) -> Option<Vec<syn::Stmt>> {
    let semi = |e: Expr| syn::Stmt::Expr(e, Some(Default::default()));
    let mut out = Vec::new();
    for (i, st) in stmts.iter().enumerate() {
        if !returns_in(st) {
            // Followed by more: an expression statement ends with `;`.
            match st {
                syn::Stmt::Expr(e, None) if i + 1 < stmts.len() => out.push(semi(e.clone())),
                other => out.push(other.clone()),
            }
            continue;
        }
        match st {
            syn::Stmt::Expr(Expr::Return(r), _) => {
                if let Some(e) = &r.expr {
                    if returns_in(&syn::Stmt::Expr((**e).clone(), None)) {
                        return None;
                    }
                    out.push(syn::Stmt::Expr((**e).clone(), None));
                }
                return Some(out);
            }
            syn::Stmt::Expr(Expr::If(ifx), _) => {
                if returns_in(&syn::Stmt::Expr((*ifx.cond).clone(), None)) {
                    return None;
                }
                let rest = &stmts[i + 1..];
                let branch = |body: &[syn::Stmt]| -> Option<syn::Block> {
                    let mut all = body.to_vec();
                    all.extend(rest.iter().cloned());
                    Some(syn::Block {
                        brace_token: Default::default(),
                        stmts: lift(&all)?,
                    })
                };
                let then = branch(&ifx.then_branch.stmts)?;
                let els = match ifx.else_branch.as_ref().map(|(_, e)| &**e) {
                    None => branch(&[])?,
                    Some(Expr::Block(b)) => branch(&b.block.stmts)?,
                    Some(other) => branch(&[syn::Stmt::Expr(other.clone(), None)])?,
                };
                let cond = &ifx.cond;
                let e: Expr = syn::parse2(quote!(if #cond #then else #els)).ok()?;
                out.push(syn::Stmt::Expr(e, None));
                return Some(out);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Whether `st` holds a `return` (outside closures).
pub(super) fn returns_in(st: &syn::Stmt) -> bool {
    struct Finds(bool);
    impl<'a> Visit<'a> for Finds {
        fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
            self.0 = true;
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finds(false);
    f.visit_stmt(st);
    f.0
}

pub(super) fn bounded_by_float(t: &syn::TypeParam) -> bool {
    t.bounds.iter().any(|b| match b {
        syn::TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Float"),
        _ => false,
    })
}

/// `Some(is_float)` for a scalar type the inliner binds by value: a float (`f64`, `f32`,
/// the generic float), an integer or `bool`.
pub(super) fn scalar(t: &Type, generic: Option<&str>) -> Option<bool> {
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

/// `Some(has_float)` for a parameter type the inliner binds: a scalar (also behind a
/// reference, `&f64`, `&mut f64`), a shared or `&mut` slice, array or `Vec` of scalars, or a shared or `&mut` struct or slice of structs
/// (bound as another name of the argument, see [`Inliner::bound_call`]).
pub(super) fn param_kind(t: &Type, generic: Option<&str>) -> Option<bool> {
    match t {
        Type::Reference(_) if struct_type(t).is_some() => return Some(true),
        // A struct by value (copied at the call).
        Type::Path(_) if returned_struct(t).is_some() => return Some(true),
        _ => {}
    }
    match t {
        Type::Reference(r) => match &*r.elem {
            Type::Slice(s) => scalar(&s.elem, generic),
            Type::Array(a) => scalar(&a.elem, generic),
            // `x: &f64`: the value (a shared borrow of a number reads as it); `acc: &mut
            // f64`: a copy in and out of the argument's place (see `Inliner::bound_call`).
            elem if scalar(elem, generic).is_some() => scalar(elem, generic),
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

/// Whether a body is free of what inlining cannot keep: `?`, items, `unsafe`.
pub(super) fn plain_body(b: &syn::Block) -> bool {
    struct Plain(bool);
    impl<'a> Visit<'a> for Plain {
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

/// Whether `e` is names, literals and operators only (no calls): an index that may be read
/// more than once.
pub(super) fn arithmetic(e: &Expr) -> bool {
    match e {
        Expr::Path(_) | Expr::Lit(_) => true,
        Expr::Binary(b) => arithmetic(&b.left) && arithmetic(&b.right),
        Expr::Unary(u) => arithmetic(&u.expr),
        Expr::Paren(p) => arithmetic(&p.expr),
        _ => false,
    }
}

/// The name of a path type (`Body`, `Body<T>`, `geom::Body<T>`: `Body`).
pub(super) fn type_name(t: &Type) -> Option<String> {
    match t {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Paren(p) => type_name(&p.elem),
        _ => None,
    }
}

/// The struct a parameter's type names (`&Body`, `&mut Body<T>`, `Body`) or holds a slice
/// of (`&[Body]`, `&Vec<Body>`): (type name, slice). A type counts as a struct when its
/// name starts with an upper-case letter and is longer than one letter (a generic float
/// `T` is not one) and is not `Vec`.
pub(super) fn struct_type(t: &Type) -> Option<(String, bool)> {
    let named = |t: &Type| -> Option<String> {
        let n = type_name(t)?;
        let upper = n.chars().next().is_some_and(char::is_uppercase);
        (upper && n != "Vec" && n.len() > 1).then_some(n)
    };
    let inner = match t {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    match inner {
        Type::Slice(sl) => named(&sl.elem).map(|n| (n, true)),
        Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec") => {
            match &p.path.segments.last().expect("a segment").arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(e)) => named(e).map(|n| (n, true)),
                    _ => None,
                },
                _ => None,
            }
        }
        other => named(other).map(|n| (n, false)),
    }
}

/// The struct a helper returns or takes by value (`V3`, `V3<T>`, `Self`): its type name.
pub(super) fn returned_struct(t: &Type) -> Option<String> {
    let user = matches!(
        crate::aggregate::shape::shape_of(t, &[]),
        crate::aggregate::shape::Shape::Nested(_)
    );
    match t {
        Type::Path(_) if user => match struct_type(t)? {
            (name, false) => Some(name),
            (_, true) => None,
        },
        _ => None,
    }
}

/// The parameters of `item` that are structs or slices of them (see [`struct_type`]), but
/// not of the `underived` ones: name → (type name, slice).
pub(super) fn struct_params(
    item: &syn::ItemFn,
    underived: &HashSet<String>,
) -> std::collections::HashMap<String, (String, bool)> {
    let mut out = std::collections::HashMap::new();
    for input in &item.sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            continue;
        };
        let syn::Pat::Ident(id) = &*pt.pat else {
            continue;
        };
        if let Some(f) = struct_type(&pt.ty).filter(|(n, _)| !underived.contains(n)) {
            out.insert(id.ident.to_string(), f);
        }
    }
    out
}

/// [`inlinable`] for a method made a plain function (its receiver taken out): it needs no
/// float among its own parameters, since `self` holds the floats.
pub(super) fn inlinable_method(f: &syn::ItemFn) -> Option<Returns> {
    let mut probe = f.clone();
    probe
        .sig
        .inputs
        .push(syn::parse_quote!(__pd_self_float: f64));
    inlinable(&probe)
}

/// Why phidiff does not inline the plain function `f` (for the error at a call of it that
/// has no rule); `None` when it would.
pub fn why_not_inlined(f: &syn::ItemFn) -> Option<String> {
    if inlinable(f).is_some() {
        // Taken, unless its struct result cannot be named or split at the call (the
        // inliner's own check, `Inliner::prepared`): the reason, for an error at a call
        // that stayed one.
        let syn::ReturnType::Type(_, t) = &f.sig.output else {
            return None;
        };
        return returned_struct(t).map(|name| {
            format!(
                "it returns the struct `{name}`: a helper returning a struct is inlined from \
                 the caller's own module, for a struct the caller's file derives \
                 `Differentiable` for"
            )
        });
    }
    let sig = &f.sig;
    if sig.asyncness.is_some() || sig.unsafety.is_some() || sig.variadic.is_some() {
        return Some("it is `async`, `unsafe` or variadic".into());
    }
    let floats: Vec<&syn::TypeParam> = sig.generics.type_params().collect();
    let other_generics = sig
        .generics
        .params
        .iter()
        .any(|p| matches!(p, syn::GenericParam::Const(_)));
    if floats.len() > 1
        || floats.iter().any(|t| !bounded_by_float(t))
        || other_generics
        || sig.generics.where_clause.is_some()
    {
        return Some(
            "its type parameters are not one float type bounded by `Float` (or it has a \
             `where` clause)"
                .into(),
        );
    }
    let g = floats.first().map(|t| t.ident.to_string());
    for input in &sig.inputs {
        if let syn::FnArg::Typed(pt) = input {
            if param_kind(&pt.ty, g.as_deref()).is_none() {
                return Some(format!(
                    "its parameter `{}` is not a float, an integer, a `bool` (or a shared \
                     reference to one), a slice of them, a struct, or a slice of structs by \
                     reference",
                    crate::diagnostics::source_text(&pt.pat)
                ));
            }
        }
    }
    if let syn::ReturnType::Type(_, t) = &sig.output {
        let mut probe = f.clone();
        probe.sig.output = syn::ReturnType::Default;
        probe.sig.inputs.push(syn::parse_quote!(__pd_float: f64));
        if inlinable(&probe).is_some() {
            return Some(format!(
                "it returns `{}` (one value, a tuple or an array of scalars, or a struct is inlined)",
                crate::diagnostics::source_text(t)
            ));
        }
    }
    if !plain_body(&f.block) {
        return Some("its body uses `?`, `unsafe` or defines an item".into());
    }
    if lift(&f.block.stmts).is_none() {
        return Some("it has a `return` inside a loop, a `match` or an expression".into());
    }
    None
}

//! Signature → parameter activities. Activity is read from types: float scalars, slices,
//! arrays and Vecs of floats (and arrays of arrays) are active unless `wrt(..)` excludes
//! them; integers, bool and every other type are constant.

use crate::diagnostics::{unsupported_signature as unsupported, Diagnostics};
use syn::{FnArg, GenericParam, Ident, Pat, ReturnType, Type};

/// The float type of the function: a generic parameter bounded by `Float`, or f64/f32.
#[derive(Clone, Debug, PartialEq)]
pub enum FloatTy {
    Generic(Ident),
    F64,
    F32,
}

impl FloatTy {
    pub fn tokens(&self) -> proc_macro2::TokenStream {
        match self {
            FloatTy::Generic(t) => quote::quote!(#t),
            FloatTy::F64 => quote::quote!(f64),
            FloatTy::F32 => quote::quote!(f32),
        }
    }
}

/// How a buffer parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufForm {
    /// `&[T]`, `&[T; N]`, `&Vec<T>`
    Ref,
    /// `&mut [T]`, `&mut [T; N]`, `&mut Vec<T>`
    MutRef,
    /// `[T; N]`, `Vec<T>` by value
    Owned,
    /// `&T`: a float by reference, a one-element buffer inside (its shadow is `&mut T`).
    ScalarRef,
    /// `&mut T`: an output or in/out float, a one-element `&mut [T]` inside.
    ScalarMut,
}

impl BufForm {
    /// Whether the buffer is a float behind a reference (`&T`, `&mut T`).
    pub fn is_scalar(self) -> bool {
        matches!(self, BufForm::ScalarRef | BufForm::ScalarMut)
    }
    /// Whether the parameter is written through (`&mut`).
    pub fn is_mut(self) -> bool {
        matches!(self, BufForm::MutRef | BufForm::ScalarMut)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ElemKind {
    Float,
    Int,
}

#[derive(Clone, Debug)]
pub enum ParamClass {
    Float,
    Int,
    Bool,
    Buffer {
        elem: ElemKind,
        rank: u8,
        form: BufForm,
    },
    Opaque,
}

#[derive(Clone)]
pub struct ParamSpec {
    pub name: Ident,
    pub ty: Type,
    pub class: ParamClass,
    pub active: bool,
    /// `mut x: ...` in the pattern.
    pub pat_mut: bool,
}

impl Signature {
    /// A function of one concrete float type whose body names the other one (`as f64`,
    /// `0.5f64`, `let s: f64`, `f64::from(x)`) mixes the two.
    pub fn note_body(&mut self, body: &syn::Block) {
        let other = match self.float {
            FloatTy::F32 => "f64",
            FloatTy::F64 if !self.mixed => "f32",
            _ => return,
        };
        if mentions(quote::quote!(#body), other) {
            self.mixed = true;
            self.float = FloatTy::F64;
        }
    }
}

/// Whether `tokens` name the float type `name` (an identifier, or a literal's suffix).
fn mentions(tokens: proc_macro2::TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Literal(l) => {
            let s = l.to_string();
            s.ends_with(name) && s.starts_with(|c: char| c.is_ascii_digit())
        }
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), name),
        proc_macro2::TokenTree::Punct(_) => false,
    })
}

impl ParamSpec {
    pub fn is_active_buffer(&self) -> bool {
        self.active && matches!(self.class, ParamClass::Buffer { .. })
    }
    pub fn is_active_scalar(&self) -> bool {
        self.active && matches!(self.class, ParamClass::Float)
    }
}

pub struct Signature {
    pub params: Vec<ParamSpec>,
    /// The float type; `F64` in a function that mixes `f32` and `f64` (`mixed`).
    pub float: FloatTy,
    /// The function uses both `f32` and `f64` (in its signature, or its body through casts,
    /// suffixes and annotations): each value keeps its own type (`codegen::precision`).
    pub mixed: bool,
    /// True when the function returns a float; false for `()` (for a fallible function:
    /// the `R` of its `Option<R>` or `Result<R, E>`).
    pub returns_float: bool,
    /// `Some` for a function returning `Option<R>` or `Result<R, E>`.
    pub fallible: Option<Fallible>,
}

/// The result type of a fallible function: `Option<R>`, `Result<R, E>`, or an alias of
/// `Result` with the error fixed (`io::Result<R>`). The derivatives return the same type
/// around what they return for `R`.
pub struct Fallible {
    /// `Option` (`Some`/`None`) rather than a `Result` (`Ok`/`Err`).
    pub option: bool,
    /// The type as written.
    pub ty: syn::TypePath,
}

impl Fallible {
    /// `Option<R>`/`Result<R, E>` of `ty`, with `R` replaced by `inner`.
    pub fn around(&self, inner: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
        let mut ty = self.ty.clone();
        if let Some(syn::PathArguments::AngleBracketed(a)) =
            ty.path.segments.last_mut().map(|s| &mut s.arguments)
        {
            if let Some(syn::GenericArgument::Type(t)) = a.args.first_mut() {
                *t = syn::Type::Verbatim(inner);
            }
        }
        quote::quote!(#ty)
    }

    /// `Some(value)` / `Ok(value)`.
    pub fn success(&self, value: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
        match self.option {
            true => quote::quote!(::core::option::Option::Some(#value)),
            false => quote::quote!(::core::result::Result::Ok(#value)),
        }
    }
}

/// `Option<R>` or `Result<R, ..>` (by the last segment of its path: `Result`, or a name
/// ending in `Result`), with `R`.
fn fallible_of(ty: &Type) -> Option<(Fallible, &Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    let name = last.ident.to_string();
    let option = name == "Option";
    if !option && !name.ends_with("Result") {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    let n = a.args.len();
    if (option && n != 1) || !(1..=2).contains(&n) {
        return None;
    }
    let syn::GenericArgument::Type(inner) = a.args.first()? else {
        return None;
    };
    Some((
        Fallible {
            option,
            ty: p.clone(),
        },
        inner,
    ))
}

fn is_int(name: &str) -> bool {
    matches!(
        name,
        "usize"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "i128"
    )
}

/// `ty` without the invisible group a `macro_rules!` `$t:ty` wraps it in, or parentheses.
pub fn ungroup(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => ungroup(&g.elem),
        Type::Paren(p) => ungroup(&p.elem),
        other => other,
    }
}

fn single_ident(ty: &Type) -> Option<&Ident> {
    match ungroup(ty) {
        Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            seg.arguments.is_none().then_some(&seg.ident)
        }
        Type::Paren(p) => single_ident(&p.elem),
        _ => None,
    }
}

/// Candidate float types declared by the generics: parameters bounded by `...Float`.
fn generic_floats(generics: &syn::Generics) -> Vec<Ident> {
    let mut out = Vec::new();
    let bounded_by_float =
        |bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
            bounds.iter().any(|b| match b {
                syn::TypeParamBound::Trait(t) => {
                    t.path.segments.last().is_some_and(|s| s.ident == "Float")
                }
                _ => false,
            })
        };
    for p in &generics.params {
        if let GenericParam::Type(t) = p {
            if bounded_by_float(&t.bounds) {
                out.push(t.ident.clone());
            }
        }
    }
    if let Some(w) = &generics.where_clause {
        for pred in &w.predicates {
            if let syn::WherePredicate::Type(pt) = pred {
                if let Some(id) = single_ident(&pt.bounded_ty) {
                    if bounded_by_float(&pt.bounds) {
                        out.push(id.clone());
                    }
                }
            }
        }
    }
    out
}

/// A type parameter that looks like a number (no bounds, or only bounds any number has:
/// `Copy`, `Mul`, `PartialOrd`, ...) but has no `Float` bound, used as the element of a
/// buffer parameter or as the result: the user forgot the `Float` bound.
fn generic_number_without_float_bound<'a>(
    sig: &'a syn::Signature,
    floats: &[Ident],
) -> Option<&'a Ident> {
    /// The element type of `&[E]`, `[E; N]`, `Vec<E>` (through references and nesting).
    fn element_of(ty: &Type) -> Option<&Ident> {
        match ungroup(ty) {
            Type::Reference(r) => element_of(&r.elem),
            Type::Slice(s) => element_of(&s.elem).or_else(|| single_ident(&s.elem)),
            Type::Array(a) => element_of(&a.elem).or_else(|| single_ident(&a.elem)),
            Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec") => {
                match &p.path.segments.last()?.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
                        syn::GenericArgument::Type(t) => element_of(t).or_else(|| single_ident(t)),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        }
    }
    const NUMBER_BOUNDS: &[&str] = &[
        "Copy",
        "Clone",
        "Debug",
        "Display",
        "Default",
        "PartialEq",
        "PartialOrd",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Neg",
        "Rem",
        "AddAssign",
        "SubAssign",
        "MulAssign",
        "DivAssign",
        "Sum",
        "Product",
        "Send",
        "Sync",
        "Sized",
        "Num",
        "NumCast",
        "Zero",
        "One",
    ];
    let bounds_of = |t: &Ident| {
        let own = sig
            .generics
            .type_params()
            .filter(|p| p.ident == *t)
            .flat_map(|p| p.bounds.iter());
        let from_where = sig
            .generics
            .where_clause
            .iter()
            .flat_map(|w| w.predicates.iter())
            .filter_map(|pred| match pred {
                syn::WherePredicate::Type(pt) if single_ident(&pt.bounded_ty) == Some(t) => {
                    Some(pt.bounds.iter())
                }
                _ => None,
            })
            .flatten();
        own.chain(from_where).cloned().collect::<Vec<_>>()
    };
    let looks_like_a_number = |t: &Ident| {
        bounds_of(t).iter().all(|b| match b {
            syn::TypeParamBound::Trait(tr) => tr
                .path
                .segments
                .last()
                .is_some_and(|s| NUMBER_BOUNDS.contains(&s.ident.to_string().as_str())),
            _ => true,
        })
    };
    let suspects: Vec<&Ident> = sig
        .generics
        .type_params()
        .map(|t| &t.ident)
        .filter(|t| !floats.contains(t) && looks_like_a_number(t))
        .collect();
    let result = match &sig.output {
        ReturnType::Type(_, ty) => single_ident(ty),
        ReturnType::Default => None,
    };
    let elements = sig.inputs.iter().filter_map(|a| match a {
        FnArg::Typed(pt) => element_of(&pt.ty),
        FnArg::Receiver(_) => None,
    });
    for id in elements.chain(result) {
        if let Some(t) = suspects.iter().find(|t| **t == id) {
            return Some(t);
        }
    }
    None
}

struct Classifier<'a> {
    generic_floats: &'a [Ident],
    float: Option<FloatTy>,
    mixed: bool,
}

impl Classifier<'_> {
    fn float_of(&self, ty: &Type) -> Option<FloatTy> {
        let id = single_ident(ty)?;
        if id == "f64" {
            Some(FloatTy::F64)
        } else if id == "f32" {
            Some(FloatTy::F32)
        } else if self.generic_floats.contains(id) {
            Some(FloatTy::Generic(id.clone()))
        } else {
            None
        }
    }

    /// Element kind and rank of `[E]`, `[E; N]`, `Vec<E>` (recursively).
    fn elem(&mut self, ty: &Type, diag: &Diagnostics) -> Option<(ElemKind, u8)> {
        let inner = match ungroup(ty) {
            Type::Slice(s) => &*s.elem,
            Type::Array(a) => &*a.elem,
            Type::Path(p) => {
                let seg = p.path.segments.last()?;
                if seg.ident != "Vec" {
                    return None;
                }
                match &seg.arguments {
                    syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => {
                        match &a.args[0] {
                            syn::GenericArgument::Type(t) => t,
                            _ => return None,
                        }
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        if let Some(f) = self.float_of(inner) {
            self.note_float(f, inner, diag);
            return Some((ElemKind::Float, 1));
        }
        if single_ident(inner).is_some_and(|i| is_int(&i.to_string())) {
            return Some((ElemKind::Int, 1));
        }
        let (e, r) = self.elem(inner, diag)?;
        Some((e, r + 1))
    }

    fn note_float(&mut self, f: FloatTy, ty: &Type, diag: &Diagnostics) {
        let concrete = |t: &FloatTy| matches!(t, FloatTy::F32 | FloatTy::F64);
        match &self.float {
            None => self.float = Some(f),
            // `f32` and `f64` together: each value keeps its type (`Signature::mixed`).
            Some(prev) if concrete(prev) && concrete(&f) => {
                if *prev != f {
                    self.mixed = true;
                    self.float = Some(FloatTy::F64);
                }
            }
            Some(prev) if *prev != f => diag.error_spanned(
                ty,
                unsupported(
                    &crate::diagnostics::type_text(ty),
                    &format!(
                        "a function generic over its float type uses that type throughout, and \
                         this one already uses `{}`; use `{}` here too (a concrete `f32` or `f64` \
                         cannot stand beside a generic float: the derivatives also run on dual \
                         numbers)",
                        prev.tokens(),
                        prev.tokens()
                    ),
                ),
            ),
            _ => {}
        }
    }

    fn classify(&mut self, ty: &Type, diag: &Diagnostics) -> ParamClass {
        let ty = ungroup(ty);
        if let Some(f) = self.float_of(ty) {
            self.note_float(f, ty, diag);
            return ParamClass::Float;
        }
        if let Some(id) = single_ident(ty) {
            if is_int(&id.to_string()) {
                return ParamClass::Int;
            }
            if id == "bool" {
                return ParamClass::Bool;
            }
        }
        let (inner, form) = match ty {
            Type::Reference(r) => (
                &*r.elem,
                if r.mutability.is_some() {
                    BufForm::MutRef
                } else {
                    BufForm::Ref
                },
            ),
            other => (other, BufForm::Owned),
        };
        if let Some((elem, rank)) = self.elem(inner, diag) {
            if rank > 3 {
                diag.error_spanned(
                    ty,
                    unsupported(
                        &crate::diagnostics::type_text(ty),
                        "buffers have at most three dimensions; flatten the innermost ones \
                         (`Vec<Vec<Vec<f64>>>` indexed `t[i][j][k * n + l]`)",
                    ),
                );
            }
            return ParamClass::Buffer { elem, rank, form };
        }
        if let Type::Reference(r) = ty {
            if let Some(f) = self.float_of(&r.elem) {
                self.note_float(f, ty, diag);
                return ParamClass::Buffer {
                    elem: ElemKind::Float,
                    rank: 1,
                    form: match r.mutability {
                        Some(_) => BufForm::ScalarMut,
                        None => BufForm::ScalarRef,
                    },
                };
            }
        }
        ParamClass::Opaque
    }
}

/// Why a parameter type stays out of what phidiff differentiates (a function, a trait
/// object, a raw pointer), with the rewrite; `None` for every other type.
fn out_of_scope(ty: &Type, generics: &syn::Generics) -> Option<&'static str> {
    use syn::visit::Visit;
    #[derive(Default)]
    struct Find {
        function: bool,
        dyn_trait: bool,
        pointer: bool,
        paths: Vec<Ident>,
    }
    impl<'a> Visit<'a> for Find {
        fn visit_type(&mut self, t: &'a Type) {
            match t {
                Type::BareFn(_) => self.function = true,
                Type::Ptr(_) => self.pointer = true,
                Type::TraitObject(o) => {
                    if o.bounds.iter().any(is_fn_bound) {
                        self.function = true;
                    } else {
                        self.dyn_trait = true;
                    }
                }
                Type::ImplTrait(i) if i.bounds.iter().any(is_fn_bound) => self.function = true,
                Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                    self.paths.push(p.path.segments[0].ident.clone());
                }
                _ => {}
            }
            syn::visit::visit_type(self, t);
        }
    }
    fn is_fn_bound(b: &syn::TypeParamBound) -> bool {
        matches!(b, syn::TypeParamBound::Trait(t)
            if t.path.segments.last().is_some_and(|s| matches!(s.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce")))
    }
    let mut find = Find::default();
    find.visit_type(ty);
    // A type parameter bounded by `Fn(..)` (`F: Fn(&[T]) -> T`).
    let fn_params: Vec<&Ident> = generics
        .type_params()
        .filter(|p| p.bounds.iter().any(is_fn_bound))
        .map(|p| &p.ident)
        .chain(generics.where_clause.iter().flat_map(|w| {
            w.predicates.iter().filter_map(|pred| match pred {
                syn::WherePredicate::Type(pt) if pt.bounds.iter().any(is_fn_bound) => {
                    single_ident(&pt.bounded_ty)
                }
                _ => None,
            })
        }))
        .collect();
    if find.function || find.paths.iter().any(|p| fn_params.contains(&p)) {
        return Some(
            "a function passed as a parameter is not differentiated (there is no contract for its derivative yet); call a named function instead (one with `#[differentiate]`, or a custom `_fwd`/`_rev` rule), or pass the values it computes",
        );
    }
    if find.dyn_trait {
        return Some(
            "a call through a trait object (`dyn Trait`) cannot be differentiated; take the concrete type (or a generic `M: Trait` whose methods have `_fwd`/`_rev` rules), or pass the values its methods compute",
        );
    }
    if find.pointer {
        return Some("raw pointers are not differentiated; pass a slice (`&[f64]`, `&mut [f64]`) or a reference");
    }
    None
}

/// Reads the parameters, their activities, the float type and the return kind.
pub fn read(sig: &syn::Signature, wrt: Option<&[Ident]>, diag: &Diagnostics) -> Option<Signature> {
    let floats = generic_floats(&sig.generics);
    if let Some(t) = generic_number_without_float_bound(sig, &floats) {
        diag.error_spanned(
            t,
            format!(
                "phidiff: `{t}` is used as a number (a scalar, or the element of a slice, array \
                 or Vec) but has no `Float` bound, so phidiff does not treat it as a float: \
                 activity is read from types, and the float types are `f64`, `f32` and a generic \
                 bounded by `Float`; declare it `{t}: phidiff::Float`"
            ),
        );
        return None;
    }
    let mut c = Classifier {
        generic_floats: &floats,
        float: None,
        mixed: false,
    };
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => {
                diag.error_spanned(
                    r,
                    unsupported("self", "methods are not supported; write a free function"),
                );
            }
            FnArg::Typed(pt) => {
                let (name, pat_mut) = match &*pt.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        (pi.ident.clone(), pi.mutability.is_some())
                    }
                    other => {
                        diag.error_spanned(
                            other,
                            unsupported("pattern", "parameters must be plain names"),
                        );
                        continue;
                    }
                };
                if let Some(why) = out_of_scope(&pt.ty, &sig.generics) {
                    diag.error_spanned(
                        &pt.ty,
                        unsupported(&crate::diagnostics::type_text(&pt.ty), why),
                    );
                    continue;
                }
                let class = c.classify(&pt.ty, diag);
                let differentiable = matches!(
                    class,
                    ParamClass::Float
                        | ParamClass::Buffer {
                            elem: ElemKind::Float,
                            ..
                        }
                );
                let active = differentiable && wrt.is_none_or(|w| w.iter().any(|n| *n == name));
                params.push(ParamSpec {
                    name,
                    ty: (*pt.ty).clone(),
                    class,
                    active,
                    pat_mut,
                });
            }
        }
    }
    if let Some(w) = wrt {
        for n in w {
            match params.iter().find(|p| p.name == *n) {
                None => {
                    let names: Vec<String> =
                        params.iter().map(|p| format!("`{}`", p.name)).collect();
                    diag.error_spanned(
                        n,
                        format!(
                            "phidiff: `wrt` names `{n}`, which is not a parameter of `{}`; its \
                             parameters are {}",
                            sig.ident,
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ),
                    )
                }
                Some(p) if !p.active => {
                    let ty = &p.ty;
                    diag.error_spanned(
                        n,
                        format!(
                            "phidiff: `wrt` names `{n}: {}`, which cannot be differentiated: only \
                             float parameters (`f64`, `f32`, a generic `T: Float`) and slices, \
                             arrays and Vecs of them are active, other types are constants; \
                             remove `{n}` from `wrt(..)`, or give it a float type if it varies \
                             continuously",
                            crate::diagnostics::type_text(ty)
                        ),
                    )
                }
                _ => {}
            }
        }
    }
    let fallible = match &sig.output {
        ReturnType::Type(_, ty) => fallible_of(ty),
        ReturnType::Default => None,
    };
    let result_ty = fallible.as_ref().map(|(_, r)| *r);
    let fallible = fallible.map(|(f, _)| f);
    let returns_float = match &sig.output {
        ReturnType::Default => false,
        ReturnType::Type(_, ty) => match result_ty.unwrap_or(ty) {
            Type::Tuple(t) if t.elems.is_empty() => false,
            other => {
                if let Some(f) = c.float_of(other) {
                    c.note_float(f, other, diag);
                    true
                } else {
                    diag.error_spanned(
                        other,
                        unsupported(
                            &crate::diagnostics::type_text(other),
                            "a differentiated function returns a float scalar or `()` (write array outputs into a `&mut` slice parameter)",
                        ),
                    );
                    return None;
                }
            }
        },
    };
    if let Some(a) = &sig.asyncness {
        diag.error_spanned(
            a,
            unsupported("async fn", "only plain functions are differentiated"),
        );
    }
    if let Some(u) = &sig.unsafety {
        diag.error_spanned(
            u,
            unsupported("unsafe fn", "only safe functions are differentiated"),
        );
    }
    if let Some(v) = &sig.variadic {
        diag.error_spanned(
            v,
            unsupported("...", "variadic functions are not supported"),
        );
    }
    let float = match c.float {
        Some(f) => f,
        None => {
            diag.error_spanned(
                &sig.ident,
                "phidiff: this function has no float parameter to differentiate with respect to: \
                 the float types are `f64`, `f32` and a generic `T: phidiff::Float`, as scalars \
                 or in slices, arrays and Vecs; integers, bools and other types are constants",
            );
            return None;
        }
    };
    let wrt_ok = wrt.is_none_or(|w| w.iter().all(|n| params.iter().any(|p| p.name == *n)));
    if !params.iter().any(|p| p.active) && wrt_ok {
        diag.error_spanned(
            &sig.ident,
            format!(
                "phidiff: no parameter of `{}` is active, so there is nothing to differentiate \
                 with respect to: the active parameters are the float ones (`f64`, `f32`, a \
                 generic `T: Float`, and slices, arrays and Vecs of them){}; integers, bools and \
                 other types are constants",
                sig.ident,
                if wrt.is_some() {
                    " named in `wrt(..)`"
                } else {
                    ""
                }
            ),
        );
        return None;
    }
    Some(Signature {
        params,
        float,
        mixed: c.mixed,
        returns_float,
        fallible,
    })
}

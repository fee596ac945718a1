//! A function taking structs → the same function taking their fields (scalar replacement of
//! aggregates at the source): `fn f(p: &Params, x: &[f64])` becomes
//! `fn __phidiff_f(p__k: &f64, p__w: &Vec<f64>, p__n: usize, x: &[f64])`, with `p.k` read
//! as `(*p__k)`, `p.w[i]` as `p__w[i]`, `p.n` as `p__n`. The compiler then sees only the
//! scalars and buffers it knows; `wrap` writes the functions the user calls, which take the
//! structs and pass their fields.

use super::shape::{is_skipped, shape_of, Shape};
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::{Ident, Type};

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
    /// The field's type.
    pub field_ty: Type,
    /// Its type as a parameter of the exploded function (`&f64`, `&Vec<f64>`, `usize`; for
    /// a slice of structs `&[f64]`, `&mut [[f64; 3]]`, `Vec<f64>`).
    pub ty: Type,
    /// The members from the parameter (from an element, for a slice of structs) to the
    /// struct holding the field: `[inner]` for `p.inner.x`, `[]` for `p.k`.
    pub at: Vec<syn::Member>,
    /// A field of the structs in a `Vec` or array field of a struct parameter
    /// (`m.layers[k].w`): how many members of `at` lead to that field (`at[..n]`).
    pub seq_at: Option<usize>,
    /// Whether the exploded function holds the field as one buffer over the elements of a
    /// sequence of structs (a slice parameter, or a `Vec` field).
    pub seq: bool,
}

impl Part {
    /// Whether the exploded function holds this field of a struct passed by `form` through
    /// a reference (and reads it as `(*p__k)`): a buffer of a borrowed struct, and a float
    /// of a mutably borrowed one; numbers of a shared struct are passed by value (and
    /// their adjoints returned to the wrapper, which adds them into the shadow). A field of
    /// a sequence of structs is a buffer held by reference unless the structs are owned.
    pub fn by_reference(&self, form: Form) -> bool {
        match self.seq {
            true => form != Form::Value,
            false => by_reference(form, &self.shape),
        }
    }

    /// Whether the exploded function holds this field (a float of a `&mut` struct) as a
    /// one-element slice `&mut [T]`, read as `s__k[0]`: the buffer form the compiler
    /// passes on to calls and snapshots, as it does a `&mut f64` parameter inside.
    pub fn one_element(&self, form: Form) -> bool {
        !self.seq && form == Form::Mut && self.shape == Shape::Float
    }

    /// The field's place below its parameter (or an element): `inner.x`, `k`.
    pub fn path(&self) -> TokenStream {
        let (at, m) = (&self.at, &self.member);
        quote!(#(#at.)* #m)
    }

    /// For a field of the structs in a `Vec` field: the members to the `Vec` (`layers`) and
    /// from an element to the field (`gate.b`).
    pub fn seq_path(&self) -> Option<(TokenStream, TokenStream)> {
        let n = self.seq_at?;
        let (outer, inner, m) = (&self.at[..n], &self.at[n..], &self.member);
        Some((quote!(#(#outer).*), quote!(#(#inner.)* #m)))
    }
}

fn by_reference(form: Form, shape: &Shape) -> bool {
    match form {
        Form::Value => false,
        Form::Ref => matches!(shape, Shape::Seq { .. }),
        Form::Mut => matches!(shape, Shape::Seq { .. } | Shape::Float),
    }
}

/// A parameter of the user's function.
#[derive(Clone)]
pub enum Param {
    Plain(syn::PatType),
    Struct {
        name: Ident,
        /// The parameter's type as written (`&Params<T>`, `&mut [Body]`).
        ty: Type,
        /// The struct's type (`Params<T>`, `Body`).
        struct_ty: Type,
        form: Form,
        mutable: bool,
        /// A slice, array or `Vec` of structs: each field a buffer of the fields.
        seq: bool,
        parts: Vec<Part>,
    },
}

pub struct Exploded {
    pub inner: syn::ItemFn,
    pub params: Vec<Param>,
    /// The functions and methods called with structs (now their split functions).
    pub calls: Vec<(Ident, proc_macro2::Span)>,
    /// The element types of a tuple result (the exploded function writes them into
    /// one-element slices `__out0`, `__out1`, .. after its parameters and returns `()`), or
    /// of a struct result's fields (an array field into a slice of its length).
    pub outputs: Vec<Type>,
    /// A struct result (`-> State`): its fields are the outputs.
    pub result: Option<super::outputs::StructResult>,
}

/// The struct result of `item` (`-> State`, `-> State<f64>`) when its layout is known:
/// every field a float or an array of floats (an output with a derivative each).
fn struct_result(
    item: &syn::ItemFn,
    layouts: &HashMap<String, syn::ItemStruct>,
    self_ty: Option<&Type>,
) -> syn::Result<Option<super::outputs::StructResult>> {
    let syn::ReturnType::Type(_, t) = &item.sig.output else {
        return Ok(None);
    };
    let Type::Path(written) = crate::parse::signature::ungroup(t) else {
        return Ok(None);
    };
    let mut p = written;
    // `-> Self` of a method: the impl's type.
    if let (true, Some(Type::Path(sp))) = (p.path.is_ident("Self"), self_ty) {
        p = sp;
    }
    let key = crate::lower::consts::path_names(&p.path);
    let Some(layout) = layouts.get(&key.join("::")) else {
        return Ok(None);
    };
    // The struct's type parameters, as the result names them (`State<f64>`: `T` is `f64`).
    let args: Vec<Type> = match &p.path.segments.last().expect("a path").arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let params: Vec<Ident> = layout
        .generics
        .type_params()
        .map(|t| t.ident.clone())
        .collect();
    let subst = |ty: &Type| -> Type {
        match ty {
            Type::Path(tp) if tp.qself.is_none() => params
                .iter()
                .position(|g| tp.path.is_ident(g))
                .and_then(|i| args.get(i).cloned())
                .unwrap_or_else(|| ty.clone()),
            other => other.clone(),
        }
    };
    let mut fields = Vec::new();
    for (n, f) in layout.fields.iter().enumerate() {
        let member = match &f.ident {
            Some(i) => syn::Member::Named(i.clone()),
            None => syn::Member::Unnamed(syn::Index::from(n)),
        };
        let shape = match super::shape::is_skipped(&f.attrs)? {
            true => Shape::Constant,
            false => shape_of(&f.ty, &params),
        };
        let out = match (&shape, crate::parse::signature::ungroup(&f.ty)) {
            (Shape::Float, _) => super::outputs::OutField {
                member,
                elem: subst(&f.ty),
                len: None,
            },
            (Shape::Seq { vec: false, elem }, Type::Array(a)) if **elem == Shape::Float => {
                super::outputs::OutField {
                    member,
                    elem: subst(&a.elem),
                    len: Some(a.len.clone()),
                }
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    t,
                    format!(
                        "phidiff: a struct result holds floats and arrays of floats (each an output with a derivative); `{}.{}` is not one: return it through a `&mut` parameter",
                        layout.ident,
                        member_text(&member)
                    ),
                ))
            }
        };
        fields.push(out);
    }
    Ok(Some(super::outputs::StructResult {
        ty: (**t).clone(),
        name: layout.ident.to_string(),
        fields,
    }))
}

/// The element types of a tuple type (through one reference), with its form.
pub fn tuple_param(ty: &Type) -> Option<(Form, Vec<Type>)> {
    use crate::parse::signature::ungroup;
    let (form, inner) = match ungroup(ty) {
        Type::Reference(r) if r.mutability.is_some() => (Form::Mut, &*r.elem),
        Type::Reference(r) => (Form::Ref, &*r.elem),
        other => (Form::Value, other),
    };
    match ungroup(inner) {
        Type::Tuple(t) if !t.elems.is_empty() => Some((form, t.elems.iter().cloned().collect())),
        _ => None,
    }
}

/// A tuple as the struct `struct __Tuple<G>(E0, E1, ..)` over the function's type
/// parameters `G` (so a generic float element is a float), and its path `__Tuple<G>`.
fn tuple_layout(elems: &[Type], generics: &syn::Generics) -> (syn::ItemStruct, syn::TypePath) {
    let params: Vec<&Ident> = generics.type_params().map(|t| &t.ident).collect();
    let g = (!params.is_empty()).then(|| quote!(<#(#params),*>));
    let layout = syn::parse_quote!(struct __Tuple #g (#(#elems),*););
    let path = syn::parse_quote!(__Tuple #g);
    (layout, path)
}

/// The struct type a parameter's type names (through one reference), with its form, and
/// whether it is a slice, array or `Vec` of that struct.
pub fn struct_param(ty: &Type) -> Option<(Form, &syn::TypePath, bool)> {
    use crate::parse::signature::ungroup;
    let (form, inner) = match ungroup(ty) {
        Type::Reference(r) if r.mutability.is_some() => (Form::Mut, &*r.elem),
        Type::Reference(r) => (Form::Ref, &*r.elem),
        other => (Form::Value, other),
    };
    let (inner, seq) = match ungroup(inner) {
        Type::Slice(s) => (&*s.elem, true),
        Type::Array(a) => (&*a.elem, true),
        Type::Path(p)
            if p.qself.is_none()
                && p.path.segments.len() == 1
                && p.path.segments[0].ident == "Vec" =>
        {
            match &p.path.segments[0].arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => (t, true),
                    _ => return None,
                },
                _ => return None,
            }
        }
        other => (other, false),
    };
    match ungroup(inner) {
        Type::Path(p) => Some((form, p, seq)),
        _ => None,
    }
}

/// The key of a struct type in the layouts: its path without generic arguments.
pub fn layout_key(p: &syn::TypePath) -> String {
    let segs = crate::lower::consts::path_names(&p.path);
    segs.join("::")
}

/// Whether the exploded function holds a field of this shape and type as a parameter: the
/// floats, integers and float buffers, and constants of a number type. The rule depends on
/// the struct's type alone, so a caller splits a struct argument as its callee splits the
/// parameter.
pub fn holdable(shape: &Shape, ty: &Type, floats: &[Ident]) -> bool {
    match shape {
        Shape::Float | Shape::Int => true,
        Shape::Seq { .. } => shape.is_float_buffer(),
        Shape::Constant => matches!(shape_of(ty, floats), Shape::Float | Shape::Int),
        Shape::Nested(_) | Shape::Unsupported(_) => false,
    }
}

/// Explodes the struct parameters of `item` whose layouts are in `layouts` (`self` too, of
/// type `self_ty`, for a method).
pub fn explode(
    item: &syn::ItemFn,
    layouts: &HashMap<String, syn::ItemStruct>,
    self_ty: Option<&Type>,
    returns: &HashMap<String, super::returned::Returned>,
    zero: &TokenStream,
) -> syn::Result<Exploded> {
    let mut params = Vec::new();
    let mut roots = HashMap::new();
    let mut tuple_layouts = HashMap::new();
    for (position, arg) in item.sig.inputs.iter().enumerate() {
        // A tuple parameter is split like a struct with fields `.0`, `.1`, ..; one written
        // as a pattern (`(a, b): (f64, f64)`) gives its fields the pattern's names.
        let mut part_names: Option<Vec<Ident>> = None;
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
                syn::Pat::Ident(pi) => {
                    (pi.ident.clone(), (*pt.ty).clone(), pi.mutability.is_some())
                }
                syn::Pat::Tuple(t)
                    if tuple_param(&pt.ty).is_some_and(|(_, e)| e.len() == t.elems.len())
                        && t.elems
                            .iter()
                            .all(|e| matches!(e, syn::Pat::Ident(_) | syn::Pat::Wild(_))) =>
                {
                    let names = t
                        .elems
                        .iter()
                        .enumerate()
                        .map(|(k, e)| match e {
                            syn::Pat::Ident(p) => p.ident.clone(),
                            _ => format_ident!("__unused{}_{}", position, k),
                        })
                        .collect();
                    part_names = Some(names);
                    let mutable = t
                        .elems
                        .iter()
                        .any(|e| matches!(e, syn::Pat::Ident(p) if p.mutability.is_some()));
                    (
                        format_ident!("__tuple{}", position, span = t.span()),
                        (*pt.ty).clone(),
                        mutable,
                    )
                }
                _ => {
                    params.push(Param::Plain(pt.clone()));
                    continue;
                }
            },
        };
        let tuple = tuple_param(&ty);
        if let Some((_, elems)) = &tuple {
            tuple_layouts.insert(position, tuple_layout(elems, &item.sig.generics));
        }
        let found = match (&tuple, tuple_layouts.get(&position)) {
            (Some((form, _)), Some((layout, path))) => Some((*form, path.clone(), false, layout)),
            _ => struct_param(&ty).and_then(|(form, p, seq)| {
                layouts
                    .get(&layout_key(p))
                    .map(|l| (form, p.clone(), seq, l))
            }),
        };
        let Some((form, path, seq, layout)) = found else {
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
        let lifetime = match crate::parse::signature::ungroup(&ty) {
            Type::Reference(r) => r.lifetime.clone(),
            _ => None,
        };
        let struct_path = match arg {
            syn::FnArg::Receiver(_) => quote!(Self),
            syn::FnArg::Typed(_) => {
                let mut p = path.path.clone();
                for s in p.segments.iter_mut() {
                    s.arguments = syn::PathArguments::None;
                }
                p.into_token_stream()
            }
        };
        let site = Site {
            layouts,
            form,
            lifetime,
            seq,
            part_names: part_names.as_deref(),
        };
        let key = match tuple.is_some() {
            true => String::new(),
            false => layout_key(&path),
        };
        let parts = site.flatten(
            &key,
            layout,
            &path,
            &name.to_string(),
            name.span(),
            Vec::new(),
            None,
            struct_path,
            &mut roots,
        )?;
        if seq && parts.is_empty() {
            return Err(syn::Error::new_spanned(
                &ty,
                format!(
                    "phidiff: `{}` has no float or integer field to split a slice of it into",
                    layout.ident
                ),
            ));
        }
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
            syn::FnArg::Typed(_) if tuple.is_some() => {
                let elem = match crate::parse::signature::ungroup(&ty) {
                    Type::Reference(r) => (*r.elem).clone(),
                    other => other.clone(),
                };
                (ty, elem)
            }
            syn::FnArg::Typed(_) => (ty, Type::Path(path)),
        };
        params.push(Param::Struct {
            name,
            ty,
            struct_ty,
            form,
            mutable,
            seq,
            parts,
        });
    }
    let mut block = (*item.block).clone();
    let taken_apart = super::returned::take_apart(&mut block, returns, layouts, zero)?;
    crate::desugar::tuples::desugar(&mut block);
    let result = struct_result(item, layouts, self_ty)?;
    if let Some(r) = &result {
        // Before the fields are split, so the values written are rewritten with the body.
        super::outputs::write_struct_outputs(&mut block, r)?;
    }
    let mut calls = super::rewrite::rewrite(&mut block, roots, layouts)?;
    calls.extend(taken_apart);
    let outputs: Vec<Type> = match (&result, &item.sig.output) {
        (Some(r), _) => r.fields.iter().map(|f| f.elem.clone()).collect(),
        (None, syn::ReturnType::Type(_, t)) => match crate::parse::signature::ungroup(t) {
            Type::Tuple(t) if t.elems.len() >= 2 => t.elems.iter().cloned().collect(),
            _ => Vec::new(),
        },
        (None, syn::ReturnType::Default) => Vec::new(),
    };
    if !outputs.is_empty() && result.is_none() {
        let floats: Vec<Ident> = item
            .sig
            .generics
            .type_params()
            .map(|t| t.ident.clone())
            .collect();
        if let Some(t) = outputs
            .iter()
            .find(|t| shape_of(t, &floats) != Shape::Float)
        {
            return Err(syn::Error::new_spanned(
                t,
                "phidiff: a function with several results returns a tuple of floats (each an output with a derivative); return the other values through a `&mut` parameter",
            ));
        }
        super::outputs::write_outputs(&mut block, outputs.len())?;
    }
    let mut inputs = syn::punctuated::Punctuated::<syn::FnArg, syn::Token![,]>::new();
    for p in &params {
        match p {
            Param::Plain(pt) => inputs.push(syn::FnArg::Typed(pt.clone())),
            Param::Struct { parts, mutable, .. } => {
                for part in parts {
                    let (id, ty) = (&part.ident, &part.ty);
                    let m = mutable.then(|| quote!(mut));
                    inputs.push(syn::parse_quote!(#m #id: #ty));
                }
            }
        }
    }
    let mut inner = item.clone();
    inner.attrs.clear();
    inner.sig.ident = format_ident!("__phidiff_{}", item.sig.ident, span = item.sig.ident.span());
    for (k, t) in outputs.iter().enumerate() {
        let out = format_ident!("__out{}", k);
        inputs.push(syn::parse_quote!(#out: &mut [#t]));
    }
    if !outputs.is_empty() {
        inner.sig.output = syn::ReturnType::Default;
    }
    inner.sig.inputs = inputs;
    inner.block = Box::new(block);
    Ok(Exploded {
        inner,
        params,
        calls,
        outputs,
        result,
    })
}

/// How the fields of a struct parameter are held by the exploded function.
struct Site<'a> {
    layouts: &'a HashMap<String, syn::ItemStruct>,
    form: Form,
    lifetime: Option<syn::Lifetime>,
    /// The parameter is a slice, array or `Vec` of structs.
    seq: bool,
    /// A tuple parameter written as a pattern: its elements' names.
    part_names: Option<&'a [Ident]>,
}

impl Site<'_> {
    /// The parts of the struct `layout` (its layout under `key`, used at type `path`) found
    /// at the members `at` of the parameter, named `prefix__field`: its fields the exploded
    /// function holds, then (in field order) those of the structs in its fields, each of
    /// which becomes a root of its own (`p__inner`, or the sequence `m__layers` for a `Vec`
    /// of structs, whose fields `seq_at` marks), registered in `roots` as `prefix` is.
    #[allow(clippy::too_many_arguments)]
    fn flatten(
        &self,
        key: &str,
        layout: &syn::ItemStruct,
        path: &syn::TypePath,
        prefix: &str,
        span: proc_macro2::Span,
        at: Vec<syn::Member>,
        seq_at: Option<usize>,
        struct_path: TokenStream,
        roots: &mut HashMap<String, super::rewrite::Root>,
    ) -> syn::Result<Vec<Part>> {
        let floats: Vec<Ident> = layout
            .generics
            .type_params()
            .map(|t| t.ident.clone())
            .collect();
        let in_seq = self.seq || seq_at.is_some();
        let lifetime = &self.lifetime;
        let fields = fields_of(layout, path)?;
        let mut parts = Vec::new();
        let mut nested = Vec::new();
        for (member, shape, fty, written) in &fields {
            if !holdable(shape, written, &floats) {
                nested.push((member, shape, fty));
                continue;
            }
            let ident = match (self.part_names, member, at.is_empty()) {
                (Some(names), syn::Member::Unnamed(i), true) => names[i.index as usize].clone(),
                _ => format_ident!("{}__{}", prefix, member_text(member), span = span),
            };
            let ty: Type = match (in_seq, self.form, shape) {
                (true, Form::Ref, _) => syn::parse_quote!(& #lifetime [#fty]),
                (true, Form::Mut, _) => syn::parse_quote!(& #lifetime mut [#fty]),
                (true, Form::Value, _) => syn::parse_quote!(Vec<#fty>),
                (false, _, _) if !by_reference(self.form, shape) => fty.clone(),
                (false, Form::Mut, Shape::Float) => syn::parse_quote!(& #lifetime mut [#fty]),
                (false, Form::Mut, _) => syn::parse_quote!(& #lifetime mut #fty),
                (false, _, _) => syn::parse_quote!(& #lifetime #fty),
            };
            parts.push(Part {
                ident,
                member: member.clone(),
                shape: shape.clone(),
                field_ty: fty.clone(),
                ty,
                at: at.clone(),
                seq_at,
                seq: in_seq,
            });
        }
        for (member, shape, fty) in nested {
            let nested_key = format!("{key}.{}", member_text(member));
            let Some(inner) = self.layouts.get(&nested_key) else {
                continue;
            };
            // `inner: Inner<T>`, or `layers: Vec<Layer<T>>` / `[Layer<T>; N]` outside any
            // other sequence.
            let (elem, sequence) = match shape {
                Shape::Nested(_) => (Some(fty), false),
                Shape::Seq { elem, .. } if matches!(**elem, Shape::Nested(_)) && !in_seq => {
                    (seq_elem(fty), true)
                }
                _ => (None, false),
            };
            let Some(Type::Path(elem)) = elem.map(crate::parse::signature::ungroup) else {
                continue;
            };
            let mut below = at.clone();
            below.push(member.clone());
            let name = format!("{prefix}__{}", member_text(member));
            let seq_at = match sequence {
                true => Some(below.len()),
                false => seq_at,
            };
            let mut elem_path = elem.path.clone();
            for s in elem_path.segments.iter_mut() {
                s.arguments = syn::PathArguments::None;
            }
            let sub = self.flatten(
                &nested_key,
                inner,
                elem,
                &name,
                span,
                below.clone(),
                seq_at,
                elem_path.into_token_stream(),
                roots,
            )?;
            parts.extend(sub);
        }
        let all: Vec<(syn::Member, Shape)> =
            fields.into_iter().map(|(m, s, _, _)| (m, s)).collect();
        let mine: Vec<Part> = parts.clone();
        let root = match in_seq {
            false => super::rewrite::Root::Struct {
                form: self.form,
                path: struct_path,
                parts: mine,
                all,
                struct_name: layout.ident.to_string(),
                at,
            },
            true => super::rewrite::Root::Seq {
                form: self.form,
                parts: mine,
                all,
                struct_name: layout.ident.to_string(),
                at,
            },
        };
        roots.insert(prefix.to_string(), root);
        Ok(parts)
    }
}

/// The element type of a `Vec<E>` or `[E; N]`.
fn seq_elem(ty: &Type) -> Option<&Type> {
    match crate::parse::signature::ungroup(ty) {
        Type::Array(a) => Some(&a.elem),
        Type::Path(p) => match &p.path.segments.last()?.arguments {
            syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The fields of a struct-valued local `name` of the struct `layout` (written `path` in its
/// literal): each an owned local `name__field`; with every field of the struct, for
/// messages.
pub fn local_parts(
    name: &Ident,
    layout: &syn::ItemStruct,
    path: &syn::TypePath,
) -> syn::Result<(Vec<Part>, Vec<(syn::Member, Shape)>)> {
    let floats: Vec<Ident> = layout
        .generics
        .type_params()
        .map(|t| t.ident.clone())
        .collect();
    let fields = fields_of(layout, path)?;
    let all = fields
        .iter()
        .map(|(m, s, _, _)| (m.clone(), s.clone()))
        .collect();
    let parts = fields
        .into_iter()
        .filter(|(_, shape, _, written)| holdable(shape, written, &floats))
        .map(|(member, shape, fty, _)| Part {
            ident: format_ident!("{}__{}", name, member_text(&member), span = name.span()),
            member,
            shape,
            field_ty: fty.clone(),
            ty: fty,
            at: Vec::new(),
            seq_at: None,
            seq: false,
        })
        .collect();
    Ok((parts, all))
}

pub fn member_text(m: &syn::Member) -> String {
    match m {
        syn::Member::Named(i) => i.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}

/// The fields of `layout` as used at type `path` (the struct's generic parameters replaced
/// by the arguments `path` gives): member, shape, type, type as written in the struct.
fn fields_of(
    layout: &syn::ItemStruct,
    path: &syn::TypePath,
) -> syn::Result<Vec<(syn::Member, Shape, Type, Type)>> {
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
        out.push((member, shape, ty, f.ty.clone()));
    }
    Ok(out)
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

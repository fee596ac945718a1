//! `#[derive(Differentiable)]`: `zero_like`, and the struct's layout for `#[differentiate]`.
//!
//! A proc macro sees only its own item, so a differentiated function cannot read the fields
//! of a struct it takes. The derive hands them over: besides the trait impl it defines a
//! hidden `macro_rules!` that passes the struct's definition to a callback, and imports that
//! macro under the struct's own name (macros and types live in different namespaces). So
//! wherever the struct can be named (`Params`, `model::Params`, `other_crate::Params`), the
//! function macro can expand `Params! { [callback] .. }` and receive the fields — the same
//! name resolution as the type, deterministic, across modules and crates. A `pub` struct's
//! macro is `#[macro_export]`ed under a name unique to the struct's definition and
//! re-exported next to it.

use super::shape::{is_skipped, shape_of, Shape};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// The derive's expansion; errors at the user's span.
pub fn derive(input: TokenStream) -> TokenStream {
    match derive_inner(input) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

fn derive_inner(input: TokenStream) -> syn::Result<TokenStream> {
    let item: syn::DeriveInput = syn::parse2(input)?;
    let krate: syn::Path = crate_path(&item.attrs)?;
    let data = match &item.data {
        syn::Data::Struct(s) => s,
        syn::Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                "phidiff: `Differentiable` is derived for structs; an enum's active variant can change with the inputs, so its fields have no fixed adjoints: keep the floats in a struct (with the enum as a constant field marked `#[differentiable(skip)]`)",
            ))
        }
        syn::Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "phidiff: `Differentiable` is derived for structs, not unions",
            ))
        }
    };
    let floats: Vec<syn::Ident> = item
        .generics
        .type_params()
        .map(|t| t.ident.clone())
        .collect();
    let mut inits = Vec::new();
    let mut float_params = Vec::new();
    for (n, field) in data.fields.iter().enumerate() {
        let shape = if is_skipped(&field.attrs)? {
            Shape::Constant
        } else {
            shape_of(&field.ty, &floats)
        };
        if let Shape::Unsupported(why) = shape {
            return Err(syn::Error::new_spanned(
                &field.ty,
                format!("phidiff: {why}"),
            ));
        }
        note_float_params(&field.ty, &shape, &floats, &mut float_params);
        let member = match &field.ident {
            Some(i) => syn::Member::Named(i.clone()),
            None => syn::Member::Unnamed(syn::Index::from(n)),
        };
        let value = zero_of(&shape, quote!(&self.#member), &krate, 0, field.ty.span());
        inits.push(quote!(#member: #value));
    }
    let name = &item.ident;
    let mut generics = item.generics.clone();
    for t in generics.type_params_mut() {
        if float_params.contains(&t.ident) {
            t.bounds.push(syn::parse_quote!(#krate::Float));
        }
    }
    let (impl_g, ty_g, where_g) = generics.split_for_impl();
    let imp = quote! {
        #[automatically_derived]
        impl #impl_g #krate::Differentiable for #name #ty_g #where_g {
            fn zero_like(&self) -> Self {
                #name { #(#inits),* }
            }
        }
    };
    let nested = nested_fields(&item, data, &floats)?;
    let layout = layout_macro(&item, &krate, &nested);
    Ok(quote!(#imp #layout))
}

/// The fields holding structs of other types (`inner: Inner<T>`, `layers: Vec<Layer>`):
/// member, the struct's path without generic arguments, and the field type's span. A field
/// of the struct's own type (through a `Vec`) is left out: its layout is the one being made;
/// so is a `Dual`, whose `Differentiable` impl has no layout.
fn nested_fields(
    item: &syn::DeriveInput,
    data: &syn::DataStruct,
    floats: &[syn::Ident],
) -> syn::Result<Vec<(syn::Member, syn::Path, proc_macro2::Span)>> {
    let mut out = Vec::new();
    for (n, field) in data.fields.iter().enumerate() {
        if is_skipped(&field.attrs)? {
            continue;
        }
        let mut shape = shape_of(&field.ty, floats);
        while let Shape::Seq { elem, .. } = shape {
            shape = *elem;
        }
        let Shape::Nested(mut path) = shape else {
            continue;
        };
        // Its own type (a recursive struct), and phidiff's `Dual`, whose `Differentiable`
        // impl is written by hand (no layout; a field of it is not split).
        if path
            .segments
            .last()
            .is_some_and(|s| s.ident == item.ident || s.ident == "Dual")
        {
            continue;
        }
        for s in path.segments.iter_mut() {
            s.arguments = syn::PathArguments::None;
        }
        let member = match &field.ident {
            Some(i) => syn::Member::Named(i.clone()),
            None => syn::Member::Unnamed(syn::Index::from(n)),
        };
        out.push((member, path, field.ty.span()));
    }
    Ok(out)
}

/// `#[differentiable(crate = path)]` on the struct, else `::phidiff`.
fn crate_path(attrs: &[syn::Attribute]) -> syn::Result<syn::Path> {
    let mut krate = syn::parse_quote!(::phidiff);
    for a in attrs.iter().filter(|a| a.path().is_ident("differentiable")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("crate") {
                krate = m.value()?.parse()?;
                Ok(())
            } else {
                Err(m.error(
                    "phidiff: on a struct, the attribute is `#[differentiable(crate = path)]`",
                ))
            }
        })?;
    }
    Ok(krate)
}

/// The type parameters an active field's type `ty` names (floats, or the float parameter
/// of a nested struct).
fn note_float_params(
    ty: &syn::Type,
    shape: &Shape,
    floats: &[syn::Ident],
    out: &mut Vec<syn::Ident>,
) {
    if !shape.is_active() {
        return;
    }
    let text = ty.to_token_stream().to_string();
    for f in floats {
        let f_text = f.to_string();
        if text
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == f_text)
            && !out.contains(f)
        {
            out.push(f.clone());
        }
    }
}

/// The zero of a value of `shape` at `place` (an expression of a reference to it).
fn zero_of(
    shape: &Shape,
    place: TokenStream,
    krate: &syn::Path,
    depth: usize,
    span: proc_macro2::Span,
) -> TokenStream {
    match shape {
        Shape::Float => quote_spanned!(span=> #krate::__private::num_traits::Zero::zero()),
        Shape::Int | Shape::Constant | Shape::Unsupported(_) => {
            quote_spanned!(span=> ::core::clone::Clone::clone(#place))
        }
        Shape::Nested(_) => quote_spanned!(span=> #krate::Differentiable::zero_like(#place)),
        Shape::Seq { vec: true, elem } => {
            let x = format_ident!("__x{}", depth);
            let inner = zero_of(elem, quote!(#x), krate, depth + 1, span);
            quote_spanned!(span=> (#place).iter().map(|#x| #inner).collect::<::std::vec::Vec<_>>())
        }
        Shape::Seq { vec: false, elem } => {
            let i = format_ident!("__i{}", depth);
            let inner = zero_of(elem, quote!(&(#place)[#i]), krate, depth + 1, span);
            quote_spanned!(span=> ::core::array::from_fn(|#i| #inner))
        }
    }
}

/// The hidden `macro_rules!` that hands the struct's definition (and the layouts of the
/// structs in its fields) to a callback, imported under the struct's name.
///
/// A struct holding other structs (`inner: Inner<T>`) first asks for their layouts where
/// their names resolve, here at the struct's own site: `Inner! { [layout_chain] .. }` hands
/// `Inner`'s layout to [`chain`], which asks for the next one or, with all known, defines
/// the macro with `struct Outer { .. } inner => { struct Inner { .. } }`.
fn layout_macro(
    item: &syn::DeriveInput,
    krate: &syn::Path,
    nested: &[(syn::Member, syn::Path, proc_macro2::Span)],
) -> TokenStream {
    let name = &item.ident;
    let mut definition = item.clone();
    definition.attrs.clear();
    if let syn::Data::Struct(s) = &mut definition.data {
        for f in s.fields.iter_mut() {
            f.attrs.retain(|a| a.path().is_ident("differentiable"));
        }
    }
    let definition = struct_tokens(&definition);
    // Unique to this definition: two structs of one name in two modules of a crate must
    // not collide at the crate root, where `#[macro_export]` puts the macro.
    // The same file may be compiled twice in a crate (`#[path]` modules), so the definition
    // does not make the name unique: the derives of one crate are also counted, in the
    // order rustc expands them.
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let macro_name = format_ident!(
        "__phidiff_layout_{}_{:016x}_{}",
        name,
        fnv1a(&definition.to_string()),
        count
    );
    let exported = matches!(item.vis, syn::Visibility::Public(_));
    let Some((_, first, span)) = nested.first() else {
        return define_layout(&macro_name, name, exported, &definition);
    };
    let first = super::respan(first.to_token_stream(), *span);
    let pending = nested.iter().map(|(m, p, span)| {
        let p = super::respan(p.to_token_stream(), *span);
        quote!(#m => #p ;)
    });
    let exported = syn::LitBool::new(exported, proc_macro2::Span::call_site());
    quote! {
        #first! { [#krate::__private::layout_chain] {#krate} {#macro_name} {#exported} {#name} {#definition} {#(#pending)*} {} }
    }
}

/// The layout macro `macro_name` handing `content` (the struct's definition, then the
/// layouts of its nested structs by field) to callbacks, imported as `name`.
fn define_layout(
    macro_name: &syn::Ident,
    name: &syn::Ident,
    exported: bool,
    content: &TokenStream,
) -> TokenStream {
    let body = quote! {
        ([$($cb:tt)*] $($rest:tt)*) => {
            $($cb)*! { @layout { #content } $($rest)* }
        };
    };
    if exported {
        quote! {
            #[doc(hidden)]
            #[macro_export]
            macro_rules! #macro_name { #body }
            #[doc(hidden)]
            pub use #macro_name as #name;
        }
    } else {
        quote! {
            #[doc(hidden)]
            #[allow(unused_macros)]
            macro_rules! #macro_name { #body }
            #[doc(hidden)]
            #[allow(unused_imports)]
            pub(crate) use #macro_name as #name;
        }
    }
}

/// The input of `layout_chain!`: a nested struct's layout, then what [`layout_macro`] set out.
struct Chain {
    layout: TokenStream,
    krate: syn::Path,
    macro_name: syn::Ident,
    exported: bool,
    name: syn::Ident,
    definition: TokenStream,
    /// `member => Path ;`, the first being the one whose layout came.
    pending: Vec<(TokenStream, syn::Path)>,
    /// `member => { layout }` so far.
    known: TokenStream,
}

impl syn::parse::Parse for Chain {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        fn braced(input: syn::parse::ParseStream) -> syn::Result<TokenStream> {
            let content;
            syn::braced!(content in input);
            content.parse()
        }
        input.parse::<syn::Token![@]>()?;
        input.parse::<syn::Ident>()?;
        let layout = braced(input)?;
        let krate = syn::parse2(braced(input)?)?;
        let macro_name = syn::parse2(braced(input)?)?;
        let exported: syn::LitBool = syn::parse2(braced(input)?)?;
        let name = syn::parse2(braced(input)?)?;
        let definition = braced(input)?;
        let pending = syn::parse::Parser::parse2(
            |s: syn::parse::ParseStream| {
                let mut v = Vec::new();
                while !s.is_empty() {
                    let m: syn::Member = s.parse()?;
                    s.parse::<syn::Token![=>]>()?;
                    let p = s.call(syn::Path::parse_mod_style)?;
                    s.parse::<syn::Token![;]>()?;
                    v.push((m.into_token_stream(), p));
                }
                Ok(v)
            },
            braced(input)?,
        )?;
        let known = braced(input)?;
        Ok(Chain {
            layout,
            krate,
            macro_name,
            exported: exported.value,
            name,
            definition,
            pending,
            known,
        })
    }
}

/// `layout_chain!`: one more nested layout of a deriving struct; the next request, or the
/// struct's layout macro.
pub fn chain(input: TokenStream) -> TokenStream {
    let c: Chain = match syn::parse2(input) {
        Ok(c) => c,
        Err(e) => return e.to_compile_error(),
    };
    let Some(((member, _), rest)) = c.pending.split_first() else {
        return quote!(compile_error!("phidiff internal: a layout nobody asked for"););
    };
    let layout = &c.layout;
    let mut known = c.known.clone();
    known.extend(quote!(#member => { #layout }));
    let (krate, macro_name, name, definition) = (&c.krate, &c.macro_name, &c.name, &c.definition);
    match rest.first() {
        Some((_, next)) => {
            let pending = rest.iter().map(|(m, p)| quote!(#m => #p ;));
            let exported = syn::LitBool::new(c.exported, proc_macro2::Span::call_site());
            quote! {
                #next! { [#krate::__private::layout_chain] {#krate} {#macro_name} {#exported} {#name} {#definition} {#(#pending)*} {#known} }
            }
        }
        None => define_layout(macro_name, name, c.exported, &quote!(#definition #known)),
    }
}

/// `struct Name<G> where .. { fields }` (or a tuple struct) of a derive input.
fn struct_tokens(item: &syn::DeriveInput) -> TokenStream {
    let name = &item.ident;
    let generics = &item.generics;
    let where_clause = &generics.where_clause;
    match &item.data {
        syn::Data::Struct(s) => match &s.fields {
            syn::Fields::Named(f) => quote!(struct #name #generics #where_clause #f),
            syn::Fields::Unnamed(f) => quote!(struct #name #generics #f #where_clause;),
            syn::Fields::Unit => quote!(struct #name #generics #where_clause;),
        },
        _ => quote!(),
    }
}

/// FNV-1a: a hash that is the same on every machine and compiler version.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_like_and_layout() {
        let out = derive(quote! {
            pub struct Params<T> { k: T, w: Vec<[T; 3]>, n: usize, #[differentiable(skip)] c: f64, inner: Inner<T> }
        })
        .to_string();
        assert!(out.contains("impl < T : :: phidiff :: Float >"), "{out}");
        assert!(
            out.contains("c : :: core :: clone :: Clone :: clone (& self . c)"),
            "{out}"
        );
        assert!(
            out.contains("inner : :: phidiff :: Differentiable :: zero_like (& self . inner)"),
            "{out}"
        );
        // A struct holding another asks for its layout first.
        assert!(
            out.contains("Inner ! { [:: phidiff :: __private :: layout_chain]"),
            "{out}"
        );
        assert!(!out.contains("macro_rules"), "{out}");
        let out = derive(quote! { pub struct Inner<T> { x: T } }).to_string();
        assert!(out.contains("# [macro_export]"), "{out}");
        assert!(out.contains("pub use __phidiff_layout_Inner_"), "{out}");
    }

    #[test]
    fn recursive_and_dual_fields_ask_for_no_layout() {
        let out = derive(quote! {
            pub struct Tree { w: f64, children: Vec<Tree>, d: phidiff::Dual<f64> }
        })
        .to_string();
        assert!(!out.contains("layout_chain"), "{out}");
        assert!(out.contains("macro_rules"), "{out}");
    }

    #[test]
    fn nested_layouts_are_chained() {
        // `Outer { a: A, bs: Vec<B> }`: `A`'s layout comes, `B` is asked for next.
        let step = chain(quote! {
            @layout { struct A { x: f64 } }
            {::phidiff} {__phidiff_layout_Outer_0} {true} {Outer}
            {struct Outer { a: A, bs: Vec<B> }}
            {a => A ; bs => m::B ;} {}
        })
        .to_string();
        assert!(
            step.starts_with("m :: B ! { [:: phidiff :: __private :: layout_chain]"),
            "{step}"
        );
        assert!(
            step.contains("{ bs => m :: B ; } { a => { struct A { x : f64 } } }"),
            "{step}"
        );
        // The last one defines the macro, with the nested layouts after the definition.
        let done = chain(quote! {
            @layout { struct B { y: f64 } }
            {::phidiff} {__phidiff_layout_Outer_0} {false} {Outer}
            {struct Outer { a: A, bs: Vec<B> }}
            {bs => m::B ;} {a => { struct A { x: f64 } }}
        })
        .to_string();
        assert!(
            done.contains("macro_rules ! __phidiff_layout_Outer_0"),
            "{done}"
        );
        assert!(
            done.contains("@ layout { struct Outer { a : A , bs : Vec < B > } a => { struct A { x : f64 } } bs => { struct B { y : f64 } } }"),
            "{done}"
        );
        assert!(
            done.contains("pub (crate) use __phidiff_layout_Outer_0 as Outer"),
            "{done}"
        );
    }

    #[test]
    fn enums_and_borrowed_fields_are_errors() {
        let out = derive(quote!(
            enum E {
                A(f64),
            }
        ))
        .to_string();
        assert!(out.contains("compile_error"), "{out}");
        let out = derive(quote!(
            struct S<'a> {
                x: &'a [f64],
            }
        ))
        .to_string();
        assert!(out.contains("borrows floats"), "{out}");
    }
}

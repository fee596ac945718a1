//! `#[differentiate]` on impl blocks: an inherent impl's methods differentiated with the
//! block's header for `Self`, and a trait impl whose derivatives go to an inherent impl
//! beside it; finding a method's impl block in its file.

use crate::expand::SourceFile;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::parse::ParseStream;

/// `#[differentiate]` on an inherent impl block: each method carrying its own
/// `#[differentiate(..)]` is differentiated as a method of this impl (the block's header
/// gives `Self`, where the method's attribute alone cannot see it, as in macro-generated
/// code or doc tests).
pub fn expand_impl(
    args: TokenStream,
    mut imp: syn::ItemImpl,
    source: Option<SourceFile<'_>>,
) -> TokenStream {
    // `coarsen = off` (the tests' `differentiate_coarsen_off`) goes to every method.
    let coarsen_off = args.to_string().replace(' ', "") == "coarsen=off";
    if !args.is_empty() && !coarsen_off {
        let err = syn::Error::new_spanned(
            &args,
            "phidiff: `#[differentiate]` on an impl block takes no arguments: put them on the methods (`#[differentiate(forward, reverse)]`)",
        )
        .to_compile_error();
        return quote!(#imp #err);
    }
    // A trait impl keeps its methods as written; their derivatives (which a trait impl
    // cannot hold) go to an inherent impl of the same type beside it.
    let in_trait = imp.trait_.is_some();
    let mut header = imp.clone();
    header.items.clear();
    header.attrs.clear();
    header.trait_ = None;
    let mut out = Vec::new();
    let mut trait_items = Vec::new();
    for item in std::mem::take(&mut imp.items) {
        let syn::ImplItem::Fn(mut f) = item else {
            match in_trait {
                true => trait_items.push(item.into_token_stream()),
                false => out.push(item.into_token_stream()),
            }
            continue;
        };
        if in_trait {
            // The method as written, less the attributes rustc would reject.
            let mut plain = syn::ItemFn {
                attrs: f.attrs.clone(),
                vis: f.vis.clone(),
                sig: f.sig.clone(),
                block: Box::new(f.block.clone()),
            };
            plain.attrs.retain(|a| !is_differentiate(a));
            let _ = crate::parse::checkpoint::strip(&mut plain);
            let plain = syn::ImplItemFn {
                attrs: plain.attrs,
                vis: plain.vis,
                defaultness: f.defaultness,
                sig: plain.sig,
                block: *plain.block,
            };
            trait_items.push(plain.into_token_stream());
            if !f.attrs.iter().any(is_differentiate) {
                continue;
            }
            // The derivatives are public methods of the type, as the trait's method is.
            f.vis = syn::parse_quote!(pub);
        }
        let position = f.attrs.iter().position(is_differentiate);
        let Some(position) = position else {
            out.push(f.into_token_stream());
            continue;
        };
        let mut attrs = f.attrs.clone();
        let attr = attrs.remove(position);
        let mut method_args = match &attr.meta {
            syn::Meta::List(l) => l.tokens.clone(),
            _ => TokenStream::new(),
        };
        if coarsen_off
            || attr
                .path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "differentiate_coarsen_off")
        {
            if !method_args.is_empty() {
                method_args.extend(quote!(,));
            }
            method_args.extend(quote!(coarsen = off));
        }
        let method = syn::ItemFn {
            attrs,
            vis: f.vis,
            sig: f.sig,
            block: Box::new(f.block),
        };
        let tokens = method.to_token_stream();
        let expanded =
            crate::expand::expand_fn(method_args, &method, &tokens, Some(&header), source);
        out.push(match in_trait {
            true => without_fn(expanded, &method.sig.ident),
            false => expanded,
        });
    }
    let attrs = &imp.attrs;
    let (impl_g, _, where_g) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;
    let unsafety = &imp.unsafety;
    let defaultness = &imp.defaultness;
    match &imp.trait_ {
        // The inherent impl beside a trait impl is never `unsafe` or `default`.
        Some((bang, path, for_token)) => quote! {
            #(#attrs)* #defaultness #unsafety impl #impl_g #bang #path #for_token #self_ty #where_g {
                #(#trait_items)*
            }
            impl #impl_g #self_ty #where_g {
                #(#out)*
            }
        },
        None => quote! {
            #(#attrs)* #defaultness #unsafety impl #impl_g #self_ty #where_g {
                #(#out)*
            }
        },
    }
}

/// Whether `a` is `#[differentiate(..)]` (or the `coarsen = off` variant the tests use).
fn is_differentiate(a: &syn::Attribute) -> bool {
    a.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "differentiate" || s.ident == "differentiate_coarsen_off")
}

/// The items of `tokens` less the function `name` (the primal of a trait's method, which
/// stays in the trait impl), or `tokens` as they are when they are not impl items.
fn without_fn(tokens: TokenStream, name: &syn::Ident) -> TokenStream {
    let items = syn::parse::Parser::parse2(
        |s: ParseStream| {
            let mut v = Vec::new();
            while !s.is_empty() {
                v.push(s.parse::<syn::ImplItem>()?);
            }
            Ok(v)
        },
        tokens.clone(),
    );
    match items {
        Ok(items) => items
            .into_iter()
            .filter(|i| !matches!(i, syn::ImplItem::Fn(f) if f.sig.ident == *name))
            .map(|i| i.into_token_stream())
            .collect(),
        Err(_) => tokens,
    }
}

/// Whether the file shows method `item` in a trait impl.
pub fn in_trait_impl(item: &syn::ItemFn, text: &str) -> bool {
    fn walk(items: &[syn::Item], sig: &str) -> bool {
        items.iter().any(|i| match i {
            syn::Item::Impl(imp) if imp.trait_.is_some() => imp.items.iter().any(
                |it| matches!(it, syn::ImplItem::Fn(f) if f.sig.to_token_stream().to_string() == sig),
            ),
            syn::Item::Mod(m) => m.content.as_ref().is_some_and(|(_, items)| walk(items, sig)),
            _ => false,
        })
    }
    let sig = item.sig.to_token_stream().to_string();
    syn::parse_file(text).is_ok_and(|f| walk(&f.items, &sig))
}

/// The header of the inherent impl block that holds method `item`, read from the file (a
/// method's attribute does not see its impl): `impl<G> Type where .. {}`.
pub fn impl_of(item: &syn::ItemFn, text: &str) -> Option<syn::ItemImpl> {
    let file = syn::parse_file(text).ok()?;
    let sig = item.sig.to_token_stream().to_string();
    let mut found: Vec<syn::ItemImpl> = Vec::new();
    fn walk(items: &[syn::Item], sig: &str, name: &syn::Ident, found: &mut Vec<syn::ItemImpl>) {
        for i in items {
            match i {
                syn::Item::Impl(imp) if imp.trait_.is_none() => {
                    let holds = imp.items.iter().any(|it| {
                        matches!(it, syn::ImplItem::Fn(f) if f.sig.ident == *name
                            && f.sig.to_token_stream().to_string() == sig)
                    });
                    if holds {
                        let mut header = imp.clone();
                        header.items.clear();
                        header.attrs.clear();
                        found.push(header);
                    }
                }
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        walk(items, sig, name, found);
                    }
                }
                _ => {}
            }
        }
    }
    walk(&file.items, &sig, &item.sig.ident, &mut found);
    let first = found.first()?.to_token_stream().to_string();
    // One impl, or several with one header (a file compiled twice).
    found
        .iter()
        .all(|h| h.to_token_stream().to_string() == first)
        .then(|| found.swap_remove(0))
}

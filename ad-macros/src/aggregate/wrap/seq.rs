//! Sequences of structs in the wrappers: a slice of structs, or a `Vec` field of structs,
//! passed to the exploded function as one buffer per field, copied out before the call and
//! back after it.

use super::{Form, Param, Wrapper};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

impl Wrapper<'_> {
    /// A slice, array or `Vec` of structs passed to the exploded function as one buffer per
    /// field: each field copied out (`__c_xs_f`) before the call and, for `&mut`, back
    /// after it; the derivative `d` (a shadow or tangent of the same shape, where the
    /// exploded function takes one: `takes(j)` for its parameter `j`) likewise, and always
    /// back after it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn seq_copies(
        &self,
        k: usize,
        d: Option<&Ident>,
        shadow: bool,
        takes: &dyn Fn(usize) -> bool,
        pre: &mut TokenStream,
        args: &mut Vec<TokenStream>,
        post: &mut TokenStream,
    ) {
        let Param::Struct {
            name, form, parts, ..
        } = &self.params[k]
        else {
            return;
        };
        let start = self.inner_index()[k];
        let rt = self.krate;
        if let Some(d) = d {
            let (label, dlabel) = (name.to_string(), d.to_string());
            pre.extend(quote!(#rt::__private::check_len(#label, #dlabel, #name.len(), #d.len());));
        }
        for (i, part) in parts.iter().enumerate() {
            let d = d.filter(|_| takes(start + i)).map(|d| quote!(#d));
            let copy = SeqCopy {
                base: quote!(#name),
                d,
                elem: part.path(),
            };
            copy.emit(part, *form, shadow, pre, args, post);
        }
    }

    /// A field of the structs in a `Vec` field of struct parameter `name` (`m.layers`):
    /// copied out like a field of a slice of structs, its lengths checked where the
    /// derivative `d` (`dm`) takes it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn seq_field_copies(
        &self,
        name: &Ident,
        form: Form,
        part: &crate::aggregate::explode::Part,
        d: Option<&TokenStream>,
        shadow: bool,
        pre: &mut TokenStream,
        args: &mut Vec<TokenStream>,
        post: &mut TokenStream,
    ) {
        let (outer, elem) = part.seq_path().expect("a field of a `Vec` of structs");
        let rt = self.krate;
        if let Some(d) = d {
            let label = format!("{name}.{}", outer.to_string().replace(' ', ""));
            let dlabel = format!(
                "{}.{}",
                d.to_string().replace(' ', ""),
                outer.to_string().replace(' ', "")
            );
            pre.extend(quote!(#rt::__private::check_len(#label, #dlabel, #name.#outer.len(), #d.#outer.len());));
        }
        let copy = SeqCopy {
            base: quote!(#name.#outer),
            d: d.map(|d| quote!(#d.#outer)),
            elem,
        };
        copy.emit(part, form, shadow, pre, args, post);
    }
}

/// One field of a sequence of structs passed as a buffer of its own: the sequence `base`
/// (`bodies`, `m.layers`), its derivative `d` where the exploded function takes one, and
/// the field's place in an element (`pos`, `gate.b`).
struct SeqCopy {
    base: TokenStream,
    d: Option<TokenStream>,
    elem: TokenStream,
}

impl SeqCopy {
    /// The copies out before the call (`__c_..`, `__d_..`), the arguments, and the copies
    /// back after it (for `&mut`, and always for a shadow).
    fn emit(
        &self,
        part: &crate::aggregate::explode::Part,
        form: Form,
        shadow: bool,
        pre: &mut TokenStream,
        args: &mut Vec<TokenStream>,
        post: &mut TokenStream,
    ) {
        let (base, m, fty) = (&self.base, &self.elem, &part.field_ty);
        let pass = |v: &Ident| match form {
            Form::Ref => quote!(&#v),
            Form::Mut => quote!(&mut #v),
            Form::Value => quote!(#v),
        };
        let c = format_ident!("__c_{}", part.ident);
        pre.extend(quote! {
            let mut #c: Vec<#fty> = #base.iter().map(|__e| ::core::clone::Clone::clone(&__e.#m)).collect();
        });
        args.push(pass(&c));
        if form == Form::Mut {
            post.extend(quote! {
                for (__e, __v) in #base.iter_mut().zip(#c) { __e.#m = __v; }
            });
        }
        let Some(d) = &self.d else {
            return;
        };
        let dc = format_ident!("__d_{}", part.ident);
        pre.extend(quote! {
            let mut #dc: Vec<#fty> = #d.iter().map(|__e| ::core::clone::Clone::clone(&__e.#m)).collect();
        });
        // A shadow is `&mut` and goes back; a tangent is passed like its primal.
        args.push(match shadow {
            true => quote!(&mut #dc),
            false => pass(&dc),
        });
        if shadow || form == Form::Mut {
            post.extend(quote! {
                for (__e, __v) in #d.iter_mut().zip(#dc) { __e.#m = __v; }
            });
        }
    }
}

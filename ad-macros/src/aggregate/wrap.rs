//! The functions the user calls for a function taking structs: `f_fwd`, `f_rev`, `f_grad`
//! with the contract's signatures (`p: &Params, dp: &mut Params`, a struct by value's
//! adjoint returned as a struct), each passing the struct's fields to the derivative of the
//! exploded function (`explode`). They are a few moves and borrows, which inlining removes.

mod seq;

use super::explode::{Form, Param};
use crate::codegen::signature::{element_type, is_scalar_ref, param_tokens, zeroed_shadow, Layout};
use crate::parse::signature::{FloatTy, Signature};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

pub struct Wrapper<'a> {
    pub item: &'a syn::ItemFn,
    pub params: &'a [Param],
    /// The signature of the exploded function.
    pub inner: &'a Signature,
    /// The generics the exploded function is called with (the function's own).
    pub inner_generics: &'a syn::Generics,
    /// A method: `_grad` calls `Self::f_rev`.
    pub method: bool,
    /// The element types of a tuple result (outputs of the exploded function, after its
    /// parameters).
    pub outputs: &'a [syn::Type],
    /// A struct result, whose fields are the outputs.
    pub result: Option<&'a super::outputs::StructResult>,
    pub krate: &'a syn::Path,
}

impl Wrapper<'_> {
    /// The names the wrapper's parameters take (to pick derivative names that are free).
    fn names(&self) -> Vec<String> {
        self.params
            .iter()
            .map(|p| match p {
                Param::Plain(pt) => pt.pat.to_token_stream().to_string().replace("mut ", ""),
                Param::Struct { name, .. } => name.to_string(),
            })
            .collect()
    }

    fn derivative_name(&self, name: &str) -> Ident {
        let names = self.names();
        format_ident!(
            "{}",
            crate::derivative::shadow_name(name, names.iter().map(String::as_str))
        )
    }

    fn seed_name(&self) -> Ident {
        let names = self.names();
        format_ident!(
            "{}",
            crate::derivative::seed_name(names.iter().map(String::as_str))
        )
    }

    /// The index of each parameter's first field (or itself) among the exploded ones.
    fn inner_index(&self) -> Vec<usize> {
        let mut at = 0;
        self.params
            .iter()
            .map(|p| {
                let here = at;
                at += match p {
                    Param::Plain(_) => 1,
                    Param::Struct { parts, .. } => parts.len(),
                };
                here
            })
            .collect()
    }

    /// The code generator's header of the user's function, over the split signature.
    fn header(&self) -> crate::codegen::signature::Header<'_> {
        crate::codegen::signature::Header {
            item: self.item,
            sig: self.inner,
            krate: self.krate,
        }
    }

    fn result_ty(&self) -> TokenStream {
        self.header().result_ty()
    }

    /// The type of the adjoint of a float parameter of type `ty`.
    fn scalar_ty(&self, ty: &syn::Type) -> TokenStream {
        let p = crate::parse::signature::ParamSpec {
            name: format_ident!("__scalar"),
            ty: ty.clone(),
            class: crate::parse::signature::ParamClass::Float,
            active: true,
            pat_mut: false,
        };
        self.header().scalar_ty(&p)
    }

    /// Whether any field of struct parameter `k` is active.
    fn struct_active(&self, k: usize) -> bool {
        let Param::Struct { parts, .. } = &self.params[k] else {
            return false;
        };
        let start = self.inner_index()[k];
        (start..start + parts.len()).any(|j| self.inner.params[j].active)
    }

    /// The float zero (typed by where it goes).
    fn zero(&self) -> TokenStream {
        let rt = self.krate;
        quote!(#rt::__private::num_traits::Zero::zero())
    }

    fn wrap(
        &self,
        name: &Ident,
        params: Vec<TokenStream>,
        ret: TokenStream,
        body: TokenStream,
    ) -> TokenStream {
        self.header().wrap(name, params, ret, body)
    }

    /// `-> R` around `outs` (collapsed), and the body giving them; fallible functions wrap
    /// both in their `Option`/`Result`.
    fn result(
        &self,
        outs: Vec<(TokenStream, TokenStream)>,
        body: TokenStream,
    ) -> (TokenStream, TokenStream) {
        let (tys, vals): (Vec<_>, Vec<_>) = outs.into_iter().unzip();
        let (ty, val) = match tys.len() {
            0 => (None, quote!()),
            1 => (Some(tys[0].clone()), vals[0].clone()),
            _ => (Some(quote!((#(#tys),*))), quote!((#(#vals),*))),
        };
        match (&self.inner.fallible, ty) {
            (None, None) => (quote!(), quote!(#body #val)),
            (None, Some(t)) => (quote!(-> #t), quote!(#body #val)),
            (Some(f), t) => {
                let around = f.around(t.unwrap_or_else(|| quote!(())));
                let ok = f.success(quote!((#val)));
                (quote!(-> #around), quote!(#body #ok))
            }
        }
    }

    /// The type of the outputs together: the tuple, or the struct.
    fn output_ty(&self) -> TokenStream {
        match self.result {
            Some(r) => r.ty.to_token_stream(),
            None => {
                let tys = self.outputs;
                quote!((#(#tys),*))
            }
        }
    }

    /// The array type of output `k` (one element, or an array field's length) and its zero.
    fn output_buffer(&self, k: usize) -> (TokenStream, TokenStream) {
        let (t, zero) = (&self.outputs[k], self.zero());
        match self.result.and_then(|r| r.fields[k].len.as_ref()) {
            Some(n) => (quote!([#t; #n]), quote!([#zero; #n])),
            None => (quote!([#t; 1]), quote!([#zero])),
        }
    }

    /// Output `k` of the value `v` (a seed) as an array, as the output is passed.
    fn output_part(&self, k: usize, v: &Ident) -> TokenStream {
        match self.result {
            Some(r) => {
                let m = &r.fields[k].member;
                match r.fields[k].len {
                    Some(_) => quote!(#v.#m),
                    None => quote!([#v.#m]),
                }
            }
            None => {
                let k = syn::Index::from(k);
                quote!([#v.#k])
            }
        }
    }

    /// The tuple or struct of the outputs held in the arrays `arrays`.
    fn output_value(&self, arrays: &[Ident]) -> TokenStream {
        match self.result {
            Some(r) => {
                let fields = r.fields.iter().zip(arrays).map(|(f, a)| {
                    let m = &f.member;
                    match f.len {
                        Some(_) => quote!(#m: #a),
                        None => quote!(#m: #a[0]),
                    }
                });
                let name = r.ty.to_token_stream();
                // The struct's path as an expression (`State::<f64> { .. }`).
                let path: syn::Path = match syn::parse2::<syn::TypePath>(name.clone()) {
                    Ok(mut p) => {
                        if let Some(last) = p.path.segments.last_mut() {
                            if let syn::PathArguments::AngleBracketed(a) = &mut last.arguments {
                                a.colon2_token = Some(Default::default());
                            }
                        }
                        p.path
                    }
                    Err(_) => syn::parse_quote!(Self),
                };
                quote!(#path { #(#fields),* })
            }
            None => quote!((#(#arrays[0]),*)),
        }
    }

    /// A struct parameter as written (`mut p: Params`).
    fn struct_param_tokens(name: &Ident, ty: &syn::Type, mutable: bool) -> TokenStream {
        match mutable {
            true => quote!(mut #name: #ty),
            false => quote!(#name: #ty),
        }
    }

    /// The length checks of the `Vec` fields of a struct's derivative `d`.
    fn field_checks(&self, k: usize, d: &TokenStream) -> TokenStream {
        let Param::Struct { name, parts, .. } = &self.params[k] else {
            return quote!();
        };
        let start = self.inner_index()[k];
        let rt = self.krate;
        let mut out = quote!();
        for (i, part) in parts.iter().enumerate() {
            let is_vec = matches!(part.shape, super::shape::Shape::Seq { vec: true, .. });
            if self.inner.params[start + i].active && is_vec && part.seq_at.is_none() {
                let m = part.path();
                let (label, dlabel) = (
                    format!("{name}.{}", m.to_token_stream()),
                    format!("{}.{}", d.to_string().replace(' ', ""), m.to_token_stream()),
                );
                out.extend(quote!(#rt::__private::check_field_len(#label, #dlabel, #name.#m.len(), #d.#m.len());));
            }
        }
        out
    }

    /// The call of the exploded function's derivative `inner_name` with `args`, its results
    /// bound to `bound` (`__r0`, ..).
    fn call_inner(&self, inner_name: &Ident, args: &[TokenStream], bound: &[Ident]) -> TokenStream {
        let question = self.inner.fallible.as_ref().map(|_| quote!(?));
        let tf = crate::codegen::signature::turbofish(self.inner_generics);
        let path = self.method.then(|| quote!(Self::));
        let call = quote!(#path #inner_name #tf (#(#args),*) #question);
        match bound.len() {
            0 => quote!(#call;),
            1 => quote!(let __r0 = #call;),
            _ => quote!(let (#(#bound),*) = #call;),
        }
    }

    /// The argument passing field `part` of struct parameter `name` to the exploded function.
    fn field_arg(name: &Ident, form: Form, part: &super::explode::Part) -> TokenStream {
        let m = part.path();
        if part.one_element(form) {
            return quote!(::core::slice::from_mut(&mut #name.#m));
        }
        match (form, part.by_reference(form)) {
            (_, false) => quote!(#name.#m),
            (Form::Mut, true) => quote!(&mut #name.#m),
            (_, true) => quote!(&#name.#m),
        }
    }

    /// `f_rev`: `p: &S, dp: &mut S` for a struct by reference, a struct by value's adjoint
    /// returned as an `S`.
    pub fn reverse(&self, name: &Ident, inner_name: &Ident) -> TokenStream {
        let inner_layout = Layout::reverse(self.inner);
        let has_shadow = |j: usize| {
            inner_layout
                .slots
                .contains(&crate::codegen::signature::Slot::Derivative(j))
        };
        let index = self.inner_index();
        let (mut params, mut args, mut pre, mut post) = (vec![], vec![], quote!(), quote!());
        let mut returned = Vec::new(); // results of the inner call, in order: (binding, target)
        let mut outs = Vec::new();
        if self.inner.returns_float {
            returned.push(None);
        }
        let mut per_param_out: Vec<Option<(TokenStream, TokenStream)>> =
            vec![None; self.params.len()];
        for (k, p) in self.params.iter().enumerate() {
            match p {
                Param::Plain(_) => {
                    let j = index[k];
                    let ps = &self.inner.params[j];
                    params.push(param_tokens(ps));
                    let n = &ps.name;
                    args.push(quote!(#n));
                    if has_shadow(j) {
                        let d = self.derivative_name(&n.to_string());
                        let e = element_type(&ps.ty);
                        params.push(match is_scalar_ref(ps) {
                            true => quote!(#d: &mut #e),
                            false => quote!(#d: &mut [#e]),
                        });
                        args.push(quote!(#d));
                    }
                    if ps.is_active_scalar() {
                        let r = format_ident!("__r{}", returned.len());
                        returned.push(Some(r.clone()));
                        per_param_out[k] = Some((self.scalar_ty(&ps.ty), quote!(#r)));
                    }
                }
                Param::Struct {
                    name,
                    ty,
                    struct_ty,
                    mutable,
                    seq: true,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(name, ty, *mutable));
                    let d = self.derivative_name(&name.to_string());
                    let shadow = self.struct_active(k).then_some(&d);
                    if shadow.is_some() {
                        params.push(quote!(#d: &mut [#struct_ty]));
                    }
                    self.seq_copies(k, shadow, true, &has_shadow, &mut pre, &mut args, &mut post);
                }
                Param::Struct {
                    name,
                    ty,
                    struct_ty,
                    form,
                    mutable,
                    parts,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(name, ty, *mutable));
                    let active = self.struct_active(k);
                    let d: TokenStream = match form {
                        Form::Value => {
                            let d = format_ident!("__d_{}", name);
                            if active {
                                let rt = self.krate;
                                pre.extend(quote!(let mut #d: #struct_ty = #rt::Differentiable::zero_like(&#name);));
                                per_param_out[k] = Some((quote!(#struct_ty), quote!(#d)));
                            }
                            quote!(#d)
                        }
                        _ => {
                            let d = self.derivative_name(&name.to_string());
                            if active {
                                params.push(quote!(#d: &mut #struct_ty));
                                pre.extend(self.field_checks(k, &quote!(#d)));
                            }
                            quote!(#d)
                        }
                    };
                    for (i, part) in parts.iter().enumerate() {
                        let j = index[k] + i;
                        if part.seq_at.is_some() {
                            let d = has_shadow(j).then_some(&d);
                            self.seq_field_copies(
                                name, *form, part, d, true, &mut pre, &mut args, &mut post,
                            );
                            continue;
                        }
                        args.push(Self::field_arg(name, *form, part));
                        let m = part.path();
                        if has_shadow(j) {
                            args.push(match part.one_element(*form) {
                                true => quote!(::core::slice::from_mut(&mut #d.#m)),
                                false => quote!(&mut #d.#m),
                            });
                        }
                        if self.inner.params[j].is_active_scalar() {
                            let r = format_ident!("__r{}", returned.len());
                            returned.push(Some(r.clone()));
                            post.extend(quote!(#d.#m = #d.#m + #r;));
                        }
                    }
                }
            }
        }
        let seed = self.seed_name();
        if self.inner.returns_float {
            let rt = self.result_ty();
            params.push(quote!(#seed: #rt));
            args.push(quote!(#seed));
            outs.push((rt, quote!(__r0)));
        }
        if !self.outputs.is_empty() {
            // Each output and its adjoint (the seed's element) as slices.
            let ty = self.output_ty();
            params.push(quote!(#seed: #ty));
            let mut values = Vec::new();
            for k in 0..self.outputs.len() {
                let (o, d) = (format_ident!("__o{}", k), format_ident!("__s{}", k));
                let ((ty, zero), seed_k) = (self.output_buffer(k), self.output_part(k, &seed));
                pre.extend(quote!(let mut #o: #ty = #zero; let mut #d: #ty = #seed_k;));
                args.push(quote!(&mut #o));
                args.push(quote!(&mut #d));
                values.push(o);
            }
            outs.push((self.output_ty(), self.output_value(&values)));
        }
        outs.extend(per_param_out.into_iter().flatten());
        let bound: Vec<Ident> = (0..returned.len())
            .map(|i| format_ident!("__r{}", i))
            .collect();
        let bind = self.call_inner(inner_name, &args, &bound);
        let (ret, body) = self.result(outs, quote!(#pre #bind #post));
        self.wrap(name, params, ret, body)
    }

    /// An error at `name` (of `mode(width = N)`) where the batched wrapper is not written
    /// yet: slices of structs, structs by value, several outputs.
    fn batchable(&self, name: &Ident, mode: &str) -> syn::Result<()> {
        let what = if !self.outputs.is_empty() {
            Some("several outputs")
        } else {
            self.params.iter().find_map(|p| match p {
                Param::Struct { seq: true, .. } => Some("slices of structs"),
                Param::Struct { parts, .. } if parts.iter().any(|q| q.seq_at.is_some()) => {
                    Some("structs holding `Vec`s of structs")
                }
                Param::Struct {
                    form: Form::Value, ..
                } => Some("structs by value"),
                _ => None,
            })
        };
        match what {
            Some(what) => Err(syn::Error::new(
                name.span(),
                format!("phidiff: `{mode}(width = N)` is not generated for functions taking {what} yet; use `{mode}`"),
            )),
            None => Ok(()),
        }
    }

    /// The derivative of struct parameter `k` (`sname`) as `width` lanes of type `lane_ty`
    /// (`d: [&mut S; N]`, length-checked lane by lane, then taken apart into the names it
    /// returns), where the struct is active.
    fn struct_lanes(
        &self,
        k: usize,
        sname: &Ident,
        lane_ty: TokenStream,
        width: usize,
        params: &mut Vec<TokenStream>,
        pre: &mut TokenStream,
    ) -> Vec<Ident> {
        let d = self.derivative_name(&sname.to_string());
        let lanes: Vec<Ident> = (0..width)
            .map(|l| format_ident!("__{}_l{}", d, l))
            .collect();
        if self.struct_active(k) {
            let w = proc_macro2::Literal::usize_unsuffixed(width);
            params.push(quote!(#d: [#lane_ty; #w]));
            for l in 0..width {
                let l = proc_macro2::Literal::usize_unsuffixed(l);
                pre.extend(self.field_checks(k, &quote!(#d[#l])));
            }
            pre.extend(quote!(let [#(#lanes),*] = #d;));
        }
        lanes
    }

    /// The batched `f_rev<N>` of `reverse(width = N)`: a struct by reference gets
    /// `dp: [&mut S; N]`, one shadow per lane, whose fields go to the exploded function's
    /// lanes (`[&mut dp0.w[..], &mut dp1.w[..]]`); a float field's adjoints come back as
    /// `[T; N]` and are added lane by lane. Structs by value, slices of structs and several
    /// outputs are not batched yet (an error at the option).
    pub fn reverse_batched(
        &self,
        name: &Ident,
        inner_name: &Ident,
        width: usize,
    ) -> syn::Result<TokenStream> {
        self.batchable(name, "reverse")?;
        let inner_layout = Layout::reverse(self.inner);
        let has_shadow = |j: usize| {
            inner_layout
                .slots
                .contains(&crate::codegen::signature::Slot::Derivative(j))
        };
        let w = proc_macro2::Literal::usize_unsuffixed(width);
        let index = self.inner_index();
        let (mut params, mut args, mut pre, mut post) = (vec![], vec![], quote!(), quote!());
        let mut returned = 0usize;
        let mut outs = Vec::new();
        if self.inner.returns_float {
            returned += 1;
        }
        let mut per_param_out = Vec::new();
        for (k, p) in self.params.iter().enumerate() {
            match p {
                Param::Plain(_) => {
                    let j = index[k];
                    let ps = &self.inner.params[j];
                    params.push(param_tokens(ps));
                    let n = &ps.name;
                    args.push(quote!(#n));
                    if has_shadow(j) {
                        let d = self.derivative_name(&n.to_string());
                        let e = element_type(&ps.ty);
                        params.push(quote!(#d: [&mut [#e]; #w]));
                        args.push(quote!(#d));
                    }
                    if ps.is_active_scalar() {
                        let r = format_ident!("__r{}", returned);
                        returned += 1;
                        let t = self.scalar_ty(&ps.ty);
                        per_param_out.push((quote!([#t; #w]), quote!(#r)));
                    }
                }
                Param::Struct {
                    name: sname,
                    ty,
                    struct_ty,
                    form,
                    mutable,
                    parts,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(sname, ty, *mutable));
                    let lane_ty = quote!(&mut #struct_ty);
                    let ls = self.struct_lanes(k, sname, lane_ty, width, &mut params, &mut pre);
                    for (i, part) in parts.iter().enumerate() {
                        let j = index[k] + i;
                        args.push(Self::field_arg(sname, *form, part));
                        let m = part.path();
                        if has_shadow(j) {
                            args.push(match part.one_element(*form) {
                                true => quote!([#(::core::slice::from_mut(&mut #ls.#m)),*]),
                                false => quote!([#(&mut #ls.#m[..]),*]),
                            });
                        }
                        if self.inner.params[j].is_active_scalar() {
                            let r = format_ident!("__r{}", returned);
                            returned += 1;
                            for (l, lane) in ls.iter().enumerate() {
                                let l = proc_macro2::Literal::usize_unsuffixed(l);
                                post.extend(quote!(#lane.#m = #lane.#m + #r[#l];));
                            }
                        }
                    }
                }
            }
        }
        let seed = self.seed_name();
        if self.inner.returns_float {
            let rt = self.result_ty();
            params.push(quote!(#seed: [#rt; #w]));
            args.push(quote!(#seed));
            outs.push((rt, quote!(__r0)));
        }
        outs.extend(per_param_out);
        let bound: Vec<Ident> = (0..returned).map(|i| format_ident!("__r{}", i)).collect();
        let bind = self.call_inner(inner_name, &args, &bound);
        let (ret, body) = self.result(outs, quote!(#pre #bind #post));
        Ok(self.wrap(name, params, ret, body))
    }

    /// `f_fwd`: a tangent of the same type after each active parameter.
    pub fn forward(&self, name: &Ident, inner_name: &Ident) -> TokenStream {
        let index = self.inner_index();
        let (mut params, mut args, mut pre, mut post) = (vec![], vec![], quote!(), quote!());
        for (k, p) in self.params.iter().enumerate() {
            match p {
                Param::Plain(_) => {
                    let ps = &self.inner.params[index[k]];
                    params.push(param_tokens(ps));
                    let n = &ps.name;
                    args.push(quote!(#n));
                    if ps.active {
                        let d = self.derivative_name(&n.to_string());
                        let ty = &ps.ty;
                        params.push(match ps.pat_mut {
                            true => quote!(mut #d: #ty),
                            false => quote!(#d: #ty),
                        });
                        args.push(quote!(#d));
                    }
                }
                Param::Struct {
                    name,
                    ty,
                    mutable,
                    seq: true,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(name, ty, *mutable));
                    let d = self.derivative_name(&name.to_string());
                    let tangent = self.struct_active(k).then_some(&d);
                    if tangent.is_some() {
                        params.push(Self::struct_param_tokens(&d, ty, *mutable));
                    }
                    let active = |j: usize| self.inner.params[j].active;
                    self.seq_copies(k, tangent, false, &active, &mut pre, &mut args, &mut post);
                }
                Param::Struct {
                    name,
                    ty,
                    form,
                    mutable,
                    parts,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(name, ty, *mutable));
                    let active = self.struct_active(k);
                    let d = self.derivative_name(&name.to_string());
                    if active {
                        params.push(Self::struct_param_tokens(&d, ty, *mutable));
                        pre.extend(self.field_checks(k, &quote!(#d)));
                    }
                    for (i, part) in parts.iter().enumerate() {
                        let active = self.inner.params[index[k] + i].active;
                        if part.seq_at.is_some() {
                            let d = active.then(|| quote!(#d));
                            self.seq_field_copies(
                                name,
                                *form,
                                part,
                                d.as_ref(),
                                false,
                                &mut pre,
                                &mut args,
                                &mut post,
                            );
                            continue;
                        }
                        args.push(Self::field_arg(name, *form, part));
                        if active {
                            args.push(Self::field_arg(&d, *form, part));
                        }
                    }
                }
            }
        }
        let tf = crate::codegen::signature::turbofish(self.inner_generics);
        let question = self.inner.fallible.as_ref().map(|_| quote!(?));
        let path = self.method.then(|| quote!(Self::));
        let rt = self.result_ty();
        let mut outs = match self.inner.returns_float {
            true => vec![(quote!((#rt, #rt)), quote!(__y))],
            false => vec![],
        };
        if !self.outputs.is_empty() {
            // Each output and its tangent as slices.
            let (mut values, mut tangents) = (Vec::new(), Vec::new());
            for k in 0..self.outputs.len() {
                let (o, d) = (format_ident!("__o{}", k), format_ident!("__t{}", k));
                let (ty, zero) = self.output_buffer(k);
                pre.extend(quote!(let mut #o: #ty = #zero; let mut #d: #ty = #zero;));
                args.push(quote!(&mut #o));
                args.push(quote!(&mut #d));
                values.push(o);
                tangents.push(d);
            }
            let ty = self.output_ty();
            let (v, t) = (self.output_value(&values), self.output_value(&tangents));
            outs.push((quote!((#ty, #ty)), quote!((#v, #t))));
        }
        let call = quote!(#path #inner_name #tf (#(#args),*) #question);
        let bind = match self.inner.returns_float {
            true => quote!(let __y = #call;),
            false => quote!(#call;),
        };
        let (ret, body) = self.result(outs, quote!(#pre #bind #post));
        self.wrap(name, params, ret, body)
    }

    /// The batched `f_fwd<N>` of `forward(width = N)`: a struct by reference gets
    /// `dp: [&S; N]` (`[&mut S; N]` for `&mut S`), one tangent per lane, whose fields go to
    /// the exploded function's lanes. Structs by value, slices of structs and several
    /// outputs are not batched yet (an error at the option).
    pub fn forward_batched(
        &self,
        name: &Ident,
        inner_name: &Ident,
        width: usize,
    ) -> syn::Result<TokenStream> {
        self.batchable(name, "forward")?;
        let w = proc_macro2::Literal::usize_unsuffixed(width);
        let index = self.inner_index();
        let (mut params, mut args, mut pre) = (vec![], vec![], quote!());
        for (k, p) in self.params.iter().enumerate() {
            match p {
                Param::Plain(_) => {
                    let ps = &self.inner.params[index[k]];
                    params.push(param_tokens(ps));
                    let n = &ps.name;
                    args.push(quote!(#n));
                    if ps.active {
                        let d = self.derivative_name(&n.to_string());
                        let ty = &ps.ty;
                        params.push(quote!(#d: [#ty; #w]));
                        args.push(quote!(#d));
                    }
                }
                Param::Struct {
                    name: sname,
                    ty,
                    struct_ty,
                    form,
                    mutable,
                    parts,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(sname, ty, *mutable));
                    let lane_ty = match form {
                        Form::Mut => quote!(&mut #struct_ty),
                        _ => quote!(&#struct_ty),
                    };
                    let lanes = self.struct_lanes(k, sname, lane_ty, width, &mut params, &mut pre);
                    for (i, part) in parts.iter().enumerate() {
                        args.push(Self::field_arg(sname, *form, part));
                        if self.inner.params[index[k] + i].active {
                            let each = lanes.iter().map(|l| Self::field_arg(l, *form, part));
                            args.push(quote!([#(#each),*]));
                        }
                    }
                }
            }
        }
        let rt = self.result_ty();
        let outs = match self.inner.returns_float {
            true => vec![(quote!((#rt, [#rt; #w])), quote!(__r0))],
            false => vec![],
        };
        let bound = match self.inner.returns_float {
            true => vec![format_ident!("__r0")],
            false => vec![],
        };
        let bind = self.call_inner(inner_name, &args, &bound);
        let (ret, body) = self.result(outs, quote!(#pre #bind));
        Ok(self.wrap(name, params, ret, body))
    }

    /// `f_grad`: seed 1 into fresh zeroed shadows (`zero_like` for a struct); the value and
    /// the lone gradient, or a tuple of them in parameter order.
    pub fn grad(&self, name: &Ident, rev_name: &Ident) -> TokenStream {
        let rt = self.krate;
        let ft = self.inner.float.tokens();
        let (zero, one) = match &self.inner.float {
            FloatTy::Generic(_) => (
                quote!(<#ft as #rt::__private::num_traits::Zero>::zero()),
                quote!(<#ft as #rt::__private::num_traits::One>::one()),
            ),
            _ if self.inner.mixed => (quote!(0.0), quote!(1.0)),
            _ => (quote!((0.0 as #ft)), quote!((1.0 as #ft))),
        };
        let index = self.inner_index();
        let inner_layout = Layout::reverse(self.inner);
        let has_shadow = |j: usize| {
            inner_layout
                .slots
                .contains(&crate::codegen::signature::Slot::Derivative(j))
        };
        let (mut params, mut args, mut setup) = (vec![], vec![], quote!());
        let (mut grads, mut grad_tys, mut returned) = (vec![], vec![], vec![]);
        for (k, p) in self.params.iter().enumerate() {
            match p {
                Param::Plain(_) => {
                    let ps = &self.inner.params[index[k]];
                    params.push(param_tokens(ps));
                    let n = &ps.name;
                    args.push(quote!(#n));
                    let d = self.derivative_name(&n.to_string());
                    if has_shadow(index[k]) {
                        let (init, ty) = match is_scalar_ref(ps) {
                            true => {
                                let e = element_type(&ps.ty);
                                (quote!(let mut #d: #e = #zero;), quote!(#e))
                            }
                            false => zeroed_shadow(ps, &d, &zero),
                        };
                        setup.extend(init);
                        args.push(quote!(&mut #d));
                        grads.push(quote!(#d));
                        grad_tys.push(ty);
                    } else if ps.is_active_scalar() {
                        returned.push(d.clone());
                        grads.push(quote!(#d));
                        grad_tys.push(self.scalar_ty(&ps.ty));
                    }
                }
                Param::Struct {
                    name,
                    ty,
                    struct_ty,
                    mutable,
                    seq: true,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(name, ty, *mutable));
                    args.push(quote!(#name));
                    if !self.struct_active(k) {
                        continue;
                    }
                    let d = self.derivative_name(&name.to_string());
                    setup.extend(quote! {
                        let mut #d: Vec<#struct_ty> = #name.iter().map(#rt::Differentiable::zero_like).collect();
                    });
                    args.push(quote!(&mut #d));
                    grads.push(quote!(#d));
                    grad_tys.push(quote!(Vec<#struct_ty>));
                }
                Param::Struct {
                    name,
                    ty,
                    struct_ty,
                    form,
                    mutable,
                    ..
                } => {
                    params.push(Self::struct_param_tokens(name, ty, *mutable));
                    args.push(quote!(#name));
                    if !self.struct_active(k) {
                        continue;
                    }
                    let d = self.derivative_name(&name.to_string());
                    if *form == Form::Value {
                        returned.push(d.clone());
                    } else {
                        setup.extend(quote!(let mut #d: #struct_ty = #rt::Differentiable::zero_like(&*#name);));
                        args.push(quote!(&mut #d));
                    }
                    grads.push(quote!(#d));
                    grad_tys.push(quote!(#struct_ty));
                }
            }
        }
        args.push(one);
        let pattern = match returned.is_empty() {
            true => quote!(__value),
            false => quote!((__value, #(#returned),*)),
        };
        let (g, gt) = match grads.len() {
            1 => (grads[0].clone(), grad_tys[0].clone()),
            _ => (quote!((#(#grads),*)), quote!((#(#grad_tys),*))),
        };
        let tf = crate::codegen::signature::turbofish(&self.item.sig.generics);
        let question = self.inner.fallible.as_ref().map(|_| quote!(?));
        let rty = self.result_ty();
        let path = self.method.then(|| quote!(Self::));
        let body = quote! {
            #setup
            let #pattern = #path #rev_name #tf (#(#args),*) #question;
        };
        let (ret, body) = self.result(vec![(quote!((#rty, #gt)), quote!((__value, #g)))], body);
        self.wrap(name, params, ret, body)
    }
}

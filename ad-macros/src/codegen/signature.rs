//! The generated functions' signatures (the user contract): `_fwd` puts a tangent after each
//! active parameter and returns (value, tangent); `_rev` puts a `&mut` shadow after each
//! active buffer, takes `seed` last and returns (value, scalar adjoints...) collapsed;
//! `_grad` seeds 1 into fresh zeroed buffers.

use crate::parse::signature::{ParamClass, ParamSpec, Signature};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{Ident, Type};

/// One parameter of a derivative function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Parameter `n` of the function, as it is.
    Primal(usize),
    /// The tangent (`_fwd`) or shadow (`_rev`) of parameter `n`, right after it.
    Derivative(usize),
    /// `_rev`'s seed of a float result, last.
    Seed,
}

/// The parameters of a derivative function, in order: the one layout from which the
/// signatures of `_fwd`, `_rev`, `_grad` (its call of `_rev`) and the batched modes are
/// written, and by which code generation binds the derivative program's parameters.
pub struct Layout {
    pub slots: Vec<Slot>,
}

impl Layout {
    /// `_fwd` (and `forward(width = N)`): a tangent after each active parameter.
    pub fn forward(sig: &Signature) -> Layout {
        Self::with(sig, |p| p.active, false)
    }

    /// `_rev` (and `reverse(width = N)`): a shadow after each active buffer (an active
    /// scalar's adjoint is returned), and a seed last for a float result.
    pub fn reverse(sig: &Signature) -> Layout {
        Self::with(sig, ParamSpec::is_active_buffer, sig.returns_float)
    }

    fn with(sig: &Signature, derivative: impl Fn(&ParamSpec) -> bool, seed: bool) -> Layout {
        let mut slots = Vec::new();
        for (n, p) in sig.params.iter().enumerate() {
            slots.push(Slot::Primal(n));
            if derivative(p) {
                slots.push(Slot::Derivative(n));
            }
        }
        if seed {
            slots.push(Slot::Seed);
        }
        Layout { slots }
    }

    /// How code generation holds each parameter: an owned `Vec` as owned, everything else
    /// (and every shadow and seed of `_rev`) by reference; a tangent of `_fwd` like its
    /// parameter.
    pub fn bindings(&self, sig: &Signature, forward: bool) -> Vec<super::Binding> {
        let primal = super::param_bindings(sig);
        self.slots
            .iter()
            .map(|s| match *s {
                Slot::Primal(n) => primal[n],
                Slot::Derivative(n) if forward => primal[n],
                _ => super::Binding::Reference,
            })
            .collect()
    }

    /// The positions of the derivatives of buffers (`buffers`) or of scalars.
    pub fn derivatives_of(&self, sig: &Signature, buffers: bool) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&k| matches!(self.slots[k], Slot::Derivative(n) if sig.params[n].is_active_buffer() == buffers))
            .collect()
    }

    /// The position of the seed.
    pub fn seed(&self) -> Option<usize> {
        self.slots.iter().position(|s| *s == Slot::Seed)
    }
}

pub fn param_tokens(p: &ParamSpec) -> TokenStream {
    let n = &p.name;
    let ty = &p.ty;
    if p.pat_mut {
        quote!(mut #n: #ty)
    } else {
        quote!(#n: #ty)
    }
}

/// Whether `p` is a float behind a reference (`&T`, `&mut T`).
pub fn is_scalar_ref(p: &ParamSpec) -> bool {
    matches!(p.class, ParamClass::Buffer { form, .. } if form.is_scalar())
}

/// `dx` for `x`; if another parameter already has that name, `dx_` (and so on).
pub fn tangent_name_in(p: &ParamSpec, all: &[ParamSpec]) -> Ident {
    let names: Vec<String> = all.iter().map(|q| q.name.to_string()).collect();
    let name =
        crate::derivative::shadow_name(&p.name.to_string(), names.iter().map(String::as_str));
    format_ident!("{}", name)
}

/// `[E]` for any buffer type (`&[E]`, `&mut [E; N]`, `Vec<E>`, ...).
pub fn element_type(ty: &Type) -> Type {
    use crate::parse::signature::ungroup;
    let inner = match ungroup(ty) {
        Type::Reference(r) => ungroup(&r.elem),
        t => t,
    };
    match inner {
        Type::Slice(s) => (*s.elem).clone(),
        Type::Array(a) => (*a.elem).clone(),
        // `&T`, `&mut T`: the float itself.
        Type::Path(p)
            if p.path
                .segments
                .last()
                .is_some_and(|s| s.arguments.is_none()) =>
        {
            inner.clone()
        }
        Type::Path(p) => {
            let seg = p.path.segments.last().expect("Vec path");
            match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) => match &a.args[0] {
                    syn::GenericArgument::Type(t) => t.clone(),
                    _ => unreachable!("Vec<E>"),
                },
                _ => unreachable!("Vec<E>"),
            }
        }
        _ => unreachable!("buffer types are slices, arrays or Vecs"),
    }
}

/// `::<T, N>` calling a function of these generics with its own parameters: types and
/// constants only (a lifetime argument may not be given where the callee has late-bound
/// lifetimes, E0794, and it is inferred anyway).
pub fn turbofish(generics: &syn::Generics) -> TokenStream {
    let explicit: Vec<TokenStream> = generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Type(t) => Some(t.ident.to_token_stream()),
            syn::GenericParam::Const(c) => Some(c.ident.to_token_stream()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect();
    match explicit.is_empty() {
        true => quote!(),
        false => quote!(::<#(#explicit),*>),
    }
}

/// `let mut d: Vec<E> = ..;` zeroed to the shape of buffer parameter `p` (for `_grad`),
/// and the type `Vec<E>`.
pub fn zeroed_shadow(p: &ParamSpec, d: &Ident, zero: &TokenStream) -> (TokenStream, TokenStream) {
    let n = &p.name;
    let e = element_type(&p.ty);
    let zero_loop = match p.class {
        ParamClass::Buffer { rank: 2, .. } => {
            quote!(for __r in #d.iter_mut() { for __v in __r.iter_mut() { *__v = #zero; } })
        }
        ParamClass::Buffer { rank: 3, .. } => {
            quote!(for __r in #d.iter_mut() { for __c in __r.iter_mut() { for __v in __c.iter_mut() { *__v = #zero; } } })
        }
        _ => quote!(for __v in #d.iter_mut() { *__v = #zero; }),
    };
    let init = match p.class {
        ParamClass::Buffer { rank: 1, .. } => quote!(let mut #d: Vec<#e> = vec![#zero; #n.len()];),
        _ => quote!(let mut #d: Vec<#e> = #n.to_vec(); #zero_loop),
    };
    (init, quote!(Vec<#e>))
}

pub struct Header<'a> {
    pub item: &'a syn::ItemFn,
    pub sig: &'a Signature,
    pub krate: &'a syn::Path,
}

impl Header<'_> {
    fn ft(&self) -> TokenStream {
        self.sig.float.tokens()
    }

    /// The type of the function's float result: `ft`, or in a function that mixes `f32`
    /// and `f64` the one it returns.
    pub fn result_ty(&self) -> TokenStream {
        let out = &self.item.sig.output;
        match (self.sig.mixed, crate::expand::prec_of(&quote!(#out))) {
            (true, Some(p)) => {
                let t = quote::format_ident!("{}", p.name());
                quote!(#t)
            }
            _ => self.ft(),
        }
    }

    /// The type of an active scalar parameter's adjoint: `ft`, or in a function that
    /// mixes `f32` and `f64` the parameter's own.
    pub fn scalar_ty(&self, p: &crate::parse::signature::ParamSpec) -> TokenStream {
        let ty = &p.ty;
        match (self.sig.mixed, crate::expand::prec_of(&quote!(#ty))) {
            (true, Some(q)) => {
                let t = quote::format_ident!("{}", q.name());
                quote!(#t)
            }
            _ => self.ft(),
        }
    }

    pub fn wrap(
        &self,
        name: &Ident,
        params: Vec<TokenStream>,
        ret: TokenStream,
        body: TokenStream,
    ) -> TokenStream {
        let vis = &self.item.vis;
        let generics = &self.item.sig.generics;
        // A float type generic under `num_traits::Float` (as users import it) is held to
        // `phidiff::Float` in the derivatives, whose code needs its `+=`, sums and threads;
        // `f64`, `f32` and `Dual` meet both.
        let mut where_clause = generics.where_clause.clone();
        if let crate::parse::signature::FloatTy::Generic(t) = &self.sig.float {
            let krate = self.krate;
            where_clause
                .get_or_insert_with(|| syn::parse_quote!(where))
                .predicates
                .push(syn::parse_quote!(#t: #krate::Float));
        }
        let doc = format!(
            " Generated by `#[differentiate]` from [`{}`].",
            self.item.sig.ident
        );
        quote! {
            #[doc = #doc]
            #[allow(unused_mut, unused_variables, unused_parens, unused_assignments, unused_braces, non_snake_case, clippy::all)]
            #vis fn #name #generics (#(#params),*) #ret #where_clause {
                #body
            }
        }
    }

    /// The return type `-> R` (none for `()`) and the body giving it; for a fallible
    /// function `-> Option<R>` (or `Result<R, E>`), the body's value in `Some` (`Ok`): its
    /// failure sites return `None`/`Err` themselves.
    fn result(&self, ty: Option<TokenStream>, body: TokenStream) -> (TokenStream, TokenStream) {
        match (&self.sig.fallible, ty) {
            (None, None) => (quote!(), body),
            (None, Some(t)) => (quote!(-> #t), body),
            (Some(f), t) => {
                let t = t.unwrap_or_else(|| quote!(()));
                let around = f.around(t);
                let ok = f.success(quote!({ #body }));
                (quote!(-> #around), ok)
            }
        }
    }

    /// Panics naming the parameter when a tangent or shadow buffer has the wrong length.
    fn length_checks(&self, shadow_of: impl Fn(&ParamSpec) -> Ident) -> TokenStream {
        let mut out = quote!();
        for p in self.sig.params.iter().filter(|p| p.is_active_buffer()) {
            let d = shadow_of(p);
            if !is_scalar_ref(p) {
                out.extend(self.length_check(p, &d, &d.to_string()));
            }
        }
        out
    }

    /// The floats behind references (`x: &f64`, `y: &mut f64`) and their derivative
    /// parameters as the one-element slices the body indexes.
    fn scalar_refs_as_slices(&self, with_derivative: bool) -> TokenStream {
        let mut out = quote!();
        for p in self.sig.params.iter().filter(|p| is_scalar_ref(p)) {
            let n = &p.name;
            let form = match p.class {
                ParamClass::Buffer { form, .. } => form,
                _ => unreachable!("a scalar reference is a buffer"),
            };
            out.extend(match form.is_mut() {
                true => quote!(let #n = ::core::slice::from_mut(#n);),
                false => quote!(let #n = ::core::slice::from_ref(#n);),
            });
            if with_derivative && p.active {
                let d = tangent_name_in(p, &self.sig.params);
                out.extend(quote!(let #d = ::core::slice::from_mut(#d);));
            }
        }
        out
    }

    /// The check that shadow (or tangent) `d`, called `label` in the message, has the
    /// length of parameter `p` (and, for a 2-D parameter, each row's).
    fn length_check(&self, p: &ParamSpec, d: &Ident, label: &str) -> TokenStream {
        let rt = self.krate;
        let n = &p.name;
        let ns = n.to_string();
        let mut out = quote!(#rt::__private::check_len(#ns, #label, #n.len(), #d.len()););
        if let ParamClass::Buffer { rank: 2, .. } = p.class {
            let row = format!("{ns}[i]");
            let drow = format!("{label}[i]");
            out.extend(quote! {
                for (__r, __dr) in #n.iter().zip(#d.iter()) {
                    #rt::__private::check_len(#row, #drow, __r.len(), __dr.len());
                }
            });
        }
        if let ParamClass::Buffer { rank: 3, .. } = p.class {
            let (row, drow) = (format!("{ns}[i]"), format!("{label}[i]"));
            let (col, dcol) = (format!("{ns}[i][j]"), format!("{label}[i][j]"));
            out.extend(quote! {
                for (__r, __dr) in #n.iter().zip(#d.iter()) {
                    #rt::__private::check_len(#row, #drow, __r.len(), __dr.len());
                    for (__c, __dc) in __r.iter().zip(__dr.iter()) {
                        #rt::__private::check_len(#col, #dcol, __c.len(), __dc.len());
                    }
                }
            });
        }
        out
    }

    /// The parameter of slot `s`, or its tangent or shadow written by `derivative`, or
    /// the seed (of type `seed`).
    fn params(
        &self,
        layout: &Layout,
        derivative: impl Fn(&ParamSpec, &Ident) -> TokenStream,
        seed: TokenStream,
    ) -> Vec<TokenStream> {
        layout
            .slots
            .iter()
            .map(|s| match *s {
                Slot::Primal(n) => param_tokens(&self.sig.params[n]),
                Slot::Derivative(n) => {
                    let p = &self.sig.params[n];
                    derivative(p, &tangent_name_in(p, &self.sig.params))
                }
                Slot::Seed => {
                    let s = self.seed_name();
                    quote!(#s: #seed)
                }
            })
            .collect()
    }

    /// `seed` (`seed_` when a parameter is called `seed`).
    fn seed_name(&self) -> Ident {
        let names: Vec<String> = self.sig.params.iter().map(|q| q.name.to_string()).collect();
        format_ident!(
            "{}",
            crate::derivative::seed_name(names.iter().map(String::as_str))
        )
    }

    /// The primal program itself, generated from its IR: the function's own parameters and
    /// result.
    pub fn primal(&self, name: &Ident, body: TokenStream) -> TokenStream {
        let params = self.sig.params.iter().map(param_tokens).collect();
        let rt = self.result_ty();
        let (ret, body) = self.result(self.sig.returns_float.then(|| quote!(#rt)), body);
        let slices = self.scalar_refs_as_slices(false);
        self.wrap(name, params, ret, quote!(#slices #body))
    }

    pub fn forward(&self, name: &Ident, body: TokenStream) -> TokenStream {
        let params = self.params(
            &Layout::forward(self.sig),
            |p, t| {
                let ty = &p.ty;
                match p.pat_mut {
                    true => quote!(mut #t: #ty),
                    false => quote!(#t: #ty),
                }
            },
            quote!(),
        );
        let rt = self.result_ty();
        let (ret, body) = self.result(self.sig.returns_float.then(|| quote!((#rt, #rt))), body);
        let checks = self.length_checks(|p| tangent_name_in(p, &self.sig.params));
        let mut slices = self.scalar_refs_as_slices(false);
        for p in self
            .sig
            .params
            .iter()
            .filter(|p| is_scalar_ref(p) && p.active)
        {
            let d = tangent_name_in(p, &self.sig.params);
            slices.extend(match p.class {
                ParamClass::Buffer { form, .. } if form.is_mut() => {
                    quote!(let #d = ::core::slice::from_mut(#d);)
                }
                _ => quote!(let #d = ::core::slice::from_ref(#d);),
            });
        }
        self.wrap(name, params, ret, quote!(#checks #slices #body))
    }

    /// The batched `_fwd<N>` of `forward(width = N)`: each tangent parameter is an array
    /// of N tangents of its type (`dx: [&[T]; N]`, `dk: [T; N]`), and a float result's
    /// tangent an array of N. `lanes` maps the name of each tangent parameter to the names
    /// of its lanes `1..N` in `body`, which yields the value and then the tangent of each
    /// lane.
    pub fn forward_batched(
        &self,
        name: &Ident,
        body: TokenStream,
        width: usize,
        lanes: &std::collections::HashMap<String, Vec<String>>,
    ) -> TokenStream {
        let ft = self.ft();
        let n_lanes = width;
        let width = proc_macro2::Literal::usize_unsuffixed(width);
        let layout = Layout::forward(self.sig);
        let params = self.params(
            &layout,
            |p, t| {
                let ty = &p.ty;
                quote!(#t: [#ty; #width])
            },
            quote!(),
        );
        let mut prologue = quote!();
        for s in &layout.slots {
            let Slot::Derivative(n) = *s else { continue };
            let p = &self.sig.params[n];
            let t = tangent_name_in(p, &self.sig.params);
            let mut ls = vec![t.clone()];
            ls.extend(lanes[&t.to_string()].iter().map(|n| format_ident!("{}", n)));
            let pats = ls.iter().map(|l| {
                if p.pat_mut {
                    quote!(mut #l)
                } else {
                    quote!(#l)
                }
            });
            prologue.extend(quote!(let [#(#pats),*] = #t;));
            if p.is_active_buffer() {
                for (l, d) in ls.iter().enumerate() {
                    prologue.extend(self.length_check(p, d, &format!("{t}[{l}]")));
                }
            }
        }
        if !self.sig.returns_float {
            return self.wrap(name, params, quote!(), quote!(#prologue #body));
        }
        // The body yields (value, tangent of lane 0, .., tangent of lane N − 1).
        let ys: Vec<Ident> = (0..=n_lanes).map(|k| format_ident!("__y{}", k)).collect();
        let (value, tangents) = (&ys[0], &ys[1..]);
        self.wrap(
            name,
            params,
            quote!(-> (#ft, [#ft; #width])),
            quote!(#prologue let (#(#ys),*) = { #body }; (#value, [#(#tangents),*])),
        )
    }

    fn reverse_outputs(&self) -> Vec<TokenStream> {
        let mut outs = Vec::new();
        if self.sig.returns_float {
            outs.push(self.result_ty());
        }
        for p in &self.sig.params {
            if p.is_active_scalar() {
                outs.push(self.scalar_ty(p));
            }
        }
        outs
    }

    pub fn reverse(&self, name: &Ident, body: TokenStream) -> TokenStream {
        let params = self.params(
            &Layout::reverse(self.sig),
            |p, t| {
                let e = element_type(&p.ty);
                match is_scalar_ref(p) {
                    true => quote!(#t: &mut #e),
                    false => quote!(#t: &mut [#e]),
                }
            },
            self.result_ty(),
        );
        let outs = self.reverse_outputs();
        let ret = match outs.len() {
            0 => None,
            1 => Some(outs[0].clone()),
            _ => Some(quote!((#(#outs),*))),
        };
        let (ret, body) = self.result(ret, body);
        let checks = self.length_checks(|p| tangent_name_in(p, &self.sig.params));
        let slices = self.scalar_refs_as_slices(true);
        self.wrap(name, params, ret, quote!(#checks #slices #body))
    }

    /// The batched `_rev<N>` of `reverse(width = N)`: each shadow is an array of N
    /// shadows (`dx: [&mut [T]; N]`), the seed an array of N seeds, and each scalar
    /// adjoint an array of N. `lanes` maps the name of each shadow and of the seed to the
    /// names of its lanes `1..N` in `body`, which yields the value and then the scalar
    /// adjoints lane after lane.
    pub fn reverse_batched(
        &self,
        name: &Ident,
        body: TokenStream,
        width: usize,
        lanes: &std::collections::HashMap<String, Vec<String>>,
    ) -> TokenStream {
        let ft = self.ft();
        let n_lanes = width;
        let width = proc_macro2::Literal::usize_unsuffixed(width);
        let lane_idents = |base: &Ident| -> Vec<Ident> {
            let mut v = vec![base.clone()];
            v.extend(
                lanes[&base.to_string()]
                    .iter()
                    .map(|n| format_ident!("{}", n)),
            );
            v
        };
        let layout = Layout::reverse(self.sig);
        let params = self.params(
            &layout,
            |p, t| {
                let e = element_type(&p.ty);
                quote!(#t: [&mut [#e]; #width])
            },
            quote!([#ft; #width]),
        );
        let mut prologue = quote!();
        for s in &layout.slots {
            match *s {
                Slot::Primal(_) => {}
                Slot::Derivative(n) => {
                    let p = &self.sig.params[n];
                    let t = tangent_name_in(p, &self.sig.params);
                    let ls = lane_idents(&t);
                    prologue.extend(quote!(let [#(#ls),*] = #t;));
                    for (l, d) in ls.iter().enumerate() {
                        prologue.extend(self.length_check(p, d, &format!("{t}[{l}]")));
                    }
                }
                Slot::Seed => {
                    let seed = self.seed_name();
                    let ls = lane_idents(&seed);
                    prologue.extend(quote!(let [#(#ls),*] = #seed;));
                }
            }
        }
        // The body yields (value?, adjoints of lane 0, .., adjoints of lane N − 1).
        let n_adj = self
            .sig
            .params
            .iter()
            .filter(|p| p.is_active_scalar())
            .count();
        let n_val = usize::from(self.sig.returns_float);
        let ys: Vec<Ident> = (0..n_val + n_lanes * n_adj)
            .map(|k| format_ident!("__y{}", k))
            .collect();
        let bind = match ys.len() {
            0 => quote!(#body;),
            1 => {
                let y = &ys[0];
                quote!(let #y = { #body };)
            }
            _ => quote!(let (#(#ys),*) = { #body };),
        };
        let mut outs = Vec::new();
        let mut out_tys = Vec::new();
        if self.sig.returns_float {
            let y = &ys[0];
            outs.push(quote!(#y));
            out_tys.push(ft.clone());
        }
        for a in 0..n_adj {
            let lane_ys = (0..n_lanes).map(|l| &ys[n_val + l * n_adj + a]);
            outs.push(quote!([#(#lane_ys),*]));
            out_tys.push(quote!([#ft; #width]));
        }
        let (ret, result) = match outs.len() {
            0 => (quote!(), quote!()),
            1 => {
                let (t, o) = (&out_tys[0], &outs[0]);
                (quote!(-> #t), quote!(#o))
            }
            _ => (quote!(-> (#(#out_tys),*)), quote!((#(#outs),*))),
        };
        self.wrap(name, params, ret, quote!(#prologue #bind #result))
    }

    /// `_grad`: seed 1, fresh zeroed buffers; (value, lone gradient or tuple in order).
    pub fn grad(&self, name: &Ident, rev_name: &Ident) -> TokenStream {
        let ft = self.ft();
        let rt = self.krate;
        let (zero, one) = match self.sig.float {
            crate::parse::signature::FloatTy::Generic(_) => (
                quote!(<#ft as #rt::__private::num_traits::Zero>::zero()),
                quote!(<#ft as #rt::__private::num_traits::One>::one()),
            ),
            // Typed by where they go, in a function that mixes `f32` and `f64`.
            _ if self.sig.mixed => (quote!(0.0), quote!(1.0)),
            _ => (quote!((0.0 as #ft)), quote!((1.0 as #ft))),
        };
        let mut params = Vec::new();
        let mut setup = quote!();
        let mut args = Vec::new();
        let mut grads = Vec::new();
        let mut grad_tys = Vec::new();
        let mut scalar_adj = Vec::new();
        // The call of `_rev` follows its layout: each parameter, a fresh zeroed shadow
        // after each active buffer, the seed 1 last; active scalars' adjoints come back.
        for s in &Layout::reverse(self.sig).slots {
            let p = match *s {
                Slot::Primal(n) | Slot::Derivative(n) => &self.sig.params[n],
                Slot::Seed => {
                    args.push(one.clone());
                    continue;
                }
            };
            let n = &p.name;
            let d = tangent_name_in(p, &self.sig.params);
            match *s {
                Slot::Primal(_) => {
                    params.push(param_tokens(p));
                    args.push(quote!(#n));
                    if p.is_active_scalar() {
                        scalar_adj.push(d.clone());
                        grads.push(quote!(#d));
                        grad_tys.push(self.scalar_ty(p));
                    }
                }
                _ if is_scalar_ref(p) => {
                    let e = element_type(&p.ty);
                    setup.extend(quote!(let mut #d: #e = #zero;));
                    args.push(quote!(&mut #d));
                    grads.push(quote!(#d));
                    grad_tys.push(quote!(#e));
                }
                _ => {
                    let (init, ty) = zeroed_shadow(p, &d, &zero);
                    setup.extend(init);
                    args.push(quote!(&mut #d));
                    grads.push(quote!(#d));
                    grad_tys.push(ty);
                }
            }
        }
        let pattern = if scalar_adj.is_empty() {
            quote!(__value)
        } else {
            quote!((__value, #(#scalar_adj),*))
        };
        let (g, gt) = if grads.len() == 1 {
            (grads[0].clone(), grad_tys[0].clone())
        } else {
            (quote!((#(#grads),*)), quote!((#(#grad_tys),*)))
        };
        let turbofish = turbofish(&self.item.sig.generics);
        let question = self.sig.fallible.as_ref().map(|_| quote!(?));
        let body = quote! {
            #setup
            let #pattern = #rev_name #turbofish (#(#args),*) #question;
            (__value, #g)
        };
        let rt = self.result_ty();
        let (ret, body) = self.result(Some(quote!((#rt, #gt))), body);
        self.wrap(name, params, ret, body)
    }
}

//! The CPU side of an element function's kernels (`#[differentiate(reverse, cuda)]`):
//! which programs' elements are independent, so that the CPU launchers run them in
//! parallel with rayon over owned views (`owned_only` for the primal, `owned_writes` for
//! the gather form), and the Rust functions of the gather form that `cpu_rev` calls
//! (`gather_fn` element by element, `gather_par_fn` in parallel). The launchers
//! themselves are in `cuda_launch`.

use super::cuda_launch::ParallelGather;
use super::signature::{Header, Layout};
use super::Binding;
use crate::derivative::gather::Gathered;
use crate::expand::internal;
use crate::ir::verify::verify;
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeSet;

/// Whether the element function `f` (its primal program) touches each slice it writes
/// only at the thread index, and never asks such a slice's length: then its iterations
/// are independent, and the CPU launcher can run them in parallel with owned views.
pub fn owned_only(f: &Function) -> bool {
    let written = |b: Buf| {
        matches!(f.buf(b).kind, BufKind::Param(n)
            if matches!(f.params[n].kind, ParamKind::Buffer { mutable: true, .. }))
    };
    at_thread_only(f, &written, false)
}

/// For a gather-form program `f` (`derivative::gather`) run on the CPU: the parameters
/// of the slices it writes (stores or adds into), if it touches each of them only at the
/// thread index (parameter 0) and asks only their whole length: then its elements are
/// independent and run in parallel with owned views, each slice's length passed in
/// ([`lengths_as_params`]). Its other `&mut` slices it only reads, at any index. `None`
/// where an element touches another's element of a slice it writes.
pub fn owned_writes(f: &Function) -> Option<Vec<usize>> {
    let mut stored = BTreeSet::new();
    let mut local = false;
    f.walk(f.body, &mut |i| {
        if let InstKind::Store(b, ..) | InstKind::StoreAdd(b, ..) = f.inst(i).kind {
            match f.buf(b).kind {
                BufKind::Param(n) => {
                    stored.insert(n);
                }
                _ => local = true,
            }
        }
    });
    // A store into a local buffer: not a program the gather form makes.
    if local {
        return None;
    }
    let written = |b: Buf| matches!(f.buf(b).kind, BufKind::Param(n) if stored.contains(&n));
    at_thread_only(f, &written, true).then(|| stored.into_iter().collect())
}

/// `f` with each whole length of a slice parameter in `written` (`du.len()`) read from
/// a new integer parameter instead, `__phidiff_len_<name>`, added after `f`'s own (in the
/// order of `written`, for the slices whose length `f` asks): an element owning only its
/// own element of the slice cannot ask it. Also returns those slices' parameters, in the
/// order of the new ones.
pub fn lengths_as_params(f: &Function, written: &[usize]) -> (Function, Vec<usize>) {
    let mut lens = Vec::new();
    f.walk(f.body, &mut |i| {
        if let InstKind::Len(b, idx) = &f.inst(i).kind {
            if let BufKind::Param(n) = f.buf(*b).kind {
                if written.contains(&n) {
                    debug_assert!(
                        idx.is_empty(),
                        "owned_writes lets only whole lengths through"
                    );
                    lens.push((i, n));
                }
            }
        }
    });
    let mut out = f.clone();
    let mut measured = Vec::new();
    for &n in written {
        if !lens.iter().any(|&(_, m)| m == n) {
            continue;
        }
        measured.push(n);
        let k = out.params.len();
        out.params.push(ParamInfo {
            name: format!("__phidiff_len_{}", f.params[n].name),
            kind: ParamKind::Scalar(Ty::Int),
            span: proc_macro2::Span::call_site(),
        });
        for &(i, _) in lens.iter().filter(|&&(_, m)| m == n) {
            out.insts[i.index()].kind = InstKind::Param(k);
        }
    }
    (out, measured)
}

/// Whether `f` touches every slice `written` holds only at the thread index (parameter
/// 0, or a cast of it), and (unless `whole_len`) never asks such a slice's length; with
/// `whole_len`, only its whole length.
fn at_thread_only(f: &Function, written: &dyn Fn(Buf) -> bool, whole_len: bool) -> bool {
    let mut thread = None;
    f.walk(f.body, &mut |i| {
        if let InstKind::Param(0) = f.inst(i).kind {
            thread = Some(f.inst(i).results[0]);
        }
    });
    let Some(thread) = thread else {
        return false;
    };
    let is_thread = |k: Value| {
        k == thread
            || matches!(f.value(k).def, ValueDef::Result(d, 0)
                if matches!(f.inst(d).kind, InstKind::Cast { value, .. } if value == thread))
    };
    let mut ok = true;
    f.walk(f.body, &mut |i| match &f.inst(i).kind {
        InstKind::Load(b, idx) | InstKind::Store(b, idx, _) | InstKind::StoreAdd(b, idx, _)
            if written(*b) =>
        {
            ok &= idx.len() == 1 && is_thread(idx[0]);
        }
        InstKind::Len(b, idx) if written(*b) => ok &= whole_len && idx.is_empty(),
        InstKind::Call { args, .. }
            if args
                .iter()
                .any(|a| matches!(a, CallArg::Buf { buf, .. } if written(*buf))) =>
        {
            ok = false
        }
        _ => {}
    });
    ok
}

/// The Rust function of a gather-form program (see `derivative::gather`): `_rev`'s
/// parameters, then the number of threads; it returns the scalar adjoints as `_rev` does
/// (zeros for the finishing program, which yields none).
pub fn gather_fn(
    header: &Header,
    name: &syn::Ident,
    f: &Function,
    n_adjoints: usize,
) -> syn::Result<TokenStream> {
    let mut f = f.clone();
    if f.block(f.body).yields.len() != n_adjoints {
        let body = f.body;
        let mut b = builder::Builder::new(&mut f, body);
        let zeros = (0..n_adjoints).map(|_| b.fconst(0.0)).collect();
        b.set_yields(body, zeros);
    }
    verify(&f).map_err(|e| internal("the gather form", e, &f))?;
    let layout = Layout::reverse(header.sig);
    let mut bindings = layout.bindings(header.sig, false);
    bindings.push(Binding::Reference);
    let body = super::body(&f, &header.sig.float, header.krate, bindings, &[]);
    let mut item: syn::ItemFn = syn::parse2(header.reverse(name, body))?;
    item.sig.inputs.push(syn::parse_quote!(__phidiff_n: usize));
    item.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    Ok(quote!(#item))
}

/// The parallel CPU counterpart of a gather form, where each of its programs writes a
/// slice only at its own element (`owned_writes`): one function taking
/// `_rev`'s parameters but the thread index, then the number of elements and the number
/// of threads, that runs the gathering program for every thread, then the finishing one
/// for every element, each in parallel with rayon over owned views of the slices it
/// writes (the scalar adjoints summed per block, then the blocks in order, as
/// `for_each_owned_sum` does: the result does not depend on the thread count). Each
/// written slice must cover its program's range (the launcher checks, and runs the
/// programs in order otherwise). `None` where a program is not owned.
pub fn gather_par_fn(
    header: &Header,
    name: &syn::Ident,
    g: &Gathered,
    n_adjoints: usize,
) -> syn::Result<Option<(TokenStream, ParallelGather)>> {
    let Some(main_writes) = owned_writes(&g.main) else {
        return Ok(None);
    };
    let finish_writes = match &g.finish {
        Some(f) => match owned_writes(f) {
            Some(w) => w,
            None => return Ok(None),
        },
        None => Vec::new(),
    };
    if main_writes.len() > 16 || finish_writes.len() > 16 {
        return Ok(None);
    }
    let ft = header.sig.float.tokens();
    let span = format_ident!("__phidiff_span");
    let elements = format_ident!("__phidiff_n");
    let main = owned_loop(header, &g.main, &main_writes, &span, n_adjoints)?;
    let finish = match &g.finish {
        Some(f) => owned_loop(header, f, &finish_writes, &elements, 0)?,
        None => quote!(),
    };
    let body = match n_adjoints {
        0 => quote!(#main #finish),
        k => {
            let picks = (0..k).map(|j| quote!(__sums[#j]));
            let result = match k {
                1 => quote!(__sums[0]),
                _ => quote!((#(#picks),*)),
            };
            quote! {
                let __sums: [#ft; #k] = #main;
                #finish
                #result
            }
        }
    };
    let mut item: syn::ItemFn = syn::parse2(header.reverse(name, body))?;
    // The index is each loop's own.
    item.sig.inputs = item.sig.inputs.into_iter().skip(1).collect();
    item.sig.inputs.push(syn::parse_quote!(#elements: usize));
    item.sig.inputs.push(syn::parse_quote!(#span: usize));
    item.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    let names = |w: &[usize], f: &Function| {
        w.iter()
            .map(|&n| syn::Ident::new(&f.params[n].name, f.params[n].span))
            .collect::<Vec<_>>()
    };
    let parallel = ParallelGather {
        function: name.clone(),
        main_writes: names(&main_writes, &g.main),
        finish_writes: g
            .finish
            .as_ref()
            .map(|f| names(&finish_writes, f))
            .unwrap_or_default(),
    };
    Ok(Some((quote!(#item), parallel)))
}

/// The rayon loop of gather-form program `f` over `0..range`, in owned views of the
/// slices `written` (their lengths taken before the loop, see
/// `lengths_as_params`); its value is the array of its `k` scalar
/// adjoints, summed (`()` when `k` is 0).
fn owned_loop(
    header: &Header,
    f: &Function,
    written: &[usize],
    range: &syn::Ident,
    k: usize,
) -> syn::Result<TokenStream> {
    let rt = header.krate;
    let (g, measured) = lengths_as_params(f, written);
    verify(&g).map_err(|e| internal("the parallel gather form", e, &g))?;
    let mut bindings = Layout::reverse(header.sig).bindings(header.sig, false);
    bindings.resize(g.params.len(), Binding::Reference);
    let body = super::body(&g, &header.sig.float, rt, bindings, &[]);
    let ident = |n: usize| syn::Ident::new(&g.params[n].name, g.params[n].span);
    let index = ident(0);
    let slices: Vec<syn::Ident> = written.iter().map(|&n| ident(n)).collect();
    let measured: Vec<syn::Ident> = measured.into_iter().map(ident).collect();
    let lens: Vec<syn::Ident> = (f.params.len()..g.params.len()).map(ident).collect();
    let views = format_ident!("__views");
    let r = format_ident!("__r");
    let (call, value) = match k {
        0 => (quote!(for_each_owned), quote!({ #body })),
        1 => (quote!(for_each_owned_sum), quote!(let #r = { #body }; [#r])),
        _ => {
            let idx = (0..k).map(syn::Index::from);
            (
                quote!(for_each_owned_sum),
                quote!(let #r = { #body }; [#(#r.#idx),*]),
            )
        }
    };
    Ok(quote! {{
        #(let #lens = #measured.len();)*
        #rt::__private::par::#call(0..#range, (#(&mut #slices[..],)*), |#index, #views| {
            let (#(#slices,)*) = #views;
            #(let #slices = &mut #slices.iteration();)*
            #value
        })
    }})
}

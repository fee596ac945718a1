//! The launchers of an element function's kernels (`#[differentiate(reverse, cuda)]`):
//! on a device through `ad_cuda` (`launch`, `launch_rev`), and on the CPU (`cpu`,
//! `cpu_rev`: the element function and its adjoint for every index, in the form of the
//! kernels, in parallel with rayon where the elements write only their own elements), the
//! reference and fallback. Their parameters follow the kernels': the element function's
//! less the thread index, with `n` threads first; `launch_rev` and `cpu_rev` take a shadow
//! after each active slice and return the adjoints of the active scalars, summed over the
//! threads.

use crate::parse::signature::{BufForm, ParamClass, Signature};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The element type of a slice parameter type (`&[usize]` → `usize`).
fn slice_elem(ty: &syn::Type) -> TokenStream {
    match ty {
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(s) => {
                let e = &s.elem;
                quote!(#e)
            }
            other => quote!(#other),
        },
        other => quote!(#other),
    }
}

/// The gather form of an adjoint (see `derivative::gather`) as the launchers call it.
pub struct Gather {
    /// Its Rust function (`_rev`'s parameters, then the number of elements).
    pub main: syn::Ident,
    /// The Rust function of its finishing stores, if it has them.
    pub finish: Option<syn::Ident>,
    /// The slices it sums into: its kernel runs over the longest of them too.
    pub gathered: Vec<syn::Ident>,
    /// Its parallel CPU form, where every element writes only its own elements.
    pub parallel: Option<ParallelGather>,
}

/// The parallel CPU form of a gather-form adjoint (`cuda_cpu::gather_par_fn`): its gathering
/// and finishing programs run with rayon, each element writing only its own element of
/// the slices it writes.
#[derive(Clone)]
pub struct ParallelGather {
    /// Its Rust function: `_rev`'s parameters but the index, the number of elements, the
    /// number of threads of the gathering program.
    pub function: syn::Ident,
    /// The slices the gathering program writes: each must hold an element per thread.
    pub main_writes: Vec<syn::Ident>,
    /// The slices the finishing program writes: each must hold an element per element.
    pub finish_writes: Vec<syn::Ident>,
}

/// The launchers of an element function's kernels. `parallel_body`: the element
/// function's body when its iterations are independent (it writes each slice only at the
/// thread index, see `cuda_cpu::owned_only`) and its index is a `usize`: then `cpu` runs the
/// body in parallel with rayon, each iteration seeing only its own element of the written
/// slices (`ad_rayon::for_each_owned`).
pub fn launchers(
    sig: &Signature,
    krate: &syn::Path,
    fname: &syn::Ident,
    n_adjoints: usize,
    parallel_body: Option<&syn::Block>,
    gather: Option<&Gather>,
) -> TokenStream {
    let rt = quote!(#krate::cuda);
    let ft = sig.float.tokens();
    let rev_fn = format_ident!("{}_rev", fname);
    let params = &sig.params[1..];

    // Device launchers: parameters, locals (lengths, widened integers) and kernel args.
    let mut p_params = Vec::new();
    let mut r_params = Vec::new();
    let mut p_args = Vec::new();
    let mut r_args = Vec::new();
    let mut locals = Vec::new();
    let mut r_locals = Vec::new();
    // CPU launchers: parameters and call arguments.
    let mut cp_params = Vec::new();
    let mut cr_params = Vec::new();
    let mut cp_args = Vec::new();
    let mut cr_args = Vec::new();
    for p in params {
        let name = &p.name;
        let ty = &p.ty;
        match &p.class {
            ParamClass::Buffer { form, .. } => {
                let elem = slice_elem(ty);
                let len = format_ident!("__len_{}", name);
                locals.push(quote!(let #len = #name.len() as u64;));
                let mutable = form.is_mut();
                let dev_ty = if mutable {
                    quote!(&mut #rt::cudarc::driver::CudaSlice<#elem>)
                } else {
                    quote!(&#rt::cudarc::driver::CudaSlice<#elem>)
                };
                let push = if mutable {
                    quote!(__b.arg(&mut *#name); __b.arg(&#len);)
                } else {
                    quote!(__b.arg(#name); __b.arg(&#len);)
                };
                p_params.push(quote!(#name: #dev_ty));
                r_params.push(quote!(#name: #dev_ty));
                p_args.push(push.clone());
                r_args.push(push);
                cp_params.push(quote!(#name: #ty));
                cr_params.push(quote!(#name: #ty));
                cp_args.push(quote!(#name));
                cr_args.push(quote!(#name));
                if p.is_active_buffer() {
                    let d = format_ident!("d{}", name);
                    let dlen = format_ident!("__len_d{}", name);
                    r_locals.push(quote!(let #dlen = #d.len() as u64;));
                    r_params.push(quote!(#d: &mut #rt::cudarc::driver::CudaSlice<#ft>));
                    r_args.push(quote!(__b.arg(&mut *#d); __b.arg(&#dlen);));
                    cr_params.push(quote!(#d: &mut [#ft]));
                    cr_args.push(quote!(#d));
                }
            }
            ParamClass::Int => {
                let wide = format_ident!("__wide_{}", name);
                locals.push(quote!(let #wide = #name as i64;));
                for v in [&mut p_params, &mut r_params, &mut cp_params, &mut cr_params] {
                    v.push(quote!(#name: #ty));
                }
                p_args.push(quote!(__b.arg(&#wide);));
                r_args.push(quote!(__b.arg(&#wide);));
                cp_args.push(quote!(#name));
                cr_args.push(quote!(#name));
            }
            ParamClass::Float | ParamClass::Bool | ParamClass::Opaque => {
                for v in [&mut p_params, &mut r_params, &mut cp_params, &mut cr_params] {
                    v.push(quote!(#name: #ty));
                }
                p_args.push(quote!(__b.arg(&#name);));
                r_args.push(quote!(__b.arg(&#name);));
                cp_args.push(quote!(#name));
                cr_args.push(quote!(#name));
            }
        }
    }

    let adjoint_ty = match n_adjoints {
        0 => quote!(()),
        1 => quote!(#ft),
        k => {
            let ts = (0..k).map(|_| quote!(#ft));
            quote!((#(#ts),*))
        }
    };
    let (adj_alloc, adj_arg, adj_result) = if n_adjoints == 0 {
        (quote!(), quote!(), quote!(Ok(())))
    } else {
        let picks = (0..n_adjoints).map(|k| quote!(__h[#k]));
        let result = if n_adjoints == 1 {
            quote!(Ok(__h[0]))
        } else {
            quote!(Ok((#(#picks),*)))
        };
        (
            quote!(let mut __adj = gpu.zeros::<#ft>(#n_adjoints)?;),
            quote!(__b.arg(&mut __adj);),
            quote!(gpu.synchronize()?; let __h = gpu.download(&__adj)?; #result),
        )
    };
    let driver = quote!(|e| #rt::CudaError::Driver(format!("{e:?}")));
    // The CPU adjoint: the scalar adjoints of every index, summed; in the gather form the
    // gathering function of every index, then the finishing one of every index.
    let (call, finish_loop, cpu_doc, span) = match gather {
        None => (
            quote!(super::#rev_fn(__i, #(#cr_args),*)),
            quote!(),
            "The CPU reference of [`launch_rev`]: the element function's `_rev` for every index in `0..n`, in order; the scalar adjoints summed.",
            quote!(n),
        ),
        Some(g) => {
            let main = &g.main;
            let gathered = &g.gathered;
            (
                quote!(super::#main(__i, #(#cr_args,)* n)),
                match &g.finish {
                    Some(fin) => quote! {
                        for __i in 0..n {
                            super::#fin(__i, #(#cr_args,)* n);
                        }
                    },
                    None => quote!(),
                },
                match g.parallel {
                    Some(_) => "The CPU counterpart of [`launch_rev`], in the same gather form as [`ADJOINT`]: for every element the sum of the adds that land on it (then the finishing stores of every index), in parallel with rayon (each element writes only its own elements; the scalar adjoints are summed per block of elements, then the blocks in order, so the result does not depend on the number of threads). Where a slice it writes is shorter than the elements it runs over, it runs them in order. It equals the element function's `_rev` run for every index in `0..n`, up to the order of the sums.",
                    None => "The CPU counterpart of [`launch_rev`], in the same gather form as [`ADJOINT`]: for every element, in order, the sum of the adds that land on it (then the finishing stores of every index); the scalar adjoints summed. It equals the element function's `_rev` run for every index in `0..n`, up to the order of the sums.",
                },
                quote!(n #(.max(#gathered.len()))*),
            )
        }
    };
    let (cpu_acc, cpu_add, cpu_result) = match n_adjoints {
        0 => (quote!(), quote!(#call;), quote!()),
        1 => (
            quote!(let mut __acc: #ft = 0.0 as #ft;),
            quote!(__acc += #call;),
            quote!(__acc),
        ),
        k => {
            let idx: Vec<syn::Index> = (0..k).map(syn::Index::from).collect();
            (
                quote!(let mut __acc = [0.0 as #ft; #k];),
                quote!(let __r = #call; #(__acc[#idx] += __r.#idx;)*),
                {
                    let picks = (0..k).map(|j| quote!(__acc[#j]));
                    quote!((#(#picks),*))
                },
            )
        }
    };
    // The gather form's kernels: the number of elements before `phidiff_n`, the gathering
    // kernel over the elements its adds reach, then the finishing kernel (the same
    // arguments but the scalar adjoints) over the elements.
    let (rev_threads, elements_arg, finish_launch) = match gather {
        Some(g) => {
            let gathered = &g.gathered;
            let finish = match &g.finish {
                Some(_) => quote! {
                    let __f = gpu.kernel(FINISH_NAME.expect("a finishing kernel"), ADJOINT)?;
                    let __n = n as u64;
                    let mut __b = gpu.stream().launch_builder(&__f);
                    #(#r_args)*
                    __b.arg(&__elements);
                    __b.arg(&__n);
                    // SAFETY: as in `launch`; the finishing kernel takes the adjoint
                    // kernel's parameters but the scalar adjoints.
                    unsafe { __b.launch(gpu.config(n)) }.map_err(#driver)?;
                },
                None => quote!(),
            };
            (
                quote!(n #(.max(#gathered.len()))*),
                quote!(__b.arg(&__elements);),
                finish,
            )
        }
        None => (quote!(n), quote!(), quote!()),
    };
    // The parallel gather form, where every slice it writes covers its range.
    let parallel_rev = match gather.and_then(|g| g.parallel.as_ref()) {
        Some(p) => {
            let function = &p.function;
            let main_writes = &p.main_writes;
            let finish_writes = &p.finish_writes;
            let covered: Vec<TokenStream> = main_writes
                .iter()
                .map(|w| quote!(#w.len() >= __span))
                .chain(finish_writes.iter().map(|w| quote!(#w.len() >= n)))
                .collect();
            let call = quote!(return super::#function(#(#cr_args,)* n, __span););
            match covered.is_empty() {
                // (A gather form writes at least its gathered slices.)
                true => quote!(if true { #call }),
                false => quote!(if #(#covered)&&* { #call }),
            }
        }
        None => quote!(),
    };
    let cpu_primal = match parallel_body {
        Some(body) => {
            let index = &sig.params[0].name;
            let written: Vec<&syn::Ident> = params
                .iter()
                .filter(|p| {
                    matches!(
                        p.class,
                        ParamClass::Buffer {
                            form: BufForm::MutRef,
                            ..
                        }
                    )
                })
                .map(|p| &p.name)
                .collect();
            quote! {
                /// The CPU launcher of [`launch`]: the element function for every index in
                /// `0..n`, in parallel with rayon (its iterations are independent: each
                /// writes its own element of every slice it writes).
                pub fn cpu(n: usize, #(#cp_params),*) {
                    #krate::par::for_each_owned(0..n, (#(&mut *#written,)*), |#index, __views| {
                        let (#(#written,)*) = __views;
                        #(let #written = &mut #written.iteration();)*
                        #body
                    });
                }
            }
        }
        None => quote! {
            /// The CPU launcher of [`launch`]: the element function for every index in
            /// `0..n`, in order (its iterations share an element of a slice they write).
            pub fn cpu(n: usize, #(#cp_params),*) {
                for __i in 0..n {
                    super::#fname(__i, #(#cp_args),*);
                }
            }
        },
    };
    quote! {
        /// Runs [`PRIMAL`] on `gpu` with `n` threads (compiled once with NVRTC, cached).
        pub fn launch(gpu: &#rt::Gpu, n: usize, #(#p_params),*) -> Result<(), #rt::CudaError> {
            use #rt::cudarc::driver::PushKernelArg;
            let __f = gpu.kernel(PRIMAL_NAME, PRIMAL)?;
            #(#locals)*
            let __n = n as u64;
            let mut __b = gpu.stream().launch_builder(&__f);
            #(#p_args)*
            __b.arg(&__n);
            // SAFETY: the arguments are pushed in the order and with the types of the
            // kernel's parameters, both generated from the same signature.
            unsafe { __b.launch(gpu.config(n)) }.map_err(#driver)?;
            Ok(())
        }

        /// Runs [`ADJOINT`] on `gpu` with `n` threads: the shadows get the adjoints as
        /// `_rev` gives them; returns the adjoints of the active scalars, summed over the
        /// threads.
        pub fn launch_rev(gpu: &#rt::Gpu, n: usize, #(#r_params),*) -> Result<#adjoint_ty, #rt::CudaError> {
            use #rt::cudarc::driver::PushKernelArg;
            let __f = gpu.kernel(ADJOINT_NAME, ADJOINT)?;
            #(#locals)*
            #(#r_locals)*
            let __threads: usize = #rev_threads;
            let __elements = n as i64;
            let __n = __threads as u64;
            #adj_alloc
            let mut __b = gpu.stream().launch_builder(&__f);
            #(#r_args)*
            #elements_arg
            __b.arg(&__n);
            #adj_arg
            // SAFETY: as in `launch`.
            unsafe { __b.launch(gpu.config(__threads)) }.map_err(#driver)?;
            #finish_launch
            #adj_result
        }

        #cpu_primal

        #[doc = #cpu_doc]
        pub fn cpu_rev(n: usize, #(#cr_params),*) -> #adjoint_ty {
            let __span: usize = #span;
            #parallel_rev
            #cpu_acc
            for __i in 0..__span {
                #cpu_add
            }
            #finish_loop
            #cpu_result
        }
    }
}

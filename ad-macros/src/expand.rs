//! The pipeline as one function: parse → desugar → lower → verify → analyze → derive → emit.

use crate::analysis::activity;
use crate::codegen::{
    self,
    signature::{Header, Layout},
    Binding,
};
use crate::derivative::{forward, reverse};
use crate::diagnostics::Diagnostics;
use crate::ir;
use crate::parse::{checkpoint, signature, Options};
use crate::pipeline;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};

/// `#[differentiate(args)] item` → the item followed by its derivative functions; on error
/// the item followed by the errors, so the rest of the crate keeps compiling. (The
/// attributes give [`expand_in`] the source file; tests call this.)
#[cfg_attr(not(test), allow(dead_code))]
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_in(args, item, None)
}

/// The file a differentiated function is in: its text, and its path (to find the files of
/// the modules it imports constants from).
#[derive(Clone, Copy)]
pub struct SourceFile<'a> {
    pub text: &'a str,
    pub path: Option<&'a std::path::Path>,
}

/// [`expand`], given the source file the function is in (when the compiler says which file
/// that is): a call of a function that the file shows has no derivative function is then a
/// phidiff error at the call (see [`crate::missing_rule`]), and constants are read from it.
pub fn expand_in(
    args: TokenStream,
    item: TokenStream,
    source: Option<SourceFile<'_>>,
) -> TokenStream {
    if let Ok(imp) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return crate::aggregate::expand_impl(args, imp, source);
    }
    let item_fn: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let err = syn::Error::new_spanned(
                &item,
                "#[differentiate] applies to a function, or to an `impl` block whose methods carry it",
            )
            .to_compile_error();
            return quote!(#item #err);
        }
    };
    // A method's impl block, which its attribute does not see, is read from the file.
    let imp = match (item_fn.sig.receiver(), source) {
        (Some(_), Some(s)) => crate::aggregate::impl_of(&item_fn, s.text),
        _ => None,
    };
    if let (Some(r), None) = (item_fn.sig.receiver(), &imp) {
        let mut primal = item_fn.clone();
        let _ = checkpoint::strip(&mut primal);
        let in_trait = source.is_some_and(|s| crate::aggregate::in_trait_impl(&item_fn, s.text));
        let msg = match in_trait {
            true => "phidiff: this method is in a trait impl, which cannot hold its derivatives: put `#[phidiff::differentiate]` on the `impl Trait for Type` block too (its methods keep their own attributes; the derivatives go to an inherent impl beside it)",
            false => "phidiff: the impl block of this method was not found in its file (phidiff reads it to learn `Self`): put `#[phidiff::differentiate]` on the `impl` block too (its methods keep their own attributes)",
        };
        let err = syn::Error::new_spanned(r, msg).to_compile_error();
        return quote!(#primal #err);
    }
    expand_fn(args, &item_fn, &item, imp.as_ref(), source)
}

/// [`expand_in`] of a function, or of a method of the impl block `imp` (then the tokens are
/// items of that impl).
pub fn expand_fn(
    args: TokenStream,
    item_fn: &syn::ItemFn,
    item: &TokenStream,
    imp: Option<&syn::ItemImpl>,
    source: Option<SourceFile<'_>>,
) -> TokenStream {
    // The primal as written, less the `#[checkpoint]`s rustc would reject.
    let mut primal = item_fn.clone();
    let misplaced = checkpoint::strip(&mut primal);
    // The calls of plain helpers, inlined into what is differentiated (the primal keeps
    // them): `desugar::inline`.
    let float = crate::desugar::inline::caller_float(item_fn, imp);
    let inlined = match source.map(|s| crate::desugar::inline::helpers(item_fn, imp, s, &float)) {
        Some(Err(e)) => {
            let err = e.to_compile_error();
            return quote!(#primal #err);
        }
        Some(Ok(Some(f))) => Some(f),
        _ => None,
    };
    let item_fn = inlined.clone().unwrap_or_else(|| item_fn.clone());
    let inlined_tokens = inlined.as_ref().map(|f| f.to_token_stream());
    let item = inlined_tokens.as_ref().unwrap_or(item);
    // A function reading the fields of structs first asks for their layouts.
    let needed = crate::aggregate::needed(&item_fn, imp, source.map(|s| s.text));
    if needed.is_empty()
        && (imp.is_some() || crate::aggregate::has_tuples(&item_fn, source.map(|s| s.text)))
    {
        // Tuples (and a method of a struct whose fields are not read) need no layout.
        let derivatives = syn::parse2::<Options>(args.clone()).and_then(|opts| {
            crate::aggregate::derivatives(opts, &item_fn, &Default::default(), imp, source)
        });
        let derivatives = derivatives.unwrap_or_else(|e| e.to_compile_error());
        let misplaced = misplaced.into_iter().map(|e| e.to_compile_error());
        return quote!(#primal #(#misplaced)* #derivatives);
    }
    if !needed.is_empty() {
        let missing =
            source.and_then(|s| crate::aggregate::missing_derive(&item_fn, &needed, s.text));
        let request = match syn::parse2::<Options>(args.clone()) {
            Ok(opts) => match missing {
                Some(e) => e.to_compile_error(),
                None => crate::aggregate::chase(&opts.krate, &args, &needed, &quote!(), imp, item),
            },
            Err(e) => e.to_compile_error(),
        };
        let misplaced = misplaced.into_iter().map(|e| e.to_compile_error());
        return quote!(#primal #(#misplaced)* #request);
    }
    let generated = syn::parse2::<Options>(args).and_then(|mut opts| {
        opts.resolve_names(&item_fn.sig.ident);
        derive_all(&opts, &item_fn, source)
    });
    let mut errors = misplaced.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    });
    let generated = generated.and_then(|tokens| {
        let tokens = match source {
            Some(s) => crate::missing_rule::chosen_names(&item_fn, tokens, s),
            None => tokens,
        };
        let missing = source.and_then(|s| {
            crate::missing_rule::check(&item_fn, &tokens, s.text)
                .or_else(|| crate::missing_rule::check_paths(&item_fn, &tokens, s))
        });
        match missing {
            Some(e) => Err(e),
            None => Ok(tokens),
        }
    });
    let tokens = match generated {
        Ok(tokens) => tokens,
        Err(e) => {
            match &mut errors {
                Some(a) => a.combine(e),
                None => errors = Some(e),
            }
            quote!()
        }
    };
    match errors {
        None => quote!(#primal #tokens),
        Some(e) => {
            let err = e.to_compile_error();
            quote!(#primal #err)
        }
    }
}

/// The IR of the primal and of both derivative programs (for tests and the interpreter).
#[cfg_attr(not(test), allow(dead_code))]
pub struct Compiled {
    pub primal: ir::Function,
    pub forward: ir::Function,
    pub reverse: ir::Function,
    /// What a fallible function returns at each failure site (`None`, `Err(..)`), with
    /// the names of the variables its error value reads.
    pub failures: Vec<(Vec<syn::Ident>, TokenStream)>,
}

pub(crate) fn internal(what: &str, e: String, f: &ir::Function) -> syn::Error {
    syn::Error::new(
        proc_macro2::Span::call_site(),
        format!(
            "phidiff internal error in {what}: {e}\n{}",
            ir::printer::print(f)
        ),
    )
}

fn compile(
    opts: &Options,
    item: &syn::ItemFn,
    source: Option<SourceFile<'_>>,
) -> syn::Result<(signature::Signature, Compiled)> {
    let diag = Diagnostics::default();
    let sig = signature::read(&item.sig, opts.wrt.as_deref(), &diag);
    diag.check()?;
    let Some(mut sig) = sig else {
        return Err(syn::Error::new_spanned(
            &item.sig,
            "phidiff: unsupported signature",
        ));
    };
    sig.note_body(&item.block);
    let (desugared, sites) = crate::desugar::body(item, &sig)?;
    let diag = Diagnostics::default();
    let (primal, sites) = crate::lower::lower_desugared(&desugared, &sig, sites, &diag, source);
    let failures = sites
        .iter()
        .map(|s| (s.locals.clone(), s.tokens()))
        .collect();
    diag.check()?;
    // The passes of `pipeline::PIPELINE`, in order, each verified after it.
    let internal = |e: String| syn::Error::new(proc_macro2::Span::call_site(), e);
    let mut primal = primal;
    pipeline::after("lowering", &primal).map_err(internal)?;
    let passes = opts.passes;
    pipeline::run(passes, "sum_fusion", &mut primal, |f| {
        crate::lower::fuse_sums_into_writers(f);
        Ok(())
    })
    .map_err(internal)?;
    pipeline::run(passes, "loop_fusion", &mut primal, |f| {
        crate::lower::fuse_adjacent_loops(f);
        Ok(())
    })
    .map_err(internal)?;
    reverse::check_checkpoints(&primal)?;
    let active: Vec<bool> = sig.params.iter().map(|p| p.active).collect();
    let act = activity::analyze(&primal, &active);
    if let Some(&n) = act.carriers.first() {
        let p = &sig.params[n];
        return Err(syn::Error::new_spanned(
            &p.name,
            format!(
                "phidiff: `{0}` is left out of `wrt(..)`, but the function writes values that depend on the active parameters into it and reads them back, so the derivative flows through it; add `{0}` to `wrt(..)` (its shadow then holds its adjoint, which you may ignore)",
                p.name
            ),
        ));
    }
    let name = item.sig.ident.to_string();
    let fwd = forward::forward(&primal, &act, &active, &format!("{name}_fwd"));
    pipeline::after("forward", &fwd).map_err(internal)?;
    let coarsening = reverse::Coarsening {
        on: opts.coarsen,
        limit: opts.segment_limit,
        atomic_adjoint: opts.atomic_adjoint,
        passes,
    };
    // `extrema` to `summation_aware`.
    let rev = reverse::reverse(&primal, &act, &active, &format!("{name}_rev"), coarsening)
        .map_err(|e| syn::Error::new_spanned(&item.sig.ident, e))?;
    if pipeline::dump_whole_programs() {
        eprintln!(
            "{}\n{}\n{}",
            ir::printer::print(&primal),
            ir::printer::print(&fwd),
            ir::printer::print(&rev)
        );
    }
    Ok((
        sig,
        Compiled {
            primal,
            forward: fwd,
            reverse: rev,
            failures,
        },
    ))
}

pub fn derive_all(
    opts: &Options,
    item: &syn::ItemFn,
    source: Option<SourceFile<'_>>,
) -> syn::Result<TokenStream> {
    let (sig, compiled) = compile(opts, item, source)?;
    let header = Header {
        item,
        sig: &sig,
        krate: &opts.krate,
    };
    let mut out = quote!();
    if sig.mixed {
        reject_mixed(item, opts, &compiled)?;
    }
    if let Some(name) = &opts.primal {
        let layout = Layout {
            slots: (0..sig.params.len())
                .map(codegen::signature::Slot::Primal)
                .collect(),
        };
        let b = layout.bindings(&sig, false);
        let types = sig.mixed.then(|| {
            let mut t = mixed_types(item, &sig, &layout, true);
            t.results.truncate(usize::from(sig.returns_float));
            t
        });
        let body = codegen::body_typed(
            &compiled.primal,
            &sig.float,
            &opts.krate,
            b,
            &compiled.failures,
            types.as_ref(),
        );
        out.extend(header.primal(name, body));
    }
    if let Some(name) = &opts.forward {
        let layout = Layout::forward(&sig);
        let b = layout.bindings(&sig, true);
        assert_eq!(b.len(), compiled.forward.params.len(), "forward parameters");
        let types = sig.mixed.then(|| mixed_types(item, &sig, &layout, true));
        let body = codegen::body_typed(
            &compiled.forward,
            &sig.float,
            &opts.krate,
            b,
            &compiled.failures,
            types.as_ref(),
        );
        out.extend(header.forward(name, body));
    }
    if let Some(name) = &opts.reverse {
        let layout = Layout::reverse(&sig);
        let b = layout.bindings(&sig, false);
        assert_eq!(b.len(), compiled.reverse.params.len(), "reverse parameters");
        let types = sig.mixed.then(|| mixed_types(item, &sig, &layout, false));
        let body = codegen::body_typed(
            &compiled.reverse,
            &sig.float,
            &opts.krate,
            b,
            &compiled.failures,
            types.as_ref(),
        );
        out.extend(header.reverse(name, body));
        if sig.returns_float && opts.grad {
            let grad = format_ident!("{}_grad", item.sig.ident);
            out.extend(header.grad(&grad, name));
        }
    }
    for b in &opts.batched {
        let name = b.name.as_ref().expect("names are resolved");
        let scalar_ref = sig.params.iter().find(|p| {
            p.active
                && matches!(p.class, signature::ParamClass::Buffer { form, .. } if form.is_scalar())
        });
        if let (Some(_), syn::ReturnType::Type(_, ty)) = (&sig.fallible, &item.sig.output) {
            return Err(syn::Error::new_spanned(
                ty,
                crate::derivative::batch::unsupported(
                    b.forward,
                    "functions returning `Option` or `Result`",
                ),
            ));
        }
        if let Some(p) = scalar_ref {
            return Err(syn::Error::new_spanned(
                &p.ty,
                crate::derivative::batch::unsupported(
                    b.forward,
                    "floats passed by reference (`&f64`, `&mut f64`)",
                ),
            ));
        }
        out.extend(if b.forward {
            batched_forward(item, &header, &sig, &compiled, name, b.width)?
        } else {
            batched_reverse(item, &header, &sig, &compiled, name, b.width)?
        });
    }
    if opts.cuda {
        out.extend(cuda_module(opts, item, &sig, &compiled)?);
    }
    if std::env::var_os("PHIDIFF_DUMP_CODE").is_some() {
        eprintln!("{out}");
    }
    Ok(out)
}

/// The float type a type names (`f32` in `&[f32]`), if any.
pub fn prec_of(ty: &proc_macro2::TokenStream) -> Option<crate::ir::Prec> {
    ty.clone().into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == "f32" => Some(crate::ir::Prec::F32),
        proc_macro2::TokenTree::Ident(i) if i == "f64" => Some(crate::ir::Prec::F64),
        proc_macro2::TokenTree::Group(g) => prec_of(&g.stream()),
        _ => None,
    })
}

/// The float types of the parameters and results of `_fwd` (`forward`) or `_rev` of a
/// function that mixes `f32` and `f64`, laid out by `layout`.
fn mixed_types(
    item: &syn::ItemFn,
    sig: &signature::Signature,
    layout: &Layout,
    forward: bool,
) -> codegen::Types {
    use codegen::signature::Slot;
    let of = |n: usize| {
        let ty = &sig.params[n].ty;
        prec_of(&quote!(#ty))
    };
    let ret = match &item.sig.output {
        syn::ReturnType::Type(_, ty) if sig.returns_float => prec_of(&quote!(#ty)),
        _ => None,
    };
    let params = layout
        .slots
        .iter()
        .map(|s| match *s {
            Slot::Primal(n) | Slot::Derivative(n) => of(n),
            Slot::Seed => ret,
        })
        .collect();
    let mut results = Vec::new();
    if sig.returns_float {
        results.push(ret);
    }
    if forward {
        if sig.returns_float {
            results.push(ret);
        }
    } else {
        for (n, p) in sig.params.iter().enumerate() {
            if p.is_active_scalar() {
                results.push(of(n));
            }
        }
    }
    codegen::Types { params, results }
}

/// What a function that mixes `f32` and `f64` cannot have yet: parallel loops, batched
/// modes and CUDA kernels (their code writes one float type). Checkpointed loops keep
/// their snapshots in `f64`.
fn reject_mixed(item: &syn::ItemFn, opts: &Options, compiled: &Compiled) -> syn::Result<()> {
    let f = &compiled.primal;
    let first_parallel = f.parallel.keys().min().map(|l| f.inst(*l).span);
    let (why, span) = if let Some(s) = first_parallel {
        (Some("a parallel loop"), s)
    } else if !opts.batched.is_empty() {
        (
            Some("`forward(width = N)` or `reverse(width = N)`"),
            item.sig.ident.span(),
        )
    } else if opts.cuda {
        (Some("`cuda`"), item.sig.ident.span())
    } else {
        (None, item.sig.ident.span())
    };
    match why {
        Some(why) => Err(syn::Error::new(
            span,
            format!(
                "phidiff cannot differentiate a function that mixes `f32` and `f64` with {why} \
                 yet: write it in one float type (convert its `f32` inputs to `f64` at the call), \
                 or move that loop into a function of one float type that this one calls"
            ),
        )),
        None => Ok(()),
    }
}

/// `forward(width = N)` and `reverse(width = N)` report checkpointed loops at their
/// attribute.
fn reject_checkpoints(compiled: &Compiled, forward: bool) -> syn::Result<()> {
    match compiled.primal.checkpoints.iter().min_by_key(|(l, _)| **l) {
        Some((_, spec)) => Err(syn::Error::new_spanned(
            &spec.attr,
            crate::derivative::batch::unsupported(forward, "checkpointed loops"),
        )),
        None => Ok(()),
    }
}

/// The batched forward function of `forward(width = N)` (see `derivative::batch`).
fn batched_forward(
    item: &syn::ItemFn,
    header: &Header,
    sig: &signature::Signature,
    compiled: &Compiled,
    name: &syn::Ident,
    width: usize,
) -> syn::Result<TokenStream> {
    reject_checkpoints(compiled, true)?;
    // The scalar forward program's parameters: each primal one, its tangent after each
    // active one (a buffer's tangent is a shadow, a scalar's a seed).
    let layout = Layout::forward(sig);
    let mut b = layout.bindings(sig, true);
    let shadows = layout.derivatives_of(sig, true);
    let seeds = layout.derivatives_of(sig, false);
    let fwd = &compiled.forward;
    assert_eq!(b.len(), fwd.params.len(), "forward parameters");
    let batched = crate::derivative::batch::batch(
        fwd,
        width,
        &shadows,
        &seeds,
        usize::from(sig.returns_float),
        item.sig.ident.span(),
        true,
    )?;
    pipeline::after("batched", &batched.func)
        .map_err(|e| syn::Error::new(proc_macro2::Span::call_site(), e))?;
    let mut lanes = std::collections::HashMap::new();
    for (n, names) in &batched.lanes {
        let bind = b[*n];
        b.extend(names.iter().map(|_| bind));
        lanes.insert(fwd.params[*n].name.clone(), names.clone());
    }
    let body = codegen::body(&batched.func, &sig.float, header.krate, b, &[]);
    Ok(header.forward_batched(name, body, width, &lanes))
}

/// The batched reverse function of `reverse(width = N)` (see `derivative::batch`).
fn batched_reverse(
    item: &syn::ItemFn,
    header: &Header,
    sig: &signature::Signature,
    compiled: &Compiled,
    name: &syn::Ident,
    width: usize,
) -> syn::Result<TokenStream> {
    reject_checkpoints(compiled, false)?;
    // The scalar reverse program's parameters: each primal one, a shadow after each
    // active buffer, and the seed last.
    let layout = Layout::reverse(sig);
    let mut b = layout.bindings(sig, false);
    let shadows = layout.derivatives_of(sig, true);
    let seed = layout.seed();
    assert_eq!(b.len(), compiled.reverse.params.len(), "reverse parameters");
    let scalar_adjoints = sig.params.iter().filter(|p| p.is_active_scalar()).count();
    let batched = crate::derivative::batch::batch(
        &compiled.reverse,
        width,
        &shadows,
        seed.as_slice(),
        scalar_adjoints,
        item.sig.ident.span(),
        false,
    )?;
    pipeline::after("batched", &batched.func)
        .map_err(|e| syn::Error::new(proc_macro2::Span::call_site(), e))?;
    let rev = &compiled.reverse;
    let mut lanes = std::collections::HashMap::new();
    for (n, names) in &batched.lanes {
        b.extend(names.iter().map(|_| Binding::Reference));
        lanes.insert(rev.params[*n].name.clone(), names.clone());
    }
    let body = codegen::body(&batched.func, &sig.float, header.krate, b, &[]);
    Ok(header.reverse_batched(name, body, width, &lanes))
}

/// `mod <name>_cuda { PRIMAL, ADJOINT, .. }`: the CUDA C of the element function's primal
/// and adjoint kernels (`#[differentiate(reverse, cuda)]`).
fn cuda_module(
    opts: &Options,
    item: &syn::ItemFn,
    sig: &signature::Signature,
    compiled: &Compiled,
) -> syn::Result<TokenStream> {
    let name = &item.sig.ident;
    let at_fn = |msg: String| syn::Error::new_spanned(name, format!("phidiff: {msg}"));
    if opts.reverse.is_none() {
        return Err(at_fn(
            "`cuda` needs `reverse` (the adjoint kernel comes from it)".into(),
        ));
    }
    if sig.returns_float || sig.fallible.is_some() {
        return Err(syn::Error::new_spanned(
            &item.sig.output,
            "phidiff: a CUDA element function returns `()` and writes its results into slices",
        ));
    }
    let first_is_index = match item.sig.inputs.first() {
        Some(syn::FnArg::Typed(t)) => {
            let ty = &t.ty;
            matches!(
                quote!(#ty).to_string().as_str(),
                "usize" | "u32" | "u64" | "isize" | "i32" | "i64"
            )
        }
        _ => false,
    };
    if !first_is_index {
        let at = item
            .sig
            .inputs
            .first()
            .map(|a| quote!(#a))
            .unwrap_or_else(|| quote!(#name));
        return Err(syn::Error::new_spanned(
            at,
            "phidiff: the first parameter of a CUDA element function is the thread index (`i: usize`)",
        ));
    }
    codegen::cuda_syntax::check_syntax(item)?;
    let types: Vec<(String, Option<&'static str>)> = item
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(t) => match &*t.pat {
                syn::Pat::Ident(p) => Some((
                    p.ident.to_string(),
                    codegen::cuda_syntax::int_elem_type(&t.ty),
                )),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let int_elem = |p: &str| types.iter().find(|(n, _)| n == p).and_then(|(_, t)| *t);
    let primal_name = name.to_string();
    let adjoint_name = format!("{name}_rev");
    let primal = codegen::cuda::kernel(&compiled.primal, &primal_name, &sig.float, &int_elem)
        .map_err(at_fn)?;
    let n_adjoints = compiled.reverse.block(compiled.reverse.body).yields.len();
    let (adjoint, gathered) = cuda_adjoint(compiled, item, &sig.float, &int_elem).map_err(at_fn)?;
    let index_is_usize =
        param_type(item, &compiled.primal.params[0].name).as_deref() == Some("usize");
    let finish_name = format!("{name}_rev_finish");
    let gather_fns = match &gathered {
        None => None,
        Some(g) => {
            let header = Header {
                item,
                sig,
                krate: &opts.krate,
            };
            let main = format_ident!("__phidiff_{}_rev_gather", name);
            let finish = g
                .finish
                .as_ref()
                .map(|_| format_ident!("__phidiff_{}_rev_finish", name));
            let mut fns = codegen::cuda_cpu::gather_fn(&header, &main, &g.main, n_adjoints)?;
            if let (Some(fname), Some(f)) = (&finish, &g.finish) {
                fns.extend(codegen::cuda_cpu::gather_fn(&header, fname, f, n_adjoints)?);
            }
            let par_name = format_ident!("__phidiff_{}_rev_par", name);
            let parallel = codegen::cuda_cpu::gather_par_fn(&header, &par_name, g, n_adjoints)?
                .map(|(f, p)| {
                    fns.extend(f);
                    p
                });
            Some((main, finish, fns, parallel))
        }
    };
    let parallel_body =
        (index_is_usize && codegen::cuda_cpu::owned_only(&compiled.primal)).then_some(&*item.block);
    let gather =
        gathered
            .as_ref()
            .zip(gather_fns.as_ref())
            .map(
                |(g, (main, finish, _, parallel))| codegen::cuda_launch::Gather {
                    main: main.clone(),
                    finish: finish.clone(),
                    gathered: g.gathered.iter().map(|n| format_ident!("{}", n)).collect(),
                    parallel: parallel.clone(),
                },
            );
    let launchers = codegen::cuda_launch::launchers(
        sig,
        &opts.krate,
        name,
        n_adjoints,
        parallel_body,
        gather.as_ref(),
    );
    let finish_const = match gathered.as_ref().and_then(|g| g.finish.as_ref()) {
        Some(_) => quote!(Some(#finish_name)),
        None => quote!(None),
    };
    let gather_fns = gather_fns.map(|(_, _, fns, _)| fns);
    let module = format_ident!("{}_cuda", name);
    let vis = &item.vis;
    let doc =
        format!(" CUDA C kernels generated by `#[differentiate(reverse, cuda)]` from [`{name}`].");
    Ok(quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis mod #module {
            /// The name of the primal kernel in [`PRIMAL`].
            pub const PRIMAL_NAME: &str = #primal_name;
            /// The primal kernel: one thread per element.
            pub const PRIMAL: &str = #primal;
            /// The name of the adjoint kernel in [`ADJOINT`].
            pub const ADJOINT_NAME: &str = #adjoint_name;
            /// The adjoint kernel: each thread runs the element's forward then reverse sweep
            /// (and, in the gather form, those of its neighbours its element's adjoint
            /// needs; see `docs/cuda.md`).
            pub const ADJOINT: &str = #adjoint;
            /// The kernel of [`ADJOINT`] that [`launch_rev`] runs after [`ADJOINT_NAME`], if
            /// there is one: the stores the gather form moves out of the first kernel
            /// (clearing output shadows that neighbouring threads read there).
            pub const FINISH_NAME: Option<&str> = #finish_const;
            #launchers
        }
        #gather_fns
    })
}

/// The Rust type of parameter `name` of `item`, as text.
fn param_type(item: &syn::ItemFn, name: &str) -> Option<String> {
    item.sig.inputs.iter().find_map(|a| match a {
        syn::FnArg::Typed(t) => match &*t.pat {
            syn::Pat::Ident(q) if q.ident == name => {
                let ty = &t.ty;
                Some(quote!(#ty).to_string())
            }
            _ => None,
        },
        syn::FnArg::Receiver(_) => None,
    })
}

/// The CUDA C of an element function's adjoint: the gather form's kernels where it has
/// one (`derivative::gather`: its shifted adds summed by the thread that owns the
/// element, then the finishing stores), the adjoint program's kernel otherwise.
pub fn cuda_adjoint(
    compiled: &Compiled,
    item: &syn::ItemFn,
    float: &signature::FloatTy,
    int_elem: &dyn Fn(&str) -> Option<&'static str>,
) -> Result<(String, Option<crate::derivative::gather::Gathered>), String> {
    let name = item.sig.ident.to_string();
    let adjoint_name = format!("{name}_rev");
    // Its index arithmetic is `usize`'s in the CPU launcher, so the thread index and the
    // parameters in shifts are `usize`s.
    let index_is_usize =
        param_type(item, &compiled.primal.params[0].name).as_deref() == Some("usize");
    let unsigned =
        |n: usize| param_type(item, &compiled.reverse.params[n].name).as_deref() == Some("usize");
    let gathered = index_is_usize
        .then(|| crate::derivative::gather::gather(&compiled.reverse, &unsigned))
        .flatten();
    let Some(g) = gathered else {
        let text = codegen::cuda::kernel(&compiled.reverse, &adjoint_name, float, int_elem)?;
        return Ok((text, None));
    };
    pipeline::after("cuda_gather", &g.main)?;
    if let Some(finish) = &g.finish {
        pipeline::after("cuda_gather", finish)?;
    }
    let threads = Some(g.main.params.len() - 1);
    let mut text =
        codegen::cuda::kernel_with_count(&g.main, &adjoint_name, float, int_elem, threads)?;
    if let Some(finish) = &g.finish {
        text.push('\n');
        text.push_str(&codegen::cuda::kernel_with_count(
            finish,
            &format!("{name}_rev_finish"),
            float,
            int_elem,
            threads,
        )?);
    }
    Ok((text, Some(g)))
}

/// Compiles a function with `forward, reverse` for tests; errors as text.
#[cfg(test)]
pub fn compile_for_tests(item: &syn::ItemFn) -> Result<Compiled, String> {
    let opts: Options = syn::parse_quote!(forward, reverse);
    compile(&opts, item, None)
        .map(|(_, c)| c)
        .map_err(|e| e.to_string())
}

/// Compiles with the given attribute arguments, for tests.
#[cfg(test)]
pub fn compile_with_for_tests(args: &str, item: &syn::ItemFn) -> Result<Compiled, String> {
    let opts: Options = syn::parse_str(args).map_err(|e| e.to_string())?;
    compile(&opts, item, None)
        .map(|(_, c)| c)
        .map_err(|e| e.to_string())
}

/// The `coarsen = off` reverse program of a function, for equivalence tests.
#[cfg(test)]
pub fn compile_fine_reverse_for_tests(item: &syn::ItemFn) -> Result<ir::Function, String> {
    let opts: Options = syn::parse_quote!(forward, reverse, coarsen = off);
    compile(&opts, item, None)
        .map(|(_, c)| c.reverse)
        .map_err(|e| e.to_string())
}

//! syn → IR. Scalars become SSA values through an environment of bindings; mutations of
//! scalar variables inside branches and loops become φs (`if` results, loop header
//! parameters). `break`, `continue` and early `return` are lowered to boolean flags so every
//! region stays single-entry single-exit (structured reverse mode needs nothing else).

mod call;
pub(crate) mod consts;
mod control;
pub(crate) mod crates;
mod env;
mod expr;
mod fallible;
mod iter;
mod loop_fusion;
mod macros;
mod scope;
mod sum_fusion;
mod views;
pub use crate::desugar::fallible::Site;
pub use loop_fusion::fuse_adjacent_loops;
pub use sum_fusion::fuse_sums_into_writers;

use crate::diagnostics::{unsupported, Diagnostics};
use crate::ir::builder::Builder;
use crate::ir::*;
use crate::parse::signature::{ElemKind, ParamClass, Signature};
use env::{Binding, Env, Indices};
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

pub type LResult<T> = Result<T, syn::Error>;

/// Names of the lowering's own flags: not valid Rust identifiers, so they never collide.
const RET: &str = "#ret";
const RETVAL: &str = "#retval";

use crate::desugar::Missing;

struct LoopCtx {
    /// Name of this loop's break flag when its body breaks.
    brk: Option<String>,
    /// Name of this loop's continue flag when its body continues.
    cont: Option<String>,
}

pub struct Lowerer<'a> {
    b: Builder<'a>,
    env: Env,
    loops: Vec<LoopCtx>,
    /// Whether the function body contains an early `return`.
    has_return: bool,
    returns_float: bool,
    /// The generic float parameter, if any (`T` in `T::from`, `T::zero()`).
    float_generic: Option<String>,
    /// The function's float type as written (`f64`, `f32` or the generic), for messages.
    float_name: String,
    /// The function mixes `f32` and `f64` (`Signature::mixed`): conversions between them
    /// are instructions.
    mixed: bool,
    /// What follows the user call being lowered (`?`), taken by the call (`Callee::then`).
    call_then: Option<Code>,
    next_flag: u32,
    /// Whether the value of the block being lowered is used (decides whether a user call in
    /// tail position returns a value).
    tail_wanted: bool,
    /// The named constants the body may read, and how deep one is being lowered in another.
    consts: consts::Constants,
    const_depth: u32,
    /// The local closures (`let f = |x| ..;`), by name, inlined where they are called, with
    /// the bindings of the names their bodies read when they were defined.
    closures: scope::Closures,
    /// The failure sites of a fallible function (see `fallible`).
    fail_sites: Vec<Site>,
    /// The parameters an error value may name (not floats behind references), with their
    /// bindings at entry (the generated code evaluates the error where the parameters
    /// still hold them) and whether they are `&mut` buffers.
    error_params: Vec<(String, Option<Binding>, bool)>,
    /// The values the error of a `?` site reads (see `fallible`), for its `Fail`.
    fail_args: std::collections::HashMap<u32, Vec<Value>>,
}

pub fn err<T: ToTokens>(tokens: T, what: &str, why: &str) -> syn::Error {
    syn::Error::new_spanned(tokens, unsupported(what, why))
}

fn text<T: ToTokens>(t: &T) -> String {
    crate::diagnostics::source_text(t)
}

/// Lowers the body of `item`, desugared by `crate::desugar::body` (with its failure
/// `sites`), into a new IR function; `source` is the text of its file, for the constants
/// it names. With it, the failure sites (what its `Fail` instructions return, with the
/// variables each reads).
pub fn lower_desugared(
    item: &syn::ItemFn,
    sig: &Signature,
    sites: Vec<Site>,
    diag: &Diagnostics,
    source: Option<crate::expand::SourceFile<'_>>,
) -> (Function, Vec<Site>) {
    let mut func = Function::new(item.sig.ident.to_string());
    let mut env = Env::default();
    env.push_scope();
    // Parameters.
    let mut scalar_params = Vec::new();
    // Floats behind references (`x: &f64`, `y: &mut f64`): element 0 of a one-element buffer.
    let mut scalar_refs = Vec::new();
    for (n, p) in sig.params.iter().enumerate() {
        let name = p.name.to_string();
        let kind = match &p.class {
            ParamClass::Float => ParamKind::Scalar(Ty::Float),
            ParamClass::Int => ParamKind::Scalar(Ty::Int),
            ParamClass::Bool => ParamKind::Scalar(Ty::Bool),
            ParamClass::Opaque => ParamKind::Opaque,
            ParamClass::Buffer { elem, rank, form } => {
                let buf = func.new_buf(BufData {
                    name: name.clone(),
                    rank: *rank,
                    elem: if *elem == ElemKind::Float {
                        Ty::Float
                    } else {
                        Ty::Int
                    },
                    kind: BufKind::Param(n),
                });
                if form.is_scalar() {
                    scalar_refs.push((name.clone(), buf));
                } else {
                    env.bind(&name, Binding::Buf(buf));
                }
                ParamKind::Buffer {
                    buf,
                    mutable: form.is_mut() || p.pat_mut,
                }
            }
        };
        if let ParamKind::Scalar(ty) = kind {
            scalar_params.push((n, ty, name.clone()));
        }
        if matches!(kind, ParamKind::Opaque) {
            env.bind(&name, Binding::Opaque);
        }
        func.params.push(ParamInfo {
            name,
            kind,
            span: p.name.span(),
        });
    }
    let body = func.body;
    let float_generic = match &sig.float {
        crate::parse::signature::FloatTy::Generic(t) => Some(t.to_string()),
        _ => None,
    };
    let mut l = Lowerer {
        b: Builder::new(&mut func, body),
        env,
        loops: Vec::new(),
        has_return: control::contains_return(&item.block.stmts),
        returns_float: sig.returns_float,
        float_generic,
        float_name: sig.float.tokens().to_string(),
        mixed: sig.mixed,
        call_then: None,
        next_flag: 0,
        tail_wanted: sig.returns_float,
        consts: consts::Constants::from_source(item, source),
        const_depth: 0,
        closures: Default::default(),
        fail_sites: Vec::new(),
        error_params: Vec::new(),
        fail_args: Default::default(),
    };
    l.b.span = item.sig.ident.span();
    for (n, ty, name) in scalar_params {
        let i = l.b.push(InstKind::Param(n), &[ty], Some(&name));
        let v = l.b.func.inst(i).results[0];
        l.env.bind(&name, Binding::Scalar(v));
    }
    for (name, buf) in scalar_refs {
        let zero = l.b.iconst(0);
        l.env.bind(&name, Binding::Elem(buf, Indices::of(&[zero])));
    }
    l.fail_sites = sites;
    l.error_params = sig
        .params
        .iter()
        .filter(|p| !matches!(p.class, ParamClass::Buffer { form, .. } if form.is_scalar()))
        .map(|p| {
            let name = p.name.to_string();
            let b = l.env.lookup(&name);
            let mutable = matches!(p.class, ParamClass::Buffer { form, .. } if form.is_mut());
            (name, b, mutable)
        })
        .collect();
    if let Err(e) = l
        .bind_const_generics(item)
        .and_then(|()| l.fill_tables(item))
    {
        diag.push(e);
        let sites = std::mem::take(&mut l.fail_sites);
        return (func, sites);
    }
    if l.has_return {
        let f = l.b.bconst(false);
        l.env.bind(RET, Binding::Scalar(f));
        if sig.returns_float {
            let z = l.b.fconst(0.0);
            l.env.bind(RETVAL, Binding::Scalar(z));
        }
    }
    let tail = l.lower_block_stmts(&item.block.stmts);
    match tail {
        Err(e) => diag.push(e),
        Ok(tail) => {
            let result = match (l.has_return, tail, l.lookup_scalar(RETVAL)) {
                // Returned early → the return slot, else the tail: φ(ret, retval, tail).
                (true, Some(t), Some(rv)) => {
                    let ret = l.lookup_scalar(RET).expect("return flag");
                    let then_blk = l.b.func.new_block();
                    let else_blk = l.b.func.new_block();
                    l.b.set_yields(then_blk, vec![rv]);
                    l.b.set_yields(else_blk, vec![t]);
                    let i = l.b.push(
                        InstKind::If {
                            cond: ret,
                            then_blk,
                            else_blk,
                        },
                        &[Ty::Float],
                        None,
                    );
                    Some(l.b.func.inst(i).results[0])
                }
                (true, None, rv) => rv,
                (true, Some(t), None) => Some(t),
                (false, t, _) => t,
            };
            match (sig.returns_float, result) {
                (true, Some(v)) if l.b.func.ty(v) == Ty::Float => l.b.set_yields(body, vec![v]),
                (true, _) => diag.error_spanned(
                    &item.sig.output,
                    "phidiff: the function's value could not be read as a float from its body",
                ),
                (false, _) => {}
            }
        }
    }
    let sites = std::mem::take(&mut l.fail_sites);
    drop(l);
    fallible::check_failures(&func, diag);
    (func, sites)
}

impl<'a> Lowerer<'a> {
    /// Each const generic `N` that is the length of an array parameter (`x: &[T; N]`) is
    /// that parameter's length.
    fn bind_const_generics(&mut self, item: &syn::ItemFn) -> LResult<()> {
        for g in item.sig.generics.const_params() {
            let n = g.ident.to_string();
            let param = item.sig.inputs.iter().find_map(|a| {
                let syn::FnArg::Typed(t) = a else { return None };
                let mut ty = &*t.ty;
                while let syn::Type::Reference(r) = ty {
                    ty = &r.elem;
                }
                let syn::Type::Array(arr) = ty else {
                    return None;
                };
                let len_is_n = matches!(&arr.len, syn::Expr::Path(p) if p.path.is_ident(&n));
                match (&*t.pat, len_is_n) {
                    (syn::Pat::Ident(pi), true) => Some(pi.ident.to_string()),
                    _ => None,
                }
            });
            match param.and_then(|p| self.env.lookup(&p)) {
                Some(Binding::Buf(buf)) => {
                    let len = self.b.value(InstKind::Len(buf, vec![]), Ty::Int);
                    self.b.func.values[len.index()].name = Some(n.clone());
                    self.env.bind(&n, Binding::Scalar(len));
                }
                _ => {
                    return Err(self.error(
                        &g.ident,
                        &n,
                        "a const generic is read as the length of an array parameter (`x: &[T; N]`); take such a parameter, or pass the number as a `usize`",
                    ))
                }
            }
        }
        Ok(())
    }

    /// The constant tables (`const W: [f64; 5] = [..]`) the body names, filled at entry.
    fn fill_tables(&mut self, item: &syn::ItemFn) -> LResult<()> {
        let mut names = consts::idents(item.block.to_token_stream());
        names.extend(
            consts::qualified_paths(item.block.to_token_stream())
                .iter()
                .map(|p| p.join("::")),
        );
        let tables: Vec<(String, consts::ConstItem)> = self
            .consts
            .tables(&names)
            .into_iter()
            .map(|(n, c)| (n.to_string(), c.clone()))
            .collect();
        for (name, c) in tables {
            let buf = self.fill_table(&name, &c)?;
            self.env.bind(&name, Binding::Buf(buf));
        }
        Ok(())
    }

    fn error<T: ToTokens>(&self, tokens: T, what: &str, why: &str) -> syn::Error {
        err(tokens, what, why)
    }

    fn fresh_flag(&mut self, kind: &str) -> String {
        self.next_flag += 1;
        format!("#{kind}{}", self.next_flag)
    }

    fn lookup_scalar(&self, name: &str) -> Option<Value> {
        match self.env.lookup(name) {
            Some(Binding::Scalar(v)) => Some(v),
            _ => None,
        }
    }

    fn set_return(&mut self, v: Value) {
        let t = self.b.bconst(true);
        self.env.assign(RET, Binding::Scalar(t));
        if self.returns_float {
            self.env.assign(RETVAL, Binding::Scalar(v));
        }
    }

    fn with_span<R>(&mut self, span: Span, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = std::mem::replace(&mut self.b.span, span);
        let r = f(self);
        self.b.span = saved;
        r
    }

    fn ty(&self, v: Value) -> Ty {
        self.b.func.ty(v)
    }

    fn expect_ty(&self, v: Value, ty: Ty, at: &dyn ToTokens, what: &str) -> LResult<()> {
        if self.ty(v) != ty {
            return Err(syn::Error::new_spanned(
                at.to_token_stream(),
                format!(
                    "phidiff: {what} must be {}, but this expression is {}",
                    ty_word(ty),
                    ty_word(self.ty(v))
                ),
            ));
        }
        Ok(())
    }
}

/// `(start, end, index, body)` of a `for` loop that runs forward with step 1 and has no
/// loop-carried parameters or exits: the loops the fusion passes move code between.
fn plain_for(f: &Function, l: Inst) -> Option<(Value, Value, Value, Block)> {
    match &f.inst(l).kind {
        InstKind::For {
            range,
            index,
            params,
            body,
            exit,
            ..
        } if !range.rev && range.step.is_none() && params.is_empty() && exit.is_empty() => {
            Some((range.start, range.end, *index, *body))
        }
        _ => None,
    }
}

fn ty_word(t: Ty) -> &'static str {
    match t {
        Ty::Float => "a float",
        Ty::Int => "an integer",
        Ty::Bool => "a bool",
    }
}

/// Span of any syntax node (for instruction source spans).
fn span_of<T: Spanned>(t: &T) -> Span {
    t.span()
}

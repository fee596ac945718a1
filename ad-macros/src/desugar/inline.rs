//! Helpers without attributes, inlined (issue 48): a call `g(a, b)` of a plain function
//! phidiff can read (no `#[differentiate]`, no hand-written `g_fwd`/`g_rev`) whose
//! parameters are floats, integers, `bool`s or slices of them becomes the block
//!
//! ```text
//! { let __pd_call1_0 = a; let __pd_call1_1 = b; { let x = __pd_call1_0; let y = __pd_call1_1; <g's body> } }
//! ```
//!
//! before anything else reads the body, so the helper is differentiated where it is called
//! like a local closure: coarsening sees through the call (no shadow buffers, no second
//! primal run in `_rev`), and no item is generated, so two differentiated functions
//! calling one helper never emit conflicting items. The arguments are bound first, in
//! order, so a parameter named like an argument (`g(y, x)` of `fn g(x, y)`) reads the
//! caller's value. A generic helper (`fn g<T: Float>(v: T)`) reads the caller's float type
//! (or the one of `g::<F>(..)`) in place of its own.
//!
//! - **Where helpers are found:** by the call's path from the caller's module, the way Rust
//!   resolves it (`g`, `util::g`, `super::g`, a `use`), in the caller's file or the files of
//!   the crate's modules ([`consts::resolve_item`]), or in a dependency's source
//!   ([`crate::lower::crates`]). A helper of another module brings its module's constants
//!   along as local `const`s under fresh names.
//! - **Structs** (`&Body`, `&mut State`, `&[Body]`) are lent, not copied: the temporary and
//!   the parameter borrow the argument's place (`let __pd_call1_0 = &mut *s; { let o = &mut
//!   *__pd_call1_0; .. } }`), and the struct rewrite takes each such `let` as another name
//!   of the place, so `o.x[1] = ..` writes the caller's `s`.
//! - **Methods** of the caller's structs (`self.m()`, `p.m()`, `bodies[i].m()`, a loop's
//!   element `b.m()`, a field `m.origin.m()`, a local borrowing one) and associated
//!   functions (`Self::f`, `Type::f`, also a method by its path, `Type::m(&mut s, dt)`) of
//!   inherent impls of the caller's module: `self` stands for the receiver, a place of the
//!   caller ([`Inliner::place_type`] knows its struct).
//! - **Results:** one value or none (the block's value), or a tuple or array literal taken
//!   apart by the `let` it initializes ([`Inliner::aggregate_let`]); early `return`s in `if`s
//!   become branches ([`lift`]).
//!
//! A helper is left as a call (derived by the `_fwd`/`_rev` convention, so a missing rule is
//! reported by [`crate::missing_rule`], which asks [`why_not_inlined`]) when its body names
//! something the caller binds at the call (the inlined body would read the caller's local
//! instead of the module's item), when it names an item of another module that cannot come
//! along, or when it is outside what inlining covers (structs by value, `&f64` parameters,
//! `Vec` results, `return` in loops, `?`). A helper calling itself, directly or through
//! others, is an error at the call that closes the cycle, and so is a closure passed to a
//! helper of this crate ([`Inliner::closure_argument`]).

mod fit;
mod names;

use crate::expand::SourceFile;
use crate::lower::consts::{self, Module};
use crate::missing_rule::{idents, mentions_differentiate};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::collections::HashSet;
use std::path::Path;
use std::rc::Rc;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Type};

pub use fit::why_not_inlined;
use fit::*;
use names::*;

/// `item` with the calls of plain helpers inlined; `None` when it calls none (or the file
/// does not show `item`'s module). `float` is the caller's float type.
pub fn helpers(
    item: &syn::ItemFn,
    imp: Option<&syn::ItemImpl>,
    source: SourceFile<'_>,
    float: &TokenStream,
) -> syn::Result<Option<syn::ItemFn>> {
    let Ok(file) = syn::parse_file(source.text) else {
        return Ok(None);
    };
    let Some(path) = caller_path(&file.items, &item.sig.ident.to_string()) else {
        return Ok(None);
    };
    let file_idents = idents(file.to_token_stream());
    let underived = crate::aggregate::underived_structs(&file.items);
    let structs_by_name = file_structs(&file.items);
    let root = Module {
        items: Rc::new(file.items),
        file: source.path.map(Path::to_path_buf),
        inline: Vec::new(),
    };
    let Some(module) = root.descend(&path) else {
        return Ok(None);
    };
    let mut inliner = Inliner {
        module,
        self_ty: imp.and_then(|i| type_name(&i.self_ty)),
        structs: struct_params(item, &underived),
        file_structs: structs_by_name,
        underived,
        file_idents,
        float: float.clone(),
        stack: vec![item.sig.ident.to_string()],
        bound: bound_names(item),
        next: 0,
        errors: Vec::new(),
        changed: false,
    };
    let mut out = item.clone();
    inliner.visit_block_mut(&mut out.block);
    if let Some(e) = inliner.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        return Err(e);
    }
    Ok(inliner.changed.then_some(out))
}

/// Inlines helper calls in the function it visits.
struct Inliner {
    /// The module the visited code is in (the caller's, then each helper's).
    module: Module,
    /// The name of `Self`'s type where the visited code is a method.
    self_ty: Option<String>,
    /// The caller's struct parameters: name → (type name, whether a slice of them).
    structs: std::collections::HashMap<String, (String, bool)>,
    /// The structs of the caller's file by name (with its inline modules'), for the types
    /// of their fields.
    file_structs: std::collections::HashMap<String, syn::ItemStruct>,
    /// The structs the caller's file defines without deriving `Differentiable`: a helper
    /// or method taking one is left a call (it reads configuration, not variables).
    underived: HashSet<String>,
    /// The identifiers of the caller's file (a hand-written `g_rev` there keeps `g` a call).
    file_idents: HashSet<String>,
    /// The float type a generic helper is instantiated at.
    float: TokenStream,
    /// The functions being inlined into, outermost first (the caller, then helpers).
    stack: Vec<String>,
    /// The names the function being rewritten binds (parameters, locals, closures, items).
    bound: HashSet<String>,
    next: usize,
    errors: Vec<syn::Error>,
    changed: bool,
}

impl VisitMut for Inliner {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let call = match e {
            Expr::Call(c) if c.args.iter().any(|a| matches!(a, Expr::Closure(_))) => {
                self.closure_argument(c);
                None
            }
            Expr::Call(c) => self.inline_call(c, false),
            Expr::MethodCall(m) => self.inline_method(m, false),
            _ => None,
        };
        let Some(call) = call else {
            return;
        };
        match syn::parse2::<Expr>(call.block(quote!())) {
            Ok(inlined) => {
                *e = inlined;
                self.changed = true;
            }
            Err(err) => self.errors.push(err),
        }
    }

    /// `let PAT = g(..);` of a helper returning a tuple or an array literal: its elements
    /// are assigned to fresh names declared before the inlined body, which PAT then binds.
    /// A local borrowing a struct (`let q = &others[0];`, `let o = &m.origin;`) is one of
    /// them for its methods in the rest of the block.
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let saved = self.structs.clone();
        let mut out = Vec::with_capacity(b.stmts.len());
        for mut stmt in std::mem::take(&mut b.stmts) {
            self.visit_stmt_mut(&mut stmt);
            if let syn::Stmt::Local(l) = &stmt {
                let borrowed = self.struct_local(l);
                match borrowed {
                    Some((name, ty)) => {
                        self.structs.insert(name, ty);
                    }
                    // A name bound again is no longer the struct it was.
                    None => {
                        for name in pattern_names(&l.pat) {
                            self.structs.remove(&name);
                        }
                    }
                }
            }
            match self.aggregate_let(&stmt) {
                Some(stmts) => out.extend(stmts),
                None => out.push(stmt),
            }
        }
        b.stmts = out;
        self.structs = saved;
    }

    /// `for b in bodies.iter()` (also `iter_mut()`, `&bodies`, `.enumerate()` with
    /// `(i, b)`) over a slice of structs: `b` is one of them in the body, for its methods.
    fn visit_expr_for_loop_mut(&mut self, f: &mut syn::ExprForLoop) {
        let element = self.element_of(&f.expr).and_then(|(ty, enumerated)| {
            let pat = match (&*f.pat, enumerated) {
                (syn::Pat::Tuple(t), true) if t.elems.len() == 2 => &t.elems[1],
                (p, false) => p,
                _ => return None,
            };
            match pat {
                syn::Pat::Ident(id) => Some((id.ident.to_string(), ty)),
                _ => None,
            }
        });
        let Some((name, ty)) = element else {
            return syn::visit_mut::visit_expr_for_loop_mut(self, f);
        };
        let outer = self.structs.insert(name.clone(), (ty, false));
        syn::visit_mut::visit_expr_for_loop_mut(self, f);
        match outer {
            Some(o) => self.structs.insert(name, o),
            None => self.structs.remove(&name),
        };
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // Items nested in a body are not the function's code.
    }
}

impl Inliner {
    /// The name a `let` binds to a struct (or a reference to one), with its type: a
    /// borrow of a struct place (`let q = &others[0];`, `let o = &m.origin;`), a copy of
    /// one (`let c = *p;`), a literal (`let b = V3 { .. };`), a block giving one (an
    /// inlined helper's result), or a local typed with one (`let c: V3 = ..;`).
    fn struct_local(&self, l: &syn::Local) -> Option<(String, (String, bool))> {
        let (id, ty) = match &l.pat {
            syn::Pat::Ident(id) => (id, None),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(id) => (id, Some(&*t.ty)),
                _ => return None,
            },
            _ => return None,
        };
        let known = |name: String| (!self.underived.contains(&name)).then_some((name, false));
        let found = match (ty, &l.init) {
            (Some(t), _) => struct_type(t)
                .filter(|(n, slice)| !slice && n != "Self" && !self.underived.contains(n)),
            (None, Some(init)) if init.diverge.is_none() => match &*init.expr {
                Expr::Reference(r) => self.place_type(&r.expr),
                Expr::Struct(lit) => known(lit.path.segments.last()?.ident.to_string()),
                Expr::Block(b) => {
                    let path = crate::aggregate::struct_of_tail(&b.block)?;
                    known(path.segments.last()?.ident.to_string())
                }
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                    self.place_type(&u.expr).filter(|(_, slice)| !slice)
                }
                other => self.place_type(other).filter(|(_, slice)| !slice),
            },
            _ => None,
        };
        found.map(|ty| (id.ident.to_string(), ty))
    }

    /// The struct type of the elements `e` iterates (`bodies.iter()`, `bodies.iter_mut()`,
    /// `&bodies`, `bodies`, each maybe `.enumerate()`d) when `bodies` is a slice of structs
    /// of the caller, and whether it is enumerated.
    fn element_of(&self, e: &Expr) -> Option<(String, bool)> {
        let (mut e, mut enumerated) = (e, false);
        if let Expr::MethodCall(m) = e {
            if m.method == "enumerate" && m.args.is_empty() {
                (e, enumerated) = (&*m.receiver, true);
            }
        }
        let base = match e {
            Expr::MethodCall(m)
                if (m.method == "iter" || m.method == "iter_mut") && m.args.is_empty() =>
            {
                &*m.receiver
            }
            Expr::Reference(r) if !enumerated => &*r.expr,
            other if !enumerated => other,
            _ => return None,
        };
        let Expr::Path(p) = base else { return None };
        let (ty, slice) = self.structs.get(&p.path.get_ident()?.to_string())?;
        slice.then(|| (ty.clone(), enumerated))
    }
}

/// A call ready to inline: the arguments bound to temporaries (in the caller's scope),
/// the parameters bound to them, and the helper's prepared body.
struct Call {
    span: Span,
    temps: TokenStream,
    binds: TokenStream,
    body: syn::Block,
    n: usize,
    /// Statements after the body, in the temporaries' scope: the copies of `&mut f64`
    /// arguments written back to their places.
    after: TokenStream,
    /// Whether the helper returns a value (its signature has a result type).
    valued: bool,
}

impl Call {
    /// `{ temps { binds body } after }`, with `body`'s value (and `tail`'s statements)
    /// kept across `after`.
    fn block(self, tail: TokenStream) -> TokenStream {
        let Call {
            span,
            temps,
            binds,
            body,
            n,
            after,
            valued,
        } = self;
        let stmts = &body.stmts;
        if after.is_empty() {
            return quote_spanned!(span=> { #temps { #binds #(#stmts)* #tail } });
        }
        if !valued || !tail.is_empty() {
            return quote_spanned!(span=> { #temps { #binds #(#stmts)* #tail } #after });
        }
        let value = format_ident!("__pd_value{}", n, span = span);
        quote_spanned!(span=> { #temps let #value = { #binds #(#stmts)* }; #after #value })
    }
}

impl Inliner {
    /// `c` as a [`Call`] when it calls a helper this inliner takes: one returning a value
    /// (or nothing), or with `aggregate` one returning a tuple or an array.
    fn inline_call(&mut self, c: &syn::ExprCall, aggregate: bool) -> Option<Call> {
        let segs = self.callee(c)?;
        let Expr::Path(p) = &*c.func else { return None };
        // An associated function's type: what `Self` means in its body.
        let (helper, module, self_ty) = match self.helper(&segs) {
            Some((f, m)) => (f, m, None),
            None => match self.associated(&segs) {
                Some((f, m, ty)) => (f, m, Some(ty)),
                None => return self.method_by_path(&segs, c, aggregate),
            },
        };
        let returns = inlinable(&helper)?;
        if helper.sig.inputs.len() != c.args.len() || (returns != Returns::Value) != aggregate {
            return None;
        }
        let name = helper.sig.ident.to_string();
        let key = match &self_ty {
            Some(ty) => format!("{}::{ty}::{name}", self.key(&module, "")),
            None => self.key(&module, &name),
        };
        let fix = format!(
            "give `{name}` hand-written derivatives `{name}_fwd`/`{name}_rev` (a custom rule, \
             see the guide, \"Calls and custom rules\")"
        );
        if self.cycle(&key, &name, &c.func, &fix) {
            return None;
        }
        let last = p.path.segments.last().expect("a path has a segment");
        let float = match &last.arguments {
            syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                Some(syn::GenericArgument::Type(t)) => t.to_token_stream(),
                _ => self.float.clone(),
            },
            _ => self.float.clone(),
        };
        // The file's text gives the helper's tokens no place in it: they take the call's
        // (the outermost one's, for a chain), so what is reported inside points there.
        let span = c.span();
        let body = self.prepared(&helper, &module, key, &float, span, self_ty)?;
        // The helper's free names must mean at the call what they mean in the module.
        if free_names(&helper, &body)
            .iter()
            .any(|n| self.bound.contains(n))
        {
            return None;
        }
        self.bound_call(&c.args, &helper, body, span)
    }

    /// The path call `c` names its callee by (`g`, `util::g`), unless that is a local
    /// binding of the visited function (a closure) or a path phidiff does not follow.
    fn callee(&self, c: &syn::ExprCall) -> Option<Vec<String>> {
        let Expr::Path(p) = &*c.func else { return None };
        if p.qself.is_some() || p.path.leading_colon.is_some() {
            return None;
        }
        let segs = crate::lower::consts::path_names(&p.path);
        (segs.len() > 1 || !self.bound.contains(&segs[0])).then_some(segs)
    }

    /// A call passing a closure to a plain function phidiff reads and that has no rules
    /// (`integrate(|t| t.sin(), a, b)`): the error at the call, naming the callee and the
    /// ways out. (Inlining would need the closure's body at each call of the parameter.)
    fn closure_argument(&mut self, c: &syn::ExprCall) {
        let Some(segs) = self.callee(c) else { return };
        let Some((f, m)) = resolve_fn(&self.module, &segs) else {
            return;
        };
        let name = f.sig.ident.to_string();
        let module_idents = idents(m.items.iter().map(ToTokens::to_token_stream).collect());
        let has_rule = ["_fwd", "_rev"].iter().any(|s| {
            let rule = format!("{name}{s}");
            self.file_idents.contains(&rule) || module_idents.contains(&rule)
        });
        // A library's function taking a closure (`rayon::join`) is its business.
        if has_rule || mentions_differentiate(&f.attrs) || !m.in_this_crate() {
            return;
        }
        let param = c
            .args
            .iter()
            .zip(&f.sig.inputs)
            .find_map(|(a, input)| match (a, input) {
                (Expr::Closure(_), syn::FnArg::Typed(pt)) => Some(format!(
                    "`{}: {}`",
                    crate::diagnostics::source_text(&pt.pat),
                    crate::diagnostics::source_text(&pt.ty)
                )),
                _ => None,
            })
            .unwrap_or_else(|| "a function".into());
        self.errors.push(syn::Error::new_spanned(
            &c.func,
            format!(
                "phidiff cannot differentiate this call of `{name}`: it passes a closure \
                 (to {param}), and phidiff differentiates a function without attributes by \
                 inlining its body, which cannot see through a function passed as a value. \
                 Write what the closure computes as a named helper that `{name}` calls, or \
                 give `{name}` hand-written derivatives `{name}_fwd`/`{name}_rev` (a custom \
                 rule, see the guide, \"Calls and custom rules\")"
            ),
        ));
    }

    /// An associated function (`Model::step`, `Self::step`) of an inherent impl of the
    /// visited module, as a helper: the impl's generic float is its own.
    fn associated(&self, path: &[String]) -> Option<(syn::ItemFn, Module, String)> {
        let [ty, name] = path else { return None };
        let ty = match ty.as_str() {
            "Self" => self.self_ty.clone()?,
            other => other.to_string(),
        };
        let (f, _, module) = self.method_of(&ty, name, false)?;
        Some((f, module, ty))
    }

    /// The function `name` of an inherent impl of the type named `ty` in the visited
    /// module, as a plain function (the impl's generics first, the receiver taken out,
    /// `Self` in its signature the impl's type), and its receiver (`&self`, `&mut self`,
    /// `self`, `mut self`) if it is a method; `method` asks for one.
    fn method_of(
        &self,
        ty: &str,
        name: &str,
        method: bool,
    ) -> Option<(syn::ItemFn, Option<syn::Receiver>, Module)> {
        // The visited module's impls, then those of the module defining the struct (another
        // module of the crate, or another crate).
        let home = self
            .struct_home(ty)
            .filter(|h| !same_module(h, &self.module));
        for module in std::iter::once(self.module.clone()).chain(home) {
            if let Some(found) = self.method_in(&module, ty, name, method) {
                return found.map(|(f, r)| (f, r, module));
            }
        }
        None
    }

    /// The module that defines the struct named `ty`, seen from the visited module, when
    /// the struct derives `Differentiable` there (another crate's `StdRng` is no struct of
    /// the user's: its methods stay calls).
    fn struct_home(&self, ty: &str) -> Option<Module> {
        let defines_struct = |m: &Module, path: &[String]| match path {
            [name] => m.items.iter().find_map(|it| match it {
                syn::Item::Struct(s) if s.ident == name => {
                    crate::aggregate::derives_differentiable(&s.attrs).then_some(())
                }
                _ => None,
            }),
            _ => None,
        };
        consts::resolve_item(&self.module, &[ty.to_string()], 0, &defines_struct, &|_| {
            true
        })
        .map(|(_, m)| m)
    }

    /// [`Self::method_of`] among the impls of `module`: `None` where it has no such
    /// function, `Some(None)` where it has one that is not inlined (annotated, with rules,
    /// or with a receiver phidiff does not take).
    #[allow(clippy::type_complexity)]
    fn method_in(
        &self,
        module: &Module,
        ty: &str,
        name: &str,
        method: bool,
    ) -> Option<Option<(syn::ItemFn, Option<syn::Receiver>)>> {
        for it in module.items.iter() {
            let syn::Item::Impl(imp) = it else { continue };
            if imp.trait_.is_some() || type_name(&imp.self_ty).as_deref() != Some(ty) {
                continue;
            }
            for i in &imp.items {
                let syn::ImplItem::Fn(m) = i else { continue };
                if m.sig.ident != name {
                    continue;
                }
                let receiver = m.sig.receiver();
                if mentions_differentiate(&m.attrs)
                    || method != receiver.is_some()
                    || receiver.is_some_and(|r| r.colon_token.is_some())
                    || imp.generics.where_clause.is_some()
                {
                    return Some(None);
                }
                // `Self` in the signature is the type with its arguments (`-> V3<T>`,
                // `other: &V3<T>`).
                let ty_tokens = imp.self_ty.to_token_stream();
                let mut sig: syn::Signature =
                    syn::parse2(replace_ident(m.sig.to_token_stream(), "Self", &ty_tokens)).ok()?;
                sig.inputs = sig
                    .inputs
                    .into_iter()
                    .filter(|a| matches!(a, syn::FnArg::Typed(_)))
                    .collect();
                let mut params = imp.generics.params.clone();
                params.extend(sig.generics.params.iter().cloned());
                sig.generics.params = params;
                let f = syn::ItemFn {
                    attrs: Vec::new(),
                    vis: syn::Visibility::Inherited,
                    sig,
                    block: Box::new(m.block.clone()),
                };
                let module_idents = match same_module(module, &self.module) {
                    true => HashSet::new(),
                    false => idents(module.items.iter().map(ToTokens::to_token_stream).collect()),
                };
                let has_rule = ["_fwd", "_rev"].iter().any(|s| {
                    let rule = format!("{name}{s}");
                    self.file_idents.contains(&rule) || module_idents.contains(&rule)
                });
                return Some((!has_rule).then_some((f, receiver.cloned())));
            }
        }
        None
    }

    /// A call of a method of the caller's structs (`self.energy(x)`, `p.kinetic()`,
    /// `bodies[i].kinetic()`, `sub(a, b).norm()`) with no attribute: its body with `self`
    /// standing for the receiver, a place of the caller, or for a copy of it (`self` by
    /// value, or a receiver that is a value).
    fn inline_method(&mut self, m: &syn::ExprMethodCall, aggregate: bool) -> Option<Call> {
        let ty = match &*m.receiver {
            // The struct an inlined call gives (`sub(a, b).norm()`).
            Expr::Block(b) => {
                let path = crate::aggregate::struct_of_tail(&b.block)?;
                let name = path.segments.last()?.ident.to_string();
                (!self.underived.contains(&name)).then_some(name)?
            }
            other => self.receiver_type(other)?,
        };
        self.inline_method_of(ty, m, m.span(), aggregate)
    }

    /// `Particle::kinetic(&others[0])`, `Model::step(&mut s, dt)`, `Self::energy(self, g)`:
    /// a method called by its path, inlined as the method call on its first argument.
    fn method_by_path(
        &mut self,
        path: &[String],
        c: &syn::ExprCall,
        aggregate: bool,
    ) -> Option<Call> {
        let [ty, name] = path else { return None };
        let ty = match ty.as_str() {
            "Self" => self.self_ty.clone()?,
            other => other.to_string(),
        };
        let mut args = c.args.iter();
        // `&mut s`, `&*p`, `p` (a reference): the place `s`, `p` (auto-deref'd).
        let mut receiver = args.next()?;
        loop {
            receiver = match receiver {
                Expr::Reference(r) => &r.expr,
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &u.expr,
                Expr::Paren(p) => &p.expr,
                _ => break,
            };
        }
        if self.receiver_type(receiver)? != ty {
            return None;
        }
        let receiver = receiver.clone();
        let Expr::Path(f) = &*c.func else { return None };
        let last = f.path.segments.last()?;
        let m = syn::ExprMethodCall {
            attrs: Vec::new(),
            receiver: Box::new(receiver),
            dot_token: Default::default(),
            method: syn::Ident::new(name, last.ident.span()),
            turbofish: None,
            paren_token: Default::default(),
            args: args.cloned().collect(),
        };
        self.inline_method_of(ty, &m, c.span(), aggregate)
    }

    /// The struct type of a method call's receiver: see [`Self::place_type`].
    fn receiver_type(&self, receiver: &Expr) -> Option<String> {
        match self.place_type(receiver)? {
            (ty, false) => Some(ty),
            (_, true) => None,
        }
    }

    /// The struct type of place `e` (and whether it is a slice of them): `self`, a struct
    /// parameter or local reference, an element of a slice of them (`bodies[i]`), or a field
    /// of one holding a struct or a `Vec` or array of them (`m.origin`, `m.layers[k]`),
    /// as the file defines the struct.
    fn place_type(&self, e: &Expr) -> Option<(String, bool)> {
        match e {
            Expr::Path(p) if p.path.is_ident("self") => Some((self.self_ty.clone()?, false)),
            Expr::Path(p) => self.structs.get(&p.path.get_ident()?.to_string()).cloned(),
            // The index is read at each of the receiver's uses: no calls in it.
            Expr::Index(ix) if arithmetic(&ix.index) => match self.place_type(&ix.expr)? {
                (ty, true) => Some((ty, false)),
                (_, false) => None,
            },
            Expr::Field(f) => {
                let (ty, false) = self.place_type(&f.base)? else {
                    return None;
                };
                let def = self.file_structs.get(&ty)?;
                let field = def
                    .fields
                    .iter()
                    .enumerate()
                    .find(|(k, fd)| match &f.member {
                        syn::Member::Named(n) => fd.ident.as_ref() == Some(n),
                        syn::Member::Unnamed(i) => i.index as usize == *k,
                    })?;
                match &field.1.ty {
                    // `[Layer; 3]`: a sequence of them, like `Vec<Layer>`.
                    Type::Array(a) => struct_type(&a.elem).map(|(t, _)| (t, true)),
                    other => struct_type(other),
                }
                .filter(|(t, _)| !self.underived.contains(t))
            }
            Expr::Paren(p) => self.place_type(&p.expr),
            _ => None,
        }
    }

    /// The method call `m` (at `span`) on a receiver of struct type `ty` as a [`Call`]
    /// (with `aggregate`, of a method returning a tuple or an array).
    fn inline_method_of(
        &mut self,
        ty: String,
        m: &syn::ExprMethodCall,
        span: Span,
        aggregate: bool,
    ) -> Option<Call> {
        let name = m.method.to_string();
        let (helper, receiver_kind, module) = self.method_of(&ty, &name, true)?;
        // A receiver that is a value, not a place (`sub(a, b).norm()`), is bound first too.
        let by_value = receiver_kind
            .as_ref()
            .is_some_and(|r| r.reference.is_none())
            || matches!(&*m.receiver, Expr::Block(_));
        let Some(returns) = inlinable_method(&helper) else {
            self.not_inlined_elsewhere(m, &ty, &helper, &module, aggregate);
            return None;
        };
        if (returns != Returns::Value) != aggregate || helper.sig.inputs.len() != m.args.len() {
            return None;
        }
        let key = format!("{}::{ty}::{name}", self.key(&module, ""));
        let fix = "annotate the method with `#[differentiate(forward, reverse)]`";
        if self.cycle(&key, &name, &m.method, fix) {
            return None;
        }
        let float = self.float.clone();
        let Some(body) = self.prepared(&helper, &module, key, &float, span, Some(ty.clone()))
        else {
            self.not_inlined_elsewhere(m, &ty, &helper, &module, aggregate);
            return None;
        };
        let receiver = respan(m.receiver.to_token_stream(), span);
        // The receiver's names must not be the method's own (it binds them inside).
        let mut inner = bound_names(&helper);
        inner.extend(bound_names(&syn::ItemFn {
            block: Box::new(body.clone()),
            ..helper.clone()
        }));
        if idents(receiver.clone()).iter().any(|n| inner.contains(n))
            || free_names(&helper, &body)
                .iter()
                .any(|n| n != "self" && self.bound.contains(n))
        {
            return None;
        }
        let body: syn::Block = match by_value {
            // `self` by value: a copy of the receiver, which the method may change.
            true => {
                self.next += 1;
                let copy = format_ident!("__pd_self{}", self.next, span = span);
                let mutability = receiver_kind.and_then(|r| r.mutability);
                let body = replace_ident(body.to_token_stream(), "self", &copy.to_token_stream());
                let mut body: syn::Block = syn::parse2(body).ok()?;
                let first: syn::Stmt =
                    syn::parse2(quote_spanned!(span=> let #mutability #copy = #receiver;)).ok()?;
                body.stmts.insert(0, first);
                body
            }
            false => syn::parse2(replace_ident(body.to_token_stream(), "self", &receiver)).ok()?,
        };
        self.bound_call(&m.args, &helper, body, span)
    }

    /// A method of a struct (`v.norm()`) found in another file (another module or crate)
    /// that phidiff does not inline and that has no `#[differentiate]`: the error at the
    /// call, where the struct rewrite would call a split derivative that does not exist.
    /// (A method of the caller's own file gets its error from the struct rewrite.)
    fn not_inlined_elsewhere(
        &mut self,
        m: &syn::ExprMethodCall,
        ty: &str,
        helper: &syn::ItemFn,
        module: &Module,
        aggregate: bool,
    ) {
        if aggregate || module.file == self.module.file {
            return;
        }
        let name = &m.method;
        // The method as a function with a float of `self`'s (see `inlinable_method`).
        let mut probe = helper.clone();
        probe
            .sig
            .inputs
            .push(syn::parse_quote!(__pd_self_float: f64));
        let why = why_not_inlined(&probe)
            .unwrap_or_else(|| "it names other items of its module".to_string());
        let whose = match module.in_this_crate() {
            true => "another module",
            false => "another crate",
        };
        self.errors.push(syn::Error::new(
            m.method.span(),
            format!(
                "phidiff cannot differentiate this call of `{ty}::{name}` (of {whose}): phidiff \
                 does not inline it ({why}), and it has no `#[differentiate]`. Annotate the \
                 method with `#[differentiate(forward, reverse)]`, or call it from a function \
                 of your own with hand-written `_fwd`/`_rev` (a custom rule, see the guide, \
                 \"Calls and custom rules\")"
            ),
        ));
    }

    /// The [`Call`] of `helper` with `args` and its prepared `body`: each argument bound
    /// to a fresh temporary first (in the caller's scope, in order), then each parameter's
    /// pattern to its temporary.
    fn bound_call(
        &mut self,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        helper: &syn::ItemFn,
        body: syn::Block,
        span: Span,
    ) -> Option<Call> {
        self.next += 1;
        let n = self.next;
        let mut temps = quote!();
        let mut binds = quote!();
        let mut after = quote!();
        let mut body = body;
        for (k, (arg, input)) in args.iter().zip(&helper.sig.inputs).enumerate() {
            let syn::FnArg::Typed(pt) = input else {
                return None;
            };
            let t = format_ident!("__pd_call{}_{}", n, k, span = arg.span());
            let pat = respan(pt.pat.to_token_stream(), span);
            // A struct (or a slice of them) is lent, not copied: the temporary and then the
            // parameter borrow the argument's place, so each is another name of it, which
            // the struct rewrite reads as the place (`let q = &*__pd_call1_0;`).
            if let Type::Reference(r) = &*pt.ty {
                if let Some((ty, _)) = struct_type(&pt.ty) {
                    if self.underived.contains(&ty) {
                        return None;
                    }
                    let syn::Pat::Ident(id) = &*pt.pat else {
                        return None;
                    };
                    if id.by_ref.is_some() || id.subpat.is_some() {
                        return None;
                    }
                    let id = respan(id.ident.to_token_stream(), span);
                    let m = r.mutability;
                    let lent = match arg {
                        Expr::Reference(_) => quote!(#arg),
                        other => quote_spanned!(arg.span()=> &#m *#other),
                    };
                    temps.extend(quote_spanned!(arg.span()=> let #t = #lent;));
                    binds.extend(quote_spanned!(span=> let #id = &#m *#t;));
                    continue;
                }
            }
            // `acc: &mut f64`: a copy of the argument's place, read and written by the
            // body, and written back after it (exact: nothing else can reach the place
            // while the helper holds it).
            if let Type::Reference(r) = &*pt.ty {
                if r.mutability.is_some() && names::is_number(&r.elem) {
                    let syn::Pat::Ident(id) = &*pt.pat else {
                        return None;
                    };
                    let index = format_ident!("__pd_index{}_{}", n, k, span = arg.span());
                    let (at, place) = scalar_place(arg, &index)?;
                    temps.extend(at);
                    temps.extend(quote_spanned!(arg.span()=> let mut #t = #place;));
                    after.extend(quote_spanned!(arg.span()=> #place = #t;));
                    names::through_copy(&mut body, &id.ident, &t);
                    continue;
                }
            }
            // A `&mut f64` passed on to `v: &f64` lends it shared.
            if let (Type::Reference(r), Expr::Reference(a)) = (&*pt.ty, arg) {
                if r.mutability.is_none() && a.mutability.is_some() && names::is_number(&r.elem) {
                    let place = &a.expr;
                    temps.extend(quote_spanned!(arg.span()=> let #t = &#place;));
                    binds.extend(quote_spanned!(span=> let #pat = #t;));
                    continue;
                }
            }
            temps.extend(quote_spanned!(arg.span()=> let #t = #arg;));
            binds.extend(quote_spanned!(span=> let #pat = #t;));
        }
        Some(Call {
            span,
            temps,
            binds,
            body,
            n,
            after,
            valued: match &helper.sig.output {
                syn::ReturnType::Default => false,
                syn::ReturnType::Type(_, t) => {
                    !matches!(&**t, Type::Tuple(tu) if tu.elems.is_empty())
                }
            },
        })
    }

    /// Whether `key` (`name`, called at `at`) is already being inlined; if so, the error
    /// naming the cycle and `fix` is recorded.
    fn cycle(&mut self, key: &str, name: &str, at: &dyn ToTokens, fix: &str) -> bool {
        let Some(from) = self.stack.iter().position(|s| s == key) else {
            return false;
        };
        let cycle: Vec<&str> = self.stack[from..]
            .iter()
            .map(|k| k.rsplit("::").next().unwrap_or(k))
            .chain([name])
            .collect();
        self.errors.push(syn::Error::new_spanned(
            at,
            format!(
                "phidiff cannot differentiate `{name}` here: it calls itself ({}), and phidiff \
                 differentiates a function without attributes by inlining its body where it is \
                 called; write the recursion as a loop, or {fix}",
                cycle.join(" → ")
            ),
        ));
        true
    }

    /// The statements replacing `let PAT = g(..);` when `g` is a helper returning a tuple
    /// or an array whose body ends in a literal of it.
    fn aggregate_let(&mut self, stmt: &syn::Stmt) -> Option<Vec<syn::Stmt>> {
        let syn::Stmt::Local(l) = stmt else {
            return None;
        };
        let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
        let errors = self.errors.len();
        let next = self.next;
        let call = match &*init.expr {
            Expr::Call(c) => self.inline_call(c, true),
            Expr::MethodCall(m) => self.inline_method(m, true),
            _ => None,
        };
        let call = call?;
        let mut call = call;
        let (span, n) = (call.span, call.n);
        let tail = match call.body.stmts.pop() {
            Some(syn::Stmt::Expr(e, None)) => e,
            _ => None?,
        };
        let (elems, array) = match tail {
            Expr::Tuple(t) => (t.elems.into_iter().collect::<Vec<_>>(), false),
            Expr::Array(a) => (a.elems.into_iter().collect(), true),
            _ => {
                // Not a literal at the end: the call stays (a missing rule is reported).
                self.errors.truncate(errors);
                self.next = next;
                return None;
            }
        };
        let names: Vec<syn::Ident> = (0..elems.len())
            .map(|k| format_ident!("__pd_ret{}_{}", n, k, span = span))
            .collect();
        let value = match array {
            true => quote_spanned!(span=> [#(#names),*]),
            false => quote_spanned!(span=> (#(#names),*)),
        };
        let attrs = &l.attrs;
        // The type (`let c: [f64; 3] = ..`) is the helper's result type: left to the value.
        let pat = match &l.pat {
            syn::Pat::Type(t) => &*t.pat,
            other => other,
        };
        let inlined = call.block(quote_spanned!(span=> #(#names = #elems;)*));
        let block: syn::Block = syn::parse2(quote_spanned!(span=> {
            #(let #names;)*
            #inlined
            #(#attrs)* let #pat = #value;
        }))
        .ok()?;
        self.changed = true;
        Some(block.stmts)
    }

    /// The helper a call's path names from the visited module, with its module: a plain
    /// function (no `#[differentiate]`, no hand-written `_fwd`/`_rev` beside it) that
    /// [`inlinable`] takes.
    fn helper(&self, path: &[String]) -> Option<(syn::ItemFn, Module)> {
        let (f, m) = resolve_fn(&self.module, path)?;
        let name = f.sig.ident.to_string();
        let module_idents = idents(m.items.iter().map(ToTokens::to_token_stream).collect());
        let has_rule = ["_fwd", "_rev"].iter().any(|s| {
            let rule = format!("{name}{s}");
            self.file_idents.contains(&rule) || module_idents.contains(&rule)
        });
        (!has_rule && !mentions_differentiate(&f.attrs) && inlinable(&f).is_some())
            .then_some((f, m))
    }

    /// A name for `name` of `module`, unique in the crate.
    fn key(&self, module: &Module, name: &str) -> String {
        let file = module
            .file
            .as_ref()
            .map(|f| f.display().to_string())
            .unwrap_or_default();
        format!("{file}::{}::{name}", module.inline.join("::"))
    }

    /// The body of `helper` (of `module`) at the float type `float`, with its own helper
    /// calls inlined, and the constants of its module it names defined inside it when
    /// that module is not the visited one. Its tokens are at `span`. `None` when it names
    /// an item of another module that cannot be brought along.
    /// For a method, `self_ty` is its type, which `Self` and `self`'s method calls name.
    /// A helper returning a struct gives it through a typed local (`let __pd_retsN: S =
    /// { body }; __pd_retsN`), which the struct rewrite takes apart; the struct must be one
    /// the caller's file derives `Differentiable` for, named alike at the call (the helper
    /// is of the caller's module).
    fn prepared(
        &mut self,
        helper: &syn::ItemFn,
        module: &Module,
        key: String,
        float: &TokenStream,
        span: Span,
        self_ty: Option<String>,
    ) -> Option<syn::Block> {
        let result = match &helper.sig.output {
            syn::ReturnType::Type(_, t) => returned_struct(t).map(|name| (name, t)),
            syn::ReturnType::Default => None,
        };
        let result = match result {
            Some((name, t)) => {
                let derived =
                    self.file_structs.contains_key(&name) && !self.underived.contains(&name);
                if !derived || !same_module(module, &self.module) {
                    return None;
                }
                let mut ty = respan(t.to_token_stream(), span);
                if let Some(g) = helper.sig.generics.type_params().next() {
                    ty = replace_ident(ty, &g.ident.to_string(), float);
                }
                Some(ty)
            }
            None => None,
        };
        let body = self.prepared_body(helper, module, key, float, span, self_ty)?;
        let Some(ty) = result else {
            return Some(body);
        };
        self.next += 1;
        let ret = format_ident!("__pd_rets{}", self.next, span = span);
        syn::parse2(quote_spanned!(span=> { let #ret: #ty = #body; #ret })).ok()
    }

    fn prepared_body(
        &mut self,
        helper: &syn::ItemFn,
        module: &Module,
        key: String,
        float: &TokenStream,
        span: Span,
        self_ty: Option<String>,
    ) -> Option<syn::Block> {
        let generic = helper
            .sig
            .generics
            .type_params()
            .next()
            .map(|t| t.ident.to_string());
        let mut tokens = respan(helper.block.to_token_stream(), span);
        if let Some(g) = generic {
            tokens = replace_ident(tokens, &g, float);
        }
        if let Some(t) = &self_ty {
            tokens = replace_ident(tokens, "Self", &format_ident!("{}", t).to_token_stream());
        }
        let mut block: syn::Block = syn::parse2(tokens).ok()?;
        block.stmts = lift(&block.stmts)?;
        reborrow_mut_params(helper, &mut block);
        let outer_module = std::mem::replace(&mut self.module, module.clone());
        let outer_bound = std::mem::replace(&mut self.bound, bound_names(helper));
        let outer_self = std::mem::replace(&mut self.self_ty, self_ty);
        // A helper's own struct parameters are not the caller's.
        let own = struct_params(helper, &self.underived);
        let outer_structs = std::mem::replace(&mut self.structs, own);
        self.stack.push(key);
        let before = self.errors.len();
        self.visit_block_mut(&mut block);
        self.stack.pop();
        self.structs = outer_structs;
        self.self_ty = outer_self;
        self.bound = outer_bound;
        self.module = outer_module;
        if self.errors.len() != before {
            return None;
        }
        if same_module(module, &self.module) {
            return Some(block);
        }
        let free = free_names(helper, &block);
        // `self::x`, `super::x` (and another crate's `crate::x`) would name other items at
        // the call.
        if free.contains("self")
            || free.contains("super")
            || (free.contains("crate") && !module.in_this_crate())
        {
            return None;
        }
        let mut consts = Vec::new();
        for name in &free {
            if let Some((k, m)) = consts::resolve(module, std::slice::from_ref(name), 0) {
                consts.push((name.clone(), k, m));
            } else if defines(module, name) {
                return None;
            }
        }
        let mut defined = quote!();
        for (name, k, m) in consts {
            let fresh = self.fresh_const(&name);
            rename_path(&mut block, &name, &fresh);
            defined.extend(self.bring_const(fresh, k, &m, span, 0)?);
        }
        let stmts = &block.stmts;
        syn::parse2(quote_spanned!(span=> { #defined #(#stmts)* })).ok()
    }

    fn fresh_const(&mut self, name: &str) -> syn::Ident {
        self.next += 1;
        format_ident!("__PD_CONST{}_{}", self.next, name)
    }

    /// `const fresh: TY = EXPR;` for the constant `k` of module `m`, preceded by the
    /// constants its expression names (of `m`), each under a fresh name.
    fn bring_const(
        &mut self,
        fresh: syn::Ident,
        mut k: consts::ConstItem,
        m: &Module,
        span: Span,
        depth: usize,
    ) -> Option<TokenStream> {
        if depth > 16 {
            return None;
        }
        let mut before = quote!();
        let named = consts::idents(k.expr.to_token_stream());
        for name in named {
            if let Some((inner, im)) = consts::resolve(m, std::slice::from_ref(&name), 0) {
                let inner_fresh = self.fresh_const(&name);
                rename_path_expr(&mut k.expr, &name, &inner_fresh);
                before.extend(self.bring_const(inner_fresh, inner, &im, span, depth + 1)?);
            }
        }
        let ty = respan(k.ty.to_token_stream(), span);
        let expr = respan(k.expr.to_token_stream(), span);
        Some(quote_spanned!(span=> #before const #fresh: #ty = #expr;))
    }
}

/// The plain function `path` names, seen from `from` (`g`, `util::g`, `self::g`,
/// `super::g`, `crate::a::g`, or a name brought in by `use`), with its module.
pub(crate) fn resolve_fn(from: &Module, path: &[String]) -> Option<(syn::ItemFn, Module)> {
    let own = |m: &Module, path: &[String]| match path {
        [name] => m.items.iter().find_map(|it| match it {
            syn::Item::Fn(f) if f.sig.ident == name => Some(f.clone()),
            _ => None,
        }),
        _ => None,
    };
    consts::resolve_item(from, path, 0, &own, &|_| true)
}

/// The caller's float type: its generic float parameter (also one of its `impl`), else
/// `f32` when its signature names `f32` and not `f64`, else `f64`.
pub fn caller_float(item: &syn::ItemFn, imp: Option<&syn::ItemImpl>) -> TokenStream {
    let generics = [Some(&item.sig.generics), imp.map(|i| &i.generics)];
    for g in generics.into_iter().flatten() {
        if let Some(t) = g.type_params().find(|t| bounded_by_float(t)) {
            return t.ident.to_token_stream();
        }
        if let Some(w) = &g.where_clause {
            for p in &w.predicates {
                if let syn::WherePredicate::Type(pt) = p {
                    let float = pt.bounds.iter().any(|b| {
                        matches!(b, syn::TypeParamBound::Trait(t)
                            if t.path.segments.last().is_some_and(|s| s.ident == "Float"))
                    });
                    if float {
                        return pt.bounded_ty.to_token_stream();
                    }
                }
            }
        }
    }
    let named = idents(item.sig.to_token_stream());
    if named.contains("f32") && !named.contains("f64") {
        return quote!(f32);
    }
    quote!(f64)
}

/// The place a `&mut f64` argument lends, with the statements that fix it first: `&mut s`
/// → `s`, `&mut p.e` → `p.e`, `&mut x[k(i)]` → `x[index]` after `let index = k(i);` (the
/// index read once), and a `&mut f64` passed on by name, `out` → `*out`. Other index
/// expressions in the place are read twice (into the copy, and back), so they must be
/// free of calls and assignments.
fn scalar_place(arg: &Expr, index: &syn::Ident) -> Option<(TokenStream, TokenStream)> {
    fn simple(e: &Expr) -> bool {
        match e {
            Expr::Path(p) => p.qself.is_none(),
            Expr::Lit(_) => true,
            Expr::Field(f) => simple(&f.base),
            Expr::Index(i) => simple(&i.expr) && simple(&i.index),
            Expr::Paren(p) => simple(&p.expr),
            Expr::Binary(b) => {
                !matches!(
                    b.op,
                    syn::BinOp::AddAssign(_)
                        | syn::BinOp::SubAssign(_)
                        | syn::BinOp::MulAssign(_)
                        | syn::BinOp::DivAssign(_)
                        | syn::BinOp::RemAssign(_)
                ) && simple(&b.left)
                    && simple(&b.right)
            }
            Expr::Unary(u) => simple(&u.expr),
            Expr::Cast(c) => simple(&c.expr),
            _ => false,
        }
    }
    match arg {
        Expr::Reference(r) if r.mutability.is_some() => match &*r.expr {
            Expr::Index(i) if simple(&i.expr) && !simple(&i.index) => {
                let (base, k) = (&i.expr, &i.index);
                Some((quote!(let #index = #k;), quote!(#base[#index])))
            }
            e @ (Expr::Path(_) | Expr::Field(_) | Expr::Index(_) | Expr::Unary(_)) if simple(e) => {
                Some((quote!(), e.to_token_stream()))
            }
            _ => None,
        },
        Expr::Path(p) if p.path.get_ident().is_some() => Some((quote!(), quote!(*#arg))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(src: &str) -> Vec<syn::Stmt> {
        syn::parse_str::<syn::Block>(src).expect("a block").stmts
    }

    fn lifted(src: &str) -> Option<String> {
        let stmts = lift(&body(src))?;
        Some(quote!(#(#stmts)*).to_string())
    }

    #[test]
    fn guards_become_branches() {
        let out = lifted("{ let a = v.abs(); if a < 1.0 { return 0.5 * v * v; } a - 0.5 }")
            .expect("lifted");
        assert_eq!(
            out,
            quote!(let a = v.abs(); if a < 1.0 { 0.5 * v * v } else { a - 0.5 }).to_string()
        );
        // Two guards nest; a trailing `return` is the value.
        let out = lifted("{ if v < 0.0 { return 0.0; } if v > 1.0 { return 1.0; } return v * v; }")
            .expect("lifted");
        assert_eq!(
            out,
            quote!(if v < 0.0 {
                0.0
            } else {
                if v > 1.0 {
                    1.0
                } else {
                    v * v
                }
            })
            .to_string()
        );
        // An `if` that returns in one branch only keeps the rest for the other.
        let out = lifted("{ let mut s = v; if s > 2.0 { s = 2.0; } else { return s; } s * s }")
            .expect("lifted");
        assert_eq!(
            out,
            quote!(let mut s = v; if s > 2.0 { s = 2.0; s * s } else { s }).to_string()
        );
    }

    #[test]
    fn returns_elsewhere_are_not_lifted() {
        assert!(lifted("{ for i in 0..3 { if v > 1.0 { return v; } } v }").is_none());
        assert!(lifted("{ match n { 0 => return 1.0, _ => {} } v }").is_none());
        assert!(lifted("{ let a = if v > 0.0 { return v; } else { 1.0 }; a }").is_none());
        // A closure's `return` is its own.
        assert!(lifted("{ let f = |t: f64| { return t; }; f(v) }").is_some());
    }

    fn why(src: &str) -> Option<String> {
        why_not_inlined(&syn::parse_str(src).expect("a function"))
    }

    #[test]
    fn the_reason_a_helper_is_not_inlined_is_named() {
        assert_eq!(why("fn g(v: f64) -> f64 { v * v }"), None);
        assert_eq!(
            why("fn g<T: Float>(x: &[T], n: usize) -> (T, T) { (x[0], x[n]) }"),
            None
        );
        // Structs by reference and by value are inlined, and returned; a slice of them by
        // value is not.
        assert_eq!(why("fn g(p: &Params, q: &mut [Body]) -> f64 { p.k }"), None);
        assert_eq!(why("fn g(p: Params) -> f64 { p.k }"), None);
        // Returned, when the struct is the caller's (else the reason).
        assert!(why("fn g(p: Params) -> Params { p }")
            .unwrap()
            .contains("returns the struct `Params`"));
        assert!(why("fn g(p: Vec<Body>) -> f64 { p[0].k }")
            .unwrap()
            .contains("`p`"));
        // `Option` is not a struct of the user's.
        assert!(why("fn g(v: f64) -> Option<f64> { Some(v) }")
            .unwrap()
            .contains("returns `Option"));
        let vec = why("fn g(v: f64) -> Vec<f64> { vec![v] }").unwrap();
        assert!(vec.contains("returns `Vec"), "{vec}");
        assert!(why("fn g(v: f64) -> f64 { for _ in 0..2 { return v; } v }")
            .unwrap()
            .contains("`return` inside a loop"));
        assert!(why("fn g<T: Float, U>(v: T, u: U) -> T { v }")
            .unwrap()
            .contains("type parameters"));
        assert!(why("fn g(v: f64) -> Option<f64> { Some(v.sqrt()?) }").is_some());
    }

    #[test]
    fn struct_parameters_are_found_by_type() {
        let f: syn::ItemFn = syn::parse_str(
            "fn f<T: Float>(p: &Body<T>, q: Body<T>, bs: &[Body<T>], v: &Vec<geom::Ball>, x: &[T], t: T) {}",
        )
        .expect("a function");
        let s = struct_params(&f, &HashSet::new());
        assert_eq!(s.get("p"), Some(&("Body".to_string(), false)));
        assert_eq!(s.get("q"), Some(&("Body".to_string(), false)));
        assert_eq!(s.get("bs"), Some(&("Body".to_string(), true)));
        assert_eq!(s.get("v"), Some(&("Ball".to_string(), true)));
        assert!(!s.contains_key("x") && !s.contains_key("t"));
    }
}

//! IR → Rust tokens. Values become `let` bindings named after the user's variables, loop
//! header φs become `let mut` variables updated by a tuple assignment on the back edge, `if`
//! results become the tuple value of an `if` expression, cells become `let mut`
//! accumulators. The runtime is reached only through `#krate::__private`.

mod checkpoint;
pub mod cuda;
pub mod cuda_cpu;
mod cuda_helpers;
pub mod cuda_launch;
pub mod cuda_syntax;
mod parallel;
pub mod precision;
mod scope;
pub mod signature;
mod window;

use crate::ir::*;
use crate::parse::signature::{BufForm, FloatTy, ParamClass, Signature};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::HashSet;

/// How each IR parameter is bound in the generated function.
#[derive(Clone, Copy, PartialEq)]
pub enum Binding {
    /// A reference (`&[T]`, `&mut [T]`): passed on as it is, reborrowed for `&mut`.
    Reference,
    /// An owned buffer (`Vec<T>`, `[T; N]`, a local): borrowed with `&`/`&mut`.
    Owned,
}

pub struct Ctx<'a> {
    pub f: &'a Function,
    pub float: &'a FloatTy,
    pub krate: &'a syn::Path,
    /// Binding of each parameter buffer.
    pub param_binding: Vec<Binding>,
    used: HashSet<Value>,
    trip_used: HashSet<Inst>,
    /// The index windows of serial loops (bounds checks taken out of the loop).
    windows: window::Windows,
    /// What the function returns at each failure site (`Fail`): `None`, `Err(..)`, with
    /// the names of the variables its error value reads.
    failures: &'a [(Vec<Ident>, TokenStream)],
    /// In a function that mixes `f32` and `f64`: the type of each value, and the types of
    /// the function's results.
    mixed: Option<(precision::Precisions, Vec<precision::Class>)>,
}

/// The float types of a derivative function that mixes `f32` and `f64`: of each parameter
/// (`None` where it has no float) and of each result.
pub struct Types {
    pub params: Vec<Option<Prec>>,
    pub results: Vec<Option<Prec>>,
}

/// The values the generated code reads: block yields, what the index windows read, and
/// the operands of the statements it emits. A pure value (arithmetic, a load, a cell
/// read) is emitted only where it is read (`Ctx::let_value`), so its operands count only
/// then; an access through an index window no longer reads its index, whose arithmetic
/// then goes too.
fn live_values(f: &Function, windows: &window::Windows) -> HashSet<Value> {
    use InstKind::*;
    let mut used: HashSet<Value> = windows.reads().into_iter().collect();
    for b in &f.blocks {
        used.extend(b.yields.iter().copied());
    }
    loop {
        let before = used.len();
        f.walk(f.body, &mut |i| {
            let kind = &f.inst(i).kind;
            let pure = matches!(
                kind,
                Unary(..)
                    | Binary(..)
                    | Math(..)
                    | Cast { .. }
                    | Load(..)
                    | Len(..)
                    | SumBuf(_)
                    | CellGet(_)
            );
            if pure && !used.contains(&f.inst(i).results[0]) {
                return;
            }
            match kind {
                Load(..) if windows.access.contains_key(&i) => {}
                Store(_, _, v) | StoreAdd(_, _, v) if windows.access.contains_key(&i) => {
                    used.insert(*v);
                }
                _ => used.extend(f.operands(i)),
            }
        });
        if used.len() == before {
            return used;
        }
    }
}

/// The body of a derivative function from its IR.
pub fn body(
    f: &Function,
    float: &FloatTy,
    krate: &syn::Path,
    param_binding: Vec<Binding>,
    failures: &[(Vec<Ident>, TokenStream)],
) -> TokenStream {
    body_typed(f, float, krate, param_binding, failures, None)
}

/// `body`, for a function that mixes `f32` and `f64` when `types` are given.
pub fn body_typed(
    f: &Function,
    float: &FloatTy,
    krate: &syn::Path,
    param_binding: Vec<Binding>,
    failures: &[(Vec<Ident>, TokenStream)],
    types: Option<&Types>,
) -> TokenStream {
    let windows = window::plan(f);
    let used = live_values(f, &windows);
    let mut trip_used = HashSet::new();
    f.walk(f.body, &mut |i| {
        if let InstKind::For { .. } | InstKind::While { .. } = f.inst(i).kind {
            if f.inst(i).results.last().is_some_and(|t| used.contains(t)) {
                trip_used.insert(i);
            }
        }
    });
    let cx = Ctx {
        f,
        float,
        krate,
        param_binding,
        used,
        trip_used,
        windows,
        failures,
        mixed: types.map(|t| {
            let classes = t.results.iter().map(|p| precision::Class::of(*p)).collect();
            (precision::Precisions::infer(f, &t.params), classes)
        }),
    };
    let tapes: Vec<TokenStream> = f
        .bufs
        .iter()
        .enumerate()
        .filter(|(_, b)| b.kind == BufKind::Tape)
        .map(|(k, b)| {
            let name = cx.buf(Buf(k as u32));
            if b.rank == 2 {
                quote!(let mut #name: Vec<Vec<_>> = Vec::new();)
            } else {
                // The tape remembers its final length for the next call (one hint per tape).
                quote! {
                    let mut #name = {
                        static HINT: ::core::sync::atomic::AtomicUsize =
                            ::core::sync::atomic::AtomicUsize::new(0);
                        #krate::__private::Tape::with_hint(&HINT)
                    };
                }
            }
        })
        .collect();
    let stmts = cx.bounded_block(tapes, f.body, &quote!());
    let ys = &f.block(f.body).yields;
    let ret = match &cx.mixed {
        Some((_, results)) => cx.tuple_as(ys, results),
        None => cx.tuple(ys),
    };
    quote! {
        #stmts
        #ret
    }
}

impl Ctx<'_> {
    fn rt(&self) -> TokenStream {
        let k = self.krate;
        quote!(#k::__private)
    }

    pub fn value_ident(&self, v: Value) -> Ident {
        let data = self.f.value(v);
        if let (ValueDef::Result(i, _), _) = (data.def, ()) {
            if let InstKind::Param(n) = self.f.inst(i).kind {
                return Ident::new(&self.f.params[n].name, self.f.params[n].span);
            }
        }
        match &data.name {
            Some(n) if n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                format_ident!("_{}_{}", n.trim_start_matches('_'), v.0)
            }
            _ => format_ident!("_v{}", v.0),
        }
    }

    /// A use of `v`: a constant is written inline, anything else by name.
    fn val(&self, v: Value) -> TokenStream {
        if let ValueDef::Result(i, 0) = self.f.value(v).def {
            match &self.f.inst(i).kind {
                InstKind::FConst(c) => return self.float_constant(*c),
                InstKind::IConst(c) => {
                    let lit = proc_macro2::Literal::i128_unsuffixed(*c);
                    return if *c < 0 { quote!((#lit)) } else { quote!(#lit) };
                }
                InstKind::BConst(c) => return quote!(#c),
                _ => {}
            }
        }
        let id = self.value_ident(v);
        quote!(#id)
    }

    /// The float type of `v` in a function that mixes `f32` and `f64` (`Free` elsewhere).
    fn class(&self, v: Value) -> precision::Class {
        match &self.mixed {
            Some((p, _)) => p.value(v),
            None => precision::Class::Free,
        }
    }

    /// The float type of cell `c`, as `class`.
    fn cell_class(&self, c: Cell) -> precision::Class {
        match &self.mixed {
            Some((p, _)) => p.cell(c),
            None => precision::Class::Free,
        }
    }

    /// The float type of buffer `b`, as `class`.
    fn buf_class(&self, b: Buf) -> precision::Class {
        match &self.mixed {
            Some((p, _)) => p.buf(b),
            None => precision::Class::Free,
        }
    }

    /// A use of `v` where a float of type `want` goes: converted when it has another type,
    /// a constant written with `want`'s suffix (without one for `Free`: Rust infers it).
    /// Only in a function that mixes `f32` and `f64`; elsewhere `val`.
    fn val_to(&self, v: Value, want: precision::Class) -> TokenStream {
        use precision::Class;
        if self.mixed.is_none() || self.f.ty(v) != Ty::Float {
            return self.val(v);
        }
        if let ValueDef::Result(i, 0) = self.f.value(v).def {
            if let InstKind::FConst(c) = self.f.inst(i).kind {
                return self.literal_of(c, want.prec());
            }
        }
        let have = self.class(v);
        let id = self.val(v);
        match (have, want.prec()) {
            (Class::Free, _) | (_, None) => id,
            (h, Some(w)) if h.prec() == Some(w) => id,
            (_, Some(w)) => {
                let t = format_ident!("{}", w.name());
                quote!((#id as #t))
            }
        }
    }

    /// `vs` as a tuple, each converted to its type in `wants` (`tuple`).
    fn tuple_as(&self, vs: &[Value], wants: &[precision::Class]) -> TokenStream {
        let items: Vec<TokenStream> = vs
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let w = wants.get(k).copied().unwrap_or(precision::Class::Free);
                self.val_to(*v, w)
            })
            .collect();
        match items.len() {
            0 => quote!(),
            1 => items[0].clone(),
            _ => quote!((#(#items),*)),
        }
    }

    /// A float literal of type `prec`, or without a suffix (Rust infers its type).
    fn literal_of(&self, c: f64, prec: Option<Prec>) -> TokenStream {
        let Some(p) = prec else {
            if c.is_finite() {
                let lit: TokenStream = format!("{c:?}").parse().expect("float literal");
                return if c.is_sign_negative() {
                    quote!((#lit))
                } else {
                    lit
                };
            }
            return self.float_literal(c);
        };
        let t = format_ident!("{}", p.name());
        if c.is_nan() {
            return quote!(#t::NAN);
        }
        if c.is_infinite() {
            return if c > 0.0 {
                quote!(#t::INFINITY)
            } else {
                quote!(#t::NEG_INFINITY)
            };
        }
        let lit: TokenStream = format!("{c:?}{}", p.name()).parse().expect("float literal");
        if c.is_sign_negative() {
            quote!((#lit))
        } else {
            lit
        }
    }

    /// A float constant inline: a literal, or in generic code `zero::<T>()`, `one::<T>()`,
    /// `cst::<T>(c)`.
    fn float_constant(&self, c: f64) -> TokenStream {
        if self.mixed.is_some() {
            return self.literal_of(c, None);
        }
        let FloatTy::Generic(_) = self.float else {
            return self.float_literal(c);
        };
        let rt = self.rt();
        let ft = self.float.tokens();
        if c == 0.0 && c.is_sign_positive() {
            quote!(#rt::zero::<#ft>())
        } else if c == 0.0 {
            quote!((-#rt::zero::<#ft>()))
        } else if c == 1.0 {
            quote!(#rt::one::<#ft>())
        } else {
            let lit = self.float_literal(c);
            quote!(#rt::cst::<#ft>(#lit))
        }
    }

    fn float_literal(&self, c: f64) -> TokenStream {
        let ty = match self.float {
            FloatTy::F32 => "f32",
            _ => "f64",
        };
        if c.is_nan() {
            let t = format_ident!("{}", ty);
            return quote!(#t::NAN);
        }
        if c.is_infinite() {
            let t = format_ident!("{}", ty);
            return if c > 0.0 {
                quote!(#t::INFINITY)
            } else {
                quote!(#t::NEG_INFINITY)
            };
        }
        let lit: TokenStream = format!("{c:?}{ty}").parse().expect("float literal");
        if c.is_sign_negative() {
            quote!((#lit))
        } else {
            lit
        }
    }

    pub fn buf(&self, b: Buf) -> Ident {
        let b = self.f.interleaved.get(&b).map_or(b, |g| g.head);
        let data = self.f.buf(b);
        match data.kind {
            BufKind::Param(n) => Ident::new(&self.f.params[n].name, self.f.params[n].span),
            _ => format_ident!("_{}_{}", data.name, b.0),
        }
    }

    fn is_reference(&self, b: Buf) -> bool {
        match self.f.buf(b).kind {
            BufKind::Param(n) => self.param_binding[n] == Binding::Reference,
            _ => false,
        }
    }

    fn borrow(&self, b: Buf, mutable: bool) -> TokenStream {
        let n = self.buf(b);
        match (self.is_reference(b), mutable) {
            (true, false) => quote!(&*#n),
            (true, true) => quote!(&mut *#n),
            (false, false) => quote!(&#n),
            (false, true) => quote!(&mut #n),
        }
    }

    fn tuple(&self, vs: &[Value]) -> TokenStream {
        let items: Vec<TokenStream> = vs.iter().map(|v| self.val(*v)).collect();
        match items.len() {
            0 => quote!(),
            1 => items[0].clone(),
            _ => quote!((#(#items),*)),
        }
    }

    fn pattern(&self, vs: &[Value]) -> TokenStream {
        let items: Vec<TokenStream> = vs
            .iter()
            .map(|v| {
                let id = self.value_ident(*v);
                quote!(#id)
            })
            .collect();
        match items.len() {
            1 => items[0].clone(),
            _ => quote!((#(#items),*)),
        }
    }

    /// `buf[idx..]`, and the lane of an interleaved buffer (`[l]`).
    fn index(&self, buf: Buf, idx: &[Value]) -> TokenStream {
        let n = self.buf(buf);
        let ix = idx.iter().map(|v| self.val(*v));
        let lane = self.f.interleaved.get(&buf).map(|g| g.lane).into_iter();
        quote!(#n #([#ix])* #([#lane])*)
    }

    /// The statements of `b`, with their `let` nesting bounded (`scope::bounded`), where
    /// what follows them in the same scope reads only `b`'s yields.
    fn block(&self, b: Block) -> TokenStream {
        self.bounded_block(Vec::new(), b, &quote!())
    }

    /// `leading` then the statements of `b`, followed in the same scope by `b`'s yields
    /// and `later`.
    fn bounded_block(
        &self,
        mut leading: Vec<TokenStream>,
        b: Block,
        later: &TokenStream,
    ) -> TokenStream {
        let blk = self.f.block(b);
        leading.extend(blk.insts.iter().map(|i| self.inst(*i)));
        let ys = self.tuple(&blk.yields);
        scope::bounded(leading, &quote!(#ys #later))
    }

    /// A block used as an expression yielding its values.
    fn block_expr(&self, b: Block) -> TokenStream {
        let stmts = self.block(b);
        let ys = self.tuple(&self.f.block(b).yields);
        quote!({ #stmts #ys })
    }

    /// `block_expr`, its yields converted to the types `wants` (in a function that mixes
    /// `f32` and `f64`).
    fn block_expr_as(&self, b: Block, wants: &[precision::Class]) -> TokenStream {
        if self.mixed.is_none() {
            return self.block_expr(b);
        }
        let stmts = self.block(b);
        let ys = self.tuple_as(&self.f.block(b).yields, wants);
        quote!({ #stmts #ys })
    }

    /// `as T` converting an element of `src` to the float type of `dst`'s, where they
    /// differ (in a function that mixes `f32` and `f64`).
    fn conversion(&self, dst: Buf, src: Buf) -> Option<TokenStream> {
        (self.buf_class(dst) != self.buf_class(src)).then(|| {
            let t = self.float_type_of_buf(dst);
            quote!(as #t)
        })
    }

    /// The Rust float type of `v` in a function that mixes `f32` and `f64` (`f64` for a
    /// value of no fixed type).
    fn float_type_of(&self, v: Value) -> Ident {
        format_ident!("{}", self.class(v).prec().unwrap_or(Prec::F64).name())
    }

    /// `float_type_of` for a buffer's elements.
    fn float_type_of_buf(&self, b: Buf) -> Ident {
        format_ident!("{}", self.buf_class(b).prec().unwrap_or(Prec::F64).name())
    }

    fn let_value(&self, i: Inst, expr: TokenStream) -> TokenStream {
        let r = self.f.inst(i).results[0];
        let id = self.value_ident(r);
        if matches!(
            self.f.inst(i).kind,
            InstKind::FConst(_) | InstKind::IConst(_) | InstKind::BConst(_)
        ) {
            return quote!();
        }
        if !self.used.contains(&r) && !matches!(self.f.inst(i).kind, InstKind::Call { .. }) {
            return quote!();
        }
        quote!(let #id = #expr;)
    }

    fn zero(&self) -> TokenStream {
        self.float_constant(0.0)
    }

    fn inst(&self, i: Inst) -> TokenStream {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let rt = self.rt();
        let ft = self.float.tokens();
        match &data.kind {
            FConst(_) | IConst(_) | BConst(_) | Param(_) => quote!(),
            Unary(UnOp::Neg, a) => {
                let a = self.val(*a);
                self.let_value(i, quote!(-#a))
            }
            Unary(UnOp::Not, a) => {
                let a = self.val(*a);
                self.let_value(i, quote!(!#a))
            }
            Unary(UnOp::Test(t), a) => {
                let m = format_ident!("{}", t.method());
                if self.mixed.is_some() {
                    let ty = self.float_type_of(*a);
                    let a = self.val_to(*a, self.class(*a));
                    return self.let_value(i, quote!(#ty::#m(#a)));
                }
                let a = self.val(*a);
                self.let_value(i, quote!(#a.#m()))
            }
            Binary(BinOp::IntLike, a, b) => {
                let (a, b) = (self.val(*a), self.val(*b));
                self.let_value(i, quote!(#rt::int_like(#a, #b)))
            }
            Binary(op, a, b) => {
                let (a, b) = match &self.mixed {
                    Some(_) => {
                        let want = self.class(*a).max(self.class(*b));
                        (self.val_to(*a, want), self.val_to(*b, want))
                    }
                    None => (self.val(*a), self.val(*b)),
                };
                let op: TokenStream = op.symbol().parse().expect("operator");
                self.let_value(i, quote!(#a #op #b))
            }
            Math(name, args) if self.mixed.is_some() => {
                // `f32::sin(x)`: the type named, as a literal or an inferred value has none.
                let want = args
                    .iter()
                    .filter(|a| f.ty(**a) == Ty::Float)
                    .map(|a| self.class(*a))
                    .max()
                    .unwrap_or(precision::Class::Free);
                let ty = format_ident!("{}", want.prec().unwrap_or(Prec::F64).name());
                let want = precision::Class::of(Some(want.prec().unwrap_or(Prec::F64)));
                let all = args.iter().map(|a| self.val_to(*a, want));
                let m = format_ident!("{}", name);
                self.let_value(i, quote!(#ty::#m(#(#all),*)))
            }
            Math(name, args) => {
                let recv = self.val(args[0]);
                let rest = args[1..].iter().map(|a| self.val(*a));
                let m = format_ident!("{}", name);
                self.let_value(i, quote!(#recv.#m(#(#rest),*)))
            }
            Cast {
                value,
                to: Ty::Float,
                float,
                ..
            } if self.mixed.is_some() && f.ty(*value) != Ty::Bool => {
                let v = self.val(*value);
                // An integer converted by a derivative rule has the type it is used as.
                let p = float
                    .unwrap_or_else(|| self.class(data.results[0]).prec().unwrap_or(Prec::F64));
                let t = format_ident!("{}", p.name());
                let e = quote!((#v as #t));
                self.let_value(i, e)
            }
            Cast { value, to, int, .. } => {
                let from = f.ty(*value);
                let v = self.val(*value);
                let e = match (from, to) {
                    (Ty::Int, Ty::Float) | (Ty::Bool, Ty::Float) => match self.float {
                        FloatTy::Generic(_) => quote!(#rt::from_int::<#ft, _>(#v)),
                        _ => quote!((#v as #ft)),
                    },
                    (Ty::Float, Ty::Int) => {
                        let name = int.unwrap_or(IntTy::Usize).name();
                        let t = format_ident!("{name}");
                        match self.float {
                            FloatTy::Generic(_) => {
                                let m = format_ident!("to_{name}");
                                quote!(#rt::num_traits::ToPrimitive::#m(&#v).expect("phidiff: float to integer conversion out of range"))
                            }
                            _ => quote!((#v as #t)),
                        }
                    }
                    _ => {
                        let t = format_ident!("{}", int.unwrap_or(IntTy::Usize).name());
                        quote!((#v as #t))
                    }
                };
                self.let_value(i, e)
            }
            Load(buf, idx) => {
                let e = self
                    .window_index(i)
                    .unwrap_or_else(|| self.index(*buf, idx));
                self.let_value(i, e)
            }
            Store(buf, idx, v) => {
                let p = self
                    .window_index(i)
                    .unwrap_or_else(|| self.index(*buf, idx));
                let v = self.val_to(*v, self.buf_class(*buf));
                quote!(#p = #v;)
            }
            StoreAdd(buf, idx, v) if f.scatter.contains_key(&i) => {
                // A scatter target of the enclosing parallel loop (see `parallel_for`).
                let k = f.scatter[&i].1;
                let scatter = Ident::new("scatter", Span::mixed_site());
                let (j, v) = (self.val(idx[0]), self.val(*v));
                let _ = buf;
                quote!(#scatter.add(#k, #j, #v);)
            }
            StoreAdd(buf, idx, v) => {
                let p = self
                    .window_index(i)
                    .unwrap_or_else(|| self.index(*buf, idx));
                let v = self.val_to(*v, self.buf_class(*buf));
                quote!(#p += #v;)
            }
            Len(buf, idx) => {
                // Lanes have the group's length.
                let p = if self.f.interleaved.contains_key(buf) && idx.is_empty() {
                    let n = self.buf(*buf);
                    quote!(#n)
                } else {
                    self.index(*buf, idx)
                };
                self.let_value(i, quote!(#p.len()))
            }
            Alloc { buf, dims, init } => {
                let n = self.buf(*buf);
                let group = self.f.interleaved.get(buf);
                if group.is_some_and(|g| g.lane > 0) {
                    // Allocated with lane 0 (`batch::interleavable`: same fill, same size).
                    return TokenStream::new();
                }
                let e = match init {
                    AllocInit::Fill(v) => {
                        let v = self.val_to(*v, self.buf_class(*buf));
                        let v = match group {
                            Some(g) => {
                                let width = g.width;
                                quote!([#v; #width])
                            }
                            None => v,
                        };
                        let d: Vec<TokenStream> = dims.iter().map(|d| self.val(*d)).collect();
                        let rt = self.rt();
                        match d.as_slice() {
                            [a] if f.buf(*buf).kind == BufKind::Scratch => {
                                quote!(#rt::par::Scratch::filled(#v, #a))
                            }
                            [a] => quote!(vec![#v; #a]),
                            [a, b] => quote!(vec![vec![#v; #b]; #a]),
                            [a, b, c] => quote!(vec![vec![vec![#v; #c]; #b]; #a]),
                            _ => unreachable!("buffers have rank 1 to 3"),
                        }
                    }
                    AllocInit::Copy(src)
                        if self.buf_class(*buf) != self.buf_class(*src)
                            && self.buf_class(*src) != precision::Class::Free =>
                    {
                        // A copy into a buffer of the other float type.
                        let s = self.buf(*src);
                        let t = self.float_type_of_buf(*buf);
                        match f.buf(*buf).rank {
                            1 => quote!(#s.iter().map(|&__v| __v as #t).collect::<Vec<#t>>()),
                            _ => {
                                quote!(#s.iter().map(|__r| __r.iter().map(|&__v| __v as #t).collect::<Vec<#t>>()).collect::<Vec<_>>())
                            }
                        }
                    }
                    AllocInit::Copy(src) => {
                        let s = self.buf(*src);
                        quote!(#s.to_vec())
                    }
                    AllocInit::Row { tape, idx } => {
                        let t = self.buf(*tape);
                        let i = self.val(*idx);
                        // Moved out, and given back by the `ReturnRow` after the call.
                        quote!(::core::mem::take(&mut #t[#i]))
                    }
                };
                quote!(let mut #n = #e;)
            }
            CopyFrom { dst, src } | AddBuf { dst, src } if f.buf(*dst).rank >= 3 => {
                let (d, s) = (self.buf(*dst), self.buf(*src));
                let t = self.conversion(*dst, *src);
                let op = match &data.kind {
                    AddBuf { .. } => quote!(+=),
                    _ => quote!(=),
                };
                elementwise(
                    f.buf(*dst).rank,
                    quote!(#d),
                    Some(quote!(#s)),
                    &|d, s| quote!(*#d #op *#s #t;),
                )
            }
            ZeroBuf(b) if f.buf(*b).rank >= 3 => {
                let d = self.buf(*b);
                let z = self.zero();
                elementwise(f.buf(*b).rank, quote!(#d), None, &|d, _| quote!(*#d = #z;))
            }
            SumBuf(b) if f.buf(*b).rank >= 3 => {
                let s = self.buf(*b);
                let z = self.zero();
                let e = quote!(#s.iter().flat_map(|__r| __r.iter().flat_map(|__q| __q.iter())).fold(#z, |__a, __b| __a + *__b));
                self.let_value(i, e)
            }
            CopyFrom { dst, src } if self.buf_class(*dst) != self.buf_class(*src) => {
                let (d, s) = (self.buf(*dst), self.buf(*src));
                let t = self.conversion(*dst, *src);
                elementwise(
                    f.buf(*dst).rank,
                    quote!(#d),
                    Some(quote!(#s)),
                    &|d, s| quote!(*#d = *#s #t;),
                )
            }
            CopyFrom { dst, src } => {
                let (d, s) = (self.buf(*dst), self.buf(*src));
                if f.buf(*dst).rank == 1 {
                    quote!(#d.copy_from_slice(&#s[..]);)
                } else {
                    quote!(for (__d, __s) in #d.iter_mut().zip(#s.iter()) { __d.copy_from_slice(&__s[..]); })
                }
            }
            Swap(a, b) => {
                let (a, b) = (self.buf(*a), self.buf(*b));
                quote!(::core::mem::swap(&mut #a, &mut #b);)
            }
            AddBuf { dst, src } => {
                let (d, s) = (self.buf(*dst), self.buf(*src));
                let conv = self.conversion(*dst, *src);
                if f.buf(*dst).rank == 1 {
                    quote!(for (__d, __s) in #d.iter_mut().zip(#s.iter()) { *__d += *__s #conv; })
                } else {
                    quote!(for (__dr, __sr) in #d.iter_mut().zip(#s.iter()) { for (__d, __s) in __dr.iter_mut().zip(__sr.iter()) { *__d += *__s #conv; } })
                }
            }
            ZeroBuf(b) => {
                let d = self.buf(*b);
                let z = self.zero();
                if f.buf(*b).rank == 1 {
                    quote!(for __d in #d.iter_mut() { *__d = #z; })
                } else {
                    quote!(for __dr in #d.iter_mut() { for __d in __dr.iter_mut() { *__d = #z; } })
                }
            }
            SumBuf(b) => {
                let s = self.buf(*b);
                let z = self.zero();
                let e = if f.buf(*b).rank == 1 {
                    quote!(#s.iter().fold(#z, |__a, __b| __a + *__b))
                } else {
                    quote!(#s.iter().flat_map(|__r| __r.iter()).fold(#z, |__a, __b| __a + *__b))
                };
                self.let_value(i, e)
            }
            Assert { cond, message } => {
                let c = self.val(*cond);
                let msg = &message.0;
                quote!(assert!(#c, #msg);)
            }
            Fail { cond, site, args } => {
                let c = self.val(*cond);
                let (names, fail) = &self.failures[*site as usize];
                let vals = args.iter().map(|a| self.val(*a));
                quote!(if #c { #(let #names = #vals;)* return #fail; })
            }
            If {
                cond,
                then_blk,
                else_blk,
            } => {
                let c = self.val(*cond);
                let wants: Vec<precision::Class> =
                    data.results.iter().map(|r| self.class(*r)).collect();
                let t = self.block_expr_as(*then_blk, &wants);
                let e = self.block_expr_as(*else_blk, &wants);
                if data.results.is_empty() {
                    if f.block(*else_blk).insts.is_empty() {
                        quote!(if #c #t)
                    } else {
                        quote!(if #c #t else #e)
                    }
                } else {
                    let p = self.pattern(&data.results);
                    quote!(let #p = if #c #t else #e;)
                }
            }
            For {
                range,
                index,
                params,
                inits,
                body,
                ..
            } if f.parallel.contains_key(&i) => {
                self.parallel_for(i, range, *index, params, inits, *body)
            }
            For {
                range,
                index,
                params,
                inits,
                body,
                exit,
            } => {
                let (s, e) = (self.val(range.start), self.val(range.end));
                let mut it = quote!(#s..#e);
                if range.rev {
                    it = quote!((#it).rev());
                }
                if let Some(st) = range.step {
                    let st = self.val(st);
                    it = quote!((#it).step_by(#st));
                }
                let idx = self.value_ident(*index);
                let (pre, inner, post) = self.loop_parts(i, params, inits, *body, exit);
                let windows = self.window_decls(i);
                quote! {
                    #pre
                    #windows
                    for #idx in #it { #inner }
                    #post
                }
            }
            While {
                cond,
                params,
                inits,
                body,
                exit,
            } => {
                let (pre, inner, post) = self.loop_parts(i, params, inits, *body, exit);
                let cstmts = self.bounded_block(Vec::new(), *cond, &inner);
                let c = self.val(f.block(*cond).yields[0]);
                let test = if matches!(
                    f.inst(f.def_inst(f.block(*cond).yields[0])).kind,
                    BConst(true)
                ) && f.block(*cond).insts.len() == 1
                {
                    quote!()
                } else {
                    quote!(#cstmts if !#c { break; })
                };
                quote! {
                    #pre
                    loop { #test #inner }
                    #post
                }
            }
            CellDecl(c, v) => {
                let n = self.cell(*c);
                let v = self.val_to(*v, self.cell_class(*c));
                quote!(let mut #n = #v;)
            }
            CellGet(c) => {
                let n = self.cell(*c);
                self.let_value(i, quote!(#n))
            }
            CellSet(c, v) => {
                let n = self.cell(*c);
                let v = self.val_to(*v, self.cell_class(*c));
                quote!(#n = #v;)
            }
            CellAdd(c, v) => {
                let n = self.cell(*c);
                let v = self.val_to(*v, self.cell_class(*c));
                quote!(#n += #v;)
            }
            SaveRow {
                tape,
                idx,
                src,
                row,
            } => {
                let (t, s) = (self.buf(*tape), self.buf(*src));
                let i = self.val(*idx);
                let row = row.values().map(|r| self.val(r));
                quote! {
                    if #t.len() <= #i { #t.resize_with(#i + 1, Vec::new); }
                    #t[#i].clear();
                    #t[#i].extend_from_slice(&#s #([#row])* [..]);
                }
            }
            ReturnRow { tape, idx, src } => {
                let (t, s) = (self.buf(*tape), self.buf(*src));
                let i = self.val(*idx);
                quote!(#t[#i] = #s;)
            }
            TapeEnsure(t, len) if f.buf(*t).rank == 2 => {
                let n = self.buf(*t);
                let l = self.val(*len);
                quote!(if #n.len() < #l { #n.resize_with(#l, Vec::new); })
            }
            TapeEnsure(t, len) => {
                let n = self.buf(*t);
                let l = self.val(*len);
                quote!(#n.ensure(#l);)
            }
            TapeEnsureRow(t, row, len) => {
                let n = self.buf(*t);
                let (r, l) = (self.val(*row), self.val(*len));
                quote!(if #n[#r].len() < #l { #n[#r].resize(#l, ::core::default::Default::default()); })
            }
            Call {
                callee,
                args,
                suffix,
            } => self.call(i, callee, args, suffix),
            CkNew { .. } | CkForwardStep { .. } | CkEndForward { .. } | CkReverse { .. } => {
                self.checkpoint_inst(i)
            }
        }
    }

    pub fn cell(&self, c: Cell) -> Ident {
        format_ident!("_{}_{}", self.f.cells[c.index()].name, c.0)
    }

    /// (declarations before the loop, the body inside it, bindings after it)
    fn loop_parts(
        &self,
        i: Inst,
        params: &[Value],
        inits: &[Value],
        body: Block,
        exit: &[Value],
    ) -> (TokenStream, TokenStream, TokenStream) {
        let f = self.f;
        let results = &f.inst(i).results;
        let names: Vec<Ident> = params.iter().map(|p| self.value_ident(*p)).collect();
        let init_vals: Vec<TokenStream> = inits
            .iter()
            .zip(params)
            .map(|(v, p)| self.val_to(*v, self.class(*p)))
            .collect();
        let counted = self.trip_used.contains(&i);
        let trip = self.value_ident(*results.last().expect("trip"));
        let mut pre = quote!(#(let mut #names = #init_vals;)*);
        if counted {
            pre.extend(quote!(let mut #trip: usize = 0;));
        }
        let exit_check = if exit.is_empty() {
            quote!()
        } else {
            let flags = exit.iter().map(|e| self.val(*e));
            quote!(if #(#flags)||* { break; })
        };
        let count = if counted {
            quote!(#trip += 1;)
        } else {
            quote!()
        };
        let stmts = self.block(body);
        let ys: Vec<TokenStream> = f
            .block(body)
            .yields
            .iter()
            .zip(params)
            .map(|(y, p)| self.val_to(*y, self.class(*p)))
            .collect();
        let back = match names.len() {
            0 => quote!(),
            1 => {
                let n = &names[0];
                let y = &ys[0];
                quote!(#n = #y;)
            }
            _ => quote!((#(#names),*) = (#(#ys),*);),
        };
        let inner = quote!(#exit_check #count #stmts #back);
        let mut post = quote!();
        for (r, n) in results.iter().zip(&names) {
            if self.used.contains(r) {
                let rid = self.value_ident(*r);
                post.extend(quote!(let #rid = #n;));
            }
        }
        (pre, inner, post)
    }

    fn call(&self, i: Inst, callee: &Callee, args: &[CallArg], suffix: &CallSuffix) -> TokenStream {
        let data = self.f.inst(i);
        let arg = |a: &CallArg| -> TokenStream {
            match a {
                CallArg::Scalar(v) => self.val(*v),
                CallArg::Buf {
                    buf,
                    mutable,
                    range: None,
                } => self.borrow(*buf, *mutable),
                CallArg::Buf {
                    buf,
                    mutable,
                    range: Some(p),
                } => {
                    let n = self.buf(*buf);
                    let (s, e) = (self.val(p.start), self.val(p.end));
                    let row = p.row.values().map(|r| self.val(r));
                    match mutable {
                        true => quote!(&mut #n #([#row])* [#s..#e]),
                        false => quote!(&#n #([#row])* [#s..#e]),
                    }
                }
                CallArg::Opaque(o) => o.code.0.clone(),
            }
        };
        let (suffix_name, all_args, extra): (&str, Vec<TokenStream>, Option<TokenStream>) =
            match suffix {
                CallSuffix::Primal => ("", args.iter().map(arg).collect(), None),
                CallSuffix::Fwd { tangents } => {
                    let mut v = Vec::new();
                    for (a, t) in args.iter().zip(tangents) {
                        v.push(arg(a));
                        match (a, t) {
                            // A scalar's tangent has the scalar's type.
                            (CallArg::Scalar(p), Some(CallArg::Scalar(t))) => {
                                v.push(self.val_to(*t, self.class(*p)))
                            }
                            (_, Some(t)) => v.push(arg(t)),
                            (_, None) => {}
                        }
                    }
                    ("_fwd", v, None)
                }
                CallSuffix::Rev { shadows, seed } => {
                    let mut v = Vec::new();
                    for (a, s) in args.iter().zip(shadows) {
                        v.push(arg(a));
                        if let Some(s) = s {
                            if let CallArg::Buf { .. } = s {
                                v.push(arg(s));
                            }
                        }
                    }
                    // The seed has the type of the call's value: that of its float
                    // arguments (`precision`).
                    let want = args
                        .iter()
                        .map(|a| match a {
                            CallArg::Scalar(x) if self.f.ty(*x) == Ty::Float => self.class(*x),
                            CallArg::Buf { buf, .. } => self.buf_class(*buf),
                            _ => precision::Class::Free,
                        })
                        .max()
                        .unwrap_or(precision::Class::Free);
                    ("_rev", v, seed.map(|s| self.val_to(s, want)))
                }
            };
        let all_args: Vec<TokenStream> = all_args.into_iter().chain(extra).collect();
        let generics = &callee.generics.0;
        let call = match &callee.receiver {
            Some(r) => {
                let r = &r.code.0;
                let m = Ident::new(&format!("{}{}", callee.name(), suffix_name), data.span);
                quote!(#r.#m #generics (#(#all_args),*))
            }
            None => {
                let mut path = callee.path.clone();
                let last = path.segments.last_mut().expect("path");
                last.ident = Ident::new(&format!("{}{}", last.ident, suffix_name), data.span);
                quote!(#path #generics (#(#all_args),*))
            }
        };
        let then = &callee.then.0;
        let call = quote!(#call #then);
        let results = &data.results;
        match suffix {
            CallSuffix::Rev { seed, .. } => {
                // g_rev returns (value?, adjoints...) with a 1-tuple collapsed.
                let mut pats: Vec<TokenStream> = Vec::new();
                if seed.is_some() {
                    pats.push(quote!(_));
                }
                pats.extend(results.iter().map(|r| {
                    let id = self.value_ident(*r);
                    quote!(#id)
                }));
                match pats.len() {
                    0 => quote!(#call;),
                    1 => {
                        let p = &pats[0];
                        quote!(let #p = #call;)
                    }
                    _ => quote!(let (#(#pats),*) = #call;),
                }
            }
            _ => {
                if results.is_empty() {
                    quote!(#call;)
                } else {
                    let p = self.pattern(results);
                    quote!(let #p = #call;)
                }
            }
        }
    }
}

/// Loops over every element of `dst` (of rank `rank`), zipped with `src`'s if given:
/// `stmt(d, s)` with `d` (and `s`) a reference to the element.
fn elementwise(
    rank: u8,
    dst: TokenStream,
    src: Option<TokenStream>,
    stmt: &dyn Fn(&Ident, Option<&Ident>) -> TokenStream,
) -> TokenStream {
    let d = format_ident!("__d{}", rank);
    let s = format_ident!("__s{}", rank);
    let inner = if rank == 1 {
        stmt(&d, src.as_ref().map(|_| &s))
    } else {
        elementwise(rank - 1, quote!(#d), src.as_ref().map(|_| quote!(#s)), stmt)
    };
    match &src {
        Some(src) => quote!(for (#d, #s) in #dst.iter_mut().zip(#src.iter()) { #inner }),
        None => quote!(for #d in #dst.iter_mut() { #inner }),
    }
}

/// Binding of each parameter of the primal signature (tangent and shadow parameters are
/// handled by the caller).
pub fn param_bindings(sig: &Signature) -> Vec<Binding> {
    sig.params
        .iter()
        .map(|p| match &p.class {
            ParamClass::Buffer {
                form: BufForm::Owned,
                ..
            } => Binding::Owned,
            _ => Binding::Reference,
        })
        .collect()
}

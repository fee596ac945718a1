//! Calls: float methods (the rule table), buffer methods (`len`, `copy_from_slice`, ...),
//! float constructors (`T::from`, `T::zero()`), `std::mem::swap`, and calls to user
//! functions and methods, which derivatives call by the `_fwd`/`_rev` convention.

use super::*;
use crate::derivative::rules;
use syn::Expr;

/// Why the float method `name` cannot be differentiated, and the two ways out: a rewrite
/// with methods that have rules, or a custom rule (a hand-written `_fwd`/`_rev` pair).
fn no_rule_message(name: &str) -> String {
    let rewrite = match name {
        "to_degrees" => " (write `v * (180.0 / std::f64::consts::PI)` instead)",
        "to_radians" => " (write `v * (std::f64::consts::PI / 180.0)` instead)",
        "sin_cos" => " (call `.sin()` and `.cos()` separately instead)",
        "clamp" => " (write `v.max(lo).min(hi)` instead)",
        _ => "",
    };
    format!(
        "`{name}` has no derivative rule{rewrite}; {list}. Or move the call into a function of \
         your own, `fn my_{name}(v: f64) -> f64`, and write its derivatives `my_{name}_fwd` and \
         `my_{name}_rev` by hand next to it (a custom rule, see the guide)",
        list = rules::supported_list()
    )
}

/// Why a method called on an iterator (`x.iter().fold(..)`, `.product()`, `.max()`) cannot
/// be differentiated, with the `for` loop that replaces it; `None` when the receiver is not
/// an iterator chain.
fn unsupported_iterator_reduction(m: &syn::ExprMethodCall) -> Option<String> {
    let Expr::MethodCall(inner) = &*m.receiver else {
        return None;
    };
    let iterator = [
        "iter",
        "iter_mut",
        "into_iter",
        "map",
        "enumerate",
        "zip",
        "copied",
        "cloned",
        "rev",
        "skip",
        "take",
        "filter",
        "chain",
        "step_by",
        "par_iter",
    ];
    if !iterator.contains(&inner.method.to_string().as_str()) {
        return None;
    }
    let name = m.method.to_string();
    let instead = match name.as_str() {
        "product" => "`let mut p = 1.0; for i in 0..x.len() { p *= x[i]; }`",
        "fold" => "`let mut acc = init; for i in 0..x.len() { acc = .. x[i] ..; }`",
        "max" | "min" | "max_by" | "min_by" | "reduce" => {
            "`let mut m = x[0]; for i in 1..x.len() { m = m.max(x[i]); }`"
        }
        _ => "`for i in 0..x.len() { .. x[i] .. }`",
    };
    Some(format!(
        "`.{name}(..)` on an iterator is not differentiated (the iterator reductions phidiff \
         differentiates are `.sum()` and `.map(|v| ..).sum()`); write the loop instead: {instead}"
    ))
}

impl Lowerer<'_> {
    pub(super) fn lower_call_stmt(&mut self, e: &Expr) -> LResult<()> {
        self.lower_call_value_or_unit(e).map(drop)
    }

    /// A call in statement or tail position: statements-only calls return None.
    pub(super) fn lower_call_value_or_unit(&mut self, e: &Expr) -> LResult<Option<Value>> {
        match e {
            Expr::Call(c) => {
                if let Some(()) = self.try_swap(c)? {
                    return Ok(None);
                }
                if let Some(inlined) = self.desugarer().inline_closure_call(c)? {
                    return self.lower_value_or_unit_pub(&inlined);
                }
                if self.is_user_call(&c.func) {
                    return self.lower_user_call(c, None, self.tail_wanted);
                }
                self.lower_call_value(c).map(Some)
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                if name == "copy_from_slice" && m.args.len() == 1 {
                    let dst = self.lower_buf_ref(&m.receiver)?;
                    let src = self.lower_buf_ref(&m.args[0])?;
                    self.b.stmt(InstKind::CopyFrom { dst, src });
                    return Ok(None);
                }
                if name == "swap" && m.args.len() == 2 {
                    if let Ok(buf) = self.lower_buf_ref(&m.receiver) {
                        let i = self.lower_expr(&m.args[0])?;
                        let j = self.lower_expr(&m.args[1])?;
                        if self.b.func.buf(buf).rank == 2 {
                            self.swap_rows(buf, i, j, &m.receiver);
                            return Ok(None);
                        }
                        let a = self.b.load(buf, vec![i]);
                        let b = self.b.load(buf, vec![j]);
                        self.b.store(buf, vec![i], b);
                        self.b.store(buf, vec![j], a);
                        return Ok(None);
                    }
                }
                if name.starts_with("sort") && self.lower_buf_ref(&m.receiver).is_ok() {
                    let what = format!("{}.{name}(..)", text(&m.receiver));
                    return Err(self.error(
                        m,
                        &what,
                        "sorting a buffer in place is not differentiated; sort where the \
                         function is called, or pass the sorted order as a parameter \
                         (`order: &[usize]`) and read `v[order[k]]`",
                    ));
                }
                if self.is_user_method(m) {
                    return self.lower_user_method(m, self.tail_wanted);
                }
                self.lower_method_value(m).map(Some)
            }
            _ => self.lower_expr(e).map(Some),
        }
    }

    /// `rows.swap(i, j)` on a 2-D buffer: its rows exchanged element by element, which
    /// needs rows of one length (checked, naming the buffer).
    fn swap_rows(&mut self, buf: Buf, i: Value, j: Value, receiver: &Expr) {
        let len_i = self.b.value(InstKind::Len(buf, vec![i]), Ty::Int);
        let len_j = self.b.value(InstKind::Len(buf, vec![j]), Ty::Int);
        let same = self.b.binary(BinOp::Eq, len_i, len_j);
        let name = receiver.to_token_stream().to_string().replace(' ', "");
        let message = format!(
            "\"phidiff: `{name}.swap(..)` exchanges rows of different lengths; it swaps rows of one length\""
        );
        self.b.stmt(InstKind::Assert {
            cond: same,
            message: Code::parse(&message),
        });
        let zero = self.b.iconst(0);
        self.b
            .for_range(zero, len_i, Some("col".into()), &[], vec![], |b, k, _| {
                let a = b.load(buf, vec![i, k]);
                let c = b.load(buf, vec![j, k]);
                b.store(buf, vec![i, k], c);
                b.store(buf, vec![j, k], a);
                vec![]
            });
    }

    fn try_swap(&mut self, c: &syn::ExprCall) -> LResult<Option<()>> {
        let Expr::Path(p) = &*c.func else {
            return Ok(None);
        };
        let segs = crate::lower::consts::path_names(&p.path);
        let is_swap = matches!(segs.as_slice(), [a, b, s] if (a == "std" || a == "core") && b == "mem" && s == "swap")
            || matches!(segs.as_slice(), [b, s] if b == "mem" && s == "swap");
        if !is_swap {
            return Ok(None);
        }
        if c.args.len() != 2 {
            return Err(self.error(c, &text(c), "swap takes two buffers"));
        }
        let a = self.lower_buf_ref(&c.args[0]);
        let b = self.lower_buf_ref(&c.args[1]);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                for (buf, arg) in [(a, &c.args[0]), (b, &c.args[1])] {
                    if self.b.func.buf(buf).kind != BufKind::Local {
                        return Err(self.error(arg, &text(arg), "`std::mem::swap` is supported between local `Vec` buffers (copy a parameter into a local first)"));
                    }
                }
                self.b.stmt(InstKind::Swap(a, b));
                Ok(Some(()))
            }
            _ => Err(self.error(
                c,
                &text(c),
                "`std::mem::swap` of scalars is not supported; swap buffers, or use a temporary",
            )),
        }
    }

    /// A path call that is not a float constructor or a math function: a user function.
    fn is_user_call(&self, func: &Expr) -> bool {
        let Expr::Path(p) = func else { return false };
        let segs = &p.path.segments;
        if segs.len() >= 2 {
            let ty = segs[segs.len() - 2].ident.to_string();
            if self.is_float_type_name(&ty) || ty == "Float" || ty == "mem" {
                return false;
            }
        }
        true
    }

    /// `v` converted to a float (`as f32`, `f64::from(v)`, `v.into()`): of type `prec` in
    /// a function that mixes `f32` and `f64` (`f64` where the target is not written);
    /// elsewhere a float stays itself and an integer becomes the function's float.
    pub(super) fn to_float(&mut self, v: Value, prec: Option<Prec>) -> Value {
        let float = self.mixed.then(|| prec.unwrap_or(Prec::F64));
        if self.ty(v) == Ty::Float && float.is_none() {
            return v;
        }
        self.b.value(
            InstKind::Cast {
                value: v,
                to: Ty::Float,
                int: None,
                float,
            },
            Ty::Float,
        )
    }

    fn is_float_type_name(&self, s: &str) -> bool {
        s == "f64" || s == "f32" || self.float_generic.as_deref() == Some(s)
    }

    /// `x.first()`, `x.last()` or `x.get(i)` (with `.copied()`/`.cloned()`) of a 1-D buffer or
    /// view, unwrapped: the element, after a check that it exists (Rust's `unwrap` panics
    /// there, `?` fails), or the default where it does not (`unwrap_or`). `None` when `e`
    /// is not one.
    pub(super) fn optional_element(
        &mut self,
        e: &Expr,
        missing: Missing,
    ) -> LResult<Option<Value>> {
        let Some((present, buf, at)) = self.element_present(e)? else {
            return Ok(None);
        };
        match missing {
            Missing::Panic => {
                let message = "\"called `Option::unwrap()` on a `None` value\"".to_string();
                self.b.stmt(InstKind::Assert {
                    cond: present,
                    message: Code::parse(&message),
                });
                Ok(Some(self.b.load(buf, at)))
            }
            Missing::Fail(site) => {
                let cond = self.b.not(present);
                let args = self.fail_args.get(&site).cloned().unwrap_or_default();
                self.b.stmt(InstKind::Fail { cond, site, args });
                Ok(Some(self.b.load(buf, at)))
            }
            Missing::Default(d) => {
                let d = self.lower_expr(d)?;
                let ty = self.ty(d);
                let r = self.b.branch(
                    present,
                    &[ty],
                    |b| vec![b.load(buf, at.clone())],
                    |_| vec![d],
                );
                Ok(Some(r[0]))
            }
        }
    }

    /// Whether the element `e` (`x.first()`, `x.last()`, `x.get(i)`) exists, with where it
    /// would be: `(present, buffer, indices)`; `None` when `e` is not one.
    pub(super) fn element_present(
        &mut self,
        e: &Expr,
    ) -> LResult<Option<(Value, Buf, Vec<Value>)>> {
        let mut at = e;
        while let Expr::MethodCall(m) = at {
            if (m.method == "copied" || m.method == "cloned") && m.args.is_empty() {
                at = &m.receiver;
            } else {
                break;
            }
        }
        let Expr::MethodCall(m) = at else {
            return Ok(None);
        };
        let method = m.method.to_string();
        if !matches!(
            (method.as_str(), m.args.len()),
            ("first" | "last", 0) | ("get", 1)
        ) {
            return Ok(None);
        }
        let Some((buf, outer, base, len)) = self.view_of(&m.receiver)? else {
            return Ok(None);
        };
        let index = match method.as_str() {
            "first" => self.b.iconst(0),
            "last" => {
                // `len − 1`, or 0 for an empty buffer (then not present).
                let one = self.b.iconst(1);
                let zero = self.b.iconst(0);
                let nonempty = self.b.binary(BinOp::Gt, len, zero);
                self.b.branch(
                    nonempty,
                    &[Ty::Int],
                    |b| vec![b.sub(len, one)],
                    |b| vec![b.iconst(0)],
                )[0]
            }
            _ => {
                let i = self.lower_expr(&m.args[0])?;
                self.expect_ty(i, Ty::Int, &m.args[0], "an index")?;
                i
            }
        };
        let present = self.b.binary(BinOp::Lt, index, len);
        let at = match base {
            Some(b) => self.b.add(b, index),
            None => index,
        };
        Ok(Some((present, buf, outer.then(at))))
    }

    /// A method call on a receiver the compiler does not model (`comm.allreduce_sum(..)`).
    pub(super) fn is_user_method(&self, m: &syn::ExprMethodCall) -> bool {
        match &*m.receiver {
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                matches!(
                    self.env.lookup(&p.path.segments[0].ident.to_string()),
                    Some(Binding::Opaque)
                )
            }
            Expr::Reference(r) => matches!(&*r.expr, Expr::Path(p) if p.path.segments.len() == 1
                && matches!(self.env.lookup(&p.path.segments[0].ident.to_string()), Some(Binding::Opaque))),
            _ => false,
        }
    }

    pub(super) fn lower_method_value(&mut self, m: &syn::ExprMethodCall) -> LResult<Value> {
        let name = m.method.to_string();
        if let Some(desugared) = self.desugarer().desugar_consumer(m)? {
            return self.lower_expr(&desugared);
        }
        match name.as_str() {
            "sum" if m.args.is_empty() => return self.lower_sum(m),
            "is_empty" if m.args.is_empty() => {
                // `a.is_empty()` is `a.len() == 0`.
                let len = self.lower_method_value(&syn::ExprMethodCall {
                    method: syn::Ident::new("len", m.method.span()),
                    ..m.clone()
                })?;
                let zero = self.b.iconst(0);
                return Ok(self.b.binary(BinOp::Eq, len, zero));
            }
            "len" if m.args.is_empty() => {
                if let Expr::Index(_) = &*m.receiver {
                    // `a[i].len()`, `t[i][j].len()`, `plane[j].len()`: a row's length.
                    if let Some((buf, ix)) = self.index_prefix(&m.receiver, |r| r >= 1)? {
                        return Ok(self.b.value(InstKind::Len(buf, ix), Ty::Int));
                    }
                    let mut at = &*m.receiver;
                    let mut ranged = false;
                    while let Expr::Index(ix) = at {
                        ranged |= matches!(&*ix.index, Expr::Range(_));
                        at = &ix.expr;
                    }
                    if self.view_binding(at).is_none() {
                        self.lower_buf_ref(at)?;
                    }
                    if ranged {
                        return Err(self.error(m, &text(m), "`len()` of a sub-slice here; bind it first (`let v = &x[a..b];`, then `v.len()`) or write the range's length"));
                    }
                    return Err(self.error(m, &text(m), "`len()` of an element"));
                }
                if let Some(Binding::Row { len, .. }) = self.view_binding(&m.receiver) {
                    return Ok(len);
                }
                let buf = self.lower_buf_ref(&m.receiver)?;
                return Ok(self.b.value(InstKind::Len(buf, vec![]), Ty::Int));
            }
            "unwrap" | "expect" | "unwrap_or" => {
                let missing = match name.as_str() {
                    "unwrap_or" if m.args.len() == 1 => Missing::Default(&m.args[0]),
                    _ => Missing::Panic,
                };
                if let Some(v) = self.optional_element(&m.receiver, missing)? {
                    return Ok(v);
                }
                // `x.to_f64().unwrap()`: the value itself for a concrete float type.
                if let Expr::MethodCall(r) = &*m.receiver {
                    if (r.method == "to_f64" || r.method == "to_f32") && r.args.is_empty() {
                        let v = self.lower_expr(&r.receiver)?;
                        if self.ty(v) == Ty::Float && self.float_generic.is_none() {
                            return Ok(v);
                        }
                        return self.lower_method_value(r);
                    }
                }
                if let Expr::Call(c) = &*m.receiver {
                    if let Some(v) = self.try_float_from(c)? {
                        return Ok(v);
                    }
                }
                // `g(x).unwrap()`, `obj.g(x).expect("..")` of a fallible function: the call,
                // its derivatives unwrapped the same way.
                let user_call = match &*m.receiver {
                    Expr::Call(c) => matches!(&*c.func, Expr::Path(_)),
                    Expr::MethodCall(r) => self.is_user_method(r),
                    _ => false,
                };
                if user_call && name != "unwrap_or" {
                    let (method, args) = (&m.method, &m.args);
                    return self.lower_call_then(&m.receiver, quote::quote!(.#method(#args)));
                }
                if user_call {
                    return Err(self.error(
                        m,
                        &text(m),
                        "`unwrap_or(..)` on a call of a fallible function is not supported yet (where the call fails, the derivative would have to follow the default instead); test the condition the callee fails on before the call (`if x.is_empty() { 0.0 } else { mean(x).unwrap() }`), or use `?` in a function that returns `Option`/`Result` itself",
                    ));
                }
                return Err(self.error(
                    m,
                    &text(m),
                    "`unwrap` is supported on `T::from(..)` and `T::from_f64(..)` (and the other `FromPrimitive` conversions), on `x.first()`/`x.last()`/`x.get(i)`, and on calls of fallible functions with derivatives",
                ));
            }
            _ => {}
        }
        if self.is_user_method(m) {
            return self
                .lower_user_method(m, true)?
                .ok_or_else(|| syn::Error::new_spanned(m, "phidiff: this call has no value"));
        }
        if let Some(why) = unsupported_iterator_reduction(m) {
            let what = format!("{}.{}(..)", text(&m.receiver), m.method);
            return Err(self.error(m, &what, &why));
        }
        let recv = self.lower_expr(&m.receiver)?;
        // `x.into()` between float types (`f32` into `f64`), or of an integer into the float.
        if name == "into" && m.args.is_empty() {
            return Ok(match self.ty(recv) {
                // The one float `Into` another is `f32` into `f64`.
                Ty::Float => self.to_float(recv, Some(Prec::F64)),
                Ty::Int => self.to_float(recv, None),
                Ty::Bool => return Err(self.error(m, &text(m), "a bool has no float value")),
            });
        }
        if (name == "to_f64" || name == "to_f32") && m.args.is_empty() && self.ty(recv) == Ty::Float
        {
            if self.float_generic.is_some() {
                return Err(self.error(
                    m,
                    &text(m),
                    "converting the generic float into a concrete one drops its derivative when `T` is a dual number (`_rev::<Dual<f64>>`); keep the computation in `T` (`T::from(c).unwrap()` for constants)",
                ));
            }
            return Err(self.error(
                m,
                &text(m),
                &format!("`.{name}()` gives an `Option`: write `x as f64`"),
            ));
        }
        if self.ty(recv) == Ty::Int && (name == "min" || name == "max") && m.args.len() == 1 {
            let other = self.lower_expr(&m.args[0])?;
            self.expect_ty(
                other,
                Ty::Int,
                &m.args[0],
                "the argument of integer min/max",
            )?;
            return Ok(if name == "min" {
                self.min_int(recv, other)
            } else {
                self.min_int_rev(recv, other)
            });
        }
        if self.ty(recv) != Ty::Float {
            return Err(self.error(
                m,
                &text(m),
                "methods on integers and bools are limited to `min`/`max`; use explicit arithmetic",
            ));
        }
        // `x.is_nan()` and the other predicates: a passive bool.
        if let (Some(test), true) = (FloatTest::named(&name), m.args.is_empty()) {
            return Ok(self
                .b
                .value(InstKind::Unary(UnOp::Test(test), recv), Ty::Bool));
        }
        let Some(rule) = rules::find(&name) else {
            return Err(self.error(&m.method, &name, &no_rule_message(&name)));
        };
        if m.args.len() + 1 != rule.arity {
            return Err(self.error(
                m,
                &text(m),
                &format!("`{name}` takes {} argument(s)", rule.arity - 1),
            ));
        }
        let mut args = vec![recv];
        for (k, a) in m.args.iter().enumerate() {
            let v = self.lower_expr(a)?;
            let want = if rule.int_arg == Some(k + 1) {
                Ty::Int
            } else {
                Ty::Float
            };
            self.expect_ty(v, want, a, &format!("argument {} of `{name}`", k + 1))?;
            args.push(v);
        }
        Ok(self.b.math(rule.name, args))
    }

    /// `a.max(b)` on integers.
    fn min_int_rev(&mut self, a: Value, b: Value) -> Value {
        let c = self.b.binary(BinOp::Ge, a, b);
        let t = self.b.func.new_block();
        let e = self.b.func.new_block();
        self.b.set_yields(t, vec![a]);
        self.b.set_yields(e, vec![b]);
        let i = self.b.push(
            InstKind::If {
                cond: c,
                then_blk: t,
                else_blk: e,
            },
            &[Ty::Int],
            None,
        );
        self.b.func.inst(i).results[0]
    }

    /// `T::from(e)` / `f64::from(e)` / `<T as NumCast>::from(e)`: a conversion to the float type.
    pub(super) fn try_float_from(&mut self, c: &syn::ExprCall) -> LResult<Option<Value>> {
        let Expr::Path(p) = &*c.func else {
            return Ok(None);
        };
        let segs = crate::lower::consts::path_names(&p.path);
        // `T::from(x)`, `NumCast::from(x)`, and `FromPrimitive`'s `T::from_f64(c)`,
        // `T::from_usize(n)`, ... (each an `Option`, unwrapped by the caller).
        let conversion = |f: &str| {
            f == "from"
                || matches!(
                    f,
                    "from_f64"
                        | "from_f32"
                        | "from_usize"
                        | "from_isize"
                        | "from_i64"
                        | "from_u64"
                        | "from_i32"
                        | "from_u32"
                        | "from_i16"
                        | "from_u16"
                        | "from_i8"
                        | "from_u8"
                        | "from_i128"
                        | "from_u128"
                )
        };
        let ok = match segs.as_slice() {
            [ty, f] => {
                conversion(f)
                    && (self.is_float_type_name(ty) || ty == "NumCast" || ty == "FromPrimitive")
            }
            [.., f] => conversion(f) && p.qself.is_some(),
            _ => false,
        };
        if !ok || c.args.len() != 1 {
            return Ok(None);
        }
        let v = self.lower_expr(&c.args[0])?;
        let prec = match segs.first().map(String::as_str) {
            Some("f32") => Some(Prec::F32),
            Some("f64") => Some(Prec::F64),
            _ => None,
        };
        Ok(Some(match self.ty(v) {
            Ty::Float | Ty::Int => self.to_float(v, prec),
            Ty::Bool => {
                return Err(self.error(
                    &c.args[0],
                    &text(&c.args[0]),
                    "conversion of a bool to a float",
                ))
            }
        }))
    }

    pub(super) fn lower_call_value(&mut self, c: &syn::ExprCall) -> LResult<Value> {
        if let Some(inlined) = self.desugarer().inline_closure_call(c)? {
            return self.lower_expr(&inlined);
        }
        if self.try_swap(c)?.is_some() {
            return Err(self.error(c, &text(c), "`swap` has no value"));
        }
        if let Some(v) = self.try_float_from(c)? {
            if let Expr::Path(p) = &*c.func {
                let first = p
                    .path
                    .segments
                    .first()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                if first != "f64" && first != "f32" {
                    return Err(self.error(
                        c,
                        &text(c),
                        "`T::from(..)` returns an Option: write `T::from(..).unwrap()`",
                    ));
                }
            }
            return Ok(v);
        }
        let Expr::Path(p) = &*c.func else {
            return Err(self.error(
                &c.func,
                &text(&c.func),
                "only calls of named functions are supported",
            ));
        };
        let segs = crate::lower::consts::path_names(&p.path);
        if segs.iter().any(|s| s == "Vec") {
            return Err(self.error(
                c,
                &text(c),
                "a growable Vec is supported when statements in a row fill it (`push`, `extend`, `extend_from_slice`, and `for` loops that push, also under conditions) and it is read only after the last of them; not a push inside a `while` loop or a closure, or in a nested `for` whose header reads what the enclosing loop body assigns; otherwise use `vec![value; length]`",
            ));
        }
        if segs.len() >= 2 {
            let ty = &segs[segs.len() - 2];
            let f = segs[segs.len() - 1].as_str();
            if self.is_float_type_name(ty) || ty == "Float" {
                // Constructors and constants of the float type.
                let constant = match f {
                    "zero" => Some(0.0),
                    "one" => Some(1.0),
                    "PI" => Some(std::f64::consts::PI),
                    "E" => Some(std::f64::consts::E),
                    "TAU" => Some(std::f64::consts::TAU),
                    "SQRT_2" => Some(std::f64::consts::SQRT_2),
                    "LN_2" => Some(std::f64::consts::LN_2),
                    "LN_10" => Some(std::f64::consts::LN_10),
                    "FRAC_PI_2" => Some(std::f64::consts::FRAC_PI_2),
                    "FRAC_1_SQRT_2" => Some(std::f64::consts::FRAC_1_SQRT_2),
                    "epsilon" => Some(f64::EPSILON),
                    "infinity" => Some(f64::INFINITY),
                    "neg_infinity" => Some(f64::NEG_INFINITY),
                    "max_value" => Some(f64::MAX),
                    "min_positive_value" => Some(f64::MIN_POSITIVE),
                    _ => None,
                };
                if let (Some(cv), true) = (constant, c.args.is_empty()) {
                    return Ok(self.b.fconst(cv));
                }
                // UFCS: `f64::sqrt(x)`, `T::max(a, b)`.
                if let Some(rule) = rules::find(f) {
                    if c.args.len() != rule.arity {
                        return Err(self.error(
                            c,
                            &text(c),
                            &format!("`{f}` takes {} argument(s)", rule.arity),
                        ));
                    }
                    let mut args = Vec::new();
                    for (k, a) in c.args.iter().enumerate() {
                        let v = self.lower_expr(a)?;
                        let want = if rule.int_arg == Some(k) {
                            Ty::Int
                        } else {
                            Ty::Float
                        };
                        self.expect_ty(v, want, a, &format!("argument {} of `{f}`", k + 1))?;
                        args.push(v);
                    }
                    return Ok(self.b.math(rule.name, args));
                }
                return Err(self.error(c, &text(c), "unknown float function"));
            }
        }
        self.lower_user_call(c, None, true)?
            .ok_or_else(|| syn::Error::new_spanned(c, "phidiff: this call has no value"))
    }

    fn lower_call_args(
        &mut self,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
    ) -> LResult<Vec<CallArg>> {
        let mut out = Vec::new();
        // Buffers passed by name more than once (`dot(y, y)`): shared borrows, whatever
        // their parameter's type (two `&mut` of one buffer would not compile).
        let names: Vec<String> = args
            .iter()
            .filter_map(|a| match a {
                Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                _ => None,
            })
            .collect();
        let repeated = |a: &Expr| match a {
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| names.iter().filter(|n| **n == i.to_string()).count() > 1),
            _ => false,
        };
        for a in args {
            let mutable = matches!(a, Expr::Reference(r) if r.mutability.is_some());
            if let Ok(buf) = self.lower_buf_ref(a) {
                // A `&mut [T]` parameter passed by name (`g(y)`) is reborrowed mutably:
                // the callee may write it, so it is passed (and differentiated) as `&mut`.
                let reborrow = matches!(a, Expr::Path(_)) && self.is_mut_param(buf) && !repeated(a);
                out.push(CallArg::Buf {
                    buf,
                    mutable: mutable || reborrow,
                    range: None,
                });
                continue;
            }
            // A sub-slice (`&x[a..b]`, `&mut y[a..]`) or a view (`row`, `w` of `windows`).
            if let Some((buf, view_mutable, part)) = self.slice_arg(a)? {
                // A `&mut` view passed by name (`g(row)`) is reborrowed mutably.
                let by_name = !matches!(a, Expr::Reference(_));
                out.push(CallArg::Buf {
                    buf,
                    mutable: mutable || (by_name && view_mutable),
                    range: Some(part),
                });
                continue;
            }
            let opaque = match a {
                Expr::Reference(r) => {
                    matches!(&*r.expr, Expr::Path(p) if p.path.segments.len() == 1
                    && matches!(self.env.lookup(&p.path.segments[0].ident.to_string()), Some(Binding::Opaque)))
                }
                Expr::Path(p) if p.path.segments.len() == 1 => {
                    matches!(
                        self.env.lookup(&p.path.segments[0].ident.to_string()),
                        Some(Binding::Opaque)
                    )
                }
                _ => false,
            };
            if opaque {
                out.push(CallArg::Opaque(opaque_of(a)));
                continue;
            }
            // A path that is not a float constant (`Op::Sum`, `Mode::Fast`): a constant
            // of a type the compiler does not model, passed through as written.
            if let Expr::Path(p) = a {
                if p.qself.is_none() && p.path.segments.len() >= 2 {
                    match self.path_constant(&p.path) {
                        Some(c) => out.push(CallArg::Scalar(c)),
                        None => out.push(CallArg::Opaque(opaque_of(a))),
                    }
                    continue;
                }
            }
            out.push(CallArg::Scalar(self.lower_expr(a)?));
        }
        Ok(out)
    }

    /// A call argument that is part of a buffer: `&x[a..b]` (any range form, `&mut` too), a
    /// row of a 2-D buffer (`&m[i]`, `&mut m[i][a..]`) or a view by name; the buffer,
    /// whether the view is `&mut`, and the part of it.
    fn slice_arg(&mut self, a: &Expr) -> LResult<Option<(Buf, bool, Part)>> {
        let view = match a {
            Expr::Reference(r) => match &*r.expr {
                Expr::Index(ix)
                    if matches!(&*ix.index, Expr::Range(_)) || {
                        // The buffer or view under the indices (`t` of `&t[i][j]`).
                        let mut base = &*ix.expr;
                        while let Expr::Index(inner) = base {
                            base = &inner.expr;
                        }
                        self.view_binding(base).is_some()
                            || self
                                .lower_buf_ref(base)
                                .is_ok_and(|b| self.b.func.buf(b).rank >= 2)
                    } =>
                {
                    self.place_binding(a)?
                }
                inner => self.view_binding(inner),
            },
            _ => self.view_binding(a),
        };
        Ok(match view {
            Some(Binding::Row { buf, outer, .. }) if self.view_rank(buf, outer) >= 2 => {
                return Err(self.error(
                    a,
                    &text(a),
                    "a part of a buffer with two or more dimensions (`&m[a..b]`, `&t[i]`) is not passed to calls yet; pass the whole buffer, or its rows one by one",
                ))
            }
            Some(Binding::Row {
                buf,
                mutable,
                outer,
                base,
                len,
            }) => {
                let end = self.b.add(base, len);
                Some((
                    buf,
                    mutable,
                    Part {
                        row: outer,
                        start: base,
                        end,
                    },
                ))
            }
            _ => None,
        })
    }

    /// Whether `buf` is the storage of a `&mut` buffer parameter.
    fn is_mut_param(&self, buf: Buf) -> bool {
        let BufKind::Param(n) = self.b.func.buf(buf).kind else {
            return false;
        };
        matches!(
            self.b.func.params.get(n).map(|p| &p.kind),
            Some(ParamKind::Buffer { mutable: true, .. })
        )
    }

    fn call_result_ty(&self, args: &[CallArg]) -> Ty {
        let float_arg = args.iter().any(|a| match a {
            CallArg::Scalar(v) => self.ty(*v) == Ty::Float,
            CallArg::Buf { buf, .. } => self.b.func.buf(*buf).elem == Ty::Float,
            CallArg::Opaque(_) => false,
        });
        if float_arg {
            Ty::Float
        } else {
            Ty::Int
        }
    }

    fn lower_user_call(
        &mut self,
        c: &syn::ExprCall,
        receiver: Option<Opaque>,
        want_value: bool,
    ) -> LResult<Option<Value>> {
        let Expr::Path(p) = &*c.func else {
            return Err(self.error(
                &c.func,
                &text(&c.func),
                "only calls of named functions are supported",
            ));
        };
        if p.qself.is_some() {
            return Err(self.error(p, &text(p), "qualified-self calls are not supported"));
        }
        let mut path = p.path.clone();
        let last = path.segments.last_mut().expect("non-empty path");
        let generics = match std::mem::replace(&mut last.arguments, syn::PathArguments::None) {
            syn::PathArguments::None => Code::default(),
            args => Code(args.to_token_stream()),
        };
        let args = self.lower_call_args(&c.args)?;
        let callee = Callee {
            path,
            receiver,
            generics,
            then: Code::default(),
        };
        self.push_call(callee, args, want_value)
    }

    fn lower_user_method(
        &mut self,
        m: &syn::ExprMethodCall,
        want_value: bool,
    ) -> LResult<Option<Value>> {
        let args = self.lower_call_args(&m.args)?;
        let generics = Code(m.turbofish.to_token_stream());
        let callee = Callee {
            path: m.method.clone().into(),
            receiver: Some(opaque_of(&m.receiver)),
            generics,
            then: Code::default(),
        };
        self.push_call(callee, args, want_value)
    }

    fn push_call(
        &mut self,
        mut callee: Callee,
        args: Vec<CallArg>,
        want_value: bool,
    ) -> LResult<Option<Value>> {
        if let Some(then) = self.call_then.take() {
            callee.then = then;
        }
        let tys = if want_value {
            vec![self.call_result_ty(&args)]
        } else {
            vec![]
        };
        let i = self.b.push(
            InstKind::Call {
                callee,
                args,
                suffix: CallSuffix::Primal,
            },
            &tys,
            None,
        );
        Ok(self.b.func.inst(i).results.first().copied())
    }
}

/// `e`, passed through as written, keyed by its text less a leading `&`/`&mut` (so `comm`
/// and `&comm` are one value); one that names a path (`Op::Sum`, `Model::new()`) is a
/// constant.
fn opaque_of(e: &Expr) -> Opaque {
    let mut at = e;
    while let Expr::Reference(r) = at {
        at = &r.expr;
    }
    let key = text(at);
    Opaque {
        code: Code(e.to_token_stream()),
        key: (!key.contains("::")).then_some(key),
    }
}

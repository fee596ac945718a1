//! Expressions and simple statements: literals, variables, arithmetic, indexing,
//! assignments, casts and `let`. The macros (`vec!`, `assert!`) are in `macros.rs`.

use super::*;
use syn::{Expr, Lit, Stmt};

impl Lowerer<'_> {
    /// Lowers a block's statements; returns the tail expression's value, if any.
    pub(super) fn lower_block_stmts(&mut self, stmts: &[Stmt]) -> LResult<Option<Value>> {
        for (k, stmt) in stmts.iter().enumerate() {
            let last = k + 1 == stmts.len();
            let span = span_of(stmt);
            let value = self.with_span(span, |l| l.lower_stmt(stmt, last))?;
            if last {
                return Ok(value);
            }
            if control::is_jump(stmt) {
                // The rest of the block is unreachable.
                return Ok(None);
            }
            if self.may_exit(stmt) {
                return self.guard_rest(&stmts[k + 1..]);
            }
        }
        Ok(None)
    }

    fn lower_stmt(&mut self, stmt: &Stmt, last: bool) -> LResult<Option<Value>> {
        match stmt {
            Stmt::Local(local) => {
                self.lower_let(local)?;
                Ok(None)
            }
            Stmt::Expr(e, semi) => {
                if last && semi.is_none() {
                    self.lower_value_or_unit(e)
                } else {
                    self.lower_effect(e)?;
                    Ok(None)
                }
            }
            Stmt::Macro(m) => {
                self.lower_macro_stmt(&m.mac)?;
                Ok(None)
            }
            Stmt::Item(syn::Item::Const(k)) => {
                self.const_item(k)?;
                Ok(None)
            }
            // `use std::f64::consts::PI;` inside the body: the bare names are known anyway.
            Stmt::Item(syn::Item::Use(_)) => Ok(None),
            Stmt::Item(item) => Err(self.error(
                item,
                "item",
                "nested items (fn, struct, ...) are not supported inside a differentiated function",
            )),
        }
    }

    /// An expression in statement position: its value, if any, is dropped.
    pub(super) fn lower_effect(&mut self, e: &Expr) -> LResult<()> {
        let saved = std::mem::replace(&mut self.tail_wanted, false);
        let r = self.lower_effect_inner(e);
        self.tail_wanted = saved;
        r
    }

    fn lower_effect_inner(&mut self, e: &Expr) -> LResult<()> {
        match e {
            Expr::Assign(a) => self.lower_assign(&a.left, &a.right, None, e),
            Expr::Binary(b) => match compound_op(&b.op) {
                Some(op) => self.lower_assign(&b.left, &b.right, Some(op), e),
                None => self.lower_expr(e).map(drop),
            },
            Expr::If(i) => self.lower_if(i).map(drop),
            Expr::Match(m) => self.lower_match(m).map(drop),
            Expr::ForLoop(f) => self.lower_for(f),
            Expr::While(w) => self.lower_while(w),
            Expr::Loop(l) => self.lower_loop(l),
            Expr::Break(_) | Expr::Continue(_) | Expr::Return(_) => self.lower_jump(e),
            Expr::Block(b) if b.label.is_none() => self.lower_scoped_block(&b.block).map(drop),
            Expr::Macro(m) => self.lower_macro_stmt(&m.mac),
            Expr::MethodCall(m) if m.method == "for_each" => {
                match self.desugarer().desugar_consumer(m)? {
                    Some(desugared) => self.lower_effect(&desugared),
                    None => self.lower_for_each(m),
                }
            }
            Expr::MethodCall(_) | Expr::Call(_) => self.lower_call_stmt(e),
            Expr::Paren(p) => self.lower_effect(&p.expr),
            _ => self.lower_expr(e).map(drop),
        }
    }

    /// A block's tail: a value, or a unit-typed expression (loop, assignment, call).
    fn lower_value_or_unit(&mut self, e: &Expr) -> LResult<Option<Value>> {
        if let Expr::Macro(m) = e {
            if let Some(v) = self.lower_internal_macro(&m.mac, true)? {
                return Ok(v);
            }
        }
        match e {
            Expr::If(i) => self.lower_if(i),
            Expr::Match(m) => self.lower_match(m),
            Expr::Block(b) if b.label.is_none() => self.lower_scoped_block(&b.block),
            Expr::Assign(_)
            | Expr::ForLoop(_)
            | Expr::While(_)
            | Expr::Loop(_)
            | Expr::Macro(_) => {
                self.lower_effect(e)?;
                Ok(None)
            }
            Expr::Break(_) | Expr::Continue(_) | Expr::Return(_) => {
                self.lower_jump(e)?;
                Ok(None)
            }
            Expr::Binary(b) if compound_op(&b.op).is_some() => {
                self.lower_effect(e)?;
                Ok(None)
            }
            Expr::MethodCall(m) if m.method == "for_each" => {
                self.lower_effect(e)?;
                Ok(None)
            }
            Expr::MethodCall(_) | Expr::Call(_) => self.lower_call_value_or_unit(e),
            _ => self.lower_expr(e).map(Some),
        }
    }

    pub(super) fn lower_scoped_block(&mut self, block: &syn::Block) -> LResult<Option<Value>> {
        let depth = self.env.depth();
        self.env.push_scope();
        let r = self.lower_block_stmts(&block.stmts);
        self.env.truncate(depth);
        r
    }

    fn lower_let(&mut self, local: &syn::Local) -> LResult<()> {
        if let Some((_, d)) = local.init.as_ref().and_then(|i| i.diverge.as_ref()) {
            // `let [a, b] = x[..] else { panic!() };`: the length is checked instead.
            let panics = matches!(&**d, Expr::Block(b) if b.block.stmts.len() == 1
                && matches!(&b.block.stmts[0], Stmt::Macro(m) if is_panic(&m.mac.path))
                || matches!(&b.block.stmts[0], Stmt::Expr(Expr::Macro(m), _) if is_panic(&m.mac.path)));
            if !(panics && matches!(&local.pat, syn::Pat::Slice(_))) {
                return Err(self.error(
                    d,
                    "let ... else",
                    "`let`-`else` is supported with `Some(v)` of `x.first()`, `x.last()` or `x.get(i)`, and with an array pattern and an `else` that panics",
                ));
            }
        }
        match &local.init {
            Some(init) => self.bind_pattern(&local.pat, &init.expr, None),
            // `let r;`, assigned later (in each branch of an `if`).
            None => match &local.pat {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    self.env.bind(&pi.ident.to_string(), Binding::Uninit);
                    Ok(())
                }
                syn::Pat::Type(pt) => match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        self.env.bind(&pi.ident.to_string(), Binding::Uninit);
                        Ok(())
                    }
                    other => Err(self.error(
                        other,
                        &text(other),
                        "a `let` without a value binds one name",
                    )),
                },
                other => Err(self.error(
                    other,
                    &text(other),
                    "a `let` without a value binds one name",
                )),
            },
        }
    }

    /// Binds `pat` to the value of `init`: a name; `_`; a tuple pattern to a tuple
    /// expression, element by element; an array pattern (`[a, b]`, with `..`) to an array
    /// expression or to the elements of a buffer (`*x`, `x`, `x[i]` a row).
    fn bind_pattern(
        &mut self,
        pat: &syn::Pat,
        init: &Expr,
        declared: Option<&syn::Type>,
    ) -> LResult<()> {
        match pat {
            syn::Pat::Type(pt) => self.bind_pattern(&pt.pat, init, Some(&pt.ty)),
            syn::Pat::Paren(pp) => self.bind_pattern(&pp.pat, init, declared),
            syn::Pat::Reference(r) => self.bind_pattern(&r.pat, &strip_ref(init), declared),
            syn::Pat::Wild(_) => {
                // Evaluated for its effects (a call), the value dropped.
                self.lower_binding_init(init, declared).map(|_| ())
            }
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                let name = pi.ident.to_string();
                // `let v: Vec<f64> = chain.collect();`: the statements that fill `v`.
                if let Some(stmts) = self.desugarer().desugar_collect(init, &pi.ident)? {
                    let block: syn::Block = syn::parse2(quote::quote!({ #stmts }))?;
                    self.lower_block_stmts(&block.stmts)?;
                    return Ok(());
                }
                // `let f = |x| ..;`: inlined where it is called.
                if let Expr::Closure(c) = strip_group(init) {
                    self.define_closure(name, c);
                    return Ok(());
                }
                let binding = self.lower_binding_init(init, declared)?;
                match binding {
                    Binding::Scalar(v) => {
                        if self.b.func.values[v.index()].name.is_none() {
                            self.b.func.values[v.index()].name = Some(name.clone());
                        }
                    }
                    // A new buffer takes the variable's name (messages, generated code).
                    Binding::Buf(buf)
                        if matches!(self.b.func.buf(buf).name.as_str(), "vec" | "copy")
                            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                    {
                        self.b.func.bufs[buf.index()].name = name.clone();
                    }
                    _ => {}
                }
                self.env.bind(&name, binding);
                Ok(())
            }
            syn::Pat::Tuple(t) => match strip_group(init) {
                // `let (a, b) = x.split_at(k);` (or `split_at_mut`): two views.
                Expr::MethodCall(m)
                    if (m.method == "split_at" || m.method == "split_at_mut")
                        && m.args.len() == 1
                        && t.elems.len() == 2 =>
                {
                    let whole = &m.receiver;
                    let k = &m.args[0];
                    let (left, right): (Expr, Expr) = if m.method == "split_at_mut" {
                        (
                            syn::parse_quote_spanned!(m.span()=> &mut (#whole)[..#k]),
                            syn::parse_quote_spanned!(m.span()=> &mut (#whole)[#k..]),
                        )
                    } else {
                        (
                            syn::parse_quote_spanned!(m.span()=> &(#whole)[..#k]),
                            syn::parse_quote_spanned!(m.span()=> &(#whole)[#k..]),
                        )
                    };
                    let (l, r) = (self.place_binding(&left)?, self.place_binding(&right)?);
                    match (l, r) {
                        (Some(l), Some(r)) => {
                            self.bind_value_pattern(&t.elems[0], l)?;
                            self.bind_value_pattern(&t.elems[1], r)
                        }
                        _ => Err(self.error(m, &text(m), "`split_at` of a 1-D buffer or view by name")),
                    }
                }
                // `let (s, c) = x.sin_cos();`: `x.sin()` and `x.cos()` (the receiver is
                // a float expression without effects).
                Expr::MethodCall(m)
                    if m.method == "sin_cos" && m.args.is_empty() && t.elems.len() == 2 =>
                {
                    let x = &m.receiver;
                    let pair: Expr = syn::parse_quote_spanned!(m.span()=> ((#x).sin(), (#x).cos()));
                    self.bind_pattern(pat, &pair, declared)
                }
                Expr::Tuple(e) if e.elems.len() == t.elems.len() => {
                    // Every value first, then the names (`let (a, b) = (b, a);`).
                    let mut values = Vec::new();
                    for (p, x) in t.elems.iter().zip(&e.elems) {
                        let v = match p {
                            syn::Pat::Wild(_) => None,
                            _ => Some(self.lower_binding_init(x, None)?),
                        };
                        values.push(v);
                    }
                    for (p, v) in t.elems.iter().zip(values) {
                        if let Some(v) = v {
                            self.bind_value_pattern(p, v)?;
                        }
                    }
                    Ok(())
                }
                other => Err(self.error(
                    other,
                    &text(other),
                    "a tuple pattern binds the elements of a tuple expression `(a, b)`",
                )),
            },
            syn::Pat::Slice(sl) => {
                let (before, rest, after) = split_rest(sl).ok_or_else(|| {
                    self.error(sl, &text(sl), "one `..` at most in an array pattern")
                })?;
                if let Expr::Array(a) = strip_group(init) {
                    if rest.is_none() && a.elems.len() != before.len() {
                        return Err(self.error(sl, &text(sl), "the pattern and the array have different lengths"));
                    }
                    let mut values = Vec::new();
                    for x in &a.elems {
                        values.push(self.lower_binding_init(x, None)?);
                    }
                    let n = values.len();
                    for (k, p) in before.iter().enumerate() {
                        self.bind_value_pattern(p, values[k])?;
                    }
                    for (k, p) in after.iter().enumerate() {
                        self.bind_value_pattern(p, values[n - after.len() + k])?;
                    }
                    return Ok(());
                }
                // The elements of a buffer, of a row of a 2-D one, or of a view (`x[a..]`,
                // `*w`), read now.
                let inner = strip_deref(init);
                let view = match strip_group(inner) {
                    Expr::Index(ix) if matches!(strip_group(&ix.index), Expr::Range(_)) => {
                        let borrowed: Expr = syn::parse_quote_spanned!(inner.span()=> &#inner);
                        self.place_binding(&borrowed)?
                    }
                    Expr::Path(_) => self.row_binding(inner),
                    _ => None,
                };
                let (buf, row, base, len) = match view {
                    Some(Binding::Row {
                        buf,
                        outer,
                        base,
                        len,
                        ..
                    }) => (buf, outer, Some(base), len),
                    _ => match self.view_of(inner)? {
                        Some((buf, row, base, len)) => (buf, row, base, len),
                        None => {
                            return Err(self.error(init, &text(init), "an array pattern takes the elements of a 1-D buffer, a row or a view"))
                        }
                    },
                };
                // The length the pattern needs (`let .. else` panics otherwise; a plain `let`
                // has an array of that length already).
                let need = self.b.iconst((before.len() + after.len()) as i128);
                let op = if rest.is_some() { BinOp::Ge } else { BinOp::Eq };
                let fits = self.b.binary(op, len, need);
                let message = format!(
                    "\"phidiff: `{}` does not match the length of the buffer\"",
                    assert_text(sl)
                );
                self.b.stmt(InstKind::Assert { cond: fits, message: Code::parse(&message) });
                let at = |l: &mut Self, k: Value| {
                    let mut idx: Vec<Value> = row.as_slice().to_vec();
                    idx.push(match base {
                        Some(b) => l.b.add(b, k),
                        None => k,
                    });
                    l.b.load(buf, idx)
                };
                for (k, p) in before.iter().enumerate() {
                    let kv = self.b.iconst(k as i128);
                    let v = at(self, kv);
                    self.bind_value_pattern(p, Binding::Scalar(v))?;
                }
                for (k, p) in after.iter().enumerate() {
                    let back = self.b.iconst((after.len() - k) as i128);
                    let kv = self.b.sub(len, back);
                    let v = at(self, kv);
                    self.bind_value_pattern(p, Binding::Scalar(v))?;
                }
                Ok(())
            }
            other => Err(self.error(
                other,
                &text(other),
                "`let` binds a name, a tuple of names or an array of names (struct patterns are not supported yet)",
            )),
        }
    }

    /// Binds a pattern of one name (or `_`, or `&name`) to a lowered value.
    fn bind_value_pattern(&mut self, p: &syn::Pat, b: Binding) -> LResult<()> {
        match p {
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Type(pt) => self.bind_value_pattern(&pt.pat, b),
            syn::Pat::Paren(pp) => self.bind_value_pattern(&pp.pat, b),
            syn::Pat::Reference(r) => self.bind_value_pattern(&r.pat, b),
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                if let Binding::Scalar(v) = b {
                    if self.b.func.values[v.index()].name.is_none() {
                        self.b.func.values[v.index()].name = Some(pi.ident.to_string());
                    }
                }
                self.env.bind(&pi.ident.to_string(), b);
                Ok(())
            }
            other => Err(self.error(other, &text(other), "nested patterns bind plain names")),
        }
    }

    /// The initializer of a `let`: a buffer (`vec!`, `to_vec`, `clone`) or a scalar.
    fn lower_binding_init(&mut self, e: &Expr, declared: Option<&syn::Type>) -> LResult<Binding> {
        if let Some(buf) = self.try_lower_new_buffer(e)? {
            return Ok(Binding::Buf(buf));
        }
        if let Some(alias) = self.buffer_alias(e) {
            return Ok(alias);
        }
        if let Some(place) = self.place_binding(e)? {
            return Ok(place);
        }
        let v = self.lower_expr(e)?;
        if let Some(ty) = declared {
            let want = self.declared_ty(ty);
            if let Some(want) = want {
                if want != self.ty(v) {
                    return Err(syn::Error::new_spanned(
                        e,
                        format!(
                            "phidiff: this initializer is {}, but the `let` declares {}",
                            ty_word(self.ty(v)),
                            text(ty)
                        ),
                    ));
                }
            }
        }
        Ok(Binding::Scalar(v))
    }

    /// The buffer a `let` initializer names, moved or borrowed whole (`x`, `&x`, `&mut x`,
    /// `&mut *x`, `&x[..]`): the new name is another name for it (`let mut x = x;`).
    fn buffer_alias(&self, e: &Expr) -> Option<Binding> {
        match e {
            Expr::Paren(p) => self.buffer_alias(&p.expr),
            Expr::Group(g) => self.buffer_alias(&g.expr),
            Expr::Reference(r) => self.buffer_alias(&r.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.buffer_alias(&u.expr),
            Expr::Index(ix) if matches!(&*ix.index, Expr::Range(r) if r.start.is_none() && r.end.is_none()) => {
                self.buffer_alias(&ix.expr)
            }
            Expr::Path(p) if p.qself.is_none() => {
                let name = p.path.get_ident()?.to_string();
                match self.env.lookup(&name)? {
                    b @ (Binding::Buf(_) | Binding::Row { .. }) => Some(b),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The IR type of a declared Rust type, if it is a scalar one.
    pub(super) fn declared_ty(&self, ty: &syn::Type) -> Option<Ty> {
        let s = text(ty);
        let s = s.trim();
        match s {
            "f64" | "f32" => Some(Ty::Float),
            "bool" => Some(Ty::Bool),
            "usize" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "i8" | "i16" | "i32"
            | "i64" | "i128" => Some(Ty::Int),
            _ if self.float_generic.as_deref() == Some(s) => Some(Ty::Float),
            _ => None,
        }
    }

    /// A scalar expression.
    pub(super) fn lower_expr(&mut self, e: &Expr) -> LResult<Value> {
        let span = span_of(e);
        let saved = std::mem::replace(&mut self.tail_wanted, true);
        let r = self.with_span(span, |l| l.lower_expr_inner(e));
        self.tail_wanted = saved;
        r
    }

    fn lower_expr_inner(&mut self, e: &Expr) -> LResult<Value> {
        match e {
            Expr::Lit(l) => self.lower_lit(&l.lit),
            Expr::Paren(p) => self.lower_expr(&p.expr),
            Expr::Group(g) => self.lower_expr(&g.expr),
            Expr::Path(p) => self.lower_path_value(p),
            Expr::Unary(u) => {
                let a = self.lower_expr(&u.expr)?;
                match u.op {
                    syn::UnOp::Neg(_) => {
                        if self.ty(a) == Ty::Bool {
                            return Err(self.error(e, &text(e), "negation of a bool"));
                        }
                        Ok(self.b.neg(a))
                    }
                    syn::UnOp::Not(_) => {
                        self.expect_ty(a, Ty::Bool, &u.expr, "the operand of `!`")?;
                        Ok(self.b.not(a))
                    }
                    syn::UnOp::Deref(_) => Ok(a),
                    _ => Err(self.error(e, &text(e), "unknown unary operator")),
                }
            }
            Expr::Binary(b) => self.lower_binary(b),
            Expr::Index(ix) => {
                let (buf, idx) = self.lower_place(e, ix)?;
                Ok(self.b.load(buf, idx))
            }
            Expr::Cast(c) => self.lower_cast(c),
            Expr::If(i) => self.lower_if(i)?.ok_or_else(|| syn::Error::new_spanned(e, "phidiff: this `if` has no value")),
            Expr::Match(m) => {
                self.lower_match(m)?.ok_or_else(|| syn::Error::new_spanned(e, "phidiff: this `match` has no value"))
            }
            Expr::Block(b) if b.label.is_none() => self
                .lower_scoped_block(&b.block)?
                .ok_or_else(|| syn::Error::new_spanned(e, "phidiff: this block has no value")),
            Expr::MethodCall(m) => self.lower_method_value(m),
            Expr::Call(c) => self.lower_call_value(c),
            Expr::Reference(r) if matches!(&*r.expr, Expr::Index(ix) if matches!(&*ix.index, Expr::Range(_))) => Err(
                self.error(r, &text(r), "slicing with a range is not supported; index elements or pass the whole buffer"),
            ),
            Expr::Loop(l) => Err(self.error(l, "loop", "`loop` as a value (`break` with a value) is not supported")),
            // A shared borrow of a number is its value: nothing can write the number while
            // the borrow lives (`let r = &s;`, an inlined helper's `x: &f64`), and `*r`,
            // `r.sin()`, `r * 2.0` read it.
            Expr::Reference(r) if r.mutability.is_none() => match self.lower_expr(&r.expr) {
                Ok(v) => Ok(v),
                _ => Err(self.error(
                    r,
                    &text(r),
                    "references to buffers are not supported here (`&buffer` is allowed as a call argument)",
                )),
            },
            Expr::Reference(r) => Err(self.error(
                r,
                &text(r),
                "mutable references to scalars are not supported (write the variable itself; `&mut buffer` is allowed as a call argument)",
            )),
            Expr::Closure(c) => Err(self.error(c, "closure", "closures are supported only inside `.iter().map(..).sum()` and rayon's `.for_each(..)`; write its body inline where it is called, or make it a function annotated with `#[differentiate(forward, reverse)]`")),
            Expr::Tuple(t) => Err(self.error(t, &text(t), "tuples are not supported; use separate variables")),
            Expr::Field(f) => Err(self.error(f, &text(f), "field access is not supported; pass the fields as parameters")),
            Expr::Struct(s) => Err(self.error(s, &text(s), "struct literals are not supported")),
            Expr::Unsafe(u) => Err(self.error(u, "unsafe", "unsafe blocks are not supported")),
            Expr::Try(t) => Err(self.error(t, &text(t), "`?` is supported in functions returning `Option` or `Result`")),
            Expr::Array(a) => Err(self.error(a, &text(a), "array literals are not supported; use `vec![v; n]`")),
            Expr::Let(l) => Err(self.error(l, &text(l), "`if let`/`while let` are supported with `Some(v)` of `x.first()`, `x.last()` or `x.get(i)`")),
            Expr::Range(r) => Err(self.error(r, &text(r), "ranges are supported only as `for` loop iterators")),
            Expr::Macro(m) => match self.lower_internal_macro(&m.mac, true)? {
                Some(Some(v)) => Ok(v),
                Some(None) => Err(self.error(&m.mac, "the failure", "a function returning `Option<()>`/`Result<(), E>` fails as a statement")),
                None => Err(self.error(&m.mac, &format!("{}!", text(&m.mac.path)), "this macro is not supported as a value (supported: `vec!` in `let`, `assert!`)")),
            },
            Expr::Assign(_) | Expr::ForLoop(_) | Expr::While(_) => {
                Err(self.error(e, &text(e), "this expression has no value"))
            }
            Expr::Break(_) | Expr::Continue(_) | Expr::Return(_) => {
                Err(self.error(e, &text(e), "jumps are supported as statements, not inside expressions"))
            }
            _ => Err(self.error(e, &text(e), "this kind of expression is not supported")),
        }
    }

    fn lower_lit(&mut self, lit: &Lit) -> LResult<Value> {
        match lit {
            Lit::Float(f) => Ok(self.b.fconst(f.base10_parse::<f64>()?)),
            Lit::Int(i) => {
                let suffix = i.suffix();
                if matches!(suffix, "f64" | "f32") {
                    return Ok(self.b.fconst(i.base10_parse::<f64>()?));
                }
                Ok(self.b.iconst(i.base10_parse::<i128>()?))
            }
            Lit::Bool(b) => Ok(self.b.bconst(b.value)),
            other => Err(self.error(
                other,
                &text(other),
                "only numeric and bool literals are supported",
            )),
        }
    }

    fn lower_path_value(&mut self, p: &syn::ExprPath) -> LResult<Value> {
        // A constant of another module by its path (`phys::G`).
        if p.qself.is_none() && p.path.segments.len() > 1 {
            let joined = text(&p.path).replace(' ', "");
            if let Some(v) = self.named_constant(&joined, p)? {
                return Ok(v);
            }
        }
        if p.qself.is_none() && p.path.segments.len() == 1 {
            let name = p.path.segments[0].ident.to_string();
            match self.env.lookup(&name) {
                Some(Binding::Scalar(v)) => return Ok(v),
                Some(Binding::Elem(buf, idx)) => {
                    return Ok(self.b.load(buf, idx.as_slice().to_vec()))
                }
                Some(Binding::Buf(_) | Binding::Row { .. }) => {
                    return Err(self.error(p, &name, "a buffer is used where a scalar is expected"))
                }
                Some(Binding::Opaque) => {
                    return Err(self.error(
                        p,
                        &name,
                        "this parameter's type is not a float, integer or bool",
                    ))
                }
                Some(Binding::Uninit) => {
                    return Err(self.error(p, &name, "this variable is read before it is assigned"))
                }
                None => {}
            }
            if let Some(v) = self.named_constant(&name, p)? {
                return Ok(v);
            }
        }
        if let Some(c) = self.path_constant(&p.path) {
            return Ok(c);
        }
        Err(self.error(
            p,
            &text(p),
            "this name is not a local variable, a parameter or a constant phidiff can read (a `const` or `static` of this module, or one imported by `use` or named by its path from a module of this crate; `PI` and the other `std::f64::consts`; `f64::EPSILON`, `f64::MAX`, `usize::MAX`, ...); pass it as a parameter (one left out of `wrt(..)` stays constant)",
        ))
    }

    /// `f64::consts::PI`, `std::f64::consts::E`, `f64::EPSILON`, `usize::MAX`, ...
    pub(super) fn path_constant(&mut self, path: &syn::Path) -> Option<Value> {
        let segs = super::consts::path_names(path);
        let segs: Vec<&str> = segs
            .iter()
            .map(String::as_str)
            .skip_while(|s| *s == "std" || *s == "core")
            .collect();
        // `PI` after `use std::f64::consts::PI`, `consts::PI` after `use std::f64::consts`.
        if let [name] | ["consts", name] = segs.as_slice() {
            return consts::std_float(name).map(|c| self.b.fconst(c));
        }
        let (ty, name) = match segs.as_slice() {
            [ty, "consts", name] => (*ty, *name),
            [ty, name] => (*ty, *name),
            _ => return None,
        };
        let float_ty = ty == "f64" || ty == "f32" || self.float_generic.as_deref() == Some(ty);
        if float_ty {
            let c = match name {
                "PI" => std::f64::consts::PI,
                "TAU" => std::f64::consts::TAU,
                "E" => std::f64::consts::E,
                "SQRT_2" => std::f64::consts::SQRT_2,
                "FRAC_1_SQRT_2" => std::f64::consts::FRAC_1_SQRT_2,
                "LN_2" => std::f64::consts::LN_2,
                "LN_10" => std::f64::consts::LN_10,
                "LOG2_E" => std::f64::consts::LOG2_E,
                "LOG10_E" => std::f64::consts::LOG10_E,
                "FRAC_PI_2" => std::f64::consts::FRAC_PI_2,
                "FRAC_PI_3" => std::f64::consts::FRAC_PI_3,
                "FRAC_PI_4" => std::f64::consts::FRAC_PI_4,
                "FRAC_PI_6" => std::f64::consts::FRAC_PI_6,
                "FRAC_PI_8" => std::f64::consts::FRAC_PI_8,
                "FRAC_1_PI" => std::f64::consts::FRAC_1_PI,
                "FRAC_2_PI" => std::f64::consts::FRAC_2_PI,
                "FRAC_2_SQRT_PI" => std::f64::consts::FRAC_2_SQRT_PI,
                "EPSILON" if ty == "f32" => f32::EPSILON as f64,
                "EPSILON" => f64::EPSILON,
                "MAX" if ty == "f32" => f32::MAX as f64,
                "MAX" => f64::MAX,
                "MIN" if ty == "f32" => f32::MIN as f64,
                "MIN" => f64::MIN,
                "MIN_POSITIVE" if ty == "f32" => f32::MIN_POSITIVE as f64,
                "MIN_POSITIVE" => f64::MIN_POSITIVE,
                "INFINITY" => f64::INFINITY,
                "NEG_INFINITY" => f64::NEG_INFINITY,
                "NAN" => f64::NAN,
                _ => match consts::std_float(name) {
                    Some(c) => c,
                    None => return self.float_int_constant(ty, name),
                },
            };
            return Some(self.b.fconst(c));
        }
        let int = match (ty, name) {
            ("usize", "MIN") | ("u32", "MIN") | ("u64", "MIN") => 0,
            ("i32", "MIN") => i32::MIN as i128,
            ("i64", "MIN") => i64::MIN as i128,
            ("usize", "MAX") => usize::MAX as i128,
            ("u32", "MAX") => u32::MAX as i128,
            ("i32", "MAX") => i32::MAX as i128,
            ("i64", "MAX") => i64::MAX as i128,
            ("u64", "MAX") => u64::MAX as i128,
            _ => return None,
        };
        Some(self.b.iconst(int))
    }

    /// The integer associated constants of a float type (`f64::MAX_EXP`, `f64::DIGITS`).
    fn float_int_constant(&mut self, ty: &str, name: &str) -> Option<Value> {
        let f32_ty = ty == "f32";
        let c: i128 = match name {
            "MAX_EXP" if f32_ty => f32::MAX_EXP as i128,
            "MAX_EXP" => f64::MAX_EXP as i128,
            "MIN_EXP" if f32_ty => f32::MIN_EXP as i128,
            "MIN_EXP" => f64::MIN_EXP as i128,
            "MAX_10_EXP" if f32_ty => f32::MAX_10_EXP as i128,
            "MAX_10_EXP" => f64::MAX_10_EXP as i128,
            "MIN_10_EXP" if f32_ty => f32::MIN_10_EXP as i128,
            "MIN_10_EXP" => f64::MIN_10_EXP as i128,
            "MANTISSA_DIGITS" if f32_ty => f32::MANTISSA_DIGITS as i128,
            "MANTISSA_DIGITS" => f64::MANTISSA_DIGITS as i128,
            "DIGITS" if f32_ty => f32::DIGITS as i128,
            "DIGITS" => f64::DIGITS as i128,
            "RADIX" => 2,
            _ => return None,
        };
        Some(self.b.iconst(c))
    }

    fn lower_binary(&mut self, bin: &syn::ExprBinary) -> LResult<Value> {
        use syn::BinOp as B;
        if compound_op(&bin.op).is_some() {
            return Err(self.error(
                bin,
                &text(bin),
                "compound assignment is a statement, not a value",
            ));
        }
        let op = match bin.op {
            B::Add(_) => BinOp::Add,
            B::Sub(_) => BinOp::Sub,
            B::Mul(_) => BinOp::Mul,
            B::Div(_) => BinOp::Div,
            B::Rem(_) => BinOp::Rem,
            B::Lt(_) => BinOp::Lt,
            B::Le(_) => BinOp::Le,
            B::Gt(_) => BinOp::Gt,
            B::Ge(_) => BinOp::Ge,
            B::Eq(_) => BinOp::Eq,
            B::Ne(_) => BinOp::Ne,
            B::And(_) | B::Or(_) => return self.lower_short_circuit(bin),
            _ => {
                return Err(self.error(
                    bin.op,
                    &text(&bin.op),
                    "bitwise and shift operators are not supported",
                ))
            }
        };
        let a = self.lower_expr(&bin.left)?;
        let b = self.lower_expr(&bin.right)?;
        if self.ty(a) != self.ty(b) {
            return Err(syn::Error::new_spanned(
                bin,
                self.mixed_types_message(op.symbol(), (a, &bin.left), (b, &bin.right)),
            ));
        }
        if self.ty(a) == Ty::Bool && !matches!(op, BinOp::Eq | BinOp::Ne) {
            return Err(self.error(bin, &text(bin), "arithmetic on bools"));
        }
        if op == BinOp::Rem && self.ty(a) == Ty::Float {
            return Err(self.error(bin, &text(bin), "`%` on floats has no supported derivative"));
        }
        Ok(self.b.binary(op, a, b))
    }

    /// `a && b` / `a || b`: `b` runs only when needed (it may index out of bounds otherwise).
    fn lower_short_circuit(&mut self, bin: &syn::ExprBinary) -> LResult<Value> {
        let and = matches!(bin.op, syn::BinOp::And(_));
        let a = self.lower_expr(&bin.left)?;
        self.expect_ty(a, Ty::Bool, &bin.left, "an operand of `&&`/`||`")?;
        let rhs_block = self.b.func.new_block();
        let saved = self.b.block;
        self.b.block = rhs_block;
        let r = self.lower_expr(&bin.right);
        self.b.block = saved;
        let r = r?;
        self.expect_ty(r, Ty::Bool, &bin.right, "an operand of `&&`/`||`")?;
        if self
            .b
            .func
            .block(rhs_block)
            .insts
            .iter()
            .all(|&i| pure_cheap(&self.b.func.inst(i).kind))
        {
            // Nothing on the right can fail: evaluate it eagerly.
            let insts = std::mem::take(&mut self.b.func.blocks[rhs_block.index()].insts);
            self.b.func.blocks[self.b.block.index()].insts.extend(insts);
            let op = if and { BinOp::And } else { BinOp::Or };
            return Ok(self.b.binary(op, a, r));
        }
        let short_block = self.b.func.new_block();
        let short = self.b.in_block(short_block, |b| b.bconst(!and));
        self.b.set_yields(rhs_block, vec![r]);
        self.b.set_yields(short_block, vec![short]);
        let (then_blk, else_blk) = if and {
            (rhs_block, short_block)
        } else {
            (short_block, rhs_block)
        };
        let i = self.b.push(
            InstKind::If {
                cond: a,
                then_blk,
                else_blk,
            },
            &[Ty::Bool],
            None,
        );
        Ok(self.b.func.inst(i).results[0])
    }

    fn lower_cast(&mut self, c: &syn::ExprCast) -> LResult<Value> {
        let v = self.lower_expr(&c.expr)?;
        let to = self.declared_ty(&c.ty).ok_or_else(|| {
            self.error(
                &c.ty,
                &text(&c.ty),
                "casts are supported to integer and float primitive types",
            )
        })?;
        if to == Ty::Float && self.ty(v) != Ty::Bool {
            let prec = match text(&c.ty).trim() {
                "f32" => Some(Prec::F32),
                "f64" => Some(Prec::F64),
                _ => None,
            };
            return Ok(self.to_float(v, prec));
        }
        let int = match to {
            Ty::Int => IntTy::from_name(text(&c.ty).trim()),
            _ => None,
        };
        let float = None;
        Ok(self.b.value(
            InstKind::Cast {
                value: v,
                to,
                int,
                float,
            },
            to,
        ))
    }

    /// `a[i]` or `a[i][j]` as a place: the buffer and the index values.
    pub(super) fn lower_place(
        &mut self,
        whole: &Expr,
        ix: &syn::ExprIndex,
    ) -> LResult<(Buf, Vec<Value>)> {
        let mut indices = vec![&*ix.index];
        let mut base = &*ix.expr;
        while let Expr::Index(inner) = base {
            indices.push(&*inner.index);
            base = &*inner.expr;
        }
        indices.reverse();
        if let Some(Binding::Row {
            buf,
            outer,
            base: start,
            ..
        }) = self.view_binding(base)
        {
            // `row[j]`, `plane[j][k]`: the view's offset on its first index.
            let rank = self.view_rank(buf, outer);
            if indices.len() != rank {
                let what = if rank == 1 {
                    "a row is indexed once (`row[j]`)".to_string()
                } else {
                    format!(
                        "this view has {rank} dimensions and is indexed with {}",
                        indices.len()
                    )
                };
                return Err(self.error(whole, &text(whole), &what));
            }
            let mut idx = outer.as_slice().to_vec();
            for (k, i) in indices.into_iter().enumerate() {
                let mut v = self.lower_expr(i)?;
                self.expect_ty(v, Ty::Int, whole, "an index")?;
                if k == 0 {
                    v = self.b.add(start, v);
                }
                idx.push(v);
            }
            return Ok((buf, idx));
        }
        let buf = self.lower_buf_ref(base)?;
        let rank = self.b.func.buf(buf).rank as usize;
        if indices.len() != rank {
            return Err(self.error(
                whole,
                &text(whole),
                &format!(
                    "`{}` has {rank} dimension(s) but is indexed with {}",
                    text(base),
                    indices.len()
                ),
            ));
        }
        let mut idx = Vec::new();
        for i in indices {
            if let Expr::Range(_) = i {
                return Err(self.error(
                    i,
                    &text(i),
                    "slicing with a range is not supported; index elements",
                ));
            }
            let v = self.lower_expr(i)?;
            self.expect_ty(v, Ty::Int, i, "an index")?;
            idx.push(v);
        }
        Ok((buf, idx))
    }

    /// A buffer named by an expression: `x`, `&x`, `&mut x`, `(x)`.
    pub(super) fn lower_buf_ref(&mut self, e: &Expr) -> LResult<Buf> {
        match e {
            Expr::Reference(r) => self.lower_buf_ref(&r.expr),
            Expr::Paren(p) => self.lower_buf_ref(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.lower_buf_ref(&u.expr),
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                match self.env.lookup(&p.path.segments[0].ident.to_string()) {
                    Some(Binding::Buf(b)) => Ok(b),
                    Some(Binding::Row { .. }) => Err(self.error(
                        e,
                        &text(e),
                        "a row of `par_chunks_mut` is used by indexing (`row[j]`) and `row.len()` only",
                    )),
                    Some(_) => Err(self.error(e, &text(e), "expected a slice, array or Vec variable")),
                    None => Err(self.error(e, &text(e), UNKNOWN_BUFFER)),
                }
            }
            // A constant table by its path (`phys::TABLE`).
            Expr::Path(p) if p.qself.is_none() => {
                match self
                    .env
                    .lookup(&crate::diagnostics::source_text(&p.path).replace(' ', ""))
                {
                    Some(Binding::Buf(b)) => Ok(b),
                    _ => Err(self.error(e, &text(e), UNKNOWN_BUFFER)),
                }
            }
            Expr::Index(_) => Err(self.error(
                e,
                &text(e),
                "a row of a 2-D or 3-D buffer is a view (`let row = &m[i];`, `m[i].iter()`, `g(&t[i][j])`), and an element is read by all its indices (`m[i][j]`); this is neither",
            )),
            _ => Err(self.error(e, &text(e), "expected a slice, array or Vec variable")),
        }
    }

    fn lower_assign(
        &mut self,
        lhs: &Expr,
        rhs: &Expr,
        op: Option<BinOp>,
        whole: &Expr,
    ) -> LResult<()> {
        match lhs {
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.to_string();
                match self.env.lookup(&name) {
                    Some(Binding::Scalar(old)) => {
                        let r = self.lower_expr(rhs)?;
                        let new = match op {
                            None => r,
                            Some(op) => self.checked_binary(op, old, r, whole)?,
                        };
                        if self.ty(new) != self.ty(old) {
                            return Err(self.error(whole, &text(whole), "assignment changes the variable's type"));
                        }
                        self.env.assign(&name, Binding::Scalar(new));
                        Ok(())
                    }
                    Some(Binding::Uninit) if op.is_none() => {
                        let r = self.lower_expr(rhs)?;
                        self.env.assign(&name, Binding::Scalar(r));
                        Ok(())
                    }
                    Some(Binding::Elem(buf, idx)) => {
                        self.lower_store(buf, idx.as_slice().to_vec(), rhs, op, whole)
                    }
                    Some(Binding::Buf(_)) => {
                        Err(self.error(whole, &text(whole), "assigning a whole buffer is not supported; use `copy_from_slice` or `std::mem::swap`"))
                    }
                    _ => Err(self.error(lhs, &name, "assignment to an unknown variable")),
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                self.lower_assign(&u.expr, rhs, op, whole)
            }
            Expr::Index(ix) => {
                let (buf, idx) = self.lower_place(lhs, ix)?;
                self.lower_store(buf, idx, rhs, op, whole)
            }
            _ => Err(self.error(
                lhs,
                &text(lhs),
                "assignments go to variables or indexed elements",
            )),
        }
    }

    fn lower_store(
        &mut self,
        buf: Buf,
        idx: Vec<Value>,
        rhs: &Expr,
        op: Option<BinOp>,
        whole: &Expr,
    ) -> LResult<()> {
        let r = self.lower_expr(rhs)?;
        let elem = self.b.func.buf(buf).elem;
        if self.ty(r) != elem {
            return Err(self.error(
                whole,
                &text(whole),
                "the stored value's type differs from the buffer's elements",
            ));
        }
        match op {
            None => self.b.store(buf, idx, r),
            Some(BinOp::Add) => {
                self.b.stmt(InstKind::StoreAdd(buf, idx, r));
            }
            Some(BinOp::Sub) => {
                let n = self.b.neg(r);
                self.b.stmt(InstKind::StoreAdd(buf, idx, n));
            }
            Some(op) => {
                let old = self.b.load(buf, idx.clone());
                let new = self.checked_binary(op, old, r, whole)?;
                self.b.store(buf, idx, new);
            }
        }
        Ok(())
    }

    /// The message for a binary operation (`op` with `=` for compound assignments) whose
    /// operands have different types, with the conversion that fixes the usual case.
    fn mixed_types_message(&self, op: &str, a: (Value, &Expr), b: (Value, &Expr)) -> String {
        // A compound assignment is one expression: its operands are its two sides.
        let sides = |e: &Expr| match e {
            Expr::Binary(bin) if op.ends_with('=') => ((*bin.left).clone(), (*bin.right).clone()),
            other => (other.clone(), other.clone()),
        };
        let (a_expr, b_expr) = if op.ends_with('=') {
            sides(a.1)
        } else {
            (a.1.clone(), b.1.clone())
        };
        let (ta, tb) = (self.ty(a.0), self.ty(b.0));
        let head = format!("phidiff: `{op}` mixes {} and {}", ty_word(ta), ty_word(tb));
        let operand = |e: &Expr| match e {
            Expr::Path(_)
            | Expr::Lit(_)
            | Expr::Paren(_)
            | Expr::MethodCall(_)
            | Expr::Index(_) => text(e),
            other => format!("({})", text(other)),
        };
        let to_float = |e: &Expr| match (&self.float_generic, e) {
            (Some(t), Expr::Paren(p)) => format!("`{t}::from({}).unwrap()`", text(&p.expr)),
            (Some(t), _) => format!("`{t}::from({}).unwrap()`", text(e)),
            (None, _) => format!("`{} as {}`", operand(e), self.float_name),
        };
        match (ta, tb) {
            (Ty::Int, Ty::Float) if op.ends_with('=') => format!(
                "{head}: `{}` is an integer variable (started from an integer literal like `0` \
                 instead of `0.0`?); make it a float, e.g. `let mut {} = 0.0;`",
                text(&a_expr),
                text(&a_expr),
            ),
            (Ty::Float, Ty::Int) => format!(
                "{head}, and Rust does not convert between them; convert the integer: {}",
                to_float(&b_expr)
            ),
            (Ty::Int, Ty::Float) => format!(
                "{head}, and Rust does not convert between them; convert the integer: {}",
                to_float(&a_expr)
            ),
            _ => format!("{head}; Rust does not convert between them, convert one explicitly"),
        }
    }

    pub(super) fn checked_binary(
        &mut self,
        op: BinOp,
        a: Value,
        b: Value,
        at: &Expr,
    ) -> LResult<Value> {
        if self.ty(a) != self.ty(b) {
            return Err(syn::Error::new_spanned(
                at,
                self.mixed_types_message(&format!("{}=", op.symbol()), (a, at), (b, at)),
            ));
        }
        Ok(self.b.binary(op, a, b))
    }
}

pub(super) fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    match op {
        B::AddAssign(_) => Some(BinOp::Add),
        B::SubAssign(_) => Some(BinOp::Sub),
        B::MulAssign(_) => Some(BinOp::Mul),
        B::DivAssign(_) => Some(BinOp::Div),
        B::RemAssign(_) => Some(BinOp::Rem),
        _ => None,
    }
}

/// Instructions that cannot fail or have effects: safe to evaluate eagerly.
pub(super) fn pure_cheap(k: &InstKind) -> bool {
    matches!(
        k,
        InstKind::FConst(_)
            | InstKind::IConst(_)
            | InstKind::BConst(_)
            | InstKind::Param(_)
            | InstKind::Unary(..)
            | InstKind::Binary(
                BinOp::Lt
                    | BinOp::Le
                    | BinOp::Gt
                    | BinOp::Ge
                    | BinOp::Eq
                    | BinOp::Ne
                    | BinOp::And
                    | BinOp::Or,
                _,
                _
            )
            | InstKind::Len(..)
    )
}

/// `e` without parentheses and invisible groups.
pub(super) fn strip_group(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_group(&p.expr),
        Expr::Group(g) => strip_group(&g.expr),
        other => other,
    }
}

/// `e` without a leading `*` (`let [a, b] = *x;`).
/// Why a name used as a buffer is none phidiff knows.
const UNKNOWN_BUFFER: &str = "this name is not a buffer variable, a parameter or a constant table phidiff can read (a `const` or `static` of this module, or one it imports by `use` from a module of this crate); pass the table as a parameter (`w: &[f64]`)";

pub(super) fn strip_deref(e: &Expr) -> &Expr {
    match strip_group(e) {
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip_deref(&u.expr),
        other => other,
    }
}

/// `e` without a leading `&` (for a `&pat` pattern).
fn strip_ref(e: &Expr) -> Expr {
    match strip_group(e) {
        Expr::Reference(r) => (*r.expr).clone(),
        other => Expr::Unary(syn::ExprUnary {
            attrs: vec![],
            op: syn::UnOp::Deref(Default::default()),
            expr: Box::new(other.clone()),
        }),
    }
}

/// An array pattern's elements before a `..`, the `..` (if any), and those after it.
fn split_rest(sl: &syn::PatSlice) -> Option<(Vec<&syn::Pat>, Option<&syn::Pat>, Vec<&syn::Pat>)> {
    let mut before = Vec::new();
    let mut rest = None;
    let mut after = Vec::new();
    for p in &sl.elems {
        if matches!(p, syn::Pat::Rest(_)) {
            if rest.is_some() {
                return None;
            }
            rest = Some(p);
        } else if rest.is_some() {
            after.push(p);
        } else {
            before.push(p);
        }
    }
    Some((before, rest, after))
}

/// Whether a macro path is `panic`, `unreachable`, `unimplemented` or `todo`.
fn is_panic(p: &syn::Path) -> bool {
    p.segments.last().is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "panic" | "unreachable" | "unimplemented" | "todo"
        )
    })
}

/// `t`'s source text for an `assert!` message literal: no quotes, braces doubled.
pub(super) fn assert_text<T: ToTokens>(t: &T) -> String {
    text(t)
        .replace('"', "")
        .replace('{', "{{")
        .replace('}', "}}")
}

//! Control flow: `if`, `match`, loops, and the lowering of `break`/`continue`/`return`
//! to flags (every region stays single-entry single-exit).

use super::*;
use crate::parse::checkpoint::{self, SchemeKind};
use syn::visit::Visit;
use syn::{Expr, Stmt};

pub(super) use crate::desugar::scan::{scan_expr, scan_stmts};

pub(super) fn contains_return(stmts: &[Stmt]) -> bool {
    scan_stmts(stmts).ret
}

/// A statement that is itself a `return`, `break` or `continue`.
pub(super) fn is_jump(stmt: &Stmt) -> bool {
    matches!(
        stmt,
        Stmt::Expr(Expr::Return(_) | Expr::Break(_) | Expr::Continue(_), _)
    )
}

impl Lowerer<'_> {
    /// Whether control may leave the rest of the current block after `stmt`.
    pub(super) fn may_exit(&self, stmt: &Stmt) -> bool {
        let s = scan_stmts(std::slice::from_ref(stmt));
        s.ret || (!self.loops.is_empty() && (s.brk || s.cont))
    }

    /// The flag that says "skip the rest": return taken, or this loop broken/continued.
    fn skip_flag(&mut self) -> Option<Value> {
        let mut flags = Vec::new();
        if self.has_return {
            flags.extend(self.lookup_scalar(RET));
        }
        if let Some(ctx) = self.loops.last() {
            for name in ctx.brk.iter().chain(ctx.cont.iter()) {
                if let Some(v) = self.lookup_scalar(name) {
                    flags.push(v);
                }
            }
        }
        let mut it = flags.into_iter();
        let first = it.next()?;
        Some(it.fold(first, |acc, f| self.b.binary(BinOp::Or, acc, f)))
    }

    /// `rest` runs only if no jump was taken: `if !skip { rest }`.
    pub(super) fn guard_rest(&mut self, rest: &[Stmt]) -> LResult<Option<Value>> {
        let Some(skip) = self.skip_flag() else {
            return self.lower_block_stmts(rest);
        };
        let go = self.b.not(skip);
        self.branch(go, &mut |l| l.lower_block_stmts(rest), &mut |_| Ok(None))
    }

    pub(super) fn lower_jump(&mut self, e: &Expr) -> LResult<()> {
        match e {
            Expr::Return(r) => {
                if !self.has_return {
                    return Err(self.error(
                        r,
                        "return",
                        "`return` inside a closure is not supported",
                    ));
                }
                let failure = match &r.expr {
                    Some(x) => match &**x {
                        Expr::Macro(m) if m.mac.path.is_ident(crate::desugar::fallible::FAIL) => {
                            Some(m)
                        }
                        _ => None,
                    },
                    None => None,
                };
                if let Some(m) = failure {
                    self.lower_internal_macro(&m.mac, false)?;
                    let v = self.b.fconst(0.0);
                    self.set_return(v);
                    return Ok(());
                }
                let v = match (&r.expr, self.returns_float) {
                    (Some(x), true) => {
                        let v = self.lower_expr(x)?;
                        self.expect_ty(v, Ty::Float, x, "the returned value")?;
                        v
                    }
                    (None, false) => self.b.fconst(0.0),
                    (Some(x), false) => {
                        return Err(self.error(x, &text(x), "this function returns `()`"))
                    }
                    (None, true) => {
                        return Err(self.error(r, "return", "a float must be returned"))
                    }
                };
                self.set_return(v);
                Ok(())
            }
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return Err(self.error(
                        b,
                        &text(b),
                        "labeled `break` and `break` with a value are not supported",
                    ));
                }
                let Some(name) = self.loops.last().and_then(|c| c.brk.clone()) else {
                    return Err(self.error(b, "break", "`break` outside a loop"));
                };
                let t = self.b.bconst(true);
                self.env.assign(&name, Binding::Scalar(t));
                Ok(())
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    return Err(self.error(c, &text(c), "labeled `continue` is not supported"));
                }
                let Some(name) = self.loops.last().and_then(|c| c.cont.clone()) else {
                    return Err(self.error(c, "continue", "`continue` outside a loop"));
                };
                let t = self.b.bconst(true);
                self.env.assign(&name, Binding::Scalar(t));
                Ok(())
            }
            _ => unreachable!("lower_jump on a non-jump"),
        }
    }

    /// Two alternatives in their own blocks; variables they change become `if` results (φs).
    pub(super) fn branch(
        &mut self,
        cond: Value,
        then_f: &mut dyn FnMut(&mut Self) -> LResult<Option<Value>>,
        else_f: &mut dyn FnMut(&mut Self) -> LResult<Option<Value>>,
    ) -> LResult<Option<Value>> {
        let depth = self.env.depth();
        let before = self.env.clone();
        let saved_block = self.b.block;
        let run = |l: &mut Self, f: &mut dyn FnMut(&mut Self) -> LResult<Option<Value>>| {
            let blk = l.b.func.new_block();
            l.b.block = blk;
            l.env.push_scope();
            let v = f(l);
            l.env.truncate(depth);
            let env = std::mem::replace(&mut l.env, before.clone());
            (blk, v, env)
        };
        let (then_blk, tv, env_then) = run(self, then_f);
        let (else_blk, ev, env_else) = run(self, else_f);
        self.b.block = saved_block;
        let (tv, ev) = (tv?, ev?);
        let mut yields_t = Vec::new();
        let mut yields_e = Vec::new();
        let mut merged = Vec::new();
        for loc in before.locations(depth) {
            let (bt, be) = (env_then.get(loc), env_else.get(loc));
            if bt == be {
                self.env.set(loc, bt);
                continue;
            }
            match (bt, be) {
                (Binding::Scalar(a), Binding::Scalar(b)) => {
                    yields_t.push(a);
                    yields_e.push(b);
                    merged.push((loc, self.ty(a)));
                }
                // `let r;` assigned in one branch only: the other left the block (Rust
                // reads `r` only after an assignment), so any value of its type does.
                (Binding::Scalar(a), Binding::Uninit) => {
                    let ty = self.ty(a);
                    yields_t.push(a);
                    yields_e.push(self.b.in_block(else_blk, |b| b.zero(ty)));
                    merged.push((loc, ty));
                }
                (Binding::Uninit, Binding::Scalar(b)) => {
                    let ty = self.ty(b);
                    yields_t.push(self.b.in_block(then_blk, |b| b.zero(ty)));
                    yields_e.push(b);
                    merged.push((loc, ty));
                }
                _ => {
                    return Err(syn::Error::new(
                        self.b.span,
                        format!(
                            "phidiff: `{}` is rebound differently in the branches",
                            before.name(loc)
                        ),
                    ))
                }
            }
        }
        let mut tys: Vec<Ty> = merged.iter().map(|(_, t)| *t).collect();
        let value_ty = match (tv, ev) {
            (Some(a), Some(b)) if self.ty(a) != self.ty(b) => {
                return Err(syn::Error::new(
                    self.b.span,
                    "phidiff: the branches have values of different types",
                ))
            }
            (Some(a), _) => Some(self.ty(a)),
            (None, Some(b)) => Some(self.ty(b)),
            (None, None) => None,
        };
        if let Some(ty) = value_ty {
            let t = match tv {
                Some(v) => v,
                None => self.b.in_block(then_blk, |b| b.zero(ty)),
            };
            let e = match ev {
                Some(v) => v,
                None => self.b.in_block(else_blk, |b| b.zero(ty)),
            };
            yields_t.push(t);
            yields_e.push(e);
            tys.push(ty);
        }
        self.b.set_yields(then_blk, yields_t);
        self.b.set_yields(else_blk, yields_e);
        let inst = self.b.push(
            InstKind::If {
                cond,
                then_blk,
                else_blk,
            },
            &tys,
            None,
        );
        let results = self.b.func.inst(inst).results.clone();
        for ((loc, _), r) in merged.iter().zip(&results) {
            let name = before.name(*loc).to_string();
            if !name.starts_with('#') {
                self.b.func.values[r.index()].name = Some(name);
            }
            self.env.set(*loc, Binding::Scalar(*r));
        }
        Ok(value_ty.map(|_| *results.last().expect("value result")))
    }

    pub(super) fn lower_if(&mut self, e: &syn::ExprIf) -> LResult<Option<Value>> {
        let cond = self.lower_expr(&e.cond)?;
        self.expect_ty(cond, Ty::Bool, &e.cond, "an `if` condition")?;
        let span = span_of(e);
        self.with_span(span, |l| {
            l.branch(
                cond,
                &mut |l| l.lower_block_stmts(&e.then_branch.stmts),
                &mut |l| match &e.else_branch {
                    None => Ok(None),
                    Some((_, els)) => match &**els {
                        Expr::If(i) => l.lower_if(i),
                        Expr::Block(b) => l.lower_block_stmts(&b.block.stmts),
                        other => l.lower_value_or_unit_pub(other),
                    },
                },
            )
        })
    }

    /// An expression in tail position (a match arm, an `else` that is not a block).
    pub(super) fn lower_value_or_unit_pub(&mut self, e: &Expr) -> LResult<Option<Value>> {
        self.lower_block_stmts(&[Stmt::Expr(e.clone(), None)])
    }

    pub(super) fn lower_match(&mut self, m: &syn::ExprMatch) -> LResult<Option<Value>> {
        let scrut = self.lower_expr(&m.expr)?;
        if self.ty(scrut) == Ty::Float {
            return Err(self.error(
                &m.expr,
                &text(&m.expr),
                "`match` on a float is not supported; match on integers",
            ));
        }
        let span = span_of(m);
        self.with_span(span, |l| l.lower_arms(scrut, &m.arms))
    }

    fn lower_arms(&mut self, scrut: Value, arms: &[syn::Arm]) -> LResult<Option<Value>> {
        let Some((arm, rest)) = arms.split_first() else {
            return Ok(None);
        };
        let test = self.pattern_test(scrut, &arm.pat)?;
        let test = match (&arm.guard, test) {
            (Some((_, g)), t) => {
                // The guard sees the arm's binding (`k if k > n => ..`).
                let depth = self.env.depth();
                self.env.push_scope();
                if let Some(name) = pattern_binding(&arm.pat) {
                    self.env.bind(&name, Binding::Scalar(scrut));
                }
                let gv = self.lower_expr(g);
                self.env.truncate(depth);
                let gv = gv?;
                self.expect_ty(gv, Ty::Bool, g, "a match guard")?;
                Some(match t {
                    Some(t) => self.b.binary(BinOp::And, t, gv),
                    None => gv,
                })
            }
            (None, t) => t,
        };
        let body = |l: &mut Self| -> LResult<Option<Value>> {
            if let Some(name) = pattern_binding(&arm.pat) {
                l.env.bind(&name, Binding::Scalar(scrut));
            }
            l.lower_value_or_unit_pub(&arm.body)
        };
        match test {
            // An irrefutable arm (`_`, a binding) ends the chain.
            None => {
                let depth = self.env.depth();
                self.env.push_scope();
                let r = body(self);
                self.env.truncate(depth);
                r
            }
            Some(t) if rest.is_empty() => {
                // The last arm: rustc proved the match exhaustive, so it is the else.
                let _ = t;
                let depth = self.env.depth();
                self.env.push_scope();
                let r = body(self);
                self.env.truncate(depth);
                r
            }
            Some(t) => self.branch(t, &mut |l| body(l), &mut |l| l.lower_arms(scrut, rest)),
        }
    }

    /// The condition under which `pat` matches `scrut`; None when it always matches.
    fn pattern_test(&mut self, scrut: Value, pat: &syn::Pat) -> LResult<Option<Value>> {
        use syn::Pat;
        match pat {
            Pat::Wild(_) => Ok(None),
            Pat::Ident(pi) if pi.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase()) => Err(self.error(
                pi,
                &pi.ident.to_string(),
                "constants in match patterns are not supported (phidiff does not see the constant's value); write the value (`3 => ..`), or pass it as a parameter and use a guard (`k if k == limit => ..`)",
            )),
            Pat::Ident(pi) if pi.subpat.is_none() => Ok(None),
            Pat::Lit(l) => {
                let v = self.lower_expr(&Expr::Lit(l.clone()))?;
                if self.ty(v) != self.ty(scrut) {
                    return Err(self.error(
                        l,
                        &text(l),
                        "pattern type differs from the matched value",
                    ));
                }
                Ok(Some(self.b.binary(BinOp::Eq, scrut, v)))
            }
            Pat::Or(o) => {
                let mut acc: Option<Value> = None;
                for case in &o.cases {
                    match self.pattern_test(scrut, case)? {
                        None => return Ok(None),
                        Some(t) => {
                            acc = Some(match acc {
                                None => t,
                                Some(a) => self.b.binary(BinOp::Or, a, t),
                            })
                        }
                    }
                }
                Ok(acc)
            }
            Pat::Range(r) => {
                let lo = r.start.as_ref().map(|s| self.lower_expr(s)).transpose()?;
                let hi = r.end.as_ref().map(|s| self.lower_expr(s)).transpose()?;
                let mut acc = None;
                if let Some(lo) = lo {
                    acc = Some(self.b.binary(BinOp::Ge, scrut, lo));
                }
                if let Some(hi) = hi {
                    let op = match r.limits {
                        syn::RangeLimits::Closed(_) => BinOp::Le,
                        syn::RangeLimits::HalfOpen(_) => BinOp::Lt,
                    };
                    let t = self.b.binary(op, scrut, hi);
                    acc = Some(match acc {
                        None => t,
                        Some(a) => self.b.binary(BinOp::And, a, t),
                    });
                }
                Ok(acc)
            }
            Pat::Paren(p) => self.pattern_test(scrut, &p.pat),
            other => Err(self.error(
                other,
                &text(other),
                "match patterns may be integer literals, ranges, `|` alternatives, `_` or a name",
            )),
        }
    }

    /// Shared loop lowering: header φs for the variables the body assigns, flags for jumps.
    /// `bind` binds the loop variables at the start of each iteration.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lower_loop_body<'e>(
        &mut self,
        attrs: &[syn::Attribute],
        label: Option<&syn::Label>,
        body: &syn::Block,
        cond: Option<&'e Expr>,
        make: &mut dyn FnMut(&mut Self) -> LResult<LoopHead<'e>>,
        bind: &mut dyn FnMut(&mut Self, Option<Value>) -> LResult<()>,
    ) -> LResult<()> {
        if let Some(l) = label {
            return Err(self.error(l, &text(l), "labeled loops are not supported"));
        }
        let checkpoint = self.checkpoint_spec(attrs)?;
        let mut scan = scan_stmts(&body.stmts);
        if let Some(c) = cond {
            scan.visit_expr(c);
        }
        let brk = scan.brk.then(|| self.fresh_flag("brk"));
        let cont = scan.cont.then(|| self.fresh_flag("cont"));
        if let Some(name) = &brk {
            let f = self.b.bconst(false);
            self.env.bind(name, Binding::Scalar(f));
        }
        let head = make(self)?;
        // Carried: outer scalars the body assigns, plus the flags that leave the loop.
        let mut names: Vec<String> = scan.assigned.clone();
        names.extend(brk.clone());
        if scan.ret {
            names.push(RET.to_string());
            if self.returns_float {
                names.push(RETVAL.to_string());
            }
        }
        let mut locs = Vec::new();
        for n in &names {
            if let Some(loc) = self.env.locate(n) {
                if matches!(self.env.get(loc), Binding::Scalar(_)) && !locs.contains(&loc) {
                    locs.push(loc);
                }
            }
        }
        let inst = self.b.reserve();
        let mut params = Vec::new();
        let mut inits = Vec::new();
        for (k, &loc) in locs.iter().enumerate() {
            let Binding::Scalar(init) = self.env.get(loc) else {
                unreachable!()
            };
            let name = self.env.name(loc).to_string();
            let p = self.b.func.new_value(
                self.ty(init),
                ValueDef::LoopParam(inst, k as u32),
                (!name.starts_with('#')).then_some(name),
            );
            self.env.set(loc, Binding::Scalar(p));
            params.push(p);
            inits.push(init);
        }
        let exit: Vec<Value> = locs
            .iter()
            .zip(&params)
            .filter(|(loc, _)| {
                let n = self.env.name(**loc);
                Some(n) == brk.as_deref() || n == RET
            })
            .map(|(_, p)| *p)
            .collect();
        let index = match &head {
            LoopHead::Range(_) => Some(self.b.func.new_value(
                Ty::Int,
                ValueDef::LoopIndex(inst),
                None,
            )),
            _ => None,
        };
        let depth = self.env.depth();
        let saved_block = self.b.block;
        // Condition block (while).
        let cond_blk = self.b.func.new_block();
        if let LoopHead::While(c) = &head {
            self.b.block = cond_blk;
            let r = self.lower_expr(c);
            self.b.block = saved_block;
            let c_v = r?;
            self.expect_ty(c_v, Ty::Bool, *c, "a `while` condition")?;
            self.b.set_yields(cond_blk, vec![c_v]);
        } else if let LoopHead::Infinite = &head {
            let t = self.b.in_block(cond_blk, |b| b.bconst(true));
            self.b.set_yields(cond_blk, vec![t]);
        }
        let body_blk = self.b.func.new_block();
        self.b.block = body_blk;
        self.env.push_scope();
        self.loops.push(LoopCtx {
            brk: brk.clone(),
            cont: cont.clone(),
        });
        let saved_tail = std::mem::replace(&mut self.tail_wanted, false);
        let r = (|| {
            if let Some(name) = &cont {
                let f = self.b.bconst(false);
                self.env.bind(name, Binding::Scalar(f));
            }
            bind(self, index)?;
            self.lower_block_stmts(&body.stmts)
        })();
        self.tail_wanted = saved_tail;
        self.loops.pop();
        self.env.truncate(depth);
        self.b.block = saved_block;
        r?;
        let nexts: Vec<Value> = locs
            .iter()
            .map(|&loc| match self.env.get(loc) {
                Binding::Scalar(v) => v,
                _ => unreachable!(),
            })
            .collect();
        self.b.set_yields(body_blk, nexts);
        let kind = match head {
            LoopHead::Range(range) => InstKind::For {
                range,
                index: index.expect("range loops have an index"),
                params: params.clone(),
                inits,
                body: body_blk,
                exit,
            },
            LoopHead::While(_) | LoopHead::Infinite => InstKind::While {
                cond: cond_blk,
                params: params.clone(),
                inits,
                body: body_blk,
                exit,
            },
        };
        let mut results = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let name = self.b.func.value(*p).name.clone();
            results.push(self.b.func.new_value(
                self.ty(*p),
                ValueDef::Result(inst, k as u32),
                name,
            ));
        }
        results.push(self.b.func.new_value(
            Ty::Int,
            ValueDef::Result(inst, params.len() as u32),
            None,
        ));
        self.b.finish(inst, kind, results.clone());
        if let Some(spec) = checkpoint {
            self.b.func.checkpoints.insert(inst, spec);
        }
        for (loc, r) in locs.iter().zip(results) {
            self.env.set(*loc, Binding::Scalar(r));
        }
        Ok(())
    }

    /// The loop's `#[checkpoint(...)]`, its count lowered before the loop.
    fn checkpoint_spec(&mut self, attrs: &[syn::Attribute]) -> LResult<Option<CheckpointSpec>> {
        let Some(parsed) = checkpoint::parse(attrs)? else {
            return Ok(None);
        };
        if !self.loops.is_empty() || self.b.block != self.b.func.body {
            return Err(syn::Error::new_spanned(
                &parsed.attr,
                "phidiff: a checkpointed loop must be a statement of the function body itself \
                 (not inside another loop or a branch, nor after an early `return`)",
            ));
        }
        let n = self.lower_expr(&parsed.count)?;
        self.expect_ty(n, Ty::Int, &parsed.count, "a snapshot count or period")?;
        let scheme = match parsed.scheme {
            SchemeKind::Revolve => CkScheme::Revolve(n),
            SchemeKind::Periodic => CkScheme::Periodic(n),
            SchemeKind::Online => CkScheme::Online(n),
        };
        Ok(Some(CheckpointSpec {
            scheme,
            disk: parsed.disk,
            attr: quote::ToTokens::to_token_stream(&parsed.attr),
        }))
    }

    pub(super) fn lower_while(&mut self, w: &syn::ExprWhile) -> LResult<()> {
        let span = span_of(w);
        self.with_span(span, |l| {
            l.lower_loop_body(
                &w.attrs,
                w.label.as_ref(),
                &w.body,
                Some(&w.cond),
                &mut |_| Ok(LoopHead::While(&w.cond)),
                &mut |_, _| Ok(()),
            )
        })
    }

    pub(super) fn lower_loop(&mut self, lp: &syn::ExprLoop) -> LResult<()> {
        let span = span_of(lp);
        self.with_span(span, |l| {
            l.lower_loop_body(
                &lp.attrs,
                lp.label.as_ref(),
                &lp.body,
                None,
                &mut |_| Ok(LoopHead::Infinite),
                &mut |_, _| Ok(()),
            )
        })
    }
}

pub(super) enum LoopHead<'e> {
    Range(RangeSpec),
    While(&'e Expr),
    Infinite,
}

fn pattern_binding(p: &syn::Pat) -> Option<String> {
    match p {
        syn::Pat::Ident(pi) if pi.subpat.is_none() => Some(pi.ident.to_string()),
        _ => None,
    }
}

//! `for` loops over ranges and buffer iterators, and the reductions
//! `x.iter().sum()` / `x.iter().map(|v| ..).sum()`, all lowered to counted loops.

use super::control::LoopHead;
use super::*;
use syn::Expr;

/// What a `for` loop walks.
enum Source {
    Range {
        start: Expr,
        end: Expr,
        inclusive: bool,
    },
    /// `x.iter()` / `x.iter_mut()` (`mutable`), possibly zipped with more buffers.
    Bufs { bufs: Vec<(Buf, bool)> },
    /// `x.par_chunks_mut(w)` / `x.chunks(w)`: the rows of `w` elements of a flat buffer
    /// (the last one shorter if `w` does not divide the length). `width` is lowered
    /// before the loop.
    Rows {
        buf: Buf,
        width: Expr,
        /// The width and the buffer's length, lowered before the loop.
        value: Option<(Value, Value)>,
    },
}

struct Chain {
    source: Source,
    rev: bool,
    step: Option<Expr>,
    enumerate: bool,
    /// A rayon parallel iterator (`x.par_iter()`, `(a..b).into_par_iter()`), with the span
    /// of the call that made it parallel.
    parallel: Option<proc_macro2::Span>,
}

/// The iterators a `for` loop (or a rayon chain) may walk, for error messages.
const SUPPORTED_ITERATORS: &str = "a `for` loop walks a range (`a..b`, `a..=b`, with \
     `.rev()` and `.step_by(k)`), `x.iter()`, `x.iter_mut()`, `x.chunks(w)` or \
     `x.chunks_mut(w)`, with `.enumerate()` and `.zip(..)`";

/// Why the iterator method `m` cannot be walked, and the index loop that replaces it.
fn unsupported_iterator(m: &syn::ExprMethodCall) -> String {
    let method = m.method.to_string();
    // The buffer the chain starts from (`x` in `x.iter().skip(1)`), when it is a name.
    let mut root = &*m.receiver;
    while let Expr::MethodCall(inner) = root {
        root = &inner.receiver;
    }
    let buf = match root {
        Expr::Path(p) if p.path.get_ident().is_some() => text(p),
        _ => {
            return format!(
                "`.{method}(..)` is not an iterator phidiff differentiates \
                 ({SUPPORTED_ITERATORS}); loop over an index range (`for i in a..b`) and index \
                 the buffers instead"
            )
        }
    };
    let index_loop = match (method.as_str(), m.args.first()) {
        (
            "windows",
            Some(Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(k),
                ..
            })),
        ) if k.base10_parse::<usize>().is_ok_and(|k| k >= 2) => {
            let k: usize = k.base10_parse().unwrap_or(2);
            let reads = match k {
                2 => format!("`{buf}[i]` and `{buf}[i + 1]`"),
                3 => format!("`{buf}[i]`, `{buf}[i + 1]` and `{buf}[i + 2]`"),
                _ => format!("`{buf}[i]` .. `{buf}[i + {}]`", k - 1),
            };
            format!("`for i in 0..{buf}.len() - {}` reading {reads}", k - 1)
        }
        _ => format!("`for i in 0..{buf}.len()` reading `{buf}[i]`"),
    };
    format!(
        "`.{method}(..)` is not an iterator phidiff differentiates ({SUPPORTED_ITERATORS}); \
         loop over indices instead: {index_loop}"
    )
}

/// The first assignment (`=` or a compound `+=`, ...) to the variable `name` in `body`.
fn assignment_to(body: &Expr, name: &str) -> Option<Expr> {
    use syn::visit::Visit;
    struct Find<'n> {
        name: &'n str,
        found: Option<Expr>,
    }
    impl<'ast> Visit<'ast> for Find<'_> {
        fn visit_expr(&mut self, e: &'ast Expr) {
            if self.found.is_some() {
                return;
            }
            let target = match e {
                Expr::Assign(a) => Some(&*a.left),
                Expr::Binary(b) if super::expr::compound_op(&b.op).is_some() => Some(&*b.left),
                _ => None,
            };
            if target.is_some_and(|t| matches!(t, Expr::Path(p) if p.path.is_ident(self.name))) {
                self.found = Some(e.clone());
                return;
            }
            syn::visit::visit_expr(self, e);
        }
    }
    let mut find = Find { name, found: None };
    find.visit_expr(body);
    find.found
}

impl Lowerer<'_> {
    fn parse_chain(&mut self, e: &Expr) -> LResult<Chain> {
        match e {
            Expr::Paren(p) => self.parse_chain(&p.expr),
            Expr::Range(r) => {
                let (Some(start), Some(end)) = (&r.start, &r.end) else {
                    return Err(self.error(r, &text(r), "`for` ranges need both bounds"));
                };
                Ok(Chain {
                    source: Source::Range {
                        start: (**start).clone(),
                        end: (**end).clone(),
                        inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                    },
                    rev: false,
                    step: None,
                    enumerate: false,
                    parallel: None,
                })
            }
            Expr::MethodCall(m) => {
                let method = m.method.to_string();
                match method.as_str() {
                    "par_iter" | "par_iter_mut" if m.args.is_empty() => {
                        let buf = self.lower_buf_ref(&m.receiver)?;
                        Ok(Chain {
                            source: Source::Bufs {
                                bufs: vec![(buf, method == "par_iter_mut")],
                            },
                            rev: false,
                            step: None,
                            enumerate: false,
                            parallel: Some(m.method.span()),
                        })
                    }
                    "into_par_iter" if m.args.is_empty() => {
                        let mut c = self.parse_chain(&m.receiver)?;
                        if !matches!(c.source, Source::Range { .. }) || c.rev || c.step.is_some() || c.enumerate {
                            return Err(self.error(m, &text(m), "`.into_par_iter()` is supported on a range `(a..b)`; for a buffer write `x.par_iter()`"));
                        }
                        c.parallel = Some(m.method.span());
                        Ok(c)
                    }
                    "par_chunks" | "par_chunks_mut" | "chunks" | "chunks_mut" if m.args.len() == 1 => {
                        let buf = self.lower_buf_ref(&m.receiver)?;
                        if self.b.func.buf(buf).rank != 1 {
                            return Err(self.error(m, &text(m), "rows of a flat buffer: `x.par_chunks_mut(w)` on a 1-D buffer"));
                        }
                        Ok(Chain {
                            source: Source::Rows {
                                buf,
                                width: m.args[0].clone(),
                                value: None,
                            },
                            rev: false,
                            step: None,
                            enumerate: false,
                            parallel: method.starts_with("par_").then(|| m.method.span()),
                        })
                    }
                    "par_bridge" | "par_windows" | "par_split" | "par_chunks_exact" | "par_chunks_exact_mut" => Err(self.error(
                        m,
                        &text(m),
                        "this rayon form is not supported yet; the parallel forms are `(a..b).into_par_iter()`, `x.par_iter()`, `x.par_iter_mut()`, `x.par_chunks_mut(w)` with `.enumerate()`, `.zip(..)`, then `.for_each(..)` or `.map(..).sum()`",
                    )),
                    "iter" | "iter_mut" | "into_iter" if m.args.is_empty() => {
                        let buf = self.lower_buf_ref(&m.receiver)?;
                        Ok(Chain {
                            source: Source::Bufs { bufs: vec![(buf, method == "iter_mut")] },
                            rev: false,
                            step: None,
                            enumerate: false,
                            parallel: None,
                        })
                    }
                    "rev" if m.args.is_empty() => {
                        let mut c = self.parse_chain(&m.receiver)?;
                        if c.parallel.is_some() {
                            return Err(self.error(m, &text(m), "a parallel iterator has no order to reverse; drop `.rev()`"));
                        }
                        if c.step.is_some() || c.enumerate {
                            return Err(self.error(m, &text(m), "`.rev()` is supported directly on a range or iterator (write `(a..b).rev().step_by(s)`)"));
                        }
                        c.rev = true;
                        Ok(c)
                    }
                    "step_by" if m.args.len() == 1 => {
                        let mut c = self.parse_chain(&m.receiver)?;
                        if c.parallel.is_some() {
                            return Err(self.error(m, &text(m), "`.step_by` on a parallel iterator is not supported; iterate over `(0..count).into_par_iter()` and compute the index"));
                        }
                        if c.step.is_some() || c.enumerate {
                            return Err(self.error(m, &text(m), "`.step_by` is supported once, on a range"));
                        }
                        c.step = Some(m.args[0].clone());
                        Ok(c)
                    }
                    "enumerate" if m.args.is_empty() => {
                        let mut c = self.parse_chain(&m.receiver)?;
                        if c.enumerate {
                            return Err(self.error(m, &text(m), "nested `.enumerate()`"));
                        }
                        c.enumerate = true;
                        Ok(c)
                    }
                    "zip" if m.args.len() == 1 => {
                        let mut c = self.parse_chain(&m.receiver)?;
                        let other = self.parse_chain(&m.args[0]).or_else(|_| {
                            self.lower_buf_ref(&m.args[0]).map(|b| Chain {
                                source: Source::Bufs { bufs: vec![(b, false)] },
                                rev: false,
                                step: None,
                                enumerate: false,
                                parallel: None,
                            })
                        })?;
                        if c.parallel.is_some() != other.parallel.is_some() && other.parallel.is_some() {
                            return Err(self.error(&m.args[0], &text(&m.args[0]), "zip a parallel iterator with parallel iterators (`x.par_iter().zip(y.par_iter())`)"));
                        }
                        match (&mut c.source, other.source) {
                            (Source::Bufs { bufs }, Source::Bufs { bufs: more })
                                if !c.rev && c.step.is_none() && !c.enumerate && !other.rev && !other.enumerate =>
                            {
                                bufs.extend(more);
                                Ok(c)
                            }
                            _ => Err(self.error(m, &text(m), "`.zip` is supported between buffer iterators (`x.iter().zip(y.iter())`); to pair indices with elements, write `for (i, v) in x.iter().enumerate()`")),
                        }
                    }
                    _ => Err(self.error(m, &text(m), &unsupported_iterator(m))),
                }
            }
            _ => Err(self.error(
                e,
                &text(e),
                &format!("this is not an iterator phidiff differentiates; {SUPPORTED_ITERATORS}"),
            )),
        }
    }

    fn range_of(&mut self, chain: &Chain) -> LResult<RangeSpec> {
        let (start, end) = match &chain.source {
            Source::Range {
                start,
                end,
                inclusive,
            } => {
                let s = self.lower_expr(start)?;
                self.expect_ty(s, Ty::Int, start, "a range bound")?;
                let mut e = self.lower_expr(end)?;
                self.expect_ty(e, Ty::Int, end, "a range bound")?;
                if *inclusive {
                    let one = self.b.iconst(1);
                    e = self.b.add(e, one);
                }
                (s, e)
            }
            Source::Rows { value, .. } => {
                // ⌈len / w⌉ rows.
                let (w, len) = value.expect("the width is lowered before the loop");
                let t = self.b.add(len, w);
                let one = self.b.iconst(1);
                let t = self.b.sub(t, one);
                (self.b.iconst(0), self.b.div(t, w))
            }
            Source::Bufs { bufs } => {
                let s = self.b.iconst(0);
                let mut len = self.b.value(InstKind::Len(bufs[0].0, vec![]), Ty::Int);
                for (b, _) in &bufs[1..] {
                    let l2 = self.b.value(InstKind::Len(*b, vec![]), Ty::Int);
                    len = self.min_int(len, l2);
                }
                (s, len)
            }
        };
        let step = match &chain.step {
            None => None,
            Some(e) => {
                let v = self.lower_expr(e)?;
                self.expect_ty(v, Ty::Int, e, "a step")?;
                Some(v)
            }
        };
        Ok(RangeSpec {
            start,
            end,
            step,
            rev: chain.rev,
        })
    }

    /// Lowers the row width of a `chunks` chain before its loop, once.
    fn prepare_chain(&mut self, chain: &mut Chain) -> LResult<()> {
        if let Source::Rows { buf, width, value } = &mut chain.source {
            let w = width.clone();
            let v = self.lower_expr(&w)?;
            self.expect_ty(v, Ty::Int, &w, "a row width")?;
            let len = self.b.value(InstKind::Len(*buf, vec![]), Ty::Int);
            *value = Some((v, len));
        }
        Ok(())
    }

    /// `a.min(b)` on integers.
    pub(super) fn min_int(&mut self, a: Value, b: Value) -> Value {
        let c = self.b.binary(BinOp::Le, a, b);
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

    pub(super) fn lower_for(&mut self, f: &syn::ExprForLoop) -> LResult<()> {
        if let Some(desugared) = self.desugarer().desugar_for(f)? {
            return self.lower_effect(&desugared);
        }
        let mut chain = self.parse_chain(&f.expr)?;
        self.prepare_chain(&mut chain)?;
        if chain.parallel.is_some() {
            return Err(self.error(&f.expr, &text(&f.expr), "a `for` loop runs serially; a parallel iterator is consumed with `.for_each(..)` or `.map(..).sum()`"));
        }
        let span = span_of(f);
        let pat = &*f.pat;
        self.with_span(span, |l| {
            l.lower_loop_body(
                &f.attrs,
                f.label.as_ref(),
                &f.body,
                None,
                &mut |l| Ok(LoopHead::Range(l.range_of(&chain)?)),
                &mut |l, index| {
                    let index = index.expect("for loops have an index");
                    l.bind_for_pattern(pat, &chain, index)
                },
            )
        })
    }

    /// Binds the `for` pattern: the index, or elements of the iterated buffers.
    fn bind_for_pattern(&mut self, pat: &syn::Pat, chain: &Chain, index: Value) -> LResult<()> {
        let (index_pat, elem_pat) = match (&chain.source, chain.enumerate) {
            (Source::Range { .. }, false) => (Some(pat), None),
            (Source::Range { .. }, true) => {
                let (a, b) =
                    tuple2(pat).ok_or_else(|| self.error(pat, &text(pat), "expected `(i, x)`"))?;
                (Some(a), Some(b))
            }
            (Source::Bufs { .. } | Source::Rows { .. }, false) => (None, Some(pat)),
            (Source::Bufs { .. } | Source::Rows { .. }, true) => {
                let (a, b) =
                    tuple2(pat).ok_or_else(|| self.error(pat, &text(pat), "expected `(i, x)`"))?;
                (Some(a), Some(b))
            }
        };
        if let Some(p) = index_pat {
            self.bind_name(p, Binding::Scalar(index))?;
        }
        if let Some(p) = elem_pat {
            match &chain.source {
                Source::Range { .. } => self.bind_name(p, Binding::Scalar(index))?,
                Source::Rows { buf, value, .. } => {
                    // Row `index`: elements [index·w, min((index + 1)·w, len)).
                    let (w, len) = value.expect("the width is lowered before the loop");
                    let base = self.b.mul(index, w);
                    let rest = self.b.sub(len, base);
                    let len = self.min_int(w, rest);
                    self.bind_name(
                        p,
                        Binding::Row {
                            buf: *buf,
                            mutable: true,
                            outer: Indices::NONE,
                            base,
                            len,
                        },
                    )?
                }
                Source::Bufs { bufs } => {
                    let pats: Vec<&syn::Pat> = if bufs.len() == 1 {
                        vec![p]
                    } else {
                        let t = tuple_n(p).ok_or_else(|| {
                            self.error(p, &text(p), "expected a tuple pattern for `.zip`")
                        })?;
                        if t.len() != bufs.len() {
                            return Err(self.error(
                                p,
                                &text(p),
                                "the tuple pattern does not match the zipped iterators",
                            ));
                        }
                        t
                    };
                    for (p, (buf, mutable)) in pats.into_iter().zip(bufs.clone()) {
                        if self.b.func.buf(buf).rank >= 2 {
                            // A row of a 2-D buffer, a plane of a 3-D one: a view of it.
                            let len = self.b.value(InstKind::Len(buf, vec![index]), Ty::Int);
                            let base = self.b.iconst(0);
                            let row = Binding::Row {
                                buf,
                                mutable,
                                outer: Indices::of(&[index]),
                                base,
                                len,
                            };
                            self.bind_name(p, row)?;
                        } else if mutable {
                            self.bind_name(p, Binding::Elem(buf, Indices::of(&[index])))?;
                        } else {
                            let v = self.b.load(buf, vec![index]);
                            self.bind_name(p, Binding::Scalar(v))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn bind_name(&mut self, p: &syn::Pat, b: Binding) -> LResult<()> {
        match p {
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Ident(pi) if pi.subpat.is_none() => {
                if let Binding::Scalar(v) = b {
                    if self.b.func.values[v.index()].name.is_none() {
                        self.b.func.values[v.index()].name = Some(pi.ident.to_string());
                    }
                }
                self.env.bind(&pi.ident.to_string(), b);
                Ok(())
            }
            syn::Pat::Reference(r) => self.bind_name(&r.pat, b),
            syn::Pat::Paren(pp) => self.bind_name(&pp.pat, b),
            other => Err(self.error(other, &text(other), "loop patterns bind plain names")),
        }
    }

    /// `x.iter().sum()`, `x.iter().map(|v| e).sum()`, `(a..b).map(|i| e).sum()`,
    /// `x.iter().zip(y.iter()).map(|(a, b)| e).sum()`: a loop with one carried accumulator.
    pub(super) fn lower_sum(&mut self, m: &syn::ExprMethodCall) -> LResult<Value> {
        let (chain_expr, closure) = match &*m.receiver {
            Expr::MethodCall(inner) if inner.method == "map" && inner.args.len() == 1 => {
                match &inner.args[0] {
                    Expr::Closure(c) => (&*inner.receiver, Some(c)),
                    other => {
                        return Err(self.error(other, &text(other), "`.map` takes a closure here"))
                    }
                }
            }
            other => (other, None),
        };
        let mut chain = self.parse_chain(chain_expr)?;
        self.prepare_chain(&mut chain)?;
        if closure.is_none() {
            if let Source::Bufs { bufs } = &chain.source {
                if self.b.func.buf(bufs[0].0).elem != Ty::Float || bufs.len() > 1 {
                    return Err(self.error(
                        m,
                        &text(m),
                        "`.sum()` without `.map` sums one float buffer",
                    ));
                }
            }
        }
        let range = self.range_of(&chain)?;
        let zero = self.b.fconst(0.0);
        let inst = self.b.reserve();
        let acc =
            self.b
                .func
                .new_value(Ty::Float, ValueDef::LoopParam(inst, 0), Some("sum".into()));
        let index = self
            .b
            .func
            .new_value(Ty::Int, ValueDef::LoopIndex(inst), None);
        let body = self.b.func.new_block();
        let saved = self.b.block;
        self.b.block = body;
        let depth = self.env.depth();
        self.env.push_scope();
        let r = (|| -> LResult<Value> {
            let term = match closure {
                None => match &chain.source {
                    Source::Bufs { bufs } => self.b.load(bufs[0].0, vec![index]),
                    Source::Range { .. } => {
                        return Err(self.error(
                            m,
                            &text(m),
                            "summing a range of integers has no derivative",
                        ))
                    }
                    Source::Rows { .. } => {
                        return Err(self.error(m, &text(m), "sum rows with `.map(|row| ..)`"))
                    }
                },
                Some(c) => {
                    let scan = super::control::scan_expr(&c.body);
                    let outer_assignment = scan.assigned.iter().any(|n| !scan.declared.contains(n));
                    if outer_assignment || scan.ret || scan.brk || scan.cont {
                        return Err(self.error(
                            &c.body,
                            "closure",
                            "a `.map` closure computes one term: assignments and jumps inside it are not supported",
                        ));
                    }
                    if c.inputs.len() != 1 {
                        return Err(self.error(
                            c,
                            "closure",
                            "the `.map` closure takes one argument",
                        ));
                    }
                    self.bind_for_pattern(&c.inputs[0], &chain, index)?;
                    let v = self.lower_expr(&c.body)?;
                    self.expect_ty(v, Ty::Float, &c.body, "a summed term")?;
                    v
                }
            };
            Ok(self.b.add(acc, term))
        })();
        self.env.truncate(depth);
        self.b.block = saved;
        let next = r?;
        self.b.set_yields(body, vec![next]);
        let result =
            self.b
                .func
                .new_value(Ty::Float, ValueDef::Result(inst, 0), Some("sum".into()));
        let trip = self
            .b
            .func
            .new_value(Ty::Int, ValueDef::Result(inst, 1), None);
        self.b.finish(
            inst,
            InstKind::For {
                range,
                index,
                params: vec![acc],
                inits: vec![zero],
                body,
                exit: vec![],
            },
            vec![result, trip],
        );
        if let Some(span) = chain.parallel {
            self.b.func.parallel.insert(inst, span);
        }
        Ok(result)
    }

    /// `chain.for_each(|pat| body)`: a `for` loop over the chain with the closure's body;
    /// a parallel chain makes a parallel loop, whose closure may not assign variables
    /// declared outside it (rayon runs its iterations concurrently).
    pub(super) fn lower_for_each(&mut self, m: &syn::ExprMethodCall) -> LResult<()> {
        let closure = match m.args.first() {
            Some(Expr::Closure(c)) if m.args.len() == 1 && c.inputs.len() == 1 => c,
            _ => {
                return Err(self.error(
                    m,
                    &text(m),
                    "`.for_each` takes a closure of one argument (`|i| ..` or `|(i, x)| ..`)",
                ))
            }
        };
        let mut chain = self.parse_chain(&m.receiver)?;
        self.prepare_chain(&mut chain)?;
        let scan = super::control::scan_expr(&closure.body);
        if scan.ret {
            return Err(self.error(
                &closure.body,
                "closure",
                "`return` inside a `.for_each` closure (it ends only that iteration) is not supported; use `if`/`else`",
            ));
        }
        if chain.parallel.is_some() {
            if let Some(name) = scan.assigned.iter().find(|n| !scan.declared.contains(n)) {
                let at =
                    assignment_to(&closure.body, name).unwrap_or_else(|| (*closure.body).clone());
                return Err(self.error(
                    &at,
                    &text(&at),
                    &format!(
                        "a parallel `.for_each` closure assigns `{name}`, declared outside it, \
                         and rayon runs the iterations concurrently; to sum, write \
                         `{name} += x.par_iter().map(|v| ..).sum::<f64>();` (a parallel sum), \
                         and to write results, give each iteration its own element \
                         (`y.par_iter_mut().enumerate().for_each(|(i, yi)| *yi = ..)`)"
                    ),
                ));
            }
        }
        let body = match &*closure.body {
            Expr::Block(b) if b.label.is_none() => b.block.clone(),
            other => syn::Block {
                brace_token: Default::default(),
                stmts: vec![syn::Stmt::Expr(other.clone(), Some(Default::default()))],
            },
        };
        let pat = &closure.inputs[0];
        let span = span_of(m);
        let before = self.b.func.block(self.b.block).insts.len();
        self.with_span(span, |l| {
            l.lower_loop_body(
                &[],
                None,
                &body,
                None,
                &mut |l| Ok(LoopHead::Range(l.range_of(&chain)?)),
                &mut |l, index| {
                    let index = index.expect("for loops have an index");
                    l.bind_for_pattern(pat, &chain, index)
                },
            )
        })?;
        if let Some(span) = chain.parallel {
            let insts = &self.b.func.block(self.b.block).insts;
            let lp = insts[before..]
                .iter()
                .rev()
                .copied()
                .find(|i| matches!(self.b.func.inst(*i).kind, InstKind::For { .. }))
                .expect("lower_loop_body pushed the loop");
            self.b.func.parallel.insert(lp, span);
        }
        Ok(())
    }
}

fn tuple2(p: &syn::Pat) -> Option<(&syn::Pat, &syn::Pat)> {
    let t = tuple_n(p)?;
    (t.len() == 2).then(|| (t[0], t[1]))
}

fn tuple_n(p: &syn::Pat) -> Option<Vec<&syn::Pat>> {
    match p {
        syn::Pat::Tuple(t) => Some(t.elems.iter().collect()),
        syn::Pat::Paren(pp) => tuple_n(&pp.pat),
        _ => None,
    }
}

//! Forward (tangent) mode: a new IR function that computes every active value together with
//! its tangent. Tangents of loop-carried values are extra loop parameters; tangents of `if`
//! results are extra results: φ(c, a, b) has tangent φ(c, da, db).

use super::rules;
use super::Remap;
use crate::analysis::activity::Activity;
use crate::ir::builder::Builder;
use crate::ir::*;

/// `tangent_param_of[n]`: whether primal parameter `n` gets a tangent parameter after it.
pub fn forward(f: &Function, act: &Activity, active_params: &[bool], name: &str) -> Function {
    let mut out = Function::new(name);
    let tan: Vec<Option<Value>> = vec![None; f.values.len()];
    // Parameters: each active one followed by its tangent, of the same kind.
    let params = super::copy_params(f, &mut out, &|n| {
        active_params[n]
            .then(|| matches!(f.params[n].kind, ParamKind::Buffer { mutable: true, .. }))
    });
    let (m, tbuf, param_index, tangent_index) = (
        params.remap,
        params.derivative_buf,
        params.index,
        params.derivative_index,
    );
    let body = out.body;
    let mut fw = Fwd {
        f,
        act,
        m,
        tan,
        tbuf,
        param_index,
        tangent_index,
    };
    let mut b = Builder::new(&mut out, body);
    fw.block(&mut b, f.body, body);
    if let Some(&r) = f.block(f.body).yields.first() {
        let v = fw.m.v(r);
        let dv = fw.tangent_or_zero(&mut b, r);
        b.set_yields(body, vec![v, dv]);
    }
    out
}

struct Fwd<'a> {
    f: &'a Function,
    act: &'a Activity,
    m: Remap,
    tan: Vec<Option<Value>>,
    tbuf: Vec<Option<Buf>>,
    param_index: Vec<usize>,
    tangent_index: Vec<Option<usize>>,
}

impl Fwd<'_> {
    fn t(&self, v: Value) -> Option<Value> {
        self.tan[v.index()]
    }

    fn tangent_or_zero(&self, b: &mut Builder, v: Value) -> Value {
        match self.t(v) {
            Some(t) => t,
            None => b.fconst(0.0),
        }
    }

    /// Copies the instructions of primal block `src` into `dst` with their tangents.
    fn block(&mut self, b: &mut Builder, src: Block, dst: Block) {
        b.in_block(dst, |b| {
            for &i in &self.f.block(src).insts {
                b.span = self.f.inst(i).span;
                self.inst(b, i);
            }
        });
    }

    fn inst(&mut self, b: &mut Builder, i: Inst) {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let active = |v: &Value| self.act.value(*v);
        match &data.kind {
            Param(n) => {
                let v = b.value(Param(self.param_index[*n]), f.ty(data.results[0]));
                self.m.set(data.results[0], v);
                if let Some(t) = self.tangent_index[*n] {
                    let dv = b.value(Param(t), Ty::Float);
                    self.tan[data.results[0].index()] = Some(dv);
                }
            }
            If {
                cond,
                then_blk,
                else_blk,
            } => self.if_inst(b, i, *cond, *then_blk, *else_blk),
            For { .. } | While { .. } => self.loop_inst(b, i),
            Call { .. } => self.call(b, i),
            _ => {
                let new = self.m.copy_simple(b, f, i);
                let r = data.results.first().copied();
                if let Some(r) = r.filter(active) {
                    let dr = self.tangent_of_simple(b, i, r, new);
                    self.tan[r.index()] = dr;
                }
                self.buffer_tangent(b, i);
            }
        }
    }

    /// The tangent of an arithmetic or load result `r` (new value `nr`).
    fn tangent_of_simple(
        &mut self,
        b: &mut Builder,
        i: Inst,
        _r: Value,
        nr: Option<Value>,
    ) -> Option<Value> {
        use InstKind::*;
        let f = self.f;
        let nr = nr.expect("active instructions have a result");
        match &f.inst(i).kind {
            Unary(..) | Binary(..) => {
                let (rule, operands) = rules::of_operator(&f.inst(i).kind)?;
                let nargs: Vec<Value> = operands.iter().map(|a| self.m.v(*a)).collect();
                let mut terms = Vec::new();
                for (k, template) in rules::partials_of(rule, &operands) {
                    if let Some(d) = self.t(operands[k]) {
                        terms.push(rules::scaled(b, d, template, &nargs, nr));
                    }
                }
                rules::sum(b, terms)
            }
            Math(name, args) => {
                let rule = rules::find(name).expect("lowered methods have rules");
                let nargs: Vec<Value> = args.iter().map(|a| self.m.v(*a)).collect();
                let mut acc: Option<Value> = None;
                for (k, template) in rules::partials_of(rule, args) {
                    let Some(da) = self.t(args[k]) else { continue };
                    let p = rules::emit_partial(b, template, &nargs, nr);
                    let term = b.mul(p, da);
                    acc = Some(match acc {
                        None => term,
                        Some(a) => b.add(a, term),
                    });
                }
                acc
            }
            Load(buf, idx) => {
                let tb = self.tbuf[buf.index()]?;
                let idx = idx.iter().map(|x| self.m.v(*x)).collect();
                Some(b.load(tb, idx))
            }
            // Between `f32` and `f64`: the tangent passes (codegen gives it its type).
            Cast {
                value,
                to: Ty::Float,
                float: Some(_),
                ..
            } if f.ty(*value) == Ty::Float => self.t(*value),
            _ => None,
        }
    }

    /// Mirrors a buffer instruction on the tangent buffers.
    fn buffer_tangent(&mut self, b: &mut Builder, i: Inst) {
        use InstKind::*;
        let f = self.f;
        match &f.inst(i).kind {
            Store(buf, idx, v) | StoreAdd(buf, idx, v) => {
                let Some(tb) = self.tbuf[buf.index()] else {
                    return;
                };
                let idx: Vec<Value> = idx.iter().map(|x| self.m.v(*x)).collect();
                let is_add = matches!(f.inst(i).kind, StoreAdd(..));
                match (self.t(*v), is_add) {
                    (Some(dv), false) => b.store(tb, idx, dv),
                    (Some(dv), true) => {
                        b.stmt(StoreAdd(tb, idx, dv));
                    }
                    (None, false) => {
                        let z = b.fconst(0.0);
                        b.store(tb, idx, z)
                    }
                    (None, true) => {}
                }
            }
            Alloc { buf, dims, init } => {
                if !self.act.buf(*buf) {
                    return;
                }
                let data = b.func.buf(self.m.b(*buf)).clone();
                let tb = b.func.new_buf(BufData {
                    name: format!("d{}", data.name),
                    kind: BufKind::Shadow,
                    ..data
                });
                self.tbuf[buf.index()] = Some(tb);
                let dims: Vec<Value> = dims.iter().map(|d| self.m.v(*d)).collect();
                match init {
                    AllocInit::Fill(v) => {
                        let dv = self.tangent_or_zero(b, *v);
                        b.stmt(Alloc {
                            buf: tb,
                            dims,
                            init: AllocInit::Fill(dv),
                        });
                    }
                    AllocInit::Copy(src) => match self.tbuf[src.index()] {
                        Some(ts) => {
                            b.stmt(Alloc {
                                buf: tb,
                                dims,
                                init: AllocInit::Copy(ts),
                            });
                        }
                        None => {
                            b.stmt(Alloc {
                                buf: tb,
                                dims,
                                init: AllocInit::Copy(self.m.b(*src)),
                            });
                            b.stmt(ZeroBuf(tb));
                        }
                    },
                    AllocInit::Row { .. } => {
                        unreachable!("snapshot rows exist only in reverse programs")
                    }
                }
            }
            CopyFrom { dst, src } => {
                let Some(td) = self.tbuf[dst.index()] else {
                    return;
                };
                match self.tbuf[src.index()] {
                    Some(ts) => b.stmt(CopyFrom { dst: td, src: ts }),
                    None => b.stmt(ZeroBuf(td)),
                };
            }
            Swap(x, y) => {
                if let (Some(tx), Some(ty)) = (self.tbuf[x.index()], self.tbuf[y.index()]) {
                    b.stmt(Swap(tx, ty));
                }
            }
            _ => {}
        }
    }

    fn if_inst(&mut self, b: &mut Builder, i: Inst, cond: Value, then_blk: Block, else_blk: Block) {
        let f = self.f;
        let results = f.inst(i).results.clone();
        let active_results: Vec<Value> = results
            .iter()
            .copied()
            .filter(|r| self.act.value(*r))
            .collect();
        let nt = b.func.new_block();
        let ne = b.func.new_block();
        for (src, dst) in [(then_blk, nt), (else_blk, ne)] {
            self.block(b, src, dst);
            let ys = f.block(src).yields.clone();
            let mut new_ys: Vec<Value> = ys.iter().map(|y| self.m.v(*y)).collect();
            b.in_block(dst, |b| {
                for (y, r) in ys.iter().zip(&results) {
                    if self.act.value(*r) {
                        new_ys.push(self.tangent_or_zero(b, *y));
                    }
                }
            });
            b.set_yields(dst, new_ys);
        }
        let mut tys: Vec<Ty> = results.iter().map(|r| f.ty(*r)).collect();
        tys.extend(active_results.iter().map(|_| Ty::Float));
        let c = self.m.v(cond);
        let ni = b.push(
            InstKind::If {
                cond: c,
                then_blk: nt,
                else_blk: ne,
            },
            &tys,
            None,
        );
        let new_results = b.func.inst(ni).results.clone();
        for (k, r) in results.iter().enumerate() {
            self.m.set(*r, new_results[k]);
            copy_name(b, f, *r, new_results[k]);
        }
        for (k, r) in active_results.iter().enumerate() {
            self.tan[r.index()] = Some(new_results[results.len() + k]);
        }
    }

    fn loop_inst(&mut self, b: &mut Builder, i: Inst) {
        let f = self.f;
        let data = f.inst(i);
        let (params, inits, body, exit) = f.loop_parts(i);
        let active_params: Vec<usize> = (0..params.len())
            .filter(|k| self.act.value(params[*k]))
            .collect();
        // Tangents of the initial values are defined before the loop.
        let tangent_inits: Vec<Value> = active_params
            .iter()
            .map(|&k| self.tangent_or_zero(b, inits[k]))
            .collect();
        let ni = b.reserve();
        let mut new_params = Vec::new();
        let mut new_inits = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let np = b.func.new_value(
                f.ty(*p),
                ValueDef::LoopParam(ni, k as u32),
                f.value(*p).name.clone(),
            );
            self.m.set(*p, np);
            new_params.push(np);
            new_inits.push(self.m.v(inits[k]));
        }
        for (j, &k) in active_params.iter().enumerate() {
            let tp = b.func.new_value(
                Ty::Float,
                ValueDef::LoopParam(ni, (params.len() + j) as u32),
                None,
            );
            self.tan[params[k].index()] = Some(tp);
            new_params.push(tp);
            new_inits.push(tangent_inits[j]);
        }
        let new_exit: Vec<Value> = exit.iter().map(|e| self.m.v(*e)).collect();
        let kind = match &data.kind {
            InstKind::For { range, index, .. } => {
                let nidx = b.func.new_value(
                    Ty::Int,
                    ValueDef::LoopIndex(ni),
                    f.value(*index).name.clone(),
                );
                self.m.set(*index, nidx);
                let range = RangeSpec {
                    start: self.m.v(range.start),
                    end: self.m.v(range.end),
                    step: range.step.map(|s| self.m.v(s)),
                    rev: range.rev,
                };
                let nb = b.func.new_block();
                self.loop_body(b, body, nb, &params, &active_params);
                InstKind::For {
                    range,
                    index: nidx,
                    params: new_params.clone(),
                    inits: new_inits,
                    body: nb,
                    exit: new_exit,
                }
            }
            InstKind::While { cond, .. } => {
                let nc = b.func.new_block();
                self.block(b, *cond, nc);
                let cy = self.m.v(f.block(*cond).yields[0]);
                b.set_yields(nc, vec![cy]);
                let nb = b.func.new_block();
                self.loop_body(b, body, nb, &params, &active_params);
                InstKind::While {
                    cond: nc,
                    params: new_params.clone(),
                    inits: new_inits,
                    body: nb,
                    exit: new_exit,
                }
            }
            _ => unreachable!(),
        };
        let mut results = Vec::new();
        for (k, p) in new_params.iter().enumerate() {
            let ty = b.func.ty(*p);
            let name = b.func.value(*p).name.clone();
            results.push(b.func.new_value(ty, ValueDef::Result(ni, k as u32), name));
        }
        results.push(b.func.new_value(
            Ty::Int,
            ValueDef::Result(ni, new_params.len() as u32),
            None,
        ));
        b.finish(ni, kind, results.clone());
        if let Some(span) = f.parallel.get(&i) {
            b.func.parallel.insert(ni, *span);
        }
        for (k, r) in data.results.iter().enumerate() {
            if k < params.len() {
                self.m.set(*r, results[k]);
            } else {
                self.m.set(*r, results[new_params.len()]);
            }
        }
        for (j, &k) in active_params.iter().enumerate() {
            self.tan[data.results[k].index()] = Some(results[params.len() + j]);
        }
    }

    fn loop_body(
        &mut self,
        b: &mut Builder,
        src: Block,
        dst: Block,
        params: &[Value],
        active_params: &[usize],
    ) {
        self.block(b, src, dst);
        let ys = self.f.block(src).yields.clone();
        let mut new_ys: Vec<Value> = ys.iter().map(|y| self.m.v(*y)).collect();
        b.in_block(dst, |b| {
            for &k in active_params {
                new_ys.push(self.tangent_or_zero(b, ys[k]));
            }
        });
        let _ = params;
        b.set_yields(dst, new_ys);
    }

    /// A user call: `g_fwd` with a tangent after every float argument when anything is active.
    fn call(&mut self, b: &mut Builder, i: Inst) {
        let f = self.f;
        let data = f.inst(i);
        let InstKind::Call { callee, args, .. } = &data.kind else {
            unreachable!()
        };
        let any_active = data.results.iter().any(|r| self.act.value(*r))
            || args.iter().any(|a| match a {
                CallArg::Scalar(v) => self.act.value(*v),
                CallArg::Buf { buf, .. } => self.tbuf[buf.index()].is_some(),
                CallArg::Opaque(_) => false,
            });
        let new_args: Vec<CallArg> = args.iter().map(|a| self.m.arg(a)).collect();
        if !any_active {
            let tys: Vec<Ty> = data.results.iter().map(|r| f.ty(*r)).collect();
            let ni = b.push(
                InstKind::Call {
                    callee: callee.clone(),
                    args: new_args,
                    suffix: CallSuffix::Primal,
                },
                &tys,
                None,
            );
            for (r, nr) in data.results.iter().zip(b.func.inst(ni).results.clone()) {
                self.m.set(*r, nr);
            }
            return;
        }
        let mut tangents = Vec::new();
        for a in args {
            tangents.push(match a {
                CallArg::Scalar(v) if f.ty(*v) == Ty::Float => {
                    Some(CallArg::Scalar(self.tangent_or_zero(b, *v)))
                }
                CallArg::Buf {
                    buf,
                    mutable,
                    range,
                } if f.buf(*buf).elem == Ty::Float => {
                    let tb = match self.tbuf[buf.index()] {
                        Some(tb) => tb,
                        None => zero_like(b, self.m.b(*buf)),
                    };
                    Some(CallArg::Buf {
                        buf: tb,
                        mutable: *mutable,
                        range: range.map(|p| p.map(|x| self.m.v(x))),
                    })
                }
                _ => None,
            });
        }
        let tys: Vec<Ty> = if data.results.is_empty() {
            vec![]
        } else {
            vec![Ty::Float, Ty::Float]
        };
        let ni = b.push(
            InstKind::Call {
                callee: callee.clone(),
                args: new_args,
                suffix: CallSuffix::Fwd { tangents },
            },
            &tys,
            None,
        );
        if let Some(r) = data.results.first() {
            let nr = b.func.inst(ni).results.clone();
            self.m.set(*r, nr[0]);
            self.tan[r.index()] = Some(nr[1]);
        }
    }
}

/// A zero buffer shaped like `src` (tangent or shadow of an inactive buffer argument).
pub fn zero_like(b: &mut Builder, src: Buf) -> Buf {
    let data = b.func.buf(src).clone();
    let z = b.func.new_buf(BufData {
        name: format!("zero_{}", data.name),
        kind: BufKind::Shadow,
        ..data
    });
    b.stmt(InstKind::Alloc {
        buf: z,
        dims: vec![],
        init: AllocInit::Copy(src),
    });
    b.stmt(InstKind::ZeroBuf(z));
    z
}

fn copy_name(b: &mut Builder, f: &Function, from: Value, to: Value) {
    b.func.values[to.index()].name = f.value(from).name.clone();
}

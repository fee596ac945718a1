//! Reverse (adjoint) mode: one IR function holding the forward sweep (the primal plus the
//! saves the recording analysis asked for) followed by the reverse sweep. Adjoints are
//! accumulator cells; an `if` is reversed by branching on its (saved or recomputed)
//! condition; a loop by running its recorded trip count backwards, with loop-carried
//! adjoints in carry cells and saved values read from direct-indexed tapes at the
//! iteration's slot.

use super::forward::zero_like;
use super::rules;
use super::Remap;
use crate::analysis::activity::Activity;
use crate::analysis::loops;
use crate::analysis::recording::{Planner, Recording, Storage, Structure};
use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::HashMap;

pub fn reverse(
    f: &Function,
    act: &Activity,
    active_params: &[bool],
    name: &str,
) -> Result<Function, String> {
    let mut out = Function::new(name);
    let mut m = Remap::new(f);
    let mut shadow: Vec<Option<Buf>> = vec![None; f.bufs.len()];
    let mut param_index = vec![0usize; f.params.len()];
    for (n, p) in f.params.iter().enumerate() {
        param_index[n] = out.params.len();
        let kind = match &p.kind {
            ParamKind::Buffer { buf, mutable } => {
                let data = f.buf(*buf).clone();
                let nb = out.new_buf(BufData {
                    kind: BufKind::Param(out.params.len()),
                    ..data
                });
                m.bufs[buf.index()] = Some(nb);
                ParamKind::Buffer {
                    buf: nb,
                    mutable: *mutable,
                }
            }
            k => k.clone(),
        };
        out.params.push(ParamInfo {
            name: p.name.clone(),
            kind,
        });
        if let (true, ParamKind::Buffer { buf, .. }) = (active_params[n], &p.kind) {
            let data = f.buf(*buf).clone();
            let sb = out.new_buf(BufData {
                name: super::shadow_name(&p.name, f.params.iter().map(|q| q.name.as_str())),
                kind: BufKind::Param(out.params.len()),
                ..data
            });
            shadow[buf.index()] = Some(sb);
            out.params.push(ParamInfo {
                name: super::shadow_name(&p.name, f.params.iter().map(|q| q.name.as_str())),
                kind: ParamKind::Buffer {
                    buf: sb,
                    mutable: true,
                },
            });
        }
    }
    let ret = f.block(f.body).yields.first().copied();
    let seed_index = ret.map(|_| {
        out.params.push(ParamInfo {
            name: super::seed_name(f.params.iter().map(|q| q.name.as_str())),
            kind: ParamKind::Scalar(Ty::Float),
        });
        out.params.len() - 1
    });

    let mut rv = Rev::new(f, act, m, shadow, param_index)?;
    let body = out.body;
    let mut b = Builder::new(&mut out, body);
    rv.declare_saves(&mut b);
    rv.sweep_block(&mut b, f.body);
    // Reverse sweep.
    rv.memo.push(HashMap::new());
    rv.declare_adjoints(&mut b, f.body);
    if let (Some(r), Some(si)) = (ret, seed_index) {
        if act.value(r) {
            let seed = b.value(InstKind::Param(si), Ty::Float);
            rv.accumulate(&mut b, r, seed);
        }
    }
    rv.reverse_block(&mut b, f.body)?;
    let mut yields = Vec::new();
    if let Some(r) = ret {
        yields.push(rv.m.v(r));
    }
    for (n, p) in f.params.iter().enumerate() {
        if active_params[n] && matches!(p.kind, ParamKind::Scalar(Ty::Float)) {
            let pv = rv.param_values[n].expect("scalar params are defined");
            let g = match rv.adj.get(&pv) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            };
            yields.push(g);
        }
    }
    b.set_yields(body, yields);
    Ok(out)
}

struct Rev<'a> {
    f: &'a Function,
    act: &'a Activity,
    m: Remap,
    shadow: Vec<Option<Buf>>,
    param_index: Vec<usize>,
    param_values: Vec<Option<Value>>,
    rec: Recording,
    structure: Structure,
    /// Tape of each saved value (in loops) and slot cell (outside loops).
    tape: HashMap<Value, Buf>,
    slot: HashMap<Value, Cell>,
    /// Iteration counter of each loop that has tapes.
    counter: HashMap<Inst, Cell>,
    /// The current iteration's slot index of each loop being swept (forward or reverse).
    iteration: HashMap<Inst, Value>,
    /// The current reversed index value of each loop being reversed.
    index: HashMap<Inst, Value>,
    /// Adjoint accumulator of each active value.
    adj: HashMap<Value, Cell>,
    /// Values fetched in the reverse sweep, per open block.
    memo: Vec<HashMap<Value, Value>>,
    work: HashMap<Inst, bool>,
    /// Snapshot tape of each copied call argument.
    snap: HashMap<(Inst, usize), Buf>,
}

impl<'a> Rev<'a> {
    fn new(
        f: &'a Function,
        act: &'a Activity,
        m: Remap,
        shadow: Vec<Option<Buf>>,
        param_index: Vec<usize>,
    ) -> Result<Self, String> {
        let mut planner = Planner::new(f, act);
        let mut rv_work = HashMap::new();
        plan_block(f, act, &shadow, f.body, &mut planner, &mut rv_work);
        let (rec, structure) = planner.finish();
        Ok(Rev {
            f,
            act,
            m,
            shadow,
            param_index,
            param_values: vec![None; f.params.len()],
            rec,
            structure,
            tape: HashMap::new(),
            slot: HashMap::new(),
            counter: HashMap::new(),
            iteration: HashMap::new(),
            index: HashMap::new(),
            adj: HashMap::new(),
            memo: Vec::new(),
            work: rv_work,
            snap: HashMap::new(),
        })
    }

    /// Tapes and slots for the saved values, counters for loops with tapes.
    fn declare_saves(&mut self, b: &mut Builder) {
        let saved: Vec<Value> = self.rec.saved.iter().copied().collect();
        for v in saved {
            let ty = self.f.ty(v);
            match self.rec.storage[&v] {
                Storage::Tape(l) => {
                    let name = format!(
                        "tape_{}",
                        self.f
                            .value(v)
                            .name
                            .clone()
                            .unwrap_or_else(|| v.to_string())
                    );
                    let t = b.func.new_buf(BufData {
                        name,
                        rank: 1,
                        elem: ty,
                        kind: BufKind::Tape,
                    });
                    self.tape.insert(v, t);
                    if !self.counter.contains_key(&l) {
                        let z = b.iconst(0);
                        let c = b.cell(Ty::Int, "iter", z);
                        self.counter.insert(l, c);
                    }
                }
                Storage::Slot => {
                    let z = b.zero(ty);
                    let c = b.cell(ty, "slot", z);
                    self.slot.insert(v, c);
                }
                _ => unreachable!("only tape and slot values are saved"),
            }
        }
        let snaps: Vec<(Inst, usize)> = self.rec.snapshots.iter().copied().collect();
        for (i, k) in snaps {
            let InstKind::Call { args, .. } = &self.f.inst(i).kind else {
                unreachable!()
            };
            let CallArg::Buf { buf, .. } = &args[k] else {
                unreachable!()
            };
            let data = self.f.buf(*buf);
            let t = b.func.new_buf(BufData {
                name: format!("snap_{}", data.name),
                rank: 2,
                elem: data.elem,
                kind: BufKind::Tape,
            });
            self.snap.insert((i, k), t);
            if let Some(l) = self.loop_of(i) {
                if !self.counter.contains_key(&l) {
                    let z = b.iconst(0);
                    let c = b.cell(Ty::Int, "iter", z);
                    self.counter.insert(l, c);
                }
            }
        }
    }

    fn loop_of(&self, i: Inst) -> Option<Inst> {
        let blk = self.structure.inst_block[i.index()].expect("placed instruction");
        self.structure.enclosing_loop(self.f, blk)
    }

    /// The snapshot row of call `i` in the current (forward or reverse) iteration.
    fn snapshot_row(&mut self, b: &mut Builder, i: Inst) -> Value {
        match self.loop_of(i) {
            Some(l) => self.iteration[&l],
            None => b.iconst(0),
        }
    }

    // ----- forward sweep -------------------------------------------------------------

    fn sweep_block(&mut self, b: &mut Builder, src: Block) {
        for &i in &self.f.block(src).insts {
            b.span = self.f.inst(i).span;
            self.sweep_inst(b, i);
        }
    }

    fn save(&mut self, b: &mut Builder, v: Value) {
        if !self.rec.saved.contains(&v) {
            return;
        }
        let nv = self.m.v(v);
        match self.rec.storage[&v] {
            Storage::Tape(l) => {
                let idx = self.iteration[&l];
                b.store(self.tape[&v], vec![idx], nv);
            }
            Storage::Slot => b.set(self.slot[&v], nv),
            _ => {}
        }
    }

    fn sweep_inst(&mut self, b: &mut Builder, i: Inst) {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        match &data.kind {
            Param(n) => {
                let v = b.value(Param(self.param_index[*n]), f.ty(data.results[0]));
                b.func.values[v.index()].name = f.value(data.results[0]).name.clone();
                self.m.set(data.results[0], v);
                self.param_values[*n] = Some(data.results[0]);
            }
            If {
                cond,
                then_blk,
                else_blk,
            } => {
                let mut blocks = Vec::new();
                for src in [*then_blk, *else_blk] {
                    let nb = b.func.new_block();
                    b.in_block(nb, |b| self.sweep_block(b, src));
                    let ys = f.block(src).yields.iter().map(|y| self.m.v(*y)).collect();
                    b.set_yields(nb, ys);
                    blocks.push(nb);
                }
                let tys: Vec<Ty> = data.results.iter().map(|r| f.ty(*r)).collect();
                let ni = b.push(
                    If {
                        cond: self.m.v(*cond),
                        then_blk: blocks[0],
                        else_blk: blocks[1],
                    },
                    &tys,
                    None,
                );
                self.bind_results(b, i, ni);
            }
            For { .. } | While { .. } => self.sweep_loop(b, i),
            Call { callee, args, .. } => {
                for k in 0..args.len() {
                    if let (Some(t), CallArg::Buf { buf, .. }) =
                        (self.snap.get(&(i, k)).copied(), &args[k])
                    {
                        let idx = self.snapshot_row(b, i);
                        b.stmt(SaveRow {
                            tape: t,
                            idx,
                            src: self.m.b(*buf),
                        });
                    }
                }
                let new_args = args.iter().map(|a| self.m.arg(a)).collect();
                let tys: Vec<Ty> = data.results.iter().map(|r| f.ty(*r)).collect();
                let ni = b.push(
                    Call {
                        callee: callee.clone(),
                        args: new_args,
                        suffix: CallSuffix::Primal,
                    },
                    &tys,
                    None,
                );
                self.bind_results(b, i, ni);
            }
            _ => {
                self.m.copy_simple(b, f, i);
                if let Alloc { buf, .. } = &data.kind {
                    if self.act.buf(*buf) && self.structure.inst_block[i.index()] == Some(f.body) {
                        // Top-level buffers get their shadow here, in scope for the reverse sweep.
                        let sb = zero_like(b, self.m.b(*buf));
                        self.shadow[buf.index()] = Some(sb);
                    }
                }
                for r in data.results.clone() {
                    self.save(b, r);
                }
            }
        }
    }

    fn bind_results(&mut self, b: &mut Builder, old: Inst, new: Inst) {
        let results = b.func.inst(new).results.clone();
        for (r, nr) in self.f.inst(old).results.clone().iter().zip(results) {
            b.func.values[nr.index()].name = self.f.value(*r).name.clone();
            self.m.set(*r, nr);
            self.save(b, *r);
        }
    }

    fn sweep_loop(&mut self, b: &mut Builder, i: Inst) {
        let f = self.f;
        let data = f.inst(i);
        let (params, inits, body, exit) = loop_parts(f, i);
        let counter = self.counter.get(&i).copied();
        // Size the tapes once at loop entry when the trip count is bounded by the range.
        if let (Some(c), InstKind::For { range, .. }) = (counter, &data.kind) {
            let tapes: Vec<Buf> = self.tapes_of(i);
            let (s, e) = (self.m.v(range.start), self.m.v(range.end));
            let k = b.get(c);
            let len = range_len(b, s, e);
            let total = b.add(k, len);
            for t in tapes {
                b.stmt(InstKind::TapeEnsure(t, total));
            }
        }
        let ni = b.reserve();
        let mut new_params = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let np = b.func.new_value(
                f.ty(*p),
                ValueDef::LoopParam(ni, k as u32),
                f.value(*p).name.clone(),
            );
            self.m.set(*p, np);
            new_params.push(np);
        }
        let new_inits: Vec<Value> = inits.iter().map(|v| self.m.v(*v)).collect();
        let new_exit: Vec<Value> = exit.iter().map(|v| self.m.v(*v)).collect();
        let nb = b.func.new_block();
        let mut new_index = None;
        if let InstKind::For { index, .. } = &data.kind {
            let nidx = b.func.new_value(
                Ty::Int,
                ValueDef::LoopIndex(ni),
                f.value(*index).name.clone(),
            );
            self.m.set(*index, nidx);
            new_index = Some(nidx);
        }
        let cond_blk = match &data.kind {
            InstKind::While { cond, .. } => {
                let nc = b.func.new_block();
                b.in_block(nc, |b| self.sweep_block(b, *cond));
                let cy = self.m.v(f.block(*cond).yields[0]);
                b.set_yields(nc, vec![cy]);
                Some(nc)
            }
            _ => None,
        };
        b.in_block(nb, |b| {
            if let Some(c) = counter {
                let k = b.get(c);
                let one = b.iconst(1);
                let next = b.add(k, one);
                b.set(c, next);
                if matches!(data.kind, InstKind::While { .. }) {
                    for t in self.tapes_of(i) {
                        b.stmt(InstKind::TapeEnsure(t, next));
                    }
                }
                self.iteration.insert(i, k);
            }
            for p in &params {
                self.save(b, *p);
            }
            self.sweep_block(b, body);
        });
        let ys = f.block(body).yields.iter().map(|y| self.m.v(*y)).collect();
        b.set_yields(nb, ys);
        let kind = match &data.kind {
            InstKind::For { range, .. } => InstKind::For {
                range: RangeSpec {
                    start: self.m.v(range.start),
                    end: self.m.v(range.end),
                    step: range.step.map(|s| self.m.v(s)),
                    rev: range.rev,
                },
                index: new_index.expect("for index"),
                params: new_params.clone(),
                inits: new_inits,
                body: nb,
                exit: new_exit,
            },
            _ => InstKind::While {
                cond: cond_blk.expect("while cond"),
                params: new_params.clone(),
                inits: new_inits,
                body: nb,
                exit: new_exit,
            },
        };
        let mut results = Vec::new();
        for (k, r) in data.results.iter().enumerate() {
            results.push(b.func.new_value(
                f.ty(*r),
                ValueDef::Result(ni, k as u32),
                f.value(*r).name.clone(),
            ));
        }
        b.finish(ni, kind, results.clone());
        for (r, nr) in data.results.clone().iter().zip(results) {
            self.m.set(*r, nr);
            self.save(b, *r);
        }
    }

    fn tapes_of(&self, l: Inst) -> Vec<Buf> {
        self.rec
            .saved
            .iter()
            .filter(|v| self.rec.storage[v] == Storage::Tape(l))
            .map(|v| self.tape[v])
            .collect()
    }

    // ----- reverse sweep -------------------------------------------------------------

    /// The primal value `v` in the reverse sweep.
    fn fetch(&mut self, b: &mut Builder, v: Value) -> Result<Value, String> {
        for scope in self.memo.iter().rev() {
            if let Some(x) = scope.get(&v) {
                return Ok(*x);
            }
        }
        let storage = *self.rec.storage.get(&v).ok_or_else(|| {
            format!("phidiff internal error: the reverse sweep reads {v}, which was not planned")
        })?;
        let x = match storage {
            Storage::Direct => return Ok(self.m.v(v)),
            Storage::Index(l) => {
                return self.index.get(&l).copied().ok_or_else(|| {
                    format!("phidiff internal error: index of {l} read outside its loop")
                })
            }
            Storage::Tape(l) => {
                let idx = *self.iteration.get(&l).ok_or_else(|| {
                    format!("phidiff internal error: tape of {l} read outside its loop")
                })?;
                b.load(self.tape[&v], vec![idx])
            }
            Storage::Slot => b.get(self.slot[&v]),
            Storage::Recompute => {
                let i = self.f.def_inst(v);
                let ops = self.f.operands(i);
                let mut tmp = Remap {
                    values: vec![None; self.f.values.len()],
                    bufs: self.m.bufs.clone(),
                };
                for o in ops {
                    let ov = self.fetch(b, o)?;
                    tmp.set(o, ov);
                }
                tmp.copy_simple(b, self.f, i)
                    .expect("recomputed instructions have a result")
            }
        };
        self.memo
            .last_mut()
            .expect("an open reverse block")
            .insert(v, x);
        Ok(x)
    }

    fn accumulate(&mut self, b: &mut Builder, v: Value, g: Value) {
        if let Some(c) = self.adj.get(&v) {
            b.accumulate(*c, g);
        }
    }

    /// Zeroed adjoint cells for the active values defined directly in `blk`.
    fn declare_adjoints(&mut self, b: &mut Builder, blk: Block) {
        for &i in &self.f.block(blk).insts {
            for &r in &self.f.inst(i).results {
                if self.act.value(r) {
                    self.declare_adjoint(b, r);
                }
            }
        }
    }

    fn declare_adjoint(&mut self, b: &mut Builder, v: Value) {
        // −0 is the exact additive identity (−0 + v = v for every v, +0 + −0 = +0 does not
        // fold), so LLVM can drop the first addition into a fresh adjoint.
        let z = b.fconst(-0.0);
        let name = format!(
            "adj_{}",
            self.f
                .value(v)
                .name
                .clone()
                .unwrap_or_else(|| v.to_string())
        );
        let c = b.cell(Ty::Float, &name, z);
        self.adj.insert(v, c);
    }

    fn reverse_block(&mut self, b: &mut Builder, blk: Block) -> Result<(), String> {
        let insts = self.f.block(blk).insts.clone();
        for &i in insts.iter().rev() {
            if self.work.get(&i).copied().unwrap_or(false) {
                b.span = self.f.inst(i).span;
                self.reverse_inst(b, i)?;
            }
        }
        Ok(())
    }

    fn adjoint_of(&mut self, b: &mut Builder, i: Inst) -> Option<Value> {
        let r = *self.f.inst(i).results.first()?;
        let c = *self.adj.get(&r)?;
        Some(b.get(c))
    }

    fn reverse_inst(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let act = |v: &Value| self.act.value(*v);
        match &data.kind {
            Unary(UnOp::Neg, a) => {
                if let Some(g) = self.adjoint_of(b, i) {
                    let n = b.neg(g);
                    self.accumulate(b, *a, n);
                }
            }
            Binary(op, x, y) => {
                let Some(g) = self.adjoint_of(b, i) else {
                    return Ok(());
                };
                match op {
                    BinOp::Add => {
                        self.accumulate(b, *x, g);
                        self.accumulate(b, *y, g);
                    }
                    BinOp::Sub => {
                        self.accumulate(b, *x, g);
                        if act(y) {
                            let n = b.neg(g);
                            self.accumulate(b, *y, n);
                        }
                    }
                    BinOp::Mul => {
                        if act(x) {
                            let yv = self.fetch(b, *y)?;
                            let t = b.mul(g, yv);
                            self.accumulate(b, *x, t);
                        }
                        if act(y) {
                            let xv = self.fetch(b, *x)?;
                            let t = b.mul(g, xv);
                            self.accumulate(b, *y, t);
                        }
                    }
                    BinOp::Div => {
                        let yv = self.fetch(b, *y)?;
                        if act(x) {
                            let t = b.div(g, yv);
                            self.accumulate(b, *x, t);
                        }
                        if act(y) {
                            let rv = self.fetch(b, data.results[0])?;
                            let t = b.mul(g, rv);
                            let t = b.div(t, yv);
                            let t = b.neg(t);
                            self.accumulate(b, *y, t);
                        }
                    }
                    _ => {}
                }
            }
            Math(name, args) => {
                let Some(g) = self.adjoint_of(b, i) else {
                    return Ok(());
                };
                let rule = rules::find(name).expect("lowered methods have rules");
                let mut nargs = Vec::new();
                for a in args {
                    nargs.push(self.fetch(b, *a)?);
                }
                let rv = self.fetch(b, data.results[0])?;
                for (k, template) in rules::partials_of(rule, args) {
                    if !act(&args[k]) {
                        continue;
                    }
                    let p = rules::emit_partial(b, template, &nargs, rv);
                    let t = b.mul(g, p);
                    self.accumulate(b, args[k], t);
                }
            }
            Load(buf, idx) => {
                let (Some(g), Some(sb)) = (self.adjoint_of(b, i), self.shadow[buf.index()]) else {
                    return Ok(());
                };
                let idx = self.fetch_all(b, idx)?;
                b.stmt(StoreAdd(sb, idx, g));
            }
            Store(buf, idx, v) => {
                let Some(sb) = self.shadow[buf.index()] else {
                    return Ok(());
                };
                let idx = self.fetch_all(b, idx)?;
                if act(v) {
                    let t = b.load(sb, idx.clone());
                    self.accumulate(b, *v, t);
                }
                let z = b.fconst(0.0);
                b.store(sb, idx, z);
            }
            StoreAdd(buf, idx, v) => {
                let Some(sb) = self.shadow[buf.index()] else {
                    return Ok(());
                };
                if act(v) {
                    let idx = self.fetch_all(b, idx)?;
                    let t = b.load(sb, idx);
                    self.accumulate(b, *v, t);
                }
            }
            Alloc { buf, init, .. } => {
                let Some(sb) = self.shadow[buf.index()] else {
                    return Ok(());
                };
                match init {
                    AllocInit::Fill(v) if act(v) => {
                        let s = b.value(SumBuf(sb), Ty::Float);
                        self.accumulate(b, *v, s);
                    }
                    AllocInit::Copy(src) => {
                        if let Some(ss) = self.shadow[src.index()] {
                            b.stmt(AddBuf { dst: ss, src: sb });
                        }
                    }
                    _ => {}
                }
            }
            CopyFrom { dst, src } => {
                let Some(sd) = self.shadow[dst.index()] else {
                    return Ok(());
                };
                if let Some(ss) = self.shadow[src.index()] {
                    b.stmt(AddBuf { dst: ss, src: sd });
                }
                b.stmt(ZeroBuf(sd));
            }
            Swap(x, y) => {
                if let (Some(sx), Some(sy)) = (self.shadow[x.index()], self.shadow[y.index()]) {
                    b.stmt(Swap(sx, sy));
                }
            }
            If {
                cond,
                then_blk,
                else_blk,
            } => {
                let c = self.fetch(b, *cond)?;
                let results = data.results.clone();
                let mut blocks = Vec::new();
                for src in [*then_blk, *else_blk] {
                    let nb = b.func.new_block();
                    let r: Result<(), String> = b.in_block(nb, |b| {
                        self.memo.push(HashMap::new());
                        self.declare_local_shadows(b, src)?;
                        self.declare_adjoints(b, src);
                        let ys = self.f.block(src).yields.clone();
                        for (y, r) in ys.iter().zip(&results) {
                            if act(r) && act(y) {
                                let g = b.get(self.adj[r]);
                                self.accumulate(b, *y, g);
                            }
                        }
                        let r = self.reverse_block(b, src);
                        self.memo.pop();
                        r
                    });
                    r?;
                    blocks.push(nb);
                }
                b.stmt(If {
                    cond: c,
                    then_blk: blocks[0],
                    else_blk: blocks[1],
                });
            }
            For { .. } | While { .. } => self.reverse_loop(b, i)?,
            Call { .. } => self.reverse_call(b, i)?,
            _ => {}
        }
        Ok(())
    }

    fn fetch_all(&mut self, b: &mut Builder, vs: &[Value]) -> Result<Vec<Value>, String> {
        vs.iter().map(|v| self.fetch(b, *v)).collect()
    }

    /// Shadows of buffers allocated inside a nested block: zero buffers of the same shape,
    /// created where that block's reverse begins.
    fn declare_local_shadows(&mut self, b: &mut Builder, blk: Block) -> Result<(), String> {
        for &i in &self.f.block(blk).insts.clone() {
            if let InstKind::Alloc { buf, dims, init } = &self.f.inst(i).kind {
                if !self.act.buf(*buf) {
                    continue;
                }
                let data = self.f.buf(*buf).clone();
                let sb = b.func.new_buf(BufData {
                    name: format!("d{}", data.name),
                    kind: BufKind::Shadow,
                    ..data
                });
                match init {
                    AllocInit::Fill(_) => {
                        let dims = self.fetch_all(b, dims)?;
                        let z = b.fconst(0.0);
                        b.stmt(InstKind::Alloc {
                            buf: sb,
                            dims,
                            init: AllocInit::Fill(z),
                        });
                    }
                    AllocInit::Copy(src) => {
                        let like = self.shadow[src.index()].ok_or_else(|| {
                            "phidiff: a buffer copied from an inactive buffer inside a loop or branch needs an explicit `vec![0.0; n]`".to_string()
                        })?;
                        b.stmt(InstKind::Alloc {
                            buf: sb,
                            dims: vec![],
                            init: AllocInit::Copy(like),
                        });
                        b.stmt(InstKind::ZeroBuf(sb));
                    }
                    AllocInit::Row { .. } => {
                        unreachable!("snapshot rows exist only in reverse programs")
                    }
                }
                self.shadow[buf.index()] = Some(sb);
            }
        }
        Ok(())
    }

    fn reverse_loop(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        let f = self.f;
        let data = f.inst(i);
        let (params, inits, body, _) = loop_parts(f, i);
        let n = params.len();
        let active: Vec<usize> = (0..n).filter(|k| self.act.value(params[*k])).collect();
        let mut carry = HashMap::new();
        for &k in &active {
            let g = match self.adj.get(&data.results[k]) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            };
            carry.insert(k, b.cell(Ty::Float, "carry", g));
        }
        let trip = match loops::static_trip(f, i) {
            // ⌈(end − start) / step⌉ from the range itself.
            Some(range) => {
                let (st, en) = (self.fetch(b, range.start)?, self.fetch(b, range.end)?);
                let len = range_len(b, st, en);
                match range.step {
                    None => len,
                    Some(step) => {
                        let step = self.fetch(b, step)?;
                        let one = b.iconst(1);
                        let t = b.add(len, step);
                        let t = b.sub(t, one);
                        b.div(t, step)
                    }
                }
            }
            None => self.fetch(b, data.results[n])?,
        };
        let range_vals = match &data.kind {
            InstKind::For { range, .. } => {
                let s = self.fetch(b, range.start)?;
                let e = self.fetch(b, range.end)?;
                let st = range.step.map(|x| self.fetch(b, x)).transpose()?;
                Some((s, e, st, range.rev))
            }
            _ => None,
        };
        let zero = b.iconst(0);
        let ni = b.reserve();
        let t = b
            .func
            .new_value(Ty::Int, ValueDef::LoopIndex(ni), Some("rev_t".into()));
        let nb = b.func.new_block();
        let r: Result<(), String> = b.in_block(nb, |b| {
            self.memo.push(HashMap::new());
            if let Some(c) = self.counter.get(&i).copied() {
                let k = b.get(c);
                let one = b.iconst(1);
                let idx = b.sub(k, one);
                b.set(c, idx);
                self.iteration.insert(i, idx);
            }
            if let Some((s, e, st, rev)) = range_vals {
                // The index of reversed iteration t: start + t·step, or (end − 1) − t·step.
                let off = match st {
                    Some(st) => b.mul(t, st),
                    None => t,
                };
                let idx = if rev {
                    let one = b.iconst(1);
                    let last = b.sub(e, one);
                    b.sub(last, off)
                } else {
                    b.add(s, off)
                };
                self.index.insert(i, idx);
            }
            self.declare_local_shadows(b, body)?;
            for &k in &active {
                self.declare_adjoint(b, params[k]);
            }
            self.declare_adjoints(b, body);
            let ys = f.block(body).yields.clone();
            for &k in &active {
                if self.act.value(ys[k]) {
                    let g = b.get(carry[&k]);
                    self.accumulate(b, ys[k], g);
                }
            }
            self.reverse_block(b, body)?;
            for &k in &active {
                let g = b.get(self.adj[&params[k]]);
                b.set(carry[&k], g);
            }
            self.memo.pop();
            Ok(())
        });
        r?;
        b.set_yields(nb, vec![]);
        let tr = b.func.new_value(Ty::Int, ValueDef::Result(ni, 0), None);
        b.finish(
            ni,
            InstKind::For {
                range: RangeSpec {
                    start: zero,
                    end: trip,
                    step: None,
                    rev: true,
                },
                index: t,
                params: vec![],
                inits: vec![],
                body: nb,
                exit: vec![],
            },
            vec![tr],
        );
        for &k in &active {
            if self.act.value(inits[k]) {
                let g = b.get(carry[&k]);
                self.accumulate(b, inits[k], g);
            }
        }
        Ok(())
    }

    /// `g_rev(args, shadows, seed)` adds into buffer shadows and returns scalar adjoints.
    fn reverse_call(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        let f = self.f;
        let data = f.inst(i);
        let InstKind::Call { callee, args, .. } = &data.kind else {
            unreachable!()
        };
        let mut new_args = Vec::new();
        let mut shadows = Vec::new();
        let mut scalar_args = Vec::new();
        for a in args {
            match a {
                CallArg::Scalar(v) => {
                    new_args.push(CallArg::Scalar(self.fetch(b, *v)?));
                    if f.ty(*v) == Ty::Float {
                        scalar_args.push(*v);
                    }
                    shadows.push(None);
                }
                CallArg::Buf { buf, mutable } => {
                    let k = new_args.len();
                    match self.snap.get(&(i, k)).copied() {
                        Some(t) => {
                            if f.buf(*buf).rank != 1 {
                                return Err(format!(
                                    "phidiff: the reverse of `{}` needs the 2-D buffer `{}` as it was at the call; pass 2-D buffers to calls only when the function never writes them",
                                    callee.path,
                                    f.buf(*buf).name
                                ));
                            }
                            let idx = self.snapshot_row(b, i);
                            let data = b.func.buf(t).clone();
                            let tmp = b.func.new_buf(BufData {
                                name: "at_call".into(),
                                rank: 1,
                                kind: BufKind::Local,
                                ..data
                            });
                            b.stmt(InstKind::Alloc {
                                buf: tmp,
                                dims: vec![],
                                init: AllocInit::Row { tape: t, idx },
                            });
                            new_args.push(CallArg::Buf {
                                buf: tmp,
                                mutable: *mutable,
                            });
                        }
                        None => new_args.push(CallArg::Buf {
                            buf: self.m.b(*buf),
                            mutable: false,
                        }),
                    }
                    if f.buf(*buf).elem == Ty::Float {
                        let sb = match self.shadow[buf.index()] {
                            Some(sb) => sb,
                            None => zero_like(b, self.m.b(*buf)),
                        };
                        shadows.push(Some(CallArg::Buf {
                            buf: sb,
                            mutable: true,
                        }));
                    } else {
                        shadows.push(None);
                    }
                }
                CallArg::Opaque(t) => {
                    new_args.push(CallArg::Opaque(t.clone()));
                    shadows.push(None);
                }
            }
        }
        let seed = match data.results.first() {
            None => None,
            Some(r) => Some(match self.adj.get(r) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            }),
        };
        let tys = vec![Ty::Float; scalar_args.len()];
        let ni = b.push(
            InstKind::Call {
                callee: callee.clone(),
                args: new_args,
                suffix: CallSuffix::Rev { shadows, seed },
            },
            &tys,
            None,
        );
        let adjs = b.func.inst(ni).results.clone();
        for (v, g) in scalar_args.iter().zip(adjs) {
            self.accumulate(b, *v, g);
        }
        Ok(())
    }
}

/// `end − start` when positive, else 0 (an upper bound of a range's trip count).
fn range_len(b: &mut Builder, s: Value, e: Value) -> Value {
    let c = b.binary(BinOp::Gt, e, s);
    let t = b.func.new_block();
    let el = b.func.new_block();
    let d = b.in_block(t, |b| b.sub(e, s));
    let z = b.in_block(el, |b| b.iconst(0));
    b.set_yields(t, vec![d]);
    b.set_yields(el, vec![z]);
    let i = b.push(
        InstKind::If {
            cond: c,
            then_blk: t,
            else_blk: el,
        },
        &[Ty::Int],
        None,
    );
    b.func.inst(i).results[0]
}

fn loop_parts(f: &Function, i: Inst) -> (Vec<Value>, Vec<Value>, Block, Vec<Value>) {
    match &f.inst(i).kind {
        InstKind::For {
            params,
            inits,
            body,
            exit,
            ..
        }
        | InstKind::While {
            params,
            inits,
            body,
            exit,
            ..
        } => (params.clone(), inits.clone(), *body, exit.clone()),
        _ => unreachable!("loop_parts on a non-loop"),
    }
}

/// Marks which instructions have reverse work and tells the planner what the reverse sweep
/// will read. Mirrors `Rev::reverse_inst`.
fn plan_block(
    f: &Function,
    act: &Activity,
    shadow: &[Option<Buf>],
    blk: Block,
    p: &mut Planner,
    work: &mut HashMap<Inst, bool>,
) -> bool {
    let mut any = false;
    for &i in &f.block(blk).insts {
        let w = plan_inst(f, act, shadow, i, p, work);
        work.insert(i, w);
        any |= w;
    }
    any
}

fn plan_inst(
    f: &Function,
    act: &Activity,
    shadow: &[Option<Buf>],
    i: Inst,
    p: &mut Planner,
    work: &mut HashMap<Inst, bool>,
) -> bool {
    use InstKind::*;
    let data = f.inst(i);
    let res_active = data.results.first().is_some_and(|r| act.value(*r));
    let has_shadow = |b: &Buf| act.buf(*b) || shadow[b.index()].is_some();
    match &data.kind {
        Unary(..) | Cast { .. } => res_active,
        Binary(op, x, y) => {
            if !res_active {
                return false;
            }
            match op {
                BinOp::Mul => {
                    if act.value(*x) {
                        p.need(*y);
                    }
                    if act.value(*y) {
                        p.need(*x);
                    }
                }
                BinOp::Div => {
                    p.need(*y);
                    if act.value(*y) {
                        p.need(data.results[0]);
                    }
                }
                _ => {}
            }
            true
        }
        Math(_, args) => {
            if res_active {
                args.iter().for_each(|a| p.need(*a));
                p.need(data.results[0]);
            }
            res_active
        }
        Load(buf, idx) => {
            let w = res_active && has_shadow(buf);
            if w {
                idx.iter().for_each(|x| p.need(*x));
            }
            w
        }
        Store(buf, idx, _) | StoreAdd(buf, idx, _) => {
            let w = has_shadow(buf);
            if w {
                idx.iter().for_each(|x| p.need(*x));
            }
            w
        }
        Alloc { buf, dims, .. } => {
            let w = act.buf(*buf);
            if w && p.structure.inst_block[i.index()] != Some(f.body) {
                dims.iter().for_each(|x| p.need(*x));
            }
            w
        }
        CopyFrom { dst, .. } => has_shadow(dst),
        Swap(x, _) => has_shadow(x),
        If {
            cond,
            then_blk,
            else_blk,
        } => {
            let a = plan_block(f, act, shadow, *then_blk, p, work);
            let b = plan_block(f, act, shadow, *else_blk, p, work);
            let w = a || b || data.results.iter().any(|r| act.value(*r));
            if w {
                p.need(*cond);
            }
            w
        }
        For {
            range,
            body,
            params,
            ..
        } => {
            let w =
                plan_block(f, act, shadow, *body, p, work) || params.iter().any(|v| act.value(*v));
            if w {
                if loops::static_trip(f, i).is_none() {
                    p.need(*data.results.last().expect("trip"));
                }
                p.need(range.start);
                p.need(range.end);
                if let Some(s) = range.step {
                    p.need(s);
                }
            }
            w
        }
        While {
            body, params, cond, ..
        } => {
            plan_block(f, act, shadow, *cond, p, work);
            let w =
                plan_block(f, act, shadow, *body, p, work) || params.iter().any(|v| act.value(*v));
            if w {
                p.need(*data.results.last().expect("trip"));
            }
            w
        }
        Call { args, .. } => {
            let w = res_active
                || args.iter().any(|a| match a {
                    CallArg::Scalar(v) => act.value(*v),
                    CallArg::Buf { buf, .. } => has_shadow(buf),
                    CallArg::Opaque(_) => false,
                });
            if w {
                for (k, a) in args.iter().enumerate() {
                    match a {
                        CallArg::Scalar(v) => p.need(*v),
                        CallArg::Buf { buf, .. } if !p.is_read_only(*buf) => p.snapshot(i, k),
                        _ => {}
                    }
                }
            }
            w
        }
        _ => false,
    }
}

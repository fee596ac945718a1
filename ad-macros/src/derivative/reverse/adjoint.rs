//! The reverse sweep of straight-line code and branches: fetching primal values (direct,
//! recomputed, from tapes), adjoint cells, and the adjoint rule of each instruction.

use super::*;
use crate::derivative::rules;
use std::collections::HashSet;

impl Rev<'_> {
    /// The primal value `v` in the reverse sweep.
    pub(super) fn fetch(&mut self, b: &mut Builder, v: Value) -> Result<Value, String> {
        for scope in self.memo.iter().rev() {
            if let Some(x) = scope.get(&v) {
                return Ok(*x);
            }
        }
        let storage = *self.plan.rec.storage.get(&v).ok_or_else(|| {
            format!("phidiff internal error: the reverse sweep reads {v}, which was not planned")
        })?;
        if let Some(x) = self.from_iteration(b, v, Some(storage)) {
            self.memo
                .last_mut()
                .expect("an open reverse block")
                .insert(v, x);
            return Ok(x);
        }
        if self.plan.iteration_saved.contains(&v) {
            return Err(format!(
                "phidiff internal error: {v} of a fused iteration read outside its adjoint"
            ));
        }
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
                let idx = self.tape_index(l, idx);
                b.load(self.tape[&v], idx)
            }
            Storage::Slot => b.get(self.slot[&v]),
            Storage::Row(l) => {
                let InstKind::Load(buf, idx) = &self.f.inst(self.f.def_inst(v)).kind else {
                    unreachable!("row reads are loads")
                };
                let t = self.rows[&(l, *buf)];
                let mut at = vec![self.snapshot_row(b, l)];
                at.extend(self.fetch_all(b, &idx.clone())?);
                b.load(t, at)
            }
            Storage::State(l) => {
                return Err(format!(
                    "phidiff internal error: state of {l} read outside its reversed iteration"
                ))
            }
            // Set in each reversed iteration of its loop (`reverse_loop`).
            Storage::Backward => {
                return Err(format!(
                    "phidiff internal error: counter {v} read outside its reversed loop"
                ))
            }
            Storage::Recompute => self.recompute(b, v, None)?,
            Storage::Alias(w) => self.fetch(b, w)?,
            Storage::Induction => {
                let ind = self.plan.rec.reuse.inductions[&v].clone();
                let InstKind::For { range, index, .. } = &self.f.inst(ind.lp).kind else {
                    unreachable!("inductions are parameters of for loops")
                };
                let (start, index) = (range.start, *index);
                let k = self.fetch(b, index)?;
                let s = self.fetch(b, start)?;
                let init = self.fetch(b, ind.init)?;
                // The loop index may be of another integer type than the counter.
                let iteration = b.sub(k, s);
                let iteration = b.int_like(iteration, init);
                let step = self.fetch(b, ind.step)?;
                let offset = b.mul(iteration, step);
                if ind.negative {
                    b.sub(init, offset)
                } else {
                    b.add(init, offset)
                }
            }
            Storage::Fill => {
                let fill = self.plan.rec.reuse.fills[&v].clone();
                let at = self.fetch(b, fill.at)?;
                self.memo.push(HashMap::from([(fill.index, at)]));
                let x = if fill.insts.contains(&self.f.def_inst(fill.value)) {
                    self.recompute(b, fill.value, Some(&fill.insts))
                } else {
                    self.fetch(b, fill.value)
                };
                self.memo.pop();
                x?
            }
        };
        self.memo
            .last_mut()
            .expect("an open reverse block")
            .insert(v, x);
        Ok(x)
    }

    /// `v` as the forward code of the current fused iteration computed it, where `v` is
    /// defined in that iteration (not in a loop inside it) and would otherwise be
    /// re-evaluated or read from a tape. A fused iteration's adjoint runs right after its
    /// forward code ([`fuse`]), so `v` is still at hand: where its definition encloses the
    /// adjoint, the adjoint reads it as is; where it does not (`v` is defined in an `if`),
    /// a cell declared at the start of the iteration takes it after its definition. A
    /// re-evaluated integer or boolean defined in an `if` is re-evaluated (from operands
    /// that are mostly at hand): a cell would cost as much.
    ///
    /// The rayon stencil's gradient (1000×1000, one thread) reads each cell's five `u`
    /// values and its laplacian once instead of twice: 8.35 → 6.81 ms (minimum of 8
    /// interleaved runs of both binaries; the scoreboard's row went from 7.75 to 6.49 ms).
    ///
    /// `storage` is the plan's for `v`; a node of a coarsened segment has none (it would be
    /// re-evaluated from the segment's leaves).
    pub(super) fn from_iteration(
        &mut self,
        b: &mut Builder,
        v: Value,
        storage: Option<Storage>,
    ) -> Option<Value> {
        if self.fusing.is_empty() || self.plain {
            return None;
        }
        let ValueDef::Result(def, _) = self.f.value(v).def else {
            return None;
        };
        if matches!(
            self.f.inst(def).kind,
            InstKind::FConst(_) | InstKind::IConst(_) | InstKind::BConst(_)
        ) {
            return None;
        }
        let taped = matches!(storage, Some(Storage::Tape(_)));
        if !matches!(
            storage,
            None | Some(Storage::Tape(_) | Storage::Recompute | Storage::Fill | Storage::Induction)
        ) {
            return None;
        }
        let l = self.loop_of(def)?;
        let body = self.fusing.iter().find(|(fl, _)| *fl == l)?.1;
        let nv = self.m.values[v.index()]?;
        if let Some(c) = self.iteration_cells.get(&v) {
            return Some(b.get(*c));
        }
        let ni = b.func.def_inst(nv);
        let encloses = std::iter::once(b.block)
            .chain(b.open.iter().copied())
            .any(|blk| b.func.block(blk).insts.contains(&ni));
        if encloses {
            return Some(nv);
        }
        let ty = self.f.ty(v);
        if !taped && ty != Ty::Float {
            return None;
        }
        let at = (0..b.func.blocks.len()).find(|&k| b.func.blocks[k].insts.contains(&ni))?;
        // The cell's declaration goes first in the iteration's body, its assignment right
        // after the definition.
        let c = b.in_block(body, |b| {
            let z = b.zero(ty);
            b.cell(ty, "fwd", z)
        });
        let insts = &mut b.func.blocks[body.index()].insts;
        let decl = insts.split_off(insts.len() - 2);
        insts.splice(0..0, decl);
        b.in_block(Block(at as u32), |b| b.set(c, nv));
        let insts = &mut b.func.blocks[at].insts;
        let set = insts.pop().expect("just pushed");
        let pos = insts.iter().position(|&x| x == ni).expect("the definition");
        insts.insert(pos + 1, set);
        self.iteration_cells.insert(v, c);
        Some(b.get(c))
    }

    /// Re-evaluates `v` from its operands; with `within`, those of `within`'s instructions
    /// are re-evaluated too, whatever their storage (a fill's stored expression).
    fn recompute(
        &mut self,
        b: &mut Builder,
        v: Value,
        within: Option<&HashSet<Inst>>,
    ) -> Result<Value, String> {
        let i = self.f.def_inst(v);
        let mut tmp = Remap {
            values: vec![None; self.f.values.len()],
            bufs: self.m.bufs.clone(),
        };
        for o in crate::analysis::recording::recompute_inputs(self.f, i) {
            let memo = self
                .memo
                .iter()
                .rev()
                .find_map(|scope| scope.get(&o).copied());
            let ov = match (memo, within) {
                (Some(x), _) => x,
                (None, Some(set)) if set.contains(&self.f.def_inst(o)) => {
                    let x = self.recompute(b, o, within)?;
                    self.memo.last_mut().expect("an open scope").insert(o, x);
                    x
                }
                _ => self.fetch(b, o)?,
            };
            tmp.set(o, ov);
        }
        if let InstKind::If {
            cond,
            then_blk,
            else_blk,
        } = self.f.inst(i).kind
        {
            return Ok(recompute_branch(
                b,
                self.f,
                &mut tmp,
                i,
                cond,
                [then_blk, else_blk],
                v,
            ));
        }
        Ok(tmp
            .copy_simple(b, self.f, i)
            .expect("recomputed instructions have a result"))
    }

    pub(super) fn accumulate(&mut self, b: &mut Builder, v: Value, g: Value) {
        if let Some(c) = self.adj.get(&v) {
            b.accumulate(*c, g);
        }
    }

    /// Zeroed adjoint cells for the active values defined directly in `blk`.
    pub(super) fn declare_adjoints(&mut self, b: &mut Builder, blk: Block) {
        for &i in &self.f.block(blk).insts {
            for &r in &self.f.inst(i).results {
                if self.act.value(r) && !self.plan.seg.internal.contains(&r) {
                    self.declare_adjoint(b, r);
                }
            }
        }
    }

    pub(super) fn declare_adjoint(&mut self, b: &mut Builder, v: Value) {
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

    pub(super) fn reverse_block(&mut self, b: &mut Builder, blk: Block) -> Result<(), String> {
        let insts = self.f.block(blk).insts.clone();
        for &i in insts.iter().rev() {
            if self.plan.work.get(&i).copied().unwrap_or(false) {
                b.span = self.f.inst(i).span;
                match self.plan.seg.ending_at(i) {
                    Some(k) => self.reverse_segment(b, k)?,
                    None => self.reverse_inst(b, i)?,
                }
            }
        }
        Ok(())
    }

    pub(super) fn adjoint_of(&mut self, b: &mut Builder, i: Inst) -> Option<Value> {
        let r = *self.f.inst(i).results.first()?;
        let c = *self.adj.get(&r)?;
        Some(b.get(c))
    }

    /// An operator's adjoint: each active operand receives `g · ∂r/∂operand` by its rule,
    /// fetching only the primal values the partial reads.
    fn reverse_operator(
        &mut self,
        b: &mut Builder,
        i: Inst,
        rule: &rules::Rule,
        operands: &[Value],
    ) -> Result<(), String> {
        let Some(g) = self.adjoint_of(b, i) else {
            return Ok(());
        };
        let result = self.f.inst(i).results[0];
        // Operands, then the result; fetched once, when a partial first reads them.
        let mut fetched: Vec<Option<Value>> = vec![None; operands.len() + 1];
        for (k, template) in rules::partials_of(rule, operands) {
            if !self.act.value(operands[k]) {
                continue;
            }
            let reads = rules::reads(template);
            for (j, v) in operands.iter().chain([&result]).enumerate() {
                let name = if j == operands.len() { 3 } else { j };
                if reads[name] && fetched[j].is_none() {
                    fetched[j] = Some(self.fetch(b, *v)?);
                }
            }
            // A value the partial does not read is never looked at; `g` stands in.
            let args: Vec<Value> = fetched[..operands.len()]
                .iter()
                .map(|v| v.unwrap_or(g))
                .collect();
            let r = fetched[operands.len()].unwrap_or(g);
            let t = rules::scaled(b, g, template, &args, r).finish(b);
            self.accumulate(b, operands[k], t);
        }
        Ok(())
    }

    pub(super) fn reverse_inst(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let act = |v: &Value| self.act.value(*v);
        match &data.kind {
            // Between `f32` and `f64`: the adjoint passes (codegen gives it its type).
            Cast {
                value,
                to: Ty::Float,
                float: Some(_),
                ..
            } if f.ty(*value) == Ty::Float => {
                if let Some(g) = self.adjoint_of(b, i) {
                    self.accumulate(b, *value, g);
                }
            }
            Unary(..) | Binary(..) => {
                if let Some((rule, operands)) = rules::of_operator(&data.kind) {
                    self.reverse_operator(b, i, rule, &operands)?;
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
            For { .. } | While { .. } if self.ck.contains_key(&i) => {
                self.reverse_checkpointed(b, i)?
            }
            For { .. } | While { .. } => self.reverse_loop(b, i)?,
            Call { .. } => self.reverse_call(b, i)?,
            _ => {}
        }
        Ok(())
    }

    pub(super) fn fetch_all(
        &mut self,
        b: &mut Builder,
        vs: &[Value],
    ) -> Result<Vec<Value>, String> {
        vs.iter().map(|v| self.fetch(b, *v)).collect()
    }

    /// Shadows of buffers allocated inside a nested block: zero buffers of the same shape,
    /// created where that block's reverse begins.
    pub(super) fn declare_local_shadows(
        &mut self,
        b: &mut Builder,
        blk: Block,
    ) -> Result<(), String> {
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
}

/// A [pure branch](crate::analysis::recording::pure_branch) run again: its arms copied
/// with `tmp` mapping what they read from outside; returns the copy of result `v`.
fn recompute_branch(
    b: &mut Builder,
    f: &Function,
    tmp: &mut Remap,
    i: Inst,
    cond: Value,
    arms: [Block; 2],
    v: Value,
) -> Value {
    let mut new_arms = Vec::new();
    for arm in arms {
        let nb = b.func.new_block();
        b.in_block(nb, |b| {
            for &j in &f.block(arm).insts {
                tmp.copy_simple(b, f, j);
            }
        });
        let ys = f.block(arm).yields.iter().map(|y| tmp.v(*y)).collect();
        b.set_yields(nb, ys);
        new_arms.push(nb);
    }
    let tys: Vec<Ty> = f.inst(i).results.iter().map(|r| f.ty(*r)).collect();
    let ni = b.push(
        InstKind::If {
            cond: tmp.v(cond),
            then_blk: new_arms[0],
            else_blk: new_arms[1],
        },
        &tys,
        None,
    );
    let k = f
        .inst(i)
        .results
        .iter()
        .position(|r| *r == v)
        .expect("a result");
    b.func.inst(ni).results[k]
}

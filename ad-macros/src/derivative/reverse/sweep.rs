//! The forward sweep: the primal, plus the saves (tapes, slots, call snapshots) and the
//! iteration counters the reverse sweep reads.

use super::segment::{Emitted, Leaves};
use super::*;

impl Rev<'_> {
    pub(super) fn sweep_block(&mut self, b: &mut Builder, src: Block) {
        for &i in &self.f.block(src).insts {
            b.span = self.f.inst(i).span;
            for l in self.plan.seg.hoisted_before(i) {
                self.declare_hoisted(b, l);
            }
            self.sweep_inst(b, i);
        }
    }

    pub(super) fn save(&mut self, b: &mut Builder, v: Value) {
        if self.plain || !self.plan.rec.saved.contains(&v) {
            return;
        }
        let nv = self.m.v(v);
        match self.plan.rec.storage[&v] {
            Storage::Tape(l) => {
                let idx = self.tape_index(l, self.iteration[&l]);
                b.store(self.tape[&v], idx, nv);
            }
            Storage::Slot => b.set(self.slot[&v], nv),
            _ => {}
        }
    }

    pub(super) fn sweep_inst(&mut self, b: &mut Builder, i: Inst) {
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
            For { .. }
                if self
                    .plan
                    .seg
                    .closed
                    .get(&i)
                    .is_some_and(|c| c.tangents.is_none()) =>
            {
                self.sweep_closed_loop(b, i)
                    .expect("the forward sweep reads no saved values")
            }
            For { .. } | While { .. } => self.sweep_loop(b, i),
            Call { callee, args, .. } => {
                for k in 0..args.len() {
                    if self.plain {
                        break;
                    }
                    if let (Some(t), CallArg::Buf { buf, .. }) =
                        (self.snap.get(&(i, k)).copied(), &args[k])
                    {
                        let idx = self.snapshot_row(b, i);
                        let row = match &args[k] {
                            CallArg::Buf { range: Some(p), .. } => p.row.map(|r| self.m.v(r)),
                            _ => Indices::NONE,
                        };
                        b.stmt(SaveRow {
                            tape: t,
                            idx,
                            src: self.m.b(*buf),
                            row,
                        });
                    }
                }
                if self.unrun_calls.contains(&i) {
                    return;
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
                    if self.act.buf(*buf)
                        && self.plan.structure.inst_block[i.index()] == Some(f.body)
                    {
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

    pub(super) fn bind_results(&mut self, b: &mut Builder, old: Inst, new: Inst) {
        let results = b.func.inst(new).results.clone();
        for (r, nr) in self.f.inst(old).results.clone().iter().zip(results) {
            b.func.values[nr.index()].name = self.f.value(*r).name.clone();
            self.m.set(*r, nr);
            self.save(b, *r);
        }
    }

    /// Loop `i` in the forward sweep: its entry (a checkpointer's, buffers copied whole,
    /// tapes sized: [`Self::save_rows_at_entry`], [`Self::size_parallel_tapes`],
    /// [`Self::size_tapes_at_entry`]), its header ([`Self::loop_head`]), each iteration
    /// ([`Self::sweep_iteration`]), then its results and counters after it.
    pub(super) fn sweep_loop(&mut self, b: &mut Builder, i: Inst) {
        let f = self.f;
        let data = f.inst(i);
        let exit = f.loop_parts(i).3;
        let checkpointed = self.checkpointed(i);
        let counter = match self.plain {
            true => None,
            false => self.counter.get(&i).copied(),
        };
        if checkpointed {
            self.ck_before_loop(b, i);
        }
        if !self.plain {
            self.save_rows_at_entry(b, i);
        }
        let parallel = f.parallel.get(&i).copied();
        let parallel_entry = match (parallel, self.plain) {
            (Some(_), false) => self.size_parallel_tapes(b, i, counter),
            _ => None,
        };
        let counter = counter.filter(|_| parallel.is_none());
        let entry = counter.and_then(|c| self.size_tapes_at_entry(b, i, c));
        let tangent_cells = match self.plain {
            true => None,
            false => self.declare_tangents(b, i),
        };
        let head = self.loop_head(b, i);
        let nb = head.body;
        let iteration = Iteration {
            checkpointed,
            parallel: parallel.is_some(),
            parallel_entry,
            entry,
            counter,
            tangent_cells: tangent_cells.as_deref(),
        };
        let ys = b.in_block(nb, |b| {
            self.sweep_iteration(b, i, nb, head.index, &iteration)
        });
        b.set_yields(nb, ys);
        let results = self.finish_loop_head(b, i, head);
        let ni = results.0;
        let results = results.1;
        if let Some((c, _, next)) = parallel_entry {
            b.set(c, next);
        }
        if let Some((c, k0, _, total)) = entry {
            let next = if exit.is_empty() {
                total
            } else {
                let trip = *results.last().expect("loops count their trips");
                let trip = b.int_like(trip, k0);
                b.add(k0, trip)
            };
            b.set(c, next);
        }
        if self.plan.fused.contains_key(&i) && !self.plain {
            self.fused_out.insert(ni);
        }
        if let Some(span) = parallel {
            b.func.parallel.insert(ni, span);
        }
        if checkpointed {
            let trip = *results.last().expect("loops count their trips");
            self.ck_after_loop(b, i, trip);
        }
        for (r, nr) in data.results.clone().iter().zip(results) {
            self.m.set(*r, nr);
            self.save(b, *r);
        }
        if let Some(cells) = tangent_cells {
            self.hoisted
                .insert(i, cells.into_iter().flatten().collect());
        }
    }

    /// Buffers loop `i` reads but never writes, copied whole for the reverse sweep, at
    /// its entry ([`Storage::Row`]).
    fn save_rows_at_entry(&mut self, b: &mut Builder, i: Inst) {
        let mut rows: Vec<(Buf, Buf)> = self
            .rows
            .iter()
            .filter(|((l, _), _)| *l == i)
            .map(|((_, buf), t)| (*buf, *t))
            .collect();
        rows.sort();
        for (buf, t) in rows {
            let idx = self.snapshot_row(b, i);
            b.stmt(InstKind::SaveRow {
                tape: t,
                idx,
                src: self.m.b(buf),
                row: Indices::NONE,
            });
        }
    }

    /// Sizes the tapes of parallel loop `i` (and of the loops nested in it) at its entry:
    /// iteration `j` saves into slot `j` (direct-indexed: iterations own their slots), so
    /// they hold `end` slots; inside another loop, from slot `k₀` on (`Rev::declare_saves`).
    /// Returns the counter, `k₀`, and the counter after the loop, `k₀ + end`, in that case.
    fn size_parallel_tapes(
        &mut self,
        b: &mut Builder,
        i: Inst,
        counter: Option<Cell>,
    ) -> Option<(Cell, Value, Value)> {
        let InstKind::For { range, .. } = &self.f.inst(i).kind else {
            return None;
        };
        let mut entry = None;
        let mut end = self.m.v(range.end);
        if let Some(c) = counter {
            let k0 = b.get(c);
            let e = b.int_like(end, k0);
            end = b.add(k0, e);
            entry = Some((c, k0, end));
        }
        let mut rows: Vec<Buf> = self.tapes_of(i);
        for (l, p) in self.row_of.clone() {
            if p == i {
                rows.extend(self.tapes_of(l));
                rows.push(self.counts[&l]);
            }
        }
        rows.sort();
        rows.dedup();
        for t in rows {
            b.stmt(InstKind::TapeEnsure(t, end));
        }
        entry
    }

    /// Sizes the tapes of loop `i` once at its entry when its trip count is bounded by its
    /// range. A loop over a plain range (not a fused sum, which moves its counter back in
    /// each iteration) saves iteration `j` at `k₀ + (j − start)`, with `k₀` the counter at
    /// entry, and moves the counter past its slots once, after the loop: the index is
    /// affine in `j`, so the tape gets an index window like any buffer
    /// (`codegen::window`), and no counter is stepped in the loop. Returns the counter,
    /// `k₀`, the range's start and `k₀ + len` in that case.
    fn size_tapes_at_entry(
        &mut self,
        b: &mut Builder,
        i: Inst,
        c: Cell,
    ) -> Option<(Cell, Value, Value, Value)> {
        let InstKind::For { range, .. } = &self.f.inst(i).kind else {
            return None;
        };
        let tapes: Vec<Buf> = self.tapes_of(i);
        let (s, e) = (self.m.v(range.start), self.m.v(range.end));
        let k = b.get(c);
        let len = range_len(b, s, e);
        // The range may be of another integer type; the counter is a `usize`.
        let len = b.value(
            InstKind::Cast {
                value: len,
                to: Ty::Int,
                int: Some(IntTy::Usize),
                float: None,
            },
            Ty::Int,
        );
        let total = b.add(k, len);
        for t in tapes {
            match self.row_of.get(&i) {
                Some(p) => b.stmt(InstKind::TapeEnsureRow(t, self.iteration[p], total)),
                None => b.stmt(InstKind::TapeEnsure(t, total)),
            };
        }
        let plain = range.step.is_none() && !range.rev && !self.plan.fused.contains_key(&i);
        plain.then_some((c, k, s, total))
    }

    /// The copy of loop `i`'s header: the reserved instruction, its parameters, initial
    /// values, exit flags and index (mapped from the primal's), its body's block, and its
    /// `while` condition, swept.
    fn loop_head(&mut self, b: &mut Builder, i: Inst) -> LoopHead {
        let f = self.f;
        let data = f.inst(i);
        let (params, inits, _, exit) = f.loop_parts(i);
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
        let inits: Vec<Value> = inits.iter().map(|v| self.m.v(*v)).collect();
        let exit: Vec<Value> = exit.iter().map(|v| self.m.v(*v)).collect();
        let body = b.func.new_block();
        let mut index = None;
        if let InstKind::For { index: ix, .. } = &data.kind {
            let nidx =
                b.func
                    .new_value(Ty::Int, ValueDef::LoopIndex(ni), f.value(*ix).name.clone());
            self.m.set(*ix, nidx);
            index = Some(nidx);
            if let Some(below) = self.index_bound(b, i) {
                b.func.index_below.insert(nidx, below);
            }
        }
        let cond = match &data.kind {
            InstKind::While { cond, .. } => {
                let nc = b.func.new_block();
                b.in_block(nc, |b| self.sweep_block(b, *cond));
                let cy = self.m.v(f.block(*cond).yields[0]);
                b.set_yields(nc, vec![cy]);
                Some(nc)
            }
            _ => None,
        };
        LoopHead {
            inst: ni,
            params: new_params,
            inits,
            exit,
            body,
            index,
            cond,
        }
    }

    /// One iteration of loop `i` in the forward sweep, into its new body `nb`: its slot in
    /// the tapes, its saves, its body, and what a closed, parallel or fused loop adds to
    /// it; returns the body's yields.
    fn sweep_iteration(
        &mut self,
        b: &mut Builder,
        i: Inst,
        nb: Block,
        new_index: Option<Value>,
        it: &Iteration,
    ) -> Vec<Value> {
        let f = self.f;
        let (params, _, body, _) = f.loop_parts(i);
        if it.checkpointed {
            return self.ck_forward_iteration(b, i, new_index);
        }
        if let (true, Some(ix)) = (it.parallel, new_index) {
            let slot = match it.parallel_entry {
                Some((_, k0, _)) => {
                    let j = b.int_like(ix, k0);
                    b.add(k0, j)
                }
                None => ix,
            };
            self.iteration.insert(i, slot);
            if !self.plain {
                self.parallel_counters(b, i, false);
            }
        }
        if let (Some((_, k0, s, _)), Some(j)) = (it.entry, new_index) {
            let off = b.sub(j, s);
            let off = b.int_like(off, k0);
            let k = b.add(k0, off);
            self.iteration.insert(i, k);
        } else if let Some(c) = it.counter {
            let k = b.get(c);
            let one = b.iconst(1);
            let next = b.add(k, one);
            b.set(c, next);
            if matches!(f.inst(i).kind, InstKind::While { .. }) {
                for t in self.tapes_of(i) {
                    match self.row_of.get(&i) {
                        Some(p) => b.stmt(InstKind::TapeEnsureRow(t, self.iteration[p], next)),
                        None => b.stmt(InstKind::TapeEnsure(t, next)),
                    };
                }
            }
            self.iteration.insert(i, k);
        }
        for p in &params {
            self.save(b, *p);
        }
        // A fused loop's inner fused loops reverse their iterations inside its body,
        // reading its index (`fuse::fusable_inner`).
        let fused_index = match (self.plan.fused.contains_key(&i), new_index) {
            (true, Some(ix)) if !self.plain => self.index.insert(i, ix).is_none(),
            _ => false,
        };
        let fusing = self.plan.fused.contains_key(&i) && !self.plain;
        if fusing {
            self.fusing.push((i, nb));
        }
        self.sweep_block(b, body);
        if fused_index {
            self.index.remove(&i);
        }
        if let Some(cells) = it.tangent_cells {
            self.step_tangents(b, i, cells)
                .expect("the forward sweep reads no saved values");
        }
        if it.parallel && !self.plain {
            self.save_parallel_counts(b, i);
        }
        if let (Some(&(k, c)), false) = (self.plan.fused.get(&i), self.plain) {
            if let Err(e) = self.fused_adjoint(b, i, k, c, new_index) {
                self.fuse_error.get_or_insert(e);
            }
        }
        if fusing {
            self.fusing.pop();
        }
        f.block(body).yields.iter().map(|y| self.m.v(*y)).collect()
    }

    /// Completes the copy of loop `i` begun by [`Self::loop_head`], whose body is swept:
    /// its range mapped, and its results; returns the new loop and its results.
    fn finish_loop_head(&mut self, b: &mut Builder, i: Inst, head: LoopHead) -> (Inst, Vec<Value>) {
        let f = self.f;
        let data = f.inst(i);
        let (inits, exit, nb) = (head.inits, head.exit, head.body);
        let kind = match &data.kind {
            InstKind::For { range, .. } => InstKind::For {
                range: RangeSpec {
                    start: self.m.v(range.start),
                    end: self.m.v(range.end),
                    step: range.step.map(|s| self.m.v(s)),
                    rev: range.rev,
                },
                index: head.index.expect("for index"),
                params: head.params,
                inits,
                body: nb,
                exit,
            },
            _ => InstKind::While {
                cond: head.cond.expect("while cond"),
                params: head.params,
                inits,
                body: nb,
                exit,
            },
        };
        let results: Vec<Value> = data
            .results
            .iter()
            .enumerate()
            .map(|(k, r)| {
                b.func.new_value(
                    f.ty(*r),
                    ValueDef::Result(head.inst, k as u32),
                    f.value(*r).name.clone(),
                )
            })
            .collect();
        b.finish(head.inst, kind, results.clone());
        (head.inst, results)
    }

    /// The tangent cells `T[p][k]` of a loop closed by its tangents: 1 where variable p
    /// starts at input k, else 0.
    fn declare_tangents(&mut self, b: &mut Builder, l: Inst) -> Option<Vec<Vec<Cell>>> {
        let closed = self.plan.seg.closed.get(&l)?;
        let t = closed.tangents.as_ref()?;
        let (_, inits, _, _) = self.f.loop_parts(l);
        let mut cells = Vec::new();
        for &p in &t.vars {
            let mut row = Vec::new();
            for z in &t.inputs {
                let c = b.fconst(if inits[p] == *z { 1.0 } else { 0.0 });
                row.push(b.cell(Ty::Float, "tangent", c));
            }
            cells.push(row);
        }
        Some(cells)
    }

    /// One iteration's tangent update at the end of the body (all from the old values):
    /// `T'[p][k] = Σ_q ∂yₚ/∂p_q · T[q][k] + ∂yₚ/∂zₖ`.
    fn step_tangents(
        &mut self,
        b: &mut Builder,
        l: Inst,
        cells: &[Vec<Cell>],
    ) -> Result<(), String> {
        let closed = self.plan.seg.closed[&l].clone();
        let t = closed
            .tangents
            .as_ref()
            .expect("a loop closed by its tangents");
        let seg = &closed.segment;
        let leaves = Leaves::Forward { index: None };
        let mut emitted: Emitted = vec![HashMap::new()];
        let old: Vec<Vec<Value>> = cells
            .iter()
            .map(|row| row.iter().map(|c| b.get(*c)).collect())
            .collect();
        let mut new = Vec::new();
        for (pi, row) in cells.iter().enumerate() {
            let mut new_row = Vec::new();
            for k in 0..row.len() {
                let mut acc: Option<Value> = None;
                for (qi, old_row) in old.iter().enumerate() {
                    let d = t.d_vars[pi][qi];
                    if seg.expr.is_zero(d) {
                        continue;
                    }
                    let term = if seg.expr.float_of(d) == Some(1.0) {
                        old_row[k]
                    } else {
                        let dv = self.emit_sym(b, seg, d, &mut emitted, leaves)?;
                        b.mul(dv, old_row[k])
                    };
                    acc = Some(acc.map_or(term, |a| b.add(a, term)));
                }
                let d = t.d_inputs[pi][k];
                if !seg.expr.is_zero(d) {
                    let dv = self.emit_sym(b, seg, d, &mut emitted, leaves)?;
                    acc = Some(acc.map_or(dv, |a| b.add(a, dv)));
                }
                new_row.push(acc.unwrap_or_else(|| b.fconst(0.0)));
            }
            new.push(new_row);
        }
        for (row, vals) in cells.iter().zip(new) {
            for (c, v) in row.iter().zip(vals) {
                b.set(*c, v);
            }
        }
        Ok(())
    }

    pub(super) fn tapes_of(&self, l: Inst) -> Vec<Buf> {
        self.plan
            .rec
            .saved
            .iter()
            .filter(|v| self.plan.rec.storage[v] == Storage::Tape(l))
            .map(|v| self.tape[v])
            .collect()
    }
}

/// The copy of a loop's header made before its body ([`Rev::loop_head`]).
struct LoopHead {
    inst: Inst,
    params: Vec<Value>,
    inits: Vec<Value>,
    exit: Vec<Value>,
    body: Block,
    index: Option<Value>,
    cond: Option<Block>,
}

/// What each iteration of a loop in the forward sweep does besides its body
/// ([`Rev::sweep_iteration`]).
struct Iteration<'c> {
    checkpointed: bool,
    parallel: bool,
    /// A parallel loop's counter, its value at entry and after the loop.
    parallel_entry: Option<(Cell, Value, Value)>,
    /// A loop sized at entry: its counter, its value at entry, the range's start and the
    /// counter after the loop.
    entry: Option<(Cell, Value, Value, Value)>,
    /// The counter stepped in each iteration (not a parallel loop's).
    counter: Option<Cell>,
    tangent_cells: Option<&'c [Vec<Cell>]>,
}

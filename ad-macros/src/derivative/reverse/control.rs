//! The reverse sweep of loops (the recorded or recomputed trip count run backwards, carried
//! adjoints in cells) and of calls (`g_rev` by convention, on snapshots of written buffers).

use super::*;
use crate::analysis::loops;
use crate::analysis::reuse::Backward;
use std::collections::{BTreeMap, HashSet};

impl Rev<'_> {
    pub(super) fn reverse_loop(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        if self.plan.fused.contains_key(&i) {
            // Reversed iteration by iteration in the forward sweep (`fused_adjoint`).
            return Ok(());
        }
        if self.f.parallel.contains_key(&i) {
            return self.reverse_parallel(b, i);
        }
        let f = self.f;
        let data = f.inst(i);
        let (params, inits, _, _) = f.loop_parts(i);
        let n = params.len();
        let carry = self.declare_carries(b, i);
        let private = self.privatize(b, i);
        let trip = match loops::static_trip(f, i) {
            // ⌈(end − start) / step⌉ from the range itself.
            Some(range) => {
                let (st, en) = (self.fetch(b, range.start)?, self.fetch(b, range.end)?);
                let step = range.step.map(|x| self.fetch(b, x)).transpose()?;
                trip_count(b, st, en, step)
            }
            None => self.fetch(b, data.results[n])?,
        };
        let below = self.index_bound(b, i);
        let range_vals = match &data.kind {
            InstKind::For { range, .. } => {
                let s = self.fetch(b, range.start)?;
                let e = self.fetch(b, range.end)?;
                let st = range.step.map(|x| self.fetch(b, x)).transpose()?;
                Some((s, e, st, range.rev))
            }
            _ => None,
        };
        let backward = self.backward_counters(b, i)?;
        // The loop's slots are the last `trip` before the counter: reversed iteration t
        // (the forward sweep's t-th) reads slot `base + t`, affine in t, so its tapes get
        // index windows (`codegen::window`); the counter is moved back once, after the loop.
        let base = self.counter.get(&i).copied().map(|c| {
            let end = b.get(c);
            let tr = b.int_like(trip, end);
            (c, b.sub(end, tr))
        });
        let zero = b.iconst(0);
        let ni = b.reserve();
        let t = b
            .func
            .new_value(Ty::Int, ValueDef::LoopIndex(ni), Some("rev_t".into()));
        let nb = b.func.new_block();
        let r: Result<(), String> = b.in_block(nb, |b| {
            self.memo.push(HashMap::new());
            if let Some((_, base)) = base {
                let t = b.int_like(t, base);
                let idx = b.add(base, t);
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
                if let Some(below) = below {
                    b.func.index_below.insert(idx, below);
                }
                self.index.insert(i, idx);
            }
            self.step_back(b, &backward)?;
            self.adjoint_iteration(b, i, &carry)?;
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
        if let Some((c, base)) = base {
            b.set(c, base);
        }
        self.flush_carries(b, &inits, &carry);
        self.unprivatize(b, private);
        Ok(())
    }

    /// A bound of the indices of loop `l` (for [`Function::index_below`]), as a value of
    /// the generated function: where the loop runs over `0..w` or `0..min(w, …)` (a
    /// chunk's `row.len()`) from a constant `≥ 0`, with `w` a constant or a parameter.
    pub(super) fn index_bound(&self, b: &mut Builder, l: Inst) -> Option<Value> {
        let w = crate::derivative::parallel::loop_bound(self.f, l)?;
        self.rebuilt_bound(b, w, 0)
    }

    /// Integer `v` of the primal rebuilt from constants and parameters by `−`, if it is.
    fn rebuilt_bound(&self, b: &mut Builder, v: Value, depth: u32) -> Option<Value> {
        let f = self.f;
        let ValueDef::Result(d, 0) = f.value(v).def else {
            return None;
        };
        match f.inst(d).kind {
            InstKind::IConst(c) => Some(b.iconst(c)),
            InstKind::Param(n) => Some(b.value(InstKind::Param(self.param_index[n]), Ty::Int)),
            InstKind::Binary(BinOp::Sub, x, y) if depth < 4 => {
                let x = self.rebuilt_bound(b, x, depth + 1)?;
                let y = self.rebuilt_bound(b, y, depth + 1)?;
                Some(b.sub(x, y))
            }
            _ => None,
        }
    }

    /// A cell for each backward counter of loop `l` (a parameter stepped by an inner
    /// loop, [`Storage::Backward`]), holding the loop's final value of it.
    fn backward_counters(
        &mut self,
        b: &mut Builder,
        l: Inst,
    ) -> Result<Vec<(Value, Backward, Cell)>, String> {
        let (params, ..) = self.f.loop_parts(l);
        let mut out = Vec::new();
        for p in params {
            if self.plan.rec.storage.get(&p) != Some(&Storage::Backward) {
                continue;
            }
            let bw = self.plan.rec.reuse.backwards[&p].clone();
            let last = self.fetch(b, bw.last)?;
            let c = b.cell(Ty::Int, "back", last);
            out.push((p, bw, c));
        }
        Ok(out)
    }

    /// At the start of a reversed iteration: each backward counter steps back over what
    /// the iteration's inner loop added (`±step · trip`), which gives its value when the
    /// iteration began, and the iteration reads that value.
    fn step_back(
        &mut self,
        b: &mut Builder,
        counters: &[(Value, Backward, Cell)],
    ) -> Result<(), String> {
        for (p, bw, c) in counters {
            let InstKind::For { range, .. } = &self.f.inst(bw.inner).kind else {
                unreachable!("backward counters are stepped by for loops")
            };
            let (s, e) = (self.fetch(b, range.start)?, self.fetch(b, range.end)?);
            let trip = range_len(b, s, e);
            let end = b.get(*c);
            let trip = b.int_like(trip, end);
            let step = self.fetch(b, bw.step)?;
            let moved = b.mul(trip, step);
            let begin = if bw.negative {
                b.add(end, moved)
            } else {
                b.sub(end, moved)
            };
            b.set(*c, begin);
            self.memo
                .last_mut()
                .expect("an open reverse block")
                .insert(*p, begin);
        }
        Ok(())
    }

    /// The adjoint of parallel loop `i`: a parallel loop over the same indices, in any
    /// order. Its parameters are sums (`acc + term`, checked when the loop is emitted),
    /// whose adjoint reaches every iteration unchanged: the carry is read, never written
    /// back. Outer adjoints accumulate in privatized cells, which the emitted loop turns
    /// into a deterministic parallel reduction; the tape slot is the index.
    fn reverse_parallel(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        let f = self.f;
        let InstKind::For { range, .. } = &f.inst(i).kind else {
            unreachable!("parallel loops are for loops")
        };
        let (_, inits, _, _) = f.loop_parts(i);
        let carry = self.declare_carries(b, i);
        let private = self.privatize(b, i);
        let s = self.fetch(b, range.start)?;
        let e = self.fetch(b, range.end)?;
        // Inside another loop: this entry's slots start `end` before the counter (see
        // `Rev::declare_saves`), and the counter goes back to their start after the loop.
        let entry = self.counter.get(&i).copied().map(|c| {
            let next = b.get(c);
            let len = b.int_like(e, next);
            (c, b.sub(next, len))
        });
        let ni = b.reserve();
        let t = b
            .func
            .new_value(Ty::Int, ValueDef::LoopIndex(ni), Some("par_i".into()));
        let nb = b.func.new_block();
        let r: Result<(), String> = b.in_block(nb, |b| {
            self.memo.push(HashMap::new());
            let slot = match entry {
                Some((_, k0)) => {
                    let j = b.int_like(t, k0);
                    b.add(k0, j)
                }
                None => t,
            };
            self.iteration.insert(i, slot);
            self.index.insert(i, t);
            self.parallel_counters(b, i, true);
            self.adjoint_body(b, i, &carry, false)?;
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
                    start: s,
                    end: e,
                    step: None,
                    rev: false,
                },
                index: t,
                params: vec![],
                inits: vec![],
                body: nb,
                exit: vec![],
            },
            vec![tr],
        );
        b.func.parallel.insert(ni, f.parallel[&i]);
        b.func.descending.insert(ni);
        if let Some((c, k0)) = entry {
            b.set(c, k0);
        }
        // The sums' initial values receive the adjoint of their results, once.
        self.flush_carries(b, &inits, &carry);
        self.unprivatize(b, private);
        Ok(())
    }

    /// After the loop: each privatized adjoint goes into its outer cell, which `adj`
    /// holds again.
    fn unprivatize(&mut self, b: &mut Builder, private: Vec<(Value, Cell, Cell)>) {
        for (v, outer, local) in private {
            self.adj.insert(v, outer);
            let g = b.get(local);
            b.accumulate(outer, g);
        }
    }

    /// A loop-local adjoint cell for each active float defined outside loop `l` and read
    /// inside it (a loop-invariant coefficient such as the `r` of a stencil), swapped into
    /// `adj` for the loop's reversal. The reversed body adds into a fresh local, which
    /// LLVM keeps in a register, instead of a variable of the whole sweep that it may keep
    /// on the stack (a store and a reload on the critical path of every iteration); the
    /// caller adds the local into the outer cell after the loop.
    fn privatize(&mut self, b: &mut Builder, l: Inst) -> Vec<(Value, Cell, Cell)> {
        let f = self.f;
        let mut inside = HashSet::from([l]);
        let mut read = Vec::new();
        // The body and a `while` loop's condition.
        for blk in f.child_blocks(l) {
            f.walk(blk, &mut |j| {
                inside.insert(j);
                read.extend(f.operands(j));
                for c in f.child_blocks(j) {
                    read.extend(f.block(c).yields.iter().copied());
                }
            });
            read.extend(f.block(blk).yields.iter().copied());
        }
        let mut seen = HashSet::new();
        let values: Vec<(Value, Cell)> = read
            .into_iter()
            .filter(|v| f.ty(*v) == Ty::Float && !inside.contains(&f.def_inst(*v)))
            .filter(|v| seen.insert(*v))
            .filter_map(|v| self.adj.get(&v).map(|c| (v, *c)))
            .collect();
        let mut out = Vec::new();
        for (v, outer) in values {
            let z = b.fconst(-0.0);
            let local = b.cell(Ty::Float, "acc", z);
            self.adj.insert(v, local);
            out.push((v, outer, local));
        }
        out
    }

    /// Takes out of the plan's tapes the values that fused loops save for their own
    /// iterations: their fused adjoints read them from the iteration
    /// ([`Rev::from_iteration`]).
    pub(super) fn untape_fused(&mut self) {
        let local: Vec<Value> = self
            .plan
            .rec
            .saved
            .iter()
            .copied()
            .filter(|&v| match self.plan.rec.storage[&v] {
                Storage::Tape(l) => {
                    self.plan.fused.contains_key(&l)
                        && matches!(self.f.value(v).def, ValueDef::Result(..))
                        && self.loop_of(self.f.def_inst(v)) == Some(l)
                }
                _ => false,
            })
            .collect();
        for v in local {
            self.plan.rec.saved.remove(&v);
            self.plan.iteration_saved.insert(v);
        }
    }

    /// The adjoint of the iteration of fused sum `l` that the forward sweep has just run
    /// (see [`super::fuse`]): the summed parameter's adjoint is `c · seed` in every
    /// iteration, the iteration's tapes are read at its own slot, and the counter goes back
    /// so that the next iteration reuses the slot.
    pub(super) fn fused_adjoint(
        &mut self,
        b: &mut Builder,
        l: Inst,
        k: usize,
        c: f64,
        index: Option<Value>,
    ) -> Result<(), String> {
        let si = self
            .plan
            .seed_param
            .ok_or("phidiff internal error: a fused sum without a seed")?;
        let seed = b.value(InstKind::Param(si), Ty::Float);
        let g = if c == 1.0 {
            seed
        } else {
            let cv = b.fconst(c);
            b.mul(cv, seed)
        };
        let carry = BTreeMap::from([(k, b.cell(Ty::Float, "carry", g))]);
        self.memo.push(HashMap::new());
        if let Some(ix) = index {
            self.index.insert(l, ix);
        }
        let r = self.adjoint_body(b, l, &carry, false);
        self.memo.pop();
        self.index.remove(&l);
        if let Some(cnt) = self.counter.get(&l).copied() {
            let now = b.get(cnt);
            let one = b.iconst(1);
            let back = b.sub(now, one);
            b.set(cnt, back);
        }
        r
    }

    /// The carry cell of each active loop parameter (by position), holding the adjoint
    /// of the loop's result.
    pub(super) fn declare_carries(&mut self, b: &mut Builder, l: Inst) -> BTreeMap<usize, Cell> {
        let (params, ..) = self.f.loop_parts(l);
        let mut carry = BTreeMap::new();
        for k in 0..params.len() {
            if !self.act.value(params[k]) {
                continue;
            }
            let g = match self.adj.get(&self.f.inst(l).results[k]) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            };
            carry.insert(k, b.cell(Ty::Float, "carry", g));
        }
        carry
    }

    /// After the reversed loop: the carried adjoints go to the initial values.
    pub(super) fn flush_carries(
        &mut self,
        b: &mut Builder,
        inits: &[Value],
        carry: &BTreeMap<usize, Cell>,
    ) {
        for (&k, &c) in carry {
            if self.act.value(inits[k]) {
                let g = b.get(c);
                self.accumulate(b, inits[k], g);
            }
        }
    }

    /// The adjoint of one iteration of loop `l` (its index, iteration and memo scope set
    /// up by the caller): carried adjoints in, the body reversed, carried adjoints out.
    pub(super) fn adjoint_iteration(
        &mut self,
        b: &mut Builder,
        l: Inst,
        carry: &BTreeMap<usize, Cell>,
    ) -> Result<(), String> {
        self.adjoint_body(b, l, carry, true)
    }

    /// [`Self::adjoint_iteration`]; without `carried`, the parameters' adjoints are not
    /// written back (a parallel loop's sums pass the same adjoint to every iteration).
    fn adjoint_body(
        &mut self,
        b: &mut Builder,
        l: Inst,
        carry: &BTreeMap<usize, Cell>,
        carried: bool,
    ) -> Result<(), String> {
        let (params, _, body, _) = self.f.loop_parts(l);
        self.declare_local_shadows(b, body)?;
        for &k in carry.keys() {
            self.declare_adjoint(b, params[k]);
        }
        self.declare_adjoints(b, body);
        let ys = self.f.block(body).yields.clone();
        for (&k, &c) in carry {
            if self.act.value(ys[k]) {
                let g = b.get(c);
                self.accumulate(b, ys[k], g);
            }
        }
        self.reverse_block(b, body)?;
        if carried {
            for (&k, &c) in carry {
                let g = b.get(self.adj[&params[k]]);
                b.set(c, g);
            }
        }
        Ok(())
    }

    /// `g_rev(args, shadows, seed)` adds into buffer shadows and returns scalar adjoints.
    pub(super) fn reverse_call(&mut self, b: &mut Builder, i: Inst) -> Result<(), String> {
        let f = self.f;
        let data = f.inst(i);
        let InstKind::Call { callee, args, .. } = &data.kind else {
            unreachable!()
        };
        let mut new_args = Vec::new();
        let mut shadows = Vec::new();
        let mut scalar_args = Vec::new();
        // Snapshot rows lent to the call: (tape, row, buffer), given back after it.
        let mut lent = Vec::new();
        // Shadows of buffers passed more than once, and the copy each extra occurrence
        // adds into.
        let mut again = Vec::new();
        for a in args {
            match a {
                CallArg::Scalar(v) => {
                    new_args.push(CallArg::Scalar(self.fetch(b, *v)?));
                    if f.ty(*v) == Ty::Float {
                        scalar_args.push(*v);
                    }
                    shadows.push(None);
                }
                CallArg::Buf {
                    buf,
                    mutable,
                    range,
                } => {
                    let k = new_args.len();
                    // A sub-slice's bounds where the reverse sweep runs the call.
                    let range = match range {
                        Some(p) => Some(p.try_map(|x| self.fetch(b, x))?),
                        None => None,
                    };
                    match self.snap.get(&(i, k)).copied() {
                        Some(t) => {
                            let row_part = range.is_some_and(|p| !p.row.is_empty());
                            if f.buf(*buf).rank != 1 && !row_part {
                                return Err(format!(
                                    "phidiff: the reverse of `{}` needs the 2-D buffer `{}` as it was at the call; pass 2-D buffers to calls only when the function never writes them",
                                    callee.name(),
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
                            lent.push((t, idx, tmp));
                            // The snapshot of a row is that row.
                            new_args.push(CallArg::Buf {
                                buf: tmp,
                                mutable: *mutable,
                                range: range.map(|p| Part {
                                    row: Indices::NONE,
                                    ..p
                                }),
                            });
                        }
                        None => new_args.push(CallArg::Buf {
                            buf: self.m.b(*buf),
                            mutable: false,
                            range,
                        }),
                    }
                    if f.buf(*buf).elem == Ty::Float {
                        let mut sb = match self.shadow[buf.index()] {
                            Some(sb) => sb,
                            None => zero_like(b, self.m.b(*buf)),
                        };
                        // The same buffer passed again (`dot(w, w)`): its shadow cannot be
                        // lent twice, so this occurrence's adjoint goes into a zeroed copy,
                        // added into the shadow after the call.
                        if shadows
                            .iter()
                            .flatten()
                            .any(|s| matches!(s, CallArg::Buf { buf, .. } if *buf == sb))
                        {
                            let tmp = zero_like(b, self.m.b(*buf));
                            again.push((sb, tmp));
                            sb = tmp;
                        }
                        shadows.push(Some(CallArg::Buf {
                            buf: sb,
                            mutable: true,
                            range,
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
        for (tape, idx, src) in lent {
            b.stmt(InstKind::ReturnRow { tape, idx, src });
        }
        for (dst, src) in again {
            b.stmt(InstKind::AddBuf { dst, src });
        }
        let adjs = b.func.inst(ni).results.clone();
        for (v, g) in scalar_args.iter().zip(adjs) {
            self.accumulate(b, *v, g);
        }
        Ok(())
    }
}

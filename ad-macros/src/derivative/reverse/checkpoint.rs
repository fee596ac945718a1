//! Checkpointed loops (`#[checkpoint(...)]`, see `ad_core::checkpoint`): instead of a
//! tape of every iteration, the forward sweep hands the loop-carried state to a
//! `Checkpointer` before each step, and the reverse sweep follows its actions, restoring
//! snapshots and re-running steps. The body appears in three forms:
//!
//! - *plain*: the primal step only (forward phase, and `Advance` in the reverse phase);
//! - *taped*: the primal step saving into a one-iteration tape (slot 0 of the loop's
//!   tapes; nested loops' counters restart at 0), run for the last forward step and for
//!   each `Reverse`;
//! - *adjoint*: the reverse of one iteration, reading that tape.
//!
//! A loop whose adjoint needs nothing saved once it may read the loop's parameters from the
//! restored state and re-read the buffers the step has not yet overwritten (see
//! [`Planner::with_steps`](crate::analysis::recording::Planner::with_steps)) has no taped
//! form: a `Reverse` runs the adjoint straight from the restored state, and the forward
//! phase's last step keeps a copy of its starting state for the `Adjoint` that begins the
//! reverse phase. That saves one primal step of every reversed step.
//!
//! The state is every loop parameter (scalars carried across iterations), the index of a
//! `for` loop, and every buffer the body writes that lives outside it. Memory is the
//! snapshots plus one iteration's tape.

use super::*;

/// The call of `body` a `Reverse` step records (its snapshots) but need not run: the last
/// instruction of the body that is not a `Swap`, when it is a call of a function (not a
/// method, no constant arguments such as a communicator) that returns nothing. Nothing
/// after it in the step reads what it writes (only swaps follow, which move buffers but
/// read none), its adjoint reads the snapshots, and after a `Reverse` the state is
/// undefined until the next `Restore` (`ad_core::checkpoint::Action::Reverse`). That saves
/// one primal call per reversed step of the usual `step(&u, &mut next); swap(..)` loop.
pub(super) fn unread_last_call(f: &Function, body: Block) -> Option<Inst> {
    let last = f
        .block(body)
        .insts
        .iter()
        .rev()
        .copied()
        .find(|&i| !matches!(f.inst(i).kind, InstKind::Swap(..)))?;
    match &f.inst(last).kind {
        InstKind::Call { callee, args, .. }
            if callee.receiver.is_none()
                && f.inst(last).results.is_empty()
                && args.iter().all(|a| !matches!(a, CallArg::Opaque(_))) =>
        {
            Some(last)
        }
        _ => None,
    }
}

/// The runtime parts of one checkpointed loop.
#[derive(Clone, Debug)]
pub(super) struct CkLoop {
    /// `checkpointer_{id}` in the generated code.
    pub id: u32,
    /// The buffers (primal ids) the body writes that live outside it, in state order.
    pub bufs: Vec<Buf>,
    /// The forward phase's step counter.
    pub steps: Option<Cell>,
    /// A `for` loop's index of the step being run (part of the state; during a taped step,
    /// the index its adjoint reads).
    pub index: Option<Cell>,
    /// Reversed from restored states, without a taped step.
    pub tapeless: bool,
    /// Without a taped step: the starting state of the forward phase's last step, each
    /// parameter's and each state buffer's (in the order of `bufs`; derivative ids).
    pub kept: Vec<Cell>,
    pub kept_bufs: Vec<Buf>,
}

/// The buffers the body of loop `l` writes that are allocated outside it.
pub(super) fn state_bufs(f: &Function, l: Inst) -> Vec<Buf> {
    let (_, _, body, _) = f.loop_parts(l);
    let mut written = std::collections::BTreeSet::new();
    let mut local = std::collections::BTreeSet::new();
    f.walk(body, &mut |i| {
        written.extend(f.written_bufs(i));
        if let InstKind::Alloc { buf, .. } = &f.inst(i).kind {
            local.insert(*buf);
        }
    });
    written.difference(&local).copied().collect()
}

impl Rev<'_> {
    /// The checkpointed loops the reverse sweep reverses (the others are plain loops).
    pub(super) fn plan_checkpoints(&mut self) {
        let mut loops: Vec<Inst> = self.f.checkpoints.keys().copied().collect();
        loops.sort();
        for l in loops {
            if !self.plan.work.get(&l).copied().unwrap_or(false) {
                continue;
            }
            let id = self.ck.len() as u32;
            let bufs = state_bufs(self.f, l);
            self.ck.insert(
                l,
                CkLoop {
                    id,
                    bufs,
                    steps: None,
                    index: None,
                    tapeless: self.plan.steps.contains(&l),
                    kept: Vec::new(),
                    kept_bufs: Vec::new(),
                },
            );
        }
    }

    /// Whether loop `l` is checkpointed and is being swept for the record (not re-run).
    pub(super) fn checkpointed(&self, l: Inst) -> bool {
        !self.plain && self.ck.contains_key(&l)
    }

    /// Before the forward loop: one-slot tapes, the checkpointer, the step counter.
    pub(super) fn ck_before_loop(&mut self, b: &mut Builder, l: Inst) {
        let f = self.f;
        let one = b.iconst(1);
        for t in self.tapes_of(l) {
            b.stmt(InstKind::TapeEnsure(t, one));
        }
        let (_, _, _, exit) = f.loop_parts(l);
        let trip = match &f.inst(l).kind {
            InstKind::For { range, .. } if exit.is_empty() => {
                let (s, e) = (self.m.v(range.start), self.m.v(range.end));
                let step = range.step.map(|x| self.m.v(x));
                Some(trip_count(b, s, e, step))
            }
            _ => None,
        };
        let spec = &f.checkpoints[&l];
        let scheme = match spec.scheme {
            CkScheme::Revolve(n) => CkScheme::Revolve(self.m.v(n)),
            CkScheme::Periodic(n) => CkScheme::Periodic(self.m.v(n)),
            CkScheme::Online(n) => CkScheme::Online(self.m.v(n)),
        };
        let id = self.ck[&l].id;
        b.stmt(InstKind::CkNew {
            ck: id,
            spec: CheckpointSpec {
                scheme,
                disk: spec.disk,
                attr: spec.attr.clone(),
            },
            trip,
        });
        let zero = b.iconst(0);
        let steps = b.cell(Ty::Int, "ck_step", zero);
        let index = match &f.inst(l).kind {
            InstKind::For { range, .. } => {
                let s = self.m.v(range.start);
                Some(b.cell(Ty::Int, "ck_index", s))
            }
            _ => None,
        };
        let (mut kept, mut kept_bufs) = (Vec::new(), Vec::new());
        if self.ck[&l].tapeless {
            let (params, inits, ..) = f.loop_parts(l);
            for (p, init) in params.iter().zip(&inits) {
                let v = self.m.v(*init);
                kept.push(b.cell(f.ty(*p), "ck_kept", v));
            }
            for &x in &self.ck[&l].bufs {
                let nb = self.m.b(x);
                let data = b.func.buf(nb).clone();
                let copy = b.func.new_buf(BufData {
                    name: format!("kept_{}", data.name),
                    kind: BufKind::Local,
                    ..data
                });
                b.stmt(InstKind::Alloc {
                    buf: copy,
                    dims: vec![],
                    init: AllocInit::Copy(nb),
                });
                kept_bufs.push(copy);
            }
        }
        let ck = self.ck.get_mut(&l).expect("planned");
        ck.steps = steps.into();
        ck.index = index;
        ck.kept = kept;
        ck.kept_bufs = kept_bufs;
    }

    /// One forward iteration: hand the state to the checkpointer, then run the step taped
    /// or plain as it says. Returns the values the iteration yields.
    pub(super) fn ck_forward_iteration(
        &mut self,
        b: &mut Builder,
        l: Inst,
        index: Option<Value>,
    ) -> Vec<Value> {
        let f = self.f;
        let ck = self.ck[&l].clone();
        let (params, _, body, _) = f.loop_parts(l);
        let steps = ck.steps.expect("declared before the loop");
        let k = b.get(steps);
        let one = b.iconst(1);
        let next = b.add(k, one);
        b.set(steps, next);
        let mut state: Vec<CkItem> = params.iter().map(|p| CkItem::Value(self.m.v(*p))).collect();
        state.extend(index.map(CkItem::Value));
        state.extend(ck.bufs.iter().map(|x| CkItem::Buf(self.m.b(*x))));
        let taped = b.value(
            InstKind::CkForwardStep {
                ck: ck.id,
                step: k,
                state,
            },
            Ty::Bool,
        );
        let (t, e) = (b.func.new_block(), b.func.new_block());
        b.in_block(t, |b| {
            if let (Some(c), Some(ix)) = (ck.index, index) {
                b.set(c, ix);
            }
            if ck.tapeless {
                // The last step: its starting state is kept for the first `Adjoint`.
                for (p, c) in params.iter().zip(&ck.kept) {
                    let v = self.m.v(*p);
                    b.set(*c, v);
                }
                for (x, k) in ck.bufs.iter().zip(&ck.kept_bufs) {
                    let src = self.m.b(*x);
                    b.stmt(InstKind::CopyFrom { dst: *k, src });
                }
                self.plain_step(b, body);
            } else {
                self.ck_taped_step(b, l);
            }
            let ys = f.block(body).yields.iter().map(|y| self.m.v(*y)).collect();
            b.set_yields(t, ys);
        });
        b.in_block(e, |b| {
            self.plain_step(b, body);
            let ys = f.block(body).yields.iter().map(|y| self.m.v(*y)).collect();
            b.set_yields(e, ys);
        });
        let tys: Vec<Ty> = params.iter().map(|p| f.ty(*p)).collect();
        let i = b.push(
            InstKind::If {
                cond: taped,
                then_blk: t,
                else_blk: e,
            },
            &tys,
            None,
        );
        b.func.inst(i).results.clone()
    }

    /// After the forward loop: the step count goes to the checkpointer.
    pub(super) fn ck_after_loop(&mut self, b: &mut Builder, l: Inst, trip: Value) {
        b.stmt(InstKind::CkEndForward {
            ck: self.ck[&l].id,
            count: trip,
        });
    }

    /// The body run for the record into slot 0 of the loop's tapes, nested loops' counters
    /// restarted (the loop's parameters and index already mapped).
    fn ck_taped_step(&mut self, b: &mut Builder, l: Inst) {
        let (params, _, body, _) = self.f.loop_parts(l);
        let zero = b.iconst(0);
        for c in self.nested_counters(l) {
            b.set(c, zero);
        }
        self.iteration.insert(l, zero);
        for p in &params {
            self.save(b, *p);
        }
        self.sweep_block(b, body);
    }

    /// The body run for its values only: no saves, no counters.
    fn plain_step(&mut self, b: &mut Builder, body: Block) {
        let was = std::mem::replace(&mut self.plain, true);
        self.sweep_block(b, body);
        self.plain = was;
    }

    /// The iteration counters of the loops nested in `l`.
    fn nested_counters(&self, l: Inst) -> Vec<Cell> {
        let (_, _, body, _) = self.f.loop_parts(l);
        let mut out = Vec::new();
        self.f.walk(body, &mut |i| {
            // Loops in a parallel loop restart their counters in its iterations.
            if let (Some(c), false) = (self.counter.get(&i), self.row_of.contains_key(&i)) {
                out.push(*c);
            }
        });
        out
    }

    /// The reverse phase of checkpointed loop `l`.
    pub(super) fn reverse_checkpointed(&mut self, b: &mut Builder, l: Inst) -> Result<(), String> {
        let f = self.f;
        let data = f.inst(l);
        let ck = self.ck[&l].clone();
        let (params, inits, body, _) = f.loop_parts(l);
        let carry = self.declare_carries(b, l);
        // The state as cells (the final values to start with; the first action restores
        // or needs none).
        let mut cells = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let v = self.m.v(data.results[k]);
            cells.push(b.cell(f.ty(*p), "ck_state", v));
        }
        let mut state: Vec<CkItem> = cells.iter().map(|c| CkItem::Cell(*c)).collect();
        state.extend(ck.index.map(CkItem::Cell));
        state.extend(ck.bufs.iter().map(|x| CkItem::Buf(self.m.b(*x))));
        // Steps of an `Advance`: plain, moving the state on.
        let advance = b.func.new_block();
        b.in_block(advance, |b| {
            self.ck_enter_step(b, l, &ck, &cells);
            self.plain_step(b, body);
            let ys: Vec<Value> = f.block(body).yields.iter().map(|y| self.m.v(*y)).collect();
            for (c, y) in cells.iter().zip(ys) {
                b.set(*c, y);
            }
            if let (Some(c), InstKind::For { range, .. }) = (ck.index, &data.kind) {
                let ix = b.get(c);
                let stride = match range.step {
                    Some(s) => self.m.v(s),
                    None => b.iconst(1),
                };
                let next = if range.rev {
                    b.sub(ix, stride)
                } else {
                    b.add(ix, stride)
                };
                b.set(c, next);
            }
        });
        // `Reverse`: the taped step from the current state. The state is undefined after
        // it, so a last call whose outputs nothing reads is recorded but not run.
        let taped = b.func.new_block();
        if !ck.tapeless {
            b.in_block(taped, |b| {
                self.ck_enter_step(b, l, &ck, &cells);
                self.unrun_calls.extend(unread_last_call(f, body));
                self.ck_taped_step(b, l);
                self.unrun_calls.clear();
            });
        }
        // `Adjoint` without a taped step: the kept starting state of the last step.
        let kept = b.func.new_block();
        b.in_block(kept, |b| {
            for (c, k) in cells.iter().zip(&ck.kept) {
                let v = b.get(*k);
                b.set(*c, v);
            }
            for (x, k) in ck.bufs.iter().zip(&ck.kept_bufs) {
                let dst = self.m.b(*x);
                b.stmt(InstKind::CopyFrom { dst, src: *k });
            }
        });
        // `Reverse` and `Adjoint`: the adjoint of the taped step.
        let adjoint = b.func.new_block();
        let r: Result<(), String> = b.in_block(adjoint, |b| {
            self.memo.push(HashMap::new());
            if ck.tapeless {
                // The parameters from the restored state (their storage is `State`).
                for (p, c) in params.iter().zip(&cells) {
                    let v = b.get(*c);
                    self.memo.last_mut().expect("pushed").insert(*p, v);
                }
            }
            let zero = b.iconst(0);
            self.iteration.insert(l, zero);
            if let Some(c) = ck.index {
                let ix = b.get(c);
                self.index.insert(l, ix);
            }
            let r = self.adjoint_iteration(b, l, &carry);
            self.memo.pop();
            r
        });
        r?;
        b.stmt(InstKind::CkReverse {
            ck: ck.id,
            state,
            advance,
            taped,
            kept,
            adjoint,
        });
        self.flush_carries(b, &inits, &carry);
        Ok(())
    }

    /// At the top of a re-run step: the loop's parameters and index from the state cells
    /// (and a `while` condition's values, which the body may read).
    fn ck_enter_step(&mut self, b: &mut Builder, l: Inst, ck: &CkLoop, cells: &[Cell]) {
        let f = self.f;
        let (params, ..) = f.loop_parts(l);
        for (p, c) in params.iter().zip(cells) {
            let v = b.get(*c);
            self.m.set(*p, v);
        }
        match &f.inst(l).kind {
            InstKind::For { index, .. } => {
                let c = ck.index.expect("for loops keep their index");
                let v = b.get(c);
                self.m.set(*index, v);
            }
            InstKind::While { cond, .. } => self.plain_step(b, *cond),
            _ => unreachable!("checkpointed loops are loops"),
        }
    }

    /// Copies of the `&mut` buffer parameters checkpointed loops restore, taken at the end
    /// of the forward sweep so the reverse sweep can leave the primal's final values.
    pub(super) fn ck_keep_outputs(&mut self, b: &mut Builder) -> Vec<(Buf, Buf)> {
        let mut kept = std::collections::BTreeSet::new();
        for ck in self.ck.values() {
            for &x in &ck.bufs {
                if matches!(self.f.buf(x).kind, BufKind::Param(_)) {
                    kept.insert(x);
                }
            }
        }
        let mut out = Vec::new();
        for x in kept {
            let nb = self.m.b(x);
            let data = b.func.buf(nb).clone();
            let copy = b.func.new_buf(BufData {
                name: format!("final_{}", data.name),
                kind: BufKind::Local,
                ..data
            });
            b.stmt(InstKind::Alloc {
                buf: copy,
                dims: vec![],
                init: AllocInit::Copy(nb),
            });
            out.push((nb, copy));
        }
        out
    }
}

/// Checks that each checkpointed loop of primal `f` can be re-run in the reverse sweep:
/// every buffer its body reads and does not write (so is not part of its state) still
/// holds the same contents then, that is, no statement after the loop writes it.
pub fn check(f: &Function) -> Result<(), syn::Error> {
    let top = &f.block(f.body).insts;
    for (pos, &l) in top.iter().enumerate() {
        if !f.checkpoints.contains_key(&l) {
            continue;
        }
        let state = state_bufs(f, l);
        let (_, _, body, _) = f.loop_parts(l);
        let mut read = std::collections::BTreeSet::new();
        f.walk(body, &mut |i| match &f.inst(i).kind {
            InstKind::Load(x, _) => {
                read.insert(*x);
            }
            InstKind::CopyFrom { src, .. }
            | InstKind::Alloc {
                init: AllocInit::Copy(src),
                ..
            } => {
                read.insert(*src);
            }
            InstKind::Call { args, .. } => read.extend(args.iter().filter_map(|a| match a {
                CallArg::Buf { buf, .. } => Some(*buf),
                _ => None,
            })),
            _ => {}
        });
        let mut later = std::collections::BTreeSet::new();
        for &i in &top[pos + 1..] {
            later.extend(f.written_bufs(i));
            for c in f.child_blocks(i) {
                f.walk(c, &mut |j| later.extend(f.written_bufs(j)));
            }
        }
        if let Some(x) = read
            .iter()
            .find(|x| !state.contains(x) && later.contains(x))
        {
            let name = &f.buf(*x).name;
            return Err(syn::Error::new_spanned(
                &f.checkpoints[&l].attr,
                format!(
                    "phidiff: this checkpointed loop reads `{name}`, which is written after the loop; \
                     the reverse sweep re-runs the loop's steps and would read the later contents. \
                     Let the loop read a copy made before it (`let {name}_in = {name}.clone();`)"
                ),
            ));
        }
    }
    Ok(())
}

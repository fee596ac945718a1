//! To-be-recorded analysis: which primal values the reverse sweep needs and how it gets
//! each one back — read directly (top-level values stay in scope), recomputed (cheap pure
//! expressions of available values and read-only buffers), or saved during the forward
//! sweep in a scalar slot or in a direct-indexed tape of the innermost enclosing loop.

use crate::analysis::activity::Activity;
use crate::analysis::reuse::{same_every_time, Reuse};
use crate::ir::*;
use crate::pipeline::{Pass, Passes};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Storage {
    /// Defined in the function's top-level block: in scope during the reverse sweep.
    Direct,
    /// The induction variable of this loop, rebuilt from the reversed iteration count.
    Index(Inst),
    /// Re-evaluated from its operands in the reverse sweep.
    Recompute,
    /// Saved in a tape slot of this loop, indexed by the loop's iteration.
    Tape(Inst),
    /// Saved in one scalar slot: defined inside a branch outside any loop, or the same in
    /// every iteration of its loops (see `Planner::save_site`).
    Slot,
    /// Equal to this other value (a load of what was just stored or loaded).
    Alias(Value),
    /// An integer loop parameter rebuilt from its loop's index (see [`Induction`](crate::analysis::reuse::Induction)).
    Induction,
    /// An integer loop parameter stepped by an inner loop, run backwards from its final
    /// value in the loop's reverse sweep (see [`Backward`](crate::analysis::reuse::Backward)).
    Backward,
    /// A load of what an earlier loop stored, re-evaluated (see [`Fill`](crate::analysis::reuse::Fill)).
    Fill,
    /// A load of a buffer that loop `L` (this instruction) never writes, read from the copy
    /// of the buffer saved when the forward sweep entered `L` (see [`row_snapshots`]).
    Row(Inst),
    /// A loop-carried parameter of this checkpointed loop, reversed from its restored state
    /// (see [`Planner::with_steps`]): the reverse sweep reads it from the state.
    State(Inst),
}

/// Nesting facts: the block each instruction sits in and the instruction owning each block.
pub struct Structure {
    pub inst_block: Vec<Option<Block>>,
    pub block_owner: Vec<Option<Inst>>,
    /// Position of each instruction in its block.
    pub inst_pos: Vec<usize>,
}

impl Structure {
    pub fn new(f: &Function) -> Self {
        let mut s = Structure {
            inst_block: vec![None; f.insts.len()],
            block_owner: vec![None; f.blocks.len()],
            inst_pos: vec![0; f.insts.len()],
        };
        fn go(f: &Function, b: Block, s: &mut Structure) {
            for (pos, &i) in f.block(b).insts.iter().enumerate() {
                s.inst_block[i.index()] = Some(b);
                s.inst_pos[i.index()] = pos;
                for c in f.child_blocks(i) {
                    s.block_owner[c.index()] = Some(i);
                    go(f, c, s);
                }
            }
        }
        go(f, f.body, &mut s);
        s
    }

    /// The block a value is defined in (loop indices and parameters: the loop body).
    pub fn def_block(&self, f: &Function, v: Value) -> Block {
        match f.value(v).def {
            ValueDef::Result(i, _) => self.inst_block[i.index()].expect("placed instruction"),
            ValueDef::LoopIndex(l) | ValueDef::LoopParam(l, _) => match &f.inst(l).kind {
                InstKind::For { body, .. } | InstKind::While { body, .. } => *body,
                _ => unreachable!("loop value of a non-loop"),
            },
        }
    }

    /// The statements enclosing `i`, outermost first, ending with `i`.
    pub fn chain(&self, mut i: Inst) -> Vec<Inst> {
        let mut chain = vec![i];
        while let Some(owner) = self.inst_block[i.index()].and_then(|b| self.block_owner[b.index()])
        {
            chain.push(owner);
            i = owner;
        }
        chain.reverse();
        chain
    }

    /// Whether every execution of `w` comes before every execution of `at`: in the
    /// innermost block holding both, `w`'s statement comes first, and no loop encloses
    /// that block (its next iteration would run `w` again).
    pub fn done_before(&self, f: &Function, w: Inst, at: Inst) -> bool {
        let (cw, ca) = (self.chain(w), self.chain(at));
        let k = cw.iter().zip(&ca).take_while(|(x, y)| x == y).count();
        let (Some(sw), Some(sa)) = (cw.get(k), ca.get(k)) else {
            return false;
        };
        let same_block = self.inst_block[sw.index()] == self.inst_block[sa.index()];
        let in_loop = cw[..k].iter().any(|o| {
            matches!(
                f.inst(*o).kind,
                InstKind::For { .. } | InstKind::While { .. }
            )
        });
        same_block && !in_loop && self.inst_pos[sw.index()] < self.inst_pos[sa.index()]
    }

    /// The innermost loop whose body (or condition) contains block `b`.
    pub fn enclosing_loop(&self, f: &Function, mut b: Block) -> Option<Inst> {
        while let Some(owner) = self.block_owner[b.index()] {
            if matches!(
                f.inst(owner).kind,
                InstKind::For { .. } | InstKind::While { .. }
            ) {
                return Some(owner);
            }
            b = self.inst_block[owner.index()].expect("placed instruction");
        }
        None
    }
}

/// An `if` whose arms hold only scalar arithmetic (no loads, calls, jumps or nested
/// blocks), so the reverse sweep can run it again from its inputs.
pub fn pure_branch(f: &Function, i: Inst) -> bool {
    use InstKind::*;
    matches!(f.inst(i).kind, If { .. })
        && f.child_blocks(i).iter().all(|blk| {
            f.block(*blk).insts.iter().all(|j| {
                matches!(
                    f.inst(*j).kind,
                    FConst(_)
                        | IConst(_)
                        | BConst(_)
                        | Unary(..)
                        | Binary(..)
                        | Cast { .. }
                        | Math(..)
                )
            })
        })
}

/// The values re-evaluating instruction `i` reads: its operands, and for a
/// [pure branch](pure_branch) what its arms read from outside them.
pub fn recompute_inputs(f: &Function, i: Inst) -> Vec<Value> {
    let mut out = f.operands(i);
    if matches!(f.inst(i).kind, InstKind::If { .. }) {
        let mut inner = std::collections::HashSet::new();
        for blk in f.child_blocks(i) {
            for &j in &f.block(blk).insts {
                inner.extend(f.inst(j).results.iter().copied());
            }
        }
        for blk in f.child_blocks(i) {
            let reads = f.block(blk).insts.iter().flat_map(|j| f.operands(*j));
            for o in reads.chain(f.block(blk).yields.iter().copied()) {
                if !inner.contains(&o) && !out.contains(&o) {
                    out.push(o);
                }
            }
        }
    }
    out
}

/// Whether the integer `v` depends on a buffer's contents (a `Load` within `depth`
/// arithmetic steps), not only on loop indices, parameters and constants.
fn data_dependent(f: &Function, v: Value, depth: u32) -> bool {
    let ValueDef::Result(i, _) = f.value(v).def else {
        return false;
    };
    match &f.inst(i).kind {
        InstKind::Load(..) => true,
        InstKind::Unary(..) | InstKind::Binary(..) | InstKind::Cast { .. } if depth > 0 => f
            .operands(i)
            .into_iter()
            .any(|o| data_dependent(f, o, depth - 1)),
        _ => false,
    }
}

/// Whether buffer `buf`, read at instruction `at`, holds the same contents there and during
/// the whole reverse sweep: it is in scope there (a parameter or a top-level allocation) and
/// every write of it runs before `at` and never again after (the reverse sweep writes no
/// primal buffer).
pub fn stable_at(f: &Function, structure: &Structure, buf: Buf, at: Inst) -> bool {
    let mut stable = true;
    f.walk(f.body, &mut |w| {
        if stable && f.written_bufs(w).contains(&buf) {
            // An allocation inside a block is out of scope in the reverse sweep.
            let nested_alloc = matches!(f.inst(w).kind, InstKind::Alloc { .. })
                && structure.inst_block[w.index()] != Some(f.body);
            stable = !nested_alloc && structure.done_before(f, w, at);
        }
    });
    stable && (matches!(f.buf(buf).kind, BufKind::Param(_)) || has_top_alloc(f, buf))
}

fn has_top_alloc(f: &Function, buf: Buf) -> bool {
    f.block(f.body)
        .insts
        .iter()
        .any(|i| matches!(f.inst(*i).kind, InstKind::Alloc { buf: b, .. } if b == buf))
}

/// For each instruction, whether it is a read (`Load`, `Len`) of a buffer that is
/// [stable](stable_at) there, so the reverse sweep may read it again instead of saving it.
pub fn stable_reads(f: &Function, structure: &Structure) -> Vec<bool> {
    let mut stable = vec![false; f.insts.len()];
    f.walk(f.body, &mut |i| {
        if let InstKind::Load(b, _) | InstKind::Len(b, _) = f.inst(i).kind {
            stable[i.index()] = f.final_reads.contains(&i) || stable_at(f, structure, b, i);
        }
    });
    stable
}

/// The reads (`Load`, `Len`) inside top-level checkpointed loop `l` that see the contents
/// their buffer had when the iteration began: the buffer is in scope in the reverse sweep
/// (a parameter or a top-level allocation), the loop's condition never writes it, and the
/// body writes it only in statements after the read's (a step that writes `next` and reads
/// `u`, then swaps them). An adjoint run from the iteration's restored state, before any of
/// the step runs, may read them again instead of taping them.
pub fn step_stable_reads(f: &Function, structure: &Structure, l: Inst) -> Vec<Inst> {
    let (cond, body) = match &f.inst(l).kind {
        InstKind::For { body, .. } => (None, *body),
        InstKind::While { cond, body, .. } => (Some(*cond), *body),
        _ => return Vec::new(),
    };
    // The statement of the loop's own blocks that contains `i`, as an order within one
    // iteration (the condition's statements first).
    let order = |i: Inst| -> Option<(bool, usize)> {
        let chain = structure.chain(i);
        if chain.first() != Some(&l) {
            return None;
        }
        let s = *chain.get(1)?;
        let blk = structure.inst_block[s.index()]?;
        Some((blk == body, structure.inst_pos[s.index()]))
    };
    let mut writes: Vec<(Buf, (bool, usize))> = Vec::new();
    let mut reads: Vec<(Inst, Buf)> = Vec::new();
    let mut visit = |i: Inst| {
        let Some(at) = order(i) else { return };
        for x in f.written_bufs(i) {
            writes.push((x, at));
        }
        if let InstKind::Load(x, _) | InstKind::Len(x, _) = f.inst(i).kind {
            reads.push((i, x));
        }
    };
    for blk in cond.into_iter().chain([body]) {
        f.walk(blk, &mut visit);
    }
    reads
        .into_iter()
        .filter(|&(i, x)| {
            let at = order(i).expect("read inside the loop");
            let in_scope = matches!(f.buf(x).kind, BufKind::Param(_)) || has_top_alloc(f, x);
            in_scope
                && writes
                    .iter()
                    .all(|&(w, when)| w != x || (when.0 && when > at))
        })
        .map(|(i, _)| i)
        .collect()
}

/// Loads whose buffer is better saved whole than element by element: for each float load
/// of a rank-1 buffer inside a loop, the outermost loop `L` around it that never writes the
/// buffer, when `L` reads the buffer at two or more distinct indices (a stencil reading `u[k − 1]`,
/// `u[k]`, `u[k + 1]` of a state the enclosing time loop overwrites). One copy of the
/// buffer per entry of `L` then replaces a tape entry per load and iteration (ParDiff's
/// tape of whole tensors); the reverse sweep reads the copy at the recomputed indices.
/// No loop around the load may be parallel or checkpointed (their tapes have other rows).
pub fn row_snapshots(f: &Function, structure: &Structure) -> BTreeMap<Inst, Inst> {
    let mut candidates: BTreeMap<Inst, Inst> = BTreeMap::new();
    // The distinct index lists each loop reads each buffer at (`q[j] * q[j]` is one).
    let mut places: BTreeMap<(Inst, Buf), BTreeSet<Vec<Value>>> = BTreeMap::new();
    let writes_in = |l: Inst, buf: Buf| {
        let mut w = false;
        for blk in f.child_blocks(l) {
            f.walk(blk, &mut |i| w |= f.written_bufs(i).contains(&buf));
        }
        w
    };
    f.walk(f.body, &mut |i| {
        let InstKind::Load(buf, idx) = &f.inst(i).kind else {
            return;
        };
        let buf = *buf;
        if f.buf(buf).rank != 1 || f.ty(f.inst(i).results[0]) != Ty::Float {
            return;
        }
        let chain = structure.chain(i);
        let loops: Vec<Inst> = chain[..chain.len() - 1]
            .iter()
            .copied()
            .filter(|l| {
                matches!(
                    f.inst(*l).kind,
                    InstKind::For { .. } | InstKind::While { .. }
                )
            })
            .collect();
        if loops
            .iter()
            .any(|l| f.parallel.contains_key(l) || f.checkpoints.contains_key(l))
        {
            return;
        }
        if let Some(l) = loops.iter().copied().find(|l| !writes_in(*l, buf)) {
            candidates.insert(i, l);
            places.entry((l, buf)).or_default().insert(idx.clone());
        }
    });
    candidates
        .into_iter()
        .filter(|(i, l)| {
            let InstKind::Load(buf, _) = f.inst(*i).kind else {
                unreachable!()
            };
            places[&(*l, buf)].len() >= 2
        })
        .collect()
}

pub struct Recording {
    pub storage: BTreeMap<Value, Storage>,
    /// Values saved in the forward sweep.
    pub saved: BTreeSet<Value>,
    /// Buffer arguments of calls copied before the call, for the callee's reverse.
    pub snapshots: BTreeSet<(Inst, usize)>,
    /// Buffers copied whole when the forward sweep enters a loop ([`Storage::Row`]).
    pub rows: BTreeSet<(Inst, Buf)>,
    /// Values rebuilt from others (aliases, inductions, fills).
    pub reuse: Reuse,
}

impl Recording {
    /// Whether the forward sweep saves anything for loop `l` (a value defined in it, or a
    /// call argument snapshot taken in it).
    pub fn saves_inside(&self, f: &Function, structure: &Structure, l: Inst) -> bool {
        let inside = |i: Inst| structure.chain(i).contains(&l);
        self.saved.iter().any(|v| inside(f.def_inst(*v)))
            || self.snapshots.iter().any(|(i, _)| inside(*i))
            || self.rows.iter().any(|(i, _)| inside(*i))
    }
}

/// The largest expression (in weighted nodes) the reverse sweep re-evaluates instead of
/// saving, outside coarsened segments. `coarsen = off` uses 0: every intermediate is saved.
pub const RECOMPUTE_BUDGET: u32 = 12;

pub struct Planner<'a> {
    f: &'a Function,
    pub structure: Structure,
    /// Reads whose buffer is stable (see [`stable_reads`]).
    stable: Vec<bool>,
    budget: u32,
    storage: BTreeMap<Value, Storage>,
    cost: BTreeMap<Value, u32>,
    saved: BTreeSet<Value>,
    /// Call arguments (call, argument position) whose buffer is snapshotted for the reverse.
    snapshots: BTreeSet<(Inst, usize)>,
    reuse: Reuse,
    /// Checkpointed loops reversed from their restored state (see [`Self::with_steps`]).
    steps: BTreeSet<Inst>,
    /// Loads that may be read from a copy of their buffer (see [`row_snapshots`]).
    row_candidates: BTreeMap<Inst, Inst>,
    rows: BTreeSet<(Inst, Buf)>,
    /// Values that are the same in every iteration of their loops get one slot
    /// (`Storage::Slot`) instead of a tape (the pass `same_slots`).
    same_slots: bool,
}

impl<'a> Planner<'a> {
    /// Plans checkpointed loops `steps` (top-level statements) to be reversed one iteration
    /// at a time from the state their checkpointer restored, with no taped re-run of the
    /// step: their parameters are read from that state ([`Storage::State`]) and their
    /// [step-stable](step_stable_reads) reads may be re-evaluated. Valid only if the plan
    /// then saves nothing inside them; the caller checks ([`Recording::saves_inside`]) and
    /// plans again without the loops that failed.
    pub fn with_steps(mut self, steps: &BTreeSet<Inst>) -> Self {
        for &l in steps {
            for i in step_stable_reads(self.f, &self.structure, l) {
                self.stable[i.index()] = true;
            }
        }
        self.steps = steps.clone();
        self
    }

    pub fn new(f: &'a Function, _act: &Activity, budget: u32, passes: Passes) -> Self {
        let structure = Structure::new(f);
        let stable = stable_reads(f, &structure);
        let reuse = Reuse::new(f, &structure, passes.on(Pass::BackwardCounters));
        let row_candidates = match budget {
            0 => BTreeMap::new(),
            _ => row_snapshots(f, &structure),
        };
        Planner {
            row_candidates,
            rows: BTreeSet::new(),
            reuse,
            f,
            structure,
            stable,
            budget,
            storage: BTreeMap::new(),
            cost: BTreeMap::new(),
            saved: BTreeSet::new(),
            snapshots: BTreeSet::new(),
            steps: BTreeSet::new(),
            same_slots: passes.on(Pass::SameSlots),
        }
    }

    /// Records that the reverse sweep reads `v`; decides how, and requests its operands when
    /// it is recomputed.
    pub fn need(&mut self, v: Value) {
        if self.storage.contains_key(&v) {
            return;
        }
        let s = self.decide(v);
        self.storage.insert(v, s);
        match s {
            Storage::Recompute => {
                let i = self.f.def_inst(v);
                for o in recompute_inputs(self.f, i) {
                    self.need(o);
                }
            }
            Storage::Tape(_) | Storage::Slot => {
                self.saved.insert(v);
            }
            Storage::Alias(w) => self.need(w),
            Storage::Row(l) => {
                let i = self.f.def_inst(v);
                let InstKind::Load(buf, idx) = &self.f.inst(i).kind else {
                    unreachable!("row reads are loads")
                };
                self.rows.insert((l, *buf));
                for x in idx.clone() {
                    self.need(x);
                }
            }
            Storage::Induction => {
                let ind = self.reuse.inductions[&v].clone();
                let InstKind::For { range, index, .. } = &self.f.inst(ind.lp).kind else {
                    unreachable!("inductions are parameters of for loops")
                };
                let (start, index) = (range.start, *index);
                for w in [ind.init, ind.step, start, index] {
                    self.need(w);
                }
            }
            Storage::Backward => {
                let bw = self.reuse.backwards[&v].clone();
                let InstKind::For { range, .. } = &self.f.inst(bw.inner).kind else {
                    unreachable!("backward counters are stepped by for loops")
                };
                let (start, end) = (range.start, range.end);
                for w in [bw.last, bw.step, start, end] {
                    self.need(w);
                }
            }
            Storage::Fill => {
                let fill = self.reuse.fills[&v].clone();
                self.need(fill.at);
                if fill.value != fill.index && !fill.insts.contains(&self.f.def_inst(fill.value)) {
                    self.need(fill.value);
                }
                for &i in &fill.insts {
                    for o in self.f.operands(i) {
                        if o != fill.index && !fill.insts.contains(&self.f.def_inst(o)) {
                            self.need(o);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn decide(&mut self, v: Value) -> Storage {
        let f = self.f;
        match f.value(v).def {
            ValueDef::LoopIndex(l) => return Storage::Index(l),
            ValueDef::LoopParam(l, _) if self.steps.contains(&l) => return Storage::State(l),
            _ => {}
        }
        let block = self.structure.def_block(f, v);
        if block == f.body {
            return Storage::Direct;
        }
        // `coarsen = off` (budget 0) keeps the fine-grained baseline: no reuse.
        if self.budget > 0 {
            if let Some(w) = self.reuse.aliases.get(&v) {
                return Storage::Alias(*w);
            }
            if self.reuse.inductions.contains_key(&v) {
                return Storage::Induction;
            }
            if self.reuse.backwards.contains_key(&v) {
                return Storage::Backward;
            }
        }
        let limit = self.limit(v);
        if self.recompute_cost(v, limit).is_some_and(|c| c <= limit) {
            return Storage::Recompute;
        }
        if self.budget > 0 && self.reuse.fills.contains_key(&v) {
            return Storage::Fill;
        }
        if let Some(l) = self.row_candidates.get(&f.def_inst(v)).copied() {
            let InstKind::Load(_, idx) = &f.inst(f.def_inst(v)).kind else {
                unreachable!("row candidates are loads")
            };
            if idx.iter().all(|x| self.is_free(*x)) {
                return Storage::Row(l);
            }
        }
        self.save_site(v, block)
    }

    /// Where `v`, defined in `block`, is saved: one slot when it is outside every loop, or
    /// when it is the same in every iteration ([`same_every_time`]) of loops that run in
    /// order on one thread (the slot is a variable of the function); else the tape of its
    /// innermost loop.
    fn save_site(&self, v: Value, block: Block) -> Storage {
        let f = self.f;
        let Some(l) = self.structure.enclosing_loop(f, block) else {
            return Storage::Slot;
        };
        let serial = || {
            self.structure.chain(f.def_inst(v)).iter().all(|c| {
                !f.parallel.contains_key(c)
                    && !f.checkpoints.contains_key(c)
                    && !self.steps.contains(c)
            })
        };
        if !self.same_slots {
            return Storage::Tape(l);
        }
        if self.budget > 0 && same_every_time(f, &self.structure, v) && serial() {
            Storage::Slot
        } else {
            Storage::Tape(l)
        }
    }

    /// The largest recomputation of `v` allowed: the budget; for an integer in a parallel
    /// loop at least [`RECOMPUTE_BUDGET`], also with `coarsen = off`, since the adjoint
    /// classifies its writes by their index expressions (a taped index is unknown).
    fn limit(&self, v: Value) -> u32 {
        let in_parallel = || {
            let block = self.structure.def_block(self.f, v);
            let owner = self.structure.block_owner[block.index()];
            owner.is_some_and(|o| {
                self.structure
                    .chain(o)
                    .iter()
                    .any(|l| self.f.parallel.contains_key(l))
            })
        };
        if self.f.ty(v) == Ty::Int && in_parallel() {
            self.budget.max(RECOMPUTE_BUDGET)
        } else {
            self.budget
        }
    }

    /// Weighted size of re-evaluating `v` from available values within `limit`; None if
    /// impossible or larger.
    fn recompute_cost(&mut self, v: Value, limit: u32) -> Option<u32> {
        if let Some(c) = self.cost.get(&v) {
            return Some(*c);
        }
        let f = self.f;
        let ValueDef::Result(i, _) = f.value(v).def else {
            return match f.value(v).def {
                ValueDef::LoopIndex(_) => Some(0),
                ValueDef::LoopParam(l, _) if self.steps.contains(&l) => Some(0),
                ValueDef::LoopParam(..)
                    if self.budget > 0
                        && (self.reuse.inductions.contains_key(&v)
                            || self.reuse.backwards.contains_key(&v)) =>
                {
                    Some(2)
                }
                _ => None,
            };
        };
        if self.structure.def_block(f, v) == f.body {
            return Some(0);
        }
        use InstKind::*;
        let own = match &f.inst(i).kind {
            FConst(_) | IConst(_) | BConst(_) | Param(_) => 0,
            Unary(..) | Binary(..) | Cast { .. } => 1,
            Math(..) => 4,
            // A float read at a data-dependent index (`x[idx[i]]`) is likely a cache miss
            // (a gather): re-reading it in the reverse sweep would add a second random
            // access per iteration to the scatter of its adjoint, so it is saved instead,
            // a sequential write and read.
            Load(_, idx) if self.stable[i.index()] => {
                if f.ty(v) == Ty::Float && idx.iter().any(|x| data_dependent(f, *x, 8)) {
                    limit + 1
                } else {
                    1
                }
            }
            Len(..) if self.stable[i.index()] => 1,
            // A branch of arithmetic only (`a && b`, `if c { x } else { y }` on scalars):
            // its instructions, re-run.
            If { .. } if pure_branch(f, i) => {
                let mut n = 1;
                for blk in f.child_blocks(i) {
                    let ops =
                        f.block(blk).insts.iter().filter(|j| {
                            !matches!(f.inst(**j).kind, FConst(_) | IConst(_) | BConst(_))
                        });
                    n += ops.count() as u32;
                }
                n
            }
            _ => return None,
        };
        let mut total = own;
        for o in recompute_inputs(f, i) {
            total += self.recompute_cost(o, limit)?;
            if total > limit {
                return None;
            }
        }
        self.cost.insert(v, total);
        Some(total)
    }

    /// Records that the reverse sweep reads `v` from where the forward sweep saved it (a
    /// slot, or the tape of its innermost loop), never recomputed: a coarsened segment keeps
    /// a costly intermediate it computed anyway. Values in scope stay read directly.
    pub fn keep(&mut self, v: Value) {
        let f = self.f;
        let block = self.structure.def_block(f, v);
        if block == f.body || !matches!(f.value(v).def, ValueDef::Result(..)) {
            return self.need(v);
        }
        // A checkpointed step reversed from its restored state saves nothing.
        let chain = self.structure.chain(f.def_inst(v));
        if chain.iter().any(|l| self.steps.contains(l)) {
            return self.need(v);
        }
        let s = self.save_site(v, block);
        match self.storage.get(&v) {
            Some(Storage::Tape(_) | Storage::Slot) => {}
            // Already planned another way (recomputed for another reader): saving it
            // serves both readers.
            _ => {
                self.storage.insert(v, s);
                self.saved.insert(v);
            }
        }
    }

    /// Whether `v` is defined inside a loop (saving it costs a tape entry per iteration).
    pub fn in_loop(&self, v: Value) -> bool {
        let block = self.structure.def_block(self.f, v);
        self.structure.enclosing_loop(self.f, block).is_some()
    }

    /// Whether the reverse sweep gets `v` without saving it (in scope, an index, cheap to
    /// recompute) or already saves it for another reader.
    pub fn is_free(&mut self, v: Value) -> bool {
        if self.storage.contains_key(&v) {
            return true;
        }
        match self.decide(v) {
            Storage::Alias(w) => self.is_free(w),
            // A row read is not free: a segment whose intermediate needs several of them
            // saves the intermediate (a heat stencil's `u[i−1] − 2u[i] + u[i+1]`), and
            // the buffer is then copied only if other reads remain.
            Storage::Tape(_) | Storage::Slot | Storage::Row(_) => false,
            _ => true,
        }
    }

    /// Whether buffer `b`, read at `at`, holds the same contents there and for the whole
    /// reverse sweep.
    pub fn is_stable_at(&self, b: Buf, at: Inst) -> bool {
        stable_at(self.f, &self.structure, b, at)
    }

    /// Records that argument `arg` of call `i` is copied before the call.
    pub fn snapshot(&mut self, i: Inst, arg: usize) {
        self.snapshots.insert((i, arg));
    }

    pub fn finish(self) -> (Recording, Structure) {
        (
            Recording {
                storage: self.storage,
                saved: self.saved,
                snapshots: self.snapshots,
                rows: self.rows,
                reuse: self.reuse,
            },
            self.structure,
        )
    }
}

//! To-be-recorded analysis: which primal values the reverse sweep needs and how it gets
//! each one back — read directly (top-level values stay in scope), recomputed (cheap pure
//! expressions of available values and read-only buffers), or saved during the forward
//! sweep in a scalar slot or in a direct-indexed tape of the innermost enclosing loop.

use crate::analysis::activity::Activity;
use crate::ir::*;
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
    /// Saved in one scalar slot (defined inside a branch, outside any loop).
    Slot,
}

/// Nesting facts: the block each instruction sits in and the instruction owning each block.
pub struct Structure {
    pub inst_block: Vec<Option<Block>>,
    pub block_owner: Vec<Option<Inst>>,
}

impl Structure {
    pub fn new(f: &Function) -> Self {
        let mut s = Structure {
            inst_block: vec![None; f.insts.len()],
            block_owner: vec![None; f.blocks.len()],
        };
        fn go(f: &Function, b: Block, s: &mut Structure) {
            for &i in &f.block(b).insts {
                s.inst_block[i.index()] = Some(b);
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

/// Buffers never written after they exist and visible in the reverse sweep: parameters
/// nothing writes, and top-level allocations nothing writes afterwards.
pub fn read_only_buffers(f: &Function, structure: &Structure) -> Vec<bool> {
    let mut read_only: Vec<bool> = f
        .bufs
        .iter()
        .map(|b| matches!(b.kind, BufKind::Param(_)))
        .collect();
    f.walk(f.body, &mut |i| {
        let is_alloc = matches!(f.inst(i).kind, InstKind::Alloc { .. });
        for w in f.written_bufs(i) {
            read_only[w.index()] = is_alloc && structure.inst_block[i.index()] == Some(f.body);
        }
    });
    // A top-level alloc followed by any other write is not read-only.
    f.walk(f.body, &mut |i| {
        if !matches!(f.inst(i).kind, InstKind::Alloc { .. }) {
            for w in f.written_bufs(i) {
                read_only[w.index()] = false;
            }
        }
    });
    read_only
}

pub struct Recording {
    pub storage: BTreeMap<Value, Storage>,
    /// Values saved in the forward sweep.
    pub saved: BTreeSet<Value>,
    /// Buffer arguments of calls copied before the call, for the callee's reverse.
    pub snapshots: BTreeSet<(Inst, usize)>,
}

/// The largest expression (in weighted nodes) the reverse sweep re-evaluates instead of
/// saving, outside coarsened segments. `coarsen = off` uses 0: every intermediate is saved.
pub const RECOMPUTE_BUDGET: u32 = 12;

pub struct Planner<'a> {
    f: &'a Function,
    pub structure: Structure,
    read_only: Vec<bool>,
    budget: u32,
    storage: BTreeMap<Value, Storage>,
    cost: BTreeMap<Value, u32>,
    saved: BTreeSet<Value>,
    /// Call arguments (call, argument position) whose buffer is snapshotted for the reverse.
    snapshots: BTreeSet<(Inst, usize)>,
}

impl<'a> Planner<'a> {
    pub fn new(f: &'a Function, _act: &Activity, budget: u32) -> Self {
        let structure = Structure::new(f);
        let read_only = read_only_buffers(f, &structure);
        Planner {
            f,
            structure,
            read_only,
            budget,
            storage: BTreeMap::new(),
            cost: BTreeMap::new(),
            saved: BTreeSet::new(),
            snapshots: BTreeSet::new(),
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
                for o in self.f.operands(i) {
                    self.need(o);
                }
            }
            Storage::Tape(_) | Storage::Slot => {
                self.saved.insert(v);
            }
            _ => {}
        }
    }

    fn decide(&mut self, v: Value) -> Storage {
        let f = self.f;
        if let ValueDef::LoopIndex(l) = f.value(v).def {
            return Storage::Index(l);
        }
        let block = self.structure.def_block(f, v);
        if block == f.body {
            return Storage::Direct;
        }
        if self.recompute_cost(v).is_some_and(|c| c <= self.budget) {
            return Storage::Recompute;
        }
        match self.structure.enclosing_loop(f, block) {
            Some(l) => Storage::Tape(l),
            None => Storage::Slot,
        }
    }

    /// Weighted size of re-evaluating `v` from available values; None if impossible.
    fn recompute_cost(&mut self, v: Value) -> Option<u32> {
        if let Some(c) = self.cost.get(&v) {
            return Some(*c);
        }
        let f = self.f;
        let ValueDef::Result(i, _) = f.value(v).def else {
            return match f.value(v).def {
                ValueDef::LoopIndex(_) => Some(0),
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
            Load(b, _) | Len(b, _) if self.read_only[b.index()] => 1,
            _ => return None,
        };
        let mut total = own;
        for o in f.operands(i) {
            total += self.recompute_cost(o)?;
            if total > self.budget {
                return None;
            }
        }
        self.cost.insert(v, total);
        Some(total)
    }

    /// Whether the reverse sweep gets `v` without saving it (in scope, an index, cheap to
    /// recompute) or already saves it for another reader.
    pub fn is_free(&mut self, v: Value) -> bool {
        self.storage.contains_key(&v)
            || matches!(
                self.decide(v),
                Storage::Direct | Storage::Index(_) | Storage::Recompute
            )
    }

    /// Whether buffer `b` holds the same contents, in scope, for the whole reverse sweep.
    pub fn is_read_only(&self, b: Buf) -> bool {
        self.read_only[b.index()]
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
            },
            self.structure,
        )
    }
}

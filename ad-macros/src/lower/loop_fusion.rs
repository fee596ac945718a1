//! Adjacent serial loops over the same range run as one loop.
//!
//! ```text
//! for j in 0..d { xc[j] = x[i * d + j] - means[k * d + j]; }
//! for j in 0..d { qxc[j] = qdiags[k * d + j] * xc[j]; }
//! ```
//!
//! (GMM's inner loops, as ADBench writes them) become one loop whose iteration `j` runs
//! the first body, then the second. Iteration `j` of the second loop reads only element
//! `j` of what the first loop writes, which the first loop's iteration `j` has just
//! written and no later iteration touches, so every read sees the value it saw before.
//! The derivatives follow: the forward sweep and the reverse sweep each run one loop
//! instead of two, with one set of windows and bounds checks and, in the reverse sweep,
//! the adjoint of `xc[j]` consumed in the iteration that produced it.
//!
//! Two loops of one block fuse when:
//! - both are plain `for` loops (no step, not reversed, no parameters, no `break`), not
//!   parallel and not checkpointed, over the same range (the same values, equal integer
//!   constants, or the lengths of one buffer), and the second one's trip count is unused;
//! - between them stand only constants, scalar arithmetic and lengths not computed from
//!   the first loop, which move above it, and the second loop does not read the first
//!   one's trip count;
//! - their bodies hold only arithmetic, reads, stores, branches and inner `for` loops (no
//!   calls, cells, allocations, whole-buffer operations or `while`);
//! - every buffer one of them writes and the other touches is accessed in both only at
//!   the loop's own index (`b[j]`).

use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// Fuses such pairs in every block of `f`, repeatedly (three such loops become one).
pub fn fuse_adjacent_loops(f: &mut Function) {
    let mut blocks = vec![f.body];
    let mut k = 0;
    while k < blocks.len() {
        let blk = blocks[k];
        k += 1;
        let mut at = 0;
        while at < f.block(blk).insts.len() {
            match plan_at(f, blk, at) {
                Some(plan) => apply(f, blk, at, plan),
                None => at += 1,
            }
        }
        for &i in &f.block(blk).insts {
            blocks.extend(f.child_blocks(i));
        }
    }
}

struct Plan {
    second: Inst,
    /// The instructions between the two loops, to move above the first.
    between: Vec<Inst>,
}

/// [`super::plain_for`] of a serial loop that is not checkpointed.
fn plain_for(f: &Function, l: Inst) -> Option<(Value, Value, Value, Block)> {
    let special = f.parallel.contains_key(&l) || f.checkpoints.contains_key(&l);
    if special {
        return None;
    }
    super::plain_for(f, l)
}

/// Whether `a` and `b` hold the same integer: one value, equal constants, or the lengths
/// of one buffer.
fn same_int(f: &Function, a: Value, b: Value) -> bool {
    if a == b {
        return true;
    }
    let (ValueDef::Result(ia, 0), ValueDef::Result(ib, 0)) = (f.value(a).def, f.value(b).def)
    else {
        return false;
    };
    match (&f.inst(ia).kind, &f.inst(ib).kind) {
        (InstKind::IConst(x), InstKind::IConst(y)) => x == y,
        (InstKind::Len(x, xi), InstKind::Len(y, yi)) => x == y && xi.is_empty() && yi.is_empty(),
        _ => false,
    }
}

fn plan_at(f: &Function, blk: Block, k: usize) -> Option<Plan> {
    let insts = &f.block(blk).insts;
    let first = insts[k];
    let (s1, e1, i1, b1) = plain_for(f, first)?;
    let mut between = Vec::new();
    let mut pos = k + 1;
    let first_results: HashSet<Value> = f.inst(first).results.iter().copied().collect();
    let second = loop {
        let j = *insts.get(pos)?;
        if plain_for(f, j).is_some() {
            break j;
        }
        let pure = matches!(
            f.inst(j).kind,
            InstKind::IConst(_)
                | InstKind::FConst(_)
                | InstKind::BConst(_)
                | InstKind::Unary(..)
                | InstKind::Binary(..)
                | InstKind::Len(..)
                | InstKind::Cast { .. }
        );
        if !pure || f.operands(j).iter().any(|v| first_results.contains(v)) {
            return None;
        }
        between.push(j);
        pos += 1;
    };
    let (s2, e2, i2, b2) = plain_for(f, second)?;
    // The range of the second loop may be computed between the loops (a constant start).
    if !same_int(f, s1, s2) || !same_int(f, e1, e2) || f.ty(i1) != f.ty(i2) {
        return None;
    }
    if f.inst(second)
        .results
        .iter()
        .any(|r| f.uses_in(f.body, *r) > 0)
    {
        return None;
    }
    // The first loop's trip count exists only after it.
    if first_results.iter().any(|r| f.uses_in(b2, *r) > 0) {
        return None;
    }
    let a1 = accesses(f, b1)?;
    let a2 = accesses(f, b2)?;
    for (buf, (written, at)) in &a1 {
        if let Some((written2, at2)) = a2.get(buf) {
            let shared_write = *written || *written2;
            if shared_write
                && !(at.iter().all(|x| *x == Some(i1)) && at2.iter().all(|x| *x == Some(i2)))
            {
                return None;
            }
        }
    }
    Some(Plan { second, between })
}

/// Of each buffer the block touches (nested blocks too): whether it writes it, and the
/// index of each access where that index is one value (`None` otherwise). `None` where
/// the block holds an instruction the fusion does not reorder.
#[allow(clippy::type_complexity)]
fn accesses(f: &Function, blk: Block) -> Option<HashMap<Buf, (bool, Vec<Option<Value>>)>> {
    let mut out: HashMap<Buf, (bool, Vec<Option<Value>>)> = HashMap::new();
    let mut ok = true;
    f.walk(blk, &mut |j| {
        let one = |idx: &[Value]| match idx {
            [v] => Some(*v),
            _ => None,
        };
        match &f.inst(j).kind {
            InstKind::IConst(_)
            | InstKind::FConst(_)
            | InstKind::BConst(_)
            | InstKind::Unary(..)
            | InstKind::Binary(..)
            | InstKind::Math(..)
            | InstKind::Cast { .. }
            | InstKind::If { .. } => {}
            InstKind::For { exit, .. } => {
                ok &= exit.is_empty()
                    && !f.parallel.contains_key(&j)
                    && !f.checkpoints.contains_key(&j)
            }
            InstKind::Load(b, idx) | InstKind::Len(b, idx) => {
                let e = out.entry(*b).or_default();
                e.1.push(if matches!(f.inst(j).kind, InstKind::Len(..)) {
                    None
                } else {
                    one(idx)
                });
            }
            InstKind::Store(b, idx, _) | InstKind::StoreAdd(b, idx, _) => {
                let e = out.entry(*b).or_default();
                e.0 = true;
                e.1.push(one(idx));
            }
            _ => ok = false,
        }
    });
    ok.then_some(out)
}

/// Moves the instructions between the loops above the first, and the second loop's body
/// to the end of the first's, reading the first one's index for its own.
fn apply(f: &mut Function, blk: Block, k: usize, plan: Plan) {
    let Plan { second, between } = plan;
    let first = f.block(blk).insts[k];
    let (_, _, i1, b1) = plain_for(f, first).expect("planned");
    let (_, _, i2, b2) = plain_for(f, second).expect("planned");
    let insts = &mut f.blocks[blk.index()].insts;
    insts.retain(|j| *j != second && !between.contains(j));
    let at = insts
        .iter()
        .position(|j| *j == first)
        .expect("the first loop");
    insts.splice(at..at, between);
    replace_in(f, b2, i2, i1);
    let moved = std::mem::take(&mut f.blocks[b2.index()].insts);
    f.blocks[b1.index()].insts.extend(moved);
}

/// Replaces `old` by `new` in block `b` and the blocks inside it, whose instructions are
/// of the kinds [`accesses`] lets through.
fn replace_in(f: &mut Function, b: Block, old: Value, new: Value) {
    let swap = |v: &mut Value| {
        if *v == old {
            *v = new;
        }
    };
    for y in &mut f.blocks[b.index()].yields {
        swap(y);
    }
    for i in f.block(b).insts.clone() {
        match &mut f.insts[i.index()].kind {
            InstKind::Unary(_, a) | InstKind::Cast { value: a, .. } => swap(a),
            InstKind::Binary(_, a, c) => {
                swap(a);
                swap(c);
            }
            InstKind::Math(_, args) => args.iter_mut().for_each(swap),
            InstKind::Load(_, idx) | InstKind::Len(_, idx) => idx.iter_mut().for_each(swap),
            InstKind::Store(_, idx, v) | InstKind::StoreAdd(_, idx, v) => {
                idx.iter_mut().for_each(swap);
                swap(v);
            }
            InstKind::If { cond, .. } => swap(cond),
            InstKind::For { range, inits, .. } => {
                swap(&mut range.start);
                swap(&mut range.end);
                if let Some(s) = &mut range.step {
                    swap(s);
                }
                inits.iter_mut().for_each(swap);
            }
            InstKind::IConst(_) | InstKind::FConst(_) | InstKind::BConst(_) => {}
            other => unreachable!("the fused bodies hold no {other:?}"),
        }
        for c in f.child_blocks(i) {
            replace_in(f, c, old, new);
        }
    }
}

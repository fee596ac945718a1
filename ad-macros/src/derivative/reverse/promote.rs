//! Additions into one array element per loop kept in a register.
//!
//! A primal loop that reads an element at an index fixed for the loop (`xc[c]` inside
//! `for r in c + 1..d`) has an adjoint loop that adds into that element in every
//! iteration: `dxc[c] += l[r] * dz[r]`. Each addition loads and stores the element again,
//! so the additions form a chain through memory (store-to-load forwarding, several cycles
//! each) that the compiler does not break, since it cannot prove the array is not reached
//! by the loop's other accesses. When the loop touches that array in no other way, the
//! additions go to local accumulators declared before the loop (two, taken in turn, so
//! that consecutive additions do not wait on each other), and the element receives their
//! sum once after it (if it ran). The additions are regrouped, as in [`super::carry`], and
//! nothing else changes.

use super::carry::{surround, touched_bufs};
use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Rewrites the loops of `f`, innermost first. Parallel loops, the loops inside them and
/// loops holding one are left alone (their iterations run on several threads), and so are
/// loops holding checkpointing instructions (which save and restore the state in
/// closures); the loops inside a checkpointed loop's steps are rewritten.
pub fn promote_invariant_adds(f: &mut Function) {
    let mut loops = Vec::new();
    collect_loops(f, f.body, &mut loops);
    let mut parent = f.block_map();
    for l in loops {
        apply(f, &mut parent, l);
    }
}

/// The `for` loops of block `b` and its nested blocks, inner loops before outer ones,
/// without parallel loops, what they contain, and the loops that contain them.
pub(super) fn collect_loops(f: &Function, b: Block, out: &mut Vec<Inst>) -> bool {
    let mut clean = true;
    for &i in &f.block(b).insts {
        if f.parallel.contains_key(&i) {
            clean = false;
            continue;
        }
        if is_checkpoint(f, i) {
            // The blocks of a checkpointed loop's reverse phase (plain steps, the taped
            // step, the adjoint) are inlined in the match over the actions, so their loops
            // are ordinary ones; only the loops around the instruction are left alone.
            for c in f.child_blocks(i) {
                collect_loops(f, c, out);
            }
            clean = false;
            continue;
        }
        let mut inner_clean = true;
        for c in f.child_blocks(i) {
            inner_clean &= collect_loops(f, c, out);
        }
        clean &= inner_clean;
        if let InstKind::For { exit, .. } = &f.inst(i).kind {
            if inner_clean && exit.is_empty() {
                out.push(i);
            }
        }
    }
    clean
}

/// The checkpointing instructions run their blocks as closures of the runtime.
pub fn is_checkpoint(f: &Function, i: Inst) -> bool {
    matches!(
        f.inst(i).kind,
        InstKind::CkNew { .. }
            | InstKind::CkForwardStep { .. }
            | InstKind::CkEndForward { .. }
            | InstKind::CkReverse { .. }
    )
}

fn apply(f: &mut Function, parent: &mut HashMap<Inst, Block>, l: Inst) {
    let InstKind::For { range, body, .. } = f.inst(l).kind.clone() else {
        return;
    };
    let mut inside = HashSet::new();
    f.walk(body, &mut |i| {
        inside.insert(i);
    });
    let fixed = |v: Value| match f.value(v).def {
        ValueDef::Result(i, _) => !inside.contains(&i),
        ValueDef::LoopIndex(j) | ValueDef::LoopParam(j, _) => j != l && !inside.contains(&j),
    };
    // `buf[fixed] += v` at the top level of the body (so every iteration, the first
    // included, indexes `buf` there: the write after the loop cannot be out of range where
    // the loop was not); any other access to `buf` rules it out.
    let top: HashSet<Inst> = f.block(body).insts.iter().copied().collect();
    let mut sites: BTreeMap<Buf, Option<Vec<(Inst, Vec<Value>)>>> = BTreeMap::new();
    f.walk(body, &mut |i| {
        if let InstKind::StoreAdd(buf, idx, _) = &f.inst(i).kind {
            if top.contains(&i) && f.buf(*buf).elem == Ty::Float && idx.iter().all(|v| fixed(*v)) {
                if let Some(list) = sites.entry(*buf).or_insert_with(|| Some(Vec::new())) {
                    list.push((i, idx.clone()));
                }
                return;
            }
        }
        for b in touched_bufs(f, i) {
            sites.insert(b, None);
        }
    });
    let sites: Vec<(Buf, Vec<(Inst, Vec<Value>)>)> = sites
        .into_iter()
        .filter_map(|(b, s)| s.map(|s| (b, s)))
        .collect();
    if sites.is_empty() {
        return;
    }
    // Two accumulators per (buffer, index values), declared before the loop; the additions
    // alternate between them (`t = a + v; a = b; b = t`), so consecutive additions do not
    // wait for each other: two chains of half the length, summed after the loop. Only
    // the adjoint's rounding changes (its additions are regrouped anyway).
    let pre = f.new_block();
    let post = f.new_block();
    let then_blk = f.new_block();
    let else_blk = f.new_block();
    let mut sums: Vec<(Buf, Vec<Value>, [Cell; 2])> = Vec::new();
    {
        let mut b = Builder::new(f, pre);
        for (buf, list) in &sites {
            for (_, idx) in list {
                if !sums.iter().any(|(sb, si, _)| sb == buf && si == idx) {
                    let z = b.fconst(0.0);
                    let name = format!("sum_{}", b.func.buf(*buf).name);
                    let lanes = [b.cell(Ty::Float, &name, z), b.cell(Ty::Float, &name, z)];
                    sums.push((*buf, idx.clone(), lanes));
                }
            }
        }
    }
    for (buf, list) in &sites {
        for (i, idx) in list {
            let InstKind::StoreAdd(_, _, v) = f.inst(*i).kind else {
                unreachable!("a collected site is an addition")
            };
            let [a, c] = sums
                .iter()
                .find(|(sb, si, _)| sb == buf && si == idx)
                .map(|s| s.2)
                .expect("accumulators per site");
            let scratch = f.new_block();
            {
                let mut b = Builder::new(f, scratch);
                let old = b.get(a);
                let t = b.binary(BinOp::Add, old, v);
                let other = b.get(c);
                b.set(a, other);
                b.set(c, t);
            }
            let new = std::mem::take(&mut f.blocks[scratch.index()].insts);
            let list = &mut f.blocks[body.index()].insts;
            let at = list
                .iter()
                .position(|j| j == i)
                .expect("a site at the top level");
            list.splice(at..=at, new.iter().copied());
            for j in new {
                parent.insert(j, body);
            }
        }
    }
    // After the loop, if it ran at all (the index may be out of range otherwise).
    {
        let mut b = Builder::new(f, post);
        let ran = b.binary(BinOp::Gt, range.end, range.start);
        b.in_block(then_blk, |b| {
            for (buf, idx, [a, c]) in &sums {
                let (x, y) = (b.get(*a), b.get(*c));
                let v = b.binary(BinOp::Add, x, y);
                b.stmt(InstKind::StoreAdd(*buf, idx.clone(), v));
            }
        });
        b.set_yields(then_blk, vec![]);
        b.set_yields(else_blk, vec![]);
        b.stmt(InstKind::If {
            cond: ran,
            then_blk,
            else_blk,
        });
    }
    surround(f, parent, l, pre, post);
}

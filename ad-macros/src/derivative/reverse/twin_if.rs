//! One branch where a reverse program tests the same condition twice in a row.
//!
//! A loop whose iterations are reversed as they run (a fused sum, a parallel loop's
//! reverse sweep) recomputes its body and then runs the body's adjoint, so a body with
//! a branch (a stencil's boundary test) becomes
//!
//! ```text
//! if c { forward A } else { forward B }
//! M                      (the end of the forward body and the start of its adjoint)
//! if c { adjoint of A } else { adjoint of B }
//! ```
//!
//! which tests `c` twice per iteration, and leaves the compiler two branches whose arms
//! it cannot schedule together. Where `M` is short straight-line code, the two become one
//! `if c { A; M; adjoint of A } else { B; M'; adjoint of B }`, with `M'` a copy of `M`
//! under fresh names; values of `M` read after the second `if` become its results. (Two
//! `if`s that only choose between cheap values are left alone: they compile to selects,
//! with no branch to save.) Each
//! path runs the same operations in the same order as before, so results are bitwise the
//! same (`ir::interp` checks it in `tests::twin_if`). Measured on the rayon stencil of
//! the scoreboard (1000×1000, one thread): its gradient 5 % faster.

use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// The most instructions copied for one merge.
const MAX_BETWEEN: usize = 64;

/// Merges every pair of `if`s on one condition separated by short straight-line code,
/// in every block of `f`.
pub fn merge_twin_ifs(f: &mut Function) {
    merge_in(f, f.body);
}

fn merge_in(f: &mut Function, b: Block) {
    let mut k = 0;
    while k < f.block(b).insts.len() {
        // A merged `if` may have another twin after it: try the same place again.
        if !merge_at(f, b, k) {
            k += 1;
        }
    }
    for i in f.block(b).insts.clone() {
        for c in f.child_blocks(i) {
            merge_in(f, c);
        }
    }
}

/// Straight-line instructions `M` may hold: no blocks, calls, allocations or tapes.
pub(super) fn straight(kind: &InstKind) -> bool {
    kind.is_arithmetic()
        || matches!(
            kind,
            InstKind::Param(_)
                | InstKind::Load(..)
                | InstKind::Store(..)
                | InstKind::StoreAdd(..)
                | InstKind::Len(..)
                | InstKind::CellDecl(..)
                | InstKind::CellGet(_)
                | InstKind::CellSet(..)
                | InstKind::CellAdd(..)
        )
}

/// Whether the passes rename `kind`'s operands in place: the straight instructions, `if`s and
/// `for` loops.
pub(super) fn renamable(kind: &InstKind) -> bool {
    straight(kind) || matches!(kind, InstKind::If { .. } | InstKind::For { .. })
}

/// Whether every instruction of `insts` and of their blocks that reads one of `values`
/// (as an operand or a block's yield) can be renamed.
fn reads_renamable(f: &Function, insts: &[Inst], values: &HashSet<Value>) -> bool {
    let mut ok = true;
    for &i in insts {
        walk_from(f, i, &mut |x| {
            let mut read = f.operands(x);
            for c in f.child_blocks(x) {
                read.extend(f.block(c).yields.iter().copied());
            }
            ok &= renamable(&f.inst(x).kind) || !read.iter().any(|v| values.contains(v));
        });
    }
    ok
}

/// Renames through `m` the values read by `insts` and everything nested in them (operands
/// and the yields of their blocks). Only instructions that read a renamed value change,
/// and [`reads_renamable`] has checked that they can.
fn rename_reads(f: &mut Function, insts: &[Inst], m: &dyn Fn(Value) -> Value) {
    let mut all = Vec::new();
    for &i in insts {
        walk_from(f, i, &mut |x| all.push(x));
    }
    for x in all {
        if f.operands(x).iter().any(|v| m(*v) != *v) {
            f.insts[x.index()].kind.map_operands(&mut |v| m(v));
        }
        for c in f.child_blocks(x) {
            let yields = &mut f.blocks[c.index()].yields;
            yields.iter_mut().for_each(|y| *y = m(*y));
        }
    }
}

/// [`rename_reads`] on the instructions of block `b`, and on its yields.
fn rename_in(f: &mut Function, b: Block, m: &dyn Fn(Value) -> Value) {
    let insts = f.block(b).insts.clone();
    rename_reads(f, &insts, m);
    let yields = &mut f.blocks[b.index()].yields;
    yields.iter_mut().for_each(|y| *y = m(*y));
}

/// Whether `if` instruction `i` only chooses between values computed by cheap arithmetic
/// (no math function, memory access, assignment or loop), which the compiler turns into
/// selects rather than a branch.
fn select_like(f: &Function, i: Inst) -> bool {
    let mut cheap = true;
    for b in f.child_blocks(i) {
        f.walk(b, &mut |x| {
            let kind = &f.inst(x).kind;
            cheap &= match kind {
                InstKind::Math(..) => false,
                InstKind::CellGet(_) | InstKind::If { .. } => true,
                k => k.is_arithmetic(),
            };
        });
    }
    cheap
}

/// The cells an instruction declares or touches.
fn cell_of(kind: &InstKind) -> Option<Cell> {
    match kind {
        InstKind::CellDecl(c, _)
        | InstKind::CellGet(c)
        | InstKind::CellSet(c, _)
        | InstKind::CellAdd(c, _) => Some(*c),
        _ => None,
    }
}

/// Merges the `if` at position `k` of block `b` with a later one on the same condition
/// after straight-line code; false (and nothing changed) where the pattern is not there.
fn merge_at(f: &mut Function, b: Block, k: usize) -> bool {
    let insts = f.block(b).insts.clone();
    let first = insts[k];
    let InstKind::If {
        cond,
        then_blk: t1,
        else_blk: e1,
    } = f.inst(first).kind
    else {
        return false;
    };
    let Some(j) =
        (k + 1..insts.len().min(k + 2 + MAX_BETWEEN)).find(|&j| !straight(&f.inst(insts[j]).kind))
    else {
        return false;
    };
    let second = insts[j];
    let InstKind::If {
        cond: cond2,
        then_blk: t2,
        else_blk: e2,
    } = f.inst(second).kind
    else {
        return false;
    };
    if cond2 != cond {
        return false;
    }
    // Two choices between cheap values compile to selects, without a branch to save.
    if select_like(f, first) && select_like(f, second) {
        return false;
    }
    let between = &insts[k + 1..j];
    // The values that differ between the merged branches: the first `if`'s results (its
    // branches' yields) and what `M` defines (the `else` branch's copy has fresh names).
    let first_results = f.inst(first).results.clone();
    let mut defined: HashSet<Value> = first_results.iter().copied().collect();
    defined.extend(
        between
            .iter()
            .flat_map(|i| f.inst(*i).results.iter().copied()),
    );
    let declared: HashSet<Cell> = between
        .iter()
        .filter_map(|i| match f.inst(*i).kind {
            InstKind::CellDecl(c, _) => Some(c),
            _ => None,
        })
        .collect();
    // Every instruction that reads one of them must take new names, in the second `if`
    // and after it; a cell declared in `M` is declared in each branch, so nothing after
    // may use it.
    let after = &insts[j + 1..];
    if !reads_renamable(f, &[second], &defined) || !reads_renamable(f, after, &defined) {
        return false;
    }
    let mut read_after: Vec<Value> = f.block(b).yields.clone();
    let mut cell_after = false;
    for &i in after {
        walk_from(f, i, &mut |x| {
            read_after.extend(f.operands(x));
            for c in f.child_blocks(x) {
                read_after.extend(f.block(c).yields.iter().copied());
            }
            cell_after |= cell_of(&f.inst(x).kind).is_some_and(|c| declared.contains(&c));
        });
    }
    if cell_after {
        return false;
    }
    let mut escaping: Vec<Value> = Vec::new();
    for v in read_after {
        if defined.contains(&v) && !escaping.contains(&v) {
            escaping.push(v);
        }
    }
    // Each branch's names for those values.
    let mut in_then: HashMap<Value, Value> = HashMap::new();
    let mut in_else: HashMap<Value, Value> = HashMap::new();
    for (n, r) in first_results.iter().enumerate() {
        in_then.insert(*r, f.block(t1).yields[n]);
        in_else.insert(*r, f.block(e1).yields[n]);
    }
    // `M` itself goes to the `then` branch, a copy under fresh names to the `else` one.
    let mut copies = Vec::with_capacity(between.len());
    for &i in between {
        let mut kind = f.inst(i).kind.clone();
        kind.map_operands(&mut |v| in_else.get(&v).copied().unwrap_or(v));
        f.insts[i.index()]
            .kind
            .map_operands(&mut |v| in_then.get(&v).copied().unwrap_or(v));
        let span = f.inst(i).span;
        let copy = Inst(f.insts.len() as u32);
        let mut results = Vec::new();
        for (n, r) in f.inst(i).results.clone().into_iter().enumerate() {
            let d = f.value(r).clone();
            let v = f.new_value(d.ty, ValueDef::Result(copy, n as u32), d.name);
            in_else.insert(r, v);
            results.push(v);
        }
        f.insts.push(InstData {
            kind,
            results,
            span,
        });
        copies.push(copy);
    }
    let then_name = |v: Value| in_then.get(&v).copied().unwrap_or(v);
    let else_name = |v: Value| in_else.get(&v).copied().unwrap_or(v);
    rename_in(f, t2, &then_name);
    rename_in(f, e2, &else_name);
    // then: A, M, adjoint of A; else: B, M', adjoint of B.
    let (t2_insts, t2_yields) = (f.block(t2).insts.clone(), f.block(t2).yields.clone());
    let (e2_insts, e2_yields) = (f.block(e2).insts.clone(), f.block(e2).yields.clone());
    {
        let t = &mut f.blocks[t1.index()];
        t.insts.extend_from_slice(between);
        t.insts.extend(t2_insts);
        t.yields = t2_yields;
        t.yields.extend(escaping.iter().map(|v| then_name(*v)));
    }
    {
        let e = &mut f.blocks[e1.index()];
        e.insts.extend(copies);
        e.insts.extend(e2_insts);
        e.yields = e2_yields;
        e.yields.extend(escaping.iter().map(|v| else_name(*v)));
    }
    // The merged `if` is the second one (its results first), with one more result per
    // value read after it.
    let mut outer: HashMap<Value, Value> = HashMap::new();
    let base = f.inst(second).results.len();
    for (n, v) in escaping.iter().enumerate() {
        let d = f.value(*v).clone();
        let r = f.new_value(d.ty, ValueDef::Result(second, (base + n) as u32), d.name);
        f.insts[second.index()].results.push(r);
        outer.insert(*v, r);
    }
    f.insts[second.index()].kind = InstKind::If {
        cond,
        then_blk: t1,
        else_blk: e1,
    };
    let mut kept: Vec<Inst> = insts[..k].to_vec();
    kept.push(second);
    kept.extend_from_slice(&insts[j + 1..]);
    f.blocks[b.index()].insts = kept;
    if !outer.is_empty() {
        let outside = |v: Value| outer.get(&v).copied().unwrap_or(v);
        rename_reads(f, after, &outside);
        let yields = &mut f.blocks[b.index()].yields;
        yields.iter_mut().for_each(|y| *y = outside(*y));
    }
    // The first `if` is in no block any more; its branches now belong to the merged one.
    f.insts[first.index()].kind = InstKind::BConst(false);
    f.insts[first.index()].results.clear();
    true
}

/// `g` on instruction `i`, then on everything nested in it, in program order.
fn walk_from(f: &Function, i: Inst, g: &mut dyn FnMut(Inst)) {
    g(i);
    for c in f.child_blocks(i) {
        f.walk(c, g);
    }
}

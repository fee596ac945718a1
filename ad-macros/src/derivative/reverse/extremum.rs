//! Max and min reductions reversed through the element that won.
//!
//! The adjoint of `m = a; for i in .. { m = m.max(x[idx(i)]) }` goes, whole, to the one
//! element the result came from (the last that beat the running maximum), or to `a`
//! when none did. The loop's own reverse gets there one iteration at a time: it tapes the
//! running maximum and the element of every iteration, and its reverse loop passes a zero
//! through every iteration but one. In a log-sum-exp (`mx` in GMM, per data point) that
//! is a second loop as long as the first. Before the reverse program is built, such a
//! loop also records where its result came from:
//!
//! ```text
//! m = a; at = 0; won = false
//! for i in .. {
//!     let v = x[idx(i)];
//!     let beats = !(m >= v) && v == v;
//!     at = if beats { i } else { at }; won = won || beats;
//!     m = m.max(v);
//! }
//! let m2 = if won { x[idx(at)] } else { a };   // read after the loop instead of m
//! ```
//!
//! The running `m` then feeds comparisons only, so activity leaves the loop inactive (no
//! tape, no reverse loop), and the reverse of `m2` adds its adjoint into `dx[idx(at)]` or
//! into `a`'s. `beats` is the adjoint rule of `max` (`derivative::rules`: a tie goes to the
//! running value, a NaN element never wins), so the derivative is the one the loop's own
//! reverse computes. `m2` is `m`: `max` returns one of its operands and the loop does not
//! write `x` (the one exception is a tie between `0.0` and `-0.0`, where `f64::max` itself
//! may return either). Only the reverse program is rewritten, and not with `coarsen = off`.
//! Which loops qualify: a serial `for` loop without `break`, not checkpointed, with a
//! float parameter `m` whose only use in the body is `m.max(v)` or `v.max(m)` (or `min`)
//! at its top level, the next `m`; `v` a read of a buffer the loop does not write, at an
//! index computed from the loop index and values from outside the loop by integer
//! arithmetic that can be repeated after it.

use super::carry::{block_of, surround};
use super::twin_if::{map_operands, renamable};
use crate::analysis::activity::{self, Activity};
use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::HashSet;

#[cfg(test)]
thread_local! {
    /// Set by [`super::without_extrema_routed`]: reductions keep their own reverse loop.
    pub(super) static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A copy of `f` with every qualifying reduction rewritten, and its activity; `None` when
/// there is none.
pub fn routed(f: &Function, active_params: &[bool]) -> Option<(Function, Activity)> {
    #[cfg(test)]
    if OFF.with(|o| o.get()) {
        return None;
    }
    let mut loops = Vec::new();
    f.walk(f.body, &mut |i| {
        if matches!(f.inst(i).kind, InstKind::For { .. }) {
            loops.push(i);
        }
    });
    let mut g: Option<Function> = None;
    for l in loops {
        loop {
            let current = g.as_ref().unwrap_or(f);
            let Some(r) = reduction(current, l) else {
                break;
            };
            let h = g.get_or_insert_with(|| f.clone());
            rewrite(h, l, &r);
        }
    }
    let g = g?;
    debug_assert!(
        crate::ir::verify::verify(&g).is_ok(),
        "extremum: {:?}\n{}",
        crate::ir::verify::verify(&g),
        crate::ir::printer::print(&g)
    );
    let act = activity::analyze(&g, active_params);
    Some((g, act))
}

/// A reduction found in a loop: its parameter, `max` or `min`, whether the running value
/// is the method's receiver, the element's buffer and index, and the body's instructions
/// that compute the index (in order), which are repeated after the loop.
struct Reduction {
    k: usize,
    max: bool,
    running_first: bool,
    buf: Buf,
    idx: Vec<Value>,
    index_insts: Vec<Inst>,
}

fn reduction(f: &Function, l: Inst) -> Option<Reduction> {
    let InstKind::For {
        params,
        body,
        exit,
        index,
        ..
    } = &f.inst(l).kind
    else {
        return None;
    };
    if !exit.is_empty() || f.parallel.contains_key(&l) || f.checkpoints.contains_key(&l) {
        return None;
    }
    let insts = &f.block(*body).insts;
    let top: HashSet<Inst> = insts.iter().copied().collect();
    let mut written = HashSet::new();
    f.walk(*body, &mut |i| written.extend(f.written_bufs(i)));
    let ys = &f.block(*body).yields;
    for (k, &p) in params.iter().enumerate() {
        if f.ty(p) != Ty::Float {
            continue;
        }
        let res = f.inst(l).results[k];
        if f.uses_in(f.body, res) == 0 || !reads_renamable(f, res) {
            continue;
        }
        let y = ys[k];
        let ValueDef::Result(m, 0) = f.value(y).def else {
            continue;
        };
        let InstKind::Math(name, args) = &f.inst(m).kind else {
            continue;
        };
        let max = match *name {
            "max" => true,
            "min" => false,
            _ => continue,
        };
        let (running_first, v) = match (args[0] == p, args[1] == p) {
            (true, false) => (true, args[1]),
            (false, true) => (false, args[0]),
            _ => continue,
        };
        if !top.contains(&m) || f.uses_in(*body, p) != 1 || f.uses_in(*body, y) != 1 {
            continue;
        }
        let ValueDef::Result(ld, 0) = f.value(v).def else {
            continue;
        };
        let InstKind::Load(buf, idx) = &f.inst(ld).kind else {
            continue;
        };
        if !top.contains(&ld) || written.contains(buf) {
            continue;
        }
        let mut index_insts = Vec::new();
        if !idx
            .iter()
            .all(|x| repeatable(f, l, *index, &top, *x, &mut index_insts))
        {
            continue;
        }
        index_insts.sort_by_key(|i| insts.iter().position(|j| j == i));
        index_insts.dedup();
        return Some(Reduction {
            k,
            max,
            running_first,
            buf: *buf,
            idx: idx.clone(),
            index_insts,
        });
    }
    None
}

/// Whether every instruction that reads `v` (an operand or a block's yield) can be renamed.
fn reads_renamable(f: &Function, v: Value) -> bool {
    let mut ok = true;
    f.walk(f.body, &mut |i| {
        ok &= renamable(&f.inst(i).kind) || !f.operands(i).contains(&v);
    });
    ok
}

/// Whether integer `v`, read at the top level of loop `l`'s body, can be computed again
/// after the loop with the index of one iteration: the loop index, a value from outside
/// the loop, or integer arithmetic on those in the body (collected in `insts`).
fn repeatable(
    f: &Function,
    l: Inst,
    index: Value,
    top: &HashSet<Inst>,
    v: Value,
    insts: &mut Vec<Inst>,
) -> bool {
    if v == index {
        return true;
    }
    let def = f.def_inst(v);
    if def == l {
        // Another parameter of the loop: it changes from one iteration to the next.
        return false;
    }
    if !top.contains(&def) {
        return true;
    }
    let kind = &f.inst(def).kind;
    let pure = match kind {
        InstKind::IConst(_) => true,
        InstKind::Binary(op, ..) => !op.is_comparison() && !matches!(op, BinOp::And | BinOp::Or),
        InstKind::Unary(UnOp::Neg, _) | InstKind::Cast { .. } => true,
        _ => false,
    };
    if !pure || f.ty(v) != Ty::Int {
        return false;
    }
    insts.push(def);
    f.operands(def)
        .into_iter()
        .all(|o| repeatable(f, l, index, top, o, insts))
}

fn rewrite(f: &mut Function, l: Inst, r: &Reduction) {
    let InstKind::For {
        params,
        inits,
        body,
        index,
        ..
    } = f.inst(l).kind.clone()
    else {
        unreachable!("reductions are for loops")
    };
    let span = f.inst(l).span;
    let n = params.len() as u32;
    let p = params[r.k];
    let res = f.inst(l).results[r.k];
    let at = f.new_value(Ty::Int, ValueDef::LoopParam(l, n), Some("at".into()));
    let won = f.new_value(Ty::Bool, ValueDef::LoopParam(l, n + 1), Some("won".into()));
    // Before the loop: where the result comes from, not yet known.
    let pre = f.new_block();
    let mut b = Builder::new(f, pre);
    b.span = span;
    let at0 = b.iconst(0);
    let won0 = b.bconst(false);
    // In the body: whether this iteration's element beats the running value.
    b.block = body;
    let y = b.func.block(body).yields[r.k];
    let InstKind::Math(_, args) = b.func.inst(b.func.def_inst(y)).kind.clone() else {
        unreachable!("the reduction's next value is a max or min")
    };
    let v = if r.running_first { args[1] } else { args[0] };
    let keeps = if r.max { BinOp::Ge } else { BinOp::Le };
    let beats = if r.running_first {
        // `m.max(v)`: `m` keeps it when `m >= v` or `v` is NaN.
        let kept = b.binary(keeps, p, v);
        let lost = b.not(kept);
        let number = b.binary(BinOp::Eq, v, v);
        b.binary(BinOp::And, lost, number)
    } else {
        // `v.max(m)`: `v` takes it when `v >= m` or `m` is NaN.
        let taken = b.binary(keeps, v, p);
        let number = b.binary(BinOp::Eq, p, p);
        let nan = b.not(number);
        b.binary(BinOp::Or, taken, nan)
    };
    let here = b.func.new_block();
    let before = b.func.new_block();
    b.set_yields(here, vec![index]);
    b.set_yields(before, vec![at]);
    let choose = b.push(
        InstKind::If {
            cond: beats,
            then_blk: here,
            else_blk: before,
        },
        &[Ty::Int],
        Some("at"),
    );
    let at_next = b.func.inst(choose).results[0];
    let won_next = b.binary(BinOp::Or, won, beats);
    b.func.blocks[body.index()]
        .yields
        .extend([at_next, won_next]);
    // The loop's new results go before its trip count.
    let at_res = b
        .func
        .new_value(Ty::Int, ValueDef::Result(l, n), Some("at".into()));
    let won_res = b
        .func
        .new_value(Ty::Bool, ValueDef::Result(l, n + 1), Some("won".into()));
    let trip = b.func.insts[l.index()]
        .results
        .pop()
        .expect("loops yield their trip count");
    b.func.values[trip.index()].def = ValueDef::Result(l, n + 2);
    b.func.insts[l.index()]
        .results
        .extend([at_res, won_res, trip]);
    if let InstKind::For {
        params: ps,
        inits: is,
        ..
    } = &mut b.func.insts[l.index()].kind
    {
        ps.extend([at, won]);
        is.extend([at0, won0]);
    }
    // After the loop: the element that won, read again, or the initial value.
    let post = b.func.new_block();
    b.block = post;
    let then_blk = b.func.new_block();
    let else_blk = b.func.new_block();
    let element = b.in_block(then_blk, |b| {
        let mut names = std::collections::HashMap::from([(index, at_res)]);
        for &i in &r.index_insts {
            let mut kind = b.func.inst(i).kind.clone();
            map_operands(&mut kind, &|x| names.get(&x).copied().unwrap_or(x));
            let old = b.func.inst(i).results[0];
            let new = b.value(kind, Ty::Int);
            names.insert(old, new);
        }
        let idx = r
            .idx
            .iter()
            .map(|x| names.get(x).copied().unwrap_or(*x))
            .collect();
        b.load(r.buf, idx)
    });
    b.set_yields(then_blk, vec![element]);
    b.set_yields(else_blk, vec![inits[r.k]]);
    let name = b.func.value(res).name.clone();
    let pick = b.push(
        InstKind::If {
            cond: won_res,
            then_blk,
            else_blk,
        },
        &[Ty::Float],
        name.as_deref(),
    );
    let picked = b.func.inst(pick).results[0];
    // Everything after the loop reads the element instead of the running value.
    let rename = |x: Value| if x == res { picked } else { x };
    let mut users = Vec::new();
    f.walk(f.body, &mut |i| {
        if f.operands(i).contains(&res) {
            users.push(i);
        }
    });
    for i in users {
        map_operands(&mut f.insts[i.index()].kind, &rename);
    }
    for blk in &mut f.blocks {
        blk.yields.iter_mut().for_each(|y| *y = rename(*y));
    }
    let mut parent = block_of(f);
    surround(f, &mut parent, l, pre, post);
}

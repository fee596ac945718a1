//! Max and min reductions reversed through the element that won.
//!
//! The adjoint of `m = a; for i in .. { m = m.max(x[idx(i)]) }` goes, whole, to the one
//! element the result came from, or to `a` when no element beat it. The loop's own
//! reverse gets there one iteration at a time: it tapes the running maximum and the
//! element of every iteration, and its reverse loop passes a zero through every iteration
//! but one. Before the reverse program is built, the code after such a loop instead
//! finds where the result came from and reads it again:
//!
//! ```text
//! m = a; for i in .. { m = m.max(x[idx(i)]) }          // as written
//! let (at, won) = if m == m && !(a == m) {
//!     (first i with x[idx(i)] == m, true)               // a loop that stops there
//! } else { (0, false) };
//! let m2 = if won { x[idx(at)] } else { a };            // read after the loop instead of m
//! ```
//!
//! The loop's `m` then feeds comparisons only, so activity leaves the loop inactive (no
//! tape, no reverse loop, and the loop stays as fast as the primal's), and the reverse of
//! `m2` adds its adjoint into `dx[idx(at)]` or into `a`'s. The winner is the one the
//! adjoint rule of `max` (`derivative::rules`) picks, iteration by iteration: a tie keeps
//! the running value and a NaN element never wins, so the element that won is the first
//! equal to the result, unless `a` equals it. Written `v.max(m)`, a tie goes to the
//! element, so the winner is the last element equal to the result (the search runs to
//! the end), or `a` if none is. (Where the result is NaN, every element and `a` are, and
//! the adjoint is NaN too: it goes to `a` here, and through a zero derivative to every
//! element in the loop's own reverse.) `m2` is `m`: `max` returns one of its operands and the loop
//! does not write `x` (up to a tie between `0.0` and `-0.0`, where `f64::max` itself may
//! return either). Only the reverse program is rewritten, and not with `coarsen = off`.
//!
//! Which loops qualify: a serial `for` loop without `break`, not checkpointed, with a
//! float parameter `m` whose only use in the body is `m.max(v)` or `v.max(m)` (or `min`)
//! at its top level, the next `m`; `v` a read of a buffer the loop does not write, at an
//! index computed from the loop index and values from outside the loop by integer
//! arithmetic that can be repeated after it. Measured in one binary (scratch crate, fastest
//! of 30 rounds, against the loop's own reverse): a log-sum-exp's gradient took 0.69–0.78×
//! the time (8 to 1000 elements); the maxima of 100 rows, 0.56× (rows of 8) and 0.23–0.26×
//! (rows of 64 and 1000, where the gradient then takes 1.7–1.8× the primal).

use super::carry::surround;
use super::twin_if::renamable;
use crate::analysis::activity::{self, Activity};
use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// A copy of `f` with every qualifying reduction rewritten, and its activity; `None` when
/// there is none.
pub fn routed(f: &Function, active_params: &[bool]) -> Option<(Function, Activity)> {
    let mut loops = Vec::new();
    f.walk(f.body, &mut |i| {
        if matches!(f.inst(i).kind, InstKind::For { .. }) {
            loops.push(i);
        }
    });
    let mut g: Option<Function> = None;
    // The rewritten parameters (the code added after the loop reads the result too).
    let mut done = HashSet::new();
    for l in loops {
        loop {
            let current = g.as_ref().unwrap_or(f);
            let Some(r) = reduction(current, l, &done) else {
                break;
            };
            done.insert((l, r.k));
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

/// A reduction found in a loop: its parameter, whether the running value is the method's
/// receiver, the element's buffer and index, and the body's instructions
/// that compute the index (in order), which are repeated after the loop.
struct Reduction {
    k: usize,
    running_first: bool,
    buf: Buf,
    idx: Vec<Value>,
    index_insts: Vec<Inst>,
}

fn reduction(f: &Function, l: Inst, done: &HashSet<(Inst, usize)>) -> Option<Reduction> {
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
        if f.ty(p) != Ty::Float || done.contains(&(l, k)) {
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
        if !matches!(*name, "max" | "min") {
            continue;
        }
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
        range,
        inits,
        index,
        ..
    } = f.inst(l).kind.clone()
    else {
        unreachable!("reductions are for loops")
    };
    let span = f.inst(l).span;
    let res = f.inst(l).results[r.k];
    let init = inits[r.k];
    // What reads the loop's result now (the new code below reads it as well).
    let mut users = Vec::new();
    f.walk(f.body, &mut |i| {
        if f.operands(i).contains(&res) {
            users.push(i);
        }
    });
    let post = f.new_block();
    let mut b = Builder::new(f, post);
    b.span = span;
    let (at, won) = if r.running_first {
        // The first element equal to the result, searched only if `init` lost.
        let number = b.binary(BinOp::Eq, res, res);
        let same = b.binary(BinOp::Eq, init, res);
        let lost = b.not(same);
        let search = b.binary(BinOp::And, number, lost);
        let then_blk = b.func.new_block();
        let else_blk = b.func.new_block();
        let found = b.in_block(then_blk, |b| scan(b, r, &range, index, res, true));
        let none = b.in_block(else_blk, |b| vec![b.iconst(0), b.bconst(false)]);
        b.set_yields(then_blk, found);
        b.set_yields(else_blk, none);
        let i = b.push(
            InstKind::If {
                cond: search,
                then_blk,
                else_blk,
            },
            &[Ty::Int, Ty::Bool],
            Some("at"),
        );
        let out = b.func.inst(i).results.clone();
        (out[0], out[1])
    } else {
        let out = scan(&mut b, r, &range, index, res, false);
        (out[0], out[1])
    };
    // The element that won, read again, or the initial value.
    let then_blk = b.func.new_block();
    let else_blk = b.func.new_block();
    let element = b.in_block(then_blk, |b| element_at(b, r, index, at));
    b.set_yields(then_blk, vec![element]);
    b.set_yields(else_blk, vec![init]);
    let name = b.func.value(res).name.clone();
    let pick = b.push(
        InstKind::If {
            cond: won,
            then_blk,
            else_blk,
        },
        &[Ty::Float],
        name.as_deref(),
    );
    let picked = b.func.inst(pick).results[0];
    // Everything after the loop reads the element instead of the running value.
    let rename = |x: Value| if x == res { picked } else { x };
    for i in users {
        f.insts[i.index()].kind.map_operands(&mut |x| rename(x));
    }
    let mut blocks = vec![f.body];
    f.walk(f.body, &mut |i| blocks.extend(f.child_blocks(i)));
    for blk in blocks {
        let yields = &mut f.blocks[blk.index()].yields;
        yields.iter_mut().for_each(|y| *y = rename(*y));
    }
    let pre = f.new_block();
    let mut parent = f.block_map();
    surround(f, &mut parent, l, pre, post);
}

/// The reduction's element at index value `at` (of the loop whose index is `index`): its
/// index instructions repeated, then the read.
fn element_at(b: &mut Builder, r: &Reduction, index: Value, at: Value) -> Value {
    let mut names = HashMap::from([(index, at)]);
    for &i in &r.index_insts {
        let mut kind = b.func.inst(i).kind.clone();
        kind.map_operands(&mut |x| names.get(&x).copied().unwrap_or(x));
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
}

/// A loop over the reduction's range looking for the element equal to `mx`: the first,
/// stopping there (`first`), or the last. Returns the index value found and whether one
/// was.
fn scan(
    b: &mut Builder,
    r: &Reduction,
    range: &RangeSpec,
    index: Value,
    mx: Value,
    first: bool,
) -> Vec<Value> {
    let at0 = b.iconst(0);
    let none = b.bconst(false);
    let l = b.reserve();
    let j = b
        .func
        .new_value(Ty::Int, ValueDef::LoopIndex(l), Some("j".into()));
    let at = b
        .func
        .new_value(Ty::Int, ValueDef::LoopParam(l, 0), Some("at".into()));
    let found = b
        .func
        .new_value(Ty::Bool, ValueDef::LoopParam(l, 1), Some("won".into()));
    let body = b.func.new_block();
    let next = b.in_block(body, |b| {
        let v = element_at(b, r, index, j);
        let equal = b.binary(BinOp::Eq, v, mx);
        if first {
            // The loop stops before the next iteration, so `at` keeps this one.
            return vec![j, equal];
        }
        let at_next = b.select(equal, j, at);
        let won = b.binary(BinOp::Or, found, equal);
        vec![at_next, won]
    });
    b.set_yields(body, next);
    let results: Vec<Value> = [Ty::Int, Ty::Bool, Ty::Int]
        .iter()
        .enumerate()
        .map(|(n, t)| b.func.new_value(*t, ValueDef::Result(l, n as u32), None))
        .collect();
    let kind = InstKind::For {
        range: range.clone(),
        index: j,
        params: vec![at, found],
        inits: vec![at0, none],
        body,
        exit: if first { vec![found] } else { vec![] },
    };
    b.finish(l, kind, results.clone());
    results[..2].to_vec()
}

//! Values the reverse sweep can rebuild from others instead of saving them:
//!
//! - **aliases**: a load equal to what its block last stored or loaded at the same
//!   indices, with no write of the buffer in between (`c[j] = x − m; … c[j] * q`);
//! - **inductions**: an integer loop parameter stepped by an invariant amount
//!   (`l += 1`), which is its initial value plus the step times the iteration;
//! - **backward counters**: an integer parameter of an outer loop that an inner loop
//!   steps (`for c .. { for r in c + 1..d { l += 1 } }`): the reverse sweep runs it
//!   backwards from its final value, by the step times each inner trip count;
//! - **fills**: a load `buf[col]` of what an earlier loop over the same range stored with
//!   `buf[j] = e(j)`, which is `e(col)` re-evaluated from stable values.

use crate::analysis::recording::{stable_reads, Structure};
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// An integer loop parameter `p` with `p' = p ± step`: at iteration k it is
/// `init ± k·step`.
#[derive(Clone, Debug)]
pub struct Induction {
    pub lp: Inst,
    pub init: Value,
    pub step: Value,
    pub negative: bool,
}

/// An integer parameter `p` of a loop whose next value is the result of an inner loop
/// `inner` (a statement of the loop's body) that starts its own parameter at `p` and steps
/// it by `step` per iteration: each iteration moves `p` by `±step · trip(inner)`. The
/// loop's reverse sweep starts from its result `last` (the final `p`) and steps back by the
/// same amount in each reversed iteration, instead of reading a tape.
#[derive(Clone, Debug)]
pub struct Backward {
    pub inner: Inst,
    pub step: Value,
    pub negative: bool,
    pub last: Value,
}

/// A load of what a fill loop stored at its index: the stored `value` with `index := at`.
#[derive(Clone, Debug)]
pub struct Fill {
    pub index: Value,
    pub value: Value,
    pub at: Value,
    /// The instructions of the fill loop's body that `value` is computed by.
    pub insts: HashSet<Inst>,
}

/// The largest expression (instructions inside the fill loop) re-evaluated for a fill.
const FILL_BUDGET: usize = 16;

pub struct Reuse {
    pub aliases: HashMap<Value, Value>,
    pub inductions: HashMap<Value, Induction>,
    pub backwards: HashMap<Value, Backward>,
    pub fills: HashMap<Value, Fill>,
}

impl Reuse {
    /// The reuse facts of `f`; backward counters only when `backward` (the pass
    /// `backward_counters`; without it those loop parameters are taped).
    pub fn new(f: &Function, structure: &Structure, backward: bool) -> Self {
        let mut aliases = HashMap::new();
        block_aliases(f, f.body, &mut aliases);
        let stable = stable_reads(f, structure);
        let mut inductions = HashMap::new();
        f.walk(f.body, &mut |i| {
            if let InstKind::For { .. } = f.inst(i).kind {
                inductions.extend(loop_inductions(f, structure, i));
            }
        });
        let mut backwards = HashMap::new();
        let mut fills = HashMap::new();
        f.walk(f.body, &mut |i| match &f.inst(i).kind {
            InstKind::For { .. } => {
                if !backward {
                    return;
                }
                backwards.extend(loop_backwards(f, structure, &inductions, i));
            }
            InstKind::Load(..) if !aliases.contains_key(&f.inst(i).results[0]) => {
                if let Some(fill) = fill_of(f, structure, &stable, i) {
                    fills.insert(f.inst(i).results[0], fill);
                }
            }
            _ => {}
        });
        Reuse {
            aliases,
            inductions,
            backwards,
            fills,
        }
    }
}

/// Buffers written by `i` or anywhere in its blocks.
fn writes_within(f: &Function, i: Inst) -> HashSet<Buf> {
    let mut w: HashSet<Buf> = f.written_bufs(i).into_iter().collect();
    for c in f.child_blocks(i) {
        f.walk(c, &mut |j| w.extend(f.written_bufs(j)));
    }
    w
}

fn block_aliases(f: &Function, b: Block, out: &mut HashMap<Value, Value>) {
    let mut known: HashMap<(Buf, Vec<Value>), Value> = HashMap::new();
    for &i in &f.block(b).insts {
        match &f.inst(i).kind {
            InstKind::Load(buf, idx) => {
                let r = f.inst(i).results[0];
                match known.get(&(*buf, idx.clone())) {
                    Some(v) => {
                        out.insert(r, *v);
                    }
                    None => {
                        known.insert((*buf, idx.clone()), r);
                    }
                }
            }
            // Other indices may name the same element: forget the buffer, then remember.
            InstKind::Store(buf, idx, v) => {
                known.retain(|(k, _), _| k != buf);
                known.insert((*buf, idx.clone()), *v);
            }
            _ => {
                let written = writes_within(f, i);
                known.retain(|(k, _), _| !written.contains(k));
                for c in f.child_blocks(i) {
                    block_aliases(f, c, out);
                }
            }
        }
    }
}

/// Whether `v` is computed inside loop `lp` (its body, at any depth).
fn inside(f: &Function, structure: &Structure, v: Value, lp: Inst) -> bool {
    let mut b = structure.def_block(f, v);
    loop {
        match structure.block_owner[b.index()] {
            Some(o) if o == lp => return true,
            Some(o) => b = structure.inst_block[o.index()].expect("placed instruction"),
            None => return false,
        }
    }
}

fn loop_inductions(f: &Function, structure: &Structure, lp: Inst) -> Vec<(Value, Induction)> {
    let InstKind::For {
        range,
        params,
        inits,
        body,
        ..
    } = &f.inst(lp).kind
    else {
        return Vec::new();
    };
    if range.step.is_some() || range.rev {
        return Vec::new();
    }
    let invariant = |v: Value| {
        matches!(f.value(v).def, ValueDef::Result(i, _) if matches!(f.inst(i).kind, InstKind::IConst(_)))
            || !inside(f, structure, v, lp)
    };
    let mut out = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        if f.ty(p) != Ty::Int {
            continue;
        }
        let y = f.block(*body).yields[k];
        let ValueDef::Result(i, 0) = f.value(y).def else {
            continue;
        };
        let (step, negative) = match f.inst(i).kind {
            InstKind::Binary(BinOp::Add, a, s) if a == p && invariant(s) => (s, false),
            InstKind::Binary(BinOp::Add, s, a) if a == p && invariant(s) => (s, false),
            InstKind::Binary(BinOp::Sub, a, s) if a == p && invariant(s) => (s, true),
            _ => continue,
        };
        out.push((
            p,
            Induction {
                lp,
                init: inits[k],
                step,
                negative,
            },
        ));
    }
    out
}

fn loop_backwards(
    f: &Function,
    structure: &Structure,
    inductions: &HashMap<Value, Induction>,
    lp: Inst,
) -> Vec<(Value, Backward)> {
    let InstKind::For {
        params, body, exit, ..
    } = &f.inst(lp).kind
    else {
        return Vec::new();
    };
    // Every iteration runs to its end (no `break`), and the reverse sweep visits them in
    // the opposite order (not a parallel loop).
    if !exit.is_empty() || f.parallel.contains_key(&lp) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        if f.ty(p) != Ty::Int {
            continue;
        }
        let ValueDef::Result(inner, j) = f.value(f.block(*body).yields[k]).def else {
            continue;
        };
        let j = j as usize;
        let InstKind::For {
            range,
            params: qs,
            inits,
            exit: inner_exit,
            ..
        } = &f.inst(inner).kind
        else {
            continue;
        };
        // The inner loop runs once per iteration (a statement of the body, not in a
        // branch), from `p`, to completion, over a range that does not depend on `p`
        // (the reverse sweep needs its length to find `p`).
        if structure.inst_block[inner.index()] != Some(*body)
            || !inner_exit.is_empty()
            || j >= qs.len()
            || inits[j] != p
            || reaches(f, structure, range.start, p, lp)
            || reaches(f, structure, range.end, p, lp)
        {
            continue;
        }
        let Some(ind) = inductions.get(&qs[j]) else {
            continue;
        };
        // The step is the same in every iteration of `lp`.
        let konst = matches!(f.value(ind.step).def,
            ValueDef::Result(i, _) if matches!(f.inst(i).kind, InstKind::IConst(_)));
        if !konst && inside(f, structure, ind.step, lp) {
            continue;
        }
        out.push((
            p,
            Backward {
                inner,
                step: ind.step,
                negative: ind.negative,
                last: f.inst(lp).results[k],
            },
        ));
    }
    out
}

/// Whether `v` is `p` or computed from it inside loop `lp` (conservatively: a loop
/// value other than `lp`'s index, the result of a branch or loop, or a chain too deep to
/// follow, counts as reaching it).
fn reaches(f: &Function, structure: &Structure, v: Value, p: Value, lp: Inst) -> bool {
    let mut stack = vec![v];
    let mut seen = HashSet::new();
    while let Some(w) = stack.pop() {
        if w == p {
            return true;
        }
        if !seen.insert(w) || !inside(f, structure, w, lp) {
            continue;
        }
        if seen.len() > 64 {
            return true;
        }
        match f.value(w).def {
            ValueDef::Result(i, _) if f.child_blocks(i).is_empty() => stack.extend(f.operands(i)),
            ValueDef::LoopIndex(l) if l == lp => {}
            _ => return true,
        }
    }
    false
}

/// Whether every execution of `v`'s definition yields the same value: `v` is computed by
/// arithmetic, and by loops without exits whose bounds and starting values are of the same
/// kind, from values defined outside every loop, with no buffer reads. Such a value needs
/// one saved copy, not one per iteration: the final value of a backward counter restarted
/// at `d` in each iteration of an outer loop (`li` after `for c in 0..d { for r in c + 1..d
/// { li += 1 } }`) is the same for every point and component of GMM.
pub fn same_every_time(f: &Function, structure: &Structure, v: Value) -> bool {
    let mut budget = 64;
    fixed(f, structure, v, &HashSet::new(), &mut budget)
}

/// [`same_every_time`], with `known` the values of the loops being followed (their
/// indices and parameters, which vary only within one execution of the loop); `budget`
/// bounds the values visited (beyond it the answer is no).
fn fixed(
    f: &Function,
    structure: &Structure,
    v: Value,
    known: &HashSet<Value>,
    budget: &mut u32,
) -> bool {
    if known.contains(&v) {
        return true;
    }
    let ValueDef::Result(i, _) = f.value(v).def else {
        return false;
    };
    let block = structure.inst_block[i.index()].expect("placed instruction");
    if structure.enclosing_loop(f, block).is_none() {
        return true;
    }
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let mut all = |vs: Vec<Value>, known: &HashSet<Value>| {
        vs.into_iter()
            .all(|w| fixed(f, structure, w, known, budget))
    };
    match &f.inst(i).kind {
        InstKind::FConst(_) | InstKind::IConst(_) | InstKind::BConst(_) | InstKind::Param(_) => {
            true
        }
        InstKind::Unary(..) | InstKind::Binary(..) | InstKind::Cast { .. } | InstKind::Math(..) => {
            all(f.operands(i), known)
        }
        InstKind::For {
            range,
            index,
            params,
            inits,
            body,
            exit,
        } if exit.is_empty() => {
            let outer = [range.start, range.end]
                .into_iter()
                .chain(range.step)
                .chain(inits.iter().copied());
            if !all(outer.collect(), known) {
                return false;
            }
            // Every parameter's next value, from the loop's own values: then each
            // execution of the loop runs the same iterations on the same numbers.
            let mut inner = known.clone();
            inner.insert(*index);
            inner.extend(params.iter().copied());
            all(f.block(*body).yields.clone(), &inner)
        }
        _ => false,
    }
}

/// Whether two range bounds are the same number: one value, or equal integer constants.
pub(crate) fn same_bound(f: &Function, a: Value, b: Value) -> bool {
    let konst = |v: Value| match f.value(v).def {
        ValueDef::Result(i, _) => match f.inst(i).kind {
            InstKind::IConst(c) => Some(c),
            _ => None,
        },
        _ => None,
    };
    a == b || konst(a).is_some_and(|c| konst(b) == Some(c))
}

fn plain_range(f: &Function, lp: Inst) -> Option<(Value, Value, Value, Block)> {
    match &f.inst(lp).kind {
        InstKind::For {
            range,
            index,
            body,
            exit,
            ..
        } if range.step.is_none() && exit.is_empty() => {
            Some((range.start, range.end, *index, *body))
        }
        _ => None,
    }
}

/// The fill a load `buf[at]` reads, if `at` is the index of a loop over the same range as
/// an earlier loop of an enclosing block whose body stores `buf[j] = e(j)` and nothing
/// else into `buf`, with no write of `buf` in between.
fn fill_of(f: &Function, structure: &Structure, stable: &[bool], load: Inst) -> Option<Fill> {
    let InstKind::Load(buf, idx) = &f.inst(load).kind else {
        return None;
    };
    let [at] = idx.as_slice() else {
        return None;
    };
    let ValueDef::LoopIndex(reader) = f.value(*at).def else {
        return None;
    };
    let (start, end, _, _) = plain_range(f, reader)?;
    // Climb from the load through its enclosing statements; in each block look back for
    // the fill, past statements that do not write `buf`.
    let mut stmt = load;
    while let Some(b) = structure.inst_block[stmt.index()] {
        if writes_within(f, stmt).contains(buf) {
            return None;
        }
        let pos = structure.inst_pos[stmt.index()];
        for &prev in f.block(b).insts[..pos].iter().rev() {
            if let Some(fill) = fill_loop(f, structure, stable, prev, *buf, start, end) {
                return Some(Fill { at: *at, ..fill });
            }
            if writes_within(f, prev).contains(buf) {
                return None;
            }
        }
        stmt = structure.block_owner[b.index()]?;
    }
    None
}

/// `lp` as a fill of `buf` over `start..end`: its body stores `buf[j] = e` as a statement
/// of its own, `e` is pure and small, reads only stable buffers, and nothing else in the
/// loop writes `buf`.
fn fill_loop(
    f: &Function,
    structure: &Structure,
    stable: &[bool],
    lp: Inst,
    buf: Buf,
    start: Value,
    end: Value,
) -> Option<Fill> {
    let (s, e, index, body) = plain_range(f, lp)?;
    if !same_bound(f, s, start) || !same_bound(f, e, end) {
        return None;
    }
    let mut stores = f.block(body).insts.iter().filter(|i| {
        matches!(&f.inst(**i).kind, InstKind::Store(b, idx, _) if *b == buf && idx.as_slice() == [index])
    });
    let store = *stores.next()?;
    let InstKind::Store(_, _, value) = f.inst(store).kind else {
        unreachable!()
    };
    let writers = f
        .block(body)
        .insts
        .iter()
        .filter(|i| writes_within(f, **i).contains(&buf))
        .count();
    if writers != 1 {
        return None;
    }
    // The stored expression, down to values from outside the loop and its index.
    let mut insts = HashSet::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        if v == index || !inside(f, structure, v, lp) {
            continue;
        }
        let ValueDef::Result(i, 0) = f.value(v).def else {
            return None;
        };
        let pure = match &f.inst(i).kind {
            InstKind::FConst(_) | InstKind::IConst(_) | InstKind::BConst(_) => true,
            InstKind::Unary(..) | InstKind::Cast { .. } | InstKind::Math(..) => true,
            InstKind::Binary(op, a, _) => !(*op == BinOp::Rem && f.ty(*a) == Ty::Float),
            InstKind::Load(..) => stable[i.index()],
            _ => false,
        };
        if !pure || structure.inst_block[i.index()] != Some(body) {
            return None;
        }
        if insts.insert(i) {
            if insts.len() > FILL_BUDGET {
                return None;
            }
            stack.extend(f.operands(i));
        }
    }
    Some(Fill {
        index,
        value,
        at: index,
        insts,
    })
}

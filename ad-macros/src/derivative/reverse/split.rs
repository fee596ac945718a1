//! Index-set splitting: a loop whose body branches on whether its index lies in an
//! interval becomes three loops without the branch.
//!
//! A stencil's row, `for j in 0..len { if i > 0 && i < m - 1 && j > 0 && j < n - 1 {
//! interior } else { edge } }` (after the reverse sweep fused it with its adjoint), becomes
//!
//! ```text
//! for j in 0..lo { edge }   for j in lo..hi { interior }   for j in hi..len { edge }
//! ```
//!
//! with `[lo, hi)` the indices where the condition holds, computed before the loops. The
//! middle loop's body is straight-line code whose accesses happen in every iteration, so
//! their bounds checks come out of the loop (`codegen::window`), and the branch is gone.
//! Every iteration runs the same operations as before, in the same order, so results are
//! bitwise the same (`tests::split` runs both programs through `ir::interp`).
//!
//! The condition must be a conjunction (`&&`, left to right) of loop-invariant booleans
//! and of comparisons `<`, `<=`, `>`, `>=` of the index with loop-invariant integers, so
//! that the set where it holds is an interval; both branches must be straight-line code
//! ([`straight`]), and nothing may read the loop's trip count. The parts of the condition
//! are computed before the loops only where the loop computed them at least once: the
//! right operand of a short-circuit `&&` only if the interval of the parts before it is
//! not empty (`n - 1` is not computed for a row of length 0). An arithmetic panic in them
//! (an overflow with debug assertions) then happens before the loop instead of in the
//! first iteration that reached it, as with index windows.

use super::twin_if::straight;
use crate::ir::builder::Builder;
use crate::ir::copy::{Copier, Flow};
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// One part of the condition, in the order the loop evaluates them.
#[derive(Clone, Copy, Debug)]
enum Atom {
    /// A loop-invariant boolean.
    Holds(Value),
    /// `j > e` (strict) or `j >= e`.
    Above(Value, bool),
    /// `j < e` (strict) or `j <= e`.
    Below(Value, bool),
    /// The block of a short-circuit `&&`: the parts after it are computed only where the
    /// parts before it hold for some index.
    Guard,
}

struct Plan {
    /// The branch on the condition, at the top level of the body.
    branch: Inst,
    then_blk: Block,
    else_blk: Block,
    /// The top-level instructions that compute only the condition (left out of the
    /// new bodies).
    chain: HashSet<Inst>,
    atoms: Vec<Atom>,
}

/// Splits every serial loop of `f` that qualifies (those in parallel bodies included;
/// not those in checkpointing closures).
pub fn split_index_sets(f: &mut Function) {
    let mut loops = Vec::new();
    collect(f, f.body, &mut loops);
    let mut parent = f.block_map();
    for l in loops {
        if let Some(plan) = plan(f, l) {
            apply(f, &mut parent, l, plan);
        }
    }
}

fn collect(f: &Function, b: Block, out: &mut Vec<Inst>) {
    for &i in &f.block(b).insts {
        if super::is_checkpoint(f, i) {
            continue;
        }
        if matches!(f.inst(i).kind, InstKind::For { .. }) && !f.parallel.contains_key(&i) {
            out.push(i);
        }
        for c in f.child_blocks(i) {
            collect(f, c, out);
        }
    }
}

fn block_straight(f: &Function, b: Block) -> bool {
    f.block(b).insts.iter().all(|i| straight(&f.inst(*i).kind))
}

fn plan(f: &Function, l: Inst) -> Option<Plan> {
    let InstKind::For {
        range,
        index,
        params,
        body,
        exit,
        ..
    } = &f.inst(l).kind
    else {
        return None;
    };
    if range.rev || range.step.is_some() || !exit.is_empty() {
        return None;
    }
    if let Some(count) = f.inst(l).results.get(params.len()) {
        if f.uses_in(f.body, *count) > 0 {
            return None;
        }
    }
    let mut inside = HashSet::new();
    f.walk(*body, &mut |i| {
        inside.insert(i);
    });
    let insts = f.block(*body).insts.clone();
    let top: HashSet<Inst> = insts.iter().copied().collect();
    let x = *insts
        .iter()
        .rev()
        .find(|i| matches!(f.inst(**i).kind, InstKind::If { .. }))?;
    let InstKind::If {
        cond,
        then_blk,
        else_blk,
    } = f.inst(x).kind
    else {
        unreachable!("found as an if")
    };
    if !block_straight(f, then_blk) || !block_straight(f, else_blk) {
        return None;
    }
    let mut d = Decompose {
        f,
        l,
        index: *index,
        inside: &inside,
        top: &top,
        visited: HashSet::new(),
        atoms: Vec::new(),
    };
    if !d.conj(cond)
        || !d
            .atoms
            .iter()
            .any(|a| matches!(a, Atom::Above(..) | Atom::Below(..)))
    {
        return None;
    }
    // The chain: the top-level instructions the decomposition went through, less those
    // that something else reads (they are copied as they are, before their readers).
    let mut chain = d.visited;
    loop {
        let mut read: Vec<Value> = f.block(*body).yields.clone();
        for i in insts.iter().filter(|i| **i != x && !chain.contains(*i)) {
            read.extend(f.operands(*i));
        }
        for blk in [then_blk, else_blk] {
            read.extend(f.block(blk).yields.iter().copied());
            for i in &f.block(blk).insts {
                read.extend(f.operands(*i));
            }
        }
        let mut changed = false;
        for v in read {
            if let ValueDef::Result(d, _) = f.value(v).def {
                if chain.contains(&d) {
                    if !straight(&f.inst(d).kind) {
                        return None;
                    }
                    chain.remove(&d);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Everything else at the top level is copied as it is.
    if insts
        .iter()
        .any(|i| *i != x && !chain.contains(i) && !straight(&f.inst(*i).kind))
    {
        return None;
    }
    Some(Plan {
        branch: x,
        then_blk,
        else_blk,
        chain,
        atoms: d.atoms,
    })
}

struct Decompose<'a> {
    f: &'a Function,
    l: Inst,
    index: Value,
    inside: &'a HashSet<Inst>,
    top: &'a HashSet<Inst>,
    /// The top-level instructions of the condition.
    visited: HashSet<Inst>,
    atoms: Vec<Atom>,
}

impl Decompose<'_> {
    /// Whether `v` can be computed before the loop: defined outside it, or by integer or
    /// boolean arithmetic of such values.
    fn hoistable(&self, v: Value) -> bool {
        match self.f.value(v).def {
            ValueDef::LoopIndex(m) | ValueDef::LoopParam(m, _) => {
                m != self.l && !self.inside.contains(&m)
            }
            ValueDef::Result(d, _) => {
                if !self.inside.contains(&d) {
                    return true;
                }
                let kind = &self.f.inst(d).kind;
                // A parameter's length (a local buffer may be allocated in the loop).
                if let InstKind::Len(buf, idx) = kind {
                    return idx.is_empty()
                        && matches!(self.f.buf(*buf).kind, BufKind::Param(_) | BufKind::Shadow);
                }
                matches!(
                    kind,
                    InstKind::IConst(_)
                        | InstKind::BConst(_)
                        | InstKind::Unary(..)
                        | InstKind::Binary(..)
                        | InstKind::Cast { .. }
                ) && self.f.ty(v) != Ty::Float
                    && !matches!(kind, InstKind::Binary(BinOp::IntLike, ..))
                    && self.f.operands(d).iter().all(|o| self.hoistable(*o))
            }
        }
    }

    /// Whether instruction `i` of a short-circuit block only computes a value (what
    /// [`Self::hoistable`] may copy).
    fn computes(&self, i: Inst) -> bool {
        let kind = &self.f.inst(i).kind;
        kind.is_arithmetic() || matches!(kind, InstKind::Len(..))
    }

    /// Appends the parts of boolean `c`; false where `c` is not such a conjunction.
    fn conj(&mut self, c: Value) -> bool {
        if self.f.ty(c) == Ty::Bool && self.hoistable(c) {
            self.atoms.push(Atom::Holds(c));
            return true;
        }
        let ValueDef::Result(d, k) = self.f.value(c).def else {
            return false;
        };
        if self.top.contains(&d) {
            self.visited.insert(d);
        }
        match self.f.inst(d).kind.clone() {
            InstKind::Binary(BinOp::And, a, b) => self.conj(a) && self.conj(b),
            InstKind::Binary(op, a, b)
                if matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge) =>
            {
                let atom = if a == self.index && self.hoistable(b) {
                    match op {
                        BinOp::Lt => Atom::Below(b, true),
                        BinOp::Le => Atom::Below(b, false),
                        BinOp::Gt => Atom::Above(b, true),
                        _ => Atom::Above(b, false),
                    }
                } else if b == self.index && self.hoistable(a) {
                    match op {
                        BinOp::Lt => Atom::Above(a, true),
                        BinOp::Le => Atom::Above(a, false),
                        BinOp::Gt => Atom::Below(a, true),
                        _ => Atom::Below(a, false),
                    }
                } else {
                    return false;
                };
                self.atoms.push(atom);
                true
            }
            // `x && y` lowered: `if x { ..; y } else { false }`.
            InstKind::If {
                cond,
                then_blk,
                else_blk,
            } if k == 0 && self.f.inst(d).results.len() == 1 => {
                let e = self.f.block(else_blk);
                let is_false = e.yields.len() == 1
                    && matches!(self.f.value(e.yields[0]).def, ValueDef::Result(z, 0)
                        if matches!(self.f.inst(z).kind, InstKind::BConst(false)));
                let t = self.f.block(then_blk);
                if !is_false
                    || t.yields.len() != 1
                    || !t.insts.iter().all(|i| self.computes(*i))
                    || !e.insts.iter().all(|i| self.computes(*i))
                {
                    return false;
                }
                let y = t.yields[0];
                if !self.conj(cond) {
                    return false;
                }
                self.atoms.push(Atom::Guard);
                self.conj(y)
            }
            _ => false,
        }
    }
}

fn apply(f: &mut Function, parent: &mut HashMap<Inst, Block>, l: Inst, plan: Plan) {
    let InstKind::For {
        range,
        inits,
        body,
        index,
        ..
    } = f.inst(l).kind.clone()
    else {
        return;
    };
    let below = index_bound(f, l);
    let mut inside = HashSet::new();
    f.walk(body, &mut |i| {
        inside.insert(i);
    });
    let pre = f.new_block();
    let (hi, second) = {
        let mut b = Builder::new(f, pre);
        b.span = b.func.inst(l).span;
        // [lo, hi): where the condition holds; start ≤ lo ≤ hi ≤ end throughout.
        let runs = b.binary(BinOp::Lt, range.start, range.end);
        let r = b.branch(
            runs,
            &[Ty::Int, Ty::Int],
            |b| {
                let mut memo = Copier::within(HashMap::new());
                let (lo, hi) = bounds(b, &inside, &plan.atoms, range.start, range.end, &mut memo);
                vec![lo, hi]
            },
            |_| vec![range.start, range.start],
        );
        let (lo, hi) = (r[0], r[1]);
        let first = copy_loop(&mut b, l, &plan, false, (range.start, lo), inits);
        let second = copy_loop(&mut b, l, &plan, true, (lo, hi), first);
        (hi, second)
    };
    // The loop itself runs the last part, with the else branch in place of the branch.
    let x = plan.branch;
    let x_results = f.inst(x).results.clone();
    let else_yields = f.block(plan.else_blk).yields.clone();
    let else_insts = f.block(plan.else_blk).insts.clone();
    let rename: HashMap<Value, Value> = x_results.iter().copied().zip(else_yields).collect();
    let mut list = Vec::new();
    for i in f.block(body).insts.clone() {
        if plan.chain.contains(&i) {
            continue;
        }
        if i == x {
            list.extend(else_insts.iter().copied());
            continue;
        }
        let mut kind = f.inst(i).kind.clone();
        kind.map_operands(&mut |v| rename.get(&v).copied().unwrap_or(v));
        f.insts[i.index()].kind = kind;
        list.push(i);
    }
    for i in &list {
        parent.insert(*i, body);
    }
    f.blocks[body.index()].insts = list;
    let yields: Vec<Value> = f
        .block(body)
        .yields
        .iter()
        .map(|v| rename.get(v).copied().unwrap_or(*v))
        .collect();
    f.blocks[body.index()].yields = yields;
    if let InstKind::For { range, inits, .. } = &mut f.insts[l.index()].kind {
        range.start = hi;
        *inits = second;
    }
    if let Some(below) = below {
        f.index_below.insert(index, below);
    }
    let post = f.new_block();
    super::carry::surround(f, parent, l, pre, post);
}

/// `max(a, b)` and `min(a, b)` of integers.
fn max(b: &mut Builder, x: Value, y: Value) -> Value {
    let c = b.binary(BinOp::Lt, x, y);
    b.select(c, y, x)
}

fn min(b: &mut Builder, x: Value, y: Value) -> Value {
    let c = b.binary(BinOp::Lt, x, y);
    b.select(c, x, y)
}

/// The interval of the atoms, narrowed from `[lo, hi)`; computes the parts of the
/// condition (`memo`: their copies so far) where the loop would have.
fn bounds(
    b: &mut Builder,
    inside: &HashSet<Inst>,
    atoms: &[Atom],
    mut lo: Value,
    mut hi: Value,
    memo: &mut Copier,
) -> (Value, Value) {
    for (n, atom) in atoms.iter().enumerate() {
        match *atom {
            Atom::Holds(v) => {
                let v = hoist(b, inside, v, memo);
                hi = b.select(v, hi, lo);
            }
            Atom::Above(e, false) => {
                let e = hoist(b, inside, e, memo);
                let m = max(b, lo, e);
                lo = min(b, m, hi);
            }
            Atom::Below(e, true) => {
                let e = hoist(b, inside, e, memo);
                let m = min(b, hi, e);
                hi = max(b, m, lo);
            }
            // `j > e` is `j >= e + 1` and `j <= e` is `j < e + 1`; `e + 1` is computed
            // only where `e < hi`, so it cannot overflow. Otherwise no index is above
            // `e` (the interval is empty) or every index is at most `e` (no change).
            Atom::Above(e, true) | Atom::Below(e, false) => {
                let above = matches!(atom, Atom::Above(..));
                let e = hoist(b, inside, e, memo);
                let c = b.binary(BinOp::Lt, e, hi);
                let r = b.branch(
                    c,
                    &[Ty::Int],
                    |b| {
                        let one = b.iconst(1);
                        let e1 = b.add(e, one);
                        vec![if above {
                            let m = max(b, lo, e1);
                            min(b, m, hi)
                        } else {
                            max(b, e1, lo)
                        }]
                    },
                    |_| vec![hi],
                )[0];
                if above {
                    lo = r;
                } else {
                    hi = r;
                }
            }
            Atom::Guard => {
                let c = b.binary(BinOp::Lt, lo, hi);
                let mut inner = memo.clone();
                let r = b.branch(
                    c,
                    &[Ty::Int, Ty::Int],
                    |b| {
                        let (a, z) = bounds(b, inside, &atoms[n + 1..], lo, hi, &mut inner);
                        vec![a, z]
                    },
                    |_| vec![lo, hi],
                );
                return (r[0], r[1]);
            }
        }
    }
    (lo, hi)
}

/// A copy before the loop of loop-invariant `v` (a value defined outside the loop is
/// itself).
fn hoist(b: &mut Builder, inside: &HashSet<Inst>, v: Value, memo: &mut Copier) -> Value {
    if let Some(h) = memo.names.get(&v) {
        return *h;
    }
    let ValueDef::Result(d, _) = b.func.value(v).def else {
        return v;
    };
    if !inside.contains(&d) {
        return v;
    }
    for o in b.func.operands(d) {
        hoist(b, inside, o, memo);
    }
    memo.plain_inst(b, d);
    memo.names[&v]
}

/// A copy of loop `l` over `start..end` from `inits`, with the branch's then (`take_then`)
/// or else block in place of the branch and the condition left out; its results.
fn copy_loop(
    b: &mut Builder,
    l: Inst,
    plan: &Plan,
    take_then: bool,
    (start, end): (Value, Value),
    inits: Vec<Value>,
) -> Vec<Value> {
    let InstKind::For {
        index,
        params,
        body,
        ..
    } = b.func.inst(l).kind.clone()
    else {
        unreachable!("a loop")
    };
    let name = b.func.value(index).name.clone();
    let below = index_bound(b.func, l);
    let results = b.for_range(start, end, name, &params, inits, |b, j, nparams| {
        if let Some(below) = below {
            b.func.index_below.insert(j, below);
        }
        let mut names: HashMap<Value, Value> = params
            .iter()
            .copied()
            .zip(nparams.iter().copied())
            .collect();
        names.insert(index, j);
        Copier::within(names).block(b, body, &mut |cp, b, i| {
            if plan.chain.contains(&i) {
                return Flow::Done;
            }
            if i == plan.branch {
                let blk = if take_then {
                    plan.then_blk
                } else {
                    plan.else_blk
                };
                let ys = cp.plain_block(b, blk);
                for (r, y) in b.func.inst(i).results.clone().into_iter().zip(ys) {
                    cp.names.insert(r, y);
                }
                return Flow::Done;
            }
            Flow::Copy
        })
    });
    results
}

/// A bound that the index of loop `l` and of any piece cut from it stays in `[0, bound)`
/// of ([`Function::index_below`]): the one it has, or the end of its range if that starts
/// at a constant `≥ 0` (as a row's `0..len` does).
pub(super) fn index_bound(f: &Function, l: Inst) -> Option<Value> {
    let InstKind::For { range, index, .. } = &f.inst(l).kind else {
        return None;
    };
    let from_zero = matches!(f.value(range.start).def, ValueDef::Result(d, 0)
        if matches!(f.inst(d).kind, InstKind::IConst(c) if c >= 0));
    let plain = range.step.is_none();
    f.index_below
        .get(index)
        .copied()
        .or((from_zero && plain).then_some(range.end))
}

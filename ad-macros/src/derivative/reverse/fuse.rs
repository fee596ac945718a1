//! Sums whose adjoint is the seed: each iteration reversed as soon as it has run.
//!
//! `f = 0; for i in .. { f += term(i) }` followed by `return f` (or `f ± other`,
//! `0.5 * f`) gives every iteration's `term` the same adjoint, `c · seed`, known when the
//! function starts. The
//! reverse of the loop then needs no second pass: each iteration's adjoint is emitted in
//! the forward sweep right after the iteration, reading what the iteration just computed
//! (its tapes hold one iteration and stay in cache), and the reverse sweep skips the loop.
//! That is what a hand-written adjoint of a sum does (`rosenbrock_hand` in
//! `benches/support/functions.rs`).
//!
//! The loop qualifies when reversing its iterations out of order cannot change anything:
//! - it is a `for` loop of the function's top level, not checkpointed, not closed by
//!   coarsening, without `break`; a parallel sum (`par_iter().map(..).sum()`) qualifies
//!   when its body has no inner loop;
//! - its only active loop-carried value `s` starts from an inactive value and is updated
//!   by one top-level `s + term` (or `s − term`, `term + s`), its only use in the loop, so
//!   the adjoint of `s` is the same before and after every iteration;
//! - its body holds only arithmetic, reads, stores, allocations, branches and inner `for`
//!   loops (no calls, no cells, no `while`, no parallel or closed loops, no `break`), and
//!   every buffer it writes is private to an iteration: allocated in it, or a local
//!   `vec![v; n]` refilled whole before each read (see [`writes_are_private`]). Nothing
//!   flows from one iteration to the next except `s`;
//! - nothing after the loop writes a buffer the loop reads ([`reads_stay`]);
//! - after the loop, `s` reaches the returned value only through `+`, `−`, negation and
//!   products with literals (`0.5 * s`), so its adjoint is `c · seed` with a constant `c`
//!   (±1 for a plain sum).
//!
//! The adjoints of values defined before the loop are then declared before the forward
//! sweep, and the reverse sweep adds into them after the fused iterations did.
//!
//! A fused parallel sum stays one parallel loop: its iterations' additions into shadows
//! are classified like those of any parallel adjoint (own element, halo, or computed
//! index; `derivative::parallel`), and its additions into outer adjoints become a
//! blockwise reduction beside the sum (`ad_rayon::for_each_owned_sum`). `carry.rs` leaves
//! it alone, since its iterations run in any order.

use super::carry::{int_const, touched_bufs};
use crate::analysis::recording::{Recording, Structure};
use crate::analysis::reuse::same_bound;
use crate::derivative::segments::Segmentation;
use crate::ir::*;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The loops of `f`'s top level to fuse, each with the position of its summed parameter
/// and the constant `c` of its adjoint `c · seed`.
pub(super) fn fusable_loops(
    f: &Function,
    act: &crate::analysis::activity::Activity,
    seg: &Segmentation,
    structure: &Structure,
    rec: &Recording,
) -> HashMap<Inst, (usize, f64)> {
    let mut out = HashMap::new();
    let Some(&ret) = f.block(f.body).yields.first() else {
        return out;
    };
    if !act.value(ret) || f.ty(ret) != Ty::Float {
        return out;
    }
    let top = f.block(f.body).insts.clone();
    for (pos, &l) in top.iter().enumerate() {
        let Some(k) = summed_param(f, act, seg, structure, rec, l) else {
            continue;
        };
        let later = &top[pos + 1..];
        if !writes_are_private(f, structure, l, later) || !reads_stay(f, l, later) {
            continue;
        }
        let result = f.inst(l).results[k];
        if let Some(c) = coefficient_after(f, later, result, ret) {
            out.insert(l, (k, c));
            if let Some((inner, m)) = fusable_inner(f, act, seg, l, k) {
                out.insert(inner, (m, c));
            }
        }
    }
    out
}

/// The inner loop of fused parallel sum `l` that carries its sum (a row's sum), with the
/// position of its summed parameter, when it can be fused too: every iteration of it is
/// then reversed as soon as it has run, inside the iteration of `l` (an element's adjoint
/// right after the element, as a hand-written adjoint does).
///
/// The inner loop's sum starts from `l`'s and is what `l` yields, so its adjoint is
/// `l`'s, `c · seed`. It qualifies when:
/// - it is a plain `for` (as `summed_param` asks of `l`'s body, with no loops inside),
///   the last statement of `l`'s body, carrying no other active value;
/// - it reads no active value that `l`'s iteration computes before it: the adjoints its
///   iterations add into must exist before the loop runs, and those of `l`'s iteration
///   are declared only when `l`'s adjoint runs;
/// - each of its iterations stores only at its own element (`base + j`), so that no
///   later iteration overwrites an element whose shadow an earlier adjoint has taken.
///
/// A sum reaches a parallel loop's inner loop this way only when
/// `lower::fuse_sums_into_writers` put it there (a user's `.map(..).sum()` adds the
/// closure's result to it instead), and that pass already asks for stores at `base + j`;
/// the check keeps this fusion sound on its own.
fn fusable_inner(
    f: &Function,
    act: &crate::analysis::activity::Activity,
    seg: &Segmentation,
    l: Inst,
    k: usize,
) -> Option<(Inst, usize)> {
    if !f.parallel.contains_key(&l) {
        return None;
    }
    let InstKind::For { params, body, .. } = &f.inst(l).kind else {
        return None;
    };
    let p = params[k];
    let ValueDef::Result(inner, m) = f.value(f.block(*body).yields[k]).def else {
        return None;
    };
    let InstKind::For {
        params: ip,
        inits,
        body: ibody,
        exit,
        ..
    } = &f.inst(inner).kind
    else {
        return None;
    };
    let m = m as usize;
    if m >= ip.len()
        || inits[m] != p
        || !exit.is_empty()
        || f.parallel.contains_key(&inner)
        || seg.closed.contains_key(&inner)
        || seg.of_inst.contains_key(&inner)
        || ip.iter().enumerate().any(|(j, q)| j != m && act.value(*q))
        || f.block(*body).insts.last() != Some(&inner)
    {
        return None;
    }
    let InstKind::For { index: j, .. } = f.inst(inner).kind else {
        return None;
    };
    let mut inside = HashSet::new();
    f.walk(*ibody, &mut |i| {
        inside.insert(i);
    });
    let mut outer_body = HashSet::new();
    f.walk(*body, &mut |i| {
        if !inside.contains(&i) && i != inner {
            outer_body.insert(i);
        }
    });
    let mut ok = true;
    f.walk(*ibody, &mut |i| {
        let kind = &f.inst(i).kind;
        ok &= kind.is_arithmetic()
            || matches!(
                kind,
                InstKind::Load(..) | InstKind::Len(..) | InstKind::Store(..) | InstKind::If { .. }
            );
        for v in f.operands(i) {
            let def = f.def_inst(v);
            ok &= !(act.value(v) && outer_body.contains(&def));
        }
        // Each iteration stores only at its own element, `base + j` with `base` from
        // outside the loop: no later iteration overwrites what an earlier one's adjoint
        // has taken the shadow of.
        if let InstKind::Store(_, idx, _) = kind {
            ok &= match idx[..] {
                [x] if x == j => true,
                [x] => matches!(f.value(x).def, ValueDef::Result(a, 0)
                    if matches!(f.inst(a).kind, InstKind::Binary(BinOp::Add, b, c)
                        if (c == j && !inside.contains(&f.def_inst(b)) && b != j)
                            || (b == j && !inside.contains(&f.def_inst(c)) && c != j))),
                _ => false,
            };
        }
    });
    ok.then_some((inner, m))
}

/// The position of loop `l`'s summed parameter, when `l` qualifies (see the module).
fn summed_param(
    f: &Function,
    act: &crate::analysis::activity::Activity,
    seg: &Segmentation,
    structure: &Structure,
    rec: &Recording,
    l: Inst,
) -> Option<usize> {
    let InstKind::For {
        params,
        inits,
        body,
        exit,
        ..
    } = &f.inst(l).kind
    else {
        return None;
    };
    let parallel = f.parallel.contains_key(&l);
    if !exit.is_empty()
        || f.checkpoints.contains_key(&l)
        || seg.closed.contains_key(&l)
        || seg.of_inst.contains_key(&l)
    {
        return None;
    }
    let active: Vec<usize> = (0..params.len())
        .filter(|&k| act.value(params[k]))
        .collect();
    let [k] = active[..] else {
        return None;
    };
    if act.value(inits[k]) || f.ty(params[k]) != Ty::Float {
        return None;
    }
    let mut plain = true;
    f.walk(*body, &mut |i| {
        plain &= match &f.inst(i).kind {
            k if k.is_arithmetic() => true,
            InstKind::Load(..)
            | InstKind::Len(..)
            | InstKind::Store(..)
            | InstKind::StoreAdd(..)
            | InstKind::Alloc { .. }
            | InstKind::Assert { .. }
            | InstKind::If { .. } => true,
            // A parallel sum's inner loops would keep their tapes and counters by row:
            // they may stand where its iterations save nothing (a row's sum,
            // `lower::fuse_sums_into_writers`).
            InstKind::For { exit, .. } => {
                (!parallel || !rec.saves_inside(f, structure, l))
                    && (exit.is_empty() || passive(f, act, i))
                    && !f.parallel.contains_key(&i)
                    && !f.checkpoints.contains_key(&i)
                    && !seg.closed.contains_key(&i)
            }
            _ => false,
        };
    });
    if !plain {
        return None;
    }
    // `s` is read once, by the update that the body yields.
    let update = f.block(*body).yields[k];
    let p = params[k];
    let uses = f.uses_in(*body, p);
    let ValueDef::Result(u, 0) = f.value(update).def else {
        return None;
    };
    if uses != 1 || !f.block(*body).insts.contains(&u) {
        return None;
    }
    summed_by(f, u, p).then_some(k)
}

/// Whether loop `l` leaves nothing to the reverse sweep, so that a `break` in it does not
/// matter: no active value in it, no write of an active buffer (the search for a
/// reduction's winner, `extremum`).
fn passive(f: &Function, act: &crate::analysis::activity::Activity, l: Inst) -> bool {
    let (params, ..) = f.loop_parts(l);
    let quiet = |i: Inst| {
        f.inst(i).results.iter().all(|v| !act.value(*v))
            && f.written_bufs(i).iter().all(|b| !act.buf(*b))
    };
    let mut passive = quiet(l) && params.iter().all(|p| !act.value(*p));
    for b in f.child_blocks(l) {
        f.walk(b, &mut |i| passive &= quiet(i));
    }
    passive
}

/// Whether instruction `u` updates the sum `p` (its only use): `p + term`, `p − term`, or
/// an inner `for` loop that starts its own sum from `p` and yields it (a row's sum).
fn summed_by(f: &Function, u: Inst, p: Value) -> bool {
    match &f.inst(u).kind {
        InstKind::Binary(BinOp::Add, a, b) => *a == p || *b == p,
        InstKind::Binary(BinOp::Sub, a, _) => *a == p,
        InstKind::For {
            params,
            inits,
            body,
            exit,
            ..
        } if exit.is_empty() => {
            let Some(m) = inits.iter().position(|v| *v == p) else {
                return false;
            };
            let q = params[m];
            let y = f.block(*body).yields[m];
            match f.value(y).def {
                ValueDef::Result(w, 0)
                    if f.uses_in(*body, q) == 1 && f.block(*body).insts.contains(&w) =>
                {
                    summed_by(f, w, q)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// The constant `c` with `∂ret/∂result = c`, when `result` reaches `ret` through the
/// top-level instructions `after` by `+`, `−`, negation and products with (or divisions
/// by) float literals only, and nothing else reads it or what it flows into.
fn coefficient_after(f: &Function, after: &[Inst], result: Value, ret: Value) -> Option<f64> {
    let mut coef: HashMap<Value, f64> = HashMap::from([(result, 1.0)]);
    for &i in after {
        let c = |v: &Value| coef.get(v).copied().unwrap_or(0.0);
        let linear = match f.inst(i).kind {
            InstKind::Binary(BinOp::Add, a, b) => Some(c(&a) + c(&b)),
            InstKind::Binary(BinOp::Sub, a, b) => Some(c(&a) - c(&b)),
            InstKind::Unary(UnOp::Neg, a) => Some(-c(&a)),
            // Scaled by a literal: `0.5 * s`, `s / 2.0`.
            InstKind::Binary(BinOp::Mul, a, b) => match (float_const(f, a), float_const(f, b)) {
                (Some(k), _) => Some(k * c(&b)),
                (_, Some(k)) => Some(c(&a) * k),
                _ => None,
            },
            InstKind::Binary(BinOp::Div, a, b) => float_const(f, b).map(|k| c(&a) / k),
            _ => None,
        };
        match linear {
            Some(x) if x != 0.0 => {
                coef.insert(f.inst(i).results[0], x);
            }
            Some(_) => {}
            None => {
                let mut reads = f.operands(i);
                for blk in f.child_blocks(i) {
                    reads.extend(f.block(blk).yields.iter().copied());
                    f.walk(blk, &mut |j| {
                        reads.extend(f.operands(j));
                        for c in f.child_blocks(j) {
                            reads.extend(f.block(c).yields.iter().copied());
                        }
                    });
                }
                if reads.iter().any(|v| coef.contains_key(v)) {
                    return None;
                }
            }
        }
    }
    let yields = &f.block(f.body).yields;
    if yields[1..].iter().any(|v| coef.contains_key(v)) {
        return None;
    }
    coef.get(&ret).copied().filter(|c| c.is_finite())
}

/// Whether every buffer loop `l` writes carries nothing from one iteration to the next:
/// it is allocated in the loop, or it is a 1-D local buffer `vec![v; n]` of the top level
/// that nothing after the loop touches, whose every read in the loop follows, in the same
/// iteration, a loop `for j in 0..n` that stores `buf[j]` (so every element the loop can
/// read was written in the iteration), and that the loop touches only by reads and stores.
fn writes_are_private(f: &Function, structure: &Structure, l: Inst, later: &[Inst]) -> bool {
    let InstKind::For { body, .. } = &f.inst(l).kind else {
        return false;
    };
    let mut local = HashSet::new();
    let mut written = BTreeSet::new();
    f.walk(*body, &mut |i| {
        if let InstKind::Alloc { buf, .. } = &f.inst(i).kind {
            local.insert(*buf);
        }
        written.extend(f.written_bufs(i));
    });
    // A parallel loop's own elements or rows (`derivative::parallel::ownership`).
    let owned = if f.parallel.contains_key(&l) {
        crate::derivative::parallel::ownership(f, l).unwrap_or_default()
    } else {
        Default::default()
    };
    written.iter().filter(|b| !local.contains(*b)).all(|&buf| {
        (owned.contains_key(&buf) && final_only(f, l, buf, later))
            || refilled(f, structure, *body, buf, later)
    })
}

/// Whether buffer `buf`, which each iteration of parallel loop `l` writes at its own
/// elements, is read in the loop only at final values (`Function::final_reads`) and not
/// touched after it. The adjoint of each element is then complete when its iteration
/// ends: what the user's shadow holds, plus what the iteration's own reads add.
fn final_only(f: &Function, l: Inst, buf: Buf, later: &[Inst]) -> bool {
    let InstKind::For { body, .. } = &f.inst(l).kind else {
        return false;
    };
    let mut ok = true;
    f.walk(*body, &mut |i| {
        if let InstKind::Load(b, _) | InstKind::Len(b, _) = &f.inst(i).kind {
            ok &= *b != buf || f.final_reads.contains(&i);
        }
    });
    for &i in later {
        ok &= !touched_bufs(f, i).contains(&buf);
        for c in f.child_blocks(i) {
            f.walk(c, &mut |j| ok &= !touched_bufs(f, j).contains(&buf));
        }
    }
    ok
}

fn refilled(f: &Function, structure: &Structure, body: Block, buf: Buf, later: &[Inst]) -> bool {
    let data = f.buf(buf);
    if data.rank != 1 || data.kind != BufKind::Local {
        return false;
    }
    let alloc = f
        .block(f.body)
        .insts
        .iter()
        .find_map(|&i| match &f.inst(i).kind {
            InstKind::Alloc { buf: b, dims, .. } if *b == buf => Some(dims.clone()),
            _ => None,
        });
    let Some(dims) = alloc else {
        return false;
    };
    let [len] = dims[..] else {
        return false;
    };
    // Nothing after the loop touches it.
    let mut after = false;
    for &i in later {
        after |= touched_bufs(f, i).contains(&buf);
        for c in f.child_blocks(i) {
            f.walk(c, &mut |j| after |= touched_bufs(f, j).contains(&buf));
        }
    }
    if after {
        return false;
    }
    // In the loop: reads and stores only, every read after a full refill.
    let mut ok = true;
    f.walk(body, &mut |i| {
        if !ok || !touched_bufs(f, i).contains(&buf) {
            return;
        }
        ok = match &f.inst(i).kind {
            InstKind::Store(..) | InstKind::Len(..) => true,
            InstKind::Load(..) | InstKind::StoreAdd(..) => {
                refilled_before(f, structure, body, buf, len, i)
            }
            _ => false,
        };
    });
    ok
}

/// Whether, climbing from `i` to the loop body `top`, some block holds, before the
/// statement containing `i`, a loop `for j in 0..len` whose body stores `buf[j]` as a
/// statement of its own, or `i` accesses element `j` in such a loop's body after that
/// store.
fn refilled_before(
    f: &Function,
    structure: &Structure,
    top: Block,
    buf: Buf,
    len: Value,
    i: Inst,
) -> bool {
    let mut stmt = i;
    while let Some(b) = structure.inst_block[stmt.index()] {
        let pos = structure.inst_pos[stmt.index()];
        if f.block(b).insts[..pos]
            .iter()
            .any(|&prev| fills(f, prev, buf, len))
        {
            return true;
        }
        // Inside the filling loop itself, after its store: element `j` of this iteration
        // (two loops fused by `lower::fuse_adjacent_loops`).
        if let Some(o) = structure.block_owner[b.index()] {
            if let InstKind::For { index, .. } = f.inst(o).kind {
                let own = match &f.inst(i).kind {
                    InstKind::Load(_, idx) | InstKind::StoreAdd(_, idx, _) => {
                        idx.as_slice() == [index]
                    }
                    _ => false,
                };
                let stored = f.block(b).insts[..pos].iter().any(|&s| {
                    matches!(&f.inst(s).kind, InstKind::Store(sb, idx, _) if *sb == buf && idx.as_slice() == [index])
                });
                if own && stored && fills(f, o, buf, len) {
                    return true;
                }
            }
        }
        if b == top {
            return false;
        }
        match structure.block_owner[b.index()] {
            Some(o) => stmt = o,
            None => return false,
        }
    }
    false
}

/// `lp` is `for j in 0..len { …; buf[j] = e; … }` (no step, not reversed, no `break`).
fn fills(f: &Function, lp: Inst, buf: Buf, len: Value) -> bool {
    let InstKind::For {
        range,
        index,
        body,
        exit,
        ..
    } = &f.inst(lp).kind
    else {
        return false;
    };
    range.step.is_none()
        && !range.rev
        && exit.is_empty()
        && int_const(f, range.start) == Some(0)
        && same_bound(f, range.end, len)
        && f.block(*body).insts.iter().any(|&s| {
            matches!(&f.inst(s).kind, InstKind::Store(b, idx, _) if *b == buf && idx.as_slice() == [*index])
        })
}

/// Whether nothing after loop `l` writes a buffer the loop reads. The fused iterations add
/// into the shadows of what they read during the forward sweep; a later write of that
/// buffer would take those additions for the adjoint of the value it stores.
fn reads_stay(f: &Function, l: Inst, later: &[Inst]) -> bool {
    let InstKind::For { body, .. } = &f.inst(l).kind else {
        return false;
    };
    let mut read = HashSet::new();
    f.walk(*body, &mut |i| read.extend(touched_bufs(f, i)));
    let mut ok = true;
    for &i in later {
        let mut check = |j: Inst| ok &= f.written_bufs(j).iter().all(|b| !read.contains(b));
        check(i);
        for c in f.child_blocks(i) {
            f.walk(c, &mut check);
        }
    }
    ok
}

fn float_const(f: &Function, v: Value) -> Option<f64> {
    match f.value(v).def {
        ValueDef::Result(i, 0) => match f.inst(i).kind {
            InstKind::FConst(x) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

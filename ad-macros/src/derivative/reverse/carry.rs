//! Shifted shadow updates of a reverse loop carried in registers.
//!
//! The reverse of `for i in a..b { … x[i] … x[i + 1] … }` adds into `dx[i]` and
//! `dx[i + 1]` in every iteration. Run backwards, iteration `i` updates `dx[i + 1]` right
//! after iteration `i + 1` updated it, and the two read-modify-writes of neighbouring
//! elements (which the compiler likes to pack into one vector access) stall on
//! store-to-load forwarding. Since `dx[i + k_max]` receives nothing after iteration `i`, the
//! contributions to the lower offsets wait in scalars and each element is written once:
//! `dx[i + k_max] += a_k_max + carry`, the carries shift down by one, and what is left after
//! the loop is flushed. Only the additions are regrouped.

use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The largest index offset carried.
const MAX_OFFSET: i128 = 2;

/// Rewrites every reverse loop of `f` whose only accesses to some buffer are top-level
/// `buf[i + k] += v` with at least two offsets `k`; and likewise every ascending loop
/// (a sum reversed as it runs, `super::fuse`), where iteration `i` adds into `dx[i]` and
/// `dx[i + 1]` and the next one adds into `dx[i + 1]` again: there `dx[i + k_min]` is
/// complete after iteration `i`, and the higher offsets wait in scalars.
///
/// Ascending loops are only the fused ones (`fused`), and only their additions into
/// `shadows` are regrouped: the primal's own additions keep their order.
pub fn carry_shifted_adds(f: &mut Function, fused: &HashSet<Inst>, shadows: &HashSet<Buf>) {
    let mut loops = Vec::new();
    f.walk(f.body, &mut |i| {
        if let InstKind::For {
            range,
            params,
            exit,
            ..
        } = &f.inst(i).kind
        {
            let reverse = range.rev && params.is_empty();
            // A fused parallel sum runs its iterations in any order: nothing waits for
            // the next one.
            let ascending = fused.contains(&i) && !f.parallel.contains_key(&i);
            if range.step.is_none() && exit.is_empty() && (reverse || ascending) {
                loops.push(i);
            }
        }
    });
    let mut parent = f.block_map();
    for l in loops {
        let descending = matches!(&f.inst(l).kind, InstKind::For { range, .. } if range.rev);
        for plan in plans(f, l, descending) {
            if !descending && !shadows.contains(&plan.buf) {
                continue;
            }
            apply(f, &mut parent, l, plan, !descending);
        }
    }
}

/// Moves the instructions of block `pre` before loop `l` and those of `post` after it, in
/// `l`'s block, and records where they and their blocks' contents now sit.
pub(super) fn surround(
    f: &mut Function,
    parent: &mut HashMap<Inst, Block>,
    l: Inst,
    pre: Block,
    post: Block,
) {
    let outer = parent[&l];
    let pre_insts = std::mem::take(&mut f.blocks[pre.index()].insts);
    let post_insts = std::mem::take(&mut f.blocks[post.index()].insts);
    let list = &mut f.blocks[outer.index()].insts;
    let at = list
        .iter()
        .position(|i| *i == l)
        .expect("loop in its block");
    list.splice(at + 1..at + 1, post_insts.iter().copied());
    list.splice(at..at, pre_insts.iter().copied());
    for i in pre_insts.into_iter().chain(post_insts) {
        parent.insert(i, outer);
        for c in f.child_blocks(i) {
            f.walk(c, &mut |j| {
                parent.insert(j, c);
            });
        }
    }
}

/// One buffer's shifted updates in one loop.
struct Plan {
    buf: Buf,
    /// `start` of the descending index `start + t`.
    start: Value,
    /// The updates by offset: (instruction, its index value, added value).
    by_offset: BTreeMap<i128, Vec<(Inst, Value, Value)>>,
}

/// The value of an integer constant.
pub fn int_const(f: &Function, v: Value) -> Option<i128> {
    match f.value(v).def {
        ValueDef::Result(i, 0) => match f.inst(i).kind {
            InstKind::IConst(c) => Some(c),
            _ => None,
        },
        _ => None,
    }
}

fn plans(f: &Function, l: Inst, descending: bool) -> Vec<Plan> {
    let InstKind::For {
        index, body, range, ..
    } = &f.inst(l).kind
    else {
        return vec![];
    };
    let (t, body) = (*index, *body);
    let in_body = |v: Value| matches!(f.value(v).def, ValueDef::Result(i, _) if f.block(body).insts.contains(&i));
    // The descending index: `start + t` with `start` from outside the loop; an ascending
    // loop's own index.
    let mut idx = None;
    if descending {
        for &i in &f.block(body).insts {
            if let InstKind::Binary(BinOp::Add, a, b) = f.inst(i).kind {
                let (s, o) = if b == t { (a, b) } else { (b, a) };
                if o == t && !in_body(s) && f.ty(s) == Ty::Int {
                    idx = Some((f.inst(i).results[0], s));
                    break;
                }
            }
        }
    } else {
        idx = Some((t, range.start));
    }
    let Some((idx, start)) = idx else {
        return vec![];
    };
    // The offset of an index value from `idx`.
    let offset = |v: Value| -> Option<i128> {
        if v == idx {
            return Some(0);
        }
        let ValueDef::Result(i, 0) = f.value(v).def else {
            return None;
        };
        match f.inst(i).kind {
            InstKind::Binary(BinOp::Add, a, b) if a == idx => int_const(f, b),
            InstKind::Binary(BinOp::Add, a, b) if b == idx => int_const(f, a),
            InstKind::Binary(BinOp::Sub, a, b) if a == idx => int_const(f, b).map(|k| -k),
            _ => None,
        }
    };
    let mut found: BTreeMap<Buf, Option<Plan>> = BTreeMap::new();
    // Top-level `buf[idx + k] += v` are candidates; any other access disqualifies the buffer.
    for &i in &f.block(body).insts {
        if let InstKind::StoreAdd(buf, ix, v) = &f.inst(i).kind {
            if let ([x], Some(k)) = (ix.as_slice(), ix.first().and_then(|x| offset(*x))) {
                if k.abs() <= MAX_OFFSET && f.buf(*buf).rank == 1 {
                    let entry = found.entry(*buf).or_insert_with(|| {
                        Some(Plan {
                            buf: *buf,
                            start,
                            by_offset: BTreeMap::new(),
                        })
                    });
                    if let Some(p) = entry {
                        p.by_offset.entry(k).or_default().push((i, *x, *v));
                    }
                    continue;
                }
            }
        }
        let mut disqualify = |j: Inst| {
            for b in touched_bufs(f, j) {
                found.insert(b, None);
            }
        };
        disqualify(i);
        for c in f.child_blocks(i) {
            f.walk(c, &mut disqualify);
        }
    }
    found
        .into_values()
        .flatten()
        .filter(|p| p.by_offset.len() >= 2)
        .collect()
}

/// Every buffer an instruction names.
pub fn touched_bufs(f: &Function, i: Inst) -> Vec<Buf> {
    use InstKind::*;
    match &f.inst(i).kind {
        Load(b, _) | Store(b, ..) | StoreAdd(b, ..) | Len(b, _) | ZeroBuf(b) | SumBuf(b) => {
            vec![*b]
        }
        TapeEnsure(b, _) | TapeEnsureRow(b, ..) => vec![*b],
        Alloc { buf, init, .. } => match init {
            AllocInit::Copy(s) => vec![*buf, *s],
            AllocInit::Row { tape, .. } => vec![*buf, *tape],
            AllocInit::Fill(_) => vec![*buf],
        },
        CopyFrom { dst, src } | AddBuf { dst, src } => vec![*dst, *src],
        Swap(a, b) => vec![*a, *b],
        SaveRow { tape, src, .. } | ReturnRow { tape, src, .. } => vec![*tape, *src],
        CkForwardStep { state, .. } | CkReverse { state, .. } => state
            .iter()
            .filter_map(|s| match s {
                CkItem::Buf(b) => Some(*b),
                _ => None,
            })
            .collect(),
        Call { args, suffix, .. } => {
            let mut out: Vec<Buf> = args
                .iter()
                .filter_map(|a| match a {
                    CallArg::Buf { buf, .. } => Some(*buf),
                    _ => None,
                })
                .collect();
            if let CallSuffix::Fwd { tangents: extra } | CallSuffix::Rev { shadows: extra, .. } =
                suffix
            {
                out.extend(extra.iter().flatten().filter_map(|a| match a {
                    CallArg::Buf { buf, .. } => Some(*buf),
                    _ => None,
                }));
            }
            out
        }
        _ => vec![],
    }
}

/// Rewrites `plan`'s updates in loop `l`. `carry[m]` holds what earlier iterations added
/// for `buf[idx + m]`, `idx` being the current iteration's index. Run downwards, iteration
/// `idx` completes `buf[idx + k_max]` and the carries cover `k_min + 1 ..= k_max`; run
/// upwards (a fused sum), it completes `buf[idx + k_min]` and they cover
/// `k_min ..= k_max − 1`. Each iteration writes the completed element once and shifts the
/// carries by one step; after the loop (if it ran) they go to their elements.
fn apply(f: &mut Function, parent: &mut HashMap<Inst, Block>, l: Inst, plan: Plan, up: bool) {
    let InstKind::For { body, range, .. } = f.inst(l).kind.clone() else {
        return;
    };
    let k_min = *plan.by_offset.keys().next().expect("two offsets");
    let k_max = *plan.by_offset.keys().last().expect("two offsets");
    // The offset each iteration completes, the carried ones, and the step to the next.
    let (done, carried, step) = if up {
        (k_min, k_min..=k_max - 1, 1)
    } else {
        (k_max, k_min + 1..=k_max, -1)
    };
    let pre = f.new_block();
    let carries: BTreeMap<i128, Cell> = {
        let mut b = Builder::new(f, pre);
        carried
            .map(|m| {
                let z = b.fconst(0.0);
                (m, b.cell(Ty::Float, "carry_shadow", z))
            })
            .collect()
    };
    // The updates leave their places; one write and the carry shift end the body.
    let removed: Vec<Inst> = plan
        .by_offset
        .values()
        .flatten()
        .map(|(i, _, _)| *i)
        .collect();
    f.blocks[body.index()]
        .insts
        .retain(|i| !removed.contains(i));
    let tail = f.new_block();
    {
        let mut b = Builder::new(f, tail);
        let total_at = |b: &mut Builder, k: i128| -> Option<Value> {
            let vs = plan.by_offset.get(&k)?;
            let mut acc = vs[0].2;
            for &(_, _, v) in &vs[1..] {
                acc = b.add(acc, v);
            }
            Some(acc)
        };
        let complete = total_at(&mut b, done).expect("the completed offset has updates");
        let old = b.get(carries[&done]);
        let write = b.add(complete, old);
        let at = plan.by_offset[&done][0].1;
        b.stmt(InstKind::StoreAdd(plan.buf, vec![at], write));
        // For the next iteration (index idx + step): carry[m] = a[m + step] + old
        // carry[m + step]; read every old carry before setting any.
        let olds: BTreeMap<i128, Value> = carries.iter().map(|(m, c)| (*m, b.get(*c))).collect();
        let mut order: Vec<i128> = carries.keys().copied().collect();
        if !up {
            order.reverse();
        }
        for m in order {
            let a = total_at(&mut b, m + step);
            let old = olds.get(&(m + step)).copied();
            let v = match (a, old) {
                (Some(a), Some(o)) => b.add(a, o),
                (Some(a), None) => a,
                (None, Some(o)) => o,
                (None, None) => b.fconst(0.0),
            };
            b.set(carries[&m], v);
        }
    }
    let tail_insts = std::mem::take(&mut f.blocks[tail.index()].insts);
    f.blocks[body.index()].insts.extend(tail_insts);
    // After the loop (if it ran), relative to the index after the last iteration: `end`
    // upwards; downwards `start + range.start − 1`, written as `last + (m − 1)`.
    let post = f.new_block();
    {
        let mut b = Builder::new(f, post);
        let ran = b.binary(BinOp::Gt, range.end, range.start);
        let then_blk = b.func.new_block();
        let else_blk = b.func.new_block();
        b.in_block(then_blk, |b| {
            let (base, shift) = if up {
                (range.end, 0)
            } else {
                (b.add(plan.start, range.start), -1)
            };
            for (m, c) in &carries {
                let v = b.get(*c);
                // Index arithmetic stays non-negative (indices are usually `usize`).
                let k = m + shift;
                let ix = if k < 0 {
                    let off = b.iconst(-k);
                    b.sub(base, off)
                } else {
                    let off = b.iconst(k);
                    b.add(base, off)
                };
                b.stmt(InstKind::StoreAdd(plan.buf, vec![ix], v));
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

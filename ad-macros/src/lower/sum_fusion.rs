//! A parallel sum over a buffer, moved into the parallel loop that just wrote it.
//!
//! ```text
//! out.par_chunks_mut(w).enumerate().for_each(|(i, row)| for j in 0..row.len() { row[j] = .. });
//! out.par_iter().map(|v| v * v).sum()
//! ```
//!
//! writes `out` in one pass and reads it back in another. Each element's term of the sum
//! only needs the element, and the element is final once its iteration `(i, j)` of the
//! first loop has run (only that iteration writes it). So the term is added at the end of
//! that iteration instead: the row loop carries the sum through its inner loop, and the
//! second pass goes. The derivatives follow: the forward sweep runs one pass, and the
//! reverse sweep gets the sum's adjoint in the same iteration as the element's.
//!
//! The pass applies to the loops the lowering makes of that form, in one block:
//! - the writer is a parallel loop over the rows of `X` (`par_chunks_mut(w)`: `0..⌈len/w⌉`),
//!   or over its elements (`par_iter_mut`: `0..len`), that carries nothing and writes `X`
//!   only by `X[i·w + j] = ..` in one inner `for j in 0..row.len()` (`X[i] = ..`); or,
//!   by rows, only by stores and compound assignments `X[i·w + e]` anywhere in the body
//!   (a row written in branches, or its ends apart from its interior: whole rows);
//! - the sum is the next parallel loop: `0..len X`, one float parameter `s` updated by the
//!   body's yield, a body of arithmetic and reads only, reading `X` only at its own index
//!   and no other buffer the writer writes;
//! - between the two stand only constants, scalar arithmetic and lengths, which move
//!   above the writer, the sum's trip count is unused, and nothing after the sum writes
//!   `X` (so the moved reads of `X` see final values, `Function::final_reads`).
//!
//! The terms are then added row by row, element by element within a row: the same order
//! as the separate sum's when run serially. For whole rows they are added by a loop
//! `for j in 0..row.len()` at the end of the row's iteration: row `i` is final then, since
//! only iteration `i` may write it (any other index panics in the loop's view of its own
//! rows, `ad_rayon::Rows`), and elements the row leaves alone keep the caller's values,
//! as the separate sum reads them.

use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::HashSet;

/// Fuses every such pair in the function's top block.
pub fn fuse_sums_into_writers(f: &mut Function) {
    let body = f.body;
    let mut k = 0;
    while k < f.block(body).insts.len() {
        if let Some(plan) = plan_at(f, body, k) {
            apply(f, body, plan);
        }
        k += 1;
    }
}

/// How the writer covers `X`.
#[derive(Clone, Copy)]
enum Cover {
    /// `X[base + j]` in the inner loop `inner` with `base = i·w`.
    Rows { inner: Inst, base: Value },
    /// Row `i` (`base = i·w`, `len` elements), written by stores at `base + e` anywhere
    /// in the body: in branches, in several loops (a row's interior and its ends written
    /// apart). The row's terms are then added by a loop of their own at the end of the
    /// iteration, when the whole row is final.
    WholeRows { base: Value, len: Value },
    /// `X[i]`.
    Elements,
}

struct Plan {
    writer: Inst,
    cover: Cover,
    sum: Inst,
    /// The instructions between the two loops, to move above the writer.
    between: Vec<Inst>,
}

fn kind(f: &Function, v: Value) -> Option<&InstKind> {
    match f.value(v).def {
        ValueDef::Result(i, 0) => Some(&f.inst(i).kind),
        _ => None,
    }
}

fn is_iconst(f: &Function, v: Value, c: i128) -> bool {
    matches!(kind(f, v), Some(InstKind::IConst(x)) if *x == c)
}

fn is_len(f: &Function, v: Value, x: Buf) -> bool {
    matches!(kind(f, v), Some(InstKind::Len(b, idx)) if *b == x && idx.is_empty())
}

/// `(index, end, body)` of a [`super::plain_for`] loop over `0..end`.
fn plain_for(f: &Function, l: Inst) -> Option<(Value, Value, Block)> {
    let (start, end, index, body) = super::plain_for(f, l)?;
    is_iconst(f, start, 0).then_some((index, end, body))
}

/// Whether `v` is `a op b` (in either order for `+` and `*`).
fn is_binary(f: &Function, v: Value, op: BinOp, a: Value, b: Value) -> bool {
    match kind(f, v) {
        Some(InstKind::Binary(o, x, y)) if *o == op => {
            (*x == a && *y == b) || (matches!(op, BinOp::Add | BinOp::Mul) && *x == b && *y == a)
        }
        _ => false,
    }
}

/// The plan for the writer at position `k` of `blk` and the sum after it, if they qualify.
fn plan_at(f: &Function, blk: Block, k: usize) -> Option<Plan> {
    let insts = &f.block(blk).insts;
    let writer = insts[k];
    if !f.parallel.contains_key(&writer) || f.checkpoints.contains_key(&writer) {
        return None;
    }
    let (wi, wend, wbody) = plain_for(f, writer)?;
    // The sum: the next loop, with only pure scalar instructions before it.
    let mut between = Vec::new();
    let mut sum = None;
    for &j in &insts[k + 1..] {
        match &f.inst(j).kind {
            kind if kind.is_arithmetic() || matches!(kind, InstKind::Len(..)) => between.push(j),
            InstKind::For { .. } => {
                sum = Some(j);
                break;
            }
            _ => return None,
        }
    }
    let sum = sum?;
    if !f.parallel.contains_key(&sum) || f.checkpoints.contains_key(&sum) {
        return None;
    }
    let InstKind::For {
        range,
        index: si,
        params,
        inits,
        body: sbody,
        exit,
    } = &f.inst(sum).kind
    else {
        return None;
    };
    if range.rev || range.step.is_some() || !exit.is_empty() || !is_iconst(f, range.start, 0) {
        return None;
    }
    let [s] = params[..] else {
        return None;
    };
    if f.ty(s) != Ty::Float || f.ty(inits[0]) != Ty::Float {
        return None;
    }
    // The summed buffer: the length the sum runs to.
    let Some(InstKind::Len(x, idx)) = kind(f, range.end) else {
        return None;
    };
    let x = *x;
    if !idx.is_empty() || f.buf(x).rank != 1 {
        return None;
    }
    // The writer covers X: by rows or by elements.
    // The writer writes X only by those stores (one loop over a row that stores elsewhere
    // than at its own element still writes the whole row); the sum reads no other buffer
    // it writes.
    let strays = |cover: Cover| {
        let mut stray = false;
        f.walk(wbody, &mut |j| {
            stray |= f.written_bufs(j).contains(&x) && !store_covers(f, j, x, cover, wi);
        });
        stray
    };
    let mut cover = cover(f, x, wi, wend, wbody)?;
    if let Cover::Rows { inner, base } = cover {
        if strays(cover) {
            let (_, len, _) = plain_for(f, inner)?;
            cover = Cover::WholeRows { base, len };
        }
    }
    if strays(cover) {
        return None;
    }
    let mut written = HashSet::new();
    f.walk(wbody, &mut |j| written.extend(f.written_bufs(j)));
    // The sum's body: arithmetic and reads, X only at its own index; `s` used once.
    let mut ok = true;
    let mut s_uses = 0;
    for &j in &f.block(*sbody).insts {
        s_uses += f.operands(j).iter().filter(|v| **v == s).count();
        ok &= match &f.inst(j).kind {
            kind if kind.is_arithmetic() => true,
            InstKind::Load(b, idx) if *b == x => idx.as_slice() == [*si],
            InstKind::Load(b, _) => !written.contains(b),
            _ => false,
        };
    }
    let ys = &f.block(*sbody).yields;
    if !ok || s_uses != 1 || ys.len() != 1 {
        return None;
    }
    match kind(f, ys[0]) {
        Some(InstKind::Binary(BinOp::Add, a, b)) if *a == s || *b == s => {}
        _ => return None,
    }
    // Nothing between reads what the writer computes, and the sum's trip count is unused.
    let writer_results: HashSet<Value> = f.inst(writer).results.iter().copied().collect();
    if between
        .iter()
        .any(|&j| f.operands(j).iter().any(|v| writer_results.contains(v)))
    {
        return None;
    }
    let trip = *f.inst(sum).results.last()?;
    if f.uses_in(f.body, trip) > 0 {
        return None;
    }
    // Nothing after the sum writes X: its reads in the writer see final values
    // (`Function::final_reads`).
    let sum_pos = insts.iter().position(|j| *j == sum)?;
    let mut rewritten = false;
    for &j in &insts[sum_pos + 1..] {
        rewritten |= f.written_bufs(j).contains(&x);
        for c in f.child_blocks(j) {
            f.walk(c, &mut |w| rewritten |= f.written_bufs(w).contains(&x));
        }
    }
    if rewritten {
        return None;
    }
    Some(Plan {
        writer,
        cover,
        sum,
        between,
    })
}

/// How the writer's iterations cover X, when they cover each element once.
fn cover(f: &Function, x: Buf, wi: Value, wend: Value, wbody: Block) -> Option<Cover> {
    // Elements: `0..len X`.
    if is_len(f, wend, x) {
        return Some(Cover::Elements);
    }
    // Rows: `0..(len + w − 1) / w`.
    let Some(InstKind::Binary(BinOp::Div, t, w)) = kind(f, wend) else {
        return None;
    };
    let (t, w) = (*t, *w);
    let Some(InstKind::Binary(BinOp::Sub, t2, one)) = kind(f, t) else {
        return None;
    };
    if !is_iconst(f, *one, 1) {
        return None;
    }
    let Some(InstKind::Binary(BinOp::Add, len, w2)) = kind(f, *t2) else {
        return None;
    };
    if *w2 != w || !is_len(f, *len, x) {
        return None;
    }
    let len = *len;
    // The body's top level: `base = i·w` and the row's length
    // `rl = if w <= len − base { w } else { len − base }`.
    let top = &f.block(wbody).insts;
    let (base, rl) = top.iter().find_map(|&j| row_len(f, j, len, w, wi))?;
    // One inner `for j in 0..rl` covers the row element by element; otherwise the whole
    // row is summed when its iteration ends.
    let inner: Vec<Inst> = top
        .iter()
        .copied()
        .filter(|&j| {
            matches!(
                f.inst(j).kind,
                InstKind::For { .. } | InstKind::While { .. }
            )
        })
        .collect();
    if let [inner] = inner[..] {
        if let Some((_, end, _)) = plain_for(f, inner) {
            if end == rl && !f.parallel.contains_key(&inner) {
                return Some(Cover::Rows { inner, base });
            }
        }
    }
    Some(Cover::WholeRows { base, len: rl })
}

/// `(base, rl)` when instruction `j` is `rl = if w <= len − base { w } else { len − base }`
/// with `base = i·w`: the length of row `i`.
fn row_len(f: &Function, j: Inst, len: Value, w: Value, wi: Value) -> Option<(Value, Value)> {
    let InstKind::If {
        cond,
        then_blk,
        else_blk,
    } = &f.inst(j).kind
    else {
        return None;
    };
    let [rl] = f.inst(j).results[..] else {
        return None;
    };
    let Some(InstKind::Binary(BinOp::Le, cw, rest)) = kind(f, *cond) else {
        return None;
    };
    if *cw != w || f.block(*then_blk).yields != [w] || f.block(*else_blk).yields != [*rest] {
        return None;
    }
    let Some(InstKind::Binary(BinOp::Sub, len2, base)) = kind(f, *rest) else {
        return None;
    };
    if *len2 != len || !is_binary(f, *base, BinOp::Mul, wi, w) {
        return None;
    }
    Some((*base, rl))
}

/// Whether write `j` of X is a store at the element the writer's iteration covers.
fn store_covers(f: &Function, j: Inst, x: Buf, cover: Cover, wi: Value) -> bool {
    let (InstKind::Store(b, idx, _) | InstKind::StoreAdd(b, idx, _)) = &f.inst(j).kind else {
        return false;
    };
    if *b != x || idx.len() != 1 {
        return false;
    }
    if matches!(f.inst(j).kind, InstKind::StoreAdd(..)) && !matches!(cover, Cover::WholeRows { .. })
    {
        return false;
    }
    match cover {
        // In the row, or out of it and a panic (the loop's view of its own rows,
        // `ad_rayon::Rows`): an element `base + e` for any `e`.
        Cover::WholeRows { base, .. } => {
            idx[0] == base
                || matches!(kind(f, idx[0]), Some(InstKind::Binary(BinOp::Add, a, c))
                    if *a == base || *c == base)
        }
        Cover::Elements => idx[0] == wi,
        Cover::Rows { inner, base } => {
            let InstKind::For { index, body, .. } = &f.inst(inner).kind else {
                return false;
            };
            let mut inside = false;
            f.walk(*body, &mut |k| inside |= k == j);
            inside && is_binary(f, idx[0], BinOp::Add, base, *index)
        }
    }
}

/// Appends to `at_blk` a copy of the sum's body `sbody` with its index and parameter
/// mapped by `map`; returns the copy of what it yields. Its reads of X are final reads.
fn copy_term(
    f: &mut Function,
    at_blk: Block,
    sbody: Block,
    x: Buf,
    map: [(Value, Value); 2],
) -> Value {
    let mut map: std::collections::HashMap<Value, Value> = map.into_iter().collect();
    for j in f.block(sbody).insts.clone() {
        let data = f.inst(j).clone();
        let m = |v: &Value| *map.get(v).unwrap_or(v);
        let kind = match &data.kind {
            InstKind::Unary(op, a) => InstKind::Unary(*op, m(a)),
            InstKind::Binary(op, a, b) => InstKind::Binary(*op, m(a), m(b)),
            InstKind::Math(n, args) => InstKind::Math(n, args.iter().map(m).collect()),
            InstKind::Cast {
                value,
                to,
                int,
                float,
            } => InstKind::Cast {
                value: m(value),
                to: *to,
                int: *int,
                float: *float,
            },
            InstKind::Load(b, idx) => InstKind::Load(*b, idx.iter().map(m).collect()),
            k => k.clone(),
        };
        let r = data.results[0];
        let load = matches!(kind, InstKind::Load(b, _) if b == x);
        let nv = push(f, at_blk, kind, f.ty(r), data.span);
        if load {
            // The element is final: only this iteration writes it, and it has.
            f.final_reads.insert(f.def_inst(nv));
        }
        f.values[nv.index()].name = f.value(r).name.clone();
        map.insert(r, nv);
    }
    map[&f.block(sbody).yields[0]]
}

/// Adds a float parameter to loop `l` starting at `init`: returns the parameter. The
/// loop's results get `result` (an existing value, redefined) before the trip count.
fn add_param(f: &mut Function, l: Inst, init: Value, result: Value, name: Option<String>) -> Value {
    let (InstKind::For { params, .. } | InstKind::While { params, .. }) = &f.inst(l).kind else {
        unreachable!("a loop")
    };
    let pos = params.len();
    let p = f.new_value(Ty::Float, ValueDef::LoopParam(l, pos as u32), name);
    let (InstKind::For { params, inits, .. } | InstKind::While { params, inits, .. }) =
        &mut f.insts[l.index()].kind
    else {
        unreachable!("a loop")
    };
    params.push(p);
    inits.push(init);
    let trip = f.insts[l.index()].results.pop().expect("a trip count");
    f.values[result.index()].def = ValueDef::Result(l, pos as u32);
    f.insts[l.index()].results.push(result);
    f.values[trip.index()].def = ValueDef::Result(l, pos as u32 + 1);
    f.insts[l.index()].results.push(trip);
    p
}

fn push(f: &mut Function, blk: Block, kind: InstKind, ty: Ty, span: proc_macro2::Span) -> Value {
    let i = Inst(f.insts.len() as u32);
    let v = f.new_value(ty, ValueDef::Result(i, 0), None);
    f.insts.push(InstData {
        kind,
        results: vec![v],
        span,
    });
    f.blocks[blk.index()].insts.push(i);
    v
}

fn apply(f: &mut Function, blk: Block, plan: Plan) {
    let Plan {
        writer,
        cover,
        sum,
        between,
    } = plan;
    let InstKind::For {
        index: si,
        params,
        inits,
        body: sbody,
        range,
        ..
    } = f.inst(sum).kind.clone()
    else {
        unreachable!("a loop")
    };
    let (s, s0, total) = (params[0], inits[0], f.inst(sum).results[0]);
    let InstKind::Len(x, _) = f.inst(f.def_inst(range.end)).kind else {
        unreachable!("the sum runs over a buffer")
    };
    let span = f.inst(sum).span;
    let name = f.value(s).name.clone();
    // The writer carries the sum; so does its inner loop, where the terms are added.
    let InstKind::For {
        index: wi,
        body: wbody,
        ..
    } = f.inst(writer).kind.clone()
    else {
        unreachable!("a loop")
    };
    let sw = add_param(f, writer, s0, total, name.clone());
    let copy = |f: &mut Function, at_blk: Block, element: Value, carried: Value| {
        copy_term(f, at_blk, sbody, x, [(si, element), (s, carried)])
    };
    match cover {
        Cover::Elements => {
            let y = copy(f, wbody, wi, sw);
            f.blocks[wbody.index()].yields.push(y);
        }
        Cover::Rows { inner, base } => {
            let InstKind::For {
                index: j,
                body: ibody,
                ..
            } = f.inst(inner).kind.clone()
            else {
                unreachable!("a loop")
            };
            // The inner loop's result, defined by `add_param`.
            let row_total = f.new_value(Ty::Float, ValueDef::LoopParam(writer, 0), name.clone());
            let si_inner = add_param(f, inner, sw, row_total, name.clone());
            f.blocks[wbody.index()].yields.push(row_total);
            let p = push(
                f,
                ibody,
                InstKind::Binary(BinOp::Add, base, j),
                Ty::Int,
                span,
            );
            let y = copy(f, ibody, p, si_inner);
            f.blocks[ibody.index()].yields.push(y);
        }
        Cover::WholeRows { base, len } => {
            // `for j in 0..rl { s = s + term(X[base + j]) }` at the end of the row.
            let mut b = Builder::new(f, wbody);
            b.span = span;
            let zero = b.iconst(0);
            let totals = b.for_range(zero, len, None, &[s], vec![sw], |b, j, ps| {
                let element = b.add(base, j);
                vec![copy(b.func, b.block, element, ps[0])]
            });
            // The row's total is the writer's new parameter's next value.
            f.blocks[wbody.index()].yields.push(totals[0]);
        }
    }
    // The instructions between move above the writer; the sum goes.
    let insts = &mut f.blocks[blk.index()].insts;
    insts.retain(|j| *j != sum && !between.contains(j));
    let at = insts.iter().position(|j| *j == writer).expect("the writer");
    for (n, j) in between.into_iter().enumerate() {
        insts.insert(at + n, j);
    }
    f.parallel.remove(&sum);
}

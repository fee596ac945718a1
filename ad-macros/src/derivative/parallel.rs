//! Summation-aware adjoints of parallel loops (ParDiff's transformation, on the output of
//! `reverse`): every `+=` into a buffer shared by the iterations is classified by its
//! index, at compile time, so that each parallel iteration writes only what it owns.
//!
//! - `buf[i] += v`, `i` the loop's index: owned, kept (a plain add, no synchronization).
//! - `buf[i + c] += v`, `c` a constant (a stencil's neighbours): the iteration adds into
//!   its own slot `i` of a zeroed buffer for that offset, and a second parallel loop over
//!   the elements of `buf` gathers `buf[t] += tmp[t − c]` for all offsets at once: each
//!   element has one owner, no atomics, no private copies, and the sum is the same on any
//!   number of threads.
//! - `buf[j] += v` at a computed `j` (`x[idx[i]]`, `means[c·d + j]` in an inner loop):
//!   a scatter target of the loop ([`Function::scatter`]); the emitted loop adds through
//!   a private copy per thread, or atomics when the targets are too large to privatize
//!   (`ad_rayon::for_each_owned_scatter`).
//!
//! The emitted loops (see `codegen`) then check ownership at run time: an access outside
//! the iteration's own element panics instead of racing.

use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::{BTreeMap, HashSet};

/// Where one shared `+=` of a parallel loop adds.
enum Site {
    /// `buf[index + offset]`.
    Shift { buf: Buf, offset: i128 },
    /// `buf[(index + offset)·width + rest]`: row `index + offset` of a flat 2-D buffer.
    RowShift {
        buf: Buf,
        offset: i128,
        width: Value,
        at: Value,
    },
    /// `buf[j]`, `j` computed.
    Computed { buf: Buf },
}

/// A rank-1 index as a function of the parallel index `i`: `i + shift`, or
/// `(i + shift)·width + rest` (a row of width `width`; `rest` anything).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Affine {
    pub width: Option<Value>,
    pub shift: i128,
}

/// The affine form of index `v` in the parallel index `i`, when it has one.
pub fn affine(f: &Function, v: Value, i: Value) -> Option<Affine> {
    if v == i {
        return Some(Affine {
            width: None,
            shift: 0,
        });
    }
    let ValueDef::Result(d, 0) = f.value(v).def else {
        return None;
    };
    let konst = |x: Value| match f.value(x).def {
        ValueDef::Result(j, 0) => match f.inst(j).kind {
            InstKind::IConst(c) => Some(c),
            _ => None,
        },
        _ => None,
    };
    // `a ± b` where `a` carries `i`: a constant moves an element index; anything is the
    // column part of a row index.
    // `k·w` (or `w·k`) for a constant `k`: whole rows of width `w`.
    let rows_of = |x: Value, w: Value| match f.value(x).def {
        ValueDef::Result(j, 0) => match f.inst(j).kind {
            InstKind::Binary(BinOp::Mul, a, b) if b == w => konst(a),
            InstKind::Binary(BinOp::Mul, a, b) if a == w => konst(b),
            _ => None,
        },
        _ => None,
    };
    let offset = |a: Value, b: Value, sign: i128| -> Option<Affine> {
        let form = affine(f, a, i)?;
        match (form.width, konst(b)) {
            (None, Some(c)) => Some(Affine {
                shift: form.shift + sign * c,
                ..form
            }),
            (None, None) => None,
            (Some(_), _) if depends(f, b, i) => None,
            (Some(w), _) => Some(Affine {
                shift: form.shift + sign * rows_of(b, w).unwrap_or(0),
                ..form
            }),
        }
    };
    match f.inst(d).kind {
        InstKind::Binary(BinOp::Add, a, b) if depends(f, a, i) && !depends(f, b, i) => {
            offset(a, b, 1)
        }
        InstKind::Binary(BinOp::Add, a, b) if depends(f, b, i) && !depends(f, a, i) => {
            offset(b, a, 1)
        }
        InstKind::Binary(BinOp::Sub, a, b) if depends(f, a, i) && !depends(f, b, i) => {
            offset(a, b, -1)
        }
        InstKind::Binary(BinOp::Mul, a, b) => {
            let (row, w) = if depends(f, a, i) { (a, b) } else { (b, a) };
            if depends(f, w, i) {
                return None;
            }
            let form = affine(f, row, i)?;
            form.width.is_none().then_some(Affine {
                width: Some(w),
                shift: form.shift,
            })
        }
        _ => None,
    }
}

/// Whether `v` is computed from `i` by arithmetic.
fn depends(f: &Function, v: Value, i: Value) -> bool {
    if v == i {
        return true;
    }
    let ValueDef::Result(d, 0) = f.value(v).def else {
        return false;
    };
    match &f.inst(d).kind {
        InstKind::Binary(_, a, b) => depends(f, *a, i) || depends(f, *b, i),
        InstKind::Unary(_, a) | InstKind::Cast { value: a, .. } => depends(f, *a, i),
        _ => false,
    }
}

/// How iteration `i` of parallel loop `l` owns each buffer its body writes (outside
/// buffers it allocates): element `i` (`None`), or row `i` of a width (`Some`). Every
/// write must be at the iteration's own element or row (after [`summation_aware`]).
pub fn ownership(f: &Function, l: Inst) -> Result<BTreeMap<Buf, Option<Value>>, String> {
    let InstKind::For { index, body, .. } = &f.inst(l).kind else {
        return Err("a parallel loop is a `for` loop".into());
    };
    let mut local = HashSet::new();
    f.walk(*body, &mut |j| {
        if let InstKind::Alloc { buf, .. } = f.inst(j).kind {
            local.insert(buf);
        }
    });
    let mut owned: BTreeMap<Buf, Option<Value>> = BTreeMap::new();
    let mut err = None;
    f.walk(*body, &mut |j| {
        if f.scatter.contains_key(&j) {
            return; // a scatter target, not owned
        }
        for b in f.written_bufs(j) {
            if local.contains(&b) {
                continue;
            }
            let width = match &f.inst(j).kind {
                InstKind::Store(_, idx, _) | InstKind::StoreAdd(_, idx, _) => {
                    if idx.len() == 1 {
                        match affine(f, idx[0], *index) {
                            Some(Affine { width, shift: 0 }) => width,
                            _ => {
                                err.get_or_insert(format!(
                                    "writes `{}` outside its own element",
                                    f.buf(b).name
                                ));
                                None
                            }
                        }
                    } else if idx[0] == *index {
                        None
                    } else {
                        err.get_or_insert(format!(
                            "writes a row of `{}` other than its own",
                            f.buf(b).name
                        ));
                        None
                    }
                }
                _ => None,
            };
            if let Some(&before) = owned.get(&b) {
                if before != width {
                    err.get_or_insert(format!(
                        "writes `{}` both as elements and as rows",
                        f.buf(b).name
                    ));
                }
            }
            owned.insert(b, width);
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(owned),
    }
}

/// Rewrites the shared additions of every parallel loop of `f` (see the module docs).
/// With `atomic`, the ablation baseline: every addition into a buffer the loop does not
/// also store into is a scatter site, added atomically.
pub fn summation_aware(f: &mut Function, atomic: bool) -> Result<(), String> {
    let mut loops: Vec<Inst> = f.parallel.keys().copied().collect();
    loops.sort();
    f.atomic_scatter = atomic;
    for l in loops {
        rewrite_loop(f, l, atomic)?;
    }
    Ok(())
}

fn rewrite_loop(f: &mut Function, l: Inst, atomic: bool) -> Result<(), String> {
    let InstKind::For {
        range, index, body, ..
    } = f.inst(l).kind.clone()
    else {
        return Err(format!("internal: parallel loop {l} is not a `for` loop"));
    };
    // Buffers allocated inside the body belong to one iteration.
    let mut local = HashSet::new();
    f.walk(body, &mut |i| {
        if let InstKind::Alloc { buf, .. } = f.inst(i).kind {
            local.insert(buf);
        }
    });
    let mut sites: Vec<(Inst, Site, Value)> = Vec::new();
    let mut err = None;
    let mut stored = HashSet::new();
    f.walk(body, &mut |i| {
        if let InstKind::Store(b, ..) = &f.inst(i).kind {
            stored.insert(*b);
        }
    });
    f.walk(body, &mut |i| {
        let (buf, idx, v, add) = match &f.inst(i).kind {
            InstKind::StoreAdd(b, idx, v) => (*b, idx.clone(), *v, true),
            InstKind::Store(b, idx, v) => (*b, idx.clone(), *v, false),
            _ => return,
        };
        if atomic && add && !local.contains(&buf) && !stored.contains(&buf) && idx.len() == 1 {
            sites.push((i, Site::Computed { buf }, v));
            return;
        }
        if local.contains(&buf) || idx.first() == Some(&index) {
            return;
        }
        let form = (idx.len() == 1).then(|| affine(f, idx[0], index)).flatten();
        if matches!(
            form,
            Some(Affine {
                width: Some(_),
                shift: 0
            })
        ) {
            return; // the iteration's own row
        }
        let name = f.buf(buf).name.clone();
        if idx.len() != 1 {
            err.get_or_insert(format!(
                "a parallel loop's adjoint adds into `{name}` at an element another iteration \
                 owns; 2-D buffers are supported only at the loop's own row"
            ));
            return;
        }
        if !add {
            err.get_or_insert(format!(
                "internal: a parallel loop stores into `{name}` outside its own element"
            ));
            return;
        }
        let site = match form {
            Some(Affine {
                width: None,
                shift: offset,
            }) => Site::Shift { buf, offset },
            Some(Affine {
                width: Some(width),
                shift: offset,
            }) => Site::RowShift {
                buf,
                offset,
                width,
                at: idx[0],
            },
            None => Site::Computed { buf },
        };
        sites.push((i, site, v));
    });
    if let Some(e) = err {
        return Err(e);
    }
    // Computed indices: scatter targets of the loop, numbered in order of appearance.
    let mut targets: Vec<Buf> = Vec::new();
    for (i, site, _) in &sites {
        if let Site::Computed { buf, .. } = site {
            let k = targets.iter().position(|t| t == buf).unwrap_or_else(|| {
                targets.push(*buf);
                targets.len() - 1
            });
            f.scatter.insert(*i, (l, k));
        }
    }
    sites.retain(|(_, site, _)| !matches!(site, Site::Computed { .. }));
    // A scatter target is not owned: its additions at the iteration's own element go
    // through the scatter too (one borrow of the buffer).
    let shifted: HashSet<Inst> = sites.iter().map(|(i, ..)| *i).collect();
    let mut own_adds = Vec::new();
    let mut stores = None;
    f.walk(body, &mut |i| match &f.inst(i).kind {
        InstKind::StoreAdd(b, ..) if !f.scatter.contains_key(&i) && !shifted.contains(&i) => {
            if let Some(k) = targets.iter().position(|t| t == b) {
                own_adds.push((i, k));
            }
        }
        InstKind::Store(b, ..) if targets.contains(b) => {
            stores.get_or_insert(f.buf(*b).name.clone());
        }
        _ => {}
    });
    if let Some(name) = stores {
        return Err(format!(
            "internal: a parallel loop both stores into `{name}` and adds into it at computed indices"
        ));
    }
    for (i, k) in own_adds {
        f.scatter.insert(i, (l, k));
    }
    if sites.is_empty() {
        return Ok(());
    }
    let parent = parent_block(f, l).expect("the loop is placed");
    let span = f.parallel[&l];
    let (start, end) = (range.start, range.end);

    // Shifted sites adding into the same place share their slots: the same buffer at the
    // same offset (and row width).
    let mut keys: Vec<(Buf, i128, Option<Value>)> = Vec::new();
    let mut slot_of = Vec::new();
    for (_, site, _) in &sites {
        let key = match site {
            Site::Shift { buf, offset } => (*buf, *offset, None),
            Site::RowShift {
                buf, offset, width, ..
            } => (*buf, *offset, Some(*width)),
            Site::Computed { .. } => unreachable!("scatter sites keep their addition"),
        };
        let k = keys.iter().position(|x| *x == key).unwrap_or_else(|| {
            keys.push(key);
            keys.len() - 1
        });
        slot_of.push(k);
    }
    let firsts: Vec<usize> = (0..keys.len())
        .map(|k| {
            slot_of
                .iter()
                .position(|s| *s == k)
                .expect("every key has a site")
        })
        .collect();

    // Before the loop: a zeroed slot per iteration (per element, for rows) for each place.
    let before = f.new_block();
    let mut slots = Vec::new();
    {
        let mut b = Builder::new(f, before);
        for &first in &firsts {
            let site = &sites[first].1;
            let (Site::Shift { buf, .. } | Site::RowShift { buf, .. }) = *site else {
                unreachable!("scatter sites keep their addition")
            };
            let elem = b.func.buf(buf).elem;
            let name = b.func.buf(buf).name.clone();
            let val = b.func.new_buf(BufData {
                name: format!("par_{name}"),
                rank: 1,
                elem,
                kind: BufKind::Scratch,
            });
            let zero = b.zero(elem);
            // One slot per iteration, or for rows a buffer shaped like the target.
            let len = match site {
                Site::RowShift { .. } => b.value(InstKind::Len(buf, vec![]), Ty::Int),
                _ => end,
            };
            b.stmt(InstKind::Alloc {
                buf: val,
                dims: vec![len],
                init: AllocInit::Fill(zero),
            });
            slots.push(val);
        }
    }
    // In the loop: each site adds into the iteration's slot.
    for ((i, site, v), &k) in sites.iter().zip(&slot_of) {
        let val = &slots[k];
        f.insts[i.index()].kind = InstKind::StoreAdd(*val, vec![index], *v);
        if let Site::RowShift {
            offset,
            width,
            at: j,
            ..
        } = site
        {
            // Row `index + offset` of the target is row `index` of the slots.
            let blk = parent_block(f, *i).expect("placed");
            let pre = f.new_block();
            let mut b = Builder::new(f, pre);
            let c = b.iconst(offset.abs());
            let cw = b.mul(c, *width);
            let own = if *offset > 0 {
                b.sub(*j, cw)
            } else {
                b.add(*j, cw)
            };
            splice(f, blk, *i, pre, false);
            f.insts[i.index()].kind = InstKind::StoreAdd(*val, vec![own], *v);
        }
    }
    // After the loop: the gathers (one parallel loop per buffer).
    let after = f.new_block();
    {
        let mut b = Builder::new(f, after);
        let mut gathers: BTreeMap<Buf, Vec<(i128, Buf)>> = BTreeMap::new();
        let mut row_gathers: BTreeMap<(Buf, Value), Vec<(i128, Buf)>> = BTreeMap::new();
        for (&first, val) in firsts.iter().zip(&slots) {
            match &sites[first].1 {
                Site::Shift { buf, offset } => {
                    gathers.entry(*buf).or_default().push((*offset, *val))
                }
                Site::RowShift {
                    buf, offset, width, ..
                } => row_gathers
                    .entry((*buf, *width))
                    .or_default()
                    .push((*offset, *val)),
                Site::Computed { .. } => unreachable!("scatter sites keep their addition"),
            }
        }
        for (buf, shifts) in gathers {
            let g = gather(&mut b, buf, &shifts, start, end);
            b.func.parallel.insert(g, span);
        }
        for ((buf, width), shifts) in row_gathers {
            let g = gather_rows(&mut b, buf, width, &shifts, start, end);
            b.func.parallel.insert(g, span);
        }
    }
    splice(f, parent, l, before, false);
    splice(f, parent, l, after, true);
    Ok(())
}

/// In parallel over the targets `t` of `buf` that some offset reaches (the union of the
/// ranges below): for each offset `c` in order whose source iteration `t − c` lies in
/// `start..end`, `buf[t] += slot[t − c]`. One pass over `buf` for all offsets (a stencil's
/// `i − 1` and `i + 1` together); the per-element order of the additions is the offsets'
/// order. Returns the loop.
fn gather(b: &mut Builder, buf: Buf, shifts: &[(i128, Buf)], start: Value, end: Value) -> Inst {
    let len = b.value(InstKind::Len(buf, vec![]), Ty::Int);
    // Offset `c` reaches [start + c, min(end + c, len)), or for a negative offset
    // [start − |c|, min(end − |c|, len)) with both ends kept at 0 or above.
    let mut union: Option<(Value, Value)> = None;
    for &(offset, _) in shifts {
        let c = b.iconst(offset.abs());
        let (lo, hi) = if offset >= 0 {
            let hi = b.add(end, c);
            (b.add(start, c), min_of(b, hi, len))
        } else {
            let lo = sub_or_zero(b, start, c);
            let hi = sub_or_zero(b, end, c);
            (lo, min_of(b, hi, len))
        };
        union = Some(match union {
            None => (lo, hi),
            Some((l, h)) => (min_of(b, l, lo), max_of(b, h, hi)),
        });
    }
    let (lo, hi) = union.expect("a gather has at least one offset");
    let ni = b.reserve();
    let t = b
        .func
        .new_value(Ty::Int, ValueDef::LoopIndex(ni), Some("t".into()));
    let body = b.func.new_block();
    b.in_block(body, |b| {
        for &(offset, slot) in shifts {
            let (k, ok) = source(b, t, offset, start, end);
            add_if(b, ok, buf, t, slot, k);
        }
    });
    b.set_yields(body, vec![]);
    let trip = b.func.new_value(Ty::Int, ValueDef::Result(ni, 0), None);
    b.finish(
        ni,
        InstKind::For {
            range: RangeSpec {
                start: lo,
                end: hi,
                step: None,
                rev: false,
            },
            index: t,
            params: vec![],
            inits: vec![],
            body,
            exit: vec![],
        },
        vec![trip],
    );
    ni
}

/// `a − b` when `a ≥ b`, else 0 (folded when both are constants, so no `0 − 1` is
/// ever written out).
fn sub_or_zero(b: &mut Builder, x: Value, y: Value) -> Value {
    let konst = |b: &Builder, v: Value| match b.func.value(v).def {
        ValueDef::Result(i, 0) => match b.func.inst(i).kind {
            InstKind::IConst(c) => Some(c),
            _ => None,
        },
        _ => None,
    };
    if let (Some(p), Some(q)) = (konst(b, x), konst(b, y)) {
        return b.iconst((p - q).max(0));
    }
    let ok = b.binary(BinOp::Ge, x, y);
    guarded(b, ok, |b| b.sub(x, y))
}

/// The smaller of two integers.
fn min_of(b: &mut Builder, x: Value, y: Value) -> Value {
    let le = b.binary(BinOp::Le, x, y);
    pick(b, le, x, y)
}

/// The larger of two integers.
fn max_of(b: &mut Builder, x: Value, y: Value) -> Value {
    let ge = b.binary(BinOp::Ge, x, y);
    pick(b, ge, x, y)
}

/// `if cond { x } else { y }` for integers.
fn pick(b: &mut Builder, cond: Value, x: Value, y: Value) -> Value {
    let then = b.func.new_block();
    let els = b.func.new_block();
    b.set_yields(then, vec![x]);
    b.set_yields(els, vec![y]);
    let i = b.push(
        InstKind::If {
            cond,
            then_blk: then,
            else_blk: els,
        },
        &[Ty::Int],
        None,
    );
    b.func.inst(i).results[0]
}

/// In parallel over the rows `t` of `buf` (width `width`): for each offset whose source
/// row `t − offset` lies in `start..end`, `buf[t·w + c] += slot[(t − offset)·w + c]`
/// over the row's columns `c`.
fn gather_rows(
    b: &mut Builder,
    buf: Buf,
    width: Value,
    shifts: &[(i128, Buf)],
    start: Value,
    end: Value,
) -> Inst {
    let len = b.value(InstKind::Len(buf, vec![]), Ty::Int);
    let one = b.iconst(1);
    let rows = b.add(len, width);
    let rows = b.sub(rows, one);
    let rows = b.div(rows, width);
    let zero = b.iconst(0);
    let ni = b.reserve();
    let t = b
        .func
        .new_value(Ty::Int, ValueDef::LoopIndex(ni), Some("row".into()));
    let body = b.func.new_block();
    b.in_block(body, |b| {
        let base = b.mul(t, width);
        for &(offset, slot) in shifts {
            let (src, ok) = source(b, t, offset, start, end);
            let then = b.func.new_block();
            let els = b.func.new_block();
            b.in_block(then, |b| {
                let from = b.mul(src, width);
                let z = b.iconst(0);
                let ci = b.reserve();
                let c = b
                    .func
                    .new_value(Ty::Int, ValueDef::LoopIndex(ci), Some("col".into()));
                let cb = b.func.new_block();
                b.in_block(cb, |b| {
                    // Both rows may be the short last one.
                    let to = b.add(base, c);
                    let at = b.add(from, c);
                    let to_in = b.binary(BinOp::Lt, to, len);
                    let at_in = b.binary(BinOp::Lt, at, len);
                    let inside = b.binary(BinOp::And, to_in, at_in);
                    add_if(b, inside, buf, to, slot, at);
                });
                b.set_yields(cb, vec![]);
                let trip = b.func.new_value(Ty::Int, ValueDef::Result(ci, 0), None);
                b.finish(
                    ci,
                    InstKind::For {
                        range: RangeSpec {
                            start: z,
                            end: width,
                            step: None,
                            rev: false,
                        },
                        index: c,
                        params: vec![],
                        inits: vec![],
                        body: cb,
                        exit: vec![],
                    },
                    vec![trip],
                );
            });
            b.push(
                InstKind::If {
                    cond: ok,
                    then_blk: then,
                    else_blk: els,
                },
                &[],
                None,
            );
        }
    });
    b.set_yields(body, vec![]);
    let trip = b.func.new_value(Ty::Int, ValueDef::Result(ni, 0), None);
    b.finish(
        ni,
        InstKind::For {
            range: RangeSpec {
                start: zero,
                end: rows,
                step: None,
                rev: false,
            },
            index: t,
            params: vec![],
            inits: vec![],
            body,
            exit: vec![],
        },
        vec![trip],
    );
    ni
}

/// `if cond { buf[to] += slot[at] }`.
fn add_if(b: &mut Builder, cond: Value, buf: Buf, to: Value, slot: Buf, at: Value) {
    let add = b.func.new_block();
    let skip = b.func.new_block();
    b.in_block(add, |b| {
        let v = b.load(slot, vec![at]);
        b.stmt(InstKind::StoreAdd(buf, vec![to], v));
    });
    b.push(
        InstKind::If {
            cond,
            then_blk: add,
            else_blk: skip,
        },
        &[],
        None,
    );
}

/// The source iteration `t − offset` of target `t`, and whether it lies in
/// `start..end` (computed without going below zero; 0 where it does not).
fn source(b: &mut Builder, t: Value, offset: i128, start: Value, end: Value) -> (Value, Value) {
    if offset >= 0 {
        let c = b.iconst(offset);
        let lo = b.add(start, c);
        let hi = b.add(end, c);
        let above = b.binary(BinOp::Ge, t, lo);
        let below = b.binary(BinOp::Lt, t, hi);
        let ok = b.binary(BinOp::And, above, below);
        let k = guarded(b, ok, |b| b.sub(t, c));
        (k, ok)
    } else {
        let c = b.iconst(-offset);
        let k = b.add(t, c);
        let above = b.binary(BinOp::Ge, k, start);
        let below = b.binary(BinOp::Lt, k, end);
        (k, b.binary(BinOp::And, above, below))
    }
}

/// `if ok { make() } else { 0 }`: an integer computed only where it is valid.
fn guarded(b: &mut Builder, ok: Value, make: impl FnOnce(&mut Builder) -> Value) -> Value {
    let then = b.func.new_block();
    let els = b.func.new_block();
    let v = b.in_block(then, make);
    let z = b.in_block(els, |b| b.iconst(0));
    b.set_yields(then, vec![v]);
    b.set_yields(els, vec![z]);
    let i = b.push(
        InstKind::If {
            cond: ok,
            then_blk: then,
            else_blk: els,
        },
        &[Ty::Int],
        None,
    );
    b.func.inst(i).results[0]
}

/// The block holding instruction `i`.
fn parent_block(f: &Function, i: Inst) -> Option<Block> {
    let mut found = None;
    fn go(f: &Function, b: Block, i: Inst, found: &mut Option<Block>) {
        for &j in &f.block(b).insts {
            if j == i {
                *found = Some(b);
                return;
            }
            for c in f.child_blocks(j) {
                go(f, c, i, found);
            }
        }
    }
    go(f, f.body, i, &mut found);
    found
}

/// Moves the instructions of scratch block `from` into `blk`, before (or `after`) `at`.
fn splice(f: &mut Function, blk: Block, at: Inst, from: Block, after: bool) {
    let moved = std::mem::take(&mut f.blocks[from.index()].insts);
    let insts = &mut f.blocks[blk.index()].insts;
    let pos = insts.iter().position(|x| *x == at).expect("placed") + usize::from(after);
    insts.splice(pos..pos, moved);
}

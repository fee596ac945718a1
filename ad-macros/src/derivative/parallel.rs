//! Summation-aware adjoints of parallel loops (ParDiff's transformation, on the output of
//! `reverse`): every `+=` into a buffer shared by the iterations is classified by its
//! index, at compile time, so that each parallel iteration writes only what it owns.
//!
//! - `buf[i] += v`, `i` the loop's index: owned, kept (a plain add, no synchronization).
//! - `buf[i + c] += v` or `buf[(i + c)·w + j] += v`, `c` a constant (a stencil's
//!   neighbours): kept as it is, and `buf` becomes a halo of the loop
//!   ([`Function::halo`], reach `max |c|`): each block of iterations adds into its own
//!   rows in place and into the few rows past its ends through a private halo, added
//!   back in block order after the loop (`ad_rayon::Halo`). No atomics, no buffer as
//!   large as the target, and the sums are the same on any number of threads.
//! - `buf[j] += v` at a computed `j` (`x[idx[i]]`, `means[c·d + j]` in an inner loop):
//!   a scatter target of the loop ([`Function::scatter`]); the emitted loop adds through
//!   a private copy per thread, or atomics when the targets are too large to privatize
//!   (`ad_rayon::for_each_owned_scatter`).
//!
//! The emitted loops (see `codegen`) then check ownership at run time: an access outside
//! the iteration's own element panics instead of racing.

use crate::ir::*;
use std::collections::{BTreeMap, HashSet};

/// Where one shared `+=` of a parallel loop adds.
enum Site {
    /// `buf[index + offset]` (`width` `None`), or `buf[(index + offset)·width + rest]`:
    /// row `index + offset` of a flat 2-D buffer.
    Shift {
        buf: Buf,
        offset: i128,
        width: Option<Value>,
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

/// How iteration `i` of a parallel loop owns one buffer its body writes.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Own {
    /// Element `i` (`None`), or row `i` of a width (`Some`).
    Rows(Option<Value>),
    /// Element (or, rank 2, row) `from + i`: a tape slot of a parallel loop that another
    /// loop encloses, `from` the slot of the entry's iteration 0.
    Shifted(Value),
}

/// `from + i` (the iteration's slot, see `reverse::sweep`): the `from`, defined outside
/// the loop of index `i`, whose instructions are `inside`.
fn shifted_slot(f: &Function, inside: &HashSet<Inst>, v: Value, i: Value) -> Option<Value> {
    let def = |x: Value| match f.value(x).def {
        ValueDef::Result(d, 0) => Some(&f.inst(d).kind),
        _ => None,
    };
    let is_index = |x: Value| {
        x == i || matches!(def(x), Some(InstKind::Binary(BinOp::IntLike, a, _)) if *a == i)
    };
    let outside = |x: Value| match f.value(x).def {
        ValueDef::Result(d, _) | ValueDef::LoopIndex(d) | ValueDef::LoopParam(d, _) => {
            !inside.contains(&d)
        }
    };
    match def(v)? {
        InstKind::Binary(BinOp::Add, a, b) if is_index(*b) && outside(*a) => Some(*a),
        _ => None,
    }
}

/// How iteration `i` of parallel loop `l` owns each buffer its body writes (outside
/// buffers it allocates). Every write must be at the iteration's own element or row, or
/// (a halo of the loop, after [`summation_aware`]) an addition within its reach.
pub fn ownership(f: &Function, l: Inst) -> Result<BTreeMap<Buf, Own>, String> {
    let InstKind::For { index, body, .. } = &f.inst(l).kind else {
        return Err("a parallel loop is a `for` loop".into());
    };
    let halo = f.halo.get(&l);
    let mut local = HashSet::new();
    let mut inside = HashSet::from([l]);
    f.walk(*body, &mut |j| {
        inside.insert(j);
        if let InstKind::Alloc { buf, .. } = f.inst(j).kind {
            local.insert(buf);
        }
    });
    let mut owned: BTreeMap<Buf, Own> = BTreeMap::new();
    let mut err = None;
    f.walk(*body, &mut |j| {
        if f.scatter.contains_key(&j) {
            return; // a scatter target, not owned
        }
        for b in f.written_bufs(j) {
            if local.contains(&b) {
                continue;
            }
            let tape = f.buf(b).kind == BufKind::Tape;
            let row = match &f.inst(j).kind {
                InstKind::Store(_, idx, _) | InstKind::StoreAdd(_, idx, _) => idx.first(),
                InstKind::TapeEnsureRow(_, row, _) => Some(row),
                _ => None,
            };
            let width = match &f.inst(j).kind {
                _ if tape && row.is_some_and(|r| r != index) => {
                    match shifted_slot(f, &inside, *row.expect("a row"), *index) {
                        Some(from) => Own::Shifted(from),
                        None => {
                            err.get_or_insert(format!(
                                "writes `{}` outside its own slot",
                                f.buf(b).name
                            ));
                            Own::Rows(None)
                        }
                    }
                }
                InstKind::Store(_, idx, _) | InstKind::StoreAdd(_, idx, _) => {
                    Own::Rows(if idx.len() == 1 {
                        let reaches = |form: &Affine| {
                            let spec = halo.and_then(|h| h.get(&b));
                            spec.is_some_and(|s| {
                                s.width == form.width && form.shift.unsigned_abs() as u64 <= s.reach
                            })
                        };
                        match affine(f, idx[0], *index) {
                            Some(Affine { width, shift: 0 }) => width,
                            Some(form) if reaches(&form) && adds(f, j) => form.width,
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
                    })
                }
                _ => Own::Rows(None),
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

/// Whether instruction `j` is an addition into a buffer.
fn adds(f: &Function, j: Inst) -> bool {
    matches!(f.inst(j).kind, InstKind::StoreAdd(..))
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
    let InstKind::For { index, body, .. } = f.inst(l).kind.clone() else {
        return Err(format!("internal: parallel loop {l} is not a `for` loop"));
    };
    // Buffers allocated inside the body belong to one iteration.
    let mut local = HashSet::new();
    let mut inside = HashSet::from([l]);
    f.walk(body, &mut |i| {
        inside.insert(i);
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
        // A save into the iteration's slot of a tape that an enclosing loop fills.
        let tape = f.buf(buf).kind == BufKind::Tape;
        if tape && !add && shifted_slot(f, &inside, idx[0], index).is_some() {
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
            Some(Affine { width, shift }) => Site::Shift {
                buf,
                offset: shift,
                width,
            },
            None => Site::Computed { buf },
        };
        sites.push((i, site, v));
    });
    if let Some(e) = err {
        return Err(e);
    }
    // A buffer adds at constant shifts in one row width (the first site's); a site at
    // another width, or into a buffer that is also a scatter target, scatters.
    let mut widths: BTreeMap<Buf, Option<Value>> = BTreeMap::new();
    for (_, site, _) in &sites {
        if let Site::Shift { buf, width, .. } = site {
            widths.entry(*buf).or_insert(*width);
        }
    }
    for (_, site, _) in sites.iter_mut() {
        if let Site::Shift { buf, width, .. } = *site {
            if widths[&buf] != width {
                *site = Site::Computed { buf };
            }
        }
    }
    loop {
        let computed: HashSet<Buf> = sites
            .iter()
            .filter_map(|(_, s, _)| match s {
                Site::Computed { buf } => Some(*buf),
                _ => None,
            })
            .collect();
        let mut changed = false;
        for (_, site, _) in sites.iter_mut() {
            if let Site::Shift { buf, .. } = *site {
                if computed.contains(&buf) {
                    *site = Site::Computed { buf };
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
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
    // Constant shifts: the buffer is a halo of the loop, reaching the largest shift.
    let mut halos: BTreeMap<Buf, HaloSpec> = BTreeMap::new();
    for (_, site, _) in &sites {
        if let Site::Shift { buf, offset, width } = *site {
            let reach = offset.unsigned_abs() as u64;
            let spec = halos.entry(buf).or_insert(HaloSpec { width, reach });
            spec.reach = spec.reach.max(reach);
        }
    }
    if !halos.is_empty() {
        f.halo.insert(l, halos);
    }
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
    Ok(())
}

//! Summation-aware adjoints of parallel loops (ParDiff's transformation, on the output of
//! `reverse`): every `+=` into a buffer shared by the iterations is classified by its
//! index, at compile time, so that each parallel iteration writes only what it owns.
//!
//! - `buf[i] += v`, `i` the loop's index: owned, kept (a plain add, no synchronization).
//! - `buf[i + c] += v` or `buf[(i + c)·w + j + d] += v`, `c` and `d` constants and `j`
//!   shown to lie in `[0, w)` (a loop over `0..w` or a chunk's `row.len()`, `x % w`; see
//!   [`Affine::slack`]), the stencil's neighbours: kept as it is, and `buf` becomes a halo
//!   of the loop ([`Function::halo`], reach `max |c| + |d|`, since `j + d` may reach `|d|`
//!   rows further): each block of iterations adds into its own
//!   rows in place and into the few rows past its ends through a private halo, added
//!   back in block order after the loop (`ad_rayon::Halo`). No atomics, no buffer as
//!   large as the target, and the sums are the same on any number of threads.
//! - `buf[j] += v` at a computed `j` (`x[idx[i]]`, `means[c·d + j]` in an inner loop, a
//!   row's column not shown to stay near the row):
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
        /// Rows the column may add to the offset either way (see [`Affine::slack`]).
        slack: u64,
        width: Option<Value>,
    },
    /// `buf[j]`, `j` computed.
    Computed { buf: Buf },
}

/// A rank-1 index as a function of the parallel index `i`: `i + shift`, or
/// `(i + shift)·width + column` (row `i + shift` of a flat 2-D buffer).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Affine {
    pub width: Option<Value>,
    pub shift: i128,
    /// How many rows the column may move the element off row `i + shift`: 0 for a column
    /// in `[0, width)` (`0`, a constant below a constant width, the index of a loop over
    /// `0..width` or `0..min(width, …)`, a chunk's `row.len()`); `|c|` for such a loop
    /// index plus a constant `c` (`u[i·w + j + 1]` reaches the next row at the row's end,
    /// and with `w = 1` the `c`-th); `None` when the column is anything else, so that only
    /// the row of a store, which Rust's borrows keep in the iteration's own row, is taken
    /// on trust.
    pub slack: Option<u64>,
}

/// An index as a sum of signed terms, with the parallel index's part gathered.
#[derive(Default, Debug)]
struct Linear {
    /// The coefficient of `i` alone.
    index: i128,
    /// The width `w` of `(i + c)·w` terms, and the sum of their `c`s.
    width: Option<Value>,
    rows: i128,
    constant: i128,
    /// Terms that do not depend on `i`, each with its sign.
    other: Vec<(Value, i128)>,
}

impl Linear {
    fn plus(mut self, o: Linear, sign: i128) -> Option<Linear> {
        self.index += sign * o.index;
        self.width = match (self.width, o.width) {
            (Some(a), Some(b)) if a != b => return None,
            (a, b) => a.or(b),
        };
        self.rows += sign * o.rows;
        self.constant += sign * o.constant;
        self.other
            .extend(o.other.into_iter().map(|(v, s)| (v, s * sign)));
        Some(self)
    }
}

/// The integer constant `v` is, if it is one.
fn int_constant(f: &Function, v: Value) -> Option<i128> {
    match f.value(v).def {
        ValueDef::Result(j, 0) => match f.inst(j).kind {
            InstKind::IConst(c) => Some(c),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `a` and `b` hold the same integer: one value, equal constants, or two reads of
/// one parameter (each read of a parameter is a value of its own).
fn same_int(f: &Function, a: Value, b: Value) -> bool {
    if a == b {
        return true;
    }
    let kind = |v: Value| match f.value(v).def {
        ValueDef::Result(d, 0) => Some(&f.inst(d).kind),
        _ => None,
    };
    match (kind(a), kind(b)) {
        (Some(InstKind::IConst(x)), Some(InstKind::IConst(y))) => x == y,
        (Some(InstKind::Param(x)), Some(InstKind::Param(y))) => x == y,
        _ => false,
    }
}

/// `v` as a [`Linear`] sum in `i`; `None` where `i` enters other than by `+`, `−` and a
/// row width.
fn linear(f: &Function, v: Value, i: Value, depth: u32) -> Option<Linear> {
    if v == i {
        return Some(Linear {
            index: 1,
            ..Linear::default()
        });
    }
    if let Some(c) = int_constant(f, v) {
        return Some(Linear {
            constant: c,
            ..Linear::default()
        });
    }
    let leaf = || Linear {
        other: vec![(v, 1)],
        ..Linear::default()
    };
    // A strip's index (`base + k`, see `reverse::strip`) is one term with a bound.
    if f.index_below.contains_key(&v) && !depends(f, v, i) {
        return Some(leaf());
    }
    if depth > 16 {
        return (!depends(f, v, i)).then(leaf);
    }
    let ValueDef::Result(d, 0) = f.value(v).def else {
        return (!depends(f, v, i)).then(leaf);
    };
    match f.inst(d).kind {
        InstKind::Binary(BinOp::Add, a, b) => {
            linear(f, a, i, depth + 1)?.plus(linear(f, b, i, depth + 1)?, 1)
        }
        InstKind::Binary(BinOp::Sub, a, b) => {
            linear(f, a, i, depth + 1)?.plus(linear(f, b, i, depth + 1)?, -1)
        }
        InstKind::Binary(BinOp::Mul, a, b) if depends(f, a, i) || depends(f, b, i) => {
            // `(i + c)·w`: row `i + c` of width `w`.
            let (row, w) = if depends(f, a, i) { (a, b) } else { (b, a) };
            if depends(f, w, i) {
                return None;
            }
            let r = linear(f, row, i, depth + 1)?;
            (r.index == 1 && r.width.is_none() && r.other.is_empty()).then_some(Linear {
                width: Some(w),
                rows: r.constant,
                ..Linear::default()
            })
        }
        _ => (!depends(f, v, i)).then(leaf),
    }
}

/// Whether index `j` lies in `[0, w)`: it is known to ([`Function::index_below`]), or it
/// is the index of a loop over `0..w`, `0..w − k` or `0..min(w, …)`.
fn index_below(f: &Function, j: Value, w: Value) -> bool {
    if f.index_below
        .get(&j)
        .is_some_and(|b| same_int(f, *b, w) || below(f, *b, w))
    {
        return true;
    }
    match f.value(j).def {
        ValueDef::LoopIndex(l) => {
            loop_bound(f, l).is_some_and(|b| same_int(f, b, w) || below(f, b, w))
        }
        _ => false,
    }
}

/// A bound `b` with loop `l`'s index in `[0, b)`: the end of a plain range from a constant
/// `≥ 0`, or `w` where that end is `min(w, …)` (a chunk's `row.len()`).
pub fn loop_bound(f: &Function, l: Inst) -> Option<Value> {
    let InstKind::For { range, index, .. } = &f.inst(l).kind else {
        return None;
    };
    if let Some(b) = f.index_below.get(index) {
        return Some(*b);
    }
    if range.step.is_some() || int_constant(f, range.start).is_none_or(|s| s < 0) {
        return None;
    }
    let end = range.end;
    let ValueDef::Result(k, m) = f.value(end).def else {
        return Some(end);
    };
    // `if w <= x { w } else { x }` (or `x >= w`), as a chunk's `row.len()` lowers.
    if let InstKind::If {
        cond,
        then_blk,
        else_blk,
    } = &f.inst(k).kind
    {
        let (then_y, else_y) = (
            f.block(*then_blk).yields[m as usize],
            f.block(*else_blk).yields[m as usize],
        );
        if let ValueDef::Result(c, 0) = f.value(*cond).def {
            if let InstKind::Binary(BinOp::Le | BinOp::Lt, a, x)
            | InstKind::Binary(BinOp::Ge | BinOp::Gt, x, a) = f.inst(c).kind
            {
                if same_int(f, a, then_y) && else_y == x {
                    return Some(then_y);
                }
            }
        }
    }
    Some(end)
}

/// Whether `b ≤ w`: `b` is `w − k` for a constant `k ≥ 0`.
fn below(f: &Function, b: Value, w: Value) -> bool {
    let ValueDef::Result(k, 0) = f.value(b).def else {
        return false;
    };
    matches!(f.inst(k).kind, InstKind::Binary(BinOp::Sub, a, c)
        if same_int(f, a, w) && int_constant(f, c).is_some_and(|c| c >= 0))
}

/// Whether `j` is `x % w` (of unsigned integers: in `[0, w)`).
fn remainder_of(f: &Function, j: Value, w: Value) -> bool {
    matches!(f.value(j).def, ValueDef::Result(d, 0)
        if matches!(f.inst(d).kind, InstKind::Binary(BinOp::Rem, _, m) if same_int(f, m, w)))
}

/// The affine form of index `v` in the parallel index `i`, when it has one.
pub fn affine(f: &Function, v: Value, i: Value) -> Option<Affine> {
    let lin = linear(f, v, i, 0)?;
    let Some(w) = lin.width else {
        return (lin.index == 1 && lin.other.is_empty()).then_some(Affine {
            width: None,
            shift: lin.constant,
            slack: Some(0),
        });
    };
    if lin.index != 0 {
        return None;
    }
    // Terms `±w` and `±k·w` move whole rows; the rest is the column.
    let mut rows = lin.rows;
    let mut column = Vec::new();
    for (x, sign) in lin.other {
        let k = if same_int(f, x, w) {
            Some(1)
        } else {
            match f.value(x).def {
                ValueDef::Result(d, 0) => match f.inst(d).kind {
                    InstKind::Binary(BinOp::Mul, a, b) if same_int(f, b, w) => int_constant(f, a),
                    InstKind::Binary(BinOp::Mul, a, b) if same_int(f, a, w) => int_constant(f, b),
                    _ => None,
                },
                _ => None,
            }
        };
        match k {
            Some(k) => rows += sign * k,
            None => column.push((x, sign)),
        }
    }
    let c = lin.constant;
    let slack = match column.as_slice() {
        [] => match int_constant(f, w).filter(|w| *w > 0) {
            Some(w) => {
                rows += c.div_euclid(w);
                Some(0)
            }
            // Rows have at least one element: `(i + s)·w − 1` ends row `i + s − 1`, and
            // `(i + s)·w − k` lies in rows `i + s − k ..= i + s − 1`.
            None if c < 0 => {
                rows -= 1;
                Some(c.unsigned_abs() as u64 - 1)
            }
            None => Some(c as u64),
        },
        [(j, 1)] if index_below(f, *j, w) || remainder_of(f, *j, w) => {
            Some(c.unsigned_abs() as u64)
        }
        _ => None,
    };
    Some(Affine {
        width: Some(w),
        shift: rows,
        slack,
    })
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
                            spec.zip(form.slack).is_some_and(|(s, slack)| {
                                s.width == form.width
                                    && form.shift.unsigned_abs() as u64 + slack <= s.reach
                            })
                        };
                        // A store's row is the iteration's own (Rust's borrows keep it
                        // there); an addition's column must be shown to stay in the row.
                        let own = |form: &Affine| form.slack == Some(0) || !adds(f, j);
                        match affine(f, idx[0], *index) {
                            Some(form) if form.shift == 0 && own(&form) => form.width,
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
                // Two constant widths alike are one (`x[2 * i]` and `x[2 * i + 1]` each
                // read a constant 2 of their own).
                let alike = match (before, width) {
                    (Own::Rows(Some(a)), Own::Rows(Some(c))) => same_int(f, a, c),
                    (a, c) => a == c,
                };
                if !alike {
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
        // An addition whose column may leave its row by an unknown amount adds at a
        // computed index.
        let form = (idx.len() == 1)
            .then(|| affine(f, idx[0], index))
            .flatten()
            .filter(|form| form.slack.is_some() || !add);
        let own_row = |form: &Affine| form.slack == Some(0) || !add;
        if matches!(form, Some(form) if form.width.is_some() && form.shift == 0 && own_row(&form)) {
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
                width,
                shift,
                slack,
            }) => Site::Shift {
                buf,
                offset: shift,
                slack: slack.unwrap_or(0),
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
        if let Site::Shift {
            buf,
            offset,
            slack,
            width,
        } = *site
        {
            let reach = offset.unsigned_abs() as u64 + slack;
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

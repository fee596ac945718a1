//! Bounds checks taken out of serial loops: index windows.
//!
//! An access `buf[base + t]` in a loop `for t in s..e`, made in every iteration (at the
//! top level of the body, in a loop without `break`), reaches exactly the elements
//! `base + s .. base + e`. The generated code takes that range as a slice before the loop,
//! `let w = &buf[base + s..base + e];`, and indexes `w[t - s]` inside it. Slicing checks
//! the range once; inside the loop the compiler sees `t - s < e - s == w.len()` and drops
//! the check of every access. Rust's own bounds checks stay in place (no `unsafe`).
//!
//! The loop panics exactly when it did: an index out of range at some `t` panicked in
//! that iteration, and now panics at the slicing, before the loop (the derivative code's
//! buffers are then left as they were at the loop's start instead of halfway).
//!
//! `base` is read off the index's arithmetic: sums, differences and multiples by
//! constants of values defined outside the loop, of the loop index (coefficient 1), and
//! of loop-carried counters that start outside the loop and grow by 1 per iteration
//! (`li += 1`; the window is then `lo..lo + (e − s) as usize`, since the loop index need
//! not be a `usize`), and of integer expressions the loop computes from invariant values
//! (`i * n`), rebuilt before it. It is computed with wrapping arithmetic, since its parts
//! may leave the range of `usize` (`i * n - 1 + t` at `i = 0`) even where the index
//! does not.
//!
//! A buffer read but not written in the loop gets a shared window per distinct `base`
//! (its other reads stay as they are). A buffer written in the loop gets one mutable
//! window, and only if every access to it in the loop (nested loops included) is one of
//! these accesses with the same `base`. Loops in parallel bodies get windows too, on
//! shared slices and on the iteration's window of a buffer the parallel loop writes
//! (`ad_rayon::Window`, which slices with one range check), not on its scatter targets
//! and tapes. Loops in the reverse phase of a checkpointed loop (its advance, taped re-run
//! and adjoint blocks, plain code in the arms of its `match`) get windows too; a loop
//! holding a checkpoint instruction itself (the forward sweep, whose snapshot closures
//! borrow the state) is left alone,
//! as are scratch slots and two-dimensional buffers (the tapes of loops nested in
//! parallel loops among them), except, in serial code, a row whose index is fixed for
//! the loop (`m[i][t]` in `for t`, as `row.iter().zip(x)` over a row view gives):
//! `&m[i][lo..hi]`, one window per row read, one row at most for a buffer written (the row
//! index a value from outside the loop, or a cell the loop reads and does not set). A loop
//! that reaches a two-dimensional buffer only at one such row, also in its inner loops or
//! at several offsets, binds the row once before it (a row view, `let _rv = &mut m[i][..];`)
//! and indexes the view, as do the windows of its inner loops. A one-dimensional tape is windowed like a buffer: a loop over a plain range
//! saves iteration `t` at `k₀ + (t − s)` and its reverse reads slot `base + t`
//! (`derivative::reverse`), after the tape was sized for the loop.

use crate::derivative::reverse::{int_const, is_checkpoint};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A loop-invariant part of an index: a value defined outside the loop, or a cell the
/// loop reads but does not set (the hoisted `_fixed_*` bases).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Term {
    Value(Value),
    Cell(Cell),
    /// An integer expression the loop computes from invariant values only (`i * n` inside
    /// `for j ..`), by its canonical text; [`Windows::inner`] holds its tree.
    Inner(String),
}

/// An invariant integer expression computed inside the loop, rebuilt before it.
#[derive(Clone, Debug)]
enum Expr {
    Leaf(Value),
    Cell(Cell),
    Const(i128),
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

/// `Σ coef·term + c + t_coef·t`, the index arithmetic of one access.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Affine {
    terms: BTreeMap<Term, i128>,
    c: i128,
    t: i128,
}

impl Affine {
    fn constant(c: i128) -> Self {
        Affine {
            terms: BTreeMap::new(),
            c,
            t: 0,
        }
    }

    fn term(v: Term, k: i128) -> Self {
        let mut a = Affine::constant(0);
        a.terms.insert(v, k);
        a
    }

    fn add(mut self, o: Affine, sign: i128) -> Option<Self> {
        for (v, k) in o.terms {
            let e = self.terms.entry(v.clone()).or_insert(0);
            *e = e.checked_add(sign.checked_mul(k)?)?;
            if *e == 0 {
                self.terms.remove(&v);
            }
        }
        self.c = self.c.checked_add(sign.checked_mul(o.c)?)?;
        self.t = self.t.checked_add(sign.checked_mul(o.t)?)?;
        Some(self)
    }

    fn scale(mut self, k: i128) -> Option<Self> {
        for e in self.terms.values_mut() {
            *e = e.checked_mul(k)?;
        }
        self.terms.retain(|_, e| *e != 0);
        self.c = self.c.checked_mul(k)?;
        self.t = self.t.checked_mul(k)?;
        Some(self)
    }
}

/// The row of a two-dimensional buffer fixed for a loop: a value defined outside it, or a
/// cell the loop reads but does not set (each read of it a value of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Row {
    Value(Value),
    Cell(Cell),
}

/// One window, declared before its loop.
pub struct Decl {
    pub name: Ident,
    buf: Buf,
    /// The row of a two-dimensional buffer the window is part of (fixed for the loop).
    row: Option<Row>,
    mutable: bool,
    /// The index at `t = 0` (without `t`).
    base: Affine,
    start: Value,
    end: Value,
    /// Some access reads the index off a loop-carried counter, so the loop index itself
    /// may be of another integer type than `usize`: its range is converted.
    cast: bool,
    /// The row view of an enclosing loop the window is sliced from (instead of `m[i]`).
    view: Option<Ident>,
}

/// A row of a two-dimensional buffer bound once before a loop that reaches no other row of
/// it (`let _rv = &mut m[i][..];`): the accesses inside the loop and the windows of its
/// inner loops index the view, so the row's pointer is neither bounds-checked nor reloaded
/// at each of them (a store through one row may, for all the compiler knows, have changed
/// the outer buffer's row pointers).
pub struct RowView {
    name: Ident,
    buf: Buf,
    row: Row,
    mutable: bool,
    start: Value,
    end: Value,
}

/// An access through a window: `name[t - start]`.
pub struct Access {
    pub name: Ident,
    index: Value,
    start: Value,
    cast: bool,
}

#[derive(Default)]
pub struct Windows {
    /// The windows of each loop.
    pub before: HashMap<Inst, Vec<Decl>>,
    /// The accesses that go through a window.
    pub access: HashMap<Inst, Access>,
    /// The row views bound before each loop.
    pub views: HashMap<Inst, Vec<RowView>>,
    /// The accesses that index a row view: `view[col]`.
    pub via_view: HashMap<Inst, Ident>,
    /// The expressions of the [`Term::Inner`] parts of the bases.
    inner: HashMap<String, Expr>,
}

impl Windows {
    /// The values the window declarations and accesses read (the parts of their bases and
    /// their loops' bounds): the generated code needs them even where the index
    /// arithmetic they replace is not emitted.
    pub fn reads(&self) -> Vec<Value> {
        fn leaves(e: &Expr, out: &mut Vec<Value>) {
            match e {
                Expr::Leaf(v) => out.push(*v),
                Expr::Bin(_, a, b) => {
                    leaves(a, out);
                    leaves(b, out);
                }
                Expr::Cell(_) | Expr::Const(_) => {}
            }
        }
        let mut out = Vec::new();
        for d in self.before.values().flatten() {
            out.extend([d.start, d.end]);
            if let Some(Row::Value(r)) = d.row {
                out.push(r);
            }
            for t in d.base.terms.keys() {
                match t {
                    Term::Value(v) => out.push(*v),
                    Term::Inner(key) => leaves(&self.inner[key], &mut out),
                    Term::Cell(_) => {}
                }
            }
        }
        for v in self.views.values().flatten() {
            out.extend([v.start, v.end]);
            if let Row::Value(r) = v.row {
                out.push(r);
            }
        }
        out.extend(self.access.values().map(|a| a.start));
        out
    }
}

/// The windows of the serial loops of `f`.
pub fn plan(f: &Function) -> Windows {
    let mut w = Windows::default();
    visit(f, f.body, &mut w, None);
    // The windows of inner loops on a row an enclosing loop views are sliced from the view.
    let mut from_view: HashMap<Ident, Ident> = HashMap::new();
    for (i, a) in &w.access {
        if let Some(v) = w.via_view.get(i) {
            from_view.insert(a.name.clone(), v.clone());
        }
    }
    for d in w.before.values_mut().flatten() {
        if d.row.is_some() {
            d.view = from_view.get(&d.name).cloned();
        }
    }
    w
}

/// `shared`: inside a parallel loop, the buffers that may be windowed there.
fn visit(f: &Function, b: Block, w: &mut Windows, shared: Option<&HashSet<Buf>>) {
    for &i in &f.block(b).insts {
        if is_checkpoint(f, i) {
            // The reverse phase's blocks (advance, taped re-run, kept state, adjoint) are
            // plain code in the arms of its `match`: their loops get windows as anywhere.
            // The snapshot closures hold no loops.
            if let InstKind::CkReverse { .. } = f.inst(i).kind {
                for c in f.child_blocks(i) {
                    visit(f, c, w, shared);
                }
            }
            continue;
        }
        if f.parallel.contains_key(&i) {
            if shared.is_some() {
                continue;
            }
            // Its body sees the buffers it only reads as shared slices and those it writes
            // as its iteration's window (`ad_rayon::Window`, `HaloWindow`), both of which
            // slice; not the targets of its scatters, nor its tapes.
            let mut touched = HashSet::new();
            let mut excluded = HashSet::new();
            let mut note = |j: Inst| {
                for buf in crate::derivative::reverse::touched(f, j) {
                    if f.scatter.contains_key(&j) || f.buf(buf).kind == BufKind::Tape {
                        excluded.insert(buf);
                    }
                    touched.insert(buf);
                }
            };
            for c in f.child_blocks(i) {
                f.walk(c, &mut note);
            }
            let sliceable: HashSet<Buf> = touched.difference(&excluded).copied().collect();
            for c in f.child_blocks(i) {
                visit(f, c, w, Some(&sliceable));
            }
            continue;
        }
        if let InstKind::For { .. } = f.inst(i).kind {
            plan_loop(f, i, w, shared);
        }
        for c in f.child_blocks(i) {
            visit(f, c, w, shared);
        }
    }
}

fn plan_loop(f: &Function, l: Inst, w: &mut Windows, shared: Option<&HashSet<Buf>>) {
    let InstKind::For {
        range,
        index,
        params,
        inits,
        body,
        exit,
    } = &f.inst(l).kind
    else {
        return;
    };
    if !exit.is_empty() || range.step.is_some() {
        return;
    }
    let mut inside = HashSet::new();
    f.walk(*body, &mut |i| {
        inside.insert(i);
    });
    let mut set_cells = HashSet::new();
    f.walk(*body, &mut |i| {
        if let InstKind::CellSet(c, _) | InstKind::CellAdd(c, _) | InstKind::CellDecl(c, _) =
            f.inst(i).kind
        {
            set_cells.insert(c);
        }
    });
    let cx = Cx {
        f,
        l,
        index: *index,
        start: range.start,
        params,
        inits,
        yields: &f.block(*body).yields,
        inside: &inside,
        set_cells,
        inner: Default::default(),
        counter: Default::default(),
    };
    let top: HashSet<Inst> = f.block(*body).insts.iter().copied().collect();
    // Per buffer (and row of a 2-D one): the candidate accesses with their `base` (and
    // whether it came through a counter); the buffers written in the loop; those accessed
    // in any other way.
    let mut cands: BTreeMap<(Buf, Option<Row>), Vec<(Inst, Affine, bool)>> = BTreeMap::new();
    let mut written: HashSet<Buf> = HashSet::new();
    let mut other: HashSet<Buf> = HashSet::new();
    // The lanes of an interleaved group are one buffer here: one window serves them all.
    let head = |b: Buf| f.interleaved.get(&b).map_or(b, |g| g.head);
    f.walk(*body, &mut |i| {
        let (buf, idx, writes) = match &f.inst(i).kind {
            InstKind::Load(b, idx) => (head(*b), idx, false),
            InstKind::Len(b, _) => {
                other.insert(head(*b));
                return;
            }
            InstKind::Store(b, idx, _) | InstKind::StoreAdd(b, idx, _) => (head(*b), idx, true),
            _ => {
                for b in crate::derivative::reverse::touched(f, i) {
                    written.insert(head(b));
                    other.insert(head(b));
                }
                return;
            }
        };
        if writes {
            written.insert(buf);
        }
        let data = f.buf(buf);
        // A row of a 2-D buffer whose index is fixed for the loop (`m[i][t]` in `for t`):
        // windowed like a 1-D buffer, as `&m[i][lo..hi]`.
        let row = (data.rank == 2
            && idx.len() == 2
            && shared.is_none()
            && matches!(
                data.kind,
                BufKind::Param(_) | BufKind::Local | BufKind::Shadow
            )
            && !f.interleaved.contains_key(&buf))
        .then(|| cx.row(idx[0]))
        .flatten();
        let eligible = top.contains(&i)
            && ((idx.len() == 1 && data.rank == 1) || row.is_some())
            && matches!(
                data.kind,
                BufKind::Param(_) | BufKind::Local | BufKind::Shadow | BufKind::Tape
            )
            && !f.scatter.contains_key(&i)
            && shared.is_none_or(|s| s.contains(&buf));
        cx.counter.set(false);
        let at = idx[idx.len() - 1];
        match eligible.then(|| cx.affine(at, 0)).flatten() {
            Some(a) if a.t == 1 => {
                cands
                    .entry((buf, row))
                    .or_default()
                    .push((i, a, cx.counter.get()))
            }
            _ => {
                other.insert(buf);
            }
        }
    });
    w.inner.extend(cx.inner.take());
    // A buffer written in the loop gets one window, so all its candidates are of one row.
    let mut rows_of: HashMap<Buf, usize> = HashMap::new();
    for (buf, _) in cands.keys() {
        *rows_of.entry(*buf).or_default() += 1;
    }
    for ((buf, row), list) in cands {
        let mutable = written.contains(&buf);
        if mutable && rows_of[&buf] > 1 {
            continue;
        }
        let mut bases: Vec<Affine> = Vec::new();
        for (_, a, _) in &list {
            let mut b = a.clone();
            b.t = 0;
            if !bases.contains(&b) {
                bases.push(b);
            }
        }
        if mutable && (other.contains(&buf) || bases.len() > 1) {
            continue;
        }
        for base in bases {
            let name = format_ident!(
                "_w_{}_{}_{}",
                f.buf(buf).name,
                l.0,
                w.before.get(&l).map_or(0, Vec::len)
            );
            let same = |a: &Affine| a.terms == base.terms && a.c == base.c;
            let cast = list.iter().any(|(_, a, c)| *c && same(a));
            for (i, a, _) in &list {
                if same(a) {
                    w.access.insert(
                        *i,
                        Access {
                            name: name.clone(),
                            index: *index,
                            start: range.start,
                            cast,
                        },
                    );
                }
            }
            w.before.entry(l).or_default().push(Decl {
                name,
                buf,
                row,
                mutable,
                base,
                start: range.start,
                end: range.end,
                cast,
                view: None,
            });
        }
    }
    if shared.is_none() {
        plan_views(f, l, &cx, w, range.start, range.end);
    }
}

/// The row views of loop `l`: each two-dimensional buffer that every instruction inside
/// the loop (inner loops included) reaches only by loads and stores of one row fixed for
/// the loop, unless the loop windows it itself or an enclosing loop already views it.
fn plan_views(f: &Function, l: Inst, cx: &Cx, w: &mut Windows, start: Value, end: Value) {
    let windowed: HashSet<Buf> = w
        .before
        .get(&l)
        .into_iter()
        .flatten()
        .map(|d| d.buf)
        .collect();
    let mut rows: BTreeMap<Buf, Option<Row>> = BTreeMap::new();
    let mut blocked: HashSet<Buf> = HashSet::new();
    let mut accesses: Vec<(Inst, Buf)> = Vec::new();
    let mut written: HashSet<Buf> = HashSet::new();
    let InstKind::For { body, .. } = &f.inst(l).kind else {
        return;
    };
    // Checkpointing closures and parallel bodies hold their buffers their own way.
    let mut apart = false;
    f.walk(*body, &mut |i| {
        apart |= is_checkpoint(f, i) || f.parallel.contains_key(&i);
    });
    if apart {
        return;
    }
    f.walk(*body, &mut |i| {
        let (buf, idx, writes) = match &f.inst(i).kind {
            InstKind::Load(b, idx) => (*b, idx, false),
            InstKind::Store(b, idx, _) | InstKind::StoreAdd(b, idx, _) => (*b, idx, true),
            _ => {
                blocked.extend(crate::derivative::reverse::touched(f, i));
                return;
            }
        };
        let data = f.buf(buf);
        let row = (data.rank == 2
            && idx.len() == 2
            && matches!(
                data.kind,
                BufKind::Param(_) | BufKind::Local | BufKind::Shadow
            )
            && !f.interleaved.contains_key(&buf)
            && !f.scatter.contains_key(&i))
        .then(|| cx.row(idx[0]))
        .flatten();
        let Some(row) = row else {
            blocked.insert(buf);
            return;
        };
        if rows.entry(buf).or_insert(Some(row)) != &Some(row) {
            blocked.insert(buf);
        }
        if writes {
            written.insert(buf);
        }
        accesses.push((i, buf));
    });
    for (buf, row) in rows {
        let Some(row) = row else { continue };
        let covered = accesses
            .iter()
            .any(|(i, b)| *b == buf && w.via_view.contains_key(i));
        if blocked.contains(&buf) || windowed.contains(&buf) || covered {
            continue;
        }
        let name = format_ident!("_rv_{}_{}", f.buf(buf).name, l.0);
        for (i, b) in &accesses {
            if *b == buf {
                w.via_view.insert(*i, name.clone());
            }
        }
        w.views.entry(l).or_default().push(RowView {
            name,
            buf,
            row,
            mutable: written.contains(&buf),
            start,
            end,
        });
    }
}

struct Cx<'a> {
    f: &'a Function,
    l: Inst,
    index: Value,
    start: Value,
    params: &'a [Value],
    inits: &'a [Value],
    yields: &'a [Value],
    inside: &'a HashSet<Inst>,
    /// The cells the loop sets.
    set_cells: HashSet<Cell>,
    /// The [`Term::Inner`] expressions met.
    inner: std::cell::RefCell<HashMap<String, Expr>>,
    /// Set when an index was read off a loop-carried counter.
    counter: std::cell::Cell<bool>,
}

impl Cx<'_> {
    /// `v` as the fixed row of a two-dimensional access, if it is fixed for the loop.
    fn row(&self, v: Value) -> Option<Row> {
        if self.invariant(v) {
            return Some(Row::Value(v));
        }
        match self.f.value(v).def {
            ValueDef::Result(i, 0) => match self.f.inst(i).kind {
                InstKind::CellGet(c) if !self.set_cells.contains(&c) => Some(Row::Cell(c)),
                _ => None,
            },
            _ => None,
        }
    }

    fn invariant(&self, v: Value) -> bool {
        match self.f.value(v).def {
            ValueDef::Result(i, _) => !self.inside.contains(&i),
            ValueDef::LoopIndex(j) | ValueDef::LoopParam(j, _) => {
                j != self.l && !self.inside.contains(&j)
            }
        }
    }

    fn affine(&self, v: Value, depth: u32) -> Option<Affine> {
        if depth > 24 {
            return None;
        }
        let f = self.f;
        if v == self.index {
            return Some(Affine {
                t: 1,
                ..Affine::constant(0)
            });
        }
        if let Some(c) = int_const(f, v) {
            return Some(Affine::constant(c));
        }
        if self.invariant(v) {
            return Some(Affine::term(Term::Value(v), 1));
        }
        match f.value(v).def {
            // A counter `p` that starts at `p₀` and grows by 1 per iteration is
            // `p₀ + (t − s)`.
            ValueDef::LoopParam(j, n) if j == self.l => {
                let n = n as usize;
                let (p, init) = (self.params[n], self.inits[n]);
                let InstKind::Binary(BinOp::Add, a, b) = f.inst(f.def_inst(self.yields[n])).kind
                else {
                    return None;
                };
                let one = |x: Value| int_const(f, x) == Some(1);
                if !((a == p && one(b)) || (b == p && one(a))) || !self.invariant(init) {
                    return None;
                }
                self.counter.set(true);
                Affine::term(Term::Value(init), 1)
                    .add(Affine::term(Term::Value(self.start), 1), -1)?
                    .add(
                        Affine {
                            t: 1,
                            ..Affine::constant(0)
                        },
                        1,
                    )
            }
            ValueDef::Result(i, 0) => match f.inst(i).kind {
                InstKind::Binary(BinOp::Add, a, b) => self
                    .affine(a, depth + 1)?
                    .add(self.affine(b, depth + 1)?, 1),
                InstKind::Binary(BinOp::Sub, a, b) => self
                    .affine(a, depth + 1)?
                    .add(self.affine(b, depth + 1)?, -1),
                InstKind::Binary(BinOp::Mul, a, b) => {
                    let (x, y) = (self.affine(a, depth + 1)?, self.affine(b, depth + 1)?);
                    let is_const = |z: &Affine| z.terms.is_empty() && z.t == 0;
                    if is_const(&y) {
                        x.scale(y.c)
                    } else if is_const(&x) {
                        y.scale(x.c)
                    } else {
                        self.inner_term(v)
                    }
                }
                // The reverse sweep's counter `init + int_like(t − s, init)·step`: the
                // loop index need not be a `usize`, so its range is converted.
                InstKind::Binary(BinOp::IntLike, a, _) => {
                    // Only a conversion of `t − s` is read through (its `s` cancels in the
                    // window's bounds); one without the loop index is left alone.
                    let a = self.affine(a, depth + 1)?;
                    if a.t == 0 {
                        return None;
                    }
                    self.counter.set(true);
                    Some(a)
                }
                InstKind::CellGet(c) if !self.set_cells.contains(&c) => {
                    Some(Affine::term(Term::Cell(c), 1))
                }
                _ => self.inner_term(v),
            },
            _ => None,
        }
    }

    /// `v` as one opaque invariant part, if the loop computes it from invariant values.
    fn inner_term(&self, v: Value) -> Option<Affine> {
        let e = self.invariant_expr(v, 0)?;
        let key = format!("{e:?}");
        self.inner.borrow_mut().insert(key.clone(), e);
        Some(Affine::term(Term::Inner(key), 1))
    }

    /// The tree of `v` if it is integer `+ − * / %` of invariant values and of cells the
    /// loop does not set.
    fn invariant_expr(&self, v: Value, depth: u32) -> Option<Expr> {
        if depth > 24 || v == self.index {
            return None;
        }
        if let Some(c) = int_const(self.f, v) {
            return Some(Expr::Const(c));
        }
        if self.invariant(v) {
            return Some(Expr::Leaf(v));
        }
        let ValueDef::Result(i, 0) = self.f.value(v).def else {
            return None;
        };
        match self.f.inst(i).kind {
            InstKind::Binary(
                op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem),
                a,
                b,
            ) if self.f.ty(v) == Ty::Int => Some(Expr::Bin(
                op,
                Box::new(self.invariant_expr(a, depth + 1)?),
                Box::new(self.invariant_expr(b, depth + 1)?),
            )),
            InstKind::CellGet(c) if !self.set_cells.contains(&c) => Some(Expr::Cell(c)),
            _ => None,
        }
    }
}

impl super::Ctx<'_> {
    /// `let w = &buf[base + s..base + e];` for each window of loop `l` (an empty window
    /// when the loop does not run). Where the index was read off a counter, `base` holds
    /// `−s` and the loop index may not be a `usize`: `&buf[lo..lo + (e − s) as usize]`.
    pub(super) fn window_decls(&self, l: Inst) -> TokenStream {
        let mut out = quote!();
        for v in self.windows.views.get(&l).into_iter().flatten() {
            let (n, name) = (self.buf(v.buf), &v.name);
            let (s, e) = (self.val(v.start), self.val(v.end));
            let r = match v.row {
                Row::Value(r) => self.val(r),
                Row::Cell(c) => {
                    let c = self.cell(c);
                    quote!(#c)
                }
            };
            // An empty view when the loop does not run (the row itself may not exist then).
            out.extend(match v.mutable {
                true => {
                    quote!(let #name: &mut [_] = if #e > #s { &mut #n[#r][..] } else { &mut [] };)
                }
                false => quote!(let #name: &[_] = if #e > #s { &#n[#r][..] } else { &[] };),
            });
        }
        let Some(decls) = self.windows.before.get(&l) else {
            return out;
        };
        for d in decls {
            let n = self.buf(d.buf);
            let (s, e) = (self.val(d.start), self.val(d.end));
            let lo = self.wrapping(&self.plus(&d.base, d.start));
            let hi = if d.cast {
                quote!(usize::wrapping_add(#lo, (#e - #s) as usize))
            } else {
                self.wrapping(&self.plus(&d.base, d.end))
            };
            let name = &d.name;
            // A row's window: an empty one when the loop does not run (the row itself may
            // not exist then).
            let n = match (&d.view, d.row) {
                (Some(v), _) => quote!(#v),
                (None, Some(Row::Value(r))) => {
                    let r = self.val(r);
                    quote!(#n[#r])
                }
                (None, Some(Row::Cell(c))) => {
                    let c = self.cell(c);
                    quote!(#n[#c])
                }
                (None, None) => quote!(#n),
            };
            out.extend(match (d.mutable, d.row.is_some()) {
                (true, false) => {
                    quote!(let #name = if #e > #s { &mut #n[#lo..#hi] } else { &mut #n[..0] };)
                }
                (false, false) => {
                    quote!(let #name = if #e > #s { &#n[#lo..#hi] } else { &#n[..0] };)
                }
                (true, true) => {
                    quote!(let #name: &mut [_] = if #e > #s { &mut #n[#lo..#hi] } else { &mut [] };)
                }
                (false, true) => {
                    quote!(let #name: &[_] = if #e > #s { &#n[#lo..#hi] } else { &[] };)
                }
            });
        }
        out
    }

    /// The window access replacing `buf[idx]` in instruction `i`, if it has one.
    pub(super) fn window_index(&self, i: Inst) -> Option<TokenStream> {
        let Some(a) = self.windows.access.get(&i) else {
            // An access of a row view: `view[col]`.
            let v = self.windows.via_view.get(&i)?;
            let (InstKind::Load(_, idx)
            | InstKind::Store(_, idx, _)
            | InstKind::StoreAdd(_, idx, _)) = &self.f.inst(i).kind
            else {
                return None;
            };
            let col = self.val(idx[1]);
            return Some(quote!(#v[#col]));
        };
        let name = &a.name;
        let t = self.val(a.index);
        let s = (int_const(self.f, a.start) != Some(0)).then(|| self.val(a.start));
        let at = match (s, a.cast) {
            (None, false) => quote!(#name[#t]),
            (None, true) => quote!(#name[#t as usize]),
            (Some(s), false) => quote!(#name[#t - #s]),
            (Some(s), true) => quote!(#name[(#t - #s) as usize]),
        };
        // The lane of an interleaved group's window.
        let (InstKind::Load(b, _) | InstKind::Store(b, ..) | InstKind::StoreAdd(b, ..)) =
            &self.f.inst(i).kind
        else {
            return Some(at);
        };
        Some(match self.f.interleaved.get(b) {
            Some(g) => {
                let lane = g.lane;
                quote!(#at[#lane])
            }
            None => at,
        })
    }

    /// `base + v`, a constant `v` folded in.
    fn plus(&self, base: &Affine, v: Value) -> Affine {
        let term = match int_const(self.f, v) {
            Some(c) => Affine::constant(c),
            None => Affine::term(Term::Value(v), 1),
        };
        base.clone().add(term, 1).expect("small coefficients")
    }

    /// `base` in wrapping `usize` arithmetic (written as `usize::wrapping_add(a, b)`, which
    /// also fixes the type of a cell declared with a bare `0`).
    fn wrapping(&self, base: &Affine) -> TokenStream {
        let c = base.c;
        let parts: Vec<(TokenStream, i128)> = base
            .terms
            .iter()
            .map(|(v, k)| {
                let v = match v {
                    Term::Value(v) => self.val(*v),
                    Term::Cell(c) => {
                        let c = self.cell(*c);
                        quote!(#c)
                    }
                    Term::Inner(key) => self.inner_expr(&self.windows.inner[key]),
                };
                (v, *k)
            })
            .collect();
        let mut acc: Option<TokenStream> = None;
        for (v, k) in parts {
            let mag = proc_macro2::Literal::u128_unsuffixed(k.unsigned_abs());
            let term = if k.unsigned_abs() == 1 {
                v
            } else {
                quote!(usize::wrapping_mul(#v, #mag))
            };
            acc = Some(match (acc, k > 0) {
                (None, true) => term,
                (None, false) => quote!(usize::wrapping_sub(0, #term)),
                (Some(a), true) => quote!(usize::wrapping_add(#a, #term)),
                (Some(a), false) => quote!(usize::wrapping_sub(#a, #term)),
            });
        }
        let lit = proc_macro2::Literal::u128_unsuffixed(c.unsigned_abs());
        match acc {
            None if c >= 0 => quote!(#lit),
            None => quote!(usize::wrapping_sub(0, #lit)),
            Some(a) if c == 0 => a,
            Some(a) if c > 0 => quote!(usize::wrapping_add(#a, #lit)),
            Some(a) => quote!(usize::wrapping_sub(#a, #lit)),
        }
    }
}

impl super::Ctx<'_> {
    /// An invariant expression rebuilt before its loop, with the loop's own operators (so
    /// it panics on overflow where the loop's first iteration did).
    fn inner_expr(&self, e: &Expr) -> TokenStream {
        match e {
            Expr::Leaf(v) => self.val(*v),
            Expr::Cell(c) => {
                let c = self.cell(*c);
                quote!(#c)
            }
            Expr::Const(c) => {
                let lit = proc_macro2::Literal::i128_unsuffixed(*c);
                if *c < 0 {
                    quote!((#lit))
                } else {
                    quote!(#lit)
                }
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.inner_expr(a), self.inner_expr(b));
                let op: TokenStream = op.symbol().parse().expect("operator");
                quote!((#a #op #b))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn programs(item: TokenStream) -> [Function; 2] {
        let item: syn::ItemFn = syn::parse2(item).expect("a function");
        let c = crate::expand::compile_for_tests(&item).expect("compiles");
        [c.forward, c.reverse]
    }

    /// The accesses to the buffer named `name`, and how many of them `through` counts.
    fn counted(
        f: &Function,
        name: &str,
        through: impl Fn(&Windows, Inst) -> bool,
    ) -> (usize, usize) {
        let plan = plan(f);
        let (mut all, mut n) = (0, 0);
        f.walk(f.body, &mut |i| {
            if let InstKind::Load(b, _) | InstKind::Store(b, ..) | InstKind::StoreAdd(b, ..) =
                f.inst(i).kind
            {
                if f.buf(b).name == name {
                    all += 1;
                    n += usize::from(through(&plan, i));
                }
            }
        });
        (all, n)
    }

    /// The accesses to `name`, and how many of them go through a window.
    fn windowed(f: &Function, name: &str) -> (usize, usize) {
        counted(f, name, |plan, i| plan.access.contains_key(&i))
    }

    #[test]
    fn triangular_product_reads_through_windows() {
        // The counter `li` (grows by 1 per inner iteration) and the invariant `c * d`.
        let [fwd, rev] = programs(quote! {
            fn tri(l: &[f64], x: &[f64], d: usize) -> f64 {
                let mut z = vec![0.0; d];
                let mut li = 0;
                for c in 0..d {
                    for r in c + 1..d {
                        z[r] += l[li] * x[c * d + r];
                        li += 1;
                    }
                }
                let mut s = 0.0;
                for j in 0..d {
                    s += z[j] * z[j];
                }
                s
            }
        });
        for f in [&fwd, &rev] {
            let (all, through) = windowed(f, "l");
            assert!(all > 0 && through == all, "{through} of {all} reads of `l`");
            let (all, through) = windowed(f, "x");
            assert!(all > 0 && through == all, "{through} of {all} reads of `x`");
        }
    }

    #[test]
    fn conditional_and_doubly_written_accesses_keep_their_checks() {
        let [fwd, _] = programs(quote! {
            fn f(x: &[f64], n: usize) -> f64 {
                let mut w = vec![0.0; n + 1];
                let mut s = 0.0;
                for i in 0..n {
                    if i % 2 == 0 {
                        s += x[i];
                    }
                    w[i] += s;
                    w[i + 1] += 0.5 * s;
                }
                s + w[n]
            }
        });
        assert_eq!(windowed(&fwd, "x").1, 0, "a read inside a branch");
        assert_eq!(windowed(&fwd, "w").1, 0, "one loop, two mutable windows");
    }

    /// The accesses to `name`, and how many of them index a row view (directly or through a
    /// window sliced from one).
    fn viewed(f: &Function, name: &str) -> (usize, usize) {
        counted(f, name, |plan, i| {
            let from_view = |a: &Access| {
                plan.before
                    .values()
                    .flatten()
                    .any(|d| d.view.is_some() && d.name == a.name)
            };
            plan.via_view.contains_key(&i) || plan.access.get(&i).is_some_and(from_view)
        })
    }

    #[test]
    fn rows_fixed_for_a_loop_are_bound_once() {
        // A row read in a nested loop (`m[i]` across `for c`, windowed in `for r`), and a row
        // of the adjoint written at several offsets in one loop (`dg[i][j]`, `dg[i][n + j]`).
        let [fwd, rev] = programs(quote! {
            fn f(m: &[Vec<f64>], g: &[Vec<f64>], x: &[f64], n: usize) -> f64 {
                let mut s = 0.0;
                for i in 0..m.len() {
                    for c in 0..n {
                        for r in c..n {
                            s += m[i][r] * x[c];
                        }
                    }
                    for j in 0..n {
                        s += (g[i][j] * x[j]).sin() + g[i][n + j] * x[j];
                    }
                }
                s
            }
        });
        for (f, what) in [(&fwd, "forward"), (&rev, "reverse")] {
            let (all, through) = viewed(f, "m");
            assert!(
                all > 0 && through == all,
                "{what}: {through} of {all} accesses of `m`"
            );
        }
        let (all, through) = viewed(&rev, "dg");
        assert!(
            all > 0 && through == all,
            "{through} of {all} adds into `dg`"
        );
    }
}

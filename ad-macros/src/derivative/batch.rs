//! Batched (vector) modes: `reverse(width = N)`, N reverse sweeps in one, and
//! `forward(width = N)`, N tangent sweeps in one.
//!
//! A reverse program is linear in its seeds and in what its shadows hold on entry, and its
//! control flow, indices and saved values depend on primal values only. So N sweeps with N
//! seeds share everything except the adjoint arithmetic. A forward program is alike: linear
//! in its tangents, with control flow and partial derivatives from primal values only. This
//! pass takes the (finished) program and gives every instruction that computes,
//! accumulates or stores a derivative (an adjoint, or a tangent) one copy per extra lane,
//! right after itself: lane `l` reads lane `l`'s derivatives and the shared primal values.
//! The primal values, the tapes and the partial derivatives are computed once.
//!
//! What carries a derivative is found by a fixed point from the seeds (the reverse seed, or
//! the scalar tangent parameters) and the shadow parameters: a value computed from one, a
//! cell or buffer that one is written into, an `if` result or loop parameter that one flows
//! into. Lane copies of parameters are appended to the parameter list (`dx_l1` after
//! `dx`); the function's scalar derivatives are yielded lane after lane. A call of another
//! function's `_rev` runs once per lane (the callee has one seed), which is right when the
//! call writes no primal buffer; a forward program's calls are not batched yet.

use crate::ir::*;
use proc_macro2::Span;
use std::collections::{HashMap, HashSet};

/// Where the lanes of a batched reverse program are.
#[derive(Clone)]
pub struct Batched {
    pub func: Function,
    /// For each parameter of the scalar program that has lanes (shadows and the seed):
    /// its index and the names of its lanes `1..width`.
    pub lanes: Vec<(usize, Vec<String>)>,
}

/// What carries an adjoint.
#[derive(Default)]
struct Taint {
    vals: HashSet<Value>,
    cells: HashSet<Cell>,
    bufs: HashSet<Buf>,
}

impl Taint {
    fn v(&self, v: Value) -> bool {
        self.vals.contains(&v)
    }
    fn any(&self, vs: &[Value]) -> bool {
        vs.iter().any(|v| self.vals.contains(v))
    }

    fn of(f: &Function, seeds: &[usize], shadow_params: &[usize]) -> Taint {
        let mut t = Taint::default();
        for &n in shadow_params {
            if let ParamKind::Buffer { buf, .. } = f.params[n].kind {
                t.bufs.insert(buf);
            }
        }
        loop {
            let before = (t.vals.len(), t.cells.len(), t.bufs.len());
            f.walk(f.body, &mut |i| t.step(f, i, seeds));
            if before == (t.vals.len(), t.cells.len(), t.bufs.len()) {
                return t;
            }
        }
    }

    fn step(&mut self, f: &Function, i: Inst, seeds: &[usize]) {
        use InstKind::*;
        let data = f.inst(i);
        let results = &data.results;
        let mut taint_results = false;
        match &data.kind {
            Param(n) => taint_results = seeds.contains(n),
            Load(b, _) | SumBuf(b) => taint_results = self.bufs.contains(b),
            Unary(..) | Binary(..) | Math(..) | Cast { .. } => {
                taint_results = self.any(&f.operands(i))
            }
            CellGet(c) => taint_results = self.cells.contains(c),
            // A reverse call returns adjoints and adds adjoints into its shadows.
            Call {
                suffix: CallSuffix::Rev { shadows, .. },
                ..
            } => {
                taint_results = true;
                for a in shadows.iter().flatten() {
                    if let CallArg::Buf { buf, .. } = a {
                        self.bufs.insert(*buf);
                    }
                }
            }
            CellDecl(c, v) | CellSet(c, v) | CellAdd(c, v) => {
                if self.v(*v) {
                    self.cells.insert(*c);
                }
            }
            Store(b, _, v) | StoreAdd(b, _, v) => {
                if self.v(*v) {
                    self.bufs.insert(*b);
                }
            }
            AddBuf { dst, src } | CopyFrom { dst, src } => {
                if self.bufs.contains(src) {
                    self.bufs.insert(*dst);
                }
            }
            SaveRow { tape, src, .. } | ReturnRow { tape, src, .. } => {
                if self.bufs.contains(src) {
                    self.bufs.insert(*tape);
                }
            }
            Swap(a, b) => {
                if self.bufs.contains(a) || self.bufs.contains(b) {
                    self.bufs.insert(*a);
                    self.bufs.insert(*b);
                }
            }
            Alloc { buf, init, .. } => {
                let from = match init {
                    AllocInit::Fill(v) => self.v(*v),
                    AllocInit::Copy(src) => self.bufs.contains(src),
                    AllocInit::Row { tape, .. } => self.bufs.contains(tape),
                };
                if from {
                    self.bufs.insert(*buf);
                }
            }
            If {
                then_blk, else_blk, ..
            } => {
                let (ty, ey) = (&f.block(*then_blk).yields, &f.block(*else_blk).yields);
                for (k, r) in results.iter().enumerate() {
                    if self.v(ty[k]) || self.v(ey[k]) {
                        self.vals.insert(*r);
                    }
                }
            }
            For {
                params,
                inits,
                body,
                ..
            }
            | While {
                params,
                inits,
                body,
                ..
            } => {
                let ys = &f.block(*body).yields;
                for k in 0..params.len() {
                    if self.v(inits[k]) || self.v(ys[k]) || self.v(params[k]) {
                        self.vals.insert(params[k]);
                        self.vals.insert(results[k]);
                    }
                }
            }
            _ => {}
        }
        if taint_results {
            self.vals.extend(results.iter().copied());
        }
    }
}

/// The message for a program this pass cannot batch (`forward`: a tangent program).
pub fn unsupported(forward: bool, what: &str) -> String {
    let (mode, per) = if forward {
        ("forward", "direction")
    } else {
        ("reverse", "seed")
    };
    format!(
        "phidiff: `{mode}(width = N)` does not support {what} yet; use `{mode}` and one \
         sweep per {per}"
    )
}

/// Checks that nothing but derivative arithmetic depends on a derivative, and that the
/// program uses nothing this pass does not batch. Errors point at the construct, or at
/// `at` (the function's name).
fn check(f: &Function, t: &Taint, at: Span, forward: bool) -> Result<(), syn::Error> {
    let unsupported = |what: &str| unsupported(forward, what);
    let mode = if forward { "forward" } else { "reverse" };
    if let Some(span) = f.parallel.iter().min_by_key(|(i, _)| **i).map(|(_, s)| *s) {
        return Err(syn::Error::new(span, unsupported("parallel loops")));
    }
    let mut err: Option<syn::Error> = None;
    f.walk(f.body, &mut |i| {
        use InstKind::*;
        if err.is_some() {
            return;
        }
        let data = f.inst(i);
        let control: Vec<Value> = match &data.kind {
            // `expand` reports checkpointed loops at their attribute first.
            CkNew { .. } | CkForwardStep { .. } | CkEndForward { .. } | CkReverse { .. } => {
                err = Some(syn::Error::new(at, unsupported("checkpointed loops")));
                return;
            }
            // A reverse call runs once per lane, each with its lane's shadows and seed:
            // its primal arguments must be the same for every lane, so none may be a
            // buffer the call writes (its `_rev` leaves the buffer's final value there).
            // A `_fwd` call would need its tangents and tangent result per lane.
            Call {
                suffix: CallSuffix::Fwd { .. },
                ..
            } => {
                err = Some(syn::Error::new(
                    data.span,
                    unsupported("calls of functions with active arguments"),
                ));
                return;
            }
            Call { suffix, args, .. } => {
                let adjoint_arg = args.iter().any(|a| match a {
                    CallArg::Scalar(v) => t.v(*v),
                    CallArg::Buf { buf, .. } => t.bufs.contains(buf),
                    CallArg::Opaque(_) => false,
                });
                let writes_primal = args
                    .iter()
                    .any(|a| matches!(a, CallArg::Buf { mutable: true, .. }));
                let rev = matches!(suffix, CallSuffix::Rev { .. });
                if adjoint_arg || (rev && writes_primal) {
                    err = Some(syn::Error::new(
                        data.span,
                        unsupported(
                            "calls that pass a `&mut` buffer to a function with active arguments (its `_rev` runs once per seed, and would find the buffer it wrote)",
                        ),
                    ));
                }
                return;
            }
            If { cond, .. } | Assert { cond, .. } => vec![*cond],
            Fail { cond, args, .. } => std::iter::once(*cond).chain(args.iter().copied()).collect(),
            For { range, exit, .. } => {
                let mut c = vec![range.start, range.end];
                c.extend(range.step);
                c.extend(exit.iter().copied());
                c
            }
            While { cond, exit, .. } => {
                let mut c = f.block(*cond).yields.clone();
                c.extend(exit.iter().copied());
                c
            }
            Load(_, idx) | Len(_, idx) | Store(_, idx, _) | StoreAdd(_, idx, _) => idx.clone(),
            Alloc { dims, .. } => dims.clone(),
            TapeEnsure(_, n) => vec![*n],
            TapeEnsureRow(_, r, n) => vec![*r, *n],
            SaveRow { idx, row, .. } => std::iter::once(*idx).chain(row.values()).collect(),
            ReturnRow { idx, .. } => vec![*idx],
            _ => Vec::new(),
        };
        if t.any(&control) {
            err = Some(syn::Error::new(
                at,
                format!(
                    "phidiff internal error: `{mode}(width = N)` found control flow or an index that depends on a derivative ({i})"
                ),
            ));
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    for &b in &t.bufs {
        if let BufKind::Param(_) = f.buf(b).kind {
            continue;
        }
        if f.buf(b).kind == BufKind::Scratch {
            return Err(syn::Error::new(at, unsupported("parallel loops")));
        }
    }
    Ok(())
}

/// Whether derivative buffer `b` (not a parameter) may keep its lanes interleaved: a
/// rank-1 buffer that the program only allocates (filled with a value every lane shares),
/// reads and writes by element, and measures. Anything that treats it as a whole (copies,
/// swaps, sums, calls, tapes) keeps one buffer per lane.
fn interleavable(f: &Function, t: &Taint, b: Buf) -> bool {
    let data = f.buf(b);
    if data.rank != 1 || !matches!(data.kind, BufKind::Local | BufKind::Shadow) {
        return false;
    }
    let mut ok = true;
    f.walk(f.body, &mut |i| {
        if !ok || !crate::derivative::reverse::touched(f, i).contains(&b) {
            return;
        }
        ok = match &f.inst(i).kind {
            InstKind::Load(..) | InstKind::Store(..) | InstKind::StoreAdd(..) => {
                !f.scatter.contains_key(&i)
            }
            InstKind::Len(..) => true,
            InstKind::Alloc {
                init: AllocInit::Fill(v),
                ..
            } => !t.v(*v),
            _ => false,
        };
    });
    ok
}

/// A name for lane `l` of parameter `base` that no other parameter has.
fn lane_name(base: &str, l: usize, taken: &HashSet<String>) -> String {
    let mut name = format!("{base}_l{l}");
    while taken.contains(&name) {
        name.push('_');
    }
    name
}

struct Lanes<'a> {
    t: &'a Taint,
    width: usize,
    vals: HashMap<Value, Vec<Value>>,
    cells: HashMap<Cell, Vec<Cell>>,
    bufs: HashMap<Buf, Vec<Buf>>,
    /// Lane parameters of each seed (index `l − 1`).
    seeds: HashMap<usize, Vec<usize>>,
}

impl Lanes<'_> {
    fn v(&self, v: Value, l: usize) -> Value {
        match self.vals.get(&v) {
            Some(lanes) => lanes[l],
            None if self.t.v(v) => {
                panic!("phidiff internal error: lane {l} of {v} used before it was made")
            }
            None => v,
        }
    }
    fn vs(&self, vs: &[Value], l: usize) -> Vec<Value> {
        vs.iter().map(|v| self.v(*v, l)).collect()
    }
    fn b(&self, b: Buf, l: usize) -> Buf {
        self.bufs.get(&b).map_or(b, |lanes| lanes[l])
    }
    fn c(&self, c: Cell, l: usize) -> Cell {
        self.cells.get(&c).map_or(c, |lanes| lanes[l])
    }

    /// Whether instruction `i` (no blocks) computes or writes an adjoint.
    fn is_adjoint(&self, f: &Function, i: Inst) -> bool {
        let data = f.inst(i);
        data.results.iter().any(|r| self.t.v(*r))
            || f.written_bufs(i).iter().any(|b| self.t.bufs.contains(b))
            || matches!(&data.kind,
                InstKind::CellDecl(c, _) | InstKind::CellSet(c, _) | InstKind::CellAdd(c, _)
                    if self.t.cells.contains(c))
    }

    /// Lane `l`'s copy of instruction `i` (no blocks, no call).
    fn copy_kind(&self, kind: &InstKind, l: usize) -> InstKind {
        use InstKind::*;
        let v = |x: &Value| self.v(*x, l);
        let b = |x: &Buf| self.b(*x, l);
        let c = |x: &Cell| self.c(*x, l);
        match kind {
            FConst(x) => FConst(*x),
            IConst(x) => IConst(*x),
            BConst(x) => BConst(*x),
            Param(n) => match self.seeds.get(n) {
                Some(lanes) => Param(lanes[l - 1]),
                None => Param(*n),
            },
            Unary(op, a) => Unary(*op, v(a)),
            Binary(op, a, x) => Binary(*op, v(a), v(x)),
            Math(n, args) => Math(n, self.vs(args, l)),
            Cast {
                value,
                to,
                int,
                float,
            } => Cast {
                value: v(value),
                to: *to,
                int: *int,
                float: *float,
            },
            Load(x, idx) => Load(b(x), self.vs(idx, l)),
            Store(x, idx, y) => Store(b(x), self.vs(idx, l), v(y)),
            StoreAdd(x, idx, y) => StoreAdd(b(x), self.vs(idx, l), v(y)),
            Len(x, idx) => Len(b(x), self.vs(idx, l)),
            Alloc { buf, dims, init } => Alloc {
                buf: b(buf),
                dims: self.vs(dims, l),
                init: match init {
                    AllocInit::Fill(y) => AllocInit::Fill(v(y)),
                    AllocInit::Copy(src) => AllocInit::Copy(b(src)),
                    AllocInit::Row { tape, idx } => AllocInit::Row {
                        tape: b(tape),
                        idx: v(idx),
                    },
                },
            },
            CopyFrom { dst, src } => CopyFrom {
                dst: b(dst),
                src: b(src),
            },
            Swap(x, y) => Swap(b(x), b(y)),
            AddBuf { dst, src } => AddBuf {
                dst: b(dst),
                src: b(src),
            },
            ZeroBuf(x) => ZeroBuf(b(x)),
            SumBuf(x) => SumBuf(b(x)),
            Assert { cond, message } => Assert {
                cond: v(cond),
                message: message.clone(),
            },
            Fail { cond, site, args } => Fail {
                cond: v(cond),
                site: *site,
                args: args.iter().map(v).collect(),
            },
            CellDecl(x, y) => CellDecl(c(x), v(y)),
            CellGet(x) => CellGet(c(x)),
            CellSet(x, y) => CellSet(c(x), v(y)),
            CellAdd(x, y) => CellAdd(c(x), v(y)),
            TapeEnsure(x, n) => TapeEnsure(b(x), v(n)),
            TapeEnsureRow(x, r, n) => TapeEnsureRow(b(x), v(r), v(n)),
            SaveRow {
                tape,
                idx,
                src,
                row,
            } => SaveRow {
                tape: b(tape),
                idx: v(idx),
                src: b(src),
                row: row.map(|r| v(&r)),
            },
            ReturnRow { tape, idx, src } => ReturnRow {
                tape: b(tape),
                idx: v(idx),
                src: b(src),
            },
            Call {
                callee,
                args,
                suffix: CallSuffix::Rev { shadows, seed },
            } => {
                let arg = |a: &CallArg| match a {
                    CallArg::Scalar(x) => CallArg::Scalar(v(x)),
                    CallArg::Buf {
                        buf,
                        mutable,
                        range,
                    } => CallArg::Buf {
                        buf: b(buf),
                        mutable: *mutable,
                        range: range.map(|p| p.map(|x| v(&x))),
                    },
                    CallArg::Opaque(t) => CallArg::Opaque(t.clone()),
                };
                Call {
                    callee: callee.clone(),
                    args: args.iter().map(arg).collect(),
                    suffix: CallSuffix::Rev {
                        shadows: shadows.iter().map(|a| a.as_ref().map(arg)).collect(),
                        seed: seed.as_ref().map(v),
                    },
                }
            }
            other => unreachable!("batch: lane copy of {other:?}"),
        }
    }

    fn new_value(f: &mut Function, like: Value, def: ValueDef) -> Value {
        let d = f.value(like).clone();
        f.new_value(d.ty, def, d.name)
    }

    /// Rewrites block `blk` of `f` (a copy of the scalar program) with its lane copies.
    fn block(&mut self, f: &mut Function, blk: Block) {
        let insts = f.block(blk).insts.clone();
        let mut out = Vec::with_capacity(insts.len());
        for i in insts {
            out.push(i);
            match f.inst(i).kind.clone() {
                InstKind::If {
                    then_blk, else_blk, ..
                } => {
                    self.block(f, then_blk);
                    self.block(f, else_blk);
                    let results = f.inst(i).results.clone();
                    let lanes_of: Vec<usize> = (0..results.len())
                        .filter(|&k| self.t.v(results[k]))
                        .collect();
                    for l in 1..self.width {
                        for &k in &lanes_of {
                            let pos = f.inst(i).results.len() as u32;
                            let nv = Self::new_value(f, results[k], ValueDef::Result(i, pos));
                            f.insts[i.index()].results.push(nv);
                            self.vals
                                .entry(results[k])
                                .or_insert_with(|| vec![results[k]])
                                .push(nv);
                            for side in [then_blk, else_blk] {
                                let y = self.v(f.block(side).yields[k], l);
                                f.blocks[side.index()].yields.push(y);
                            }
                        }
                    }
                }
                InstKind::For { params, body, .. } | InstKind::While { params, body, .. } => {
                    let lanes_of: Vec<usize> =
                        (0..params.len()).filter(|&k| self.t.v(params[k])).collect();
                    let mut new_params = Vec::new();
                    for l in 1..self.width {
                        for &k in &lanes_of {
                            let pos = (params.len() + new_params.len()) as u32;
                            let np = Self::new_value(f, params[k], ValueDef::LoopParam(i, pos));
                            self.vals
                                .entry(params[k])
                                .or_insert_with(|| vec![params[k]])
                                .push(np);
                            new_params.push((k, l, np));
                        }
                    }
                    if let InstKind::While { cond, .. } = f.inst(i).kind {
                        self.block(f, cond);
                    }
                    self.block(f, body);
                    let trip = f.insts[i.index()].results.pop().expect("trip count");
                    for &(k, l, np) in &new_params {
                        let old_result = f.inst(i).results[k];
                        let pos = f.inst(i).results.len() as u32;
                        let nr = Self::new_value(f, old_result, ValueDef::Result(i, pos));
                        f.insts[i.index()].results.push(nr);
                        self.vals
                            .entry(old_result)
                            .or_insert_with(|| vec![old_result])
                            .push(nr);
                        let y = self.v(f.block(body).yields[k], l);
                        f.blocks[body.index()].yields.push(y);
                        let (InstKind::For { params, inits, .. }
                        | InstKind::While { params, inits, .. }) = &mut f.insts[i.index()].kind
                        else {
                            unreachable!("a loop")
                        };
                        params.push(np);
                        // The loop's inits are defined before it: their lanes exist.
                        let init = inits[k];
                        let lane_init = match self.vals.get(&init) {
                            Some(lanes) => lanes[l],
                            None => init,
                        };
                        inits.push(lane_init);
                    }
                    let pos = f.inst(i).results.len() as u32;
                    f.values[trip.index()].def = ValueDef::Result(i, pos);
                    f.insts[i.index()].results.push(trip);
                }
                _ => {
                    if !self.is_adjoint(f, i) {
                        continue;
                    }
                    let data = f.inst(i).clone();
                    for l in 1..self.width {
                        let kind = self.copy_kind(&data.kind, l);
                        let ni = Inst(f.insts.len() as u32);
                        f.insts.push(InstData {
                            kind,
                            results: Vec::new(),
                            span: data.span,
                        });
                        for (k, r) in data.results.iter().enumerate() {
                            let nv = Self::new_value(f, *r, ValueDef::Result(ni, k as u32));
                            f.insts[ni.index()].results.push(nv);
                            self.vals.entry(*r).or_insert_with(|| vec![*r]).push(nv);
                        }
                        out.push(ni);
                    }
                }
            }
        }
        f.blocks[blk.index()].insts = out;
    }
}

/// The batched program of reverse program `f` (or forward program, `forward`) with
/// `width` lanes. `shadow_params` are the indices of its shadow (or tangent buffer)
/// parameters, `seeds` those of its seed (or scalar tangents); `scalar_derivatives` is how
/// many of the body's last yields are scalar adjoints (or the tangent result; the others,
/// the value, are shared).
pub fn batch(
    f: &Function,
    width: usize,
    shadow_params: &[usize],
    seeds: &[usize],
    scalar_derivatives: usize,
    at: Span,
    forward: bool,
) -> Result<Batched, syn::Error> {
    let t = Taint::of(f, seeds, shadow_params);
    check(f, &t, at, forward)?;
    let mut g = f.clone();
    let mut taken: HashSet<String> = f.params.iter().map(|p| p.name.clone()).collect();
    let mut lanes = Vec::new();
    let mut cx = Lanes {
        t: &t,
        width,
        vals: HashMap::new(),
        cells: HashMap::new(),
        bufs: HashMap::new(),
        seeds: HashMap::new(),
    };
    // Lane parameters: the shadows and the seeds, in parameter order.
    let mut with_lanes: Vec<usize> = shadow_params.to_vec();
    with_lanes.extend(seeds);
    with_lanes.sort_unstable();
    for n in with_lanes {
        let p = f.params[n].clone();
        let mut names = Vec::new();
        let mut idx = Vec::new();
        if let ParamKind::Buffer { buf, .. } = &p.kind {
            cx.bufs.insert(*buf, vec![*buf]);
        }
        for l in 1..width {
            let name = lane_name(&p.name, l, &taken);
            taken.insert(name.clone());
            let kind = match &p.kind {
                ParamKind::Buffer { buf, mutable } => {
                    let nb = g.new_buf(BufData {
                        name: name.clone(),
                        kind: BufKind::Param(g.params.len()),
                        ..f.buf(*buf).clone()
                    });
                    cx.bufs.get_mut(buf).expect("lane 0").push(nb);
                    ParamKind::Buffer {
                        buf: nb,
                        mutable: *mutable,
                    }
                }
                k => k.clone(),
            };
            idx.push(g.params.len());
            g.params.push(ParamInfo {
                name: name.clone(),
                kind,
                span: p.span,
            });
            names.push(name);
        }
        if seeds.contains(&n) {
            cx.seeds.insert(n, idx);
        }
        lanes.push((n, names));
    }
    // Lane copies of the other buffers and of the cells that carry adjoints.
    let mut bufs: Vec<Buf> = t.bufs.iter().copied().collect();
    bufs.sort();
    for b in bufs {
        if cx.bufs.contains_key(&b) {
            continue;
        }
        if let BufKind::Param(n) = f.buf(b).kind {
            return Err(syn::Error::new(
                at,
                format!(
                    "phidiff internal error: `{}(width = N)` found a derivative stored into parameter `{}`",
                    if forward { "forward" } else { "reverse" },
                    f.params[n].name
                ),
            ));
        }
        let mut v = vec![b];
        for l in 1..width {
            let data = f.buf(b).clone();
            v.push(g.new_buf(BufData {
                name: format!("{}_l{l}", data.name),
                ..data
            }));
        }
        cx.bufs.insert(b, v);
    }
    // Groups whose lanes are only element accesses are stored interleaved: lane `l` of
    // element `i` next to lane `l + 1`, one pointer for all lanes, lanes a vector.
    for (&b, group) in &cx.bufs {
        if width > 1 && interleavable(f, &t, b) {
            for (lane, &lb) in group.iter().enumerate() {
                let head = group[0];
                g.interleaved.insert(lb, Interleaved { head, lane, width });
            }
        }
    }
    let mut cells: Vec<Cell> = t.cells.iter().copied().collect();
    cells.sort();
    for c in cells {
        let mut v = vec![c];
        for l in 1..width {
            let data = f.cells[c.index()].clone();
            v.push(g.new_cell(data.ty, format!("{}_l{l}", data.name)));
        }
        cx.cells.insert(c, v);
    }
    let body = g.body;
    cx.block(&mut g, body);
    let ys = g.block(body).yields.clone();
    let first_adjoint = ys.len() - scalar_derivatives;
    let mut yields = ys.clone();
    for l in 1..width {
        for y in &ys[first_adjoint..] {
            yields.push(cx.v(*y, l));
        }
    }
    g.blocks[body.index()].yields = yields;
    Ok(Batched { func: g, lanes })
}

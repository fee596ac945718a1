//! An interpreter of IR functions over `f64`, so that primal, tangent and adjoint programs
//! can be run and checked (finite differences, the dot-product identity) in plain unit
//! tests, without rustc. Each instruction means exactly what the Rust that codegen emits
//! for it means; where that Rust would panic (index out of bounds, integer overflow, a
//! failed `assert!`), `run` returns an error instead.
//!
//! The interpreter is also strict where rustc would be: a value whose run-time type differs
//! from its declared `Ty`, a write to a parameter buffer that is not `&mut`, or a read of a
//! buffer before its allocation is an error, so IR bugs surface here and not as wrong
//! numbers.

use super::*;

/// A scalar at run time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RtVal {
    F(f64),
    I(i64),
    B(bool),
}

impl RtVal {
    pub fn ty(self) -> Ty {
        match self {
            RtVal::F(_) => Ty::Float,
            RtVal::I(_) => Ty::Int,
            RtVal::B(_) => Ty::Bool,
        }
    }
    pub fn as_float(self) -> Option<f64> {
        match self {
            RtVal::F(x) => Some(x),
            _ => None,
        }
    }
    pub fn as_int(self) -> Option<i64> {
        match self {
            RtVal::I(x) => Some(x),
            _ => None,
        }
    }
    pub fn as_bool(self) -> Option<bool> {
        match self {
            RtVal::B(x) => Some(x),
            _ => None,
        }
    }
    /// The zero of `ty`: `0.0`, `0` or `false` (what tapes and `ZeroBuf` fill with).
    pub fn zero(ty: Ty) -> RtVal {
        match ty {
            Ty::Float => RtVal::F(0.0),
            Ty::Int => RtVal::I(0),
            Ty::Bool => RtVal::B(false),
        }
    }
}

/// One argument of `run`, in the order of `Function::params`.
#[derive(Clone, Debug, PartialEq)]
pub enum RtArg {
    Scalar(RtVal),
    /// A rank-1 float buffer (`&[f64]`, `&mut [f64]`, `Vec<f64>`).
    Buf(Vec<f64>),
    /// A rank-2 float buffer (`&[Vec<f64>]`, `[[f64; N]; M]`).
    Buf2(Vec<Vec<f64>>),
    /// A rank-1 integer buffer.
    IntBuf(Vec<i64>),
    /// A constant the compiler does not model (`&Comm`, a struct).
    Opaque,
}

/// Loop iterations (bodies of `for` and `while`, all loops together) after which `run`
/// gives up on a runaway program.
pub const ITERATION_BUDGET: u64 = 10_000_000;

/// The most elements one allocation or tape may hold, so a bad size fails instead of
/// exhausting memory.
const MAX_ELEMENTS: usize = 1 << 24;

/// Runs `f` with one argument per `f.params`; buffers passed as `&mut` params are updated in
/// place in `args` (only when the run succeeds). Returns the values yielded by the body
/// block (the function's return values).
pub fn run(f: &Function, args: &mut [RtArg]) -> Result<Vec<RtVal>, String> {
    run_with_budget(f, args, ITERATION_BUDGET)
}

/// `run` with a chosen loop-iteration budget.
pub fn run_with_budget(f: &Function, args: &mut [RtArg], max_iterations: u64) -> Result<Vec<RtVal>, String> {
    let mut m = Machine::enter(f, args, max_iterations)?;
    let results = m.block(f.body)?;
    m.write_back(args)?;
    Ok(results)
}

/// A buffer's contents: rows of run-time scalars, so one representation serves floats,
/// integers and booleans.
#[derive(Clone, Debug)]
enum Storage {
    R1(Vec<RtVal>),
    R2(Vec<Vec<RtVal>>),
}

impl Storage {
    fn len(&self) -> usize {
        match self {
            Storage::R1(v) => v.len(),
            Storage::R2(v) => v.len(),
        }
    }
    fn elements_mut(&mut self) -> Box<dyn Iterator<Item = &mut RtVal> + '_> {
        match self {
            Storage::R1(v) => Box::new(v.iter_mut()),
            Storage::R2(v) => Box::new(v.iter_mut().flatten()),
        }
    }
    fn elements(&self) -> Box<dyn Iterator<Item = &RtVal> + '_> {
        match self {
            Storage::R1(v) => Box::new(v.iter()),
            Storage::R2(v) => Box::new(v.iter().flatten()),
        }
    }
    /// Row lengths (one entry for rank 1): two buffers of one shape have equal shapes.
    fn shape(&self) -> Vec<usize> {
        match self {
            Storage::R1(v) => vec![v.len()],
            Storage::R2(v) => std::iter::once(v.len()).chain(v.iter().map(Vec::len)).collect(),
        }
    }
}

/// What one instruction produced; a single result needs no allocation.
#[derive(Debug)]
enum Out {
    Zero,
    One(RtVal),
    Many(Vec<RtVal>),
}

/// The state of one run: a slot per value, buffer and cell.
struct Machine<'f> {
    f: &'f Function,
    scalar_args: Vec<Option<RtVal>>,
    vals: Vec<Option<RtVal>>,
    bufs: Vec<Option<Storage>>,
    cells: Vec<Option<RtVal>>,
    iterations: u64,
    max_iterations: u64,
}

impl<'f> Machine<'f> {
    /// Binds the arguments: scalars to their parameters, buffers to their storage; tapes
    /// start empty, local and shadow buffers unallocated.
    fn enter(f: &'f Function, args: &[RtArg], max_iterations: u64) -> Result<Self, String> {
        if args.len() != f.params.len() {
            return Err(format!("{} takes {} arguments, got {}", f.name, f.params.len(), args.len()));
        }
        let mut m = Machine {
            f,
            scalar_args: vec![None; args.len()],
            vals: vec![None; f.values.len()],
            bufs: vec![None; f.bufs.len()],
            cells: vec![None; f.cells.len()],
            iterations: 0,
            max_iterations,
        };
        for (n, (p, a)) in f.params.iter().zip(args).enumerate() {
            match (&p.kind, a) {
                (ParamKind::Scalar(ty), RtArg::Scalar(v)) if v.ty() == *ty => m.scalar_args[n] = Some(*v),
                (ParamKind::Buffer { buf, .. }, _) => {
                    if f.buf(*buf).kind != BufKind::Param(n) {
                        return Err(format!(
                            "parameter {n} ({}) is {}, whose kind is {:?}",
                            p.name,
                            m.name(*buf),
                            f.buf(*buf).kind
                        ));
                    }
                    m.bufs[buf.index()] = Some(m.storage_of_arg(*buf, a)?);
                }
                (ParamKind::Opaque, RtArg::Opaque) => {}
                (kind, a) => return Err(format!("argument {n} ({}): expected {kind:?}, got {a:?}", p.name)),
            }
        }
        for (n, data) in f.bufs.iter().enumerate() {
            match data.kind {
                BufKind::Tape => {
                    m.bufs[n] = Some(if data.rank == 1 { Storage::R1(Vec::new()) } else { Storage::R2(Vec::new()) })
                }
                BufKind::Param(p) if m.bufs[n].is_none() => {
                    return Err(format!("{} claims parameter {p}, which does not pass it", m.name(Buf(n as u32))));
                }
                _ => {}
            }
        }
        Ok(m)
    }

    fn storage_of_arg(&self, buf: Buf, a: &RtArg) -> Result<Storage, String> {
        let data = self.f.buf(buf);
        Ok(match (data.rank, data.elem, a) {
            (1, Ty::Float, RtArg::Buf(v)) => Storage::R1(v.iter().map(|&x| RtVal::F(x)).collect()),
            (1, Ty::Int, RtArg::IntBuf(v)) => Storage::R1(v.iter().map(|&x| RtVal::I(x)).collect()),
            (2, Ty::Float, RtArg::Buf2(v)) => {
                Storage::R2(v.iter().map(|row| row.iter().map(|&x| RtVal::F(x)).collect()).collect())
            }
            (rank, elem, a) => {
                return Err(format!("{} is rank {rank} of {elem:?}; the argument is {a:?}", self.name(buf)))
            }
        })
    }

    /// Copies every `&mut` parameter buffer back into its argument.
    fn write_back(&self, args: &mut [RtArg]) -> Result<(), String> {
        for (n, p) in self.f.params.iter().enumerate() {
            let ParamKind::Buffer { buf, mutable: true } = p.kind else {
                continue;
            };
            let storage = self.storage(buf)?;
            let float = |v: &RtVal| v.as_float().ok_or_else(|| format!("{} holds {v:?}", self.name(buf)));
            args[n] = match (&args[n], storage) {
                (RtArg::Buf(_), Storage::R1(v)) => RtArg::Buf(v.iter().map(float).collect::<Result<_, _>>()?),
                (RtArg::IntBuf(_), Storage::R1(v)) => RtArg::IntBuf(
                    v.iter()
                        .map(|x| x.as_int().ok_or_else(|| format!("{} holds {x:?}", self.name(buf))))
                        .collect::<Result<_, _>>()?,
                ),
                (RtArg::Buf2(_), Storage::R2(v)) => RtArg::Buf2(
                    v.iter().map(|row| row.iter().map(float).collect::<Result<_, _>>()).collect::<Result<_, _>>()?,
                ),
                (a, _) => return Err(format!("{} no longer matches its argument {a:?}", self.name(buf))),
            };
        }
        Ok(())
    }

    fn name(&self, b: Buf) -> String {
        buf_name(self.f, b)
    }

    fn get(&self, v: Value) -> Result<RtVal, String> {
        match self.vals.get(v.index()) {
            Some(Some(x)) => Ok(*x),
            _ => Err(format!("{v} is read before it is defined")),
        }
    }

    fn int(&self, v: Value) -> Result<i64, String> {
        match self.get(v)? {
            RtVal::I(x) => Ok(x),
            other => Err(format!("{v} is {other:?}, expected an integer")),
        }
    }

    fn bool(&self, v: Value) -> Result<bool, String> {
        match self.get(v)? {
            RtVal::B(x) => Ok(x),
            other => Err(format!("{v} is {other:?}, expected a bool")),
        }
    }

    /// Binds `v`, checking the run-time type against the declared one.
    fn define(&mut self, v: Value, x: RtVal) -> Result<(), String> {
        let declared = self.f.ty(v);
        if x.ty() != declared {
            return Err(format!("{v} is declared {declared:?} but gets {x:?}"));
        }
        self.vals[v.index()] = Some(x);
        Ok(())
    }

    fn storage(&self, b: Buf) -> Result<&Storage, String> {
        self.bufs[b.index()].as_ref().ok_or_else(|| format!("{} is used before it is allocated", self.name(b)))
    }

    /// The storage of `b` for writing: parameter buffers are writable only when `&mut`.
    fn storage_mut(&mut self, b: Buf) -> Result<&mut Storage, String> {
        let f = self.f;
        if let BufKind::Param(n) = f.buf(b).kind {
            if !matches!(f.params[n].kind, ParamKind::Buffer { mutable: true, .. }) {
                return Err(format!("{} is a read-only parameter and cannot be written", buf_name(f, b)));
            }
        }
        self.bufs[b.index()].as_mut().ok_or_else(|| format!("{} is used before it is allocated", buf_name(f, b)))
    }

    /// The indices `idx` as `usize`s (the first `len` of the array; ranks are at most 2).
    fn index(&self, b: Buf, idx: &[Value], exact: bool) -> Result<([usize; 2], usize), String> {
        let rank = self.f.buf(b).rank as usize;
        if idx.len() > rank.min(2) || (exact && idx.len() != rank) {
            return Err(format!("{} indices into {} of rank {rank}", idx.len(), self.name(b)));
        }
        let mut out = [0; 2];
        for (slot, &v) in out.iter_mut().zip(idx) {
            let i = self.int(v)?;
            *slot = usize::try_from(i).map_err(|_| format!("negative index {i} into {}", self.name(b)))?;
        }
        Ok((out, idx.len()))
    }

    fn element(&mut self, b: Buf, idx: &[usize], write: bool) -> Result<&mut RtVal, String> {
        let f = self.f;
        let oob = |i: usize, len: usize| format!("index {i} out of bounds for {} of length {len}", buf_name(f, b));
        let storage = if write {
            self.storage_mut(b)?
        } else {
            self.bufs[b.index()].as_mut().ok_or_else(|| format!("{} is used before it is allocated", buf_name(f, b)))?
        };
        match (storage, idx) {
            (Storage::R1(v), [i]) => {
                let len = v.len();
                v.get_mut(*i).ok_or_else(|| oob(*i, len))
            }
            (Storage::R2(v), [i, j]) => {
                let len = v.len();
                let row = v.get_mut(*i).ok_or_else(|| oob(*i, len))?;
                let row_len = row.len();
                row.get_mut(*j).ok_or_else(|| {
                    format!("index [{i}][{j}] out of bounds for {}: row of length {row_len}", buf_name(f, b))
                })
            }
            _ => Err(format!("{} indices into {}", idx.len(), buf_name(f, b))),
        }
    }

    fn check_elem(&self, b: Buf, x: RtVal) -> Result<(), String> {
        let elem = self.f.buf(b).elem;
        if x.ty() != elem {
            return Err(format!("{} holds {elem:?}, not {x:?}", self.name(b)));
        }
        Ok(())
    }

    fn tick(&mut self) -> Result<(), String> {
        self.iterations += 1;
        if self.iterations > self.max_iterations {
            return Err(format!("more than {} loop iterations: a runaway loop?", self.max_iterations));
        }
        Ok(())
    }

    /// Runs the instructions of `b` and returns its yields.
    fn block(&mut self, b: Block) -> Result<Vec<RtVal>, String> {
        for &i in &self.f.block(b).insts {
            self.inst(i).map_err(|e| if is_located(&e) { e } else { format!("{i}: {e}") })?;
        }
        self.f.block(b).yields.iter().map(|&v| self.get(v)).collect()
    }

    fn inst(&mut self, i: Inst) -> Result<(), String> {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let out = match &data.kind {
            FConst(c) => Out::One(RtVal::F(*c)),
            IConst(c) => {
                Out::One(RtVal::I(i64::try_from(*c).map_err(|_| format!("integer constant {c} does not fit i64"))?))
            }
            BConst(c) => Out::One(RtVal::B(*c)),
            Param(n) => Out::One(
                self.scalar_args.get(*n).copied().flatten().ok_or_else(|| format!("parameter {n} is not a scalar"))?,
            ),
            SaveRow { .. } => return Err("the interpreter does not run call snapshots".into()),
            Unary(op, a) => Out::One(unary(*op, self.get(*a)?)?),
            Binary(op, a, b) => Out::One(binary(*op, self.get(*a)?, self.get(*b)?)?),
            Math(name, args) => {
                // Float methods take at most three arguments (`mul_add`).
                let mut xs = [RtVal::F(0.0); 3];
                if args.len() > xs.len() {
                    return Err(format!("`{name}` with {} arguments", args.len()));
                }
                for (x, &a) in xs.iter_mut().zip(args) {
                    *x = self.get(a)?;
                }
                Out::One(math(name, &xs[..args.len()])?)
            }
            Cast { value, to, rust_ty } => Out::One(cast(self.get(*value)?, *to, rust_ty.as_deref())?),
            Load(b, idx) => {
                let (ix, len) = self.index(*b, idx, true)?;
                Out::One(*self.element(*b, &ix[..len], false)?)
            }
            Store(b, idx, v) => {
                let x = self.get(*v)?;
                self.check_elem(*b, x)?;
                let (ix, len) = self.index(*b, idx, true)?;
                *self.element(*b, &ix[..len], true)? = x;
                Out::Zero
            }
            StoreAdd(b, idx, v) => {
                let x = self.get(*v)?;
                let (ix, len) = self.index(*b, idx, true)?;
                let slot = self.element(*b, &ix[..len], true)?;
                *slot = binary(BinOp::Add, *slot, x)?;
                Out::Zero
            }
            Len(b, idx) => {
                let (ix, n_ix) = self.index(*b, idx, false)?;
                let len = match (self.storage(*b)?, &ix[..n_ix]) {
                    (s, []) => s.len(),
                    (Storage::R2(rows), [r]) => rows
                        .get(*r)
                        .ok_or_else(|| {
                            format!("index {r} out of bounds for {} of length {}", self.name(*b), rows.len())
                        })?
                        .len(),
                    _ => return Err(format!("bad len of {}", self.name(*b))),
                };
                Out::One(RtVal::I(len as i64))
            }
            Alloc { buf, dims, init } => {
                self.alloc(*buf, dims, init)?;
                Out::Zero
            }
            CopyFrom { dst, src } => {
                let from = self.storage(*src)?.clone();
                let name = (self.name(*dst), self.name(*src));
                let to = self.storage_mut(*dst)?;
                if to.shape() != from.shape() {
                    return Err(format!(
                        "copy from {} of shape {:?} into {} of shape {:?}",
                        name.1,
                        from.shape(),
                        name.0,
                        to.shape()
                    ));
                }
                *to = from;
                Out::Zero
            }
            Swap(a, b) => {
                self.swap(*a, *b)?;
                Out::Zero
            }
            AddBuf { dst, src } => {
                let from = self.storage(*src)?.clone();
                let name = (self.name(*dst), self.name(*src));
                let to = self.storage_mut(*dst)?;
                if to.shape() != from.shape() {
                    return Err(format!(
                        "add {} of shape {:?} into {} of shape {:?}",
                        name.1,
                        from.shape(),
                        name.0,
                        to.shape()
                    ));
                }
                for (d, s) in to.elements_mut().zip(from.elements()) {
                    *d = binary(BinOp::Add, *d, *s)?;
                }
                Out::Zero
            }
            ZeroBuf(b) => {
                let zero = RtVal::zero(f.buf(*b).elem);
                self.storage_mut(*b)?.elements_mut().for_each(|x| *x = zero);
                Out::Zero
            }
            SumBuf(b) => {
                let mut sum = 0.0;
                for x in self.storage(*b)?.elements() {
                    sum += x.as_float().ok_or_else(|| format!("sum of {} holding {x:?}", self.name(*b)))?;
                }
                Out::One(RtVal::F(sum))
            }
            Assert { cond, message } => {
                if !self.bool(*cond)? {
                    return Err(format!("assertion failed: {message}"));
                }
                Out::Zero
            }
            If { cond, then_blk, else_blk } => {
                let blk = if self.bool(*cond)? { *then_blk } else { *else_blk };
                Out::Many(self.block(blk)?)
            }
            For { range, index, params, inits, body, exit } => {
                Out::Many(self.for_loop(range, *index, params, inits, *body, exit)?)
            }
            While { cond, params, inits, body, exit } => Out::Many(self.while_loop(*cond, params, inits, *body, exit)?),
            CellDecl(c, v) | CellSet(c, v) => {
                let x = self.get(*v)?;
                let ty = f.cells[c.index()].ty;
                if x.ty() != ty {
                    return Err(format!("cell {c} holds {ty:?}, not {x:?}"));
                }
                if matches!(data.kind, CellSet(..)) && self.cells[c.index()].is_none() {
                    return Err(format!("cell {c} is set before it is declared"));
                }
                self.cells[c.index()] = Some(x);
                Out::Zero
            }
            CellGet(c) => {
                Out::One(self.cells[c.index()].ok_or_else(|| format!("cell {c} is read before it is declared"))?)
            }
            CellAdd(c, v) => {
                let x = self.get(*v)?;
                let old = self.cells[c.index()].ok_or_else(|| format!("cell {c} is added to before it is declared"))?;
                self.cells[c.index()] = Some(binary(BinOp::Add, old, x)?);
                Out::Zero
            }
            TapeEnsure(b, len) => {
                let len = self.int(*len)?;
                let len = usize::try_from(len).map_err(|_| format!("negative length {len} for {}", self.name(*b)))?;
                if len > MAX_ELEMENTS {
                    return Err(format!("{} would grow to {len} slots", self.name(*b)));
                }
                let zero = RtVal::zero(f.buf(*b).elem);
                let name = self.name(*b);
                match self.storage_mut(*b)? {
                    Storage::R1(v) => {
                        if v.len() < len {
                            v.resize(len, zero)
                        }
                    }
                    Storage::R2(_) => return Err(format!("{name}: only rank-1 tapes grow")),
                }
                Out::Zero
            }
            Call { callee, .. } => return Err(format!("the interpreter does not run calls (`{}`)", callee.path)),
        };
        match (out, data.results.as_slice()) {
            (Out::Zero, []) => Ok(()),
            (Out::One(x), [r]) => self.define(*r, x),
            (Out::Many(xs), rs) if xs.len() == rs.len() => rs.iter().zip(xs).try_for_each(|(&r, x)| self.define(r, x)),
            (out, rs) => Err(format!("produced {out:?} for {} results", rs.len())),
        }
    }

    fn alloc(&mut self, buf: Buf, dims: &[Value], init: &AllocInit) -> Result<(), String> {
        let data = self.f.buf(buf);
        if let BufKind::Param(_) = data.kind {
            return Err(format!("{} is a parameter and cannot be reallocated", self.name(buf)));
        }
        let storage = match init {
            AllocInit::Row { .. } => return Err("the interpreter does not run call snapshots".into()),
            AllocInit::Fill(v) => {
                let x = self.get(*v)?;
                self.check_elem(buf, x)?;
                let dims = dims
                    .iter()
                    .map(|&d| {
                        let n = self.int(d)?;
                        usize::try_from(n).map_err(|_| format!("negative length {n} for {}", self.name(buf)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if dims.iter().product::<usize>() > MAX_ELEMENTS {
                    return Err(format!("{} would hold {dims:?} elements", self.name(buf)));
                }
                match (data.rank, dims.as_slice()) {
                    (1, [n]) => Storage::R1(vec![x; *n]),
                    (2, [n, m]) => Storage::R2(vec![vec![x; *m]; *n]),
                    (rank, _) => return Err(format!("{} dims for {} of rank {rank}", dims.len(), self.name(buf))),
                }
            }
            AllocInit::Copy(src) => {
                let (s, d) = (self.f.buf(*src), data);
                if (s.rank, s.elem) != (d.rank, d.elem) {
                    return Err(format!("{} is a copy of {} of another rank or type", self.name(buf), self.name(*src)));
                }
                self.storage(*src)?.clone()
            }
        };
        self.bufs[buf.index()] = Some(storage);
        Ok(())
    }

    fn swap(&mut self, a: Buf, b: Buf) -> Result<(), String> {
        let (da, db) = (self.f.buf(a), self.f.buf(b));
        if (da.rank, da.elem) != (db.rank, db.elem) {
            return Err(format!("swap of {} and {} of another rank or type", self.name(a), self.name(b)));
        }
        let sa = self.storage_mut(a)?.clone();
        let sb = self.storage_mut(b)?.clone();
        // A parameter is the caller's slice: swapping can exchange its contents, not its length.
        let is_param = |d: &BufData| matches!(d.kind, BufKind::Param(_));
        if (is_param(da) || is_param(db)) && sa.shape() != sb.shape() {
            return Err(format!("swap of {} and {} of different shapes", self.name(a), self.name(b)));
        }
        self.bufs[a.index()] = Some(sb);
        self.bufs[b.index()] = Some(sa);
        Ok(())
    }

    /// Binds the header parameters of a loop to the carried state.
    fn bind(&mut self, params: &[Value], state: &[RtVal]) -> Result<(), String> {
        params.iter().zip(state).try_for_each(|(&p, &x)| self.define(p, x))
    }

    /// Whether an `exit` flag is set in the carried state.
    fn exits(&self, params: &[Value], exit: &[Value], state: &[RtVal]) -> Result<bool, String> {
        for e in exit {
            let k =
                params.iter().position(|p| p == e).ok_or_else(|| format!("exit flag {e} is not a loop parameter"))?;
            match state[k] {
                RtVal::B(true) => return Ok(true),
                RtVal::B(false) => {}
                other => return Err(format!("exit flag {e} is {other:?}")),
            }
        }
        Ok(false)
    }

    /// One iteration: counts it against the budget, runs the body, returns the new state.
    fn loop_body(&mut self, body: Block, params: &[Value]) -> Result<Vec<RtVal>, String> {
        self.tick()?;
        let next = self.block(body)?;
        if next.len() != params.len() {
            return Err(format!("loop body yields {} values for {} params", next.len(), params.len()));
        }
        Ok(next)
    }

    /// `(start..end)`, reversed if `rev`, then `.step_by(step)`. Results: the final
    /// parameters, then the trip count.
    fn for_loop(
        &mut self,
        range: &RangeSpec,
        index: Value,
        params: &[Value],
        inits: &[Value],
        body: Block,
        exit: &[Value],
    ) -> Result<Vec<RtVal>, String> {
        let (start, end) = (self.int(range.start)? as i128, self.int(range.end)? as i128);
        let step = match range.step {
            Some(s) => match self.int(s)? {
                s if s > 0 => s as i128,
                s => return Err(format!("step_by({s}): the step must be positive")),
            },
            None => 1,
        };
        let len = (end - start).max(0);
        let mut state = inits.iter().map(|&v| self.get(v)).collect::<Result<Vec<_>, _>>()?;
        let mut trips: i64 = 0;
        let mut offset: i128 = 0;
        while offset < len && !self.exits(params, exit, &state)? {
            let i = if range.rev { end - 1 - offset } else { start + offset };
            self.define(index, RtVal::I(i as i64))?;
            self.bind(params, &state)?;
            state = self.loop_body(body, params)?;
            trips += 1;
            offset += step;
        }
        state.push(RtVal::I(trips));
        Ok(state)
    }

    fn while_loop(
        &mut self,
        cond: Block,
        params: &[Value],
        inits: &[Value],
        body: Block,
        exit: &[Value],
    ) -> Result<Vec<RtVal>, String> {
        let mut state = inits.iter().map(|&v| self.get(v)).collect::<Result<Vec<_>, _>>()?;
        let mut trips: i64 = 0;
        while !self.exits(params, exit, &state)? {
            self.bind(params, &state)?;
            match self.block(cond)?.as_slice() {
                [RtVal::B(true)] => {}
                [RtVal::B(false)] => break,
                other => return Err(format!("a while condition yields {other:?}")),
            }
            state = self.loop_body(body, params)?;
            trips += 1;
        }
        state.push(RtVal::I(trips));
        Ok(state)
    }
}

/// `buf2 (w)`: how errors name a buffer.
fn buf_name(f: &Function, b: Buf) -> String {
    format!("{b} ({})", f.buf(b).name)
}

/// Whether an error already names its instruction (`i12: ...`), as errors from nested
/// blocks do: the innermost instruction is the one to report.
fn is_located(e: &str) -> bool {
    let digits = e.strip_prefix('i').map(|r| r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len());
    matches!(digits, Some(d) if d > 0 && e[1 + d..].starts_with(':'))
}

fn unary(op: UnOp, a: RtVal) -> Result<RtVal, String> {
    Ok(match (op, a) {
        (UnOp::Neg, RtVal::F(x)) => RtVal::F(-x),
        (UnOp::Neg, RtVal::I(x)) => RtVal::I(x.checked_neg().ok_or("integer overflow in negation")?),
        (UnOp::Not, RtVal::B(x)) => RtVal::B(!x),
        (UnOp::Not, RtVal::I(x)) => RtVal::I(!x),
        (op, a) => return Err(format!("{op:?} of {a:?}")),
    })
}

fn binary(op: BinOp, a: RtVal, b: RtVal) -> Result<RtVal, String> {
    use BinOp::*;
    use RtVal::{B, F, I};
    let overflow = || format!("integer overflow in {a:?} {} {b:?}", op.symbol());
    Ok(match (a, b) {
        (F(x), F(y)) => match op {
            Add => F(x + y),
            Sub => F(x - y),
            Mul => F(x * y),
            Div => F(x / y),
            Rem => F(x % y),
            Lt => B(x < y),
            Le => B(x <= y),
            Gt => B(x > y),
            Ge => B(x >= y),
            Eq => B(x == y),
            Ne => B(x != y),
            And | Or => return Err(format!("`{}` of floats", op.symbol())),
        },
        (I(x), I(y)) => match op {
            Add => I(x.checked_add(y).ok_or_else(overflow)?),
            Sub => I(x.checked_sub(y).ok_or_else(overflow)?),
            Mul => I(x.checked_mul(y).ok_or_else(overflow)?),
            Div if y == 0 => return Err("integer division by zero".into()),
            Div => I(x.checked_div(y).ok_or_else(overflow)?),
            Rem if y == 0 => return Err("integer remainder by zero".into()),
            Rem => I(x.checked_rem(y).ok_or_else(overflow)?),
            Lt => B(x < y),
            Le => B(x <= y),
            Gt => B(x > y),
            Ge => B(x >= y),
            Eq => B(x == y),
            Ne => B(x != y),
            And | Or => return Err(format!("`{}` of integers", op.symbol())),
        },
        (B(x), B(y)) => match op {
            And => B(x && y),
            Or => B(x || y),
            Eq => B(x == y),
            Ne => B(x != y),
            Lt => B(!x & y),
            Le => B(x <= y),
            Gt => B(x & !y),
            Ge => B(x >= y),
            _ => return Err(format!("`{}` of bools", op.symbol())),
        },
        _ => return Err(format!("`{}` of {a:?} and {b:?}", op.symbol())),
    })
}

/// Float methods by name, receiver first (`atan2(y, x)` is `y.atan2(x)`).
pub fn math(name: &str, args: &[RtVal]) -> Result<RtVal, String> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("`{name}` takes {n} arguments, got {}", args.len()))
        }
    };
    let float =
        |k: usize| args[k].as_float().ok_or_else(|| format!("argument {k} of `{name}` is {:?}, not a float", args[k]));
    if let Some(op) = unary_method(name) {
        arity(1)?;
        return Ok(RtVal::F(op(float(0)?)));
    }
    if let Some(op) = binary_method(name) {
        arity(2)?;
        return Ok(RtVal::F(op(float(0)?, float(1)?)));
    }
    match name {
        "powi" => {
            arity(2)?;
            let n = args[1].as_int().ok_or_else(|| format!("the exponent of `powi` is {:?}", args[1]))?;
            let n = i32::try_from(n).map_err(|_| format!("the exponent {n} of `powi` does not fit i32"))?;
            Ok(RtVal::F(float(0)?.powi(n)))
        }
        "mul_add" => {
            arity(3)?;
            Ok(RtVal::F(float(0)?.mul_add(float(1)?, float(2)?)))
        }
        _ => Err(format!("unknown float method `{name}`")),
    }
}

/// One-argument float methods by name.
fn unary_method(name: &str) -> Option<fn(f64) -> f64> {
    match name {
        "sin" => Some(f64::sin),
        "cos" => Some(f64::cos),
        "tan" => Some(f64::tan),
        "asin" => Some(f64::asin),
        "acos" => Some(f64::acos),
        "atan" => Some(f64::atan),
        "sinh" => Some(f64::sinh),
        "cosh" => Some(f64::cosh),
        "tanh" => Some(f64::tanh),
        "asinh" => Some(f64::asinh),
        "acosh" => Some(f64::acosh),
        "atanh" => Some(f64::atanh),
        "exp" => Some(f64::exp),
        "exp2" => Some(f64::exp2),
        "exp_m1" => Some(f64::exp_m1),
        "ln" => Some(f64::ln),
        "log10" => Some(f64::log10),
        "log2" => Some(f64::log2),
        "ln_1p" => Some(f64::ln_1p),
        "sqrt" => Some(f64::sqrt),
        "cbrt" => Some(f64::cbrt),
        "abs" => Some(f64::abs),
        "signum" => Some(f64::signum),
        "recip" => Some(f64::recip),
        "floor" => Some(f64::floor),
        "ceil" => Some(f64::ceil),
        "round" => Some(f64::round),
        "trunc" => Some(f64::trunc),
        "fract" => Some(f64::fract),
        "to_degrees" => Some(f64::to_degrees),
        "to_radians" => Some(f64::to_radians),
        _ => None,
    }
}

/// Two-argument float methods by name (`powi` and `mul_add` are handled apart).
fn binary_method(name: &str) -> Option<fn(f64, f64) -> f64> {
    match name {
        "powf" => Some(f64::powf),
        "log" => Some(f64::log),
        "atan2" => Some(f64::atan2),
        "hypot" => Some(f64::hypot),
        "max" => Some(f64::max),
        "min" => Some(f64::min),
        "copysign" => Some(f64::copysign),
        _ => None,
    }
}

/// The range of a Rust integer type the interpreter can model (as `i128` bounds).
fn int_range(rust_ty: &str) -> Option<(i128, i128)> {
    Some(match rust_ty {
        "i8" => (i8::MIN as i128, i8::MAX as i128),
        "i16" => (i16::MIN as i128, i16::MAX as i128),
        "i32" => (i32::MIN as i128, i32::MAX as i128),
        "i64" | "isize" => (i64::MIN as i128, i64::MAX as i128),
        "u8" => (0, u8::MAX as i128),
        "u16" => (0, u16::MAX as i128),
        "u32" => (0, u32::MAX as i128),
        "u64" | "usize" => (0, u64::MAX as i128),
        _ => return None,
    })
}

fn fit_i64(x: i128) -> Result<RtVal, String> {
    i64::try_from(x).map(RtVal::I).map_err(|_| format!("cast result {x} does not fit the interpreter's i64"))
}

/// `as` casts: float→int truncates and saturates (NaN → 0), int→int wraps to the target
/// width, bool→int is 0 or 1. Without a known integer type the target is i64.
fn cast(v: RtVal, to: Ty, rust_ty: Option<&str>) -> Result<RtVal, String> {
    let range = rust_ty.and_then(int_range).unwrap_or((i64::MIN as i128, i64::MAX as i128));
    match (v, to) {
        (RtVal::I(x), Ty::Float) if rust_ty == Some("f32") => Ok(RtVal::F(x as f32 as f64)),
        (RtVal::I(x), Ty::Float) => Ok(RtVal::F(x as f64)),
        (RtVal::F(x), Ty::Float) if rust_ty == Some("f32") => Ok(RtVal::F(x as f32 as f64)),
        (RtVal::F(x), Ty::Float) => Ok(RtVal::F(x)),
        (RtVal::F(x), Ty::Int) => {
            let t = if x.is_nan() { 0.0 } else { x.trunc() };
            let clamped = if t <= range.0 as f64 {
                range.0
            } else if t >= range.1 as f64 {
                range.1
            } else {
                t as i128
            };
            fit_i64(clamped)
        }
        (RtVal::I(x), Ty::Int) => {
            let (lo, hi) = range;
            let width = hi - lo + 1;
            fit_i64((x as i128 - lo).rem_euclid(width) + lo)
        }
        (RtVal::B(b), Ty::Int) => Ok(RtVal::I(b as i64)),
        (RtVal::B(b), Ty::Bool) => Ok(RtVal::B(b)),
        (v, to) => Err(format!("cannot cast {v:?} to {to:?}")),
    }
}

#[cfg(test)]
mod tests;

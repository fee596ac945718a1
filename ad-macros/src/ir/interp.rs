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

mod buffers;
mod ops;

use super::*;
use buffers::{buf_name, Storage};
pub use ops::math;
use ops::{binary, cast, unary};

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
/// How a run that took a failure site (`Fail`) ends: this, then the site's number (after
/// the instructions it was inside).
pub const FAILED_AT: &str = "failed at site ";

/// `failed at site k` of the error of a run that took a failure site; `None` for other
/// errors.
pub fn failed_site(error: &str) -> Option<&str> {
    error.find(FAILED_AT).map(|at| &error[at..])
}

pub fn run(f: &Function, args: &mut [RtArg]) -> Result<Vec<RtVal>, String> {
    run_with_budget(f, args, ITERATION_BUDGET)
}

/// `run` with a chosen loop-iteration budget.
pub fn run_with_budget(
    f: &Function,
    args: &mut [RtArg],
    max_iterations: u64,
) -> Result<Vec<RtVal>, String> {
    let mut m = Machine::enter(f, args, max_iterations)?;
    let results = m.block(f.body);
    // A failure (`Fail`) returns from the function as `None`/`Err`: what it wrote through
    // its `&mut` parameters stays written, as in Rust.
    if results
        .as_ref()
        .map_or_else(|e| failed_site(e).is_some(), |_| true)
    {
        m.write_back(args)?;
    }
    results
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
            return Err(format!(
                "{} takes {} arguments, got {}",
                f.name,
                f.params.len(),
                args.len()
            ));
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
                (ParamKind::Scalar(ty), RtArg::Scalar(v)) if v.ty() == *ty => {
                    m.scalar_args[n] = Some(*v)
                }
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
                (kind, a) => {
                    return Err(format!(
                        "argument {n} ({}): expected {kind:?}, got {a:?}",
                        p.name
                    ))
                }
            }
        }
        for (n, data) in f.bufs.iter().enumerate() {
            match data.kind {
                BufKind::Tape => {
                    m.bufs[n] = Some(if data.rank == 1 {
                        Storage::R1(Vec::new())
                    } else {
                        Storage::R2(Vec::new())
                    })
                }
                BufKind::Param(p) if m.bufs[n].is_none() => {
                    return Err(format!(
                        "{} claims parameter {p}, which does not pass it",
                        m.name(Buf(n as u32))
                    ));
                }
                _ => {}
            }
        }
        Ok(m)
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

    fn tick(&mut self) -> Result<(), String> {
        self.iterations += 1;
        if self.iterations > self.max_iterations {
            return Err(format!(
                "more than {} loop iterations: a runaway loop?",
                self.max_iterations
            ));
        }
        Ok(())
    }

    /// Runs the instructions of `b` and returns its yields.
    fn block(&mut self, b: Block) -> Result<Vec<RtVal>, String> {
        for &i in &self.f.block(b).insts {
            self.inst(i).map_err(|e| {
                if is_located(&e) {
                    e
                } else {
                    format!("{i}: {e}")
                }
            })?;
        }
        self.f
            .block(b)
            .yields
            .iter()
            .map(|&v| self.get(v))
            .collect()
    }

    fn inst(&mut self, i: Inst) -> Result<(), String> {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let out = match &data.kind {
            FConst(c) => Out::One(RtVal::F(*c)),
            IConst(c) => Out::One(RtVal::I(
                i64::try_from(*c).map_err(|_| format!("integer constant {c} does not fit i64"))?,
            )),
            BConst(c) => Out::One(RtVal::B(*c)),
            Param(n) => Out::One(
                self.scalar_args
                    .get(*n)
                    .copied()
                    .flatten()
                    .ok_or_else(|| format!("parameter {n} is not a scalar"))?,
            ),
            SaveRow { tape, idx, src, .. } | ReturnRow { tape, idx, src } => {
                // The interpreter holds buffers of one or two dimensions.
                let part = match &f.inst(i).kind {
                    SaveRow { row, .. } => match row.as_slice() {
                        [] => None,
                        [r] => Some(self.int(*r)? as usize),
                        _ => return Err(format!("{}: a row of a 3-D buffer", self.name(*src))),
                    },
                    _ => None,
                };
                let row = self.int(*idx)? as usize;
                let copy: Vec<RtVal> = match (self.storage(*src)?, part) {
                    (buffers::Storage::R1(v), None) => v.clone(),
                    (buffers::Storage::R2(rows), Some(r)) if r < rows.len() => rows[r].clone(),
                    _ => return Err(format!("{}: a copy of a 2-D buffer", self.name(*src))),
                };
                let name = self.name(*tape);
                match self.storage_mut(*tape)? {
                    buffers::Storage::R2(rows) => {
                        if rows.len() <= row {
                            rows.resize(row + 1, Vec::new());
                        }
                        rows[row] = copy;
                    }
                    buffers::Storage::R1(_) => {
                        return Err(format!("{name}: rows of a rank-1 tape"))
                    }
                }
                Out::Zero
            }
            CkNew { .. } | CkForwardStep { .. } | CkEndForward { .. } | CkReverse { .. } => {
                return Err("the interpreter does not run checkpointed loops".into())
            }
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
            Cast {
                value,
                to,
                int,
                float,
            } => Out::One(match (cast(self.get(*value)?, *to, *int)?, float) {
                // A float rounded to `f32` stays a float of the interpreter's one type.
                (RtVal::F(x), Some(Prec::F32)) => RtVal::F(x as f32 as f64),
                (v, _) => v,
            }),
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
                            format!(
                                "index {r} out of bounds for {} of length {}",
                                self.name(*b),
                                rows.len()
                            )
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
                    sum += x
                        .as_float()
                        .ok_or_else(|| format!("sum of {} holding {x:?}", self.name(*b)))?;
                }
                Out::One(RtVal::F(sum))
            }
            Assert { cond, message } => {
                if !self.bool(*cond)? {
                    return Err(format!(
                        "assertion failed: {}",
                        message.0.to_string().trim_matches('"')
                    ));
                }
                Out::Zero
            }
            Fail { cond, site, .. } => {
                if self.bool(*cond)? {
                    return Err(format!("{FAILED_AT}{site}"));
                }
                Out::Zero
            }
            If {
                cond,
                then_blk,
                else_blk,
            } => {
                let blk = if self.bool(*cond)? {
                    *then_blk
                } else {
                    *else_blk
                };
                Out::Many(self.block(blk)?)
            }
            For {
                range,
                index,
                params,
                inits,
                body,
                exit,
            } => Out::Many(self.for_loop(range, *index, params, inits, *body, exit)?),
            While {
                cond,
                params,
                inits,
                body,
                exit,
            } => Out::Many(self.while_loop(*cond, params, inits, *body, exit)?),
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
            CellGet(c) => Out::One(
                self.cells[c.index()]
                    .ok_or_else(|| format!("cell {c} is read before it is declared"))?,
            ),
            CellAdd(c, v) => {
                let x = self.get(*v)?;
                let old = self.cells[c.index()]
                    .ok_or_else(|| format!("cell {c} is added to before it is declared"))?;
                self.cells[c.index()] = Some(binary(BinOp::Add, old, x)?);
                Out::Zero
            }
            TapeEnsure(b, len) => {
                let len = self.int(*len)?;
                let len = usize::try_from(len)
                    .map_err(|_| format!("negative length {len} for {}", self.name(*b)))?;
                if len > MAX_ELEMENTS {
                    return Err(format!("{} would grow to {len} slots", self.name(*b)));
                }
                let zero = RtVal::zero(f.buf(*b).elem);
                match self.storage_mut(*b)? {
                    Storage::R1(v) => {
                        if v.len() < len {
                            v.resize(len, zero)
                        }
                    }
                    Storage::R2(rows) => {
                        if rows.len() < len {
                            rows.resize(len, Vec::new())
                        }
                    }
                }
                Out::Zero
            }
            TapeEnsureRow(b, row, len) => {
                let (row, len) = (self.int(*row)? as usize, self.int(*len)? as usize);
                let zero = RtVal::zero(f.buf(*b).elem);
                let name = self.name(*b);
                match self.storage_mut(*b)? {
                    Storage::R2(rows) if row < rows.len() => {
                        if rows[row].len() < len {
                            rows[row].resize(len, zero)
                        }
                    }
                    _ => return Err(format!("{name}: no row {row} to grow")),
                }
                Out::Zero
            }
            Call { callee, .. } => {
                return Err(format!(
                    "the interpreter does not run calls (`{}`)",
                    callee.name()
                ))
            }
        };
        match (out, data.results.as_slice()) {
            (Out::Zero, []) => Ok(()),
            (Out::One(x), [r]) => self.define(*r, x),
            (Out::Many(xs), rs) if xs.len() == rs.len() => {
                rs.iter().zip(xs).try_for_each(|(&r, x)| self.define(r, x))
            }
            (out, rs) => Err(format!("produced {out:?} for {} results", rs.len())),
        }
    }

    /// Binds the header parameters of a loop to the carried state.
    fn bind(&mut self, params: &[Value], state: &[RtVal]) -> Result<(), String> {
        params
            .iter()
            .zip(state)
            .try_for_each(|(&p, &x)| self.define(p, x))
    }

    /// Whether an `exit` flag is set in the carried state.
    fn exits(&self, params: &[Value], exit: &[Value], state: &[RtVal]) -> Result<bool, String> {
        for e in exit {
            let k = params
                .iter()
                .position(|p| p == e)
                .ok_or_else(|| format!("exit flag {e} is not a loop parameter"))?;
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
            return Err(format!(
                "loop body yields {} values for {} params",
                next.len(),
                params.len()
            ));
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
        let mut state = inits
            .iter()
            .map(|&v| self.get(v))
            .collect::<Result<Vec<_>, _>>()?;
        let mut trips: i64 = 0;
        let mut offset: i128 = 0;
        while offset < len && !self.exits(params, exit, &state)? {
            let i = if range.rev {
                end - 1 - offset
            } else {
                start + offset
            };
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
        let mut state = inits
            .iter()
            .map(|&v| self.get(v))
            .collect::<Result<Vec<_>, _>>()?;
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

/// Whether an error already names its instruction (`i12: ...`), as errors from nested
/// blocks do: the innermost instruction is the one to report.
fn is_located(e: &str) -> bool {
    let digits = e
        .strip_prefix('i')
        .map(|r| r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len());
    matches!(digits, Some(d) if d > 0 && e[1 + d..].starts_with(':'))
}

#[cfg(test)]
mod tests;

//! The float types of a function that mixes `f32` and `f64` (`Signature::mixed`).
//!
//! The IR has one float type. In such a function the generated code gives every float
//! value, buffer and cell the Rust type it has: a parameter its declared one, a conversion
//! (`as f32`, `f64::from`) its target, arithmetic the type of its operands, a load the
//! type of its buffer, a local buffer, cell or loop variable the type of what is written
//! into it. The primal program is typed as the user's code is, so its values are the
//! user's to the bit. Derivative values meet where the primal values did not: the adjoint
//! of an `f32` value accumulates partials that read `f64` ones. Where two types meet, the
//! value is computed in `f64` (the lattice: no type yet < `f32` < `f64`), and converted to
//! the type of the place it lands in (an `f32` tangent, shadow or result).
//!
//! Constants have no type of their own (Rust infers it from their use, as for the user's
//! literals); a value built from constants only is left to Rust's inference too.

use crate::ir::*;

/// What is known of a value's float type.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Class {
    /// Not fixed by anything (constants, values computed from constants only).
    Free,
    F32,
    F64,
}

impl Class {
    pub fn is_f32(self) -> bool {
        self == Class::F32
    }

    pub fn of(p: Option<Prec>) -> Class {
        match p {
            None => Class::Free,
            Some(Prec::F32) => Class::F32,
            Some(Prec::F64) => Class::F64,
        }
    }

    pub fn prec(self) -> Option<Prec> {
        match self {
            Class::Free => None,
            Class::F32 => Some(Prec::F32),
            Class::F64 => Some(Prec::F64),
        }
    }
}

/// The float type of each value, buffer and cell of a function.
pub struct Precisions {
    values: Vec<Class>,
    bufs: Vec<Class>,
    cells: Vec<Class>,
    /// Buffers whose type is given, not inferred: parameters (declared), and the tangents
    /// and shadows passed to a call (the type of the buffer they belong to).
    fixed: Vec<bool>,
    /// Whether `step` gives operands of no type the type of their use (`pull`).
    pulling: bool,
}

impl Precisions {
    pub fn value(&self, v: Value) -> Class {
        self.values[v.index()]
    }
    pub fn buf(&self, b: Buf) -> Class {
        self.bufs[b.index()]
    }
    pub fn cell(&self, c: Cell) -> Class {
        self.cells[c.index()]
    }

    /// Infers the types of `f`, whose parameter `n` has the float type `params[n]` (`None`
    /// for a parameter with no float in it).
    pub fn infer(f: &Function, params: &[Option<Prec>]) -> Precisions {
        // The tangents and shadows passed to calls take the types of their buffers, which
        // are inferred: inferred again with those given until they no longer change (a
        // shadow pinned later than its loads were typed would leave them wrong).
        let mut pins: Vec<(Buf, Class)> = Vec::new();
        loop {
            let p = Self::infer_with(f, params, &pins);
            let again = p.pins(f);
            if again == pins {
                return p;
            }
            pins = again;
        }
    }

    /// The tangent and shadow buffers passed to calls, with the types of their buffers.
    fn pins(&self, f: &Function) -> Vec<(Buf, Class)> {
        let mut out = Vec::new();
        f.walk(f.body, &mut |i| {
            if let InstKind::Call {
                args,
                suffix: CallSuffix::Fwd { tangents: extra } | CallSuffix::Rev { shadows: extra, .. },
                ..
            } = &f.inst(i).kind
            {
                for (a, t) in args.iter().zip(extra) {
                    if let (CallArg::Buf { buf, .. }, Some(CallArg::Buf { buf: tb, .. })) = (a, t) {
                        let c = self.buf(*buf);
                        if c != Class::Free && !matches!(f.buf(*tb).kind, BufKind::Param(_)) {
                            out.push((*tb, c));
                        }
                    }
                }
            }
        });
        out.sort_by_key(|(b, _)| *b);
        out.dedup();
        out
    }

    fn infer_with(f: &Function, params: &[Option<Prec>], pins: &[(Buf, Class)]) -> Precisions {
        let mut p = Precisions {
            values: vec![Class::Free; f.values.len()],
            bufs: vec![Class::Free; f.bufs.len()],
            cells: vec![Class::Free; f.cells.len()],
            fixed: vec![false; f.bufs.len()],
            pulling: false,
        };
        // Parameter buffers have their declared type, whatever is written into them.
        for (k, b) in f.bufs.iter().enumerate() {
            if let BufKind::Param(n) = b.kind {
                p.bufs[k] = Class::of(params.get(n).copied().flatten());
                p.fixed[k] = true;
            }
        }
        for (b, c) in pins {
            p.bufs[b.index()] = *c;
            p.fixed[b.index()] = true;
        }
        // A monotone fixed point: each class only rises, and there are three. What is
        // known from definitions first; then values still without a type take it from
        // where they are used (`pull`), and their types flow on.
        loop {
            loop {
                let mut changed = false;
                f.walk(f.body, &mut |i| changed |= p.step(f, i, params));
                if !changed {
                    break;
                }
            }
            p.pulling = true;
            let mut pulled = false;
            f.walk(f.body, &mut |i| pulled |= p.step(f, i, params));
            p.pulling = false;
            if !pulled {
                return p;
            }
        }
    }

    fn raise_value(&mut self, v: Value, c: Class) -> bool {
        let slot = &mut self.values[v.index()];
        let up = c > *slot;
        if up {
            *slot = c;
        }
        up
    }

    fn raise_buf(&mut self, b: Buf, c: Class) -> bool {
        if self.fixed[b.index()] {
            return false;
        }
        let slot = &mut self.bufs[b.index()];
        let up = c > *slot;
        if up {
            *slot = c;
        }
        up
    }

    fn raise_cell(&mut self, c: Cell, k: Class) -> bool {
        let slot = &mut self.cells[c.index()];
        let up = k > *slot;
        if up {
            *slot = k;
        }
        up
    }

    /// Operands of no type yet computed by an instruction (an integer converted, `2 as _`)
    /// take the type of the float result `r` they are combined into, or of the other
    /// operand of a comparison.
    fn pull(&mut self, f: &Function, operands: &[Value], r: Option<Value>) -> bool {
        if !self.pulling {
            return false;
        }
        let c = match r {
            Some(r) if f.ty(r) == Ty::Float => self.value(r),
            _ => self.join(f, operands),
        };
        if c == Class::Free {
            return false;
        }
        let mut changed = false;
        for v in operands {
            let computed = match f.value(*v).def {
                ValueDef::Result(i, _) => !matches!(f.inst(i).kind, InstKind::FConst(_)),
                _ => true,
            };
            if f.ty(*v) == Ty::Float && computed && self.value(*v) == Class::Free {
                self.values[v.index()] = c;
                changed = true;
            }
        }
        changed
    }

    /// The join of the float values among `vs`.
    fn join(&self, f: &Function, vs: &[Value]) -> Class {
        vs.iter()
            .filter(|v| f.ty(**v) == Ty::Float)
            .map(|v| self.value(*v))
            .max()
            .unwrap_or(Class::Free)
    }

    fn step(&mut self, f: &Function, i: Inst, params: &[Option<Prec>]) -> bool {
        use InstKind::*;
        let data = f.inst(i);
        let first = data.results.first().copied();
        let mut changed = false;
        let set = |p: &mut Self, v: Option<Value>, c: Class| match v {
            Some(v) if f.ty(v) == Ty::Float => p.raise_value(v, c),
            _ => false,
        };
        match &data.kind {
            Param(n) => changed |= set(self, first, Class::of(params.get(*n).copied().flatten())),
            Unary(UnOp::Neg, a) => {
                let c = self.value(*a);
                changed |= set(self, first, c)
            }
            Binary(_, a, b) => {
                let c = self.join(f, &[*a, *b]);
                changed |= set(self, first, c);
                changed |= self.pull(f, &[*a, *b], first);
            }
            Math(_, args) => {
                let c = self.join(f, args);
                changed |= set(self, first, c);
                changed |= self.pull(f, args, first);
            }
            Cast { float, .. } => changed |= set(self, first, Class::of(*float)),
            Load(b, _) => {
                let c = self.buf(*b);
                changed |= set(self, first, c)
            }
            SumBuf(b) => {
                let c = self.buf(*b);
                changed |= set(self, first, c)
            }
            CellGet(c) => {
                let k = self.cell(*c);
                changed |= set(self, first, k)
            }
            Store(b, _, v) | StoreAdd(b, _, v) => {
                let c = self.value(*v);
                changed |= self.raise_buf(*b, c);
            }
            Alloc { buf, init, .. } => {
                let c = match init {
                    AllocInit::Fill(v) => self.join(f, &[*v]),
                    AllocInit::Copy(src) => self.buf(*src),
                    AllocInit::Row { tape, .. } => self.buf(*tape),
                };
                changed |= self.raise_buf(*buf, c);
            }
            CopyFrom { dst: a, src: b } | AddBuf { dst: a, src: b } | Swap(a, b) => {
                let (ca, cb) = (self.buf(*a), self.buf(*b));
                changed |= self.raise_buf(*a, cb);
                changed |= self.raise_buf(*b, ca);
            }
            SaveRow { tape, src, .. } | ReturnRow { tape, src, .. } => {
                let (ct, cs) = (self.buf(*tape), self.buf(*src));
                changed |= self.raise_buf(*tape, cs);
                changed |= self.raise_buf(*src, ct);
            }
            CellDecl(c, v) | CellSet(c, v) | CellAdd(c, v) => {
                let k = self.join(f, &[*v]);
                changed |= self.raise_cell(*c, k);
            }
            If {
                then_blk, else_blk, ..
            } => {
                let (t, e) = (&f.block(*then_blk).yields, &f.block(*else_blk).yields);
                for (k, r) in data.results.iter().enumerate() {
                    let c = self.join(f, &[t[k], e[k]]);
                    changed |= set(self, Some(*r), c);
                }
            }
            For {
                params: ps,
                inits,
                body,
                ..
            }
            | While {
                params: ps,
                inits,
                body,
                ..
            } => {
                let ys = &f.block(*body).yields;
                for (k, phi) in ps.iter().enumerate() {
                    let c = self.join(f, &[*phi, inits[k], ys[k]]);
                    changed |= set(self, Some(*phi), c);
                    changed |= set(self, Some(data.results[k]), c);
                }
            }
            Call { args, .. } => {
                // What a call returns is the type of its float arguments (a callee taking
                // both types is not read further).
                let c = args
                    .iter()
                    .map(|a| match a {
                        CallArg::Scalar(v) => self.join(f, &[*v]),
                        CallArg::Buf { buf, .. } => self.buf(*buf),
                        CallArg::Opaque(_) => Class::Free,
                    })
                    .max()
                    .unwrap_or(Class::Free);
                for r in &data.results {
                    changed |= set(self, Some(*r), c);
                }
            }
            _ => {}
        }
        changed
    }
}

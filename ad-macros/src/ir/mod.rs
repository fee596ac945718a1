//! The structured SSA IR that every pass works on.
//!
//! Scalars are SSA values (`v3`); arrays are mutable storage (`buf2`) read and written by
//! `load`/`store`. Control flow is structured: `if` and loops own their blocks, and φ nodes
//! are block parameters: an `if` yields one value per result from each branch, a loop
//! header's parameters receive the initial values on entry and the block's yields on the back
//! edge. Derivative programs additionally use mutable cells (adjoint accumulators, tape
//! counters) and tapes (buffers indexed by loop iteration).

pub mod builder;
pub mod copy;
pub mod dce;
#[cfg_attr(not(test), allow(dead_code))]
pub mod interp;
pub mod printer;
pub mod verify;

use proc_macro2::Span;

macro_rules! entity {
    ($name:ident, $prefix:literal) => {
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

entity!(Value, "v");
entity!(Inst, "i");
entity!(Block, "b");
entity!(Buf, "buf");
entity!(Cell, "c");

/// Scalar types. Integers carry no Rust width: rustc infers it in the generated code.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Ty {
    Float,
    Int,
    Bool,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ValueDef {
    /// The `n`-th result of an instruction.
    Result(Inst, u32),
    /// The induction variable of a `for` loop.
    LoopIndex(Inst),
    /// The `n`-th header parameter (φ) of a loop.
    LoopParam(Inst, u32),
}

#[derive(Clone, Debug)]
pub struct ValueData {
    pub ty: Ty,
    pub def: ValueDef,
    /// The user's variable name, for readable printing and generated code.
    pub name: Option<String>,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum BufKind {
    /// The storage of parameter `n`.
    Param(usize),
    /// A `let` buffer (`vec!`, `to_vec`, `clone`).
    Local,
    /// A derivative buffer (tangent or adjoint shadow) created by a derivative pass.
    Shadow,
    /// A direct-indexed tape of saved values.
    Tape,
    /// The per-iteration slots of a parallel loop's shared additions (derivative
    /// programs): a pooled `ad_rayon::Scratch`, reused by the next call.
    Scratch,
}

#[derive(Clone, Debug)]
pub struct BufData {
    pub name: String,
    /// 1 for `&[T]`, 2 for `&[Vec<T>]` / `[[T; N]; M]`.
    pub rank: u8,
    pub elem: Ty,
    pub kind: BufKind,
}

#[derive(Clone, Debug)]
pub struct CellData {
    pub ty: Ty,
    pub name: String,
}

#[derive(Clone, Debug, Default)]
pub struct BlockData {
    pub insts: Vec<Inst>,
    /// Values passed to the parent: `if` results, loop back-edge arguments, the function's
    /// return values, a `while` condition.
    pub yields: Vec<Value>,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum UnOp {
    Neg,
    Not,
    /// A float predicate (`x.is_nan()`, ...): a bool, with no derivative.
    Test(FloatTest),
}

/// The float predicates, by their method names.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum FloatTest {
    IsNan,
    IsFinite,
    IsInfinite,
    IsNormal,
    IsSubnormal,
    IsSignPositive,
    IsSignNegative,
}

impl FloatTest {
    pub const ALL: [FloatTest; 7] = [
        FloatTest::IsNan,
        FloatTest::IsFinite,
        FloatTest::IsInfinite,
        FloatTest::IsNormal,
        FloatTest::IsSubnormal,
        FloatTest::IsSignPositive,
        FloatTest::IsSignNegative,
    ];

    /// The method's name (`is_nan`).
    pub fn method(self) -> &'static str {
        match self {
            FloatTest::IsNan => "is_nan",
            FloatTest::IsFinite => "is_finite",
            FloatTest::IsInfinite => "is_infinite",
            FloatTest::IsNormal => "is_normal",
            FloatTest::IsSubnormal => "is_subnormal",
            FloatTest::IsSignPositive => "is_sign_positive",
            FloatTest::IsSignNegative => "is_sign_negative",
        }
    }

    /// The predicate named `method`, if it is one.
    pub fn named(method: &str) -> Option<FloatTest> {
        FloatTest::ALL.into_iter().find(|t| t.method() == method)
    }

    /// The predicate on an `f64` (the interpreter's semantics).
    pub fn holds(self, x: f64) -> bool {
        match self {
            FloatTest::IsNan => x.is_nan(),
            FloatTest::IsFinite => x.is_finite(),
            FloatTest::IsInfinite => x.is_infinite(),
            FloatTest::IsNormal => x.is_normal(),
            FloatTest::IsSubnormal => x.is_subnormal(),
            FloatTest::IsSignPositive => x.is_sign_positive(),
            FloatTest::IsSignNegative => x.is_sign_negative(),
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    /// `a` converted to the integer type of `b` (value kept; a panic where it does not
    /// fit): the reverse sweep's closed form of a counter, whose loop index may be of
    /// another integer type (`li += 1` in `for k in 1..m` with `m: i32`).
    IntLike,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    }
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::IntLike => "as-type-of",
        }
    }
}

/// How a `for` loop walks its range: `(start..end)`, optionally `.rev()`, then `.step_by(step)`.
#[derive(Clone, Debug)]
pub struct RangeSpec {
    pub start: Value,
    pub end: Value,
    pub step: Option<Value>,
    pub rev: bool,
}

#[derive(Clone, Debug)]
pub enum AllocInit {
    /// `vec![v; n]` (rank 1) or `vec![vec![v; m]; n]` (rank 2).
    Fill(Value),
    /// `src.to_vec()` / `src.clone()`.
    Copy(Buf),
    /// A copy of row `idx` of a snapshot tape (reverse sweep: a buffer as it was at a call).
    Row { tape: Buf, idx: Value },
}

/// What a user-level call refers to (`g(..)` or `recv.m(..)`); see `lower::call`.
#[derive(Clone, Debug)]
pub struct Callee {
    /// The function's path (`g`, `module::g`), or a method's name as a one-segment path;
    /// without generics.
    pub path: syn::Path,
    /// The receiver of a method call (constant).
    pub receiver: Option<Opaque>,
    /// Turbofish generics, emitted as written.
    pub generics: Code,
    /// What follows the call: `?` on a fallible function's result (its derivatives are
    /// fallible too, and each call of them is followed by the same), or nothing.
    pub then: Code,
}

impl Callee {
    /// The callee as written (`module::g`), for messages.
    pub fn name(&self) -> String {
        let segments: Vec<String> = self
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        segments.join("::")
    }
}

/// Rust code the compiler passes through as written (a call's receiver, an argument of a
/// type it does not model): only code generation emits it; no pass reads it.
#[derive(Clone, Default)]
pub struct Code(pub proc_macro2::TokenStream);

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.0)
    }
}

impl Code {
    /// The tokens of `text`, Rust code the lowering wrote (a string literal with its
    /// quotes, or `assert!`'s arguments); a literal saying "assertion failed" if it is
    /// not Rust.
    pub fn parse(text: &str) -> Code {
        Code(
            text.parse()
                .unwrap_or_else(|_| quote::quote!("assertion failed")),
        )
    }
}

impl PartialEq for Code {
    fn eq(&self, other: &Code) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

/// A value of a type the compiler does not model, passed to a call (`comm`, `&cfg`,
/// `Op::Sum`, `world.process_at_rank(0)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Opaque {
    pub code: Code,
    /// Which value it is, as activity analysis tells channels apart (see
    /// `analysis::activity`): equal keys are the same value. `None` for a constant path.
    pub key: Option<String>,
}

/// A Rust integer type, the target of a cast to an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntTy {
    Usize,
    Isize,
    U8,
    U16,
    U32,
    U64,
    U128,
    I8,
    I16,
    I32,
    I64,
    I128,
}

impl IntTy {
    const ALL: [(IntTy, &'static str); 12] = [
        (IntTy::Usize, "usize"),
        (IntTy::Isize, "isize"),
        (IntTy::U8, "u8"),
        (IntTy::U16, "u16"),
        (IntTy::U32, "u32"),
        (IntTy::U64, "u64"),
        (IntTy::U128, "u128"),
        (IntTy::I8, "i8"),
        (IntTy::I16, "i16"),
        (IntTy::I32, "i32"),
        (IntTy::I64, "i64"),
        (IntTy::I128, "i128"),
    ];

    /// The type Rust calls `name`.
    pub fn from_name(name: &str) -> Option<IntTy> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
    }

    /// Its Rust name (`usize`).
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map(|(_, n)| *n)
            .expect("every IntTy is named")
    }

    /// Its values, as `i128` bounds (`u128`'s top clipped).
    pub fn range(self) -> (i128, i128) {
        use IntTy::*;
        match self {
            I8 => (i8::MIN.into(), i8::MAX.into()),
            I16 => (i16::MIN.into(), i16::MAX.into()),
            I32 => (i32::MIN.into(), i32::MAX.into()),
            I64 | Isize => (i64::MIN.into(), i64::MAX.into()),
            I128 => (i128::MIN, i128::MAX),
            U8 => (0, u8::MAX.into()),
            U16 => (0, u16::MAX.into()),
            U32 => (0, u32::MAX.into()),
            U64 | Usize => (0, u64::MAX.into()),
            U128 => (0, i128::MAX),
        }
    }
}

/// Up to three indices into a buffer (one per dimension), kept `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Indices {
    len: u8,
    at: [Value; 3],
}

impl Indices {
    pub const NONE: Indices = Indices {
        len: 0,
        at: [Value(0); 3],
    };

    pub fn of(vs: &[Value]) -> Indices {
        assert!(vs.len() <= 3, "buffers have at most three dimensions");
        let mut at = [Value(0); 3];
        at[..vs.len()].copy_from_slice(vs);
        Indices {
            len: vs.len() as u8,
            at,
        }
    }

    pub fn as_slice(&self) -> &[Value] {
        &self.at[..self.len as usize]
    }

    /// The indices, by value.
    pub fn values(self) -> impl Iterator<Item = Value> {
        let n = self.len as usize;
        self.at.into_iter().take(n)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The same indices with each replaced by `f` of it.
    pub fn map(&self, mut f: impl FnMut(Value) -> Value) -> Indices {
        let mut out = *self;
        for v in &mut out.at[..self.len as usize] {
            *v = f(*v);
        }
        out
    }

    /// `map` with a fallible `f`.
    pub fn try_map<E>(&self, mut f: impl FnMut(Value) -> Result<Value, E>) -> Result<Indices, E> {
        let mut out = *self;
        for v in &mut out.at[..self.len as usize] {
            *v = f(*v)?;
        }
        Ok(out)
    }

    /// These indices followed by `v`.
    pub fn then(&self, v: Value) -> Vec<Value> {
        let mut out = self.as_slice().to_vec();
        out.push(v);
        out
    }
}

/// The part of a buffer a call sees: `buf[start..end]`, or `buf[row..][start..end]` of a
/// row of a 2-D or 3-D buffer (`row` holds its indices).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Part {
    pub row: Indices,
    pub start: Value,
    pub end: Value,
}

impl Part {
    /// The values the part reads.
    pub fn values(&self) -> impl Iterator<Item = Value> {
        self.row.values().chain([self.start, self.end])
    }

    /// The same part with each value replaced by `f` of it.
    pub fn map(&self, mut f: impl FnMut(Value) -> Value) -> Part {
        Part {
            row: self.row.map(&mut f),
            start: f(self.start),
            end: f(self.end),
        }
    }

    /// `map` with a fallible `f`.
    pub fn try_map<E>(&self, mut f: impl FnMut(Value) -> Result<Value, E>) -> Result<Part, E> {
        Ok(Part {
            row: self.row.try_map(&mut f)?,
            start: f(self.start)?,
            end: f(self.end)?,
        })
    }
}

#[derive(Clone, Debug)]
pub enum CallArg {
    Scalar(Value),
    Buf {
        buf: Buf,
        mutable: bool,
        /// Part of the buffer only (a sub-slice, a view or a row passed to the call).
        range: Option<Part>,
    },
    /// Constant tokens passed through unchanged (e.g. `&comm`, a struct).
    Opaque(Opaque),
}

/// A concrete float type, in a function that mixes `f32` and `f64`.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Prec {
    F32,
    F64,
}

impl Prec {
    pub fn name(self) -> &'static str {
        match self {
            Prec::F32 => "f32",
            Prec::F64 => "f64",
        }
    }
}

#[derive(Clone, Debug)]
pub enum InstKind {
    FConst(f64),
    IConst(i128),
    BConst(bool),
    /// The value of scalar parameter `n`.
    Param(usize),
    Unary(UnOp, Value),
    Binary(BinOp, Value, Value),
    /// A float method from the rule table (`derivative::rules`).
    Math(&'static str, Vec<Value>),
    /// `as` casts and `T::from`: `to` is the target; `int` the integer type if any;
    /// `float` the float type in a function that mixes `f32` and `f64` (a cast between
    /// them is then one of these, from float to float; elsewhere it is no instruction).
    Cast {
        value: Value,
        to: Ty,
        int: Option<IntTy>,
        float: Option<Prec>,
    },
    Load(Buf, Vec<Value>),
    Store(Buf, Vec<Value>, Value),
    /// `a[i] += v`
    StoreAdd(Buf, Vec<Value>, Value),
    Len(Buf, Vec<Value>),
    Alloc {
        buf: Buf,
        dims: Vec<Value>,
        init: AllocInit,
    },
    /// `dst.copy_from_slice(&src)`
    CopyFrom {
        dst: Buf,
        src: Buf,
    },
    /// `std::mem::swap(&mut a, &mut b)`
    Swap(Buf, Buf),
    /// `dst[k] += src[k]` for all k (derivative programs).
    AddBuf {
        dst: Buf,
        src: Buf,
    },
    /// `dst[k] = 0` for all k (derivative programs).
    ZeroBuf(Buf),
    /// Sum of all elements (derivative programs: adjoint of `vec![v; n]`).
    SumBuf(Buf),
    Assert {
        cond: Value,
        /// The arguments of `assert!` after the condition (a message and its values).
        message: Code,
    },
    /// When `cond` holds, the function fails: it returns the `None` or `Err(..)` of its
    /// failure site number `site` (fallible functions, see `lower::fallible`), whose
    /// error value reads the variables `args` (in the site's order). The generated code
    /// leaves the function there; nothing after it runs.
    Fail {
        cond: Value,
        site: u32,
        args: Vec<Value>,
    },
    If {
        cond: Value,
        then_blk: Block,
        else_blk: Block,
    },
    /// `params` are the header φs; `exit` lists boolean params that end the loop when true
    /// (lowered `break`/`return`). Results: one per param, then the trip count.
    For {
        range: RangeSpec,
        index: Value,
        params: Vec<Value>,
        inits: Vec<Value>,
        body: Block,
        exit: Vec<Value>,
    },
    /// `cond` yields one bool evaluated before each iteration. Results as for `For`.
    While {
        cond: Block,
        params: Vec<Value>,
        inits: Vec<Value>,
        body: Block,
        exit: Vec<Value>,
    },
    CellDecl(Cell, Value),
    CellGet(Cell),
    CellSet(Cell, Value),
    CellAdd(Cell, Value),
    /// Grow a tape to at least `len` slots.
    TapeEnsure(Buf, Value),
    /// Grow row `row` of a 2-D tape to at least `len` slots (the tape of a loop nested in
    /// a parallel loop: one row per parallel iteration).
    TapeEnsureRow(Buf, Value, Value),
    /// Row `idx` of snapshot tape `tape` := contents of `src` (of its row at the indices
    /// `row` for a 2-D or 3-D `src`) (forward sweep, before a call).
    SaveRow {
        tape: Buf,
        idx: Value,
        src: Buf,
        row: Indices,
    },
    /// Row `idx` of snapshot tape `tape` := `src`, moved back after the call that borrowed
    /// it (`AllocInit::Row` moves the row out; the row is never read again, and giving it
    /// back keeps its allocation for the next snapshot).
    ReturnRow {
        tape: Buf,
        idx: Value,
        src: Buf,
    },
    /// `let mut ckN = Checkpointer::new(scheme, storage, trip)` (reverse programs; see
    /// `ad_core::checkpoint`). `trip` is the loop's trip count when known at entry.
    CkNew {
        ck: u32,
        spec: CheckpointSpec,
        trip: Option<Value>,
    },
    /// `ckN.forward_step(step, |snap| push state) == StepMode::Taped`: a bool result.
    CkForwardStep {
        ck: u32,
        step: Value,
        state: Vec<CkItem>,
    },
    /// `ckN.end_forward(count)`.
    CkEndForward {
        ck: u32,
        count: Value,
    },
    /// The reverse phase of a checkpointed loop: runs `ckN`'s actions until done, storing
    /// and restoring `state`, running `advance` once per step of an `Advance`, `taped` then
    /// `adjoint` for a `Reverse`, and `kept` then `adjoint` for an `Adjoint`.
    CkReverse {
        ck: u32,
        state: Vec<CkItem>,
        advance: Block,
        taped: Block,
        kept: Block,
        adjoint: Block,
    },
    /// A call to a user function or method (`_fwd`/`_rev` by convention in derivatives).
    Call {
        callee: Callee,
        args: Vec<CallArg>,
        suffix: CallSuffix,
    },
}

impl InstKind {
    /// Replaces every value the instruction reads (what [`Function::operands`] lists) by
    /// `m` of it; the blocks it owns, and their yields, stay as they are.
    pub fn map_operands(&mut self, m: &mut dyn FnMut(Value) -> Value) {
        use InstKind::*;
        let all = |vs: &mut Vec<Value>, m: &mut dyn FnMut(Value) -> Value| {
            vs.iter_mut().for_each(|v| *v = m(*v))
        };
        let arg = |a: &mut CallArg, m: &mut dyn FnMut(Value) -> Value| match a {
            CallArg::Scalar(v) => *v = m(*v),
            CallArg::Buf { range: Some(p), .. } => *p = p.map(&mut *m),
            _ => {}
        };
        match self {
            FConst(_) | IConst(_) | BConst(_) | Param(_) | CellGet(_) => {}
            CopyFrom { .. } | Swap(..) | AddBuf { .. } | ZeroBuf(_) | SumBuf(_) => {}
            CkReverse { .. } => {}
            Unary(_, a) | Cast { value: a, .. } => *a = m(*a),
            Binary(_, a, b) => {
                *a = m(*a);
                *b = m(*b);
            }
            Math(_, args) | Load(_, args) | Len(_, args) => all(args, m),
            Store(_, idx, v) | StoreAdd(_, idx, v) => {
                all(idx, m);
                *v = m(*v);
            }
            Alloc { dims, init, .. } => {
                all(dims, m);
                match init {
                    AllocInit::Fill(v) | AllocInit::Row { idx: v, .. } => *v = m(*v),
                    AllocInit::Copy(_) => {}
                }
            }
            SaveRow { idx, row, .. } => {
                *idx = m(*idx);
                *row = row.map(&mut *m);
            }
            ReturnRow { idx, .. } => *idx = m(*idx),
            Assert { cond, .. } | If { cond, .. } => *cond = m(*cond),
            Fail { cond, args, .. } => {
                *cond = m(*cond);
                all(args, m);
            }
            For { range, inits, .. } => {
                range.start = m(range.start);
                range.end = m(range.end);
                if let Some(s) = &mut range.step {
                    *s = m(*s);
                }
                all(inits, m);
            }
            While { inits, .. } => all(inits, m),
            CellDecl(_, v) | CellSet(_, v) | CellAdd(_, v) => *v = m(*v),
            TapeEnsure(_, v) => *v = m(*v),
            TapeEnsureRow(_, r, v) => {
                *r = m(*r);
                *v = m(*v);
            }
            CkNew { spec, trip, .. } => {
                let (CkScheme::Revolve(n) | CkScheme::Periodic(n) | CkScheme::Online(n)) =
                    &mut spec.scheme;
                *n = m(*n);
                if let Some(t) = trip {
                    *t = m(*t);
                }
            }
            CkForwardStep { step, state, .. } => {
                *step = m(*step);
                for s in state {
                    if let CkItem::Value(v) = s {
                        *v = m(*v);
                    }
                }
            }
            CkEndForward { count, .. } => *count = m(*count),
            Call { args, suffix, .. } => {
                args.iter_mut().for_each(|a| arg(a, m));
                match suffix {
                    CallSuffix::Primal => {}
                    CallSuffix::Fwd { tangents } => {
                        tangents.iter_mut().flatten().for_each(|a| arg(a, m))
                    }
                    CallSuffix::Rev { shadows, seed } => {
                        shadows.iter_mut().flatten().for_each(|a| arg(a, m));
                        if let Some(s) = seed {
                            *s = m(*s);
                        }
                    }
                }
            }
        }
    }

    /// Constants and scalar arithmetic: no buffers, cells, calls or blocks.
    pub fn is_arithmetic(&self) -> bool {
        matches!(
            self,
            InstKind::FConst(_)
                | InstKind::IConst(_)
                | InstKind::BConst(_)
                | InstKind::Unary(..)
                | InstKind::Binary(..)
                | InstKind::Math(..)
                | InstKind::Cast { .. }
        )
    }
}

/// A checkpointing scheme of a loop marked `#[checkpoint(...)]`; the count is an integer
/// value of the primal (snapshots, or the period of `periodic`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CkScheme {
    Revolve(Value),
    Periodic(Value),
    Online(Value),
}

/// A loop's `#[checkpoint(...)]`: its scheme and whether snapshots go to disk.
#[derive(Clone, Debug)]
pub struct CheckpointSpec {
    pub scheme: CkScheme,
    pub disk: bool,
    /// The attribute's tokens, for errors that point at it.
    pub attr: proc_macro2::TokenStream,
}

/// One part of a checkpointed loop's state: a scalar (a value when saved in the forward
/// sweep, a cell in the reverse sweep, where it is also restored) or a whole buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CkItem {
    Value(Value),
    Cell(Cell),
    Buf(Buf),
}

/// Which variant of a user function a `Call` invokes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallSuffix {
    Primal,
    /// `name_fwd(args with tangents)`; results: value, tangent.
    Fwd {
        tangents: Vec<Option<CallArg>>,
    },
    /// `name_rev(args with shadows, seed)`; results: scalar adjoints (value dropped).
    Rev {
        shadows: Vec<Option<CallArg>>,
        seed: Option<Value>,
    },
}

impl PartialEq for CallArg {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (CallArg::Scalar(a), CallArg::Scalar(b)) => a == b,
            (
                CallArg::Buf {
                    buf: a,
                    mutable: x,
                    range: r,
                },
                CallArg::Buf {
                    buf: b,
                    mutable: y,
                    range: s,
                },
            ) => a == b && x == y && r == s,
            (CallArg::Opaque(a), CallArg::Opaque(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for CallArg {}

#[derive(Clone, Debug)]
pub struct InstData {
    pub kind: InstKind,
    pub results: Vec<Value>,
    pub span: Span,
}

/// How a parameter of an IR function is passed.
#[derive(Clone, Debug)]
pub enum ParamKind {
    Scalar(Ty),
    Buffer {
        buf: Buf,
        mutable: bool,
    },
    /// Constant of a type the compiler does not model (`&Comm`, a struct): passed through.
    Opaque,
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: String,
    pub kind: ParamKind,
    /// The span of the parameter's name: the user's for the function's own parameters (so
    /// the body's uses resolve to them under macro hygiene), the call site for parameters
    /// the derivative adds.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub params: Vec<ParamInfo>,
    pub values: Vec<ValueData>,
    pub insts: Vec<InstData>,
    pub blocks: Vec<BlockData>,
    pub bufs: Vec<BufData>,
    pub cells: Vec<CellData>,
    pub body: Block,
    /// The loops marked `#[checkpoint(...)]` (primal programs).
    pub checkpoints: std::collections::HashMap<Inst, CheckpointSpec>,
    /// The loops written as rayon parallel iterators (`par_iter`, `into_par_iter`), with
    /// the span of the parallel call: their iterations are independent.
    pub parallel: std::collections::HashMap<Inst, proc_macro2::Span>,
    /// The `+=` at computed indices inside parallel loops (derivative programs): each
    /// site's loop, and the target's number among that loop's scatter targets (see
    /// `derivative::parallel`).
    pub scatter: std::collections::HashMap<Inst, (Inst, usize)>,
    /// Scatter targets take atomic adds whatever their size (`parallel_adjoint = atomic`).
    pub atomic_scatter: bool,
    /// The buffers each parallel loop adds into at constant shifts of its index (a
    /// stencil's neighbours, derivative programs), with their row width and reach (see
    /// `derivative::parallel`).
    pub halo: std::collections::HashMap<Inst, std::collections::BTreeMap<Buf, HaloSpec>>,
    /// Parallel loops best run last iteration first where they run serially (the reverse
    /// sweeps of parallel loops: they start on what their forward sweep touched last).
    pub descending: std::collections::HashSet<Inst>,
    /// Loads that read their element's final value (primal programs): nothing writes the
    /// element after them, so the reverse sweep may read it again instead of saving it
    /// (the element sums `lower::fuse_sums_into_writers` moves into their writer).
    pub final_reads: std::collections::HashSet<Inst>,
    /// Lane buffers stored interleaved (batched programs, see `derivative::batch`): each
    /// maps to its group's first buffer and its lane. The IR keeps one buffer per lane;
    /// the generated code keeps the group in one `Vec<[T; width]>`, lane `l` of element
    /// `i` at `[i][l]`, so the lanes of an element are adjacent.
    pub interleaved: std::collections::HashMap<Buf, Interleaved>,
    /// Loop indices known to lie in `[0, bound)` for a bound other than their range's end:
    /// the pieces of a loop over `0..e` that `derivative::reverse::split` cuts in three, and
    /// the strips `derivative::reverse::strip` cuts it into, stay below `e` (what
    /// `derivative::parallel` reads to keep a row's column in its row).
    pub index_below: std::collections::HashMap<Value, Value>,
}

/// A lane of an interleaved buffer group: see [`Function::interleaved`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interleaved {
    pub head: Buf,
    pub lane: usize,
    pub width: usize,
}

/// How far from its own row an iteration of a parallel loop adds into a buffer:
/// rows `i − reach ..= i + reach`, of `width` elements (`None`: elements).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HaloSpec {
    pub width: Option<Value>,
    pub reach: u64,
}

impl Function {
    pub fn new(name: impl Into<String>) -> Self {
        let mut f = Function {
            name: name.into(),
            params: Vec::new(),
            values: Vec::new(),
            insts: Vec::new(),
            blocks: Vec::new(),
            bufs: Vec::new(),
            cells: Vec::new(),
            body: Block(0),
            checkpoints: Default::default(),
            parallel: Default::default(),
            scatter: Default::default(),
            atomic_scatter: false,
            halo: Default::default(),
            descending: Default::default(),
            final_reads: Default::default(),
            interleaved: Default::default(),
            index_below: Default::default(),
        };
        f.body = f.new_block();
        f
    }
    pub fn new_block(&mut self) -> Block {
        self.blocks.push(BlockData::default());
        Block(self.blocks.len() as u32 - 1)
    }
    pub fn new_value(&mut self, ty: Ty, def: ValueDef, name: Option<String>) -> Value {
        self.values.push(ValueData { ty, def, name });
        Value(self.values.len() as u32 - 1)
    }
    pub fn new_buf(&mut self, data: BufData) -> Buf {
        self.bufs.push(data);
        Buf(self.bufs.len() as u32 - 1)
    }
    pub fn new_cell(&mut self, ty: Ty, name: impl Into<String>) -> Cell {
        self.cells.push(CellData {
            ty,
            name: name.into(),
        });
        Cell(self.cells.len() as u32 - 1)
    }
    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.index()]
    }
    pub fn ty(&self, v: Value) -> Ty {
        self.values[v.index()].ty
    }
    pub fn inst(&self, i: Inst) -> &InstData {
        &self.insts[i.index()]
    }
    pub fn block(&self, b: Block) -> &BlockData {
        &self.blocks[b.index()]
    }
    pub fn buf(&self, b: Buf) -> &BufData {
        &self.bufs[b.index()]
    }
    /// The instruction that defines `v` (for loop parameters and indices: the loop).
    pub fn def_inst(&self, v: Value) -> Inst {
        match self.values[v.index()].def {
            ValueDef::Result(i, _) | ValueDef::LoopIndex(i) | ValueDef::LoopParam(i, _) => i,
        }
    }
    /// The blocks an instruction owns, in execution order.
    pub fn child_blocks(&self, i: Inst) -> Vec<Block> {
        match &self.insts[i.index()].kind {
            InstKind::If {
                then_blk, else_blk, ..
            } => vec![*then_blk, *else_blk],
            InstKind::For { body, .. } => vec![*body],
            InstKind::While { cond, body, .. } => vec![*cond, *body],
            InstKind::CkReverse {
                advance,
                taped,
                kept,
                adjoint,
                ..
            } => vec![*advance, *taped, *kept, *adjoint],
            _ => Vec::new(),
        }
    }
    /// The values an instruction reads (not counting its blocks' contents).
    /// How many times block `b` and the blocks inside it read `v` (operands and yields).
    pub fn uses_in(&self, b: Block, v: Value) -> usize {
        let mut uses = self.block(b).yields.iter().filter(|y| **y == v).count();
        self.walk(b, &mut |i| {
            uses += self.operands(i).iter().filter(|o| **o == v).count();
            for c in self.child_blocks(i) {
                uses += self.block(c).yields.iter().filter(|y| **y == v).count();
            }
        });
        uses
    }

    pub fn operands(&self, i: Inst) -> Vec<Value> {
        use InstKind::*;
        match &self.insts[i.index()].kind {
            FConst(_) | IConst(_) | BConst(_) | Param(_) => vec![],
            Unary(_, a) => vec![*a],
            Binary(_, a, b) => vec![*a, *b],
            Math(_, args) => args.clone(),
            Cast { value, .. } => vec![*value],
            Load(_, idx) | Len(_, idx) => idx.clone(),
            Store(_, idx, v) | StoreAdd(_, idx, v) => {
                let mut o = idx.clone();
                o.push(*v);
                o
            }
            Alloc { dims, init, .. } => {
                let mut o = dims.clone();
                match init {
                    AllocInit::Fill(v) | AllocInit::Row { idx: v, .. } => o.push(*v),
                    AllocInit::Copy(_) => {}
                }
                o
            }
            SaveRow { idx, row, .. } => std::iter::once(*idx).chain(row.values()).collect(),
            ReturnRow { idx, .. } => vec![*idx],
            CopyFrom { .. } | Swap(..) | AddBuf { .. } | ZeroBuf(_) | SumBuf(_) => vec![],
            Assert { cond, .. } => vec![*cond],
            Fail { cond, args, .. } => std::iter::once(*cond).chain(args.iter().copied()).collect(),
            If { cond, .. } => vec![*cond],
            For { range, inits, .. } => {
                let mut o = vec![range.start, range.end];
                o.extend(range.step);
                o.extend(inits.iter().copied());
                o
            }
            While { inits, .. } => inits.clone(),
            CellDecl(_, v) | CellSet(_, v) | CellAdd(_, v) => vec![*v],
            CellGet(_) => vec![],
            TapeEnsure(_, v) => vec![*v],
            TapeEnsureRow(_, r, v) => vec![*r, *v],
            CkNew { spec, trip, .. } => {
                let (CkScheme::Revolve(n) | CkScheme::Periodic(n) | CkScheme::Online(n)) =
                    spec.scheme;
                let mut o = vec![n];
                o.extend(*trip);
                o
            }
            CkForwardStep { step, state, .. } => {
                let mut o = vec![*step];
                o.extend(state.iter().filter_map(|s| match s {
                    CkItem::Value(v) => Some(*v),
                    _ => None,
                }));
                o
            }
            CkEndForward { count, .. } => vec![*count],
            CkReverse { .. } => vec![],
            Call { args, suffix, .. } => {
                let mut o: Vec<Value> = Vec::new();
                let mut push_arg = |a: &CallArg| match a {
                    CallArg::Scalar(v) => o.push(*v),
                    CallArg::Buf { range: Some(p), .. } => o.extend(p.values()),
                    _ => {}
                };
                args.iter().for_each(&mut push_arg);
                match suffix {
                    CallSuffix::Primal => {}
                    CallSuffix::Fwd { tangents } => {
                        tangents.iter().flatten().for_each(&mut push_arg)
                    }
                    CallSuffix::Rev { shadows, seed } => {
                        shadows.iter().flatten().for_each(&mut push_arg);
                        o.extend(seed.iter().copied());
                    }
                }
                o
            }
        }
    }
    /// The parts of loop `i` (a `for` or a `while`): its header parameters, their initial
    /// values, its body and its exit flags.
    pub fn loop_parts(&self, i: Inst) -> (Vec<Value>, Vec<Value>, Block, Vec<Value>) {
        match &self.inst(i).kind {
            InstKind::For {
                params,
                inits,
                body,
                exit,
                ..
            }
            | InstKind::While {
                params,
                inits,
                body,
                exit,
                ..
            } => (params.clone(), inits.clone(), *body, exit.clone()),
            _ => unreachable!("loop_parts on a non-loop"),
        }
    }

    /// The block holding each instruction reached from the body.
    pub fn block_map(&self) -> std::collections::HashMap<Inst, Block> {
        let mut m = std::collections::HashMap::new();
        let mut blocks = vec![self.body];
        while let Some(b) = blocks.pop() {
            for &i in &self.block(b).insts {
                m.insert(i, b);
                blocks.extend(self.child_blocks(i));
            }
        }
        m
    }

    /// The instruction (an `if`, a loop) enclosing each instruction that is not in the
    /// body's own block, with the block of it that holds the instruction.
    pub fn parents(&self) -> std::collections::HashMap<Inst, (Inst, Block)> {
        let mut parents = std::collections::HashMap::new();
        self.walk(self.body, &mut |i| {
            for c in self.child_blocks(i) {
                for &x in &self.block(c).insts {
                    parents.insert(x, (i, c));
                }
            }
        });
        parents
    }

    /// Buffers an instruction writes (not counting its blocks' contents).
    pub fn written_bufs(&self, i: Inst) -> Vec<Buf> {
        use InstKind::*;
        match &self.insts[i.index()].kind {
            Store(b, ..)
            | StoreAdd(b, ..)
            | ZeroBuf(b)
            | TapeEnsure(b, _)
            | TapeEnsureRow(b, ..)
            | SaveRow { tape: b, .. }
            | ReturnRow { tape: b, .. } => vec![*b],
            Alloc { buf, .. } => vec![*buf],
            CopyFrom { dst, .. } | AddBuf { dst, .. } => vec![*dst],
            Swap(a, b) => vec![*a, *b],
            CkReverse { state, .. } => state
                .iter()
                .filter_map(|s| match s {
                    CkItem::Buf(b) => Some(*b),
                    _ => None,
                })
                .collect(),
            Call { args, suffix, .. } => {
                let mut w: Vec<Buf> = args
                    .iter()
                    .filter_map(|a| match a {
                        CallArg::Buf {
                            buf, mutable: true, ..
                        } => Some(*buf),
                        _ => None,
                    })
                    .collect();
                match suffix {
                    CallSuffix::Primal => {}
                    CallSuffix::Fwd { tangents: extra }
                    | CallSuffix::Rev { shadows: extra, .. } => {
                        w.extend(extra.iter().flatten().filter_map(|a| match a {
                            CallArg::Buf {
                                buf, mutable: true, ..
                            } => Some(*buf),
                            _ => None,
                        }))
                    }
                }
                w
            }
            _ => vec![],
        }
    }
    /// Calls `f` on every instruction of `b` and of its nested blocks, in program order.
    pub fn walk(&self, b: Block, f: &mut dyn FnMut(Inst)) {
        for &i in &self.blocks[b.index()].insts {
            f(i);
            for c in self.child_blocks(i) {
                self.walk(c, f);
            }
        }
    }
}

#[cfg(test)]
mod tests;

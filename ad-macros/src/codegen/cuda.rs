//! IR → CUDA C: the primal and adjoint kernels of an element function
//! (`#[differentiate(reverse, cuda)]` on `fn k(i: usize, ..)`), one thread per element.
//!
//! The first parameter is the global thread index. Each slice becomes a device pointer
//! (`const` when read-only) followed by its length (`phidiff_len_<name>`); scalars are
//! passed by value; the kernel's last parameters are the number of threads and, for an
//! adjoint with scalar adjoints, an array they are added into, summed over each block first
//! (one atomic per block). Values stay in registers: the adjoint kernel
//! runs the element's forward sweep then its reverse sweep in the same thread.
//!
//! A `+=` into a buffer is classified by its index, as in the rayon adjoint:
//! - the thread index: a plain add (each thread owns its element), unless some thread
//!   writes the buffer elsewhere too (a stencil's adjoint adds into `du[i - 1]`, `du[i]`
//!   and `du[i + 1]`): then every add into it is atomic, since a neighbour may be adding
//!   at the same element;
//! - an index that does not depend on the thread (the same address in every thread of a
//!   warp): a warp-aggregated add, a shuffle reduction then one `atomicAdd` per warp;
//! - any other index: `atomicAdd`.
//!
//! Anything outside the kernel subset (buffers allocated in the body, calls, loops whose
//! adjoint needs a tape, 2-D buffers, generic floats) is an error naming it.

use super::cuda_helpers::{BLOCK_ADD, UNIFORM_ADD};
use crate::ir::*;
use crate::parse::signature::FloatTy;
use std::fmt::Write;

/// How a `+=` into a buffer is emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddKind {
    /// At the thread's own index: a plain add.
    Own,
    /// At an address uniform across the warp: a warp-aggregated atomic add.
    Uniform,
    /// Anywhere else: an atomic add.
    Atomic,
}

/// The CUDA C text of kernel `name` computing `f`, an element function's program whose
/// parameter 0 is the thread index; `int_elem(p)` is the C element type of the integer
/// slice parameter named `p` (from its Rust type).
pub fn kernel(
    f: &Function,
    name: &str,
    float: &FloatTy,
    int_elem: &dyn Fn(&str) -> Option<&'static str>,
) -> Result<String, String> {
    kernel_with_count(f, name, float, int_elem, None)
}

/// [`kernel`] of a program whose integer parameter `threads` is the number of elements,
/// which may be fewer than the kernel's threads (the gather form's, see
/// `derivative::gather`): the kernel parameter `phidiff_elements`.
pub fn kernel_with_count(
    f: &Function,
    name: &str,
    float: &FloatTy,
    int_elem: &dyn Fn(&str) -> Option<&'static str>,
    threads: Option<usize>,
) -> Result<String, String> {
    let real = match float {
        FloatTy::F64 => "double",
        FloatTy::F32 => "float",
        FloatTy::Generic(t) => {
            return Err(format!(
                "a CUDA kernel needs a concrete float type (`f64` or `f32`), not the generic `{t}`"
            ))
        }
    };
    let mut cx = Cx {
        f,
        real,
        out: String::new(),
        depth: 1,
        uses_uniform: false,
        thread: None,
        threads,
        owned: Default::default(),
        varies: Default::default(),
        block_adds: Default::default(),
    };
    let params = cx.params(int_elem)?;
    cx.owned = cx.owned_buffers();
    cx.block_adds = cx.block_summed_adds();
    let yields = f.block(f.body).yields.clone();
    let block_adds: Vec<(Inst, usize)> = {
        let mut v: Vec<(Inst, usize)> = cx.block_adds.iter().map(|(i, k)| (*i, *k)).collect();
        v.sort_by_key(|(_, k)| *k);
        v
    };
    let mut sig = params.join(", ");
    if !sig.is_empty() {
        sig.push_str(", ");
    }
    sig.push_str("const unsigned long long phidiff_n");
    if !yields.is_empty() {
        let _ = write!(sig, ", {real}* phidiff_adjoints");
    }
    let thread = cx.thread.expect("checked in params");
    let tname = cx.name(thread);
    cx.line(&format!("const long long {tname} = (long long)(blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x);"));
    if yields.is_empty() && block_adds.is_empty() {
        cx.line(&format!("if ({tname} >= (long long)phidiff_n) return;"));
        cx.block(f.body)?;
    } else {
        // The scalar adjoints, and the adds every thread makes once at one address, are
        // summed over the block (`phidiff_add_block`), which every thread of the block
        // must reach: the threads past `n` skip the body instead of returning, and add
        // zero. (Thread 0 of a block, which makes the block's add, is never past `n`.)
        for k in 0..yields.len() {
            cx.line(&format!("{real} phidiff_scalar{k} = 0;"));
        }
        for (_, k) in &block_adds {
            cx.line(&format!("{real} phidiff_sum{k} = 0;"));
            cx.line(&format!("long long phidiff_at{k} = 0;"));
        }
        cx.line(&format!("if ({tname} < (long long)phidiff_n) {{"));
        cx.depth += 1;
        cx.block(f.body)?;
        for (k, y) in yields.iter().enumerate() {
            let v = cx.val(*y);
            cx.line(&format!("phidiff_scalar{k} = {v};"));
        }
        cx.depth -= 1;
        cx.line("}");
        for k in 0..yields.len() {
            cx.line(&format!(
                "phidiff_add_block(&phidiff_adjoints[{k}], phidiff_scalar{k});"
            ));
        }
        for (i, k) in &block_adds {
            let InstKind::StoreAdd(buf, ..) = &f.inst(*i).kind else {
                unreachable!("a block add is an add")
            };
            let BufKind::Param(n) = f.buf(*buf).kind else {
                unreachable!("checked in block_summed_adds")
            };
            let b = cx.param_name(n);
            cx.line(&format!(
                "phidiff_add_block(&{b}[phidiff_at{k}], phidiff_sum{k});"
            ));
        }
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "// Generated by phidiff from the element function `{}`.",
        f.name
    );
    if cx.uses_uniform {
        text.push_str(UNIFORM_ADD);
    }
    if !yields.is_empty() || !block_adds.is_empty() {
        text.push_str(BLOCK_ADD);
    }
    let _ = writeln!(text, "extern \"C\" __global__ void {name}({sig}) {{");
    text.push_str(&cx.out);
    text.push_str("}\n");
    Ok(text)
}

struct Cx<'a> {
    f: &'a Function,
    real: &'static str,
    out: String,
    depth: usize,
    uses_uniform: bool,
    /// The thread index (the value of parameter 0).
    thread: Option<Value>,
    /// The parameter holding the number of threads, if one does.
    threads: Option<usize>,
    /// The buffers each thread writes only in elements of its own (see `owned_buffers`).
    owned: std::collections::HashSet<Buf>,
    /// `from_thread`'s answers so far.
    varies: std::cell::RefCell<std::collections::HashMap<Value, bool>>,
    /// The adds summed over the block (see `block_summed_adds`), numbered.
    block_adds: std::collections::HashMap<Inst, usize>,
}

/// C and CUDA keywords a Rust name could collide with.
const RESERVED: &[&str] = &[
    "auto",
    "char",
    "double",
    "float",
    "int",
    "long",
    "short",
    "signed",
    "unsigned",
    "void",
    "volatile",
    "register",
    "restrict",
    "switch",
    "case",
    "default",
    "goto",
    "sizeof",
    "typedef",
    "union",
    "extern",
    "inline",
    "template",
    "typename",
    "class",
    "namespace",
    "new",
    "delete",
    "this",
    "bool",
    "true",
    "false",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
];

impl Cx<'_> {
    fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// A parameter's C name: its Rust name, with `_` appended where that would collide
    /// with a C keyword or a name of the generated code (`v12`, `c3`, `next0`, `phidiff_*`).
    fn param_name(&self, n: usize) -> String {
        let name = &self.f.params[n].name;
        let generated = ["v", "c", "next"].iter().any(|p| {
            name.strip_prefix(p)
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        }) || name.starts_with("phidiff_");
        if RESERVED.contains(&name.as_str()) || generated {
            format!("{name}_")
        } else {
            name.clone()
        }
    }

    fn params(
        &mut self,
        int_elem: &dyn Fn(&str) -> Option<&'static str>,
    ) -> Result<Vec<String>, String> {
        let f = self.f;
        let mut out = Vec::new();
        for (n, p) in f.params.iter().enumerate() {
            if Some(n) == self.threads {
                out.push("const long long phidiff_elements".into());
                continue;
            }
            let name = self.param_name(n);
            match &p.kind {
                ParamKind::Scalar(Ty::Int) if n == 0 => {}
                ParamKind::Scalar(_) if n == 0 => {
                    return Err(format!(
                        "the first parameter of a CUDA element function is the thread index (`{}: usize`)",
                        p.name
                    ))
                }
                ParamKind::Scalar(Ty::Float) => out.push(format!("const {} {name}", self.real)),
                ParamKind::Scalar(Ty::Int) => out.push(format!("const long long {name}")),
                ParamKind::Scalar(Ty::Bool) => out.push(format!("const bool {name}")),
                ParamKind::Buffer { buf, mutable } => {
                    let data = f.buf(*buf);
                    if data.rank != 1 {
                        return Err(format!(
                            "`{}`: CUDA kernels take flat slices (index rows as `a[i * n + j]`)",
                            p.name
                        ));
                    }
                    let elem = match data.elem {
                        Ty::Float => self.real,
                        _ => int_elem(&p.name).ok_or_else(|| {
                            format!("`{}`: integer slices in CUDA kernels are `&[usize]`, `&[u32]`, `&[i32]`, `&[i64]` or `&[u64]`", p.name)
                        })?,
                    };
                    let c = if *mutable { "" } else { "const " };
                    out.push(format!("{c}{elem}* __restrict__ {name}"));
                    out.push(format!("const unsigned long long phidiff_len_{name}"));
                }
                ParamKind::Opaque => {
                    return Err(format!(
                        "`{}`: CUDA kernels take slices, floats, integers and bools",
                        p.name
                    ))
                }
            }
        }
        // The thread index is the value of parameter 0.
        f.walk(f.body, &mut |i| {
            if let InstKind::Param(0) = f.inst(i).kind {
                self.thread = Some(f.inst(i).results[0]);
            }
        });
        if self.thread.is_none() {
            return Err("a CUDA element function starts with the thread index `i: usize`".into());
        }
        Ok(out)
    }

    fn ty(&self, v: Value) -> &'static str {
        match self.f.ty(v) {
            Ty::Float => self.real,
            Ty::Int => "long long",
            Ty::Bool => "bool",
        }
    }

    /// The C name of a value.
    fn name(&self, v: Value) -> String {
        let f = self.f;
        if let ValueDef::Result(i, 0) = f.value(v).def {
            if let InstKind::Param(n) = f.inst(i).kind {
                if Some(n) == self.threads {
                    return "phidiff_elements".into();
                }
                return self.param_name(n);
            }
        }
        format!("v{}", v.0)
    }

    /// A use of `v`: constants inline.
    fn val(&self, v: Value) -> String {
        if let ValueDef::Result(i, 0) = self.f.value(v).def {
            match self.f.inst(i).kind {
                InstKind::FConst(c) => return self.float_literal(c),
                InstKind::IConst(c) => return format!("{c}LL"),
                InstKind::BConst(c) => return c.to_string(),
                _ => {}
            }
        }
        self.name(v)
    }

    fn float_literal(&self, c: f64) -> String {
        let suffix = if self.real == "float" { "f" } else { "" };
        if c.is_nan() {
            return format!("(({})(0.0/0.0))", self.real);
        }
        if c.is_infinite() {
            let s = if c > 0.0 { "" } else { "-" };
            return format!("(({}){s}(1.0/0.0))", self.real);
        }
        let text = format!("{c:?}");
        let text = if text.contains('.') || text.contains('e') {
            text
        } else {
            format!("{text}.0")
        };
        if c.is_sign_negative() {
            format!("({text}{suffix})")
        } else {
            format!("{text}{suffix}")
        }
    }

    fn let_value(&mut self, i: Inst, expr: String) {
        let r = self.f.inst(i).results[0];
        let line = format!("const {} {} = {expr};", self.ty(r), self.name(r));
        self.line(&line);
    }

    fn block(&mut self, b: Block) -> Result<(), String> {
        for &i in &self.f.block(b).insts.clone() {
            self.inst(i)?;
        }
        Ok(())
    }

    /// The element `buf[idx]`, checked against the buffer's rank.
    fn elem(&self, buf: Buf, idx: &[Value]) -> Result<String, String> {
        let data = self.f.buf(buf);
        match (&data.kind, idx) {
            (BufKind::Param(n), [k]) => Ok(format!("{}[{}]", self.param_name(*n), self.val(*k))),
            (BufKind::Param(_), _) => {
                Err(format!("`{}`: 2-D indexing in a CUDA kernel", data.name))
            }
            _ => Err(format!(
                "`{}`: a buffer made inside a CUDA kernel (only the kernel's slices)",
                data.name
            )),
        }
    }

    /// Whether `v` may differ between threads.
    fn from_thread(&self, v: Value) -> bool {
        if let Some(&known) = self.varies.borrow().get(&v) {
            return known;
        }
        let varies = self.from_thread_uncached(v);
        self.varies.borrow_mut().insert(v, varies);
        varies
    }

    fn from_thread_uncached(&self, v: Value) -> bool {
        let f = self.f;
        if Some(v) == self.thread {
            return true;
        }
        match f.value(v).def {
            ValueDef::Result(d, k) => match &f.inst(d).kind {
                InstKind::Binary(_, a, b) => self.from_thread(*a) || self.from_thread(*b),
                InstKind::Unary(_, a) | InstKind::Cast { value: a, .. } => self.from_thread(*a),
                InstKind::Load(_, idx) => idx.iter().any(|k| self.from_thread(*k)),
                // A branch's result is the same in every thread when its condition and
                // both yields are.
                InstKind::If {
                    cond,
                    then_blk,
                    else_blk,
                } => {
                    self.from_thread(*cond)
                        || [then_blk, else_blk].iter().any(|b| {
                            f.block(**b)
                                .yields
                                .get(k as usize)
                                .is_none_or(|y| self.from_thread(*y))
                        })
                }
                InstKind::Math(_, args) => args.iter().any(|a| self.from_thread(*a)),
                InstKind::FConst(_)
                | InstKind::IConst(_)
                | InstKind::BConst(_)
                | InstKind::Param(_)
                | InstKind::Len(..) => false,
                // Cells, calls, loops' results: may vary.
                _ => true,
            },
            // A `for` loop's index runs the same way in every thread that runs the loop
            // when its bounds are the same (an atom loop in a pose score). φs may vary.
            ValueDef::LoopIndex(l) => match &f.inst(l).kind {
                InstKind::For { range, .. } => [Some(range.start), Some(range.end), range.step]
                    .into_iter()
                    .flatten()
                    .any(|b| self.from_thread(b)),
                _ => true,
            },
            ValueDef::LoopParam(..) => true,
        }
    }

    /// The buffers each thread writes (`=` or `+=`) only in elements of its own: every
    /// write at `a·i + c`, one stride `a ≥ 1` for all and `0 ≤ c < a` constants (`i` itself,
    /// or `poses[3 * i + k]`), so no two threads meet at an element. In a stencil's
    /// adjoint, thread `i` adds into `du[i - 1]`, `du[i]` and `du[i + 1]`: its add at `i`
    /// meets its neighbours' adds there, so `du` is not owned, and even that add is atomic.
    fn owned_buffers(&self) -> std::collections::HashSet<Buf> {
        let ix = crate::derivative::gather::Indexing::new(self.f, &|_| false);
        let mut stride: std::collections::HashMap<Buf, Option<i128>> = Default::default();
        self.f.walk(self.f.body, &mut |i| {
            if let InstKind::Store(buf, idx, _) | InstKind::StoreAdd(buf, idx, _) =
                &self.f.inst(i).kind
            {
                let here = match idx.as_slice() {
                    [k] => ix.affine(*k).and_then(|a| {
                        let fits =
                            a.coef >= 1 && a.terms.is_empty() && (0..a.coef).contains(&a.constant);
                        fits.then_some(a.coef)
                    }),
                    _ => None,
                };
                let entry = stride.entry(*buf).or_insert(here);
                if *entry != here {
                    *entry = None;
                }
            }
        });
        stride
            .into_iter()
            .filter_map(|(b, a)| a.map(|_| b))
            .collect()
    }

    /// The adds every thread makes exactly once, at an address the same in every thread
    /// (`total[0] += ..` in the body, outside branches and loops), into a slice the kernel
    /// does not read: summed over the block first, then one `atomicAdd` per block instead
    /// of one per warp (every warp of the grid meets at that address).
    fn block_summed_adds(&self) -> std::collections::HashMap<Inst, usize> {
        let f = self.f;
        let mut loaded = std::collections::HashSet::new();
        f.walk(f.body, &mut |i| {
            if let InstKind::Load(b, _) = f.inst(i).kind {
                loaded.insert(b);
            }
        });
        let mut out = std::collections::HashMap::new();
        for &i in &f.block(f.body).insts {
            if let InstKind::StoreAdd(buf, idx, _) = &f.inst(i).kind {
                let param = matches!(f.buf(*buf).kind, BufKind::Param(_));
                if param
                    && idx.len() == 1
                    && !self.owned.contains(buf)
                    && !loaded.contains(buf)
                    && !self.from_thread(idx[0])
                {
                    let k = out.len();
                    out.insert(i, k);
                }
            }
        }
        out
    }

    /// How a `+=` into `buf` at index `k` is emitted.
    fn add_kind(&self, buf: Buf, k: Value) -> AddKind {
        if self.owned.contains(&buf) {
            AddKind::Own
        } else if !self.from_thread(k) {
            AddKind::Uniform
        } else {
            AddKind::Atomic
        }
    }

    fn math(&self, name: &str, args: &[String]) -> Result<String, String> {
        let a = |k: usize| args[k].clone();
        let real = self.real;
        Ok(match name {
            "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh"
            | "asinh" | "acosh" | "atanh" | "exp" | "exp2" | "log10" | "log2" | "sqrt" | "cbrt"
            | "floor" | "ceil" | "round" | "trunc" => format!("{name}({})", a(0)),
            "ln" => format!("log({})", a(0)),
            "ln_1p" => format!("log1p({})", a(0)),
            "exp_m1" => format!("expm1({})", a(0)),
            "log" => format!("(log({}) / log({}))", a(0), a(1)),
            "recip" => format!("(({real})1 / {})", a(0)),
            "abs" => format!("fabs({})", a(0)),
            "signum" => format!("(isnan({0}) ? {0} : copysign(({real})1, {0}))", a(0)),
            // A small constant power as products (`pow` is slow on a GPU).
            "powi" => match args[1]
                .strip_suffix("LL")
                .and_then(|k| k.parse::<i64>().ok())
            {
                Some(0) => format!("(({real})1)"),
                Some(k) if (1..=4).contains(&k.abs()) => {
                    let x = a(0);
                    let prod = vec![x.as_str(); k.unsigned_abs() as usize].join(" * ");
                    if k > 0 {
                        format!("({prod})")
                    } else {
                        format!("(({real})1 / ({prod}))")
                    }
                }
                _ => format!("pow({}, ({real}){})", a(0), a(1)),
            },
            "powf" => format!("pow({}, {})", a(0), a(1)),
            "atan2" => format!("atan2({}, {})", a(0), a(1)),
            "hypot" => format!("hypot({}, {})", a(0), a(1)),
            "max" => format!("fmax({}, {})", a(0), a(1)),
            "min" => format!("fmin({}, {})", a(0), a(1)),
            "mul_add" => format!("fma({}, {}, {})", a(0), a(1), a(2)),
            other => return Err(format!("`{other}` has no CUDA counterpart here")),
        })
    }

    fn inst(&mut self, i: Inst) -> Result<(), String> {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i).clone();
        match &data.kind {
            FConst(_) | IConst(_) | BConst(_) | Param(_) => {}
            Unary(UnOp::Neg, a) => {
                let e = format!("-{}", self.val(*a));
                self.let_value(i, e);
            }
            Unary(UnOp::Not, a) => {
                let e = format!("!{}", self.val(*a));
                self.let_value(i, e);
            }
            Unary(UnOp::Test(t), a) => {
                let x = self.val(*a);
                let e = match t {
                    FloatTest::IsNan => format!("isnan({x})"),
                    FloatTest::IsFinite => format!("isfinite({x})"),
                    FloatTest::IsInfinite => format!("isinf({x})"),
                    FloatTest::IsSignNegative => format!("signbit({x})"),
                    FloatTest::IsSignPositive => format!("!signbit({x})"),
                    FloatTest::IsNormal | FloatTest::IsSubnormal => {
                        // The smallest normal number of the kernel's float type.
                        let min = match self.real {
                            "float" => "1.17549435e-38f",
                            _ => "2.2250738585072014e-308",
                        };
                        match t {
                            FloatTest::IsNormal => format!("(isfinite({x}) && fabs({x}) >= {min})"),
                            _ => format!("({x} != 0 && fabs({x}) < {min})"),
                        }
                    }
                };
                self.let_value(i, e);
            }
            Binary(op, a, b) => {
                let (x, y) = (self.val(*a), self.val(*b));
                let e = if *op == BinOp::Rem && f.ty(*a) == Ty::Float {
                    format!("fmod({x}, {y})")
                } else if *op == BinOp::IntLike {
                    // C converts between integer types implicitly.
                    x
                } else {
                    format!("{x} {} {y}", op.symbol())
                };
                self.let_value(i, e);
            }
            Math(name, args) => {
                let args: Vec<String> = args.iter().map(|a| self.val(*a)).collect();
                let e = self.math(name, &args)?;
                self.let_value(i, e);
            }
            Cast { value, to, int, .. } => {
                let v = self.val(*value);
                let e = match to {
                    Ty::Float => format!("({}){v}", self.real),
                    _ => match int {
                        Some(IntTy::U32) => format!("(long long)(unsigned int){v}"),
                        Some(IntTy::I32) => format!("(long long)(int){v}"),
                        _ => format!("(long long){v}"),
                    },
                };
                self.let_value(i, e);
            }
            Load(buf, idx) => {
                let e = self.elem(*buf, idx)?;
                let r = data.results[0];
                let e = if f.ty(r) == Ty::Int { format!("(long long){e}") } else { e };
                self.let_value(i, e);
            }
            Store(buf, idx, v) => {
                let (p, v) = (self.elem(*buf, idx)?, self.val(*v));
                self.line(&format!("{p} = {v};"));
            }
            StoreAdd(buf, idx, v) if self.block_adds.contains_key(&i) => {
                let k = self.block_adds[&i];
                let (at, x) = (self.val(idx[0]), self.val(*v));
                self.elem(*buf, idx)?;
                self.line(&format!("phidiff_at{k} = {at};"));
                self.line(&format!("phidiff_sum{k} += {x};"));
            }
            StoreAdd(buf, idx, v) => {
                let (p, x) = (self.elem(*buf, idx)?, self.val(*v));
                match self.add_kind(*buf, idx[0]) {
                    AddKind::Own => self.line(&format!("{p} += {x};")),
                    AddKind::Uniform => {
                        self.uses_uniform = true;
                        self.line(&format!("phidiff_add_uniform(&{p}, {x});"));
                    }
                    AddKind::Atomic => self.line(&format!("atomicAdd(&{p}, {x});")),
                }
            }
            Len(buf, idx) if idx.is_empty() => {
                let BufKind::Param(n) = f.buf(*buf).kind else {
                    return Err(format!("`{}`: a buffer made inside a CUDA kernel", f.buf(*buf).name));
                };
                let e = format!("(long long)phidiff_len_{}", self.param_name(n));
                self.let_value(i, e);
            }
            Assert { cond, .. } => {
                let c = self.val(*cond);
                self.line(&format!("if (!({c})) {{ __trap(); }}"));
            }
            Fail { .. } => return Err("a CUDA element function cannot fail (return `()`)".into()),
            If { cond, then_blk, else_blk } => {
                for r in &data.results {
                    let line = format!("{} {};", self.ty(*r), self.name(*r));
                    self.line(&line);
                }
                let c = self.val(*cond);
                self.line(&format!("if ({c}) {{"));
                self.arm(*then_blk, &data.results)?;
                self.line("} else {");
                self.arm(*else_blk, &data.results)?;
                self.line("}");
            }
            For { .. } if f.parallel.contains_key(&i) => {
                return Err("a rayon loop inside a CUDA kernel".into());
            }
            For { range, index, params, inits, body, exit } => {
                let (s, e) = (self.val(range.start), self.val(range.end));
                let step = range.step.map_or("1LL".to_string(), |st| self.val(st));
                let idx = self.name(*index);
                let counted = self.loop_pre(i, params, inits);
                let head = if range.rev {
                    format!("for (long long {idx} = {e} - 1LL; {idx} >= {s}; {idx} -= {step}) {{")
                } else {
                    format!("for (long long {idx} = {s}; {idx} < {e}; {idx} += {step}) {{")
                };
                self.line(&head);
                self.loop_body(i, params, *body, exit, counted)?;
                self.line("}");
                self.loop_post(i, params);
            }
            While { cond, params, inits, body, exit } => {
                let counted = self.loop_pre(i, params, inits);
                self.line("while (true) {");
                self.depth += 1;
                self.block(*cond)?;
                let c = self.val(f.block(*cond).yields[0]);
                self.line(&format!("if (!({c})) break;"));
                self.depth -= 1;
                self.loop_body(i, params, *body, exit, counted)?;
                self.line("}");
                self.loop_post(i, params);
            }
            CellDecl(c, v) => {
                let line = format!("{} c{} = {};", self.ty(*v), c.0, self.val(*v));
                self.line(&line);
            }
            CellGet(c) => self.let_value(i, format!("c{}", c.0)),
            CellSet(c, v) => {
                let line = format!("c{} = {};", c.0, self.val(*v));
                self.line(&line);
            }
            CellAdd(c, v) => {
                let line = format!("c{} += {};", c.0, self.val(*v));
                self.line(&line);
            }
            Alloc { buf, .. } => {
                return Err(format!(
                    "`{}`: a buffer allocated in a CUDA kernel (a loop whose adjoint needs a tape, or a `vec!`)",
                    f.buf(*buf).name
                ))
            }
            TapeEnsure(..) | TapeEnsureRow(..) => {
                return Err("a loop whose adjoint needs a tape (CUDA kernels support loops whose adjoint recomputes what it needs)".into())
            }
            Call { callee, .. } => return Err(format!("a call of `{}` in a CUDA kernel", callee.name())),
            other => return Err(format!("{} in a CUDA kernel", describe(other))),
        }
        Ok(())
    }

    fn arm(&mut self, b: Block, results: &[Value]) -> Result<(), String> {
        self.depth += 1;
        self.block(b)?;
        let ys = self.f.block(b).yields.clone();
        for (r, y) in results.iter().zip(&ys) {
            let line = format!("{} = {};", self.name(*r), self.val(*y));
            self.line(&line);
        }
        self.depth -= 1;
        Ok(())
    }

    /// Declares a loop's φs (and its trip counter when used); returns whether counted.
    fn loop_pre(&mut self, i: Inst, params: &[Value], inits: &[Value]) -> bool {
        for (p, v) in params.iter().zip(inits) {
            let line = format!("{} {} = {};", self.ty(*p), self.name(*p), self.val(*v));
            self.line(&line);
        }
        let trip = *self.f.inst(i).results.last().expect("trip count");
        let mut used = false;
        self.f.walk(self.f.body, &mut |j| {
            used |= self.f.operands(j).contains(&trip)
        });
        for b in &self.f.blocks {
            used |= b.yields.contains(&trip);
        }
        if used {
            let line = format!("long long {} = 0;", self.name(trip));
            self.line(&line);
        }
        used
    }

    fn loop_body(
        &mut self,
        i: Inst,
        params: &[Value],
        body: Block,
        exit: &[Value],
        counted: bool,
    ) -> Result<(), String> {
        self.depth += 1;
        if !exit.is_empty() {
            let flags: Vec<String> = exit.iter().map(|e| self.val(*e)).collect();
            self.line(&format!("if ({}) break;", flags.join(" || ")));
        }
        if counted {
            let trip = *self.f.inst(i).results.last().expect("trip count");
            let line = format!("{} += 1;", self.name(trip));
            self.line(&line);
        }
        self.block(body)?;
        let ys = self.f.block(body).yields.clone();
        // Simultaneous update of the φs through temporaries.
        for (k, y) in ys.iter().enumerate() {
            let line = format!("const {} next{k} = {};", self.ty(params[k]), self.val(*y));
            self.line(&line);
        }
        for (k, p) in params.iter().enumerate() {
            let line = format!("{} = next{k};", self.name(*p));
            self.line(&line);
        }
        self.depth -= 1;
        Ok(())
    }

    fn loop_post(&mut self, i: Inst, params: &[Value]) {
        let results = self.f.inst(i).results.clone();
        for (r, p) in results.iter().zip(params) {
            let line = format!(
                "const {} {} = {};",
                self.ty(*r),
                self.name(*r),
                self.name(*p)
            );
            self.line(&line);
        }
    }
}

/// A short description of an instruction the kernel subset lacks.
fn describe(k: &InstKind) -> &'static str {
    match k {
        InstKind::CopyFrom { .. } => "`copy_from_slice`",
        InstKind::Swap(..) => "`std::mem::swap`",
        InstKind::AddBuf { .. } | InstKind::ZeroBuf(_) | InstKind::SumBuf(_) => {
            "a whole-buffer operation"
        }
        InstKind::SaveRow { .. } | InstKind::ReturnRow { .. } => "a snapshot of a buffer",
        InstKind::CkNew { .. }
        | InstKind::CkForwardStep { .. }
        | InstKind::CkEndForward { .. }
        | InstKind::CkReverse { .. } => "a checkpointed loop",
        InstKind::Len(..) => "the length of a row",
        _ => "this operation",
    }
}

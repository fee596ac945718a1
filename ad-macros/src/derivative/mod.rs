//! Derivative programs: forward (tangent) and reverse (adjoint) IR functions built from a
//! primal IR function and its activity.

pub mod batch;
pub mod forward;
pub mod gather;
pub mod parallel;
pub mod phi;
pub mod reverse;
pub mod rules;
pub mod segments;
pub mod symbolic;

use crate::ir::builder::Builder;
use crate::ir::*;

/// The tangent or shadow parameter name of `name`: `dx` for `x`, or `dx_` (and so on) if
/// another parameter already has that name.
pub fn shadow_name<'a>(name: &str, params: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut out = format!("d{name}");
    while params.clone().any(|q| q == out) {
        out.push('_');
    }
    out
}

/// The name of `_rev`'s seed parameter: `seed`, or `seed_` (and so on) if a parameter
/// already has that name.
pub fn seed_name<'a>(params: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut out = "seed".to_string();
    while params.clone().any(|q| q == out) {
        out.push('_');
    }
    out
}

/// The parameters of a derivative function: each primal parameter, followed by its
/// derivative parameter (tangent or shadow) where one is wanted.
pub struct CopiedParams {
    pub remap: Remap,
    /// Index of primal parameter `n` in the derivative function.
    pub index: Vec<usize>,
    /// Index of the derivative parameter of primal parameter `n`.
    pub derivative_index: Vec<Option<usize>>,
    /// The derivative buffer of each primal buffer that has one.
    pub derivative_buf: Vec<Option<Buf>>,
}

/// Copies `f`'s parameters into `out`; `wants(n)` gives `Some(mutable)` for each parameter
/// that gets a derivative parameter after it (`mutable` matters for buffers only).
pub fn copy_params(
    f: &Function,
    out: &mut Function,
    wants: &dyn Fn(usize) -> Option<bool>,
) -> CopiedParams {
    let mut c = CopiedParams {
        remap: Remap::new(f),
        index: vec![0; f.params.len()],
        derivative_index: vec![None; f.params.len()],
        derivative_buf: vec![None; f.bufs.len()],
    };
    let names = || f.params.iter().map(|q| q.name.as_str());
    for (n, p) in f.params.iter().enumerate() {
        c.index[n] = out.params.len();
        let kind = match &p.kind {
            ParamKind::Buffer { buf, mutable } => {
                let nb = out.new_buf(BufData {
                    kind: BufKind::Param(out.params.len()),
                    ..f.buf(*buf).clone()
                });
                c.remap.bufs[buf.index()] = Some(nb);
                ParamKind::Buffer {
                    buf: nb,
                    mutable: *mutable,
                }
            }
            k => k.clone(),
        };
        out.params.push(ParamInfo {
            name: p.name.clone(),
            kind,
            span: p.span,
        });
        let Some(mutable) = wants(n) else { continue };
        c.derivative_index[n] = Some(out.params.len());
        let name = shadow_name(&p.name, names());
        let kind = match &p.kind {
            ParamKind::Buffer { buf, .. } => {
                let db = out.new_buf(BufData {
                    name: name.clone(),
                    kind: BufKind::Param(out.params.len()),
                    ..f.buf(*buf).clone()
                });
                c.derivative_buf[buf.index()] = Some(db);
                ParamKind::Buffer { buf: db, mutable }
            }
            k => k.clone(),
        };
        out.params.push(ParamInfo {
            name,
            kind,
            span: proc_macro2::Span::call_site(),
        });
    }
    c
}

/// Primal → derivative-program mapping of values and buffers, and the copying of
/// instructions without control flow.
pub struct Remap {
    pub values: Vec<Option<Value>>,
    pub bufs: Vec<Option<Buf>>,
}

impl Remap {
    pub fn new(f: &Function) -> Self {
        Remap {
            values: vec![None; f.values.len()],
            bufs: vec![None; f.bufs.len()],
        }
    }
    pub fn v(&self, v: Value) -> Value {
        self.values[v.index()]
            .unwrap_or_else(|| panic!("phidiff internal error: {v} used before it was copied"))
    }
    pub fn set(&mut self, old: Value, new: Value) {
        self.values[old.index()] = Some(new);
    }
    pub fn b(&self, b: Buf) -> Buf {
        self.bufs[b.index()]
            .unwrap_or_else(|| panic!("phidiff internal error: {b} used before it was copied"))
    }
    pub fn arg(&self, a: &CallArg) -> CallArg {
        match a {
            CallArg::Scalar(v) => CallArg::Scalar(self.v(*v)),
            CallArg::Buf {
                buf,
                mutable,
                range,
            } => CallArg::Buf {
                buf: self.b(*buf),
                mutable: *mutable,
                range: range.map(|p| p.map(|x| self.v(x))),
            },
            CallArg::Opaque(t) => CallArg::Opaque(t.clone()),
        }
    }

    pub fn vs(&self, vs: &[Value]) -> Vec<Value> {
        vs.iter().map(|v| self.v(*v)).collect()
    }

    /// Copies an instruction that owns no blocks and is not a call; returns its first result.
    pub fn copy_simple(&mut self, b: &mut Builder, f: &Function, i: Inst) -> Option<Value> {
        use InstKind::*;
        let data = f.inst(i);
        let kind = match &data.kind {
            FConst(c) => FConst(*c),
            IConst(c) => IConst(*c),
            BConst(c) => BConst(*c),
            Param(n) => Param(*n),
            Unary(op, a) => Unary(*op, self.v(*a)),
            Binary(op, a, c) => Binary(*op, self.v(*a), self.v(*c)),
            Math(n, args) => Math(n, self.vs(args)),
            Cast {
                value,
                to,
                int,
                float,
            } => Cast {
                value: self.v(*value),
                to: *to,
                int: *int,
                float: *float,
            },
            Load(buf, idx) => Load(self.b(*buf), self.vs(idx)),
            Store(buf, idx, v) => Store(self.b(*buf), self.vs(idx), self.v(*v)),
            StoreAdd(buf, idx, v) => StoreAdd(self.b(*buf), self.vs(idx), self.v(*v)),
            Len(buf, idx) => Len(self.b(*buf), self.vs(idx)),
            Alloc { buf, dims, init } => {
                let dims = self.vs(dims);
                let nb = b.func.new_buf(f.buf(*buf).clone());
                self.bufs[buf.index()] = Some(nb);
                let init = match init {
                    AllocInit::Fill(v) => AllocInit::Fill(self.v(*v)),
                    AllocInit::Copy(src) => AllocInit::Copy(self.b(*src)),
                    AllocInit::Row { tape, idx } => AllocInit::Row {
                        tape: self.b(*tape),
                        idx: self.v(*idx),
                    },
                };
                Alloc {
                    buf: nb,
                    dims,
                    init,
                }
            }
            CopyFrom { dst, src } => CopyFrom {
                dst: self.b(*dst),
                src: self.b(*src),
            },
            Swap(a, c) => Swap(self.b(*a), self.b(*c)),
            AddBuf { dst, src } => AddBuf {
                dst: self.b(*dst),
                src: self.b(*src),
            },
            ZeroBuf(x) => ZeroBuf(self.b(*x)),
            SumBuf(x) => SumBuf(self.b(*x)),
            Assert { cond, message } => Assert {
                cond: self.v(*cond),
                message: message.clone(),
            },
            Fail { cond, site, args } => Fail {
                cond: self.v(*cond),
                site: *site,
                args: args.iter().map(|a| self.v(*a)).collect(),
            },
            other => unreachable!("copy_simple on {other:?}"),
        };
        let tys: Vec<Ty> = data.results.iter().map(|r| f.ty(*r)).collect();
        let ni = b.push(kind, &tys, None);
        let results = b.func.inst(ni).results.clone();
        for (r, nr) in data.results.iter().zip(&results) {
            self.set(*r, *nr);
            b.func.values[nr.index()].name = f.value(*r).name.clone();
        }
        results.first().copied()
    }
}

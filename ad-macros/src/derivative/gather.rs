//! The gather form of a CUDA element function's adjoint (ParDiff's summation-aware
//! transformation, on a GPU): the adds at shifts of the thread index become sums that
//! each thread makes for its own element, so no atomic is needed.
//!
//! The adjoint of a stencil adds, in thread `t`, into `du[t - 1]`, `du[t]` and `du[t + 1]`:
//! a neighbour adds at the same element, so on a GPU every one of those adds is an
//! `atomicAdd`. The gather form turns the loop around: thread `j` owns `du[j]` and sums what
//! lands there, the add at shift `k` of thread `t = j − k` for every shift `k` of the
//! adjoint. It runs:
//! - the *home* instance `t = j`: the whole adjoint of element `j` (its stores, its owned
//!   adds, its scalar adjoints), its adds at shift 0 into the sum;
//! - one *guest* instance per other shift `k`, `t = j − k` when `0 ≤ t < n`: the adjoint of
//!   element `t` cut down to what its add at shift `k` needs (its primal values
//!   recomputed, its guards followed), that add going into the sum and nothing else
//!   written;
//! - then `du[j] += sum`, a plain add.
//!
//! Shifts are `c + Σ aₗ·xₗ`, `c` and `aₗ` integer constants and `xₗ` the length of a slice or
//! an unsigned integer parameter (`du[i - w]` in a 2-D stencil): the same in every thread.
//!
//! A guest reads what element `t` reads, so no thread may write it during the kernel. The
//! output shadow is the one such slice in an adjoint (`dout[t]` is read, then cleared):
//! writes of that kind move to a second kernel, [`Gathered::finish`], run after the first,
//! which keeps only them. Moving them is sound when the slice is only read and written at
//! the thread index, its stores are in no loop, and no read of it can follow one of its
//! stores in the element's program (two branches on the same condition, one negated,
//! never both run: the early-`return` guards of a kernel). Otherwise, or when a guest
//! would read anything else the kernel writes, there is no gather form and the kernel
//! keeps its atomic adds.

use crate::ir::builder::Builder;
use crate::ir::copy::{Copier, Flow};
use crate::ir::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A thread-independent integer of a kernel: a length, or an unsigned parameter.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Leaf {
    /// Integer parameter `n` of the function.
    Param(usize),
    /// The length of the slice parameter `n`.
    Len(usize),
}

/// An index as `coef·t + constant + Σ terms`, `t` the thread index.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub struct Affine {
    pub coef: i128,
    pub constant: i128,
    pub terms: BTreeMap<Leaf, i128>,
}

impl Affine {
    fn plus(mut self, o: Affine, sign: i128) -> Affine {
        self.coef += sign * o.coef;
        self.constant += sign * o.constant;
        for (l, a) in o.terms {
            let e = self.terms.entry(l).or_insert(0);
            *e += sign * a;
            if *e == 0 {
                self.terms.remove(&l);
            }
        }
        self
    }

    fn scaled(mut self, k: i128) -> Affine {
        self.coef *= k;
        self.constant *= k;
        self.terms.values_mut().for_each(|a| *a *= k);
        self.terms.retain(|_, a| *a != 0);
        self
    }

    /// The same without the thread's part: the shift of an index `t + shift`.
    fn shift(&self) -> Affine {
        Affine {
            coef: 0,
            ..self.clone()
        }
    }

    fn is_zero(&self) -> bool {
        self.coef == 0 && self.constant == 0 && self.terms.is_empty()
    }
}

/// Reads indices of a kernel program as [`Affine`] forms of its thread index.
pub struct Indexing<'a> {
    f: &'a Function,
    /// The values of parameter 0.
    thread: HashSet<Value>,
    /// Whether integer parameter `n` is unsigned (its Rust type).
    unsigned: &'a dyn Fn(usize) -> bool,
}

impl<'a> Indexing<'a> {
    pub fn new(f: &'a Function, unsigned: &'a dyn Fn(usize) -> bool) -> Self {
        let mut thread = HashSet::new();
        f.walk(f.body, &mut |i| {
            if let InstKind::Param(0) = f.inst(i).kind {
                thread.insert(f.inst(i).results[0]);
            }
        });
        Indexing {
            f,
            thread,
            unsigned,
        }
    }

    /// `v` as an [`Affine`] form, if it is one: sums, differences and constant multiples of
    /// the thread index, integer constants, lengths of slices, unsigned parameters, and
    /// casts to `usize` of those.
    pub fn affine(&self, v: Value) -> Option<Affine> {
        self.affine_at(v, 0)
    }

    fn affine_at(&self, v: Value, depth: u32) -> Option<Affine> {
        let f = self.f;
        if self.thread.contains(&v) {
            return Some(Affine {
                coef: 1,
                ..Affine::default()
            });
        }
        if depth > 32 {
            return None;
        }
        let ValueDef::Result(d, 0) = f.value(v).def else {
            return None;
        };
        let leaf = |l: Leaf| Affine {
            terms: BTreeMap::from([(l, 1)]),
            ..Affine::default()
        };
        match &f.inst(d).kind {
            InstKind::IConst(c) => Some(Affine {
                constant: *c,
                ..Affine::default()
            }),
            InstKind::Param(n)
                if matches!(f.params[*n].kind, ParamKind::Scalar(Ty::Int))
                    && (self.unsigned)(*n) =>
            {
                Some(leaf(Leaf::Param(*n)))
            }
            InstKind::Len(b, idx) if idx.is_empty() => match f.buf(*b).kind {
                BufKind::Param(n) => Some(leaf(Leaf::Len(n))),
                _ => None,
            },
            InstKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                let x = self.affine_at(*a, depth + 1)?;
                let y = self.affine_at(*b, depth + 1)?;
                Some(x.plus(y, if *op == BinOp::Add { 1 } else { -1 }))
            }
            InstKind::Binary(BinOp::Mul, a, b) => {
                let x = self.affine_at(*a, depth + 1)?;
                let y = self.affine_at(*b, depth + 1)?;
                let constant =
                    |z: &Affine| (z.coef == 0 && z.terms.is_empty()).then_some(z.constant);
                match (constant(&x), constant(&y)) {
                    (Some(k), _) => Some(y.scaled(k)),
                    (_, Some(k)) => Some(x.scaled(k)),
                    _ => None,
                }
            }
            InstKind::Cast {
                value,
                to: Ty::Int,
                int: Some(IntTy::Usize),
                ..
            } if f.ty(*value) == Ty::Int => self.affine_at(*value, depth + 1),
            _ => None,
        }
    }

    /// The shift `k` of an index `t + k`.
    pub fn shift(&self, idx: &[Value]) -> Option<Affine> {
        match idx {
            [k] => self.affine(*k).filter(|a| a.coef == 1).map(|a| a.shift()),
            _ => None,
        }
    }
}

/// The gather form of an adjoint kernel program: see the module docs.
pub struct Gathered {
    /// The gather kernel's program: the adjoint's parameters, then the number `n` of
    /// elements (an integer, the last parameter), yielding the scalar adjoints as the
    /// adjoint does. It runs for every index below `n` and below the length of each
    /// gathered buffer: an element past `n` may receive shifted adds too.
    pub main: Function,
    /// The stores moved out of [`Gathered::main`] (clearing the output shadows the guests
    /// read), in a program with the same parameters, run after it; it yields nothing.
    pub finish: Option<Function>,
    /// The parameters (slices) summed by the gather, by name.
    pub gathered: Vec<String>,
}

/// The gather form of `rev`, the adjoint program of an element function whose parameter 0
/// is the thread index, if it has one (see the module docs); `unsigned(n)`: whether
/// integer parameter `n` of `rev` is unsigned.
pub fn gather(rev: &Function, unsigned: &dyn Fn(usize) -> bool) -> Option<Gathered> {
    let ix = Indexing::new(rev, unsigned);
    let plan = Plan::of(rev, &ix)?;
    // Built once keeping every store, to see what the guests read.
    let mut probe = build_main(rev, &plan, &HashSet::new());
    crate::ir::dce::dead_code(&mut probe.func);
    let read = probe.guest_reads();
    let written = probe.home_writes();
    let conflicts: HashSet<Buf> = read.intersection(&written).copied().collect();
    let deferred = deferrable(rev, &ix);
    if !conflicts.is_subset(&deferred) {
        return None;
    }
    let mut main = build_main(rev, &plan, &conflicts).func;
    crate::ir::dce::dead_code(&mut main);
    let finish = if conflicts.is_empty() {
        None
    } else {
        let mut finish = build_finish(rev, &conflicts);
        crate::ir::dce::dead_code(&mut finish);
        // The finishing stores read only what the gather kernel leaves as it was.
        let mut reads = HashSet::new();
        finish.walk(finish.body, &mut |i| {
            if let InstKind::Load(b, _) = finish.inst(i).kind {
                reads.insert(b);
            }
        });
        let mut main_writes = HashSet::new();
        main.walk(main.body, &mut |i| main_writes.extend(main.written_bufs(i)));
        if !reads.is_disjoint(&main_writes) {
            return None;
        }
        Some(finish)
    };
    let gathered = plan
        .gathered
        .iter()
        .filter_map(|b| match rev.buf(*b).kind {
            BufKind::Param(n) => Some(rev.params[n].name.clone()),
            _ => None,
        })
        .collect();
    Some(Gathered {
        main,
        finish,
        gathered,
    })
}

/// Which buffers are gathered, and at which shifts.
struct Plan {
    /// Buffers only added into, each add at a shift of the thread index, some at a shift
    /// other than 0.
    gathered: Vec<Buf>,
    /// Every add's shift, by instruction.
    shifts: HashMap<Inst, Affine>,
    /// The shifts other than 0, in order.
    guests: Vec<Affine>,
}

impl Plan {
    fn of(rev: &Function, ix: &Indexing) -> Option<Plan> {
        let mut unsupported = false;
        let mut touched: BTreeMap<Buf, (Vec<Inst>, bool)> = BTreeMap::new();
        rev.walk(rev.body, &mut |i| match &rev.inst(i).kind {
            InstKind::StoreAdd(b, ..) => touched.entry(*b).or_default().0.push(i),
            InstKind::Load(b, _) | InstKind::Store(b, ..) => {
                touched.entry(*b).or_default().1 = true;
            }
            InstKind::Call { .. }
            | InstKind::Alloc { .. }
            | InstKind::CopyFrom { .. }
            | InstKind::Swap(..)
            | InstKind::AddBuf { .. }
            | InstKind::ZeroBuf(_)
            | InstKind::SumBuf(_)
            | InstKind::TapeEnsure(..)
            | InstKind::TapeEnsureRow(..)
            | InstKind::SaveRow { .. }
            | InstKind::ReturnRow { .. }
            | InstKind::CkNew { .. }
            | InstKind::CkForwardStep { .. }
            | InstKind::CkEndForward { .. }
            | InstKind::CkReverse { .. }
            | InstKind::Fail { .. } => unsupported = true,
            _ => {}
        });
        if unsupported || rev.params.is_empty() {
            return None;
        }
        let mut plan = Plan {
            gathered: Vec::new(),
            shifts: HashMap::new(),
            guests: Vec::new(),
        };
        for (b, (adds, other)) in touched {
            if other || !matches!(rev.buf(b).kind, BufKind::Param(_)) {
                continue;
            }
            let shifts: Option<Vec<(Inst, Affine)>> = adds
                .iter()
                .map(|&i| match &rev.inst(i).kind {
                    InstKind::StoreAdd(_, idx, _) => ix.shift(idx).map(|s| (i, s)),
                    _ => None,
                })
                .collect();
            let Some(shifts) = shifts else { continue };
            if shifts.iter().all(|(_, s)| s.is_zero()) {
                continue;
            }
            plan.gathered.push(b);
            for (i, s) in shifts {
                if !s.is_zero() && !plan.guests.contains(&s) {
                    plan.guests.push(s.clone());
                }
                plan.shifts.insert(i, s);
            }
        }
        plan.guests.sort();
        (!plan.gathered.is_empty()).then_some(plan)
    }
}

/// The buffers whose stores may move to a later kernel: those read and written only at
/// the thread index (no adds), stored outside loops, and never read after one of their
/// stores in the element's program.
fn deferrable(rev: &Function, ix: &Indexing) -> HashSet<Buf> {
    let parents = rev.parents();
    let own = |idx: &[Value]| matches!(idx, [k] if ix.affine(*k).is_some_and(|a| a.coef == 1 && a.shift().is_zero()));
    let mut order: Vec<Inst> = Vec::new();
    rev.walk(rev.body, &mut |i| order.push(i));
    let mut ok: HashMap<Buf, bool> = HashMap::new();
    let mut stores: HashMap<Buf, Vec<Inst>> = HashMap::new();
    for &i in &order {
        match &rev.inst(i).kind {
            InstKind::Load(b, idx) => {
                let e = ok.entry(*b).or_insert(true);
                *e &= own(idx);
            }
            InstKind::Store(b, idx, _) => {
                let in_loop = ancestors(&parents, i).any(|(a, _)| {
                    matches!(
                        rev.inst(a).kind,
                        InstKind::For { .. } | InstKind::While { .. }
                    )
                });
                let e = ok.entry(*b).or_insert(true);
                *e &= own(idx) && !in_loop;
                stores.entry(*b).or_default().push(i);
            }
            InstKind::StoreAdd(b, ..) => {
                ok.insert(*b, false);
            }
            _ => {}
        }
    }
    let position: HashMap<Inst, usize> = order.iter().enumerate().map(|(k, i)| (*i, k)).collect();
    let mut out = HashSet::new();
    for (b, fine) in ok {
        if !fine || !stores.contains_key(&b) {
            continue;
        }
        let read_after_store = order.iter().any(|&l| {
            matches!(&rev.inst(l).kind, InstKind::Load(x, _) if *x == b)
                && stores[&b]
                    .iter()
                    .any(|&s| position[&s] < position[&l] && !exclusive(rev, &parents, s, l))
        });
        if !read_after_store {
            out.insert(b);
        }
    }
    out
}

/// The enclosing instructions of `i`, innermost first, each with the block of it that
/// holds `i`.
fn ancestors<'p>(
    parents: &'p HashMap<Inst, (Inst, Block)>,
    i: Inst,
) -> impl Iterator<Item = (Inst, Block)> + 'p {
    std::iter::successors(parents.get(&i).copied(), move |(p, _)| {
        parents.get(p).copied()
    })
}

/// A condition as a literal: the value it tests and whether it is negated. `!x` is `x`
/// negated, and an `if` yielding `true` in one arm and `false` in the other is its
/// condition (the flags early `return`s are lowered to).
fn literal(f: &Function, v: Value) -> (Value, bool) {
    let mut v = v;
    let mut negated = false;
    for _ in 0..64 {
        let ValueDef::Result(d, k) = f.value(v).def else {
            break;
        };
        match &f.inst(d).kind {
            InstKind::Unary(UnOp::Not, a) => {
                v = *a;
                negated = !negated;
            }
            InstKind::If {
                cond,
                then_blk,
                else_blk,
            } => {
                let bool_of = |b: &Block| {
                    let y = *f.block(*b).yields.get(k as usize)?;
                    match f.value(y).def {
                        ValueDef::Result(c, 0) => match f.inst(c).kind {
                            InstKind::BConst(x) => Some(x),
                            _ => None,
                        },
                        _ => None,
                    }
                };
                match (bool_of(then_blk), bool_of(else_blk)) {
                    (Some(true), Some(false)) => v = *cond,
                    (Some(false), Some(true)) => {
                        v = *cond;
                        negated = !negated;
                    }
                    _ => break,
                }
            }
            _ => break,
        }
    }
    (v, negated)
}

/// Whether `a` and `b` never both run: they are in different arms of one `if`, or in arms
/// of two `if`s whose conditions are one literal and its negation.
fn exclusive(f: &Function, parents: &HashMap<Inst, (Inst, Block)>, a: Inst, b: Inst) -> bool {
    // The literal that holds whenever an instruction's enclosing arm runs.
    let arms = |i: Inst| -> Vec<(Inst, bool, (Value, bool))> {
        ancestors(parents, i)
            .filter_map(|(p, blk)| match &f.inst(p).kind {
                InstKind::If { cond, then_blk, .. } => {
                    // The then-arm runs when the literal holds, the else-arm when its
                    // negation does.
                    let then = blk == *then_blk;
                    let (v, neg) = literal(f, *cond);
                    Some((p, then, (v, neg == then)))
                }
                _ => None,
            })
            .collect()
    };
    let (xs, ys) = (arms(a), arms(b));
    xs.iter().any(|(p, arm, (v, neg))| {
        ys.iter()
            .any(|(q, arm2, (w, neg2))| (p == q && arm != arm2) || (v == w && neg != neg2))
    })
}

/// What a copy of the adjoint keeps.
#[derive(Clone, Copy, PartialEq)]
enum Role<'a> {
    /// The thread's own element: everything but the moved stores, its adds at shift 0
    /// into the sums.
    Home,
    /// Another element: only its adds at this shift, into the sums.
    Guest(&'a Affine),
    /// The moved stores only.
    Finish,
}

/// A program being built from `rev`: the same parameters and buffers, under the same
/// numbers.
struct Program {
    func: Function,
    /// The guests' blocks in the copy.
    guest_blocks: Vec<Block>,
}

impl Program {
    /// A program with `rev`'s parameters, then the number of elements.
    fn new(rev: &Function, name: &str) -> Self {
        let mut func = Function::new(name);
        func.params = rev.params.clone();
        func.params.push(ParamInfo {
            name: "__phidiff_n".into(),
            kind: ParamKind::Scalar(Ty::Int),
            span: proc_macro2::Span::call_site(),
        });
        func.bufs = rev.bufs.clone();
        Program {
            func,
            guest_blocks: Vec::new(),
        }
    }

    /// The buffers the guests read.
    fn guest_reads(&self) -> HashSet<Buf> {
        let mut out = HashSet::new();
        for &b in &self.guest_blocks {
            self.func.walk(b, &mut |i| {
                if let InstKind::Load(x, _) = self.func.inst(i).kind {
                    out.insert(x);
                }
            });
        }
        out
    }

    /// The buffers written outside the guests.
    fn home_writes(&self) -> HashSet<Buf> {
        let mut inside = HashSet::new();
        for &b in &self.guest_blocks {
            self.func.walk(b, &mut |i| {
                inside.insert(i);
            });
        }
        let mut out = HashSet::new();
        self.func.walk(self.func.body, &mut |i| {
            if !inside.contains(&i) {
                out.extend(self.func.written_bufs(i));
            }
        });
        out
    }
}

/// The thread's element `j` read at the start of a program made by [`Program::new`].
fn element(b: &mut Builder, rev: &Function) -> Value {
    let j = b.value(InstKind::Param(0), Ty::Int);
    b.func.values[j.index()].name = Some(rev.params[0].name.clone());
    j
}

/// The gather kernel's program (see the module docs); `deferred`: the buffers whose
/// stores it leaves to the finishing kernel.
fn build_main(rev: &Function, plan: &Plan, deferred: &HashSet<Buf>) -> Program {
    let mut c = Program::new(rev, &format!("{} (gather form)", rev.name));
    let body = c.func.body;
    let mut b = Builder::new(&mut c.func, body);
    let j = element(&mut b, rev);
    let n = b.value(InstKind::Param(rev.params.len()), Ty::Int);
    let zero = b.fconst(0.0);
    let sums: HashMap<Buf, Cell> = plan
        .gathered
        .iter()
        .map(|g| {
            let name = format!("{}_sum", rev.buf(*g).name);
            (*g, b.cell(Ty::Float, &name, zero))
        })
        .collect();
    let ctx = Instance {
        rev,
        plan,
        sums: &sums,
        deferred,
    };
    // The home instance in the threads of elements: the kernel also runs on the
    // elements past them that shifted adds reach (see `Gathered::main`).
    let home = b.binary(BinOp::Lt, j, n);
    let tys: Vec<Ty> = rev
        .block(rev.body)
        .yields
        .iter()
        .map(|y| rev.ty(*y))
        .collect();
    let yields = b.branch(
        home,
        &tys,
        |b| ctx.copy(b, j, Role::Home),
        |b| tys.iter().map(|t| b.zero(*t)).collect(),
    );
    let mut guest_blocks = Vec::new();
    for k in &plan.guests {
        // t = j − k = (j + N) − P with N, P ≥ 0 the negative and positive parts of k.
        let (p, m) = ctx.parts(&mut b, k);
        let s = match m {
            Some(m) => b.add(j, m),
            None => j,
        };
        let mut inner = |b: &mut Builder, t: Value| {
            let fits = b.binary(BinOp::Lt, t, n);
            b.branch(
                fits,
                &[],
                |b| {
                    guest_blocks.push(b.block);
                    ctx.copy(b, t, Role::Guest(k));
                    vec![]
                },
                |_| vec![],
            );
        };
        match p {
            Some(p) => {
                let above = b.binary(BinOp::Ge, s, p);
                b.branch(
                    above,
                    &[],
                    |b| {
                        let t = b.sub(s, p);
                        inner(b, t);
                        vec![]
                    },
                    |_| vec![],
                );
            }
            None => inner(&mut b, s),
        }
    }
    for g in &plan.gathered {
        let len = b.value(InstKind::Len(*g, vec![]), Ty::Int);
        let inside = b.binary(BinOp::Lt, j, len);
        let cell = sums[g];
        b.branch(
            inside,
            &[],
            |b| {
                let sum = b.get(cell);
                b.stmt(InstKind::StoreAdd(*g, vec![j], sum));
                vec![]
            },
            |_| vec![],
        );
    }
    b.set_yields(body, yields);
    c.guest_blocks = guest_blocks;
    c
}

/// The finishing kernel's program: the element's stores into `deferred`.
fn build_finish(rev: &Function, deferred: &HashSet<Buf>) -> Function {
    let mut c = Program::new(rev, &format!("{} (finishing stores)", rev.name));
    let body = c.func.body;
    let mut b = Builder::new(&mut c.func, body);
    let j = element(&mut b, rev);
    let plan = Plan {
        gathered: Vec::new(),
        shifts: HashMap::new(),
        guests: Vec::new(),
    };
    let sums = HashMap::new();
    let ctx = Instance {
        rev,
        plan: &plan,
        sums: &sums,
        deferred,
    };
    ctx.copy(&mut b, j, Role::Finish);
    c.func
}

/// Copies of the adjoint, one per element.
struct Instance<'a> {
    rev: &'a Function,
    plan: &'a Plan,
    sums: &'a HashMap<Buf, Cell>,
    deferred: &'a HashSet<Buf>,
}

impl Instance<'_> {
    /// The positive and negative parts of `k` as values (`None` for zero).
    fn parts(&self, b: &mut Builder, k: &Affine) -> (Option<Value>, Option<Value>) {
        let mut pos: Option<Value> = None;
        let mut neg: Option<Value> = None;
        let add = |b: &mut Builder, side: &mut Option<Value>, v: Value| {
            *side = Some(match *side {
                Some(s) => b.add(s, v),
                None => v,
            });
        };
        for (leaf, a) in &k.terms {
            let x = match *leaf {
                Leaf::Param(n) => b.value(InstKind::Param(n), Ty::Int),
                Leaf::Len(n) => {
                    let ParamKind::Buffer { buf, .. } = self.rev.params[n].kind else {
                        unreachable!("a length leaf is a slice parameter's")
                    };
                    b.value(InstKind::Len(buf, vec![]), Ty::Int)
                }
            };
            let x = if a.abs() == 1 {
                x
            } else {
                let m = b.iconst(a.abs());
                b.mul(m, x)
            };
            if *a > 0 {
                add(b, &mut pos, x);
            } else {
                add(b, &mut neg, x);
            }
        }
        if k.constant != 0 {
            let c = b.iconst(k.constant.abs());
            if k.constant > 0 {
                add(b, &mut pos, c);
            } else {
                add(b, &mut neg, c);
            }
        }
        (pos, neg)
    }

    /// Appends the adjoint of element `t` in `role`; returns its yields.
    fn copy(&self, b: &mut Builder, t: Value, role: Role) -> Vec<Value> {
        let mut cp = Copier::between(self.rev);
        self.rev.walk(self.rev.body, &mut |i| {
            if let InstKind::Param(0) = self.rev.inst(i).kind {
                cp.names.insert(self.rev.inst(i).results[0], t);
            }
        });
        cp.block(b, self.rev.body, &mut |cp, b, i| self.keep(cp, b, i, role))
    }

    /// What an instance makes of instruction `i`: the element parameter is `t`; an add
    /// into a gathered slice goes into its sum at the role's shift (and nowhere else); a
    /// store is made where its role makes it; only the home instance adds and asserts.
    fn keep(&self, cp: &mut Copier, b: &mut Builder, i: Inst, role: Role) -> Flow {
        match &self.rev.inst(i).kind {
            InstKind::Param(0) => Flow::Done,
            InstKind::StoreAdd(buf, _, v) if self.sums.contains_key(buf) => {
                if let Some(s) = self.plan.shifts.get(&i) {
                    let at = match role {
                        Role::Home => s.is_zero(),
                        Role::Guest(k) => s == k,
                        Role::Finish => false,
                    };
                    if at {
                        b.stmt(InstKind::CellAdd(self.sums[buf], cp.map(*v)));
                    }
                }
                Flow::Done
            }
            InstKind::Store(buf, ..) => {
                let keep = match role {
                    Role::Home => !self.deferred.contains(buf),
                    Role::Guest(_) => false,
                    Role::Finish => self.deferred.contains(buf),
                };
                if keep {
                    Flow::Copy
                } else {
                    Flow::Done
                }
            }
            InstKind::StoreAdd(..) | InstKind::Assert { .. } if role != Role::Home => Flow::Done,
            _ => Flow::Copy,
        }
    }
}

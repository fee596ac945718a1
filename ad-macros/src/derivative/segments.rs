//! Coarsening (Shen et al., OOPSLA'21): each block's pure scalar instructions are grouped
//! into *segments*, lifted to one symbolic DAG of the segment's outputs over its live-ins,
//! and differentiated as a whole: the reverse code of a segment is the simplified adjoint
//! expression of each live-in, recomputed from the live-ins (so intermediate values are
//! never taped). Branches whose arms are pure become φ nodes.
//!
//! Where a segment's reverse runs: at its last member, which is valid because a segment is
//! closed as soon as an instruction outside it reads one of its values (so every outside
//! reader comes after the whole segment and is reversed before it). Segments grow until
//! their DAG exceeds the node limit; then the segment is split after the member whose value
//! has the most uses inside it (reuse-centric, §5), which becomes a materialized boundary.

use crate::analysis::activity::Activity;
use crate::analysis::recording::{stable_reads, Structure};
use crate::derivative::phi::{self, Closed};
use crate::derivative::symbolic::{Expr, Node, Sym};
use crate::ir::*;
use std::collections::{HashMap, HashSet};

#[derive(Clone)]
pub struct Segment {
    /// Members in program order (instructions of one block).
    pub insts: Vec<Inst>,
    /// Member values read outside the segment; output `k`'s adjoint is `Node::Seed(k)`.
    pub outputs: Vec<Value>,
    pub expr: Expr,
    /// The primal value of each node lifted from a member outside φ arms (reused where in
    /// scope, or saved instead of recomputed).
    pub orig: HashMap<Sym, Value>,
    /// The adjoint expression of each active live-in.
    pub adjoints: Vec<(Value, Sym)>,
}

#[derive(Default)]
pub struct Segmentation {
    pub segments: Vec<Segment>,
    /// The segment of each member.
    pub of_inst: HashMap<Inst, usize>,
    /// Member values read only inside their segment (no adjoint cell needed).
    pub internal: HashSet<Value>,
    /// Loops replaced by closed forms (each is also a one-member segment).
    pub closed: HashMap<Inst, Closed>,
}

impl Segmentation {
    /// The closed loops whose sums are computed before top-level statement `i`.
    pub fn hoisted_before(&self, i: Inst) -> Vec<Inst> {
        let mut ls: Vec<Inst> = self
            .closed
            .iter()
            .filter(|(_, c)| c.declare_before == i && c.tangents.is_none())
            .map(|(l, _)| *l)
            .collect();
        ls.sort();
        ls
    }

    /// The segment whose reverse is emitted at `i`, if `i` is a segment's last member.
    pub fn ending_at(&self, i: Inst) -> Option<usize> {
        let k = *self.of_inst.get(&i)?;
        (*self.segments[k].insts.last().expect("non-empty segment") == i).then_some(k)
    }
}

/// Segments every block of `f` (except the arms of branches that became φ nodes).
pub fn segment(f: &Function, act: &Activity, limit: usize) -> Segmentation {
    let uses = Uses::new(f);
    let structure = Structure::new(f);
    let stable = stable_reads(f, &structure);
    let mut s = Segmentation::default();
    let mut cx = Cx {
        f,
        act,
        limit,
        uses: &uses,
        stable,
        structure: &structure,
        out: &mut s,
    };
    cx.block(f.body);
    s
}

/// Where each value is read: by instructions (the outermost instruction of each nested
/// block counts as reading everything its blocks read) and by block yields.
struct Uses {
    /// Readers of each value: instructions, and yields as `None` with the block.
    readers: HashMap<Value, Vec<Reader>>,
    /// Values read by each instruction including its nested blocks.
    reads: HashMap<Inst, HashSet<Value>>,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Reader {
    Inst(Inst),
    Yield(Block),
}

impl Uses {
    fn new(f: &Function) -> Self {
        let mut u = Uses {
            readers: HashMap::new(),
            reads: HashMap::new(),
        };
        u.block(f, f.body);
        u
    }

    /// Records the reads of `b`'s instructions; returns everything read inside `b`.
    fn block(&mut self, f: &Function, b: Block) -> HashSet<Value> {
        let mut all = HashSet::new();
        for &i in &f.block(b).insts {
            let mut reads: HashSet<Value> = f.operands(i).into_iter().collect();
            for o in f.operands(i) {
                self.readers.entry(o).or_default().push(Reader::Inst(i));
            }
            if let InstKind::For { exit, .. } | InstKind::While { exit, .. } = &f.inst(i).kind {
                reads.extend(exit.iter().copied());
            }
            for c in f.child_blocks(i) {
                reads.extend(self.block(f, c));
            }
            all.extend(reads.iter().copied());
            self.reads.insert(i, reads);
        }
        for &y in &f.block(b).yields {
            self.readers.entry(y).or_default().push(Reader::Yield(b));
            all.insert(y);
        }
        all
    }
}

struct Cx<'a> {
    f: &'a Function,
    act: &'a Activity,
    limit: usize,
    uses: &'a Uses,
    /// Reads of stable buffers, by instruction (see [`stable_reads`]).
    stable: Vec<bool>,
    structure: &'a Structure,
    out: &'a mut Segmentation,
}

/// Pure instructions that can sit inside a φ arm.
fn pure(f: &Function, i: Inst) -> bool {
    use InstKind::*;
    match &f.inst(i).kind {
        // A float predicate stays an instruction (the symbolic nodes are arithmetic).
        Unary(UnOp::Test(_), _) => false,
        FConst(_) | IConst(_) | BConst(_) | Unary(..) | Math(..) | Cast { .. } => true,
        Binary(op, a, _) => !(*op == BinOp::Rem && f.ty(*a) == Ty::Float),
        If {
            then_blk, else_blk, ..
        } => [*then_blk, *else_blk]
            .iter()
            .all(|b| f.block(*b).insts.iter().all(|i| pure(f, *i))),
        _ => false,
    }
}

/// Whether `i` can be a member: a pure instruction with float or bool results.
fn candidate(f: &Function, i: Inst) -> bool {
    let data = f.inst(i);
    !data.results.is_empty()
        && data
            .results
            .iter()
            .all(|r| matches!(f.ty(*r), Ty::Float | Ty::Bool))
        && pure(f, i)
        && !matches!(data.kind, InstKind::Binary(BinOp::Rem, ..))
}

/// Lifts instructions into one DAG (segment members here; loop bodies in `phi`).
pub(crate) struct Lifter<'a> {
    f: &'a Function,
    act: &'a Activity,
    stable: &'a [bool],
    pub expr: Expr,
    /// The node of each lifted value.
    sym: HashMap<Value, Sym>,
    orig: HashMap<Sym, Value>,
    /// Loads of stable buffers by (buffer, indices): equal reads are one leaf, so the
    /// simplifier sees `x[i] * x[i]` as a square.
    loads: HashMap<(Buf, Vec<Value>), Sym>,
    /// Loads replaced by an equal earlier load.
    merged: Vec<Value>,
    /// How many φ arms the instruction being lifted sits in.
    arm_depth: usize,
    /// Lift loads of inactive stable buffers as `Node::Load` (closed loops re-read them
    /// where the sums are computed) instead of taking them as live-ins.
    pub loads_as_nodes: bool,
}

impl<'a> Lifter<'a> {
    pub fn new(f: &'a Function, act: &'a Activity, stable: &'a [bool]) -> Self {
        Lifter {
            f,
            act,
            stable,
            expr: Expr::default(),
            sym: HashMap::new(),
            orig: HashMap::new(),
            loads: HashMap::new(),
            merged: Vec::new(),
            arm_depth: 0,
            loads_as_nodes: false,
        }
    }

    fn leaf_active(&self, s: Sym) -> bool {
        matches!(self.expr.node(s), Node::Leaf(v) if self.act.value(*v))
    }

    fn lift(&mut self, insts: &[Inst]) {
        for &i in insts {
            let lifted = self.lift_inst(i);
            debug_assert!(lifted, "segment members and φ arms are pure");
        }
    }

    pub fn operand(&mut self, v: Value) -> Sym {
        if let Some(s) = self.sym.get(&v) {
            return *s;
        }
        let f = self.f;
        let s = if let ValueDef::Result(i, 0) = f.value(v).def {
            match &f.inst(i).kind {
                InstKind::Load(buf, idx) if self.stable[i.index()] => {
                    let key = (*buf, idx.clone());
                    match self.loads.get(&key).copied() {
                        // The adjoint goes to the earlier load, so it must have a cell.
                        Some(s) if self.leaf_active(s) || !self.act.value(v) => {
                            self.merged.push(v);
                            s
                        }
                        _ => {
                            let s = self.expr.leaf(v, f.ty(v));
                            self.loads.insert(key, s);
                            s
                        }
                    }
                }
                _ => self.expr.leaf(v, f.ty(v)),
            }
        } else {
            self.expr.leaf(v, f.ty(v))
        };
        self.sym.insert(v, s);
        s
    }

    /// Lifts one instruction; `false` (and nothing lifted) if it is not pure.
    pub fn lift_inst(&mut self, i: Inst) -> bool {
        use InstKind::*;
        let f = self.f;
        let data = f.inst(i);
        let results: Vec<Sym> = match &data.kind {
            FConst(c) => vec![self.expr.fconst(*c)],
            IConst(c) => vec![self.expr.iconst(*c)],
            BConst(c) => vec![self.expr.bconst(*c)],
            Unary(UnOp::Neg, a) => {
                let a = self.operand(*a);
                vec![self.expr.neg(a)]
            }
            Unary(UnOp::Not, a) => {
                let a = self.operand(*a);
                vec![self.expr.not(a)]
            }
            Binary(BinOp::Rem, a, _) if f.ty(*a) == Ty::Float => return false,
            Binary(o, a, b) => {
                let (a, b) = (self.operand(*a), self.operand(*b));
                vec![self.expr.binary(*o, a, b)]
            }
            Math(name, args) => {
                let args = args.iter().map(|a| self.operand(*a)).collect();
                vec![self.expr.math(name, args)]
            }
            Cast {
                value,
                to,
                int,
                float,
            } => {
                let v = self.operand(*value);
                vec![self.expr.cast(v, *to, *int, *float)]
            }
            Load(buf, idx)
                if self.loads_as_nodes && self.stable[i.index()] && !self.act.buf(*buf) =>
            {
                let idx = idx.iter().map(|x| self.operand(*x)).collect();
                vec![self.expr.load(*buf, idx, f.ty(data.results[0]))]
            }
            If {
                cond,
                then_blk,
                else_blk,
            } if pure(f, i) => {
                let c = self.operand(*cond);
                let mut arms = Vec::new();
                self.arm_depth += 1;
                for blk in [*then_blk, *else_blk] {
                    self.lift(&f.block(blk).insts);
                    let ys: Vec<Sym> = f
                        .block(blk)
                        .yields
                        .iter()
                        .map(|y| self.operand(*y))
                        .collect();
                    arms.push(ys);
                }
                self.arm_depth -= 1;
                arms[0]
                    .iter()
                    .zip(&arms[1])
                    .map(|(a, b)| self.expr.phi(c, *a, *b))
                    .collect()
            }
            _ => return false,
        };
        for (r, s) in data.results.iter().zip(results) {
            self.sym.insert(*r, s);
            // Only values computed whenever the segment runs stand for their node: a value
            // of one φ arm is missing where the other arm ran.
            if self.arm_depth == 0 && !matches!(self.expr.node(s), Node::Leaf(_)) {
                self.orig.entry(s).or_insert(*r);
            }
        }
        true
    }
}

impl Cx<'_> {
    fn block(&mut self, b: Block) {
        let f = self.f;
        let mut current: Vec<Inst> = Vec::new();
        for &i in &f.block(b).insts {
            if candidate(f, i) {
                current.push(i);
                if current.len() > 1 && self.size(&current) > self.limit {
                    let cut = self.cut_point(&current);
                    let rest = current.split_off(cut);
                    self.finish(std::mem::replace(&mut current, rest));
                    // The rest may still be too large: split again.
                    while current.len() > 1 && self.size(&current) > self.limit {
                        let cut = self.cut_point(&current);
                        let rest = current.split_off(cut);
                        self.finish(std::mem::replace(&mut current, rest));
                    }
                }
                continue;
            }
            let defined: HashSet<Value> = current
                .iter()
                .flat_map(|m| f.inst(*m).results.iter().copied())
                .collect();
            if self.uses.reads[&i].iter().any(|v| defined.contains(v)) {
                self.finish(std::mem::take(&mut current));
            }
            if let Some(closed) = self.close(i) {
                let k = self.out.segments.len();
                self.out.of_inst.insert(i, k);
                self.out.segments.push(closed.segment.clone());
                self.out.closed.insert(i, closed);
                continue;
            }
            // A `while` condition is not reversed (it yields only the loop test).
            let body_blocks = match &f.inst(i).kind {
                InstKind::While { body, .. } => vec![*body],
                _ => f.child_blocks(i),
            };
            for c in body_blocks {
                self.block(c);
            }
        }
        self.finish(current);
    }

    /// The closed form of loop `i` when it has one and an active result.
    fn close(&self, i: Inst) -> Option<Closed> {
        let f = self.f;
        if !matches!(f.inst(i).kind, InstKind::For { .. })
            || !f.inst(i).results.iter().any(|r| self.act.value(*r))
        {
            return None;
        }
        // A checkpointed loop, and the loops in it, are re-run step by step; a parallel
        // loop, and the loops in it, run their iterations concurrently (a closed form
        // carries its hoisted values from one iteration to the next).
        if self
            .structure
            .chain(i)
            .iter()
            .any(|l| f.checkpoints.contains_key(l) || f.parallel.contains_key(l))
        {
            return None;
        }
        phi::close(f, self.act, &self.stable, self.structure, i)
    }

    /// Nodes of the DAG of `members`.
    fn size(&self, members: &[Inst]) -> usize {
        let mut l = Lifter::new(self.f, self.act, &self.stable);
        l.lift(members);
        l.expr.len()
    }

    /// Where to split an oversized segment: after the member whose value other members
    /// read most (ties: the later one), never at the last member.
    fn cut_point(&self, members: &[Inst]) -> usize {
        let f = self.f;
        let set: HashSet<Inst> = members.iter().copied().collect();
        let mut best = (0usize, 0usize);
        for (pos, &m) in members[..members.len() - 1].iter().enumerate() {
            let n: usize = f
                .inst(m)
                .results
                .iter()
                .map(|r| {
                    self.uses.readers.get(r).map_or(0, |rs| {
                        rs.iter()
                            .filter(|x| matches!(x, Reader::Inst(u) if set.contains(u)))
                            .count()
                    })
                })
                .sum();
            if n >= best.0 {
                best = (n, pos + 1);
            }
        }
        best.1.max(1)
    }

    fn finish(&mut self, members: Vec<Inst>) {
        if members.is_empty() {
            return;
        }
        let f = self.f;
        let member_set: HashSet<Inst> = members.iter().copied().collect();
        // Instructions and blocks nested in member φs count as inside.
        let mut inside_insts = member_set.clone();
        let mut inside_blocks = HashSet::new();
        for &m in &members {
            for c in f.child_blocks(m) {
                inside_blocks.insert(c);
                f.walk(c, &mut |i| {
                    inside_insts.insert(i);
                    for cb in f.child_blocks(i) {
                        inside_blocks.insert(cb);
                    }
                });
            }
        }
        let mut l = Lifter::new(f, self.act, &self.stable);
        l.lift(&members);
        let Lifter {
            mut expr,
            sym,
            orig,
            merged,
            ..
        } = l;
        let mut outputs = Vec::new();
        let mut internal = Vec::new();
        for &m in &members {
            for &r in &f.inst(m).results {
                let read_outside = self.uses.readers.get(&r).is_some_and(|rs| {
                    rs.iter().any(|x| match x {
                        Reader::Inst(u) => !inside_insts.contains(u),
                        Reader::Yield(b) => !inside_blocks.contains(b),
                    })
                });
                if read_outside {
                    outputs.push(r);
                } else {
                    internal.push(r);
                }
            }
        }
        // A merged load read only here gets its adjoint through the load it was merged with.
        for v in merged {
            let only_here = self.uses.readers[&v].iter().all(|x| match x {
                Reader::Inst(u) => inside_insts.contains(u),
                Reader::Yield(b) => inside_blocks.contains(b),
            });
            if only_here {
                internal.push(v);
            }
        }
        let mut roots = Vec::new();
        for (k, o) in outputs.iter().enumerate() {
            if f.ty(*o) == Ty::Float && self.act.value(*o) {
                let seed = expr.seed(k as u32);
                roots.push((sym[o], seed));
            }
        }
        let act = self.act;
        let adjoints = expr.reverse(&roots, &|v| act.value(v));
        if expr.overflowed {
            // Too large to differentiate symbolically: the members stay fine-grained.
            return;
        }
        self.out.internal.extend(internal);
        let k = self.out.segments.len();
        for &m in &members {
            self.out.of_inst.insert(m, k);
        }
        self.out.segments.push(Segment {
            insts: members,
            outputs,
            expr,
            orig,
            adjoints,
        });
    }
}

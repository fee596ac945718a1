//! The reverse code of a coarsened segment: each active live-in's adjoint expression
//! (`derivative::segments`) emitted once, sharing common subexpressions, reading primal
//! values that are in scope and recomputing the others from the live-ins; φ nodes become
//! branches so an arm's values are only computed where the arm was taken.

use super::*;
use crate::derivative::segments::Segment;
use crate::derivative::symbolic::{Node, Sym};

/// Emitted nodes, one scope per open block (a φ arm's values stay in its arm).
pub(super) type Emitted = Vec<HashMap<Sym, Value>>;

/// Where the leaves of an emitted expression come from.
#[derive(Copy, Clone)]
pub(super) enum Leaves {
    /// The reverse sweep: fetched (in scope, recomputed or saved), primal values in scope
    /// reused.
    Reverse,
    /// The forward sweep: the forward copies of the values, with `index` (a loop index
    /// and its replacement) substituted.
    Forward { index: Option<(Value, Value)> },
}

impl Rev<'_> {
    pub(super) fn reverse_segment(&mut self, b: &mut Builder, k: usize) -> Result<(), String> {
        let seg = self.plan.seg.segments[k].clone();
        self.current_saved = self.plan.saved_nodes.get(&k).cloned().unwrap_or_default();
        let mut emitted: Emitted = vec![HashMap::new()];
        for (leaf, adj) in &seg.adjoints {
            if !self.adj.contains_key(leaf) {
                continue;
            }
            let g = self.emit_sym(b, &seg, *adj, &mut emitted, Leaves::Reverse)?;
            self.accumulate(b, *leaf, g);
        }
        Ok(())
    }

    pub(super) fn emit_sym(
        &mut self,
        b: &mut Builder,
        seg: &Segment,
        s: Sym,
        emitted: &mut Emitted,
        leaves: Leaves,
    ) -> Result<Value, String> {
        if let Some(v) = emitted.iter().rev().find_map(|m| m.get(&s)) {
            return Ok(*v);
        }
        if let (Some(v), Leaves::Reverse) = (seg.orig.get(&s), leaves) {
            if self.plan.structure.def_block(self.f, *v) == self.f.body {
                return Ok(self.m.v(*v));
            }
            if let Some(x) = self.from_iteration(b, *v, None) {
                emitted.last_mut().expect("an open scope").insert(s, x);
                return Ok(x);
            }
            if self.current_saved.contains(&s) {
                let x = self.fetch(b, *v)?;
                emitted.last_mut().expect("an open scope").insert(s, x);
                return Ok(x);
            }
        }
        let e = &seg.expr;
        let ty = e.ty(s);
        let v = match e.node(s).clone() {
            Node::F(bits) => b.fconst(f64::from_bits(bits)),
            Node::I(c) => b.iconst(c),
            Node::B(c) => b.bconst(c),
            Node::Leaf(v) => match leaves {
                Leaves::Reverse => self.fetch(b, v)?,
                Leaves::Forward {
                    index: Some((old, new)),
                } if old == v => new,
                Leaves::Forward { .. } => self.m.v(v),
            },
            Node::Hoisted(m) => {
                let c = self.hoisted[&seg.insts[0]][m as usize];
                b.get(c)
            }
            Node::Load(buf, idx) => {
                let mut vs = Vec::new();
                for x in idx {
                    vs.push(self.emit_sym(b, seg, x, emitted, leaves)?);
                }
                b.value(InstKind::Load(self.m.b(buf), vs), ty)
            }
            Node::Seed(k) => match self.adj.get(&seg.outputs[k as usize]) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            },
            Node::Neg(x) => {
                let x = self.emit_sym(b, seg, x, emitted, leaves)?;
                b.value(InstKind::Unary(UnOp::Neg, x), ty)
            }
            Node::Not(x) => {
                let x = self.emit_sym(b, seg, x, emitted, leaves)?;
                b.value(InstKind::Unary(UnOp::Not, x), ty)
            }
            Node::Bin(op, x, y) => {
                let x = self.emit_sym(b, seg, x, emitted, leaves)?;
                let y = self.emit_sym(b, seg, y, emitted, leaves)?;
                b.value(InstKind::Binary(op, x, y), ty)
            }
            Node::Math(name, args) => {
                let mut vs = Vec::new();
                for a in args {
                    vs.push(self.emit_sym(b, seg, a, emitted, leaves)?);
                }
                b.math(name, vs)
            }
            Node::Cast { value, int, float } => {
                let x = self.emit_sym(b, seg, value, emitted, leaves)?;
                b.value(
                    InstKind::Cast {
                        value: x,
                        to: ty,
                        int,
                        float,
                    },
                    ty,
                )
            }
            Node::Phi(c, x, y) => {
                let cond = self.emit_sym(b, seg, c, emitted, leaves)?;
                let mut blocks = Vec::new();
                for arm in [x, y] {
                    let blk = b.func.new_block();
                    emitted.push(HashMap::new());
                    self.memo.push(HashMap::new());
                    let r = b.in_block(blk, |b| self.emit_sym(b, seg, arm, emitted, leaves));
                    self.memo.pop();
                    emitted.pop();
                    let v = r?;
                    b.set_yields(blk, vec![v]);
                    blocks.push(blk);
                }
                let i = b.push(
                    InstKind::If {
                        cond,
                        then_blk: blocks[0],
                        else_blk: blocks[1],
                    },
                    &[ty],
                    None,
                );
                b.func.inst(i).results[0]
            }
        };
        emitted.last_mut().expect("an open scope").insert(s, v);
        Ok(v)
    }
}

impl Rev<'_> {
    /// The cells of closed loop `l`'s hoisted values, declared before the top-level
    /// statement holding it (so they are in scope everywhere after), with a flag when the
    /// loop is nested: the values are computed where the loop is first reached.
    pub(super) fn declare_hoisted(&mut self, b: &mut Builder, l: Inst) {
        let closed = &self.plan.seg.closed[&l];
        let mut cells = Vec::new();
        for (m, r) in closed.summands.iter().enumerate() {
            let (init, name) = match r.term {
                Some(_) => (0.0, "hoisted_sum"),
                None => (1.0, "hoisted_product"),
            };
            let z = b.fconst(init);
            cells.push(b.cell(Ty::Float, &format!("{name}{m}"), z));
        }
        self.hoisted.insert(l, cells);
        if closed.declare_before != l {
            let no = b.bconst(false);
            let done = b.cell(Ty::Bool, "hoisted_done", no);
            self.hoisted_done.insert(l, done);
        }
    }

    /// The hoisted values of closed loop `l`: one pass over the loop's range, in its
    /// order, the first time the forward sweep reaches the loop. They read only the index,
    /// inactive read-only slices and inactive top-level values, so every later visit would
    /// compute the same values; computing them where the primal runs the loop (not before
    /// the statement holding it) means they never read what the primal does not.
    fn emit_hoisted(&mut self, b: &mut Builder, l: Inst) -> Result<(), String> {
        let Some(done) = self.hoisted_done.get(&l).copied() else {
            return self.emit_hoisted_loop(b, l);
        };
        let d = b.get(done);
        let todo = b.not(d);
        let (then_blk, else_blk) = (b.func.new_block(), b.func.new_block());
        b.in_block(then_blk, |b| {
            let yes = b.bconst(true);
            b.set(done, yes);
            self.emit_hoisted_loop(b, l)
        })?;
        b.set_yields(then_blk, vec![]);
        b.set_yields(else_blk, vec![]);
        b.push(
            InstKind::If {
                cond: todo,
                then_blk,
                else_blk,
            },
            &[],
            None,
        );
        Ok(())
    }

    fn emit_hoisted_loop(&mut self, b: &mut Builder, l: Inst) -> Result<(), String> {
        let closed = self.plan.seg.closed[&l].clone();
        let cells = self.hoisted[&l].clone();
        let InstKind::For { range, .. } = &self.f.inst(l).kind else {
            unreachable!("closed loops are `for` loops")
        };
        let range = RangeSpec {
            start: self.m.v(range.start),
            end: self.m.v(range.end),
            step: range.step.map(|s| self.m.v(s)),
            rev: range.rev,
        };
        let ni = b.reserve();
        let index = b.func.new_value(
            Ty::Int,
            ValueDef::LoopIndex(ni),
            self.f.value(closed.index).name.clone(),
        );
        let body = b.func.new_block();
        let leaves = Leaves::Forward {
            index: Some((closed.index, index)),
        };
        let r: Result<(), String> = b.in_block(body, |b| {
            let mut emitted: Emitted = vec![HashMap::new()];
            for (m, r) in closed.summands.iter().enumerate() {
                let term = match r.term {
                    Some(c) => Some(self.emit_sym(b, &closed.segment, c, &mut emitted, leaves)?),
                    None => None,
                };
                let Some(coef) = r.coef else {
                    b.accumulate(cells[m], term.expect("a sum has a term"));
                    continue;
                };
                let a = self.emit_sym(b, &closed.segment, coef, &mut emitted, leaves)?;
                let h = b.get(cells[m]);
                let ah = b.mul(a, h);
                let next = match term {
                    Some(t) => b.add(ah, t),
                    None => ah,
                };
                b.set(cells[m], next);
            }
            Ok(())
        });
        r?;
        b.set_yields(body, vec![]);
        let trip = b.func.new_value(Ty::Int, ValueDef::Result(ni, 0), None);
        b.finish(
            ni,
            InstKind::For {
                range,
                index,
                params: vec![],
                inits: vec![],
                body,
                exit: vec![],
            },
            vec![trip],
        );
        Ok(())
    }

    /// The forward sweep of closed loop `l`: its results from the closed forms.
    pub(super) fn sweep_closed_loop(&mut self, b: &mut Builder, l: Inst) -> Result<(), String> {
        self.emit_hoisted(b, l)?;
        let closed = self.plan.seg.closed[&l].clone();
        let mut emitted: Emitted = vec![HashMap::new()];
        let leaves = Leaves::Forward { index: None };
        let results = self.f.inst(l).results.clone();
        for (k, r) in closed.results.iter().enumerate() {
            let v = self.emit_sym(b, &closed.segment, *r, &mut emitted, leaves)?;
            b.func.values[v.index()].name = self.f.value(results[k]).name.clone();
            self.m.set(results[k], v);
            self.save(b, results[k]);
        }
        // The trip count, should anything read it.
        let InstKind::For { range, .. } = &self.f.inst(l).kind else {
            unreachable!("closed loops are `for` loops")
        };
        let (s, e) = (self.m.v(range.start), self.m.v(range.end));
        let step = range.step.map(|x| self.m.v(x));
        let trip = trip_count(b, s, e, step);
        let last = *results.last().expect("loops have a trip result");
        self.m.set(last, trip);
        self.save(b, last);
        Ok(())
    }
}

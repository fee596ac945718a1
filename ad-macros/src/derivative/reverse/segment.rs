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
        let seg = self.seg.segments[k].clone();
        self.current_saved = self.saved_nodes.get(&k).cloned().unwrap_or_default();
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
            if self.structure.def_block(self.f, *v) == self.f.body {
                return Ok(self.m.v(*v));
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
            Node::Hoisted(m) => self.hoisted[&(seg.insts[0], m)],
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
            Node::Cast { value, rust_ty } => {
                let x = self.emit_sym(b, seg, value, emitted, leaves)?;
                b.value(
                    InstKind::Cast {
                        value: x,
                        to: ty,
                        rust_ty,
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
    /// The hoisted sums of closed loop `l`, computed where the forward sweep stands (before
    /// the top-level statement holding the loop): one pass over the loop's range.
    pub(super) fn emit_hoisted_sums(&mut self, b: &mut Builder, l: Inst) -> Result<(), String> {
        let closed = self.seg.closed[&l].clone();
        let InstKind::For { range, .. } = &self.f.inst(l).kind else {
            unreachable!("closed loops are `for` loops")
        };
        let mut cells = Vec::new();
        for (m, r) in closed.summands.iter().enumerate() {
            let (init, name) = match r.term {
                Some(_) => (0.0, "hoisted_sum"),
                None => (1.0, "hoisted_product"),
            };
            let z = b.fconst(init);
            cells.push(b.cell(Ty::Float, &format!("{name}{m}"), z));
        }
        let range = RangeSpec {
            start: self.emit_bound(b, range.start),
            end: self.emit_bound(b, range.end),
            step: range.step.map(|s| self.emit_bound(b, s)),
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
        for (m, c) in cells.into_iter().enumerate() {
            let h = b.get(c);
            self.hoisted.insert((l, m as u32), h);
        }
        Ok(())
    }

    /// A range bound at the top level (`phi::reemittable_bound`): top-level values are in
    /// scope; constants, lengths and their arithmetic are emitted again (they may sit in a
    /// block the sweep has not reached).
    fn emit_bound(&mut self, b: &mut Builder, v: Value) -> Value {
        let f = self.f;
        if self.structure.def_block(f, v) == f.body {
            return self.m.v(v);
        }
        let i = f.def_inst(v);
        match &f.inst(i).kind {
            InstKind::IConst(c) => b.iconst(*c),
            InstKind::Len(buf, _) => b.value(InstKind::Len(self.m.b(*buf), vec![]), Ty::Int),
            InstKind::Binary(op, x, y) => {
                let (x, y) = (self.emit_bound(b, *x), self.emit_bound(b, *y));
                b.binary(*op, x, y)
            }
            _ => unreachable!("phi::reemittable_bound admits only these"),
        }
    }

    /// The forward sweep of closed loop `l`: its results from the closed forms.
    pub(super) fn sweep_closed_loop(&mut self, b: &mut Builder, l: Inst) -> Result<(), String> {
        let closed = self.seg.closed[&l].clone();
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

//! The reverse code of a coarsened segment: each active live-in's adjoint expression
//! (`derivative::segments`) emitted once, sharing common subexpressions, reading primal
//! values that are in scope and recomputing the others from the live-ins; φ nodes become
//! branches so an arm's values are only computed where the arm was taken.

use super::*;
use crate::derivative::segments::Segment;
use crate::derivative::symbolic::{Node, Sym};

/// Emitted nodes, one scope per open block (a φ arm's values stay in its arm).
type Emitted = Vec<HashMap<Sym, Value>>;

impl Rev<'_> {
    pub(super) fn reverse_segment(&mut self, b: &mut Builder, k: usize) -> Result<(), String> {
        let seg = self.seg.segments[k].clone();
        let mut emitted: Emitted = vec![HashMap::new()];
        for (leaf, adj) in &seg.adjoints {
            if !self.adj.contains_key(leaf) {
                continue;
            }
            let g = self.emit_sym(b, &seg, *adj, &mut emitted)?;
            self.accumulate(b, *leaf, g);
        }
        Ok(())
    }

    fn emit_sym(
        &mut self,
        b: &mut Builder,
        seg: &Segment,
        s: Sym,
        emitted: &mut Emitted,
    ) -> Result<Value, String> {
        if let Some(v) = emitted.iter().rev().find_map(|m| m.get(&s)) {
            return Ok(*v);
        }
        if let Some(v) = seg.orig.get(&s) {
            if self.structure.def_block(self.f, *v) == self.f.body {
                return Ok(self.m.v(*v));
            }
        }
        let e = &seg.expr;
        let ty = e.ty(s);
        let v = match e.node(s).clone() {
            Node::F(bits) => b.fconst(f64::from_bits(bits)),
            Node::I(c) => b.iconst(c),
            Node::B(c) => b.bconst(c),
            Node::Leaf(v) => self.fetch(b, v)?,
            Node::Seed(k) => match self.adj.get(&seg.outputs[k as usize]) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            },
            Node::Neg(x) => {
                let x = self.emit_sym(b, seg, x, emitted)?;
                b.value(InstKind::Unary(UnOp::Neg, x), ty)
            }
            Node::Not(x) => {
                let x = self.emit_sym(b, seg, x, emitted)?;
                b.value(InstKind::Unary(UnOp::Not, x), ty)
            }
            Node::Bin(op, x, y) => {
                let x = self.emit_sym(b, seg, x, emitted)?;
                let y = self.emit_sym(b, seg, y, emitted)?;
                b.value(InstKind::Binary(op, x, y), ty)
            }
            Node::Math(name, args) => {
                let mut vs = Vec::new();
                for a in args {
                    vs.push(self.emit_sym(b, seg, a, emitted)?);
                }
                b.math(name, vs)
            }
            Node::Cast { value, rust_ty } => {
                let x = self.emit_sym(b, seg, value, emitted)?;
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
                let cond = self.emit_sym(b, seg, c, emitted)?;
                let mut blocks = Vec::new();
                for arm in [x, y] {
                    let blk = b.func.new_block();
                    emitted.push(HashMap::new());
                    self.memo.push(HashMap::new());
                    let r = b.in_block(blk, |b| self.emit_sym(b, seg, arm, emitted));
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
        emitted
            .last_mut()
            .expect("an open scope")
            .insert(s, v);
        Ok(v)
    }
}

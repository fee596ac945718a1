//! φ-calculus for loops (Shen et al. §4, rules C6/C7): a `for` loop whose header φs are
//! accumulations `s = s + f(i)` is closed. Each summand is expanded into a sum of products
//! `A(invariants) · C(i)` where `C` reads only the loop index, read-only buffers and
//! top-level values; then `s_final = s_init + Σₘ Aₘ · Hₘ` with the hoisted sums
//! `Hₘ = Σᵢ Cₘ(i)` computed once, before the top-level statement that holds the loop. The
//! derivative of the closed loop needs no tape and no loop: `∂s_final/∂w = Σₘ ∂Aₘ/∂w · Hₘ`.
//!
//! The closed form reassociates the sum (as any reordering of a floating-point sum does);
//! the expansion is limited to [`MAX_TERMS`] products of degree at most [`MAX_DEGREE`] in
//! the invariants, so a summand like `(w·x[i] + b − y[i])²` closes but a long product of
//! sums does not swell.

use crate::analysis::activity::Activity;
use crate::analysis::loops;
use crate::analysis::recording::Structure;
use crate::derivative::segments::{Lifter, Segment};
use crate::derivative::symbolic::{Node, Sym};
use crate::ir::*;
use std::collections::HashMap;

/// The most products one loop's summands expand into.
pub const MAX_TERMS: usize = 16;
/// The highest power of a sum that is expanded (`(a + b)²` yes, `(a + b)⁵` no).
pub const MAX_DEGREE: i128 = 3;

/// A loop replaced by its closed form in the reverse program.
#[derive(Clone)]
pub struct Closed {
    /// The statement of the function body before which the sums are computed.
    pub hoist_before: Inst,
    /// The summand `Cₘ` of each hoisted sum `Hₘ` (over the loop index, loads, constants
    /// and top-level values), in `segment.expr`.
    pub summands: Vec<Sym>,
    /// The loop's index value (a leaf of the summands).
    pub index: Value,
    /// The closed form of each loop result except the trip count.
    pub results: Vec<Sym>,
    /// The loop as a segment: outputs are its results, adjoints those of the closed forms.
    pub segment: Segment,
}

/// The closed form of loop `l`, if every header φ is a closable accumulation.
pub fn close(
    f: &Function,
    act: &Activity,
    read_only: &[bool],
    structure: &Structure,
    l: Inst,
) -> Option<Closed> {
    let InstKind::For {
        range,
        index,
        params,
        inits,
        body,
        exit,
    } = &f.inst(l).kind
    else {
        return None;
    };
    if !exit.is_empty() || loops::static_trip(f, l).is_none() || params.is_empty() {
        return None;
    }
    let bounds = [range.start, range.end].into_iter().chain(range.step);
    if !bounds
        .into_iter()
        .all(|v| reemittable_bound(f, structure, v))
        || params.iter().any(|p| f.ty(*p) != Ty::Float)
    {
        return None;
    }
    let mut lifter = Lifter::new(f, act, read_only);
    lifter.loads_as_nodes = true;
    for &i in &f.block(*body).insts {
        if !lifter.lift_inst(i) {
            return None;
        }
    }
    let mut cx = Closer {
        f,
        act,
        l: lifter,
        index: *index,
        structure,
    };
    // Each yield must be its parameter plus a summand free of parameters.
    let mut summands_of = Vec::new();
    for (k, y) in f.block(*body).yields.iter().enumerate() {
        let ys = cx.l.operand(*y);
        let p = cx.l.operand(params[k]);
        let mut terms = Vec::new();
        cx.flatten_sum(ys, true, &mut terms);
        let own = terms.iter().position(|(plus, t)| *plus && *t == p)?;
        terms.remove(own);
        let mut rest = cx.l.expr.fconst(0.0);
        for (plus, t) in terms {
            if cx.mentions_param(t, params) {
                return None;
            }
            rest = if plus {
                cx.l.expr.add(rest, t)
            } else {
                cx.l.expr.sub(rest, t)
            };
        }
        summands_of.push(rest);
    }
    // Expand each summand into Σ A·C and share the C's among results.
    let mut summands: Vec<Sym> = Vec::new();
    let mut products_of: Vec<Vec<(Sym, usize)>> = Vec::new();
    let mut total_terms = 0;
    for s in summands_of {
        let mut grouped: Vec<(Sym, Sym)> = Vec::new();
        for (a, c) in cx.poly(s, 0)? {
            match grouped.iter_mut().find(|(ga, _)| *ga == a) {
                Some((_, gc)) => *gc = cx.l.expr.add(*gc, c),
                None => grouped.push((a, c)),
            }
        }
        total_terms += grouped.len();
        if total_terms > MAX_TERMS {
            return None;
        }
        let mut products = Vec::new();
        for (a, c) in grouped {
            if cx.l.expr.is_zero(c) || cx.l.expr.is_zero(a) {
                continue;
            }
            let m = match summands.iter().position(|x| *x == c) {
                Some(m) => m,
                None => {
                    summands.push(c);
                    summands.len() - 1
                }
            };
            products.push((a, m));
        }
        products_of.push(products);
    }
    // s_final = s_init + Σ A·H.
    let mut results = Vec::new();
    for (k, products) in products_of.iter().enumerate() {
        // A constant initial value folds into the closed form (`0.0 + Σ…` is `Σ…`).
        let mut r = match f.value(inits[k]).def {
            ValueDef::Result(i, 0) => match f.inst(i).kind {
                InstKind::FConst(c) => cx.l.expr.fconst(c),
                _ => cx.l.operand(inits[k]),
            },
            _ => cx.l.operand(inits[k]),
        };
        for &(a, m) in products {
            let h = cx.l.expr.hoisted(m as u32);
            let t = cx.l.expr.mul(a, h);
            r = cx.l.expr.add(r, t);
        }
        results.push(r);
    }
    let outputs: Vec<Value> = f.inst(l).results[..params.len()].to_vec();
    let mut expr = cx.l.expr;
    let mut roots = Vec::new();
    for (k, o) in outputs.iter().enumerate() {
        if act.value(*o) {
            let seed = expr.seed(k as u32);
            roots.push((results[k], seed));
        }
    }
    let adjoints = expr.reverse(&roots, &|v| act.value(v));
    if expr.overflowed {
        return None;
    }
    let mut hoist_before = l;
    while structure.inst_block[hoist_before.index()] != Some(f.body) {
        let blk = structure.inst_block[hoist_before.index()].expect("placed instruction");
        hoist_before = structure.block_owner[blk.index()].expect("nested block has an owner");
    }
    Some(Closed {
        hoist_before,
        summands,
        index: *index,
        results,
        segment: Segment {
            insts: vec![l],
            outputs,
            expr,
            orig: HashMap::new(),
            adjoints,
        },
    })
}

/// Whether a range bound can be evaluated at the top level: a top-level value, or integer
/// arithmetic of constants, top-level values and lengths of parameter slices (which never
/// change), as in `0..x.len() - 1` inside another loop.
pub fn reemittable_bound(f: &Function, structure: &Structure, v: Value) -> bool {
    if structure.def_block(f, v) == f.body {
        return true;
    }
    let ValueDef::Result(i, 0) = f.value(v).def else {
        return false;
    };
    match &f.inst(i).kind {
        InstKind::IConst(_) => true,
        InstKind::Len(b, idx) => idx.is_empty() && matches!(f.buf(*b).kind, BufKind::Param(_)),
        InstKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            reemittable_bound(f, structure, *a) && reemittable_bound(f, structure, *b)
        }
        _ => false,
    }
}

struct Closer<'a> {
    f: &'a Function,
    act: &'a Activity,
    l: Lifter<'a>,
    index: Value,
    structure: &'a Structure,
}

impl Closer<'_> {
    /// `s` as signed terms of a sum.
    fn flatten_sum(&self, s: Sym, plus: bool, out: &mut Vec<(bool, Sym)>) {
        match self.l.expr.node(s) {
            Node::Bin(BinOp::Add, a, b) => {
                self.flatten_sum(*a, plus, out);
                self.flatten_sum(*b, plus, out);
            }
            Node::Bin(BinOp::Sub, a, b) => {
                self.flatten_sum(*a, plus, out);
                self.flatten_sum(*b, !plus, out);
            }
            Node::Neg(a) => self.flatten_sum(*a, !plus, out),
            _ => out.push((plus, s)),
        }
    }

    fn leaves(&self, s: Sym) -> Vec<Value> {
        self.l
            .expr
            .topo(&[s])
            .into_iter()
            .filter_map(|x| match self.l.expr.node(x) {
                Node::Leaf(v) => Some(*v),
                _ => None,
            })
            .collect()
    }

    fn mentions_param(&self, s: Sym, params: &[Value]) -> bool {
        self.leaves(s).iter().any(|v| params.contains(v))
    }

    /// Whether `s` depends on the loop index.
    fn varies(&self, s: Sym) -> bool {
        self.leaves(s).contains(&self.index)
    }

    /// Whether `s` can be evaluated once at the top level and is a constant of the
    /// derivative: it reads only the index, constants and inactive top-level values.
    fn hoistable(&self, s: Sym) -> bool {
        let f = self.f;
        self.leaves(s).iter().all(|v| {
            *v == self.index || (self.structure.def_block(f, *v) == f.body && !self.act.value(*v))
        })
    }

    /// `s` as Σ A·C with A free of the index and C hoistable; `None` if it is not such a
    /// polynomial (within the term and degree limits).
    fn poly(&mut self, s: Sym, depth: u32) -> Option<Vec<(Sym, Sym)>> {
        let one = self.l.expr.fconst(1.0);
        if !self.varies(s) {
            return Some(vec![(s, one)]);
        }
        if self.hoistable(s) {
            return Some(vec![(one, s)]);
        }
        if depth > 16 {
            return None;
        }
        let node = self.l.expr.node(s).clone();
        let out = match node {
            Node::Bin(BinOp::Add, a, b) => {
                let mut x = self.poly(a, depth + 1)?;
                x.extend(self.poly(b, depth + 1)?);
                x
            }
            Node::Bin(BinOp::Sub, a, b) => {
                let mut x = self.poly(a, depth + 1)?;
                for (pa, pc) in self.poly(b, depth + 1)? {
                    let nc = self.l.expr.neg(pc);
                    x.push((pa, nc));
                }
                x
            }
            Node::Neg(a) => {
                let mut x = Vec::new();
                for (pa, pc) in self.poly(a, depth + 1)? {
                    let nc = self.l.expr.neg(pc);
                    x.push((pa, nc));
                }
                x
            }
            Node::Bin(BinOp::Mul, a, b) => {
                let (x, y) = (self.poly(a, depth + 1)?, self.poly(b, depth + 1)?);
                self.product(&x, &y)?
            }
            Node::Bin(BinOp::Div, a, b) => {
                let x = self.poly(a, depth + 1)?;
                if !self.varies(b) {
                    x.into_iter()
                        .map(|(pa, pc)| (self.l.expr.div(pa, b), pc))
                        .collect()
                } else if self.hoistable(b) {
                    x.into_iter()
                        .map(|(pa, pc)| (pa, self.l.expr.div(pc, b)))
                        .collect()
                } else {
                    return None;
                }
            }
            Node::Math("powi", args) => {
                let n = match self.l.expr.node(args[1]) {
                    Node::I(n) if (2..=MAX_DEGREE).contains(n) => *n,
                    _ => return None,
                };
                let base = self.poly(args[0], depth + 1)?;
                let mut acc = base.clone();
                for _ in 1..n {
                    acc = self.product(&acc, &base)?;
                }
                acc
            }
            _ => return None,
        };
        (out.len() <= MAX_TERMS).then_some(out)
    }

    fn product(&mut self, x: &[(Sym, Sym)], y: &[(Sym, Sym)]) -> Option<Vec<(Sym, Sym)>> {
        if x.len() * y.len() > MAX_TERMS {
            return None;
        }
        let mut out = Vec::new();
        for &(xa, xc) in x {
            for &(ya, yc) in y {
                out.push((self.l.expr.mul(xa, ya), self.l.expr.mul(xc, yc)));
            }
        }
        Some(out)
    }
}

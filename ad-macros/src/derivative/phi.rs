//! φ-calculus for loops (Shen et al. §4). A `for` loop whose header φs are linear
//! recurrences `s = a·s + f(i)` is closed (C6 sums with `a = 1`, C7 a constant factor, C8
//! a factor that varies with the index, products with `f = 0`). Each summand is expanded
//! into a sum of products `A(invariants) · C(i)` where `a` and `C` read only the loop
//! index, read-only buffers and top-level values; then `s_final = Π·s_init + Σₘ Aₘ · Hₘ`
//! with the hoisted recurrences `Hₘ ← a·Hₘ + Cₘ(i)` and `Π ← a·Π`, computed once, the
//! first time the forward sweep reaches the loop. The derivative of the closed loop needs
//! no tape and no loop: `∂s_final/∂w = Σₘ ∂Aₘ/∂w · Hₘ`, `∂s_final/∂s_init = Π`.
//!
//! Repeated application of a nonlinear map (C5) has no closed form; a small loop at the
//! top level is closed by carrying its tangents forward instead ([`Tangents`]).
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
    /// The statement of the function body before which the cells of the hoisted values
    /// are declared (the loop itself at the top level, else the statement holding it).
    pub declare_before: Inst,
    /// The recurrence of each hoisted value `Hₘ` (over the loop index, loads, constants
    /// and top-level values), in `segment.expr`.
    pub summands: Vec<Recurrence>,
    /// The loop's index value (a leaf of the summands).
    pub index: Value,
    /// The closed form of each loop result except the trip count.
    pub results: Vec<Sym>,
    /// The loop as a segment: outputs are its results, adjoints those of the closed forms.
    pub segment: Segment,
    /// For a loop closed by its tangents (C5), what the forward sweep propagates; the
    /// loop itself runs unchanged and `summands` and `results` are empty.
    pub tangents: Option<Tangents>,
}

/// The derivative of a top-level loop carried forward through its iterations (the
/// paper's C5, repeated application `d = f(d)`): with inputs `z` (the active initial
/// values and the active values the loop reads from outside) the forward sweep keeps
/// `T[p][k] = ∂pₚ/∂zₖ` for each active loop variable and updates it after every iteration,
/// `T'[p][k] = Σ_q ∂yₚ/∂p_q · T[q][k] + ∂yₚ/∂zₖ`. The reverse sweep needs no tape and no
/// loop: `z̄ₖ += Σₚ T[p][k]·r̄ₚ`, which is the segment's adjoint with `Hoisted(p·K + k)`
/// standing for the final `T[p][k]`.
#[derive(Clone)]
pub struct Tangents {
    /// The inputs `zₖ`.
    pub inputs: Vec<Value>,
    /// The positions of the active loop variables among the loop's parameters.
    pub vars: Vec<usize>,
    /// `∂yₚ/∂p_q` over the active variables, in `segment.expr`.
    pub d_vars: Vec<Vec<Sym>>,
    /// `∂yₚ/∂zₖ` (zero for an input the yields do not read).
    pub d_inputs: Vec<Vec<Sym>>,
}

/// The most tangent entries (active variables × inputs) a loop is closed with: each costs
/// a few operations per iteration, so beyond this the taped reverse sweep is cheaper.
pub const MAX_TANGENTS: usize = 4;

/// A hoisted value computed by one pass over the loop's range, in the loop's order:
/// `H ← coef·H + term` from `H = 0`, or the product `H ← coef·H` from `H = 1` when there is
/// no term; no coefficient means 1 (a sum).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Recurrence {
    pub coef: Option<Sym>,
    pub term: Option<Sym>,
}

/// The closed form of loop `l`: its recurrences (C6–C8) when every header φ is linear in
/// its own variable, else the tangents of a small top-level loop (C5).
pub fn close(
    f: &Function,
    act: &Activity,
    stable: &[bool],
    structure: &Structure,
    l: Inst,
) -> Option<Closed> {
    let InstKind::For {
        params, body, exit, ..
    } = &f.inst(l).kind
    else {
        return None;
    };
    if !exit.is_empty() || params.is_empty() || params.iter().any(|p| f.ty(*p) != Ty::Float) {
        return None;
    }
    // The body as one DAG: pure scalar code, loads of inactive read-only slices as nodes.
    let lift = || {
        let mut lifter = Lifter::new(f, act, stable);
        lifter.loads_as_nodes = true;
        let pure = f.block(*body).insts.iter().all(|i| lifter.lift_inst(*i));
        pure.then_some(lifter)
    };
    recurrences(f, act, structure, l, lift()?).or_else(|| tangents(f, act, structure, l, lift()?))
}

/// The closed form of loop `l`, if every header φ is a closable linear recurrence.
fn recurrences(
    f: &Function,
    act: &Activity,
    structure: &Structure,
    l: Inst,
    lifter: Lifter,
) -> Option<Closed> {
    let InstKind::For {
        range,
        index,
        params,
        inits,
        body,
        ..
    } = &f.inst(l).kind
    else {
        return None;
    };
    let bounds = [range.start, range.end].into_iter().chain(range.step);
    if loops::static_trip(f, l).is_none()
        || !bounds.into_iter().all(|v| invariant_bound(f, structure, v))
    {
        return None;
    }
    let mut cx = Closer {
        f,
        act,
        l: lifter,
        index: *index,
        structure,
    };
    // Each yield must be affine in its own parameter, `a·p + b`, with `a` hoistable and
    // `b` free of parameters.
    let mut parts_of = Vec::new();
    for (k, y) in f.block(*body).yields.iter().enumerate() {
        let ys = cx.l.operand(*y);
        let p = cx.l.operand(params[k]);
        let (a, rest) = cx.affine(ys, p, params, 0)?;
        if !cx.hoistable(a) {
            return None;
        }
        let coef = (cx.l.expr.float_of(a) != Some(1.0)).then_some(a);
        parts_of.push((coef, rest));
    }
    // Expand each summand into Σ A·C and share the recurrences among results.
    let mut summands: Vec<Recurrence> = Vec::new();
    let mut products_of: Vec<Vec<(Sym, usize)>> = Vec::new();
    let mut total_terms = 0;
    let mut share = |r: Recurrence| match summands.iter().position(|x| *x == r) {
        Some(m) => m,
        None => {
            summands.push(r);
            summands.len() - 1
        }
    };
    for &(coef, s) in &parts_of {
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
            products.push((
                a,
                share(Recurrence {
                    coef,
                    term: Some(c),
                }),
            ));
        }
        products_of.push(products);
    }
    // s_final = Π·s_init + Σ A·H, with Π = 1 for a sum.
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
        if let (Some(coef), false) = (parts_of[k].0, cx.l.expr.is_zero(r)) {
            let m = share(Recurrence {
                coef: Some(coef),
                term: None,
            });
            let prod = cx.l.expr.hoisted(m as u32);
            r = cx.l.expr.mul(prod, r);
        }
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
    let mut declare_before = l;
    while structure.inst_block[declare_before.index()] != Some(f.body) {
        let blk = structure.inst_block[declare_before.index()].expect("placed instruction");
        declare_before = structure.block_owner[blk.index()].expect("nested block has an owner");
    }
    Some(Closed {
        declare_before,
        summands,
        index: *index,
        results,
        tangents: None,
        segment: Segment {
            insts: vec![l],
            outputs,
            expr,
            orig: HashMap::new(),
            adjoints,
        },
    })
}

/// Closes a top-level `for` loop without exits by carrying its tangents (see
/// [`Tangents`]) when its body is pure scalar code, it reads only its variables, its index,
/// inactive read-only slices and values from before the loop, and it has at most
/// [`MAX_TANGENTS`] tangent entries.
fn tangents(
    f: &Function,
    act: &Activity,
    structure: &Structure,
    l: Inst,
    mut lifter: Lifter,
) -> Option<Closed> {
    let InstKind::For {
        index,
        params,
        inits,
        body,
        ..
    } = &f.inst(l).kind
    else {
        return None;
    };
    if structure.inst_block[l.index()] != Some(f.body) {
        return None;
    }
    let yields: Vec<Sym> = f
        .block(*body)
        .yields
        .iter()
        .map(|y| lifter.operand(*y))
        .collect();
    let vars: Vec<usize> = (0..params.len())
        .filter(|k| act.value(params[*k]))
        .collect();
    let mut expr = lifter.expr;
    // Inputs: active initial values, then active values from before the loop.
    let mut inputs: Vec<Value> = Vec::new();
    for &p in &vars {
        if act.value(inits[p]) && !inputs.contains(&inits[p]) {
            inputs.push(inits[p]);
        }
    }
    for s in expr.topo(&yields) {
        let Node::Leaf(v) = *expr.node(s) else {
            continue;
        };
        if params.contains(&v) || v == *index {
            continue;
        }
        if structure.def_block(f, v) != f.body {
            return None; // a value of the body that was not lifted (an active load)
        }
        if act.value(v) && expr.ty(s) == Ty::Float && !inputs.contains(&v) {
            inputs.push(v);
        }
    }
    if vars.is_empty() || inputs.is_empty() || vars.len() * inputs.len() > MAX_TANGENTS {
        return None;
    }
    // The Jacobian of the yields, one symbolic reverse pass per active variable.
    let one = expr.fconst(1.0);
    let zero = expr.fconst(0.0);
    let is_input = |v: Value| inputs.contains(&v) || vars.iter().any(|q| params[*q] == v);
    let mut d_vars = Vec::new();
    let mut d_inputs = Vec::new();
    for &p in &vars {
        let partials = expr.reverse(&[(yields[p], one)], &is_input);
        let of = |v: Value| {
            partials
                .iter()
                .find(|(leaf, _)| *leaf == v)
                .map_or(zero, |(_, d)| *d)
        };
        d_vars.push(vars.iter().map(|q| of(params[*q])).collect::<Vec<_>>());
        d_inputs.push(inputs.iter().map(|z| of(*z)).collect::<Vec<_>>());
    }
    // The segment: output p is linear in the inputs with the final tangents as
    // coefficients, so its adjoints are z̄ₖ = Σₚ T[p][k]·r̄ₚ.
    let k_inputs = inputs.len();
    let outputs: Vec<Value> = f.inst(l).results[..params.len()].to_vec();
    let mut roots = Vec::new();
    for (pi, &p) in vars.iter().enumerate() {
        if !act.value(outputs[p]) {
            continue;
        }
        let mut r = zero;
        for (k, z) in inputs.iter().enumerate() {
            let t = expr.hoisted((pi * k_inputs + k) as u32);
            let zs = expr.leaf(*z, Ty::Float);
            let tz = expr.mul(t, zs);
            r = expr.add(r, tz);
        }
        let seed = expr.seed(p as u32);
        roots.push((r, seed));
    }
    let adjoints = expr.reverse(&roots, &|v| act.value(v));
    if expr.overflowed {
        return None;
    }
    Some(Closed {
        declare_before: l,
        summands: Vec::new(),
        index: *index,
        results: Vec::new(),
        tangents: Some(Tangents {
            inputs,
            vars,
            d_vars,
            d_inputs,
        }),
        segment: Segment {
            insts: vec![l],
            outputs,
            expr,
            orig: HashMap::new(),
            adjoints,
        },
    })
}

/// Whether a range bound has the same value wherever the loop is reached, so hoisted values
/// computed at the first visit serve every visit: a top-level value, or integer arithmetic
/// of constants, top-level values and lengths of parameter slices (which never change), as
/// in `0..x.len() - 1` inside another loop.
pub fn invariant_bound(f: &Function, structure: &Structure, v: Value) -> bool {
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
            invariant_bound(f, structure, *a) && invariant_bound(f, structure, *b)
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
    /// `s` as `a·p + b` with `a` and `b` free of the loop's parameters; `None` if `s` is
    /// not affine in `p` or reads another parameter.
    fn affine(&mut self, s: Sym, p: Sym, params: &[Value], depth: u32) -> Option<(Sym, Sym)> {
        let zero = self.l.expr.fconst(0.0);
        if s == p {
            return Some((self.l.expr.fconst(1.0), zero));
        }
        if !self.mentions_param(s, params) {
            return Some((zero, s));
        }
        if depth > 16 {
            return None;
        }
        let e = |cx: &mut Self, x: Sym| cx.affine(x, p, params, depth + 1);
        Some(match self.l.expr.node(s).clone() {
            Node::Bin(op @ (BinOp::Add | BinOp::Sub), x, y) => {
                let ((xa, xb), (ya, yb)) = (e(self, x)?, e(self, y)?);
                let ex = &mut self.l.expr;
                (ex.binary(op, xa, ya), ex.binary(op, xb, yb))
            }
            Node::Neg(x) => {
                let (xa, xb) = e(self, x)?;
                (self.l.expr.neg(xa), self.l.expr.neg(xb))
            }
            Node::Bin(op @ (BinOp::Mul | BinOp::Div), x, y) if !self.mentions_param(y, params) => {
                let (xa, xb) = e(self, x)?;
                (self.l.expr.binary(op, xa, y), self.l.expr.binary(op, xb, y))
            }
            Node::Bin(BinOp::Mul, x, y) if !self.mentions_param(x, params) => {
                let (ya, yb) = e(self, y)?;
                (self.l.expr.mul(x, ya), self.l.expr.mul(x, yb))
            }
            _ => return None,
        })
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

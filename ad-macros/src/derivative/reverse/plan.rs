//! Planning: which instructions have reverse work and which primal values the reverse
//! sweep reads (mirrors the adjoint rules in `adjoint.rs` and `control.rs`).

use super::*;
use crate::analysis::loops;
use crate::derivative::symbolic::{Node, Sym};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};

/// What planning reads: the primal, its activity, shadows and segments; and what it
/// decides for segments: the intermediate nodes saved instead of recomputed.
pub(super) struct Plan<'a> {
    pub f: &'a Function,
    pub act: &'a Activity,
    pub shadow: &'a [Option<Buf>],
    pub seg: &'a Segmentation,
    pub saved_nodes: RefCell<HashMap<usize, HashSet<Sym>>>,
}

impl Plan<'_> {
    /// Marks which instructions have reverse work and tells the planner what the reverse
    /// sweep will read. Mirrors `Rev::reverse_block`.
    pub(super) fn block(
        &self,
        blk: Block,
        p: &mut Planner,
        work: &mut HashMap<Inst, bool>,
    ) -> bool {
        let mut any = false;
        for &i in &self.f.block(blk).insts {
            let w = if self.seg.of_inst.contains_key(&i) {
                match self.seg.ending_at(i) {
                    Some(k) => self.segment(k, p),
                    None => false,
                }
            } else {
                plan_inst(self, i, p, work)
            };
            work.insert(i, w);
            any |= w;
        }
        any
    }

    /// Requests what segment `k`'s adjoint expressions read (mirrors `Rev::emit_sym`).
    ///
    /// The reverse code recomputes intermediate values from the live-ins, except where that
    /// would need more saved live-ins than saving the intermediate itself: a stencil's
    /// `u[i−1] − 2u[i] + u[i+1]` over an overwritten `u` is saved as one value, not three.
    fn segment(&self, k: usize, p: &mut Planner) -> bool {
        let seg = &self.seg.segments[k];
        let f = self.f;
        let roots: Vec<_> = seg.adjoints.iter().map(|(_, s)| *s).collect();
        let top_level: HashSet<Value> = seg
            .orig
            .values()
            .filter(|v| p.structure.def_block(f, **v) == f.body)
            .copied()
            .collect();
        let top = |v: &Value| top_level.contains(v);
        // What each node costs in saved values when recomputed (or saved).
        let mut saves: HashMap<Sym, BTreeSet<Sym>> = HashMap::new();
        let mut saved_nodes = HashSet::new();
        for s in seg.expr.topo(&roots) {
            let set = match seg.expr.node(s) {
                Node::Leaf(v) if !p.is_free(*v) => BTreeSet::from([s]),
                Node::Leaf(_) => BTreeSet::new(),
                _ if seg.orig.get(&s).is_some_and(top) => BTreeSet::new(),
                _ => {
                    let mut set = BTreeSet::new();
                    for c in seg.expr.children(s) {
                        set.extend(saves[&c].iter().copied());
                    }
                    // Several saved live-ins, or one behind a costly operation (a square
                    // root or a transcendental costs more than a tape read). Outside loops
                    // a costly operation or a division is kept whatever its inputs: its
                    // slot is a local variable, cheaper than computing it again.
                    let node = seg.expr.node(s);
                    let worth_keeping = match seg.orig.get(&s) {
                        Some(v) => {
                            set.len() > 1
                                || (!set.is_empty() && is_costly(node))
                                || (!p.in_loop(*v) && (is_costly(node) || is_division(node)))
                        }
                        None => false,
                    };
                    if worth_keeping {
                        saved_nodes.insert(s);
                        set = BTreeSet::from([s]);
                    }
                    set
                }
            };
            saves.insert(s, set);
        }
        // Request exactly what emission reads: stop at saved nodes and values in scope.
        let mut stack = roots;
        let mut seen = HashSet::new();
        while let Some(s) = stack.pop() {
            if !seen.insert(s) {
                continue;
            }
            if let Some(v) = seg.orig.get(&s) {
                if top(v) {
                    p.need(*v);
                    continue;
                }
                if saved_nodes.contains(&s) {
                    p.keep(*v);
                    continue;
                }
            }
            if let Node::Leaf(v) = seg.expr.node(s) {
                p.need(*v);
            }
            stack.extend(seg.expr.children(s));
        }
        self.saved_nodes.borrow_mut().insert(k, saved_nodes);
        !seg.adjoints.is_empty()
    }
}

/// Whether recomputing `n` costs more than reading it from a tape: a function other than
/// the cheap ones (`abs`, `min`, `max`, integer powers…). A division is not: one read of
/// its saved operand is about as fast as a read of the quotient.
fn is_costly(n: &Node) -> bool {
    match n {
        Node::Math(name, _) => !matches!(
            *name,
            "abs"
                | "min"
                | "max"
                | "powi"
                | "signum"
                | "floor"
                | "ceil"
                | "round"
                | "trunc"
                | "mul_add"
        ),
        _ => false,
    }
}

/// A float division: outside loops its saved quotient is a local variable, cheaper than
/// dividing again.
fn is_division(n: &Node) -> bool {
    matches!(n, Node::Bin(BinOp::Div, ..))
}

fn plan_inst(cx: &Plan, i: Inst, p: &mut Planner, work: &mut HashMap<Inst, bool>) -> bool {
    use InstKind::*;
    let (f, act, shadow) = (cx.f, cx.act, cx.shadow);
    let data = f.inst(i);
    let res_active = data.results.first().is_some_and(|r| act.value(*r));
    let has_shadow = |b: &Buf| act.buf(*b) || shadow[b.index()].is_some();
    match &data.kind {
        Unary(..) | Cast { .. } => res_active,
        Binary(op, x, y) => {
            if !res_active {
                return false;
            }
            match op {
                BinOp::Mul => {
                    if act.value(*x) {
                        p.need(*y);
                    }
                    if act.value(*y) {
                        p.need(*x);
                    }
                }
                BinOp::Div => {
                    p.need(*y);
                    if act.value(*y) {
                        p.need(data.results[0]);
                    }
                }
                _ => {}
            }
            true
        }
        Math(_, args) => {
            if res_active {
                args.iter().for_each(|a| p.need(*a));
                p.need(data.results[0]);
            }
            res_active
        }
        Load(buf, idx) => {
            let w = res_active && has_shadow(buf);
            if w {
                idx.iter().for_each(|x| p.need(*x));
            }
            w
        }
        Store(buf, idx, _) | StoreAdd(buf, idx, _) => {
            let w = has_shadow(buf);
            if w {
                idx.iter().for_each(|x| p.need(*x));
            }
            w
        }
        Alloc { buf, dims, .. } => {
            let w = act.buf(*buf);
            if w && p.structure.inst_block[i.index()] != Some(f.body) {
                dims.iter().for_each(|x| p.need(*x));
            }
            w
        }
        CopyFrom { dst, .. } => has_shadow(dst),
        Swap(x, _) => has_shadow(x),
        If {
            cond,
            then_blk,
            else_blk,
        } => {
            let a = cx.block(*then_blk, p, work);
            let b = cx.block(*else_blk, p, work);
            let w = a || b || data.results.iter().any(|r| act.value(*r));
            if w {
                p.need(*cond);
            }
            w
        }
        For {
            range,
            body,
            params,
            ..
        } => {
            let w = cx.block(*body, p, work) || params.iter().any(|v| act.value(*v));
            if w {
                if loops::static_trip(f, i).is_none() {
                    p.need(*data.results.last().expect("trip"));
                }
                p.need(range.start);
                p.need(range.end);
                if let Some(s) = range.step {
                    p.need(s);
                }
            }
            w
        }
        While {
            body, params, cond, ..
        } => {
            cx.block(*cond, p, work);
            let w = cx.block(*body, p, work) || params.iter().any(|v| act.value(*v));
            if w {
                p.need(*data.results.last().expect("trip"));
            }
            w
        }
        Call { args, .. } => {
            let w = res_active
                || args.iter().any(|a| match a {
                    CallArg::Scalar(v) => act.value(*v),
                    CallArg::Buf { buf, .. } => has_shadow(buf),
                    CallArg::Opaque(_) => false,
                });
            if w {
                for (k, a) in args.iter().enumerate() {
                    match a {
                        CallArg::Scalar(v) => p.need(*v),
                        CallArg::Buf { buf, range, .. } => {
                            if let Some(part) = range {
                                part.values().for_each(|v| p.need(v));
                            }
                            if !p.is_stable_at(*buf, i) {
                                p.snapshot(i, k);
                            }
                        }
                        _ => {}
                    }
                }
            }
            w
        }
        _ => false,
    }
}

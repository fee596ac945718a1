//! Integer index arithmetic fixed for a loop computed once before it.
//!
//! A stencil on a periodic grid reads `u[((i + 1) % m) * n + j]` inside `for j in 0..n`;
//! its adjoint adds into the same element and recomputes the same index in each branch of
//! the reversed body. The remainders are integer divisions (tens of cycles each) that the
//! compiler leaves in the inner loop, since hoisting a division it cannot prove nonzero
//! past the loop's entry check would change where a panic happens. Here the arithmetic
//! that every iteration computes from values fixed for the loop moves before it, under
//! the check that the loop runs at all (so nothing is computed that the loop would not
//! have computed), and copies of the same expression in the loop's branches use that
//! value too.

use super::promote::collect_loops;
use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// A pure integer expression over values fixed for the loop.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Key {
    Const(i128),
    Outside(Value),
    Expr(BinOp, Box<Key>, Box<Key>),
}

/// Rewrites the loops of `f`, innermost first.
pub fn hoist_invariant_index_math(f: &mut Function) {
    let mut loops = Vec::new();
    collect_loops(f, f.body, &mut loops);
    let mut parent = parents(f);
    for l in loops {
        apply(f, &mut parent, l);
    }
}

fn parents(f: &Function) -> HashMap<Inst, Block> {
    fn go(f: &Function, b: Block, m: &mut HashMap<Inst, Block>) {
        for &i in &f.block(b).insts {
            m.insert(i, b);
            for c in f.child_blocks(i) {
                go(f, c, m);
            }
        }
    }
    let mut m = HashMap::new();
    go(f, f.body, &mut m);
    m
}

fn is_index_op(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
    )
}

fn apply(f: &mut Function, parent: &mut HashMap<Inst, Block>, l: Inst) {
    let InstKind::For { range, body, .. } = f.inst(l).kind.clone() else {
        return;
    };
    let mut inside = HashSet::new();
    f.walk(body, &mut |i| {
        inside.insert(i);
    });
    // The key of every integer expression of the loop over values fixed for it.
    let mut keys: HashMap<Value, Key> = HashMap::new();
    let key_of = |f: &Function, keys: &HashMap<Value, Key>, v: Value| -> Option<Key> {
        match f.value(v).def {
            ValueDef::Result(i, 0) if inside.contains(&i) => match f.inst(i).kind {
                InstKind::IConst(c) => Some(Key::Const(c)),
                _ => keys.get(&v).cloned(),
            },
            ValueDef::Result(i, _) if inside.contains(&i) => None,
            ValueDef::Result(..) => Some(Key::Outside(v)),
            ValueDef::LoopIndex(j) | ValueDef::LoopParam(j, _) => {
                (j != l && !inside.contains(&j)).then_some(Key::Outside(v))
            }
        }
    };
    f.walk(body, &mut |i| {
        if let InstKind::Binary(op, a, b) = f.inst(i).kind {
            let r = f.inst(i).results[0];
            if is_index_op(op) && f.ty(r) == Ty::Int {
                if let (Some(ka), Some(kb)) = (key_of(f, &keys, a), key_of(f, &keys, b)) {
                    keys.insert(r, Key::Expr(op, Box::new(ka), Box::new(kb)));
                }
            }
        }
    });
    // Hoisted: the ones every iteration computes (top level of the body), first come.
    let top: Vec<Inst> = f
        .block(body)
        .insts
        .iter()
        .copied()
        .filter(|i| {
            matches!(f.inst(*i).kind, InstKind::Binary(..))
                && keys.contains_key(&f.inst(*i).results[0])
        })
        .collect();
    if top.is_empty() {
        return;
    }
    let pre = f.new_block();
    let then_blk = f.new_block();
    let else_blk = f.new_block();
    let mut cell_of: HashMap<Key, Cell> = HashMap::new();
    let mut fresh: HashMap<Value, Value> = HashMap::new();
    let mut computed: HashMap<Key, Value> = HashMap::new();
    {
        let mut b = Builder::new(f, pre);
        for &i in &top {
            let r = b.func.inst(i).results[0];
            let key = keys[&r].clone();
            if cell_of.contains_key(&key) {
                continue;
            }
            let z = b.iconst(0);
            let c = b.cell(Ty::Int, "fixed", z);
            cell_of.insert(key, c);
        }
        let ran = b.binary(BinOp::Gt, range.end, range.start);
        b.in_block(then_blk, |b| {
            for &i in &top {
                let InstKind::Binary(op, x, y) = b.func.inst(i).kind else {
                    unreachable!("hoisted instructions are binary")
                };
                let r = b.func.inst(i).results[0];
                let key = keys[&r].clone();
                if let Some(v) = computed.get(&key) {
                    fresh.insert(r, *v);
                    continue;
                }
                // Operands computed in the loop are hoisted ones or constants.
                let map = |b: &mut Builder, v: Value| match fresh.get(&v) {
                    Some(h) => *h,
                    None => match b.func.value(v).def {
                        ValueDef::Result(j, 0) if inside.contains(&j) => {
                            let InstKind::IConst(c) = b.func.inst(j).kind else {
                                unreachable!("an operand of a hoisted expression")
                            };
                            b.iconst(c)
                        }
                        _ => v,
                    },
                };
                let (x, y) = (map(b, x), map(b, y));
                let v = b.binary(op, x, y);
                fresh.insert(r, v);
                b.set(cell_of[&key], v);
                computed.insert(key, v);
            }
        });
        b.set_yields(then_blk, vec![]);
        b.set_yields(else_blk, vec![]);
        b.stmt(InstKind::If {
            cond: ran,
            then_blk,
            else_blk,
        });
    }
    // Every expression of the loop equal to a hoisted one reads its cell.
    let mut all = Vec::new();
    f.walk(body, &mut |i| all.push(i));
    for i in all {
        if let InstKind::Binary(..) = f.inst(i).kind {
            let r = f.inst(i).results[0];
            if let Some(c) = keys.get(&r).and_then(|k| cell_of.get(k)) {
                f.insts[i.index()].kind = InstKind::CellGet(*c);
            }
        }
    }
    let outer = parent[&l];
    let pre_insts = std::mem::take(&mut f.blocks[pre.index()].insts);
    let list = &mut f.blocks[outer.index()].insts;
    let at = list
        .iter()
        .position(|i| *i == l)
        .expect("loop in its block");
    list.splice(at..at, pre_insts.iter().copied());
    for i in pre_insts {
        parent.insert(i, outer);
    }
    for &i in &f.blocks[then_blk.index()].insts {
        parent.insert(i, then_blk);
    }
}

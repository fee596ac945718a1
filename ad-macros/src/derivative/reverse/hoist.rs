//! Arithmetic and reads fixed for a loop computed once before it.
//!
//! A stencil on a periodic grid reads `u[((i + 1) % m) * n + j]` inside `for j in 0..n`;
//! its adjoint adds into the same element and recomputes the same index in each branch of
//! the reversed body. The remainders are integer divisions (tens of cycles each) that the
//! compiler leaves in the inner loop, since hoisting a division it cannot prove nonzero
//! past the loop's entry check would change where a panic happens. Likewise the adjoint of
//! a triangular product recomputes `x[c] - mu[c]` for every row `r`. Here what every
//! iteration computes from values fixed for the loop (pure arithmetic, math functions,
//! casts, and reads of buffers the loop does not write) moves before it, under the check
//! that the loop runs at all (so nothing is computed, and nothing can panic, that the loop
//! would not have), and copies of the same expression in the loop's branches use that
//! value too. The operations and their operands are unchanged, so results are bitwise
//! the same.

use super::carry::surround;
use super::promote::collect_loops;
use crate::ir::builder::Builder;
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// A pure expression over values fixed for the loop.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Key {
    Int(i128),
    Float(u64),
    Bool(bool),
    Outside(Value),
    /// The instruction's kind with its operands replaced by the keys' positions.
    Op(String, Vec<Key>),
}

/// Rewrites the loops of `f`, innermost first.
pub fn hoist_invariant_index_math(f: &mut Function) {
    let mut loops = Vec::new();
    collect_loops(f, f.body, &mut loops);
    let mut parent = f.block_map();
    for l in loops {
        apply(f, &mut parent, l);
    }
}

/// The operands of a pure instruction the pass may move, and the name of its operation.
fn pure_parts(kind: &InstKind) -> Option<(String, Vec<Value>)> {
    Some(match kind {
        InstKind::Binary(op, a, b) => (format!("{op:?}"), vec![*a, *b]),
        InstKind::Unary(op, a) => (format!("{op:?}"), vec![*a]),
        InstKind::Math(name, args) => (name.to_string(), args.clone()),
        InstKind::Cast {
            value,
            to,
            int,
            float,
        } => (format!("as {to:?} {int:?} {float:?}"), vec![*value]),
        InstKind::Load(buf, idx) => (format!("{buf}"), idx.clone()),
        _ => return None,
    })
}

/// Whether a movable instruction can panic: a read (its index) or an integer division.
fn may_panic(f: &Function, kind: &InstKind) -> bool {
    match kind {
        InstKind::Load(..) => true,
        InstKind::Binary(BinOp::Div | BinOp::Rem, a, _) => f.ty(*a) == Ty::Int,
        _ => false,
    }
}

fn apply(f: &mut Function, parent: &mut HashMap<Inst, Block>, l: Inst) {
    let InstKind::For { range, body, .. } = f.inst(l).kind.clone() else {
        return;
    };
    let mut inside = HashSet::new();
    f.walk(body, &mut |i| {
        inside.insert(i);
    });
    // Buffers the loop writes: their reads stay in it.
    let mut written = HashSet::new();
    for &i in &inside {
        written.extend(f.written_bufs(i));
    }
    // The key of every pure expression of the loop over values fixed for it.
    let mut keys: HashMap<Value, Key> = HashMap::new();
    let key_of = |f: &Function, keys: &HashMap<Value, Key>, v: Value| -> Option<Key> {
        match f.value(v).def {
            ValueDef::Result(i, 0) if inside.contains(&i) => match f.inst(i).kind {
                InstKind::IConst(c) => Some(Key::Int(c)),
                InstKind::FConst(c) => Some(Key::Float(c.to_bits())),
                InstKind::BConst(c) => Some(Key::Bool(c)),
                _ => keys.get(&v).cloned(),
            },
            ValueDef::Result(i, _) if inside.contains(&i) => None,
            ValueDef::Result(..) => Some(Key::Outside(v)),
            ValueDef::LoopIndex(j) | ValueDef::LoopParam(j, _) => {
                (j != l && !inside.contains(&j)).then_some(Key::Outside(v))
            }
        }
    };
    // After an instruction that may leave the function (a failure, an assertion, a call
    // that may fail), what could panic stays where it is: hoisted, a read past the end
    // that a failure guards (`*x.get(3)?` then `x[3]`) would panic before the failure
    // returns.
    let mut fenced = false;
    f.walk(body, &mut |i| {
        match &f.inst(i).kind {
            InstKind::Fail { .. } | InstKind::Assert { .. } => fenced = true,
            InstKind::Call { callee, .. } if !callee.then.0.is_empty() => fenced = true,
            _ => {}
        }
        let Some((name, ops)) = pure_parts(&f.inst(i).kind) else {
            return;
        };
        if fenced && may_panic(f, &f.inst(i).kind) {
            return;
        }
        if let InstKind::Load(buf, _) = f.inst(i).kind {
            if written.contains(&buf) {
                return;
            }
        }
        // Comparisons are cheap, and the loops' own entry checks are ones.
        if f.ty(f.inst(i).results[0]) == Ty::Bool {
            return;
        }
        let ks: Option<Vec<Key>> = ops.iter().map(|v| key_of(f, &keys, *v)).collect();
        if let Some(ks) = ks {
            keys.insert(f.inst(i).results[0], Key::Op(name, ks));
        }
    });
    // Hoisted: the ones every iteration computes (top level of the body), first come.
    let top: Vec<Inst> = f
        .block(body)
        .insts
        .iter()
        .copied()
        .filter(|i| {
            pure_parts(&f.inst(*i).kind).is_some() && keys.contains_key(&f.inst(*i).results[0])
        })
        .collect();
    if top.is_empty() {
        return;
    }
    // The loop's copies of hoisted expressions; those whose values something else in the
    // loop reads get a cell, the others (operands of hoisted ones only) leave the loop.
    let hoisted_keys: HashSet<Key> = top
        .iter()
        .map(|i| keys[&f.inst(*i).results[0]].clone())
        .collect();
    let mut all = Vec::new();
    f.walk(body, &mut |i| all.push(i));
    let replaced: HashSet<Inst> = all
        .iter()
        .copied()
        .filter(|i| {
            pure_parts(&f.inst(*i).kind).is_some()
                && keys
                    .get(&f.inst(*i).results[0])
                    .is_some_and(|k| hoisted_keys.contains(k))
        })
        .collect();
    let mut read: Vec<Value> = Vec::new();
    for &i in &all {
        if !replaced.contains(&i) {
            read.extend(f.operands(i));
            for c in f.child_blocks(i) {
                read.extend(f.block(c).yields.iter().copied());
            }
        }
    }
    read.extend(f.block(body).yields.iter().copied());
    let needed: HashSet<Key> = read
        .iter()
        .filter_map(|v| keys.get(v))
        .filter(|k| hoisted_keys.contains(*k))
        .cloned()
        .collect();
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
            if cell_of.contains_key(&key) || !needed.contains(&key) {
                continue;
            }
            let ty = b.func.ty(r);
            let z = b.zero(ty);
            let c = b.cell(ty, "fixed", z);
            cell_of.insert(key, c);
        }
        let ran = b.binary(BinOp::Gt, range.end, range.start);
        b.in_block(then_blk, |b| {
            for &i in &top {
                let mut kind = b.func.inst(i).kind.clone();
                debug_assert!(pure_parts(&kind).is_some(), "hoisted instructions are pure");
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
                            match b.func.inst(j).kind {
                                InstKind::IConst(c) => b.iconst(c),
                                InstKind::FConst(c) => b.fconst(c),
                                InstKind::BConst(c) => b.bconst(c),
                                _ => unreachable!("an operand of a hoisted expression"),
                            }
                        }
                        _ => v,
                    },
                };
                kind.map_operands(&mut |v| map(b, v));
                let ty = b.func.ty(r);
                let v = b.value(kind, ty);
                fresh.insert(r, v);
                if let Some(c) = cell_of.get(&key) {
                    b.set(*c, v);
                }
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
    // Every expression of the loop equal to a hoisted one reads its cell, or is gone when
    // only other hoisted expressions read it.
    for &i in &replaced {
        let r = f.inst(i).results[0];
        match cell_of.get(&keys[&r]) {
            Some(c) => f.insts[i.index()].kind = InstKind::CellGet(*c),
            None => {
                let blk = parent[&i];
                f.blocks[blk.index()].insts.retain(|j| *j != i);
            }
        }
    }
    let post = f.new_block();
    surround(f, parent, l, pre, post);
}

//! Fused sums strip-mined by eight, so that the compiler can vectorize their adjoint.
//!
//! A fused sum (`super::fuse`) runs `s += term(i)` and the term's adjoint in one
//! ascending loop. The additions into `s` form a chain that must stay in order (the
//! value returned is the primal's, bit for bit), so LLVM's loop vectorizer leaves the
//! whole loop scalar, although the adjoint part is independent from one iteration to the
//! next. The loop becomes
//!
//! ```text
//! for c in 0..len / 8 {
//!     for k in 0..8 { body at i = start + 8c + k }
//! }
//! for i in start + 8·(len / 8)..end { body }
//! ```
//!
//! LLVM unrolls the inner loop of eight completely, sees one window of eight elements per
//! buffer (`codegen::window`, so no bounds check remains between them), and packs the
//! eight copies of each independent operation into vector instructions (its SLP
//! vectorizer), while the chain into `s` still adds the terms one by one, in order. Every
//! iteration runs the same operations in the same order as before, so results are bitwise
//! the same (`tests::strip` runs both programs through `ir::interp`). Only loops whose body
//! is straight-line code (arithmetic, loads, stores, scalar variables) are strip-mined:
//! a branch or an inner loop splits the body into blocks the SLP vectorizer does not
//! pack across. Measured on Rosenbrock (10⁵ inputs, one binary, fastest of 2000 calls):
//! the gradient went from 2.0× to 1.35× the primal (from 1.4× with strips of four).

use super::twin_if::straight;
use crate::ir::builder::Builder;
use crate::ir::copy::Copier;
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// Iterations per strip.
const LANES: i128 = 8;
/// The largest body strip-mined (it is written twice).
const MAX_BODY: usize = 160;

/// Strip-mines every loop of `fused` (the reverse program's fused sums) whose body is
/// straight-line code.
pub fn strip_mine_fused(f: &mut Function, fused: &HashSet<Inst>) {
    let mut parent = f.block_map();
    let mut loops: Vec<Inst> = fused
        .iter()
        .copied()
        .filter(|l| parent.contains_key(l) && eligible(f, *l))
        .collect();
    loops.sort();
    for l in loops {
        strip(f, &mut parent, l);
    }
}

/// A serial ascending step-1 loop without exits, whose trip count nothing reads, with a
/// short body of [`straight`] instructions (no blocks, calls, allocations or tapes) that
/// loads or stores something (a loop of scalars alone has nothing to pack).
fn eligible(f: &Function, l: Inst) -> bool {
    let InstKind::For {
        range,
        params,
        exit,
        body,
        ..
    } = &f.inst(l).kind
    else {
        return false;
    };
    if range.rev || range.step.is_some() || !exit.is_empty() {
        return false;
    }
    if f.parallel.contains_key(&l) {
        return false;
    }
    let insts = &f.block(*body).insts;
    if insts.len() > MAX_BODY || !insts.iter().all(|i| straight(&f.inst(*i).kind)) {
        return false;
    }
    if !insts.iter().any(|i| {
        matches!(
            f.inst(*i).kind,
            InstKind::Load(..) | InstKind::Store(..) | InstKind::StoreAdd(..)
        )
    }) {
        return false;
    }
    f.inst(l)
        .results
        .get(params.len())
        .is_none_or(|count| f.uses_in(f.body, *count) == 0)
}

/// Strip-mines loop `l` (`parent`: the block of each instruction): the strips go before
/// it, and `l` itself keeps the remaining iterations (fewer than eight). The loop's parameters (the sum) pass
/// through both new loops and into `l`'s initial values.
fn strip(f: &mut Function, parent: &mut HashMap<Inst, Block>, l: Inst) {
    let InstKind::For {
        range,
        index,
        params,
        inits,
        body,
        ..
    } = f.inst(l).kind.clone()
    else {
        return;
    };
    // The strips' indices stay in `[0, bound)` where the loop's do.
    let below = super::split::index_bound(f, l);
    let pre = f.new_block();
    let mut b = Builder::new(f, pre);
    b.span = b.func.inst(l).span;
    // len = end − start when the loop runs (indices are usually `usize`).
    let len = super::range_len(&mut b, range.start, range.end);
    let lanes = b.iconst(LANES);
    let chunks = b.div(len, lanes);
    let covered = b.mul(chunks, lanes);
    let rest = b.add(range.start, covered);
    // for c in 0..chunks { let base = start + c·8; for k in 0..8 { body at base + k } }
    let zero = b.iconst(0);
    let results = b.for_range(
        zero,
        chunks,
        Some("strip".into()),
        &params,
        inits,
        |b, c, outer| {
            let at = b.mul(c, lanes);
            let base = b.add(range.start, at);
            let inner_start = b.iconst(0);
            let inner_end = b.iconst(LANES);
            b.for_range(
                inner_start,
                inner_end,
                Some("lane".into()),
                &params,
                outer.to_vec(),
                |b, k, inner| {
                    let mut names: HashMap<Value, Value> =
                        params.iter().copied().zip(inner.iter().copied()).collect();
                    let i = b.add(base, k);
                    if let Some(below) = below {
                        b.func.index_below.insert(i, below);
                    }
                    names.insert(index, i);
                    Copier::within(names).plain_block(b, body)
                },
            )
        },
    );
    // The original loop runs what is left, from where the strips stopped.
    if let InstKind::For { range, inits, .. } = &mut f.insts[l.index()].kind {
        range.start = rest;
        *inits = results;
    }
    if let Some(below) = below {
        f.index_below.insert(index, below);
    }
    let post = f.new_block();
    super::carry::surround(f, parent, l, pre, post);
}

//! Dead-code removal on structured IR (used by the CUDA gather form, whose copies of an
//! adjoint keep only what one add needs).

use super::*;
use std::collections::{HashMap, HashSet};

/// Removes the instructions nothing needs: roots are writes to buffers, assertions and the
/// function's yields; an instruction is needed by the values it reads, the `if` or loop
/// it is in, and the cells it reads (every write of a read cell is needed).
pub fn dead_code(f: &mut Function) {
    let parents = f.parents();
    let mut cell_users: HashMap<Cell, Vec<Inst>> = HashMap::new();
    let mut roots = Vec::new();
    f.walk(f.body, &mut |i| match &f.inst(i).kind {
        InstKind::CellDecl(c, _) | InstKind::CellSet(c, _) | InstKind::CellAdd(c, _) => {
            cell_users.entry(*c).or_default().push(i)
        }
        InstKind::Store(..)
        | InstKind::StoreAdd(..)
        | InstKind::Assert { .. }
        | InstKind::Fail { .. } => roots.push(i),
        k if !f.written_bufs(i).is_empty() || matches!(k, InstKind::Call { .. }) => roots.push(i),
        _ => {}
    });
    let mut live: HashSet<Inst> = HashSet::new();
    let mut live_cells: HashSet<Cell> = HashSet::new();
    let mut work: Vec<Inst> = roots;
    for &y in &f.block(f.body).yields {
        work.push(f.def_inst(y));
    }
    while let Some(i) = work.pop() {
        if !live.insert(i) {
            continue;
        }
        for v in f.operands(i) {
            work.push(f.def_inst(v));
        }
        if let Some((p, _)) = parents.get(&i) {
            work.push(*p);
        }
        if let InstKind::CellGet(c) = f.inst(i).kind {
            if live_cells.insert(c) {
                work.extend(cell_users.get(&c).into_iter().flatten().copied());
            }
        }
        for c in f.child_blocks(i) {
            for &y in &f.block(c).yields {
                work.push(f.def_inst(y));
            }
        }
        if let InstKind::For { exit, .. } | InstKind::While { exit, .. } = &f.inst(i).kind {
            work.extend(exit.iter().map(|v| f.def_inst(*v)));
        }
    }
    // A value defined by a loop (its index, φs) makes the loop live; `def_inst` gives it.
    for b in 0..f.blocks.len() {
        let keep: Vec<Inst> = f.blocks[b]
            .insts
            .iter()
            .copied()
            .filter(|i| live.contains(i))
            .collect();
        f.blocks[b].insts = keep;
    }
}

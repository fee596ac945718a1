//! Copies of instructions and blocks under fresh names: nested `if`s and loops included,
//! within one function (a loop's piece, a strip of it) or into another (the gather
//! form's instances of an adjoint). A hook sees every instruction, at every depth, before
//! it is copied and may copy it otherwise or leave it out; the passes that cut loops
//! (`split`, `strip`) and the gather form all copy through here.

use super::builder::Builder;
use super::*;
use std::collections::HashMap;

/// What a hook did with an instruction.
pub enum Flow {
    /// Nothing: the copier copies it.
    Copy,
    /// It copied the instruction its own way, or left it out.
    Done,
}

/// A hook: called with the copier and the builder before each instruction is copied.
pub type Hook<'h, 's> = dyn FnMut(&mut Copier<'s>, &mut Builder, Inst) -> Flow + 'h;

/// Copies from a source function into a builder's position.
#[derive(Clone)]
pub struct Copier<'s> {
    /// `None`: the builder's own function.
    src: Option<&'s Function>,
    /// Each source value to its copy, or to what the caller maps it to before copying (a
    /// loop's index to a piece's index, a parameter to an argument).
    pub names: HashMap<Value, Value>,
    /// Each source cell to its copy (into another function only: within one, the copies
    /// share the cells).
    cells: HashMap<Cell, Cell>,
}

impl<'s> Copier<'s> {
    /// Copies within the builder's function.
    pub fn within(names: HashMap<Value, Value>) -> Self {
        Copier {
            src: None,
            names,
            cells: HashMap::new(),
        }
    }

    /// Copies from `src` into another function (with the same parameters and buffers).
    pub fn between(src: &'s Function) -> Self {
        Copier {
            src: Some(src),
            names: HashMap::new(),
            cells: HashMap::new(),
        }
    }

    /// `v`'s copy, or `v` itself when it was not copied (defined outside what is copied).
    pub fn map(&self, v: Value) -> Value {
        self.names.get(&v).copied().unwrap_or(v)
    }

    fn source<'a>(&'a self, b: &'a Builder) -> &'a Function {
        self.src.unwrap_or(&*b.func)
    }

    /// Appends copies of `blk`'s instructions to the builder's block; returns `blk`'s
    /// yields under the new names.
    pub fn block(&mut self, b: &mut Builder, blk: Block, hook: &mut Hook<'_, 's>) -> Vec<Value> {
        let insts = self.source(b).block(blk).insts.clone();
        for i in insts {
            self.inst(b, i, hook);
        }
        let yields = self.source(b).block(blk).yields.clone();
        yields.into_iter().map(|v| self.map(v)).collect()
    }

    /// [`Self::block`] without a hook.
    pub fn plain_block(&mut self, b: &mut Builder, blk: Block) -> Vec<Value> {
        self.block(b, blk, &mut |_, _, _| Flow::Copy)
    }

    /// [`Self::inst`] without a hook.
    pub fn plain_inst(&mut self, b: &mut Builder, i: Inst) {
        self.inst(b, i, &mut |_, _, _| Flow::Copy)
    }

    /// Appends a copy of instruction `i` (of its blocks too) after `hook` has seen it.
    pub fn inst(&mut self, b: &mut Builder, i: Inst, hook: &mut Hook<'_, 's>) {
        if let Flow::Done = hook(self, b, i) {
            return;
        }
        let data = self.source(b).inst(i).clone();
        let mut kind = data.kind.clone();
        if let InstKind::CellDecl(c, _)
        | InstKind::CellGet(c)
        | InstKind::CellSet(c, _)
        | InstKind::CellAdd(c, _) = &mut kind
        {
            *c = self.cell(b, *c);
        }
        // The operands (a condition, a range, initial values) read values from outside
        // the instruction's blocks.
        kind.map_operands(&mut |v| self.map(v));
        match &mut kind {
            InstKind::If {
                then_blk, else_blk, ..
            } => {
                *then_blk = self.nested(b, *then_blk, hook);
                *else_blk = self.nested(b, *else_blk, hook);
            }
            InstKind::For { .. } | InstKind::While { .. } => {
                self.copy_loop(b, i, &data, kind, hook);
                return;
            }
            InstKind::CkReverse { .. } => unreachable!("a checkpointed loop is not copied"),
            _ => {}
        }
        let tys: Vec<Ty> = data.results.iter().map(|r| self.source(b).ty(*r)).collect();
        let name = data
            .results
            .first()
            .and_then(|r| self.source(b).value(*r).name.clone());
        let new = b.push(kind, &tys, name.as_deref());
        for (o, n) in data.results.iter().zip(b.func.inst(new).results.clone()) {
            self.names.insert(*o, n);
        }
    }

    /// A copy of `blk` as a new block of the builder's function.
    fn nested(&mut self, b: &mut Builder, blk: Block, hook: &mut Hook<'_, 's>) -> Block {
        let to = b.func.new_block();
        let ys = b.in_block(to, |b| self.block(b, blk, hook));
        b.set_yields(to, ys);
        to
    }

    /// A loop's copy: its index, parameters and results are defined by the loop, so it is
    /// reserved first. `kind` has its operands renamed already.
    fn copy_loop(
        &mut self,
        b: &mut Builder,
        i: Inst,
        data: &InstData,
        mut kind: InstKind,
        hook: &mut Hook<'_, 's>,
    ) {
        let l = b.reserve();
        if let InstKind::For { index, .. } = &mut kind {
            *index = self.fresh(b, &[*index], |_| ValueDef::LoopIndex(l))[0];
        }
        let (params, _, body, exit) = self.source(b).loop_parts(i);
        let params = self.fresh(b, &params, |k| ValueDef::LoopParam(l, k));
        if let InstKind::While { cond, .. } = &mut kind {
            *cond = self.nested(b, *cond, hook);
        }
        let body = self.nested(b, body, hook);
        let exit: Vec<Value> = exit.iter().map(|v| self.map(*v)).collect();
        match &mut kind {
            InstKind::For {
                params: p,
                body: bd,
                exit: e,
                ..
            }
            | InstKind::While {
                params: p,
                body: bd,
                exit: e,
                ..
            } => (*p, *bd, *e) = (params, body, exit),
            _ => unreachable!("a loop"),
        }
        let results = self.fresh(b, &data.results, |k| ValueDef::Result(l, k));
        b.finish(l, kind, results);
    }

    /// Fresh values like `old` (types, names), the `k`-th defined as `def(k)`, each mapped
    /// from its old one.
    fn fresh(
        &mut self,
        b: &mut Builder,
        old: &[Value],
        def: impl Fn(u32) -> ValueDef,
    ) -> Vec<Value> {
        old.iter()
            .enumerate()
            .map(|(k, o)| {
                let d = self.source(b).value(*o).clone();
                let v = b.func.new_value(d.ty, def(k as u32), d.name);
                self.names.insert(*o, v);
                v
            })
            .collect()
    }

    /// `c`'s copy: itself within one function, a new cell like it in another.
    fn cell(&mut self, b: &mut Builder, c: Cell) -> Cell {
        let Some(src) = self.src else { return c };
        *self.cells.entry(c).or_insert_with(|| {
            let d = &src.cells[c.index()];
            b.func.new_cell(d.ty, d.name.clone())
        })
    }
}

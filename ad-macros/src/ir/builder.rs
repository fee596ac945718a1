//! Appending instructions to a block: the one way passes create IR.

use super::*;

/// A cursor at the end of a block of `func`; every instruction gets `span`.
pub struct Builder<'f> {
    pub func: &'f mut Function,
    pub block: Block,
    pub span: Span,
    /// The blocks [`Builder::in_block`] moved away from, outermost first: those enclosing
    /// the current one where passes nest blocks that way.
    pub open: Vec<Block>,
}

impl<'f> Builder<'f> {
    pub fn new(func: &'f mut Function, block: Block) -> Self {
        Builder {
            func,
            block,
            span: Span::call_site(),
            open: Vec::new(),
        }
    }

    /// Appends an instruction with results of the given types to the current block.
    pub fn push(&mut self, kind: InstKind, result_tys: &[Ty], name: Option<&str>) -> Inst {
        let inst = Inst(self.func.insts.len() as u32);
        self.func.insts.push(InstData {
            kind,
            results: Vec::new(),
            span: self.span,
        });
        let results = result_tys
            .iter()
            .enumerate()
            .map(|(n, ty)| {
                self.func.new_value(
                    *ty,
                    ValueDef::Result(inst, n as u32),
                    name.map(str::to_string),
                )
            })
            .collect();
        self.func.insts[inst.index()].results = results;
        self.func.blocks[self.block.index()].insts.push(inst);
        inst
    }

    /// Appends an instruction with one result and returns that result.
    pub fn value(&mut self, kind: InstKind, ty: Ty) -> Value {
        let i = self.push(kind, &[ty], None);
        self.func.insts[i.index()].results[0]
    }

    pub fn stmt(&mut self, kind: InstKind) -> Inst {
        self.push(kind, &[], None)
    }

    /// Reserves an instruction (a placeholder in the current block) whose kind and results are
    /// filled in by `finish`: loops need their id before their body exists.
    pub fn reserve(&mut self) -> Inst {
        self.push(InstKind::BConst(false), &[], None)
    }

    pub fn finish(&mut self, inst: Inst, kind: InstKind, results: Vec<Value>) {
        let data = &mut self.func.insts[inst.index()];
        data.kind = kind;
        data.results = results;
    }

    pub fn fconst(&mut self, c: f64) -> Value {
        self.value(InstKind::FConst(c), Ty::Float)
    }
    pub fn iconst(&mut self, c: i128) -> Value {
        self.value(InstKind::IConst(c), Ty::Int)
    }
    pub fn bconst(&mut self, c: bool) -> Value {
        self.value(InstKind::BConst(c), Ty::Bool)
    }

    pub fn binary(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
            Ty::Bool
        } else if self.func.ty(a) == Ty::Float || self.func.ty(b) == Ty::Float {
            Ty::Float
        } else {
            self.func.ty(a)
        };
        self.value(InstKind::Binary(op, a, b), ty)
    }
    pub fn add(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Add, a, b)
    }
    pub fn sub(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Sub, a, b)
    }
    pub fn mul(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Mul, a, b)
    }
    pub fn div(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Div, a, b)
    }
    /// `a` converted to the integer type of `like` (see [`BinOp::IntLike`]).
    pub fn int_like(&mut self, a: Value, like: Value) -> Value {
        self.value(InstKind::Binary(BinOp::IntLike, a, like), Ty::Int)
    }
    pub fn neg(&mut self, a: Value) -> Value {
        let ty = self.func.ty(a);
        self.value(InstKind::Unary(UnOp::Neg, a), ty)
    }
    pub fn not(&mut self, a: Value) -> Value {
        self.value(InstKind::Unary(UnOp::Not, a), Ty::Bool)
    }
    pub fn math(&mut self, name: &'static str, args: Vec<Value>) -> Value {
        self.value(InstKind::Math(name, args), Ty::Float)
    }
    pub fn load(&mut self, buf: Buf, idx: Vec<Value>) -> Value {
        let ty = self.func.buf(buf).elem;
        self.value(InstKind::Load(buf, idx), ty)
    }
    pub fn store(&mut self, buf: Buf, idx: Vec<Value>, v: Value) {
        self.stmt(InstKind::Store(buf, idx, v));
    }
    pub fn cell(&mut self, ty: Ty, name: &str, init: Value) -> Cell {
        let c = self.func.new_cell(ty, name);
        self.stmt(InstKind::CellDecl(c, init));
        c
    }
    pub fn get(&mut self, c: Cell) -> Value {
        let ty = self.func.cells[c.index()].ty;
        self.value(InstKind::CellGet(c), ty)
    }
    pub fn set(&mut self, c: Cell, v: Value) {
        self.stmt(InstKind::CellSet(c, v));
    }
    pub fn accumulate(&mut self, c: Cell, v: Value) {
        self.stmt(InstKind::CellAdd(c, v));
    }
    /// A zero of `ty` (float 0, integer 0, false).
    pub fn zero(&mut self, ty: Ty) -> Value {
        match ty {
            Ty::Float => self.fconst(0.0),
            Ty::Int => self.iconst(0),
            Ty::Bool => self.bconst(false),
        }
    }

    /// Runs `f` with the cursor moved to `block`, then moves it back.
    pub fn in_block<R>(&mut self, block: Block, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = std::mem::replace(&mut self.block, block);
        self.open.push(saved);
        let r = f(self);
        self.open.pop();
        self.block = saved;
        r
    }

    /// `if cond { a } else { b }` of two values already computed.
    pub fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        let then_blk = self.func.new_block();
        let else_blk = self.func.new_block();
        self.set_yields(then_blk, vec![a]);
        self.set_yields(else_blk, vec![b]);
        let ty = self.func.ty(a);
        let i = self.push(
            InstKind::If {
                cond,
                then_blk,
                else_blk,
            },
            &[ty],
            None,
        );
        self.func.insts[i.index()].results[0]
    }

    /// `if cond { then(..) } else { otherwise(..) }`, each arm building its block and
    /// returning the values it yields (of types `tys`); the `if`'s results.
    pub fn branch(
        &mut self,
        cond: Value,
        tys: &[Ty],
        then: impl FnOnce(&mut Self) -> Vec<Value>,
        otherwise: impl FnOnce(&mut Self) -> Vec<Value>,
    ) -> Vec<Value> {
        let then_blk = self.func.new_block();
        let else_blk = self.func.new_block();
        let t = self.in_block(then_blk, then);
        let e = self.in_block(else_blk, otherwise);
        self.set_yields(then_blk, t);
        self.set_yields(else_blk, e);
        let i = self.push(
            InstKind::If {
                cond,
                then_blk,
                else_blk,
            },
            tys,
            None,
        );
        self.func.insts[i.index()].results.clone()
    }

    /// A `for` loop over `start..end` (ascending, step 1) appended here: its index named
    /// `name`, fresh parameters like `like` (types and names) starting at `inits`, and a
    /// body `body` builds from the index and the parameters, returning the parameters'
    /// next values. Returns the loop's results without its trip count.
    pub fn for_range(
        &mut self,
        start: Value,
        end: Value,
        name: Option<String>,
        like: &[Value],
        inits: Vec<Value>,
        body: impl FnOnce(&mut Self, Value, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let l = self.reserve();
        let index = self.func.new_value(Ty::Int, ValueDef::LoopIndex(l), name);
        let params: Vec<Value> = like
            .iter()
            .enumerate()
            .map(|(n, p)| {
                let d = self.func.value(*p).clone();
                self.func
                    .new_value(d.ty, ValueDef::LoopParam(l, n as u32), d.name)
            })
            .collect();
        let blk = self.func.new_block();
        let next = self.in_block(blk, |b| body(b, index, &params));
        self.set_yields(blk, next);
        let mut results: Vec<Value> = params
            .iter()
            .enumerate()
            .map(|(n, p)| {
                let ty = self.func.ty(*p);
                self.func.new_value(ty, ValueDef::Result(l, n as u32), None)
            })
            .collect();
        results.push(
            self.func
                .new_value(Ty::Int, ValueDef::Result(l, params.len() as u32), None),
        );
        let kind = InstKind::For {
            range: RangeSpec {
                start,
                end,
                step: None,
                rev: false,
            },
            index,
            params,
            inits,
            body: blk,
            exit: vec![],
        };
        self.finish(l, kind, results.clone());
        results.truncate(results.len() - 1);
        results
    }

    pub fn set_yields(&mut self, block: Block, yields: Vec<Value>) {
        self.func.blocks[block.index()].yields = yields;
    }
}

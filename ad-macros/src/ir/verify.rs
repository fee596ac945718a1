//! The IR verifier. Invariants checked:
//!
//! 1. every instruction sits in exactly one block, reached from the function body;
//! 2. every operand is defined before its use in the same block or an enclosing one
//!    (loop indices and header parameters are defined for their loop's blocks), so the
//!    structured scopes of the generated Rust see every value they use;
//! 3. an `if`'s two branches yield one value per result, of the result's type;
//!    a loop body yields one value per header parameter; `exit` values are boolean
//!    parameters of their loop; a `while` condition yields one bool;
//! 4. arithmetic operands have one type; conditions are bool; indices are integers and
//!    there are as many as the buffer's rank.

use super::*;
use std::collections::HashSet;

pub fn verify(f: &Function) -> Result<(), String> {
    let mut v = Verifier {
        f,
        defined: HashSet::new(),
        seen: HashSet::new(),
    };
    v.block(f.body)?;
    Ok(())
}

struct Verifier<'a> {
    f: &'a Function,
    defined: HashSet<Value>,
    seen: HashSet<Inst>,
}

impl Verifier<'_> {
    fn block(&mut self, b: Block) -> Result<Vec<Value>, String> {
        let mut added = Vec::new();
        for &i in &self.f.block(b).insts {
            if !self.seen.insert(i) {
                return Err(format!("{i} appears twice"));
            }
            self.inst(i)?;
            for &r in &self.f.inst(i).results {
                self.defined.insert(r);
                added.push(r);
            }
        }
        for &y in &self.f.block(b).yields {
            self.used(y, "yield")?;
        }
        let ys = self.f.block(b).yields.clone();
        for r in added {
            self.defined.remove(&r);
        }
        Ok(ys)
    }

    fn used(&self, v: Value, what: &str) -> Result<(), String> {
        if v.index() >= self.f.values.len() {
            return Err(format!("{what}: {v} does not exist"));
        }
        if !self.defined.contains(&v) {
            return Err(format!("{what}: {v} is used where it is not defined"));
        }
        Ok(())
    }

    fn expect(&self, v: Value, ty: Ty, what: &str) -> Result<(), String> {
        if self.f.ty(v) != ty {
            return Err(format!(
                "{what}: {v} has type {:?}, expected {ty:?}",
                self.f.ty(v)
            ));
        }
        Ok(())
    }

    fn indices(&self, buf: Buf, idx: &[Value], i: Inst, exact: bool) -> Result<(), String> {
        let rank = self.f.buf(buf).rank as usize;
        if (exact && idx.len() != rank) || idx.len() > rank {
            return Err(format!(
                "{i}: {} indices into {buf} of rank {rank}",
                idx.len()
            ));
        }
        idx.iter()
            .try_for_each(|&x| self.expect(x, Ty::Int, &format!("{i} index")))
    }

    fn inst(&mut self, i: Inst) -> Result<(), String> {
        use InstKind::*;
        let f = self.f;
        let what = format!("{i}");
        for v in f.operands(i) {
            self.used(v, &what)?;
        }
        match &f.inst(i).kind {
            Binary(op, a, b) => {
                if f.ty(*a) != f.ty(*b) {
                    return Err(format!(
                        "{i}: operands {a} and {b} of `{}` differ in type",
                        op.symbol()
                    ));
                }
                if matches!(op, BinOp::And | BinOp::Or) {
                    self.expect(*a, Ty::Bool, &what)?;
                }
            }
            Load(b, idx) | Store(b, idx, _) | StoreAdd(b, idx, _) => {
                self.indices(*b, idx, i, true)?
            }
            Len(b, idx) => self.indices(*b, idx, i, false)?,
            Assert { cond, .. } | Fail { cond, .. } => self.expect(*cond, Ty::Bool, &what)?,
            If {
                cond,
                then_blk,
                else_blk,
            } => {
                self.expect(*cond, Ty::Bool, &what)?;
                let results = f.inst(i).results.clone();
                for blk in [*then_blk, *else_blk] {
                    let ys = self.block(blk)?;
                    if ys.len() != results.len() {
                        return Err(format!(
                            "{i}: branch {blk} yields {} values for {} results",
                            ys.len(),
                            results.len()
                        ));
                    }
                    for (y, r) in ys.iter().zip(&results) {
                        self.expect(*y, f.ty(*r), &format!("{i} yield"))?;
                    }
                }
            }
            For {
                index,
                params,
                inits,
                body,
                exit,
                range,
            } => {
                self.expect(range.start, Ty::Int, &what)?;
                self.expect(range.end, Ty::Int, &what)?;
                self.loop_parts(i, params, inits, exit, Some(*index), None, *body)?;
            }
            While {
                cond,
                params,
                inits,
                body,
                exit,
            } => {
                self.loop_parts(i, params, inits, exit, None, Some(*cond), *body)?;
            }
            CkForwardStep { .. } if f.inst(i).results.len() != 1 => {
                return Err(format!("{i}: a forward step has one bool result"));
            }
            CkReverse {
                advance,
                taped,
                kept,
                adjoint,
                ..
            } => {
                for blk in [*advance, *taped, *kept, *adjoint] {
                    if !self.block(blk)?.is_empty() {
                        return Err(format!("{i}: a checkpointed reverse block yields nothing"));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn loop_parts(
        &mut self,
        i: Inst,
        params: &[Value],
        inits: &[Value],
        exit: &[Value],
        index: Option<Value>,
        cond: Option<Block>,
        body: Block,
    ) -> Result<(), String> {
        let f = self.f;
        if params.len() != inits.len() {
            return Err(format!(
                "{i}: {} params, {} inits",
                params.len(),
                inits.len()
            ));
        }
        if f.inst(i).results.len() != params.len() + 1 {
            return Err(format!(
                "{i}: a loop has one result per param plus the trip count"
            ));
        }
        for (p, v) in params.iter().zip(inits) {
            self.expect(*v, f.ty(*p), &format!("{i} init"))?;
        }
        for e in exit {
            if !params.contains(e) {
                return Err(format!("{i}: exit flag {e} is not a loop parameter"));
            }
            self.expect(*e, Ty::Bool, &format!("{i} exit"))?;
        }
        let header: Vec<Value> = params.iter().copied().chain(index).collect();
        for &h in &header {
            self.defined.insert(h);
        }
        if let Some(c) = cond {
            let ys = self.block(c)?;
            if ys.len() != 1 || f.ty(ys[0]) != Ty::Bool {
                return Err(format!("{i}: a while condition yields one bool"));
            }
        }
        let ys = self.block(body)?;
        if ys.len() != params.len() {
            return Err(format!(
                "{i}: body yields {} values for {} params",
                ys.len(),
                params.len()
            ));
        }
        for (y, p) in ys.iter().zip(params) {
            self.expect(*y, f.ty(*p), &format!("{i} back edge"))?;
        }
        for h in header {
            self.defined.remove(&h);
        }
        Ok(())
    }
}

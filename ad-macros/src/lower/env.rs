//! The lowering environment: variable names → SSA values or buffers, in nested scopes.

pub use crate::ir::Indices;
use crate::ir::{Buf, Value};

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Binding {
    Scalar(Value),
    Buf(Buf),
    /// `v` from `x.iter_mut()`, `&mut m[i][j]`: the element of `buf` at these indices.
    Elem(Buf, Indices),
    /// A view: `row` from `x.par_chunks_mut(w).enumerate()`, `&x[a..b]`, or `&m[i]` of a
    /// 2-D buffer (`outer` = `[i]`; `&t[i][j]` of a 3-D one, `[i, j]`): `row[j]` is
    /// `buf[outer..][base + j]`, and `row.len()` is `len`; `mutable` when it is borrowed
    /// `&mut`.
    Row {
        buf: Buf,
        mutable: bool,
        outer: Indices,
        base: Value,
        len: Value,
    },
    /// A constant parameter of a type the compiler does not model.
    Opaque,
    /// `let r;`: declared, assigned later.
    Uninit,
}

/// Where a binding lives: (scope, entry).
pub type Loc = (usize, usize);

#[derive(Clone, Default, Debug)]
pub struct Env {
    scopes: Vec<Vec<(String, Binding)>>,
}

impl Env {
    pub fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }
    pub fn depth(&self) -> usize {
        self.scopes.len()
    }
    pub fn bind(&mut self, name: &str, b: Binding) {
        self.scopes
            .last_mut()
            .expect("no scope")
            .push((name.to_string(), b));
    }
    pub fn locate(&self, name: &str) -> Option<Loc> {
        for (s, scope) in self.scopes.iter().enumerate().rev() {
            if let Some(e) = scope.iter().rposition(|(n, _)| n == name) {
                return Some((s, e));
            }
        }
        None
    }
    pub fn lookup(&self, name: &str) -> Option<Binding> {
        self.locate(name).map(|l| self.get(l))
    }
    pub fn get(&self, (s, e): Loc) -> Binding {
        self.scopes[s][e].1
    }
    pub fn set(&mut self, (s, e): Loc, b: Binding) {
        self.scopes[s][e].1 = b;
    }
    /// Rebinds the innermost variable `name`; false when there is none.
    pub fn assign(&mut self, name: &str, b: Binding) -> bool {
        match self.locate(name) {
            Some(l) => {
                self.set(l, b);
                true
            }
            None => false,
        }
    }
    /// Every location of the first `depth` scopes (the variables visible before a branch).
    pub fn locations(&self, depth: usize) -> Vec<Loc> {
        (0..depth.min(self.scopes.len()))
            .flat_map(|s| (0..self.scopes[s].len()).map(move |e| (s, e)))
            .collect()
    }
    pub fn name(&self, (s, e): Loc) -> &str {
        &self.scopes[s][e].0
    }
    /// Drops scopes deeper than `depth` (after a branch or loop body).
    pub fn truncate(&mut self, depth: usize) {
        self.scopes.truncate(depth);
    }
}

//! Symbolic expressions for coarsening: a hash-consed DAG of one segment's values over its
//! live-ins, built through simplifying constructors, and its symbolic reverse derivative.
//!
//! Simplification is local rewriting at construction (constant folding, identities,
//! factoring of a common factor, power rules, the φ rules of Shen et al. §4), so equal
//! subexpressions are one node (common subexpressions are shared by construction). Each
//! rewrite may trigger at most [`REWRITE_DEPTH`] nested rewrites, and an expression holds at
//! most [`MAX_NODES`] nodes; past either bound nodes are built as written, never by time.

use crate::derivative::rules;
use crate::ir::{BinOp, Buf, Ty, Value};
use std::collections::HashMap;

/// A node of an [`Expr`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Sym(pub u32);

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Node {
    /// A float constant (bits; `-0.0` is normalized to `0.0`).
    F(u64),
    I(i128),
    B(bool),
    /// A live-in value of the segment.
    Leaf(Value),
    /// The adjoint of the segment's `k`-th output (a symbol of the reverse code).
    Seed(u32),
    Neg(Sym),
    Not(Sym),
    Bin(BinOp, Sym, Sym),
    Math(&'static str, Vec<Sym>),
    Cast {
        value: Sym,
        int: Option<crate::ir::IntTy>,
        float: Option<crate::ir::Prec>,
    },
    /// φ(c, a, b): `a` where `c` holds, else `b`.
    Phi(Sym, Sym, Sym),
    /// An element of a read-only buffer (closed loops: re-read where the sum is computed).
    Load(Buf, Vec<Sym>),
    /// The `k`-th hoisted sum of a closed loop (`derivative::phi`): a constant here.
    Hoisted(u32),
}

/// How many rewrites one constructor may trigger in a chain.
pub const REWRITE_DEPTH: u32 = 6;
/// The most nodes one expression may hold; past it [`Expr::overflowed`] is set.
pub const MAX_NODES: usize = 20_000;

#[derive(Clone, Default)]
pub struct Expr {
    nodes: Vec<(Node, Ty)>,
    index: HashMap<Node, Sym>,
    depth: u32,
    /// Set when [`MAX_NODES`] was reached: the caller falls back to the fine-grained path.
    pub overflowed: bool,
}

fn fbits(c: f64) -> u64 {
    if c == 0.0 {
        0.0f64.to_bits()
    } else {
        c.to_bits()
    }
}

impl Expr {
    pub fn node(&self, s: Sym) -> &Node {
        &self.nodes[s.0 as usize].0
    }
    pub fn ty(&self, s: Sym) -> Ty {
        self.nodes[s.0 as usize].1
    }
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    fn intern(&mut self, n: Node, ty: Ty) -> Sym {
        if let Some(s) = self.index.get(&n) {
            return *s;
        }
        if self.nodes.len() >= MAX_NODES {
            self.overflowed = true;
        }
        let s = Sym(self.nodes.len() as u32);
        self.nodes.push((n.clone(), ty));
        self.index.insert(n, s);
        s
    }

    /// Runs a rewrite if the depth budget allows, else builds `plain`.
    fn rewrite(
        &mut self,
        plain: impl FnOnce(&mut Self) -> Sym,
        rw: impl FnOnce(&mut Self) -> Sym,
    ) -> Sym {
        if self.depth >= REWRITE_DEPTH {
            return plain(self);
        }
        self.depth += 1;
        let s = rw(self);
        self.depth -= 1;
        s
    }

    pub fn fconst(&mut self, c: f64) -> Sym {
        self.intern(Node::F(fbits(c)), Ty::Float)
    }
    pub fn iconst(&mut self, c: i128) -> Sym {
        self.intern(Node::I(c), Ty::Int)
    }
    pub fn bconst(&mut self, c: bool) -> Sym {
        self.intern(Node::B(c), Ty::Bool)
    }
    pub fn leaf(&mut self, v: Value, ty: Ty) -> Sym {
        self.intern(Node::Leaf(v), ty)
    }
    pub fn seed(&mut self, k: u32) -> Sym {
        self.intern(Node::Seed(k), Ty::Float)
    }
    pub fn hoisted(&mut self, k: u32) -> Sym {
        self.intern(Node::Hoisted(k), Ty::Float)
    }
    pub fn load(&mut self, buf: Buf, idx: Vec<Sym>, ty: Ty) -> Sym {
        self.intern(Node::Load(buf, idx), ty)
    }

    pub fn float_of(&self, s: Sym) -> Option<f64> {
        match self.node(s) {
            Node::F(b) => Some(f64::from_bits(*b)),
            _ => None,
        }
    }
    fn int_of(&self, s: Sym) -> Option<i128> {
        match self.node(s) {
            Node::I(c) => Some(*c),
            _ => None,
        }
    }
    pub fn is_zero(&self, s: Sym) -> bool {
        self.float_of(s) == Some(0.0)
    }
    fn is_const(&self, s: Sym, c: f64) -> bool {
        self.float_of(s) == Some(c)
    }

    pub fn neg(&mut self, a: Sym) -> Sym {
        if self.ty(a) == Ty::Int {
            return match self.int_of(a) {
                Some(c) => self.iconst(-c),
                None => self.intern(Node::Neg(a), Ty::Int),
            };
        }
        if let Some(c) = self.float_of(a) {
            return self.fconst(-c);
        }
        match self.node(a).clone() {
            Node::Neg(x) => x,
            Node::Bin(BinOp::Sub, x, y) => {
                self.rewrite(|e| e.intern(Node::Neg(a), Ty::Float), |e| e.sub(y, x))
            }
            Node::Phi(c, x, y) if self.is_zero(x) || self.is_zero(y) => self.rewrite(
                |e| e.intern(Node::Neg(a), Ty::Float),
                |e| {
                    let (nx, ny) = (e.neg(x), e.neg(y));
                    e.phi(c, nx, ny)
                },
            ),
            _ => self.intern(Node::Neg(a), Ty::Float),
        }
    }

    pub fn not(&mut self, a: Sym) -> Sym {
        match self.node(a).clone() {
            Node::B(c) => self.bconst(!c),
            Node::Not(x) => x,
            _ => {
                let ty = self.ty(a);
                self.intern(Node::Not(a), ty)
            }
        }
    }

    /// `c·z` split of a product by a constant (`z` alone is `1·z`, `−z` is `−1·z`).
    fn coef_split(&self, s: Sym) -> (f64, Sym) {
        match self.node(s) {
            Node::Bin(BinOp::Mul, a, b) => match (self.float_of(*a), self.float_of(*b)) {
                (Some(c), _) => (c, *b),
                (_, Some(c)) => (c, *a),
                _ => (1.0, s),
            },
            Node::Neg(x) => (-1.0, *x),
            _ => (1.0, s),
        }
    }

    /// The factor shared by two products `p·z` and `q·z`: `(p, q, z)`.
    fn common_factor(&self, a: Sym, b: Sym) -> Option<(Sym, Sym, Sym)> {
        let (Node::Bin(BinOp::Mul, a1, a2), Node::Bin(BinOp::Mul, b1, b2)) =
            (self.node(a), self.node(b))
        else {
            return None;
        };
        let (a1, a2, b1, b2) = (*a1, *a2, *b1, *b2);
        if a2 == b2 {
            Some((a1, b1, a2))
        } else if a1 == b1 {
            Some((a2, b2, a1))
        } else if a1 == b2 {
            Some((a2, b1, a1))
        } else if a2 == b1 {
            Some((a1, b2, a2))
        } else {
            None
        }
    }

    fn plain(&mut self, op: BinOp, a: Sym, b: Sym) -> Sym {
        let commutative = matches!(
            op,
            BinOp::Add | BinOp::Mul | BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or
        );
        // Commutative operands in one order: constants first, then by node.
        let key = |s: Sym| (self.float_of(s).is_none(), s);
        let (a, b) = if commutative && key(b) < key(a) {
            (b, a)
        } else {
            (a, b)
        };
        let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
            Ty::Bool
        } else {
            self.ty(a)
        };
        self.intern(Node::Bin(op, a, b), ty)
    }

    /// A binary operation, simplified.
    pub fn binary(&mut self, op: BinOp, a: Sym, b: Sym) -> Sym {
        if self.ty(a) != Ty::Float || self.ty(b) != Ty::Float {
            return self.other_binary(op, a, b);
        }
        match op {
            BinOp::Add => self.add(a, b),
            BinOp::Sub => self.sub(a, b),
            BinOp::Mul => self.mul(a, b),
            BinOp::Div => self.div(a, b),
            _ => {
                if let (Some(x), Some(y)) = (self.float_of(a), self.float_of(b)) {
                    let r = match op {
                        BinOp::Lt => Some(x < y),
                        BinOp::Le => Some(x <= y),
                        BinOp::Gt => Some(x > y),
                        BinOp::Ge => Some(x >= y),
                        BinOp::Eq => Some(x == y),
                        BinOp::Ne => Some(x != y),
                        _ => None,
                    };
                    if let Some(r) = r {
                        return self.bconst(r);
                    }
                }
                self.plain(op, a, b)
            }
        }
    }

    fn other_binary(&mut self, op: BinOp, a: Sym, b: Sym) -> Sym {
        if let (Some(x), Some(y)) = (self.int_of(a), self.int_of(b)) {
            let r = match op {
                BinOp::Add => x.checked_add(y).map(Node::I),
                BinOp::Sub => x.checked_sub(y).map(Node::I),
                BinOp::Mul => x.checked_mul(y).map(Node::I),
                BinOp::IntLike => Some(Node::I(x)),
                BinOp::Lt => Some(Node::B(x < y)),
                BinOp::Le => Some(Node::B(x <= y)),
                BinOp::Gt => Some(Node::B(x > y)),
                BinOp::Ge => Some(Node::B(x >= y)),
                BinOp::Eq => Some(Node::B(x == y)),
                BinOp::Ne => Some(Node::B(x != y)),
                _ => None,
            };
            match r {
                Some(Node::I(c)) => return self.iconst(c),
                Some(Node::B(c)) => return self.bconst(c),
                _ => {}
            }
        }
        if let (Node::B(x), Node::B(y)) = (self.node(a).clone(), self.node(b).clone()) {
            match op {
                BinOp::And => return self.bconst(x && y),
                BinOp::Or => return self.bconst(x || y),
                _ => {}
            }
        }
        self.plain(op, a, b)
    }

    pub fn add(&mut self, a: Sym, b: Sym) -> Sym {
        if let (Some(x), Some(y)) = (self.float_of(a), self.float_of(b)) {
            return self.fconst(x + y);
        }
        if self.is_zero(a) {
            return b;
        }
        if self.is_zero(b) {
            return a;
        }
        let plain = move |e: &mut Self| e.plain(BinOp::Add, a, b);
        if a == b {
            return self.rewrite(plain, |e| {
                let two = e.fconst(2.0);
                e.mul(two, a)
            });
        }
        if let Node::Neg(y) = *self.node(b) {
            return self.rewrite(plain, |e| e.sub(a, y));
        }
        if let Node::Neg(x) = *self.node(a) {
            return self.rewrite(plain, |e| e.sub(b, x));
        }
        if let Some(s) = self.factor(a, b, 1.0) {
            return s;
        }
        if let (Node::Phi(c1, x1, y1), Node::Phi(c2, x2, y2)) =
            (self.node(a).clone(), self.node(b).clone())
        {
            if c1 == c2 {
                return self.rewrite(plain, |e| {
                    let (x, y) = (e.add(x1, x2), e.add(y1, y2));
                    e.phi(c1, x, y)
                });
            }
        }
        plain(self)
    }

    pub fn sub(&mut self, a: Sym, b: Sym) -> Sym {
        if let (Some(x), Some(y)) = (self.float_of(a), self.float_of(b)) {
            return self.fconst(x - y);
        }
        if self.is_zero(b) {
            return a;
        }
        if a == b {
            return self.fconst(0.0);
        }
        let plain = move |e: &mut Self| e.plain(BinOp::Sub, a, b);
        if self.is_zero(a) {
            return self.neg(b);
        }
        if let Node::Neg(y) = *self.node(b) {
            return self.rewrite(plain, |e| e.add(a, y));
        }
        if let Some(s) = self.factor(a, b, -1.0) {
            return s;
        }
        if let (Node::Phi(c1, x1, y1), Node::Phi(c2, x2, y2)) =
            (self.node(a).clone(), self.node(b).clone())
        {
            if c1 == c2 {
                return self.rewrite(plain, |e| {
                    let (x, y) = (e.sub(x1, x2), e.sub(y1, y2));
                    e.phi(c1, x, y)
                });
            }
        }
        plain(self)
    }

    /// `a ± b` with a common factor: `c₁z ± c₂z = (c₁ ± c₂)z`, `pz ± qz = (p ± q)z`.
    fn factor(&mut self, a: Sym, b: Sym, sign: f64) -> Option<Sym> {
        if self.depth >= REWRITE_DEPTH {
            return None;
        }
        let op = if sign > 0.0 { BinOp::Add } else { BinOp::Sub };
        let ((ca, za), (cb, zb)) = (self.coef_split(a), self.coef_split(b));
        if za == zb && (ca != 1.0 || cb != 1.0) {
            return Some(self.rewrite(
                |e| e.plain(op, a, b),
                |e| {
                    let c = e.fconst(ca + sign * cb);
                    e.mul(c, za)
                },
            ));
        }
        let (p, q, z) = self.common_factor(a, b)?;
        Some(self.rewrite(
            |e| e.plain(op, a, b),
            |e| {
                let s = if sign > 0.0 { e.add(p, q) } else { e.sub(p, q) };
                e.mul(s, z)
            },
        ))
    }

    /// `x` as `(base, exponent)` for the power rules.
    fn power(&self, s: Sym) -> (Sym, i128) {
        if let Node::Math("powi", args) = self.node(s) {
            if let Some(n) = self.int_of(args[1]) {
                return (args[0], n);
            }
        }
        (s, 1)
    }

    pub fn mul(&mut self, a: Sym, b: Sym) -> Sym {
        if let (Some(x), Some(y)) = (self.float_of(a), self.float_of(b)) {
            return self.fconst(x * y);
        }
        // 0·x = 0 even where x is infinite: the derivative code drops the NaN of a zero
        // partial times an overflowed factor, which the fine-grained code would propagate.
        if self.is_zero(a) || self.is_zero(b) {
            return self.fconst(0.0);
        }
        if self.is_const(a, 1.0) {
            return b;
        }
        if self.is_const(b, 1.0) {
            return a;
        }
        if self.is_const(a, -1.0) {
            return self.neg(b);
        }
        if self.is_const(b, -1.0) {
            return self.neg(a);
        }
        let plain = move |e: &mut Self| e.plain(BinOp::Mul, a, b);
        if let Node::Neg(x) = *self.node(a) {
            return self.rewrite(plain, |e| {
                let p = e.mul(x, b);
                e.neg(p)
            });
        }
        if let Node::Neg(y) = *self.node(b) {
            return self.rewrite(plain, |e| {
                let p = e.mul(a, y);
                e.neg(p)
            });
        }
        // Constants gather at the front: c₁·(c₂·z) = (c₁c₂)·z and x·(c·z) = c·(x·z), so
        // products differing only in where a constant sits are one node.
        for (x, y) in [(a, b), (b, a)] {
            if let Node::Bin(BinOp::Mul, p, q) = *self.node(y) {
                if let Some(c2) = self.float_of(p) {
                    return self.rewrite(plain, |e| match e.float_of(x) {
                        Some(c1) => {
                            let c = e.fconst(c1 * c2);
                            e.mul(c, q)
                        }
                        None => {
                            let xq = e.mul(x, q);
                            e.mul(p, xq)
                        }
                    });
                }
            }
        }
        // Power rules: xᵐ·xⁿ = xᵐ⁺ⁿ.
        let ((ba, na), (bb, nb)) = (self.power(a), self.power(b));
        if ba == bb && self.ty(ba) == Ty::Float {
            return self.rewrite(plain, |e| e.powi(ba, na + nb));
        }
        // φ(c, p, 0)·e = φ(c, p·e, 0): the guard stays outside what only one branch computes.
        for (x, y) in [(a, b), (b, a)] {
            if let Node::Phi(c, p, q) = *self.node(x) {
                if self.is_zero(p) || self.is_zero(q) {
                    return self.rewrite(plain, |e| {
                        let (pp, qq) = (e.mul(p, y), e.mul(q, y));
                        e.phi(c, pp, qq)
                    });
                }
            }
        }
        plain(self)
    }

    pub fn div(&mut self, a: Sym, b: Sym) -> Sym {
        if let (Some(x), Some(y)) = (self.float_of(a), self.float_of(b)) {
            return self.fconst(x / y);
        }
        if self.is_zero(a) {
            return self.fconst(0.0);
        }
        if self.is_const(b, 1.0) {
            return a;
        }
        if self.is_const(b, -1.0) {
            return self.neg(a);
        }
        if a == b {
            return self.fconst(1.0);
        }
        let plain = move |e: &mut Self| e.plain(BinOp::Div, a, b);
        if let Node::Neg(x) = *self.node(a) {
            return self.rewrite(plain, |e| {
                let q = e.div(x, b);
                e.neg(q)
            });
        }
        if let Node::Neg(y) = *self.node(b) {
            return self.rewrite(plain, |e| {
                let q = e.div(a, y);
                e.neg(q)
            });
        }
        if let Node::Phi(c, p, q) = *self.node(a) {
            if self.is_zero(p) || self.is_zero(q) {
                return self.rewrite(plain, |e| {
                    let (pp, qq) = (e.div(p, b), e.div(q, b));
                    e.phi(c, pp, qq)
                });
            }
        }
        plain(self)
    }

    pub fn powi(&mut self, x: Sym, n: i128) -> Sym {
        match n {
            0 => self.fconst(1.0),
            1 => x,
            _ => {
                let k = self.iconst(n);
                self.intern(Node::Math("powi", vec![x, k]), Ty::Float)
            }
        }
    }

    /// A float method call; `powi` with a constant exponent goes through the power rules.
    pub fn math(&mut self, name: &'static str, args: Vec<Sym>) -> Sym {
        if name == "powi" {
            if let Some(n) = self.int_of(args[1]) {
                let (base, m) = self.power(args[0]);
                if m != 1 {
                    return self.powi(base, m * n);
                }
                return self.powi(args[0], n);
            }
        }
        self.intern(Node::Math(name, args), Ty::Float)
    }

    pub fn cast(
        &mut self,
        value: Sym,
        to: Ty,
        int: Option<crate::ir::IntTy>,
        float: Option<crate::ir::Prec>,
    ) -> Sym {
        if to == Ty::Float && int.is_none() {
            match self.int_of(value) {
                // Exact in either float type.
                Some(c) if float != Some(crate::ir::Prec::F32) || c.abs() < 1 << 24 => {
                    return self.fconst(c as f64)
                }
                _ => {}
            }
            if self.ty(value) == Ty::Float && float.is_none() {
                return value;
            }
        }
        self.intern(Node::Cast { value, int, float }, to)
    }

    /// φ(c, a, b) with the paper's identities: F1 `φ(c, a, a) = a`, constant conditions,
    /// `φ(¬c, a, b) = φ(c, b, a)`, and C3/C4 `φ(c, φ(c, a, b), d) = φ(c, a, d)`,
    /// `φ(c, a, φ(c, b, d)) = φ(c, a, d)`.
    pub fn phi(&mut self, c: Sym, a: Sym, b: Sym) -> Sym {
        if a == b {
            return a;
        }
        match self.node(c).clone() {
            Node::B(true) => return a,
            Node::B(false) => return b,
            Node::Not(d) => return self.phi(d, b, a),
            _ => {}
        }
        if let Node::Phi(c2, a2, _) = *self.node(a) {
            if c2 == c {
                return self.phi(c, a2, b);
            }
        }
        if let Node::Phi(c2, _, b2) = *self.node(b) {
            if c2 == c {
                return self.phi(c, a, b2);
            }
        }
        let ty = self.ty(a);
        self.intern(Node::Phi(c, a, b), ty)
    }

    /// The children of a node, in order.
    pub fn children(&self, s: Sym) -> Vec<Sym> {
        match self.node(s) {
            Node::F(_)
            | Node::I(_)
            | Node::B(_)
            | Node::Leaf(_)
            | Node::Seed(_)
            | Node::Hoisted(_) => {
                vec![]
            }
            Node::Load(_, idx) => idx.clone(),
            Node::Neg(x) | Node::Not(x) => vec![*x],
            Node::Cast { value, .. } => vec![*value],
            Node::Bin(_, x, y) => vec![*x, *y],
            Node::Math(_, args) => args.clone(),
            Node::Phi(c, x, y) => vec![*c, *x, *y],
        }
    }

    /// Nodes reachable from `roots`, children before parents.
    pub fn topo(&self, roots: &[Sym]) -> Vec<Sym> {
        let mut seen = vec![false; self.nodes.len()];
        let mut out = Vec::new();
        let mut stack: Vec<(Sym, bool)> = roots.iter().rev().map(|r| (*r, false)).collect();
        while let Some((s, expanded)) = stack.pop() {
            if expanded {
                out.push(s);
                continue;
            }
            if seen[s.0 as usize] {
                continue;
            }
            seen[s.0 as usize] = true;
            stack.push((s, true));
            for c in self.children(s).into_iter().rev() {
                if !seen[c.0 as usize] {
                    stack.push((c, false));
                }
            }
        }
        out
    }

    /// Reverse accumulation over the DAG: the adjoint of every active leaf when each root
    /// `roots[k].0` has adjoint `roots[k].1`. `active(v)` says which leaves are active.
    pub fn reverse(
        &mut self,
        roots: &[(Sym, Sym)],
        active: &dyn Fn(Value) -> bool,
    ) -> Vec<(Value, Sym)> {
        let root_syms: Vec<Sym> = roots.iter().map(|r| r.0).collect();
        let order = self.topo(&root_syms);
        let mut is_active = vec![false; self.nodes.len()];
        for &s in &order {
            is_active[s.0 as usize] = match self.node(s) {
                Node::Leaf(v) => self.ty(s) == Ty::Float && active(*v),
                Node::Cast { value, .. } => {
                    self.ty(*value) == Ty::Float && is_active[value.0 as usize]
                }
                Node::Bin(op, ..) if op.is_comparison() => false,
                // Closed loops read only inactive buffers; hoisted sums are constants.
                Node::Load(..) | Node::Hoisted(_) => false,
                _ if self.ty(s) != Ty::Float => false,
                _ => self.children(s).iter().any(|c| is_active[c.0 as usize]),
            };
        }
        let mut adj: HashMap<Sym, Sym> = HashMap::new();
        for &(r, g) in roots {
            if is_active[r.0 as usize] {
                let prev = adj.get(&r).copied();
                let sum = match prev {
                    Some(p) => self.add(p, g),
                    None => g,
                };
                adj.insert(r, sum);
            }
        }
        let mut leaves = Vec::new();
        for &s in order.iter().rev() {
            if !is_active[s.0 as usize] {
                continue;
            }
            let Some(&g) = adj.get(&s) else { continue };
            if let Node::Leaf(v) = self.node(s) {
                leaves.push((*v, g));
                continue;
            }
            for (child, contribution) in self.partials(s, g) {
                if !is_active[child.0 as usize] {
                    continue;
                }
                let sum = match adj.get(&child) {
                    Some(p) => self.add(*p, contribution),
                    None => contribution,
                };
                adj.insert(child, sum);
            }
        }
        leaves.sort_by_key(|(v, _)| *v);
        leaves
    }

    /// `g · ∂s/∂child` for each float child of `s`.
    fn partials(&mut self, s: Sym, g: Sym) -> Vec<(Sym, Sym)> {
        match self.node(s).clone() {
            Node::Neg(x) => {
                self.operator_partials(rules::of_unary(crate::ir::UnOp::Neg), &[x], s, g)
            }
            Node::Cast { value, .. } => vec![(value, g)],
            Node::Bin(op, x, y) => self.operator_partials(rules::of_binary(op), &[x, y], s, g),
            Node::Phi(c, x, y) => {
                // C2: d φ(c, a, b) = φ(c, da, db).
                let z = self.fconst(0.0);
                let (gx, gy) = (self.phi(c, g, z), self.phi(c, z, g));
                vec![(x, gx), (y, gy)]
            }
            Node::Math(name, args) => {
                if let Some(t) = self.softplus_arg(name, &args) {
                    let p = self.sigmoid(t);
                    return vec![(t, self.mul(g, p))];
                }
                let rule = rules::find(name).expect("lowered methods have rules");
                let mut out = Vec::new();
                for (k, template) in rules::partials_of(rule, &args) {
                    let p = rules::lower_template(self, template, &args, s);
                    out.push((args[k], self.mul(g, p)));
                }
                out
            }
            _ => vec![],
        }
    }

    /// `g · ∂s/∂operand` for each operand of the operator node `s` by its rule.
    fn operator_partials(
        &mut self,
        rule: Option<&rules::Rule>,
        operands: &[Sym],
        s: Sym,
        g: Sym,
    ) -> Vec<(Sym, Sym)> {
        let Some(rule) = rule else { return vec![] };
        rules::partials_of(rule, operands)
            .into_iter()
            .map(|(k, template)| {
                let t = rules::scaled(self, g, template, operands, s).finish(self);
                (operands[k], t)
            })
            .collect()
    }

    /// `1 / (1 + exp(−t))`, finite for every `t`.
    fn sigmoid(&mut self, t: Sym) -> Sym {
        let mt = self.neg(t);
        let e = self.math("exp", vec![mt]);
        let one = self.fconst(1.0);
        let d = self.add(one, e);
        self.div(one, d)
    }

    /// `t` when `name(args)` is `ln(1 + exp(t))` or `ln_1p(exp(t))` (softplus). Its
    /// derivative goes straight to `t` as [`Expr::sigmoid`]: the chain rule through
    /// `1 + exp(t)` gives `exp(t) / (1 + exp(t))`, which is `∞/∞` past t ≈ 709.
    fn softplus_arg(&self, name: &str, args: &[Sym]) -> Option<Sym> {
        let exp_arg = |s: Sym| match self.node(s) {
            Node::Math("exp", e) => Some(e[0]),
            _ => None,
        };
        match (name, self.node(args[0])) {
            ("ln_1p", _) => exp_arg(args[0]),
            ("ln", Node::Bin(BinOp::Add, x, y)) => {
                if self.is_const(*x, 1.0) {
                    exp_arg(*y)
                } else if self.is_const(*y, 1.0) {
                    exp_arg(*x)
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

impl rules::TemplateSink for Expr {
    type V = Sym;
    fn fconst(&mut self, c: f64) -> Sym {
        Expr::fconst(self, c)
    }
    fn iconst(&mut self, c: i128) -> Sym {
        Expr::iconst(self, c)
    }
    fn neg(&mut self, a: Sym) -> Sym {
        Expr::neg(self, a)
    }
    fn binary(&mut self, op: BinOp, a: Sym, b: Sym) -> Sym {
        Expr::binary(self, op, a, b)
    }
    fn math(&mut self, name: &'static str, args: Vec<Sym>) -> Sym {
        Expr::math(self, name, args)
    }
    fn int_to_float(&mut self, a: Sym) -> Sym {
        self.cast(a, Ty::Float, None, None)
    }
    fn select(
        &mut self,
        cond: Sym,
        then: &mut dyn FnMut(&mut Self) -> Sym,
        otherwise: &mut dyn FnMut(&mut Self) -> Sym,
    ) -> Sym {
        let (t, f) = (then(self), otherwise(self));
        self.phi(cond, t, f)
    }
}

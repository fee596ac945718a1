//! Places and views: parts of buffers bound by name (`&x[a..b]`, `&m[i]`, `&t[i]`,
//! `&m[a..b]`), indexed, measured and walked. A view is a buffer, an index prefix, and an
//! offset and a length on the next dimension (`Binding::Row`); an element is a buffer and
//! its full indices (`Binding::Elem`).

use super::env::{Binding, Indices};
use super::expr::{assert_text, strip_group};
use super::{text, LResult, Lowerer};
use crate::ir::*;
use syn::Expr;

impl Lowerer<'_> {
    /// A borrow of part of a 1-D buffer or view: `&x[a..b]` (`a..`, `..b`, `a..=b`, with
    /// `&mut` too) is a view of it, `&x[i]` (`&mut x[i]`) one element.
    pub(super) fn place_binding(&mut self, e: &Expr) -> LResult<Option<Binding>> {
        let Expr::Reference(r) = strip_group(e) else {
            return Ok(None);
        };
        let Expr::Index(ix) = strip_group(&r.expr) else {
            return Ok(None);
        };
        // The base buffer and the index chain (`&t[i][j][k]`, `&m[i]`, `&t[i][j][a..]`).
        let mut base = strip_group(&r.expr);
        let mut chain: Vec<&Expr> = Vec::new();
        while let Expr::Index(inner) = base {
            chain.push(&inner.index);
            base = strip_group(&inner.expr);
        }
        chain.reverse();
        let ranged = matches!(strip_group(&ix.index), Expr::Range(_));
        if let Some(part) = self.part_binding(e, r, &chain, base)? {
            return Ok(Some(part));
        }
        if let Ok(buf) = self.lower_buf_ref(base) {
            let rank = self.b.func.buf(buf).rank as usize;
            let indexed = chain.len() - usize::from(ranged);
            if rank >= 2 && !ranged && indexed == rank {
                // An element, `&m[i][j]` / `&mut t[i][j][k]`: read (a shared reference sees
                // no write while it lives) or a place.
                let (buf, idx) = self.lower_place(&r.expr, ix)?;
                return Ok(Some(match r.mutability {
                    None => Binding::Scalar(self.b.load(buf, idx)),
                    Some(_) => Binding::Elem(buf, Indices::of(&idx)),
                }));
            }
        }
        // `&m[i]` of a 2-D buffer, `&t[i][j]` of a 3-D one: a row, a view.
        if !ranged {
            if let Some((buf, idx)) = self.row_chain(&r.expr)? {
                let len = self.b.value(InstKind::Len(buf, idx.clone()), Ty::Int);
                let base = self.b.iconst(0);
                return Ok(Some(Binding::Row {
                    buf,
                    mutable: r.mutability.is_some(),
                    outer: Indices::of(&idx),
                    base,
                    len,
                }));
            }
        }
        // A range of a 1-D buffer, of a view, or of a row of a 2-D buffer (`&m[i][a..b]`).
        let (buf, outer, base, len) = match self.view_of(&ix.expr)? {
            Some((buf, outer, base, len)) => (buf, outer, base, len),
            None => return Ok(None),
        };
        let len = Some(len);
        let at = |l: &mut Self, v: Value| match base {
            Some(b) => l.b.add(b, v),
            None => v,
        };
        match strip_group(&ix.index) {
            Expr::Range(range) => {
                let full = match len {
                    Some(l) => l,
                    None => self.b.value(InstKind::Len(buf, vec![]), Ty::Int),
                };
                let (start, end) = self.lower_range(range, full, e)?;
                let base = at(self, start);
                let len = self.b.sub(end, start);
                Ok(Some(Binding::Row {
                    buf,
                    mutable: r.mutability.is_some(),
                    outer,
                    base,
                    len,
                }))
            }
            index => {
                let i = self.lower_expr(index)?;
                self.expect_ty(i, Ty::Int, index, "an index")?;
                if let Some(len) = len {
                    self.check_in_view(i, buf, outer, base, len, e);
                }
                let at = at(self, i);
                Ok(Some(Binding::Elem(buf, Indices::of(&outer.then(at)))))
            }
        }
    }

    /// `&base[..]..` where the part has two dimensions or more (`&m[a..b]` of a 2-D buffer,
    /// `&t[i]` and `&t[i][a..]` of a 3-D one), or where `base` is a view of two dimensions
    /// or more (`&plane[j]`, `&rows[a..]`, `&plane[j][k]`): a view, or an element. `None`
    /// for the other parts (rows and elements of buffers, parts of rows).
    fn part_binding(
        &mut self,
        e: &Expr,
        r: &syn::ExprReference,
        chain: &[&Expr],
        base: &Expr,
    ) -> LResult<Option<Binding>> {
        let (buf, mut idx, mut offset, mut len) = match self.view_binding(base) {
            Some(Binding::Row {
                buf,
                outer,
                base: o,
                len,
                ..
            }) if self.view_rank(buf, outer) >= 2 => {
                (buf, outer.as_slice().to_vec(), Some(o), Some(len))
            }
            Some(_) => return Ok(None),
            None => match self.lower_buf_ref(base) {
                Ok(buf) if self.b.func.buf(buf).rank >= 2 => (buf, Vec::new(), None, None),
                _ => return Ok(None),
            },
        };
        let rank = self.b.func.buf(buf).rank as usize;
        let (last, ranged) = match chain.last().map(|x| strip_group(x)) {
            Some(Expr::Range(range)) => (Some(range), true),
            _ => (None, false),
        };
        let indexed = chain.len() - usize::from(ranged);
        if idx.len() + indexed > rank || (ranged && idx.len() + indexed == rank) {
            return Err(self.error(
                e,
                &text(e),
                &format!(
                    "`{}` has {rank} dimension(s) and is indexed with more",
                    text(base)
                ),
            ));
        }
        let part_rank = rank - idx.len() - indexed;
        if offset.is_none() && part_rank < 2 {
            return Ok(None);
        }
        for x in &chain[..indexed] {
            let mut v = self.lower_expr(x)?;
            self.expect_ty(v, Ty::Int, x, "an index")?;
            if let (Some(o), Some(l)) = (offset.take(), len.take()) {
                self.check_in_view(v, buf, Indices::of(&idx), Some(o), l, e);
                v = self.b.add(o, v);
            }
            idx.push(v);
        }
        let mutable = r.mutability.is_some();
        if let Some(range) = last {
            let full = match len {
                Some(l) => l,
                None => self.b.value(InstKind::Len(buf, idx.clone()), Ty::Int),
            };
            let (start, end) = self.lower_range(range, full, e)?;
            let base = match offset {
                Some(o) => self.b.add(o, start),
                None => start,
            };
            let len = self.b.sub(end, start);
            return Ok(Some(Binding::Row {
                buf,
                mutable,
                outer: Indices::of(&idx),
                base,
                len,
            }));
        }
        if part_rank == 0 {
            return Ok(Some(match mutable {
                false => Binding::Scalar(self.b.load(buf, idx)),
                true => Binding::Elem(buf, Indices::of(&idx)),
            }));
        }
        let len = self.b.value(InstKind::Len(buf, idx.clone()), Ty::Int);
        let base = self.b.iconst(0);
        Ok(Some(Binding::Row {
            buf,
            mutable,
            outer: Indices::of(&idx),
            base,
            len,
        }))
    }

    /// Asserts index `i` of the view `buf[outer..][base..base + len]` (named by `e` in the
    /// message) is inside it. A view of all of a buffer or row needs no assertion of its
    /// own: the read checks the buffer's bounds.
    fn check_in_view(
        &mut self,
        i: Value,
        buf: Buf,
        outer: Indices,
        base: Option<Value>,
        len: Value,
        e: &Expr,
    ) {
        if self.covers_all(buf, outer, base, len) {
            return;
        }
        let inside = self.b.binary(BinOp::Lt, i, len);
        let message = format!(
            "\"phidiff: the index of `{}` is out of its view\"",
            assert_text(e)
        );
        self.b.stmt(InstKind::Assert {
            cond: inside,
            message: Code::parse(&message),
        });
    }

    /// Whether the view `buf[outer..][base..base + len]` is all of its row (or of the
    /// 1-D buffer): no base, or a base of constant 0, and the length read from the buffer
    /// at those indices.
    fn covers_all(&self, buf: Buf, outer: Indices, base: Option<Value>, len: Value) -> bool {
        let is = |v: Value, want: &dyn Fn(&InstKind) -> bool| match self.b.func.value(v).def {
            ValueDef::Result(i, 0) => want(&self.b.func.inst(i).kind),
            _ => false,
        };
        base.is_none_or(|b| is(b, &|k| matches!(k, InstKind::IConst(0))))
            && is(
                len,
                &|k| matches!(k, InstKind::Len(b, ix) if *b == buf && ix[..] == *outer.as_slice()),
            )
    }

    /// The bounds `start..end` of a range into a run of `full` elements, lowered, with
    /// Rust's bounds check (`start <= end <= full`) as an assertion naming `e`.
    fn lower_range(
        &mut self,
        range: &syn::ExprRange,
        full: Value,
        e: &Expr,
    ) -> LResult<(Value, Value)> {
        let start = match &range.start {
            Some(s) => {
                let v = self.lower_expr(s)?;
                self.expect_ty(v, Ty::Int, s, "a slice bound")?;
                v
            }
            None => self.b.iconst(0),
        };
        let mut end = match &range.end {
            Some(e2) => {
                let v = self.lower_expr(e2)?;
                self.expect_ty(v, Ty::Int, e2, "a slice bound")?;
                v
            }
            None => full,
        };
        if matches!(range.limits, syn::RangeLimits::Closed(_)) {
            let one = self.b.iconst(1);
            end = self.b.add(end, one);
        }
        // Rust's bounds check: `start <= end <= len`.
        let ordered = self.b.binary(BinOp::Le, start, end);
        let inside = self.b.binary(BinOp::Le, end, full);
        let ok = self.b.binary(BinOp::And, ordered, inside);
        let message = format!(
            "\"phidiff: the range of `{}` is out of its bounds\"",
            assert_text(e)
        );
        self.b.stmt(InstKind::Assert {
            cond: ok,
            message: Code::parse(&message),
        });
        Ok((start, end))
    }

    /// The one-dimensional view `e` names (`row`, `*row`, `(row)`), if it is one.
    pub(super) fn row_binding(&self, e: &Expr) -> Option<Binding> {
        self.view_binding(e).filter(
            |b| matches!(b, Binding::Row { buf, outer, .. } if self.view_rank(*buf, *outer) == 1),
        )
    }

    /// The view `e` names, of any number of dimensions (`rows` from `&m[a..b]`, `plane`
    /// from `&t[i]`), if it is one.
    pub(super) fn view_binding(&self, e: &Expr) -> Option<Binding> {
        match e {
            Expr::Paren(p) => self.view_binding(&p.expr),
            Expr::Group(g) => self.view_binding(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.view_binding(&u.expr),
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                match self.env.lookup(&p.path.segments[0].ident.to_string()) {
                    Some(b @ Binding::Row { .. }) => Some(b),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The dimensions a view of `buf` below the indices `outer` has.
    pub(super) fn view_rank(&self, buf: Buf, outer: Indices) -> usize {
        self.b.func.buf(buf).rank as usize - outer.as_slice().len()
    }

    /// `e` as `base[i][j]..` without ranges, where `base` is a buffer or a view by name,
    /// leaving `remaining` dimensions (1: a row): the buffer and the indices of that part
    /// (a view's offset added to its first index), lowered. `None` when `e` is not such a
    /// chain; nothing is lowered then.
    pub(super) fn index_prefix(
        &mut self,
        e: &Expr,
        remaining: impl Fn(usize) -> bool,
    ) -> LResult<Option<(Buf, Vec<Value>)>> {
        let mut at = strip_group(e);
        let mut exprs = Vec::new();
        while let Expr::Index(ix) = at {
            if matches!(strip_group(&ix.index), Expr::Range(_)) {
                return Ok(None);
            }
            exprs.push(&*ix.index);
            at = strip_group(&ix.expr);
        }
        if exprs.is_empty() {
            return Ok(None);
        }
        exprs.reverse();
        let (buf, mut idx, offset) = match self.view_binding(at) {
            Some(Binding::Row {
                buf, outer, base, ..
            }) => (buf, outer.as_slice().to_vec(), Some(base)),
            _ => match self.lower_buf_ref(at) {
                Ok(buf) => (buf, Vec::new(), None),
                Err(_) => return Ok(None),
            },
        };
        let rank = self.b.func.buf(buf).rank as usize;
        if idx.len() + exprs.len() > rank || !remaining(rank - idx.len() - exprs.len()) {
            return Ok(None);
        }
        for (k, x) in exprs.into_iter().enumerate() {
            let mut v = self.lower_expr(x)?;
            self.expect_ty(v, Ty::Int, x, "an index")?;
            if k == 0 {
                if let Some(o) = offset {
                    v = self.b.add(o, v);
                }
            }
            idx.push(v);
        }
        Ok(Some((buf, idx)))
    }

    /// The 1-D run of elements `e` names, as `(buffer, row, base, len)`: element `k` is
    /// `buffer[row][base + k]` (no `row` for a 1-D buffer, base 0 for a whole one). `e` is
    /// a 1-D buffer (`x`, `&x`, `*x`), a view by name, or a row of a 2-D buffer (`m[i]`).
    /// `None` when it is none of these.
    pub(super) fn view_of(
        &mut self,
        e: &Expr,
    ) -> LResult<Option<(Buf, Indices, Option<Value>, Value)>> {
        if let Some(Binding::Row {
            buf,
            outer,
            base,
            len,
            ..
        }) = self.row_binding(e)
        {
            return Ok(Some((buf, outer, Some(base), len)));
        }
        let mut inner = e;
        loop {
            match inner {
                Expr::Reference(r) => inner = &r.expr,
                Expr::Paren(p) => inner = &p.expr,
                Expr::Group(g) => inner = &g.expr,
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => inner = &u.expr,
                _ => break,
            }
        }
        // A row of a 2-D or 3-D buffer: all its indices but the last (`m[i]`, `t[i][j]`).
        if let Some((buf, idx)) = self.row_chain(inner)? {
            let len = self.b.value(InstKind::Len(buf, idx.clone()), Ty::Int);
            return Ok(Some((buf, Indices::of(&idx), None, len)));
        }
        match self.lower_buf_ref(inner) {
            Ok(buf) if self.b.func.buf(buf).rank == 1 => {
                let len = self.b.value(InstKind::Len(buf, vec![]), Ty::Int);
                Ok(Some((buf, Indices::NONE, None, len)))
            }
            _ => Ok(None),
        }
    }

    /// `e` as `buf[i][j]..` with one index fewer than `buf` has dimensions (a row; `buf` a
    /// buffer or a view by name), the indices lowered; `None` when it is not one.
    pub(super) fn row_chain(&mut self, e: &Expr) -> LResult<Option<(Buf, Vec<Value>)>> {
        self.index_prefix(e, |r| r == 1)
    }
}

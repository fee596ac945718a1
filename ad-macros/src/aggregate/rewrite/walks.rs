//! Walking slices of structs: `for` loops over them (zipped with each other and with plain
//! buffers, enumerated, over sub-slices), rayon's `par_iter_mut().for_each`, and
//! `let b = &xs[i];` — each element becomes an index into the field buffers.

use super::{name_of, Expr, Ident, Rewriter, Root};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// A walked slice: its name, its range, and for a plain buffer whether it is walked
/// mutably (`None` for a slice of structs).
type Walk = (Ident, Option<syn::ExprRange>, Option<bool>);

impl Rewriter<'_> {
    /// One slice walked by a loop: `xs.iter()`, `xs.iter_mut()`, `&xs`, `&mut xs[a..]`,
    /// `xs[..n].iter()`, or `xs` (as `zip`'s argument); its name, range, and for a buffer
    /// that is not a slice of structs (zipped with one) whether it is walked mutably.
    pub(super) fn walked(&self, e: &Expr) -> Option<Walk> {
        let (walked, mutable) = match e {
            Expr::MethodCall(m)
                if (m.method == "iter" || m.method == "iter_mut") && m.args.is_empty() =>
            {
                (&*m.receiver, m.method == "iter_mut")
            }
            Expr::Reference(r) => (&*r.expr, r.mutability.is_some()),
            other => (other, false),
        };
        let (seq, range) = match walked {
            Expr::Index(ix) => match (name_of(&ix.expr), &*ix.index) {
                (Some(n), Expr::Range(r)) => (n, Some(r.clone())),
                _ => return None,
            },
            other => (name_of(other)?, None),
        };
        let plain = self.len_of(&seq).is_none().then_some(mutable);
        Some((seq, range, plain))
    }

    /// `for b in xs.iter_mut()` (also `&xs`, `&mut xs[a..]`, `xs[..n].iter()`, slices of
    /// structs zipped, `xs.iter().zip(ys.iter_mut())` with `(a, b)`, and `.enumerate()` of
    /// those with `(i, b)`) over slices of structs → an index loop whose body reads each
    /// element's fields as elements of the field buffers.
    pub(super) fn for_over_structs(&mut self, f: &mut syn::ExprForLoop) -> bool {
        let (mut iter, enumerate) = match &*f.expr {
            Expr::MethodCall(m) if m.method == "enumerate" && m.args.is_empty() => {
                (&*m.receiver, true)
            }
            other => (other, false),
        };
        // The walks, last zipped first.
        let mut walks = Vec::new();
        loop {
            match iter {
                Expr::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => {
                    let Some(w) = self.walked(&m.args[0]) else {
                        return false;
                    };
                    walks.push(w);
                    iter = &m.receiver;
                }
                other => {
                    let Some(w) = self.walked(other) else {
                        return false;
                    };
                    walks.push(w);
                    break;
                }
            }
        }
        walks.reverse();
        if walks.iter().all(|w| w.2.is_some()) {
            return false; // no slice of structs: the compiler's own loops
        }
        // The pattern: `(i, p)` when enumerated; `p` is `b`, or `((a, b), c)` for zips.
        let (mut pat, counter) = match (&*f.pat, enumerate) {
            (syn::Pat::Tuple(t), true) if t.elems.len() == 2 => {
                (&t.elems[1], Some(t.elems[0].clone()))
            }
            (p, false) => (p, None),
            _ => return self.bad_walk_pattern(&f.pat),
        };
        let mut pats = Vec::new();
        for _ in 1..walks.len() {
            match pat {
                syn::Pat::Tuple(t) if t.elems.len() == 2 => {
                    pats.push(t.elems[1].clone());
                    pat = &t.elems[0];
                }
                _ => return self.bad_walk_pattern(&f.pat),
            }
        }
        pats.push(pat.clone());
        pats.reverse();
        // A struct element is a name; a buffer's element a name or `&name`.
        let mut elems = Vec::new();
        for (p, w) in pats.iter().zip(&walks) {
            match (p, w.2) {
                (syn::Pat::Ident(pi), _) => elems.push(pi.ident.clone()),
                (syn::Pat::Reference(r), Some(_)) if matches!(&*r.pat, syn::Pat::Ident(_)) => {
                    let syn::Pat::Ident(pi) = &*r.pat else {
                        unreachable!()
                    };
                    elems.push(pi.ident.clone());
                }
                _ => return self.bad_walk_pattern(&f.pat),
            }
        }
        // Each walk's bounds.
        let mut bounds = Vec::new();
        for (seq, range, plain) in &walks {
            let len = match plain {
                Some(_) => seq.clone(),
                None => self.len_of(seq).expect("a walked slice of structs"),
            };
            let (mut lo, mut hi): (Expr, Expr) =
                (syn::parse_quote!(0), syn::parse_quote!(#len.len()));
            if let Some(r) = range {
                if let Some(s) = &r.start {
                    lo = (**s).clone();
                }
                if let Some(e) = &r.end {
                    hi = match r.limits {
                        syn::RangeLimits::HalfOpen(_) => (**e).clone(),
                        syn::RangeLimits::Closed(_) => syn::parse_quote!((#e) + 1),
                    };
                }
            }
            self.visit_expr_mut(&mut lo);
            self.visit_expr_mut(&mut hi);
            bounds.push((lo, hi));
        }
        let label = &f.label;
        if walks.len() == 1 {
            // One walk: the loop runs over its indices.
            let (lo, hi) = &bounds[0];
            let (k, ()) = self.in_elements(
                &elems,
                &[walks[0].0.clone()],
                |_| None,
                |r| r.visit_block_mut(&mut f.body),
            );
            let body = &f.body;
            let bind = counter.map(|c| quote!(let #c = #k - (#lo);));
            *f = syn::parse_quote!(#label for #k in (#lo)..(#hi) { #bind #body });
        } else {
            // Zipped: the loop runs over the shortest; walk `w` is at `lo_w + k`. A buffer's
            // element is bound at the top of the body (`let v = xs[i];` for `&v`, else
            // `let v = &xs[i];` or `&mut xs[i]`).
            let lens: Vec<Expr> = bounds
                .iter()
                .map(|(lo, hi)| syn::parse_quote!(((#hi) - (#lo))))
                .collect();
            let first = &lens[0];
            let rest = &lens[1..];
            let count: Expr = syn::parse_quote!(#first #(.min(#rest))*);
            let structs: Vec<usize> = (0..walks.len()).filter(|&w| walks[w].2.is_none()).collect();
            let (s_elems, s_walks): (Vec<Ident>, Vec<Ident>) = structs
                .iter()
                .map(|&w| (elems[w].clone(), walks[w].0.clone()))
                .unzip();
            let (k, ()) = self.in_elements(
                &s_elems,
                &s_walks,
                |(i, k)| {
                    let lo = &bounds[structs[i]].0;
                    Some(syn::parse_quote!((#lo) + #k))
                },
                |r| r.visit_block_mut(&mut f.body),
            );
            let mut buffers = quote!();
            for (w, (seq, _, plain)) in walks.iter().enumerate() {
                let Some(mutable) = plain else { continue };
                let (lo, v) = (&bounds[w].0, &elems[w]);
                buffers.extend(match (&pats[w], mutable) {
                    (syn::Pat::Reference(_), _) => quote!(let #v = #seq[(#lo) + #k];),
                    (_, true) => quote!(let #v = &mut #seq[(#lo) + #k];),
                    (_, false) => quote!(let #v = &#seq[(#lo) + #k];),
                });
            }
            let body = &f.body;
            let bind = counter.map(|c| quote!(let #c = #k; #buffers));
            let bind = bind.unwrap_or(buffers);
            *f = syn::parse_quote!(#label for #k in 0..#count { #bind #body });
        }
        true
    }

    pub(super) fn bad_walk_pattern(&mut self, pat: &syn::Pat) -> bool {
        self.error(pat, "phidiff: a loop over a slice of structs binds each element to a name (`for b in xs.iter()`, `for (i, b) in xs.iter().enumerate()`, `for (a, b) in xs.iter().zip(ys.iter_mut())`)".to_string());
        true
    }

    /// `xs.par_iter_mut().for_each(|b| ..)` (`par_iter`, `.enumerate()` with `|(i, b)|`)
    /// over a slice of structs → `(0..n).into_par_iter().for_each(|__k| ..)`, rayon's
    /// index form, whose body reads `b`'s fields as elements of the field buffers.
    pub(super) fn par_over_structs(&mut self, m: &syn::ExprMethodCall) -> Option<Expr> {
        if m.method != "for_each" || m.args.len() != 1 {
            return None;
        }
        let (iter, enumerate) = match &*m.receiver {
            Expr::MethodCall(e) if e.method == "enumerate" && e.args.is_empty() => {
                (&*e.receiver, true)
            }
            other => (other, false),
        };
        let Expr::MethodCall(p) = iter else {
            return None;
        };
        if !(p.method == "par_iter" || p.method == "par_iter_mut") || !p.args.is_empty() {
            return None;
        }
        let seq = name_of(&p.receiver)?;
        let len = self.len_of(&seq)?;
        let Expr::Closure(c) = &m.args[0] else {
            return None;
        };
        let (elem, counter) = match (c.inputs.first()?, enumerate) {
            (syn::Pat::Ident(b), false) => (b.ident.clone(), None),
            (syn::Pat::Tuple(t), true) if t.elems.len() == 2 => match &t.elems[1] {
                syn::Pat::Ident(b) => (b.ident.clone(), Some(t.elems[0].clone())),
                _ => return None,
            },
            _ => return None,
        };
        let mut body = (*c.body).clone();
        let (k, ()) = self.in_element(&elem, &seq, |r| r.visit_expr_mut(&mut body));
        let bind = counter.map(|c| quote!(let #c = #k;));
        let span = m.span();
        Some(
            syn::parse_quote_spanned!(span=> (0..#len.len()).into_par_iter().for_each(|#k| { #bind #body })),
        )
    }

    /// Runs `f` with `elem` naming the element of slice of structs `seq` at a fresh index
    /// variable (which it returns), then `elem` as it was.
    pub(super) fn in_element<R>(
        &mut self,
        elem: &Ident,
        seq: &Ident,
        f: impl FnOnce(&mut Self) -> R,
    ) -> (Ident, R) {
        self.in_elements(
            std::slice::from_ref(elem),
            std::slice::from_ref(seq),
            |_| None,
            f,
        )
    }

    /// Runs `f` with each of `elems` naming an element of its slice of structs (of `seqs`)
    /// at a fresh index variable `k` (returned) or at `at((w, k))` where that gives an
    /// index, then the names as they were.
    pub(super) fn in_elements<R>(
        &mut self,
        elems: &[Ident],
        seqs: &[Ident],
        at: impl Fn((usize, &Ident)) -> Option<Expr>,
        f: impl FnOnce(&mut Self) -> R,
    ) -> (Ident, R) {
        let k = format_ident!("__k_{}_{}", elems[0], self.fresh);
        self.fresh += 1;
        let mut previous = Vec::new();
        for (w, (elem, seq)) in elems.iter().zip(seqs).enumerate() {
            let index = at((w, &k)).unwrap_or_else(|| syn::parse_quote!(#k));
            let root = Root::Elem {
                seq: seq.to_string(),
                index,
            };
            previous.push((elem.to_string(), self.roots.insert(elem.to_string(), root)));
        }
        let out = f(self);
        for (name, p) in previous.into_iter().rev() {
            match p {
                Some(p) => self.roots.insert(name, p),
                None => self.roots.remove(&name),
            };
        }
        (k, out)
    }

    /// `let b = &xs[i];` (or `&mut xs[i]`) of a slice of structs: `b` names that element
    /// for the rest of the block; the statement binds the index once. Likewise a struct
    /// inside an element (`let s = &b.state;`, `&xs[i].state`), and a struct inside a
    /// struct parameter (`let o = &m.origin;`, which names the root of its fields).
    pub(super) fn element_binding(&mut self, local: &syn::Local) -> Option<Vec<syn::Stmt>> {
        let syn::Pat::Ident(p) = &local.pat else {
            return None;
        };
        let init = local.init.as_ref()?;
        let Expr::Reference(r) = &*init.expr else {
            return None;
        };
        if local.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
            return None;
        }
        // `&p`, `&mut *p` of a root (a struct, a slice of them, an element, or the root of
        // `m.origin`, see `Nest`): another name for it, as an inlined helper's struct
        // parameter is.
        if let Some(n) = name_of(&r.expr) {
            if let Some(root) = self.roots.get(&n.to_string()).cloned() {
                self.roots.insert(p.ident.to_string(), root);
                return Some(Vec::new());
            }
        }
        // `&*xs[i]` (an inlined method's `&*self` of an element) is `&xs[i]`.
        let mut target = &*r.expr;
        while let Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Deref(_),
            expr,
            ..
        }) = target
        {
            target = expr;
        }
        // `&b.state` / `&xs[i].state`: an element of the buffers of the nested struct.
        if let Expr::Field(f) = target {
            let (seq, index) = match &*f.base {
                Expr::Index(ix) => (name_of(&ix.expr)?.to_string(), None),
                other => match self.roots.get(&name_of(other)?.to_string())? {
                    Root::Elem { seq, index } => (seq.clone(), Some(index.clone())),
                    _ => return None,
                },
            };
            let below = format!("{seq}__{}", super::member_text(&f.member));
            if !matches!(self.roots.get(&below), Some(Root::Seq { .. })) {
                return None;
            }
            let index = match (index, &*f.base) {
                (Some(index), _) => index,
                (None, Expr::Index(ix)) => {
                    let mut index = (*ix.index).clone();
                    self.visit_expr_mut(&mut index);
                    index
                }
                (None, _) => return None,
            };
            let k = format_ident!("__k_{}_{}", p.ident, self.fresh);
            self.fresh += 1;
            self.roots.insert(
                p.ident.to_string(),
                Root::Elem {
                    seq: below,
                    index: syn::parse_quote!(#k),
                },
            );
            return Some(vec![syn::parse_quote!(let #k = #index;)]);
        }
        let Expr::Index(ix) = target else {
            return None;
        };
        let seq = name_of(&ix.expr)?;
        self.len_of(&seq)?;
        let k = format_ident!("__k_{}_{}", p.ident, self.fresh);
        self.fresh += 1;
        let mut index = (*ix.index).clone();
        self.visit_expr_mut(&mut index);
        self.roots.insert(
            p.ident.to_string(),
            Root::Elem {
                seq: seq.to_string(),
                index: syn::parse_quote!(#k),
            },
        );
        Some(vec![syn::parse_quote!(let #k = #index;)])
    }
}

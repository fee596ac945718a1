//! Tuple locals, one variable per element (scalar replacement): `let t = (a, b);` becomes
//! `let (t__0, t__1) = (a, b);`, `t.0` becomes `t__0`, `t = (c, d);` assigns both
//! elements (every value first), and `t` as a whole becomes `(t__0, t__1)` — which `let`
//! patterns and a tuple-returning function's tail take apart again.

use proc_macro2::TokenStream;
use quote::{format_ident, quote_spanned};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::Expr;

/// The places of a destructuring assignment's left side and the values of its right, leaf
/// by leaf, where the right is a tuple of the same shape (`None` otherwise, or when the
/// left is not nested and the right is no tuple). A value that a rest `..` skips has no
/// place (`None`): it is still read, as Rust reads the whole right side.
type Leaves<'a> = (Vec<Option<&'a Expr>>, Vec<&'a Expr>);
fn leaves<'a>(left: &'a Expr, right: &'a Expr) -> Option<Leaves<'a>> {
    fn walk<'a>(l: &'a Expr, r: &'a Expr, out: &mut Leaves<'a>) -> bool {
        match (l, r) {
            (Expr::Tuple(lt), Expr::Tuple(rt)) => {
                let (before, after) = match lt.elems.iter().position(is_rest) {
                    Some(k) => (k, lt.elems.len() - 1 - k),
                    None if lt.elems.len() == rt.elems.len() => (lt.elems.len(), 0),
                    None => return false,
                };
                let n = rt.elems.len();
                if before + after > n || lt.elems.iter().filter(|e| is_rest(e)).count() > 1 {
                    return false;
                }
                let places = lt.elems.iter().filter(|e| !is_rest(e));
                let (head, tail): (Vec<_>, Vec<_>) =
                    places.enumerate().partition(|(i, _)| *i < before);
                let skipped = n - before - after;
                let mut ok = true;
                for (k, r) in rt.elems.iter().enumerate() {
                    ok &= if k < before {
                        walk(head[k].1, r, out)
                    } else if k < before + skipped {
                        out.0.push(None);
                        out.1.push(r);
                        true
                    } else {
                        walk(tail[k - before - skipped].1, r, out)
                    };
                }
                ok
            }
            (Expr::Tuple(_), _) => false,
            (Expr::Paren(p), r) => walk(&p.expr, r, out),
            (l, r) => {
                out.0.push(Some(l));
                out.1.push(r);
                true
            }
        }
    }
    let mut out = (Vec::new(), Vec::new());
    walk(left, right, &mut out).then_some(out)
}

/// `..` in a destructuring assignment's tuple: the elements it skips.
fn is_rest(e: &Expr) -> bool {
    matches!(e, Expr::Range(r) if r.start.is_none() && r.end.is_none())
}

/// Rewrites the tuple locals of `block`.
pub fn desugar(block: &mut syn::Block) {
    Tuples::default().visit_block_mut(block);
}

/// The tuple locals in scope: name → number of elements.
#[derive(Default)]
struct Tuples {
    locals: HashMap<String, usize>,
    fresh: usize,
}

fn element(name: &syn::Ident, k: usize) -> syn::Ident {
    format_ident!("{}__{}", name, k, span = name.span())
}

impl Tuples {
    /// `let t = (..);` (`let mut t`, `let t: (f64, f64)`): the statement binding the
    /// elements, or `None` when it is not a tuple local.
    fn bind(&mut self, local: &mut syn::Local) -> Option<syn::Stmt> {
        let (p, _annotated) = match &local.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (p.clone(), false),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (p.clone(), true),
                _ => return None,
            },
            _ => return None,
        };
        let span = local.span();
        let init = local.init.as_mut()?;
        if init.diverge.is_some() {
            return None;
        }
        let Expr::Tuple(t) = &mut *init.expr else {
            // Another value under the name hides an earlier tuple local.
            self.locals.remove(&p.ident.to_string());
            return None;
        };
        if t.elems.len() < 2 || t.elems.iter().any(|e| matches!(e, Expr::Tuple(_))) {
            return None;
        }
        for e in t.elems.iter_mut() {
            self.visit_expr_mut(e);
        }
        let n = t.elems.len();
        let m = &p.mutability;
        let names = (0..n).map(|k| element(&p.ident, k));
        let value = &*t;
        let stmt = syn::parse_quote_spanned!(span=> let (#(#m #names),*) = #value;);
        self.locals.insert(p.ident.to_string(), n);
        Some(stmt)
    }

    /// `t` of a tuple local: its name and number of elements.
    fn local_of(&self, e: &Expr) -> Option<(syn::Ident, usize)> {
        match e {
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let id = &p.path.segments[0].ident;
                self.locals.get(&id.to_string()).map(|n| (id.clone(), *n))
            }
            _ => None,
        }
    }
}

/// `let (a, b) = if c { ..; (x, y) } else { (u, v) };` (a `match` too, nested, with
/// diverging arms): hidden names declared first and assigned where each branch ends, then
/// the pattern's names bound to them (hidden, so a branch may read an outer `a`):
/// `let __tv0_0; let __tv0_1; if c { ..; __tv0_0 = x; __tv0_1 = y; } else { .. }
/// let a = __tv0_0; let b = __tv0_1;`. `None` when `local` is not of that form.
fn branch_tuple(local: &syn::Local, fresh: &mut usize) -> Option<Vec<syn::Stmt>> {
    let syn::Pat::Tuple(t) = &local.pat else {
        return None;
    };
    let names: Vec<&syn::PatIdent> = t
        .elems
        .iter()
        .map(|p| match p {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(pi),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let init = local.init.as_ref().filter(|i| i.diverge.is_none())?;
    if names.len() < 2 || !matches!(&*init.expr, Expr::If(_) | Expr::Match(_)) {
        return None;
    }
    let k = *fresh;
    *fresh += 1;
    let hidden: Vec<syn::Ident> = (0..names.len())
        .map(|i| format_ident!("__tv{}_{}", k, i, span = names[i].ident.span()))
        .collect();
    let mut value = (*init.expr).clone();
    if !assign_tails(&mut value, &hidden) {
        return None;
    }
    let span = local.span();
    let mut out: Vec<syn::Stmt> = hidden
        .iter()
        .map(|h| syn::parse_quote_spanned!(span=> let #h;))
        .collect();
    out.push(syn::Stmt::Expr(value, Some(Default::default())));
    for (pi, h) in names.iter().zip(&hidden) {
        let (m, id) = (&pi.mutability, &pi.ident);
        out.push(syn::parse_quote_spanned!(span=> let #m #id = #h;));
    }
    Some(out)
}

/// Replaces each tail `(x, y)` of `e` (through blocks, `if`/`else`, `match` arms) by the
/// assignments `h0 = x; h1 = y;`; a diverging tail (`return`, `panic!`) stays. False when a
/// tail is anything else.
fn assign_tails(e: &mut Expr, hidden: &[syn::Ident]) -> bool {
    match e {
        Expr::Tuple(t) if t.elems.len() == hidden.len() => {
            let elems = t.elems.iter();
            let span = t.span();
            *e = syn::parse_quote_spanned!(span=> { #(#hidden = #elems;)* });
            true
        }
        Expr::Paren(p) => assign_tails(&mut p.expr, hidden),
        Expr::Group(g) => assign_tails(&mut g.expr, hidden),
        Expr::Block(b) => assign_block_tail(&mut b.block, hidden),
        Expr::If(i) => {
            let Some((_, els)) = &mut i.else_branch else {
                return false;
            };
            assign_block_tail(&mut i.then_branch, hidden) && assign_tails(els, hidden)
        }
        Expr::Match(m) => m.arms.iter_mut().all(|a| assign_tails(&mut a.body, hidden)),
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Macro(m) => ["panic", "unreachable", "todo", "unimplemented"]
            .iter()
            .any(|n| m.mac.path.is_ident(n)),
        _ => false,
    }
}

fn assign_block_tail(b: &mut syn::Block, hidden: &[syn::Ident]) -> bool {
    match b.stmts.last_mut() {
        Some(syn::Stmt::Expr(e, None)) => assign_tails(e, hidden),
        Some(syn::Stmt::Macro(m)) if m.semi_token.is_none() => {
            ["panic", "unreachable", "todo", "unimplemented"]
                .iter()
                .any(|n| m.mac.path.is_ident(n))
        }
        _ => false,
    }
}

impl VisitMut for Tuples {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let saved = self.locals.clone();
        let mut stmts = Vec::new();
        for mut s in std::mem::take(&mut b.stmts) {
            if let syn::Stmt::Local(l) = &s {
                if let Some(split) = branch_tuple(l, &mut self.fresh) {
                    for mut s in split {
                        self.visit_stmt_mut(&mut s);
                        stmts.push(s);
                    }
                    continue;
                }
            }
            if let syn::Stmt::Local(l) = &mut s {
                if let Some(bound) = self.bind(l) {
                    stmts.push(bound);
                    continue;
                }
            }
            self.visit_stmt_mut(&mut s);
            stmts.push(s);
        }
        b.stmts = stmts;
        self.locals = saved;
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            // `t.0`
            Expr::Field(f) => {
                if let (Some((name, n)), syn::Member::Unnamed(i)) =
                    (self.local_of(&f.base), &f.member)
                {
                    if (i.index as usize) < n {
                        let id = element(&name, i.index as usize);
                        *e = syn::parse_quote_spanned!(f.span()=> #id);
                        return;
                    }
                }
                syn::visit_mut::visit_expr_field_mut(self, f);
            }
            // `(a, b) = (b, a + b);`, destructuring assignment: every value first, into
            // temporaries, then each place on the left (`_` skips one, a nested tuple
            // takes its value apart in turn).
            Expr::Assign(a) if matches!(&*a.left, Expr::Tuple(_)) => {
                let span = a.span();
                let k = self.fresh;
                self.fresh += 1;
                // A tuple of the same shape on the right is taken apart with the left, to
                // its leaves: `(p, (q, r)) = (r, (p * q, q));` reads three values.
                let (places, values) = match leaves(&a.left, &a.right) {
                    Some((places, values)) => (places, quote_spanned!(span=> (#(#values),*))),
                    None => {
                        let Expr::Tuple(left) = &*a.left else {
                            unreachable!()
                        };
                        let right = &a.right;
                        (
                            left.elems.iter().map(Some).collect(),
                            quote_spanned!(span=> #right),
                        )
                    }
                };
                // A temporary per place; a rest `..` stays in the pattern (`let (t0, .., t1)`).
                let mut pattern = Vec::new();
                let mut sets = Vec::new();
                for (i, place) in places.iter().enumerate() {
                    if let Some(rest) = place.filter(|p| is_rest(p)) {
                        pattern.push(quote_spanned!(rest.span()=> ..));
                        continue;
                    }
                    let t = format_ident!("__tuple{}_{}", k, i, span = span);
                    pattern.push(quote_spanned!(span=> #t));
                    if let Some(place) = place.filter(|p| !matches!(p, Expr::Infer(_))) {
                        sets.push(quote_spanned!(place.span()=> #place = #t;));
                    }
                }
                *e = syn::parse_quote_spanned!(span=> {
                    let (#(#pattern),*) = #values;
                    #(#sets)*
                });
                self.visit_expr_mut(e);
            }
            // `t = (c, d);`: every value first, then the elements.
            Expr::Assign(a) => {
                if let Some((name, n)) = self.local_of(&a.left) {
                    self.visit_expr_mut(&mut a.right);
                    let k = self.fresh;
                    self.fresh += 1;
                    let tmp: Vec<syn::Ident> = (0..n)
                        .map(|i| format_ident!("__tuple{}_{}", k, i))
                        .collect();
                    let names: Vec<syn::Ident> = (0..n).map(|i| element(&name, i)).collect();
                    let right = &a.right;
                    let span = a.span();
                    *e = syn::parse_quote_spanned!(span=> {
                        let (#(#tmp),*) = #right;
                        #(#names = #tmp;)*
                    });
                    return;
                }
                syn::visit_mut::visit_expr_assign_mut(self, a);
            }
            // `t` as a whole.
            Expr::Path(_) => {
                if let Some((name, n)) = self.local_of(e) {
                    let names = (0..n).map(|k| element(&name, k));
                    let tokens: TokenStream = quote_spanned!(e.span()=> (#(#names),*));
                    *e = syn::parse2(tokens).expect("a tuple");
                }
            }
            Expr::Closure(c) => {
                // A closure parameter hides a tuple local of its name.
                let saved = self.locals.clone();
                for p in &c.inputs {
                    if let syn::Pat::Ident(p) = p {
                        self.locals.remove(&p.ident.to_string());
                    }
                }
                self.visit_expr_mut(&mut c.body);
                self.locals = saved;
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        // `vec![t.0; n]`, `assert!(t.1 > 0.0)`: the elements inside the macro's tokens.
        let tokens = m.tokens.clone();
        m.tokens = self.macro_tokens(tokens);
    }
}

impl Tuples {
    fn macro_tokens(&self, tokens: TokenStream) -> TokenStream {
        use proc_macro2::TokenTree;
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out: Vec<TokenTree> = Vec::new();
        let mut i = 0;
        while i < tts.len() {
            if let (
                TokenTree::Ident(id),
                Some(TokenTree::Punct(dot)),
                Some(TokenTree::Literal(l)),
            ) = (&tts[i], tts.get(i + 1), tts.get(i + 2))
            {
                let k: Option<usize> = l.to_string().parse().ok();
                if let (Some(n), '.', Some(k)) =
                    (self.locals.get(&id.to_string()), dot.as_char(), k)
                {
                    if k < *n {
                        out.push(TokenTree::Ident(element(id, k)));
                        i += 3;
                        continue;
                    }
                }
            }
            out.push(match &tts[i] {
                TokenTree::Group(g) => {
                    let mut ng =
                        proc_macro2::Group::new(g.delimiter(), self.macro_tokens(g.stream()));
                    ng.set_span(g.span());
                    TokenTree::Group(ng)
                }
                t => t.clone(),
            });
            i += 1;
        }
        out.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn run(src: &str) -> String {
        let mut b: syn::Block = syn::parse_str(src).unwrap();
        desugar(&mut b);
        b.to_token_stream().to_string()
    }

    #[test]
    fn destructuring_assignments_take_every_value_first() {
        let out =
            run("{ let (mut a, mut b) = (1.0, 2.0); (a, b) = (b, a + b); (a, _) = (b, 0.0); }");
        assert!(
            out.contains(
                "let (__tuple0_0 , __tuple0_1) = (b , a + b) ; a = __tuple0_0 ; b = __tuple0_1 ;"
            ),
            "{out}"
        );
        assert!(
            out.contains("let (__tuple1_0 , __tuple1_1) = (b , 0.0) ; a = __tuple1_0 ;"),
            "{out}"
        );
        assert!(!out.contains("= __tuple1_1"), "{out}");
        // A nested tuple on the left is taken apart in turn.
        let out =
            run("{ let (mut a, mut b, mut c) = (1.0, 2.0, 3.0); (a, (b, c)) = (c, (a, b)); }");
        assert!(
            out.contains("let (__tuple0_0 , __tuple0_1 , __tuple0_2) = (c , a , b) ; a = __tuple0_0 ; b = __tuple0_1 ; c = __tuple0_2 ;"),
            "{out}"
        );
    }

    #[test]
    fn destructuring_assignments_with_a_rest_read_the_skipped_values() {
        let out = run("{ let (mut a, mut b) = (1.0, 2.0); (a, .., b) = (b, a * b, 3.0, a); }");
        assert!(
            out.contains("let (__tuple0_0 , __tuple0_1 , __tuple0_2 , __tuple0_3) = (b , a * b , 3.0 , a) ; a = __tuple0_0 ; b = __tuple0_3 ;"),
            "{out}"
        );
        // Without a tuple on the right the rest stays in the pattern.
        let out = run("{ let (mut a, mut b) = (1.0, 2.0); (a, ..) = f(); }");
        assert!(
            out.contains("let (__tuple0_0 , ..) = f () ; a = __tuple0_0 ;"),
            "{out}"
        );
    }

    #[test]
    fn tuple_locals_become_elements() {
        let out =
            run("{ let mut t = (x[0], a); t.0 += 1.0; t = (t.1, t.0); let (p, q) = t; p * q }");
        assert!(
            out.contains("let (mut t__0 , mut t__1) = (x [0] , a)"),
            "{out}"
        );
        assert!(out.contains("t__0 += 1.0"), "{out}");
        assert!(
            out.contains("let (__tuple0_0 , __tuple0_1) = (t__1 , t__0)"),
            "{out}"
        );
        assert!(out.contains("let (p , q) = (t__0 , t__1)"), "{out}");
    }
}

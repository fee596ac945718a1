//! Array literals bound by `let` (`let w = [1.0, 2.0];`, `let v = vec![a, b, c];`): a buffer
//! filled by its first element, then the others stored (`let mut w = vec![e0; 2]; w[1] =
//! e1;`), every element evaluated first, in order, so an element may read an earlier `w`.

use quote::format_ident;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::Expr;

/// Rewrites the array literals bound by `let` in `block`.
pub fn desugar(block: &mut syn::Block) {
    Arrays { next: 0 }.visit_block_mut(block);
}

struct Arrays {
    next: usize,
}

/// The elements of `[e0, ..]` or `vec![e0, ..]` (two or more, none itself an array).
fn elements(e: &Expr) -> Option<Vec<Expr>> {
    let elems: Vec<Expr> = match e {
        Expr::Array(a) => a.elems.iter().cloned().collect(),
        Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            let list = m
                .mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()?;
            list.into_iter().collect()
        }
        _ => return None,
    };
    let nested = elems.iter().any(|x| {
        matches!(x, Expr::Array(_)) || matches!(x, Expr::Macro(m) if m.mac.path.is_ident("vec"))
    });
    (elems.len() >= 2 && !nested).then_some(elems)
}

impl VisitMut for Arrays {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut stmts = Vec::new();
        for mut s in std::mem::take(&mut b.stmts) {
            self.visit_stmt_mut(&mut s);
            let syn::Stmt::Local(l) = &s else {
                stmts.push(s);
                continue;
            };
            let (syn::Pat::Ident(p), Some(init)) = (&l.pat, &l.init) else {
                stmts.push(s);
                continue;
            };
            let Some(elems) =
                elements(&init.expr).filter(|_| init.diverge.is_none() && p.by_ref.is_none())
            else {
                stmts.push(s);
                continue;
            };
            let k = self.next;
            self.next += 1;
            let span = l.span();
            let temps: Vec<syn::Ident> = (0..elems.len())
                .map(|i| format_ident!("__array{}_{}", k, i))
                .collect();
            for (t, e) in temps.iter().zip(&elems) {
                stmts.push(syn::parse_quote_spanned!(span=> let #t = #e;));
            }
            let (name, n, first) = (&p.ident, elems.len(), &temps[0]);
            stmts.push(syn::parse_quote_spanned!(span=> let mut #name = vec![#first; #n];));
            for (i, t) in temps.iter().enumerate().skip(1) {
                stmts.push(syn::parse_quote_spanned!(span=> #name[#i] = #t;));
            }
        }
        b.stmts = stmts;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    #[test]
    fn array_literals_become_filled_buffers() {
        let mut b: syn::Block = syn::parse_str(
            "{ let w = [w[1], 2.0 * a]; let v = vec![x[0], x[1], x[2]]; w[0] + v[2] }",
        )
        .unwrap();
        desugar(&mut b);
        let out = b.to_token_stream().to_string();
        assert!(out.contains("let __array0_0 = w [1] ; let __array0_1 = 2.0 * a ; let mut w = vec ! [__array0_0 ; 2usize] ; w [1usize] = __array0_1 ;"), "{out}");
        assert!(
            out.contains("let mut v = vec ! [__array1_0 ; 3usize]"),
            "{out}"
        );
    }
}

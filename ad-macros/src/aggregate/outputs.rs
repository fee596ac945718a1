//! A function returning a tuple `(a, b)` has several outputs: its exploded function writes
//! them into one-element slices `__out0[0]`, `__out1[0]` (the compiler's `&mut` outputs)
//! and returns `()`. Its tail and its `return`s are rewritten into those writes.

use quote::format_ident;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::Expr;

/// Rewrites the value of `block` (tail and `return`s) into writes of `n` outputs.
pub fn write_outputs(block: &mut syn::Block, n: usize) -> syn::Result<()> {
    let mut returns = Returns {
        n,
        errors: Vec::new(),
    };
    returns.visit_block_mut(block);
    if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
        *tail = assign(tail, n)?;
    }
    match returns.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `e` (a tuple, or an `if`/`match`/block ending in one) as writes of its elements.
fn assign(e: &Expr, n: usize) -> syn::Result<Expr> {
    let span = e.span();
    match e {
        Expr::Tuple(t) if t.elems.len() == n => {
            let outs = (0..n).map(|k| format_ident!("__out{}", k));
            let values = t.elems.iter();
            Ok(syn::parse_quote_spanned!(span=> { #(#outs[0] = #values;)* }))
        }
        Expr::Paren(p) => assign(&p.expr, n),
        Expr::Block(b) => {
            let mut b = b.clone();
            assign_tail(&mut b.block, n)?;
            Ok(Expr::Block(b))
        }
        Expr::If(i) => {
            let mut i = i.clone();
            assign_tail(&mut i.then_branch, n)?;
            if let Some((_, other)) = &mut i.else_branch {
                **other = assign(other, n)?;
            }
            Ok(Expr::If(i))
        }
        Expr::Match(m) => {
            let mut m = m.clone();
            for arm in m.arms.iter_mut() {
                *arm.body = assign(&arm.body, n)?;
            }
            Ok(Expr::Match(m))
        }
        // A diverging tail (`panic!`, `unreachable!`) writes nothing.
        Expr::Macro(_) => Ok(e.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!("phidiff: a function returning a tuple of {n} floats ends in a tuple `(a, b, ..)` (or an `if`, `match` or block whose branches do), so each element is an output; write the elements out"),
        )),
    }
}

fn assign_tail(block: &mut syn::Block, n: usize) -> syn::Result<()> {
    if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
        *tail = assign(tail, n)?;
    }
    Ok(())
}

/// `return (a, b)` → `{ __out0[0] = a; __out1[0] = b; return; }`, outside closures.
struct Returns {
    n: usize,
    errors: Vec<syn::Error>,
}

impl VisitMut for Returns {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Closure(_) => {}
            Expr::Return(r) => {
                let Some(value) = &r.expr else { return };
                match assign(value, self.n) {
                    Ok(writes) => {
                        let span = r.span();
                        *e = syn::parse_quote_spanned!(span=> { #writes return; });
                    }
                    Err(err) => self.errors.push(err),
                }
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    #[test]
    fn tails_and_returns_write_the_outputs() {
        let mut b: syn::Block = syn::parse_str(
            "{ if x[0] < 0.0 { return (0.0, 1.0); } let s = x[0]; if s > 1.0 { (s, 2.0 * s) } else { (s * s, s) } }",
        )
        .unwrap();
        write_outputs(&mut b, 2).unwrap();
        let out = b.to_token_stream().to_string();
        assert!(
            out.contains("__out0 [0] = 0.0 ; __out1 [0] = 1.0 ; } return ;"),
            "{out}"
        );
        assert!(
            out.contains("__out0 [0] = s * s ; __out1 [0] = s ;"),
            "{out}"
        );
        let mut bad: syn::Block = syn::parse_str("{ f(x) }").unwrap();
        assert!(write_outputs(&mut bad, 2).is_err());
    }
}

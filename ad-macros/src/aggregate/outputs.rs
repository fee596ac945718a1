//! A function with several outputs — a tuple `(a, b)` of floats, or a struct of floats and
//! arrays of floats (`-> State`) — writes them into slices `__out0`, `__out1`, .. after its
//! parameters (the compiler's `&mut` outputs; one element for a float, `N` for an array
//! field) and returns `()`. Its tail and its `return`s are rewritten into those writes.

use quote::format_ident;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::Expr;

/// A struct result: its type, and per field (in declaration order) the member, the float
/// type of its elements and, for an array field, its length.
#[derive(Clone)]
pub struct StructResult {
    pub ty: syn::Type,
    /// The struct's name (the last segment of its path), which its literals use.
    pub name: String,
    pub fields: Vec<OutField>,
}

#[derive(Clone)]
pub struct OutField {
    pub member: syn::Member,
    pub elem: syn::Type,
    pub len: Option<syn::Expr>,
}

/// What the value of a function with several outputs is taken apart into.
#[derive(Clone, Copy)]
enum Shape<'a> {
    Tuple(usize),
    Struct(&'a StructResult),
}

/// Rewrites the value of `block` (tail and `return`s) into writes of `n` outputs.
pub fn write_outputs(block: &mut syn::Block, n: usize) -> syn::Result<()> {
    write(block, Shape::Tuple(n))
}

/// Rewrites the value of `block` (tail and `return`s), struct literals of `result`, into
/// writes of its fields' outputs.
pub fn write_struct_outputs(block: &mut syn::Block, result: &StructResult) -> syn::Result<()> {
    write(block, Shape::Struct(result))
}

fn write(block: &mut syn::Block, shape: Shape<'_>) -> syn::Result<()> {
    let mut returns = Returns {
        shape,
        errors: Vec::new(),
    };
    returns.visit_block_mut(block);
    if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
        *tail = assign(tail, shape)?;
    }
    match returns.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `e` (a tuple or struct literal, or an `if`/`match`/block ending in one) as writes of its
/// elements.
fn assign(e: &Expr, shape: Shape<'_>) -> syn::Result<Expr> {
    let span = e.span();
    match (e, shape) {
        (Expr::Tuple(t), Shape::Tuple(n)) if t.elems.len() == n => {
            let outs = (0..n).map(|k| format_ident!("__out{}", k));
            let values = t.elems.iter();
            Ok(syn::parse_quote_spanned!(span=> { #(#outs[0] = #values;)* }))
        }
        (Expr::Struct(s), Shape::Struct(r))
            if s.path
                .segments
                .last()
                .is_some_and(|l| l.ident == r.name || l.ident == "Self") =>
        {
            struct_writes(s, r)
        }
        (Expr::Paren(p), _) => assign(&p.expr, shape),
        (Expr::Block(b), _) => {
            let mut b = b.clone();
            assign_tail(&mut b.block, shape)?;
            Ok(Expr::Block(b))
        }
        (Expr::If(i), _) => {
            let mut i = i.clone();
            assign_tail(&mut i.then_branch, shape)?;
            if let Some((_, other)) = &mut i.else_branch {
                **other = assign(other, shape)?;
            }
            Ok(Expr::If(i))
        }
        (Expr::Match(m), _) => {
            let mut m = m.clone();
            for arm in m.arms.iter_mut() {
                *arm.body = assign(&arm.body, shape)?;
            }
            Ok(Expr::Match(m))
        }
        // A diverging tail (`panic!`, `unreachable!`) writes nothing.
        (Expr::Macro(_), _) => Ok(e.clone()),
        (other, Shape::Tuple(n)) => Err(syn::Error::new_spanned(
            other,
            format!("phidiff: a function returning a tuple of {n} floats ends in a tuple `(a, b, ..)` (or an `if`, `match` or block whose branches do), so each element is an output; write the elements out"),
        )),
        (other, Shape::Struct(r)) => Err(syn::Error::new_spanned(
            other,
            format!("phidiff: a function returning a `{0}` ends in a struct literal `{0} {{ .. }}` (or an `if`, `match` or block whose branches do), so each field is an output; write the literal out", r.name),
        )),
    }
}

/// The writes of a struct literal's fields (a field it does not name comes from its
/// `..base`): a float to `__outK[0]`, an array field element by element.
fn struct_writes(s: &syn::ExprStruct, r: &StructResult) -> syn::Result<Expr> {
    let span = s.span();
    let mut writes = Vec::new();
    for (k, f) in r.fields.iter().enumerate() {
        let out = format_ident!("__out{}", k);
        let member = &f.member;
        let value: Expr = match s.fields.iter().find(|fv| fv.member == *member) {
            Some(fv) => fv.expr.clone(),
            None => match &s.rest {
                Some(base) => syn::parse_quote_spanned!(span=> (#base).#member),
                None => {
                    return Err(syn::Error::new_spanned(
                        s,
                        "phidiff: this struct literal does not give every field",
                    ))
                }
            },
        };
        let write: Expr = match (&f.len, &value) {
            (None, v) => syn::parse_quote_spanned!(span=> #out[0] = #v),
            (Some(_), Expr::Array(a)) => {
                let (js, vs): (Vec<syn::Index>, Vec<&Expr>) = a
                    .elems
                    .iter()
                    .enumerate()
                    .map(|(j, v)| (syn::Index::from(j), v))
                    .unzip();
                syn::parse_quote_spanned!(span=> { #(#out[#js] = #vs;)* })
            }
            (Some(_), Expr::Repeat(rep)) => {
                let v = &rep.expr;
                syn::parse_quote_spanned!(span=> for __j in 0..#out.len() { #out[__j] = #v; })
            }
            (Some(_), v) => {
                syn::parse_quote_spanned!(span=> for __j in 0..#out.len() { #out[__j] = (#v)[__j]; })
            }
        };
        writes.push(write);
    }
    Ok(syn::parse_quote_spanned!(span=> { #(#writes;)* }))
}

fn assign_tail(block: &mut syn::Block, shape: Shape<'_>) -> syn::Result<()> {
    if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
        *tail = assign(tail, shape)?;
    }
    Ok(())
}

/// `return (a, b)` → `{ __out0[0] = a; __out1[0] = b; return; }`, outside closures.
struct Returns<'a> {
    shape: Shape<'a>,
    errors: Vec<syn::Error>,
}

impl VisitMut for Returns<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Closure(_) => {}
            Expr::Return(r) => {
                let Some(value) = &r.expr else { return };
                match assign(value, self.shape) {
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

    #[test]
    fn struct_literals_write_their_fields() {
        let r = StructResult {
            ty: syn::parse_quote!(State),
            name: "State".into(),
            fields: vec![
                OutField {
                    member: syn::parse_quote!(e),
                    elem: syn::parse_quote!(f64),
                    len: None,
                },
                OutField {
                    member: syn::parse_quote!(pos),
                    elem: syn::parse_quote!(f64),
                    len: Some(syn::parse_quote!(2)),
                },
            ],
        };
        let mut b: syn::Block = syn::parse_str(
            "{ if a { return State { pos: [x, y], e: 1.0 }; } State { e: 2.0, ..s } }",
        )
        .unwrap();
        write_struct_outputs(&mut b, &r).unwrap();
        let out = b.to_token_stream().to_string();
        assert!(
            out.contains("__out0 [0] = 1.0 ; { __out1 [0] = x ; __out1 [1] = y ; }"),
            "{out}"
        );
        assert!(out.contains("__out1 [__j] = ((s) . pos) [__j]"), "{out}");
        let mut bad: syn::Block = syn::parse_str("{ make() }").unwrap();
        assert!(write_struct_outputs(&mut bad, &r).is_err());
    }
}

//! Growable `Vec`s filled by a loop, desugared before lowering (buffers keep one length in
//! the IR). `let mut v = Vec::new();` (or `Vec::with_capacity(n)`, typed or not), followed
//! in the same block by a `for` loop that pushes to `v` once per iteration (one `v.push(e);`
//! at the top level of its body, no `break`/`continue` in it, `v` not used before the loop
//! nor pushed to after it) becomes a buffer of the loop's trip count, counted first by the
//! same loop header:
//!
//! ```text
//! let mut n = 0usize; for PAT in ITER { n += 1; }
//! let mut v = vec![0.0; n]; let mut k = 0usize;
//! for PAT in ITER { ..; v[k] = e; k += 1; .. }
//! ```
//!
//! The counting loop is integer work over the same iterator (LLVM folds it to a length for
//! ranges and slices); a `filter` in the header is counted as the loop runs. Anything else
//! keeps the `vec_new_push` error.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::VisitMut;
use syn::{Expr, Stmt};

/// Desugars the pushing loops of `block` and of the blocks inside it.
pub fn desugar(block: &mut syn::Block) {
    Growable { next: 0 }.visit_block_mut(block);
}

struct Growable {
    next: usize,
}

/// Whether `tokens` mention the identifier `name`.
fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), name),
        _ => false,
    })
}

/// Whether `tokens` call a method of `name` that changes its length (`v.push(..)`).
fn grows(tokens: TokenStream, name: &str) -> bool {
    let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(k, t)| match t {
        proc_macro2::TokenTree::Group(g) => grows(g.stream(), name),
        proc_macro2::TokenTree::Ident(i) if i == name => {
            matches!(trees.get(k + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '.')
                && matches!(trees.get(k + 2), Some(proc_macro2::TokenTree::Ident(m))
                    if ["push", "extend", "insert", "append", "resize", "truncate", "pop", "clear"]
                        .iter()
                        .any(|g| m == g))
        }
        _ => false,
    })
}

/// `let mut v = Vec::new();` / `Vec::with_capacity(..)`: `v`, and whether its declared
/// element type is an integer.
fn new_vec(st: &Stmt) -> Option<(syn::Ident, bool)> {
    let Stmt::Local(local) = st else { return None };
    let (pat, ty) = match &local.pat {
        syn::Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
        p => (p, None),
    };
    let syn::Pat::Ident(pi) = pat else {
        return None;
    };
    pi.mutability?;
    let init = local.init.as_ref()?;
    if init.diverge.is_some() {
        return None;
    }
    let Expr::Call(c) = &*init.expr else {
        return None;
    };
    let Expr::Path(p) = &*c.func else { return None };
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let ctor = matches!(
        segs.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        [.., "Vec", "new" | "with_capacity"]
    );
    if !ctor {
        return None;
    }
    let elem = ty
        .map(|t| t.to_token_stream().to_string())
        .unwrap_or_default();
    let int = ["usize", "isize", "u32", "i32", "u64", "i64"]
        .iter()
        .any(|i| elem.replace(' ', "") == format!("Vec<{i}>"));
    Some((pi.ident.clone(), int))
}

/// The one `v.push(e);` at the top level of a loop body: its position and `e`.
fn the_push(body: &syn::Block, v: &syn::Ident) -> Option<(usize, Expr)> {
    let mut found = None;
    for (k, st) in body.stmts.iter().enumerate() {
        match st {
            Stmt::Expr(Expr::MethodCall(m), Some(_))
                if m.method == "push"
                    && m.args.len() == 1
                    && matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident(v)) =>
            {
                if found.is_some() || mentions(m.args[0].to_token_stream(), &v.to_string()) {
                    return None;
                }
                found = Some((k, m.args[0].clone()));
            }
            other => {
                if mentions(other.to_token_stream(), &v.to_string()) {
                    return None;
                }
            }
        }
    }
    let scan = super::control::scan_stmts(&body.stmts);
    if scan.brk || scan.cont || scan.ret {
        return None;
    }
    found
}

impl VisitMut for Growable {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        let mut k = 0;
        while k < b.stmts.len() {
            if let Some(stmts) = self.rewrite(&b.stmts, k) {
                let (at, rest) = stmts;
                b.stmts.splice(k..at, rest);
            }
            k += 1;
        }
    }
}

impl Growable {
    /// If `stmts[k]` makes a growable `Vec` that a later loop fills: the end of what is
    /// replaced (after the loop) and the statements replacing `stmts[k..end]`.
    fn rewrite(&mut self, stmts: &[Stmt], k: usize) -> Option<(usize, Vec<Stmt>)> {
        let (v, int) = new_vec(&stmts[k])?;
        let name = v.to_string();
        let (l, f) = stmts
            .iter()
            .enumerate()
            .skip(k + 1)
            .find_map(|(l, st)| match st {
                Stmt::Expr(Expr::ForLoop(f), _) if mentions(f.body.to_token_stream(), &name) => {
                    Some((l, f))
                }
                _ => None,
            })?;
        let between_uses = stmts[k + 1..l]
            .iter()
            .any(|st| mentions(st.to_token_stream(), &name));
        let pushed_later = stmts[l + 1..]
            .iter()
            .any(|st| grows(st.to_token_stream(), &name));
        if between_uses || pushed_later || mentions(f.expr.to_token_stream(), &name) {
            return None;
        }
        let (at, value) = the_push(&f.body, &v)?;
        self.next += 1;
        let n = format_ident!("__pd_len{}", self.next);
        let i = format_ident!("__pd_at{}", self.next);
        let (pat, iter) = (&f.pat, &f.expr);
        let zero = if int { quote!(0) } else { quote!(0.0) };
        let mut body = f.body.clone();
        body.stmts[at] = syn::parse_quote!(#v[#i] = #value;);
        body.stmts.insert(at + 1, syn::parse_quote!(#i += 1;));
        let attrs = &f.attrs;
        let label = &f.label;
        // The statements between (which do not use `v`) first: they may change what the
        // loop header reads, so the count is taken right before the loop.
        let mut out: Vec<Stmt> = stmts[k + 1..l].to_vec();
        out.extend([
            syn::parse_quote!(let mut #n: usize = 0;),
            syn::parse_quote!(for #pat in #iter { #n += 1; }),
            syn::parse_quote!(let mut #v = vec![#zero; #n];),
            syn::parse_quote!(let mut #i: usize = 0;),
        ]);
        out.push(syn::parse_quote!(#(#attrs)* #label for #pat in #iter #body));
        Some((l + 1, out))
    }
}

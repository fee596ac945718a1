//! `#[checkpoint(...)]` on a loop inside a differentiated function: the parsed attribute,
//! and its removal from the primal the macro emits (rustc knows no such attribute).
//!
//! ```text
//! #[checkpoint(revolve(snapshots = S))]            // binomial (Griewank–Walther)
//! #[checkpoint(periodic(every = K))]               // every K-th state
//! #[checkpoint(online(snapshots = S))]             // trip count unknown (while loops)
//! #[checkpoint(revolve(snapshots = S), storage = disk)]   // or `storage = memory`
//! ```
//!
//! `S` and `K` are integer expressions of the function's parameters (or literals, which
//! must be at least 1).

use syn::parse::ParseStream;
use syn::visit_mut::VisitMut;
use syn::{Attribute, Expr, Ident, Token};

/// The three schemes of `ad_core::checkpoint`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SchemeKind {
    Revolve,
    Periodic,
    Online,
}

/// A parsed `#[checkpoint(...)]`.
pub struct Parsed {
    /// The attribute, for errors that point at it.
    pub attr: Attribute,
    pub scheme: SchemeKind,
    /// The snapshot count (`revolve`, `online`) or the period (`periodic`).
    pub count: Expr,
    pub disk: bool,
}

pub fn is_checkpoint(attr: &Attribute) -> bool {
    attr.path().is_ident("checkpoint")
}

const SCHEMES: &str =
    "expected `revolve(snapshots = S)`, `periodic(every = K)` or `online(snapshots = S)`";

/// The loop's `#[checkpoint(...)]`, if it has one.
pub fn parse(attrs: &[Attribute]) -> syn::Result<Option<Parsed>> {
    let mut found = attrs.iter().filter(|a| is_checkpoint(a));
    let Some(attr) = found.next() else {
        return Ok(None);
    };
    if let Some(second) = found.next() {
        return Err(syn::Error::new_spanned(
            second,
            "phidiff: a loop takes one `#[checkpoint(...)]`",
        ));
    }
    let syn::Meta::List(list) = &attr.meta else {
        return Err(syn::Error::new_spanned(
            attr,
            format!("phidiff: `#[checkpoint]` needs a scheme: {SCHEMES}"),
        ));
    };
    let (scheme, count, disk) = list.parse_args_with(|input: ParseStream| {
        let mut scheme: Option<(SchemeKind, Expr)> = None;
        let mut disk: Option<bool> = None;
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            let name = key.to_string();
            if name == "storage" {
                input.parse::<Token![=]>()?;
                let value: Ident = input.parse()?;
                let d = match value.to_string().as_str() {
                    "memory" => false,
                    "disk" => true,
                    other => {
                        return Err(syn::Error::new(
                            value.span(),
                            format!("phidiff: unknown checkpoint storage `{other}`; expected `storage = memory` or `storage = disk`"),
                        ))
                    }
                };
                if disk.replace(d).is_some() {
                    return Err(syn::Error::new(key.span(), "phidiff: `storage` given twice"));
                }
            } else {
                let (kind, param) = match name.as_str() {
                    "revolve" => (SchemeKind::Revolve, "snapshots"),
                    "periodic" => (SchemeKind::Periodic, "every"),
                    "online" => (SchemeKind::Online, "snapshots"),
                    _ => {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("phidiff: unknown checkpointing scheme `{name}`; {SCHEMES}"),
                        ))
                    }
                };
                if scheme.is_some() {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("phidiff: a loop has one checkpointing scheme; {SCHEMES}"),
                    ));
                }
                let content;
                syn::parenthesized!(content in input);
                let expected = format!("phidiff: `{name}` takes `{param} = <integer>`");
                let p: Ident = content
                    .parse()
                    .map_err(|e| syn::Error::new(e.span(), &expected))?;
                if p != param {
                    return Err(syn::Error::new(p.span(), expected));
                }
                content.parse::<Token![=]>()?;
                let count: Expr = content.parse()?;
                if !content.is_empty() {
                    return Err(content.error(expected));
                }
                check_count(&count, param)?;
                scheme = Some((kind, count));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let Some((kind, count)) = scheme else {
            return Err(input.error(format!("phidiff: `#[checkpoint]` needs a scheme: {SCHEMES}")));
        };
        Ok((kind, count, disk.unwrap_or(false)))
    })?;
    Ok(Some(Parsed {
        attr: attr.clone(),
        scheme,
        count,
        disk,
    }))
}

/// A literal count must be at least 1 (other expressions are checked when the loop runs).
fn check_count(count: &Expr, param: &str) -> syn::Result<()> {
    let lit = match count {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => Some(i.base10_parse::<u128>()?),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            ..
        }) => Some(0),
        _ => None,
    };
    if lit == Some(0) {
        return Err(syn::Error::new_spanned(
            count,
            format!("phidiff: `{param}` must be at least 1"),
        ));
    }
    Ok(())
}

/// Removes every `#[checkpoint]` from `item`'s body, returning an error for each one that
/// is not on a `for`, `while` or `loop` (those are checked again where the loop is lowered).
pub fn strip(item: &mut syn::ItemFn) -> Vec<syn::Error> {
    let mut s = Strip { errors: Vec::new() };
    s.visit_block_mut(&mut item.block);
    s.errors
}

struct Strip {
    errors: Vec<syn::Error>,
}

impl Strip {
    /// Reports every `#[checkpoint]` in `attrs`, which sit on `what` (not a loop).
    fn misplaced(&mut self, attrs: &mut Vec<Attribute>, what: &str) {
        for a in attrs.iter().filter(|a| is_checkpoint(a)) {
            self.errors.push(syn::Error::new_spanned(
                a,
                format!(
                    "phidiff: `#[checkpoint(...)]` is on {what}, but it checkpoints a loop; move \
                     it onto the `for`, `while` or `loop` whose iterations should be \
                     checkpointed, directly above the loop: `#[checkpoint(revolve(snapshots = \
                     8))] for step in 0..n_steps {{ .. }}`"
                ),
            ));
        }
        attrs.retain(|a| !is_checkpoint(a));
    }
}

impl VisitMut for Strip {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let is_loop = matches!(e, Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_));
        let Some(attrs) = expr_attrs(e) else {
            return;
        };
        if !is_loop {
            self.misplaced(attrs, "an expression that is not a loop");
            return;
        }
        // The count still counts as used in the primal: `{ let _ = &(S); loop }`.
        let count = parse(attrs).ok().flatten().map(|p| p.count);
        attrs.retain(|a| !is_checkpoint(a));
        if let Some(count) = count {
            let lp = e.clone();
            *e = syn::parse_quote!({
                let _ = &(#count);
                #lp
            });
        }
    }
    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        self.misplaced(&mut l.attrs, "a `let` statement");
        syn::visit_mut::visit_local_mut(self, l);
    }
    fn visit_stmt_macro_mut(&mut self, m: &mut syn::StmtMacro) {
        self.misplaced(&mut m.attrs, "a macro call");
    }
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The attributes of an expression (every syn expression has them except `Verbatim`).
fn expr_attrs(e: &mut Expr) -> Option<&mut Vec<Attribute>> {
    Some(match e {
        Expr::Array(x) => &mut x.attrs,
        Expr::Assign(x) => &mut x.attrs,
        Expr::Async(x) => &mut x.attrs,
        Expr::Await(x) => &mut x.attrs,
        Expr::Binary(x) => &mut x.attrs,
        Expr::Block(x) => &mut x.attrs,
        Expr::Break(x) => &mut x.attrs,
        Expr::Call(x) => &mut x.attrs,
        Expr::Cast(x) => &mut x.attrs,
        Expr::Closure(x) => &mut x.attrs,
        Expr::Const(x) => &mut x.attrs,
        Expr::Continue(x) => &mut x.attrs,
        Expr::Field(x) => &mut x.attrs,
        Expr::ForLoop(x) => &mut x.attrs,
        Expr::Group(x) => &mut x.attrs,
        Expr::If(x) => &mut x.attrs,
        Expr::Index(x) => &mut x.attrs,
        Expr::Infer(x) => &mut x.attrs,
        Expr::Let(x) => &mut x.attrs,
        Expr::Lit(x) => &mut x.attrs,
        Expr::Loop(x) => &mut x.attrs,
        Expr::Macro(x) => &mut x.attrs,
        Expr::Match(x) => &mut x.attrs,
        Expr::MethodCall(x) => &mut x.attrs,
        Expr::Paren(x) => &mut x.attrs,
        Expr::Path(x) => &mut x.attrs,
        Expr::Range(x) => &mut x.attrs,
        Expr::RawAddr(x) => &mut x.attrs,
        Expr::Reference(x) => &mut x.attrs,
        Expr::Repeat(x) => &mut x.attrs,
        Expr::Return(x) => &mut x.attrs,
        Expr::Struct(x) => &mut x.attrs,
        Expr::Try(x) => &mut x.attrs,
        Expr::TryBlock(x) => &mut x.attrs,
        Expr::Tuple(x) => &mut x.attrs,
        Expr::Unary(x) => &mut x.attrs,
        Expr::Unsafe(x) => &mut x.attrs,
        Expr::While(x) => &mut x.attrs,
        Expr::Yield(x) => &mut x.attrs,
        _ => return None,
    })
}

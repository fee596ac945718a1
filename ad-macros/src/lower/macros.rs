//! The macros a body may use: `vec![v; n]` (and `vec![vec![v; m]; n]`) as new buffers,
//! and `assert!`, `assert_eq!`-style statements.

use super::*;
use syn::Expr;

impl Lowerer<'_> {
    pub(super) fn lower_macro_stmt(&mut self, mac: &syn::Macro) -> LResult<()> {
        if self.lower_internal_macro(mac, false)?.is_some() {
            return Ok(());
        }
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        match name.as_str() {
            "assert" | "debug_assert" => {
                let args = mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )?;
                let mut it = args.iter();
                let cond_expr = it
                    .next()
                    .ok_or_else(|| syn::Error::new_spanned(mac, "assert! needs a condition"))?;
                let cond = self.lower_expr(cond_expr)?;
                self.expect_ty(cond, Ty::Bool, cond_expr, "an assert! condition")?;
                let message = if args.len() > 1 {
                    args.iter()
                        .skip(1)
                        .map(|a| a.to_token_stream().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                } else {
                    format!(
                        "\"assertion failed: {}\"",
                        cond_expr.to_token_stream().to_string().replace('"', "\\\"")
                    )
                };
                self.b.stmt(InstKind::Assert {
                    cond,
                    message: Code::parse(&message),
                });
                Ok(())
            }
            "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => {
                let args = mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )?;
                if args.len() < 2 {
                    return Err(syn::Error::new_spanned(mac, "assert_eq! needs two values"));
                }
                let a = self.lower_expr(&args[0])?;
                let b = self.lower_expr(&args[1])?;
                let op = if name.ends_with("_eq") {
                    BinOp::Eq
                } else {
                    BinOp::Ne
                };
                let cond = self.checked_binary(op, a, b, &args[0])?;
                let message = format!("\"{} failed\"", name);
                self.b.stmt(InstKind::Assert {
                    cond,
                    message: Code::parse(&message),
                });
                Ok(())
            }
            _ => Err(self.error(
                mac,
                &format!("{name}!"),
                "this macro is not supported (supported: `vec!` in `let`, `assert!`, `assert_eq!`)",
            )),
        }
    }

    /// `vec![v; n]`, `vec![vec![v; m]; n]`, `x.to_vec()`, `x.clone()`: a new local buffer.
    pub(super) fn try_lower_new_buffer(&mut self, e: &Expr) -> LResult<Option<Buf>> {
        match e {
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                let (fill, dims) = self.parse_vec_macro(&m.mac)?;
                let v = self.lower_expr(&fill)?;
                let mut dv = Vec::new();
                for d in &dims {
                    let x = self.lower_expr(d)?;
                    self.expect_ty(x, Ty::Int, d, "a `vec!` length")?;
                    dv.push(x);
                }
                let buf = self.b.func.new_buf(BufData {
                    name: "vec".into(),
                    rank: dims.len() as u8,
                    elem: self.ty(v),
                    kind: BufKind::Local,
                });
                if self.ty(v) == Ty::Bool {
                    return Err(self.error(m, "vec![bool]", "buffers hold floats or integers"));
                }
                self.b.stmt(InstKind::Alloc {
                    buf,
                    dims: dv,
                    init: AllocInit::Fill(v),
                });
                Ok(Some(buf))
            }
            Expr::MethodCall(mc)
                if (mc.method == "to_vec" || mc.method == "clone") && mc.args.is_empty() =>
            {
                let Ok(src) = self.lower_buf_ref(&mc.receiver) else {
                    return Ok(None);
                };
                let data = self.b.func.buf(src).clone();
                let buf = self.b.func.new_buf(BufData {
                    name: "copy".into(),
                    kind: BufKind::Local,
                    ..data
                });
                self.b.stmt(InstKind::Alloc {
                    buf,
                    dims: vec![],
                    init: AllocInit::Copy(src),
                });
                Ok(Some(buf))
            }
            // A local array `[v; n]` (`[[v; m]; n]`) is held like `vec![v; n]`: the same
            // values, on the heap.
            Expr::Repeat(r) => {
                let as_vec = repeat_as_vec(r);
                self.try_lower_new_buffer(&as_vec)
            }
            Expr::Paren(p) => self.try_lower_new_buffer(&p.expr),
            _ => Ok(None),
        }
    }

    /// `vec![vec![v; m]; n]` → (v, [n, m]).
    fn parse_vec_macro(&self, mac: &syn::Macro) -> LResult<(Expr, Vec<Expr>)> {
        let parsed: VecMacro = mac.parse_body().map_err(|_| {
            self.error(
                mac,
                "vec![..]",
                "only the `vec![value; length]` form is supported",
            )
        })?;
        match &parsed.fill {
            Expr::Macro(inner) if inner.mac.path.is_ident("vec") => {
                let (fill, mut dims) = self.parse_vec_macro(&inner.mac)?;
                dims.insert(0, parsed.len);
                if dims.len() > 3 {
                    return Err(self.error(
                        mac,
                        "vec![..]",
                        "buffers have at most three dimensions",
                    ));
                }
                Ok((fill, dims))
            }
            _ => Ok((parsed.fill, vec![parsed.len])),
        }
    }
}

/// `[v; n]` as `vec![v; n]`, nested repeats as nested `vec!`s.
fn repeat_as_vec(r: &syn::ExprRepeat) -> Expr {
    let fill = match &*r.expr {
        Expr::Repeat(inner) => repeat_as_vec(inner),
        other => other.clone(),
    };
    let len = &r.len;
    syn::parse_quote_spanned!(syn::spanned::Spanned::span(r)=> vec![#fill; #len])
}

struct VecMacro {
    fill: Expr,
    len: Expr,
}

impl syn::parse::Parse for VecMacro {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let fill = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        let len = input.parse()?;
        Ok(VecMacro { fill, len })
    }
}

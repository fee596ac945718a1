//! Named constants: `const`/`static` items of the function's module (read from its source
//! file, as `missing_rule` reads it), `const` items inside the body, the standard float
//! constants by their bare names (`PI` after `use std::f64::consts::PI`), and a const
//! generic `N` that is the length of an array parameter. A scalar constant is its
//! expression, lowered where it is read (a passive value); a table (`const W: [f64; 5]`,
//! 1-D or 2-D) is a local buffer filled at the function's entry.

use super::*;
use std::collections::HashMap;
use syn::Expr;

/// A `const NAME: TY = EXPR;` (or `static`).
#[derive(Clone)]
pub struct ConstItem {
    pub ty: syn::Type,
    pub expr: Expr,
}

/// The constants a function's body may name.
#[derive(Clone, Default)]
pub struct Constants {
    items: HashMap<String, ConstItem>,
}

impl Constants {
    /// The `const` and `static` items of the module of `item` in `source` (the file), then
    /// of the file's top level.
    pub fn from_source(item: &syn::ItemFn, source: Option<&str>) -> Constants {
        let mut c = Constants::default();
        let Some(file) = source.and_then(|s| syn::parse_file(s).ok()) else {
            return c;
        };
        let mut add = |items: &[syn::Item]| {
            for it in items {
                let (name, ty, expr) = match it {
                    syn::Item::Const(k) => (&k.ident, &*k.ty, &*k.expr),
                    syn::Item::Static(s) if matches!(s.mutability, syn::StaticMutability::None) => {
                        (&s.ident, &*s.ty, &*s.expr)
                    }
                    _ => continue,
                };
                c.items.entry(name.to_string()).or_insert(ConstItem {
                    ty: ty.clone(),
                    expr: expr.clone(),
                });
            }
        };
        if let Some(module) =
            crate::missing_rule::module_of(&file.items, &item.sig.ident.to_string())
        {
            add(module);
        }
        add(&file.items);
        c
    }

    pub fn get(&self, name: &str) -> Option<&ConstItem> {
        self.items.get(name)
    }

    pub fn insert(&mut self, name: String, item: ConstItem) {
        self.items.insert(name, item);
    }

    /// The array constants among `names`, in order.
    pub fn tables<'a>(&'a self, names: &[String]) -> Vec<(&'a str, &'a ConstItem)> {
        let mut out: Vec<(&str, &ConstItem)> = self
            .items
            .iter()
            .filter(|(n, c)| names.contains(n) && matches!(c.ty, syn::Type::Array(_)))
            .map(|(n, c)| (n.as_str(), c))
            .collect();
        out.sort_by_key(|(n, _)| *n);
        out
    }
}

/// The value of a standard float constant named `name` (`PI`, `FRAC_1_SQRT_2`, ...).
pub fn std_float(name: &str) -> Option<f64> {
    use std::f64::consts as c;
    Some(match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "SQRT_2" => c::SQRT_2,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "LOG2_10" => c::LOG2_10,
        "LOG10_2" => c::LOG10_2,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        _ => return None,
    })
}

/// Every identifier in `tokens`, at any depth.
pub fn idents(tokens: proc_macro2::TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![tokens];
    while let Some(ts) = stack.pop() {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

impl Lowerer<'_> {
    /// The scalar constant `name`, lowered here; `None` if there is none by that name.
    pub(super) fn named_constant(
        &mut self,
        name: &str,
        at: &syn::ExprPath,
    ) -> LResult<Option<Value>> {
        let Some(c) = self.consts.get(name).cloned() else {
            return Ok(None);
        };
        if matches!(c.ty, syn::Type::Array(_)) {
            return Err(self.error(at, name, "a constant table is read by element (`TABLE[k]`)"));
        }
        if self.const_depth > 16 {
            return Err(self.error(at, name, "the constant is defined in terms of itself"));
        }
        self.const_depth += 1;
        let v = self.lower_expr(&c.expr);
        self.const_depth -= 1;
        let v = v?;
        match (self.declared_ty(&c.ty), self.ty(v)) {
            (Some(Ty::Float), Ty::Int) => Ok(Some(self.b.value(
                InstKind::Cast {
                    value: v,
                    to: Ty::Float,
                    rust_ty: None,
                },
                Ty::Float,
            ))),
            _ => Ok(Some(v)),
        }
    }

    /// A `const` item in the body: a scalar is named from here on; a table is filled now.
    pub(super) fn const_item(&mut self, k: &syn::ItemConst) -> LResult<()> {
        let name = k.ident.to_string();
        let item = ConstItem {
            ty: (*k.ty).clone(),
            expr: (*k.expr).clone(),
        };
        if matches!(item.ty, syn::Type::Array(_)) {
            let buf = self.fill_table(&name, &item)?;
            self.env.bind(&name, Binding::Buf(buf));
        } else {
            self.consts.insert(name, item);
        }
        Ok(())
    }

    /// A local buffer holding the constant table `item` (`[a, b, ..]`, `[[..], [..]]`, or
    /// `[v; n]`).
    pub(super) fn fill_table(&mut self, name: &str, item: &ConstItem) -> LResult<Buf> {
        let rows: Vec<Vec<&Expr>> = match &item.expr {
            Expr::Array(a) if a.elems.iter().all(|e| matches!(e, Expr::Array(_))) => a
                .elems
                .iter()
                .map(|e| match e {
                    Expr::Array(r) => r.elems.iter().collect(),
                    _ => unreachable!("checked"),
                })
                .collect(),
            Expr::Array(a) => vec![a.elems.iter().collect()],
            other => return Err(self.error(
                other,
                name,
                "a constant table is written as an array literal (`[a, b, ..]` or rows of them)",
            )),
        };
        let two_d = matches!(&item.expr, Expr::Array(a) if a.elems.iter().all(|e| matches!(e, Expr::Array(_))) && !a.elems.is_empty());
        let mut values = Vec::new();
        for row in &rows {
            let mut vs = Vec::new();
            for e in row {
                vs.push(self.lower_expr(e)?);
            }
            values.push(vs);
        }
        let elem = match values.iter().flatten().next() {
            Some(v) => self.ty(*v),
            None => Ty::Float,
        };
        let buf = self.b.func.new_buf(BufData {
            name: name.to_lowercase(),
            rank: if two_d { 2 } else { 1 },
            elem,
            kind: BufKind::Local,
        });
        let zero = self.b.zero(elem);
        let dims = if two_d {
            let width = values.first().map_or(0, |r| r.len());
            vec![
                self.b.iconst(values.len() as i128),
                self.b.iconst(width as i128),
            ]
        } else {
            vec![self.b.iconst(values[0].len() as i128)]
        };
        self.b.stmt(InstKind::Alloc {
            buf,
            dims,
            init: AllocInit::Fill(zero),
        });
        for (i, row) in values.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let mut idx = Vec::new();
                if two_d {
                    idx.push(self.b.iconst(i as i128));
                }
                idx.push(self.b.iconst(j as i128));
                self.b.store(buf, idx, *v);
            }
        }
        Ok(buf)
    }
}

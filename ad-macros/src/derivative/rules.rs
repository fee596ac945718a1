//! The derivative rules of float methods, kept as data: each partial derivative is a Rust
//! expression over the arguments `a`, `b`, `c` and the result `r`, parsed and lowered into
//! the derivative program where it is needed (as Enzyme keeps its rules in a table).
//! Non-smooth points follow one convention: `abs'(0) = 0`, `max`/`min` send the adjoint to
//! the first argument on ties, rounding functions and comparisons have zero derivative.
//! With a NaN argument they agree with `f64` and with `ad_core::nonsmooth`: `max`/`min`
//! send the adjoint to the argument they return (the non-NaN one; `b == b` is false only
//! for NaN), and `abs'(NaN)` is NaN.

use crate::ir::builder::Builder;
use crate::ir::*;

pub struct Rule {
    pub name: &'static str,
    /// Number of arguments including the receiver.
    pub arity: usize,
    /// The argument that is an integer (`powi`'s exponent), which has no partial.
    pub int_arg: Option<usize>,
    /// One partial per float argument, in argument order.
    pub partials: &'static [&'static str],
}

const fn r(name: &'static str, arity: usize, partials: &'static [&'static str]) -> Rule {
    Rule {
        name,
        arity,
        int_arg: None,
        partials,
    }
}

pub static RULES: &[Rule] = &[
    r("sin", 1, &["a.cos()"]),
    r("cos", 1, &["-a.sin()"]),
    r("tan", 1, &["1.0 + r * r"]),
    r("asin", 1, &["1.0 / (1.0 - a * a).sqrt()"]),
    r("acos", 1, &["-1.0 / (1.0 - a * a).sqrt()"]),
    r("atan", 1, &["1.0 / (1.0 + a * a)"]),
    r("sinh", 1, &["a.cosh()"]),
    r("cosh", 1, &["a.sinh()"]),
    r("tanh", 1, &["1.0 - r * r"]),
    r("asinh", 1, &["1.0 / (a * a + 1.0).sqrt()"]),
    r("acosh", 1, &["1.0 / (a * a - 1.0).sqrt()"]),
    r("atanh", 1, &["1.0 / (1.0 - a * a)"]),
    r("exp", 1, &["r"]),
    r("exp2", 1, &["r * 0.6931471805599453"]),
    r("exp_m1", 1, &["r + 1.0"]),
    r("ln", 1, &["1.0 / a"]),
    r("log10", 1, &["1.0 / (a * 2.302585092994046)"]),
    r("log2", 1, &["1.0 / (a * 0.6931471805599453)"]),
    r("ln_1p", 1, &["1.0 / (1.0 + a)"]),
    r("log", 2, &["1.0 / (a * b.ln())", "-r / (b * b.ln())"]),
    r("sqrt", 1, &["0.5 / r"]),
    r("cbrt", 1, &["r / (3.0 * a)"]),
    r("recip", 1, &["-(r * r)"]),
    r(
        "abs",
        1,
        &["if a > 0.0 { 1.0 } else if a < 0.0 { -1.0 } else if a == a { 0.0 } else { a }"],
    ),
    r("signum", 1, &["0.0"]),
    r("floor", 1, &["0.0"]),
    r("ceil", 1, &["0.0"]),
    r("round", 1, &["0.0"]),
    r("trunc", 1, &["0.0"]),
    Rule {
        name: "powi",
        arity: 2,
        int_arg: Some(1),
        partials: &["float(b) * a.powi(b - 1)"],
    },
    r(
        "powf",
        2,
        &[
            "b * a.powf(b - 1.0)",
            "if a == 0.0 { 0.0 } else { r * a.ln() }",
        ],
    ),
    r("atan2", 2, &["b / (a * a + b * b)", "-a / (a * a + b * b)"]),
    r("hypot", 2, &["a / r", "b / r"]),
    r(
        "max",
        2,
        &[
            "if a >= b { 1.0 } else if b == b { 0.0 } else { 1.0 }",
            "if a >= b { 0.0 } else if b == b { 1.0 } else { 0.0 }",
        ],
    ),
    r(
        "min",
        2,
        &[
            "if a <= b { 1.0 } else if b == b { 0.0 } else { 1.0 }",
            "if a <= b { 0.0 } else if b == b { 1.0 } else { 0.0 }",
        ],
    ),
    r("mul_add", 3, &["b", "a", "1.0"]),
];

pub fn find(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}

pub fn supported_list() -> String {
    let names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
    format!("float methods with rules: {}", names.join(", "))
}

/// The float arguments of a call of `rule` paired with their partial-derivative templates.
pub fn partials_of(rule: &Rule, args: &[Value]) -> Vec<(usize, &'static str)> {
    partial_templates(rule, args.len())
}

/// The partial templates of a call of `rule` with `n_args` arguments, each with the
/// position of the float argument it differentiates.
pub fn partial_templates(rule: &Rule, n_args: usize) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    let mut p = rule.partials.iter();
    for k in 0..n_args {
        if rule.int_arg == Some(k) {
            continue;
        }
        out.push((k, *p.next().expect("a partial per float argument")));
    }
    out
}

/// What a rule template is lowered into: IR instructions (`Builder`, the per-operation
/// paths) or symbolic nodes (`symbolic::Expr`, coarsened segments). One walker,
/// [`lower_template`], serves both.
pub trait TemplateSink {
    type V: Copy;
    fn fconst(&mut self, c: f64) -> Self::V;
    fn iconst(&mut self, c: i128) -> Self::V;
    fn neg(&mut self, a: Self::V) -> Self::V;
    fn binary(&mut self, op: BinOp, a: Self::V, b: Self::V) -> Self::V;
    fn math(&mut self, name: &'static str, args: Vec<Self::V>) -> Self::V;
    /// `float(n)`: an integer argument as a float.
    fn int_to_float(&mut self, a: Self::V) -> Self::V;
    /// `if cond { then } else { otherwise }`, each arm evaluated only where it is taken.
    fn select(
        &mut self,
        cond: Self::V,
        then: &mut dyn FnMut(&mut Self) -> Self::V,
        otherwise: &mut dyn FnMut(&mut Self) -> Self::V,
    ) -> Self::V;
}

/// Lowers the partial-derivative template `template` with `a`, `b`, `c` bound to `args`
/// and `r` to `result`.
pub fn lower_template<S: TemplateSink>(
    s: &mut S,
    template: &str,
    args: &[S::V],
    result: S::V,
) -> S::V {
    let expr: syn::Expr = syn::parse_str(template).expect("rule templates are valid Rust");
    walk(s, &expr, args, result)
}

fn walk<S: TemplateSink>(s: &mut S, e: &syn::Expr, args: &[S::V], r: S::V) -> S::V {
    use syn::Expr;
    match e {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Float(f) => s.fconst(f.base10_parse().expect("float literal")),
            syn::Lit::Int(i) => s.iconst(i.base10_parse().expect("int literal")),
            _ => unreachable!("rule template literal"),
        },
        Expr::Path(p) => match p.path.get_ident().map(|i| i.to_string()).as_deref() {
            Some("a") => args[0],
            Some("b") => args[1],
            Some("c") => args[2],
            Some("r") => r,
            other => unreachable!("rule template name {other:?}"),
        },
        Expr::Paren(p) => walk(s, &p.expr, args, r),
        Expr::Unary(u) => {
            let a = walk(s, &u.expr, args, r);
            s.neg(a)
        }
        Expr::Binary(bin) => {
            let x = walk(s, &bin.left, args, r);
            let y = walk(s, &bin.right, args, r);
            let op = match bin.op {
                syn::BinOp::Add(_) => BinOp::Add,
                syn::BinOp::Sub(_) => BinOp::Sub,
                syn::BinOp::Mul(_) => BinOp::Mul,
                syn::BinOp::Div(_) => BinOp::Div,
                syn::BinOp::Gt(_) => BinOp::Gt,
                syn::BinOp::Lt(_) => BinOp::Lt,
                syn::BinOp::Ge(_) => BinOp::Ge,
                syn::BinOp::Le(_) => BinOp::Le,
                syn::BinOp::Eq(_) => BinOp::Eq,
                _ => unreachable!("rule template operator"),
            };
            s.binary(op, x, y)
        }
        Expr::MethodCall(m) => {
            let mut a = vec![walk(s, &m.receiver, args, r)];
            a.extend(m.args.iter().map(|x| walk(s, x, args, r)));
            let name = find(&m.method.to_string())
                .expect("rule template method")
                .name;
            s.math(name, a)
        }
        Expr::Call(c) => {
            let v = walk(s, &c.args[0], args, r);
            s.int_to_float(v)
        }
        Expr::If(i) => {
            let cond = walk(s, &i.cond, args, r);
            let otherwise = i.else_branch.as_ref().expect("else").1.as_ref();
            s.select(
                cond,
                &mut |s| walk_block(s, &i.then_branch, args, r),
                &mut |s| match otherwise {
                    Expr::Block(blk) => walk_block(s, &blk.block, args, r),
                    other => walk(s, other, args, r),
                },
            )
        }
        other => unreachable!("rule template form {}", quote::quote!(#other)),
    }
}

fn walk_block<S: TemplateSink>(s: &mut S, blk: &syn::Block, args: &[S::V], r: S::V) -> S::V {
    match blk.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => walk(s, e, args, r),
        _ => unreachable!("rule template block"),
    }
}

impl TemplateSink for Builder<'_> {
    type V = Value;
    fn fconst(&mut self, c: f64) -> Value {
        Builder::fconst(self, c)
    }
    fn iconst(&mut self, c: i128) -> Value {
        Builder::iconst(self, c)
    }
    fn neg(&mut self, a: Value) -> Value {
        Builder::neg(self, a)
    }
    fn binary(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        Builder::binary(self, op, a, b)
    }
    fn math(&mut self, name: &'static str, args: Vec<Value>) -> Value {
        Builder::math(self, name, args)
    }
    fn int_to_float(&mut self, a: Value) -> Value {
        let cast = InstKind::Cast {
            value: a,
            to: Ty::Float,
            int: None,
            float: None,
        };
        self.value(cast, Ty::Float)
    }
    fn select(
        &mut self,
        cond: Value,
        then: &mut dyn FnMut(&mut Self) -> Value,
        otherwise: &mut dyn FnMut(&mut Self) -> Value,
    ) -> Value {
        let then_blk = self.func.new_block();
        let else_blk = self.func.new_block();
        let tv = self.in_block(then_blk, |b| then(b));
        let ev = self.in_block(else_blk, |b| otherwise(b));
        self.set_yields(then_blk, vec![tv]);
        self.set_yields(else_blk, vec![ev]);
        let inst = self.push(
            InstKind::If {
                cond,
                then_blk,
                else_blk,
            },
            &[Ty::Float],
            None,
        );
        self.func.inst(inst).results[0]
    }
}

/// Emits the partial-derivative template into IR; returns the value of the partial.
pub fn emit_partial(b: &mut Builder, template: &str, args: &[Value], result: Value) -> Value {
    lower_template(b, template, args, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_and_has_one_partial_per_float_argument() {
        for rule in RULES {
            let floats = rule.arity - rule.int_arg.map_or(0, |_| 1);
            assert_eq!(rule.partials.len(), floats, "{}", rule.name);
            for t in rule.partials {
                let mut f = Function::new("t");
                let body = f.body;
                let mut b = Builder::new(&mut f, body);
                let args: Vec<Value> = (0..rule.arity)
                    .map(|k| {
                        if rule.int_arg == Some(k) {
                            b.iconst(2)
                        } else {
                            b.fconst(0.5)
                        }
                    })
                    .collect();
                let res = b.fconst(0.25);
                let v = emit_partial(&mut b, t, &args, res);
                assert_eq!(b.func.ty(v), Ty::Float, "{}: {t}", rule.name);
            }
        }
    }
}

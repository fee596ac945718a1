//! The derivative rules of float methods, kept as data: each partial derivative is a Rust
//! expression over the arguments `a`, `b`, `c` and the result `r`, parsed and lowered into
//! the derivative program where it is needed (as Enzyme keeps its rules in a table).
//! Non-smooth points follow one convention: `abs'(0) = 0`, `max`/`min` send the adjoint to
//! the first argument on ties, rounding functions and comparisons have zero derivative.

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
        &["if a > 0.0 { 1.0 } else if a < 0.0 { -1.0 } else { 0.0 }"],
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
            "if a >= b { 1.0 } else { 0.0 }",
            "if a >= b { 0.0 } else { 1.0 }",
        ],
    ),
    r(
        "min",
        2,
        &[
            "if a <= b { 1.0 } else { 0.0 }",
            "if a <= b { 0.0 } else { 1.0 }",
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

/// The IR operator of a rule template's binary operator.
pub fn template_op(op: &syn::BinOp) -> BinOp {
    match op {
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
    }
}

/// Emits the partial-derivative template `template` with `a`, `b`, `c` bound to `args`
/// and `r` to `result`; returns the value of the partial.
pub fn emit_partial(b: &mut Builder, template: &str, args: &[Value], result: Value) -> Value {
    let expr: syn::Expr = syn::parse_str(template).expect("rule templates are valid Rust");
    Template { args, result }.emit(b, &expr)
}

struct Template<'a> {
    args: &'a [Value],
    result: Value,
}

impl Template<'_> {
    fn emit(&self, b: &mut Builder, e: &syn::Expr) -> Value {
        use syn::Expr;
        match e {
            Expr::Lit(l) => match &l.lit {
                syn::Lit::Float(f) => b.fconst(f.base10_parse().expect("float literal")),
                syn::Lit::Int(i) => b.iconst(i.base10_parse().expect("int literal")),
                _ => unreachable!("rule template literal"),
            },
            Expr::Path(p) => match p.path.get_ident().map(|i| i.to_string()).as_deref() {
                Some("a") => self.args[0],
                Some("b") => self.args[1],
                Some("c") => self.args[2],
                Some("r") => self.result,
                other => unreachable!("rule template name {other:?}"),
            },
            Expr::Paren(p) => self.emit(b, &p.expr),
            Expr::Unary(u) => {
                let a = self.emit(b, &u.expr);
                b.neg(a)
            }
            Expr::Binary(bin) => {
                let x = self.emit(b, &bin.left);
                let y = self.emit(b, &bin.right);
                b.binary(template_op(&bin.op), x, y)
            }
            Expr::MethodCall(m) => {
                let mut args = vec![self.emit(b, &m.receiver)];
                args.extend(m.args.iter().map(|a| self.emit(b, a)));
                let name = find(&m.method.to_string())
                    .expect("rule template method")
                    .name;
                b.math(name, args)
            }
            Expr::Call(c) => {
                // `float(n)`: an integer argument as a float.
                let v = self.emit(b, &c.args[0]);
                b.value(
                    InstKind::Cast {
                        value: v,
                        to: Ty::Float,
                        rust_ty: None,
                    },
                    Ty::Float,
                )
            }
            Expr::If(i) => {
                let cond = self.emit(b, &i.cond);
                let then_blk = b.func.new_block();
                let else_blk = b.func.new_block();
                let tv = b.in_block(then_blk, |b| self.emit_block(b, &i.then_branch));
                let ev = b.in_block(else_blk, |b| {
                    match &i.else_branch.as_ref().expect("else").1.as_ref() {
                        Expr::Block(blk) => self.emit_block(b, &blk.block),
                        other => self.emit(b, other),
                    }
                });
                b.set_yields(then_blk, vec![tv]);
                b.set_yields(else_blk, vec![ev]);
                let inst = b.push(
                    InstKind::If {
                        cond,
                        then_blk,
                        else_blk,
                    },
                    &[Ty::Float],
                    None,
                );
                b.func.inst(inst).results[0]
            }
            other => unreachable!("rule template form {}", quote::quote!(#other)),
        }
    }

    fn emit_block(&self, b: &mut Builder, blk: &syn::Block) -> Value {
        match blk.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => self.emit(b, e),
            _ => unreachable!("rule template block"),
        }
    }
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

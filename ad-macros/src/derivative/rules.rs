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

/// The arithmetic operators' rules, in the same language. Their partials are applied to a
/// seed (a tangent, an adjoint) by [`scaled`] as `±factor / divisor`: forward mode sums
/// its terms over one divisor, `(dx − dy·r) / y`; an adjoint is `−g · (r / y)`, whose
/// quotient is a primal value (computed once for all lanes of a batched sweep).
pub static OPERATORS: &[Rule] = &[
    r("neg", 1, &["-1.0"]),
    r("add", 2, &["1.0", "1.0"]),
    r("sub", 2, &["1.0", "-1.0"]),
    r("mul", 2, &["b", "a"]),
    // ∂(a/b)/∂b = −(a/b)/b from the quotient itself: no b² to overflow.
    r("div", 2, &["1.0 / b", "-r / b"]),
];

fn operator(name: &str) -> &'static Rule {
    OPERATORS
        .iter()
        .find(|r| r.name == name)
        .expect("an operator rule")
}

/// The rule of a float instruction that is an arithmetic operator; `None` for one with no
/// derivative (a comparison, `%`) or that is not arithmetic.
pub fn of_operator(kind: &InstKind) -> Option<(&'static Rule, Vec<Value>)> {
    match kind {
        InstKind::Unary(op, a) => of_unary(*op).map(|r| (r, vec![*a])),
        InstKind::Binary(op, a, b) => of_binary(*op).map(|r| (r, vec![*a, *b])),
        _ => None,
    }
}

pub fn of_unary(op: UnOp) -> Option<&'static Rule> {
    matches!(op, UnOp::Neg).then(|| operator("neg"))
}

pub fn of_binary(op: BinOp) -> Option<&'static Rule> {
    match op {
        BinOp::Add => Some(operator("add")),
        BinOp::Sub => Some(operator("sub")),
        BinOp::Mul => Some(operator("mul")),
        BinOp::Div => Some(operator("div")),
        _ => None,
    }
}

pub fn find(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}

pub fn supported_list() -> String {
    let names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
    format!("float methods with rules: {}", names.join(", "))
}

/// The float arguments of a call of `rule` (their positions in `args`) paired with their
/// partial-derivative templates.
pub fn partials_of<V>(rule: &Rule, args: &[V]) -> Vec<(usize, &'static str)> {
    let mut p = rule.partials.iter();
    (0..args.len())
        .filter(|k| rule.int_arg != Some(*k))
        .map(|k| (k, *p.next().expect("a partial per float argument")))
        .collect()
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

/// `seed · p` for an operator's partial `p = ±factor / den`, kept apart so that each mode
/// can apply it as it is cheapest: forward mode sums its terms over one divisor
/// ([`sum`]); an adjoint is `seed · (factor / den)`, whose quotient is a primal value
/// ([`Term::finish`]).
pub struct Term<V> {
    pub negated: bool,
    pub seed: V,
    /// `None` for 1.
    pub factor: Option<V>,
    pub den: Option<V>,
}

impl<V: Copy> Term<V> {
    /// `seed · factor`, `±` and the divisor left out.
    fn numerator<S: TemplateSink<V = V>>(&self, s: &mut S) -> V {
        match self.factor {
            Some(p) => s.binary(BinOp::Mul, self.seed, p),
            None => self.seed,
        }
    }

    /// `±seed · (factor / den)` as one value: `seed / den` when the factor is 1.
    pub fn finish<S: TemplateSink<V = V>>(self, s: &mut S) -> V {
        let v = match (self.factor, self.den) {
            (Some(p), Some(q)) => {
                let pq = s.binary(BinOp::Div, p, q);
                s.binary(BinOp::Mul, self.seed, pq)
            }
            (None, Some(q)) => s.binary(BinOp::Div, self.seed, q),
            _ => self.numerator(s),
        };
        if self.negated {
            s.neg(v)
        } else {
            v
        }
    }
}

/// `seed · template` for an operator's partial, read as `±factor / den` (a `1.0` factor is
/// left out).
pub fn scaled<S: TemplateSink>(
    s: &mut S,
    seed: S::V,
    template: &str,
    args: &[S::V],
    result: S::V,
) -> Term<S::V> {
    let expr: syn::Expr = syn::parse_str(template).expect("rule templates are valid Rust");
    let (negated, factor, den) = split_partial(s, &expr, args, result);
    Term {
        negated,
        seed,
        factor,
        den,
    }
}

/// A partial as (negated, factor, divisor), `None` for 1.
fn split_partial<S: TemplateSink>(
    s: &mut S,
    e: &syn::Expr,
    args: &[S::V],
    r: S::V,
) -> (bool, Option<S::V>, Option<S::V>) {
    use syn::Expr;
    match e {
        Expr::Paren(p) => split_partial(s, &p.expr, args, r),
        Expr::Lit(l) if matches!(&l.lit, syn::Lit::Float(f) if f.base10_digits() == "1.0") => {
            (false, None, None)
        }
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
            let (negated, factor, den) = split_partial(s, &u.expr, args, r);
            (!negated, factor, den)
        }
        Expr::Binary(bin) if matches!(bin.op, syn::BinOp::Div(_)) => {
            let (negated, factor, den) = split_partial(s, &bin.left, args, r);
            assert!(den.is_none(), "operator partials divide once");
            (negated, factor, Some(walk(s, &bin.right, args, r)))
        }
        other => (false, Some(walk(s, other, args, r)), None),
    }
}

/// The sum of signed terms (`a − b` rather than `a + (−b)`), divided once when every term
/// has the same divisor; `None` for no terms.
pub fn sum<S: TemplateSink>(s: &mut S, terms: Vec<Term<S::V>>) -> Option<S::V>
where
    S::V: PartialEq,
{
    let den = terms.first()?.den;
    let shared = den.is_some() && terms.iter().all(|t| t.den == den);
    let mut acc: Option<S::V> = None;
    for t in terms {
        let negated = t.negated;
        let v = if shared {
            t.numerator(s)
        } else {
            Term {
                negated: false,
                ..t
            }
            .finish(s)
        };
        acc = Some(match (acc, negated) {
            (None, false) => v,
            (None, true) => s.neg(v),
            (Some(a), false) => s.binary(BinOp::Add, a, v),
            (Some(a), true) => s.binary(BinOp::Sub, a, v),
        });
    }
    let v = acc?;
    Some(match den.filter(|_| shared) {
        Some(d) => s.binary(BinOp::Div, v, d),
        None => v,
    })
}

/// Which of `a`, `b`, `c` and `r` (in that order) `template` reads.
pub fn reads(template: &str) -> [bool; 4] {
    let mut out = [false; 4];
    for tok in template.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
        match tok {
            "a" => out[0] = true,
            "b" => out[1] = true,
            "c" => out[2] = true,
            "r" => out[3] = true,
            _ => {}
        }
    }
    out
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

    /// Evaluates templates on numbers, to check the rules against finite differences.
    struct Eval;

    impl TemplateSink for Eval {
        type V = f64;
        fn fconst(&mut self, c: f64) -> f64 {
            c
        }
        fn iconst(&mut self, c: i128) -> f64 {
            c as f64
        }
        fn neg(&mut self, a: f64) -> f64 {
            -a
        }
        fn binary(&mut self, op: BinOp, a: f64, b: f64) -> f64 {
            let t = |c: bool| if c { 1.0 } else { 0.0 };
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Gt => t(a > b),
                BinOp::Lt => t(a < b),
                BinOp::Ge => t(a >= b),
                BinOp::Le => t(a <= b),
                BinOp::Eq => t(a == b),
                other => panic!("{other:?} in a template"),
            }
        }
        fn math(&mut self, name: &'static str, args: Vec<f64>) -> f64 {
            apply(name, &args)
        }
        fn int_to_float(&mut self, a: f64) -> f64 {
            a
        }
        fn select(
            &mut self,
            cond: f64,
            then: &mut dyn FnMut(&mut Self) -> f64,
            otherwise: &mut dyn FnMut(&mut Self) -> f64,
        ) -> f64 {
            if cond != 0.0 {
                then(self)
            } else {
                otherwise(self)
            }
        }
    }

    /// The operation a rule differentiates, on `f64` (Rust's own, not the rules').
    fn apply(name: &str, x: &[f64]) -> f64 {
        let a = x[0];
        let b = x.get(1).copied().unwrap_or(0.0);
        match name {
            "neg" => -a,
            "add" => a + b,
            "sub" => a - b,
            "mul" => a * b,
            "div" => a / b,
            "sin" => a.sin(),
            "cos" => a.cos(),
            "tan" => a.tan(),
            "asin" => a.asin(),
            "acos" => a.acos(),
            "atan" => a.atan(),
            "sinh" => a.sinh(),
            "cosh" => a.cosh(),
            "tanh" => a.tanh(),
            "asinh" => a.asinh(),
            "acosh" => a.acosh(),
            "atanh" => a.atanh(),
            "exp" => a.exp(),
            "exp2" => a.exp2(),
            "exp_m1" => a.exp_m1(),
            "ln" => a.ln(),
            "log10" => a.log10(),
            "log2" => a.log2(),
            "ln_1p" => a.ln_1p(),
            "log" => a.log(b),
            "sqrt" => a.sqrt(),
            "cbrt" => a.cbrt(),
            "recip" => a.recip(),
            "abs" => a.abs(),
            "signum" => a.signum(),
            "floor" => a.floor(),
            "ceil" => a.ceil(),
            "round" => a.round(),
            "trunc" => a.trunc(),
            "powi" => a.powi(b as i32),
            "powf" => a.powf(b),
            "atan2" => a.atan2(b),
            "hypot" => a.hypot(b),
            "max" => a.max(b),
            "min" => a.min(b),
            "mul_add" => a.mul_add(b, x[2]),
            other => panic!("no evaluator for {other}"),
        }
    }

    /// Central differences of `rule`'s operation at `x` in its float arguments, and the
    /// partials its templates give there: as a plain product (`g · p`, the methods) and as
    /// the operators apply them ([`scaled`], and forward mode's [`sum`] of one tangent).
    fn check_rule(rule: &Rule, x: &[f64]) {
        let r = apply(rule.name, x);
        for (k, template) in partials_of(rule, x) {
            let h = 1e-6 * x[k].abs().max(1.0);
            let (mut hi, mut lo) = (x.to_vec(), x.to_vec());
            hi[k] += h;
            lo[k] -= h;
            let fd = (apply(rule.name, &hi) - apply(rule.name, &lo)) / (2.0 * h);
            let p = lower_template(&mut Eval, template, x, r);
            let tol = 1e-6 * fd.abs().max(1.0);
            assert!(
                (p - fd).abs() <= tol,
                "{}'s partial {k} `{template}` at {x:?}: {p} against finite differences {fd}",
                rule.name
            );
            let seed = 0.75;
            let adjoint = scaled(&mut Eval, seed, template, x, r).finish(&mut Eval);
            let tangent = sum(&mut Eval, vec![scaled(&mut Eval, seed, template, x, r)]).unwrap();
            for (what, v) in [("adjoint", adjoint), ("tangent", tangent)] {
                assert!(
                    (v - seed * fd).abs() <= tol,
                    "{}'s partial {k} `{template}` applied as an {what}: {v}, not {}",
                    rule.name,
                    seed * fd
                );
            }
        }
    }

    #[test]
    fn rules_agree_with_finite_differences() {
        // Away from the non-smooth points (and inside every domain: `acosh` needs a > 1).
        let points: &[&[f64]] = &[&[1.3, 0.4, -0.7], &[2.2, -1.9, 0.5], &[1.05, 3.0, 2.0]];
        for rule in RULES.iter().chain(OPERATORS) {
            for x in points {
                let mut x = x[..rule.arity].to_vec();
                if matches!(rule.name, "asin" | "acos" | "atanh") {
                    x[0] = 0.3;
                }
                if rule.name == "powi" {
                    x[1] = 3.0;
                }
                if rule.name == "log" {
                    x[1] = x[1].abs() + 1.5;
                }
                check_rule(rule, &x);
            }
        }
    }

    #[test]
    fn forward_sums_over_one_divisor_and_adjoints_keep_the_quotient() {
        // d(x / y) with both tangents: `(dx − dy·r) / y`, one division.
        let (x, y) = (1.5, -0.6);
        let (dx, dy) = (0.3, 0.8);
        let r = x / y;
        let div = of_binary(BinOp::Div).unwrap();
        let terms = partials_of(div, &[x, y])
            .into_iter()
            .map(|(k, t)| scaled(&mut Eval, [dx, dy][k], t, &[x, y], r))
            .collect();
        assert_eq!(sum(&mut Eval, terms), Some((dx - dy * r) / y));
        // The adjoint of `y`: `−g · (r / y)`.
        let g = 0.9;
        let t = scaled(&mut Eval, g, div.partials[1], &[x, y], r);
        assert_eq!(t.factor, Some(r));
        assert_eq!(t.den, Some(y));
        assert_eq!(t.finish(&mut Eval), -(g * (r / y)));
        assert_eq!(reads(div.partials[1]), [false, true, false, true]);
        assert_eq!(reads("a.cos()"), [true, false, false, false]);
    }
}

//! A generator of small random Rust functions in phidiff's supported subset, for the
//! property test in `random_programs`. Every program is valid Rust that rustc accepts and
//! that runs without panicking for `2 <= n <= 5` and inputs in `[-1.5, 1.5]`: indices stay in
//! bounds by construction, loops terminate, square roots and divisions see positive
//! arguments. Magnitudes are kept moderate by tracking a bound on every expression and
//! squashing (`sin`, `tanh`, `cos`) whatever could grow, so finite differences stay accurate.

pub(super) mod parallel;
mod statements;

use std::collections::BTreeSet;
use std::fmt::Write;

/// SplitMix64: small, deterministic, and seedable per program so a failure is reproducible
/// from its number alone.
pub(super) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1_u64 << 53) as f64
    }
    /// Uniform in `[-r, r)`.
    pub fn symmetric(&mut self, r: f64) -> f64 {
        r * (2.0 * self.unit() - 1.0)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// How a parameter of a generated function is passed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Shape {
    /// `x: &[f64]` of length `n`.
    Slice,
    /// `a: f64`.
    Scalar,
    /// `n: usize`, the length of every slice.
    Len,
}

#[derive(Clone, Debug)]
pub(super) struct UserParam {
    pub name: String,
    pub shape: Shape,
}

/// The construct each program is built around; programs cycle through these, so each
/// kind gets the same share.
pub(super) const KINDS: [&str; 13] = [
    "straight_line",
    "if_stmt",
    "if_expr",
    "for_carried",
    "for_rev_step",
    "for_nested",
    "local_buffer",
    "while_counter",
    "loop_break",
    "break_in_for",
    "continue",
    "return_in_loop",
    "return_top",
];

pub(super) struct Program {
    pub src: String,
    pub params: Vec<UserParam>,
    pub kind: &'static str,
    /// Every construct that occurs in the program (the focus kind and the random filler's).
    pub features: BTreeSet<&'static str>,
}

/// Program number `number` of the property test: its kind cycles through `KINDS`, and the
/// generator that built it, returned with it, goes on to draw its test points.
pub(super) fn nth_program(number: usize) -> (Program, Rng) {
    let mut rng = Rng::new(0x00C0_FFEE_0000_0000 ^ number as u64);
    let program = generate(&mut rng, KINDS[number % KINDS.len()], number % 4 == 3);
    (program, rng)
}

/// Generates one program built around `kind` (one of `KINDS`).
/// A program of `kind`; `fallible`: returning `Option<f64>`, its result as `Some(..)`, some
/// of its loads as `*x.get(i)?` (never `None`: the indices are in bounds), which puts the
/// failure sites of fallible code inside every construct, and a few as `*x.get(3)?`, which
/// fail where `n <= 3`.
pub(super) fn generate(rng: &mut Rng, kind: &'static str, fallible: bool) -> Program {
    let params = signature(rng);
    let mut g = Gen {
        fallible,
        rng,
        out: String::new(),
        indent: 1,
        scopes: vec![Vec::new()],
        bufs: Vec::new(),
        scalars: Vec::new(),
        n_names: 0,
        left: 0,
        features: BTreeSet::new(),
    };
    for p in &params {
        match p.shape {
            Shape::Slice => g.bufs.push(BufVar {
                name: p.name.clone(),
                bound: 1.5,
            }),
            Shape::Scalar => g.scalars.push(p.name.clone()),
            Shape::Len => {}
        }
    }
    g.features.insert(kind);
    // Statements at top level and in bodies; loop heads, accumulators and the tail come on
    // top, so programs have about 5 to 25 statements in all.
    g.left = 4 + g.rng.below(15);
    let top = Ctx::top();
    let before = g.rng.below(g.left / 3 + 1);
    g.filler(&top, before, kind != "straight_line");
    g.focus(&top, kind);
    let after = g.left;
    g.filler(&top, after, kind != "straight_line");
    g.tail(&top, kind);
    let args: Vec<String> = params
        .iter()
        .map(|p| match p.shape {
            Shape::Slice => format!("{}: &[f64]", p.name),
            Shape::Scalar => format!("{}: f64", p.name),
            Shape::Len => format!("{}: usize", p.name),
        })
        .collect();
    let result = if g.fallible { "Option<f64>" } else { "f64" };
    let src = format!("fn f({}) -> {result} {{\n{}}}\n", args.join(", "), g.out);
    let features = g.features;
    Program {
        src,
        params,
        kind,
        features,
    }
}

/// One or two slices, one or two scalars and `n`, in a random order.
fn signature(rng: &mut Rng) -> Vec<UserParam> {
    let mut params = vec![UserParam {
        name: "x".into(),
        shape: Shape::Slice,
    }];
    if rng.chance(0.3) {
        params.push(UserParam {
            name: "y".into(),
            shape: Shape::Slice,
        });
    }
    params.push(UserParam {
        name: "a".into(),
        shape: Shape::Scalar,
    });
    if rng.chance(0.4) {
        params.push(UserParam {
            name: "b".into(),
            shape: Shape::Scalar,
        });
    }
    params.push(UserParam {
        name: "n".into(),
        shape: Shape::Len,
    });
    if rng.chance(0.3) {
        for k in (1..params.len()).rev() {
            params.swap(k, rng.below(k + 1));
        }
    }
    params
}

/// A float expression with a bound on its magnitude. `typed` says whether rustc knows it
/// is `f64` (an expression of literals alone is `{float}`, which takes no method calls).
#[derive(Clone)]
struct E {
    s: String,
    bound: f64,
    typed: bool,
}

struct Var {
    name: String,
    mutable: bool,
    bound: f64,
    /// The loop depth and the iteration multiplier where it was declared: a mutable
    /// variable read in a deeper loop is loop-carried.
    loop_depth: usize,
    trips: f64,
}

struct BufVar {
    name: String,
    bound: f64,
}

/// Where a statement is generated.
#[derive(Clone)]
struct Ctx {
    loop_depth: usize,
    /// How many times the innermost body runs per call, at most.
    trips: f64,
    if_depth: usize,
    /// Index expressions in bounds here.
    indices: Vec<String>,
    /// Integer conditions that make sense here.
    int_conds: Vec<String>,
    /// The index variable of each enclosing `for`.
    for_vars: Vec<&'static str>,
    can_continue: bool,
    can_break: bool,
}

impl Ctx {
    fn top() -> Self {
        Ctx {
            loop_depth: 0,
            trips: 1.0,
            if_depth: 0,
            indices: vec!["0".into(), "1".into(), "n - 1".into(), "n / 2".into()],
            int_conds: vec!["n > 3".into(), "n % 2 == 0".into(), "n < 4".into()],
            for_vars: Vec::new(),
            can_continue: false,
            can_break: false,
        }
    }
}

const LITERALS: [&str; 7] = ["0.5", "1.5", "2.0", "0.25", "0.3", "1.0", "3.0"];
const THRESHOLDS: [&str; 6] = ["-0.5", "0.0", "0.3", "0.8", "1.0", "-1.2"];

struct Gen<'r> {
    /// Returns `Option<f64>` (see [`generate`]).
    fallible: bool,
    rng: &'r mut Rng,
    out: String,
    indent: usize,
    scopes: Vec<Vec<Var>>,
    bufs: Vec<BufVar>,
    scalars: Vec<String>,
    n_names: usize,
    /// Statements still to emit.
    left: usize,
    features: BTreeSet<&'static str>,
}

impl Gen<'_> {
    fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{}{s}", "    ".repeat(self.indent));
    }

    fn open(&mut self, s: &str) {
        self.line(s);
        self.indent += 1;
        self.scopes.push(Vec::new());
    }

    fn close(&mut self, s: &str) {
        self.indent -= 1;
        self.scopes.pop();
        self.line(s);
    }

    /// Closes a branch and opens the next one on the same line (`} else {`).
    fn reopen(&mut self, s: &str) {
        self.close(s);
        self.indent += 1;
        self.scopes.push(Vec::new());
    }

    /// Closes a branch and opens `} else if c {`, with `c` drawn in the enclosing scope.
    fn else_if(&mut self, ctx: &Ctx) {
        self.indent -= 1;
        self.scopes.pop();
        let c = self.cond(ctx, true);
        self.line(&format!("}} else if {c} {{"));
        self.indent += 1;
        self.scopes.push(Vec::new());
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.n_names += 1;
        format!("{prefix}{}", self.n_names)
    }

    /// Visible variables, innermost first; a shadowed one is not visible.
    fn visible(&self) -> Vec<usize> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (d, scope) in self.scopes.iter().enumerate().rev() {
            for (k, v) in scope.iter().enumerate().rev() {
                if seen.insert(v.name.clone()) {
                    out.push(d * 1000 + k);
                }
            }
        }
        out
    }

    fn var(&mut self, id: usize) -> &mut Var {
        &mut self.scopes[id / 1000][id % 1000]
    }

    fn declare(&mut self, ctx: &Ctx, name: String, mutable: bool, bound: f64) {
        let var = Var {
            name,
            mutable,
            bound,
            loop_depth: ctx.loop_depth,
            trips: ctx.trips,
        };
        self.scopes.last_mut().expect("a scope").push(var);
    }

    fn squash(&mut self, e: E) -> E {
        if !e.typed {
            // Literals alone take no method calls; a small literal is squashed already.
            return E {
                s: "0.5".into(),
                bound: 0.5,
                typed: false,
            };
        }
        let s = match self.rng.below(3) {
            0 => format!("({}).sin()", e.s),
            1 => format!("({}).tanh()", e.s),
            _ => format!("({}).cos()", e.s),
        };
        E {
            s,
            bound: 1.0,
            typed: true,
        }
    }

    fn tame(&mut self, e: E, limit: f64) -> E {
        if e.bound > limit {
            self.squash(e)
        } else {
            e
        }
    }

    /// Makes `e` a valid method receiver: rustc cannot call `sin` on a literal-only `{float}`.
    fn typed(&mut self, ctx: &Ctx, e: E) -> E {
        if e.typed {
            return e;
        }
        let a = self.typed_leaf(ctx, false);
        E {
            s: format!("({} + {})", e.s, a.s),
            bound: e.bound + a.bound,
            typed: true,
        }
    }

    fn typed_leaf(&mut self, ctx: &Ctx, loads: bool) -> E {
        if loads && self.rng.chance(0.5) {
            return self.load(ctx);
        }
        let name = self.rng.pick(&self.scalars).clone();
        E {
            s: name,
            bound: 1.5,
            typed: true,
        }
    }

    fn load(&mut self, ctx: &Ctx) -> E {
        let b = self.rng.below(self.bufs.len());
        let index = self.rng.pick(&ctx.indices).clone();
        let (name, bound) = (self.bufs[b].name.clone(), self.bufs[b].bound);
        // Parameters only: a local buffer's `get` is not an optional element phidiff reads.
        let param = name == "x" || name == "y";
        if self.fallible && param && self.rng.chance(0.4) {
            self.features.insert("fallible");
            // Now and then an element that is missing where `n <= 3`: the failure path,
            // taken at about half the points drawn.
            if self.rng.chance(0.15) {
                self.features.insert("fallible_fails");
                return E {
                    s: format!("(*{name}.get(3)?)"),
                    bound,
                    typed: true,
                };
            }
            return E {
                s: format!("(*{name}.get({index})?)"),
                bound,
                typed: true,
            };
        }
        E {
            s: format!("{name}[{index}]"),
            bound,
            typed: true,
        }
    }

    fn leaf(&mut self, ctx: &Ctx, loads: bool) -> E {
        let vars = self.visible();
        match self.rng.below(10) {
            0..=2 if loads => self.load(ctx),
            3..=5 if !vars.is_empty() => {
                let id = vars[self.rng.below(vars.len())];
                let (name, bound, carried) = {
                    let v = self.var(id);
                    (
                        v.name.clone(),
                        v.bound,
                        v.mutable && v.loop_depth < ctx.loop_depth,
                    )
                };
                let e = E {
                    s: name,
                    bound,
                    typed: true,
                };
                // A carried variable read raw could grow geometrically over the iterations.
                if carried {
                    self.squash(e)
                } else {
                    e
                }
            }
            6 => {
                let c = *self.rng.pick(&LITERALS);
                E {
                    s: c.into(),
                    bound: c.parse().expect("a literal"),
                    typed: false,
                }
            }
            _ => self.typed_leaf(ctx, loads),
        }
    }

    /// A float expression of nesting depth at most `depth`; `loads` allows indexing.
    fn expr(&mut self, ctx: &Ctx, depth: usize, loads: bool) -> E {
        if depth == 0 || self.rng.chance(0.3) {
            return self.leaf(ctx, loads);
        }
        let d = depth - 1;
        let e = match self.rng.below(12) {
            0..=2 => {
                let (a, b) = (self.expr(ctx, d, loads), self.expr(ctx, d, loads));
                let op = if self.rng.chance(0.5) { "+" } else { "-" };
                E {
                    s: format!("({} {op} {})", a.s, b.s),
                    bound: a.bound + b.bound,
                    typed: a.typed || b.typed,
                }
            }
            3 | 4 => {
                let a = self.expr(ctx, d, loads);
                let a = self.tame(a, 4.0);
                let b = self.expr(ctx, d, loads);
                let b = self.tame(b, 4.0);
                E {
                    s: format!("({} * {})", a.s, b.s),
                    bound: a.bound * b.bound,
                    typed: a.typed || b.typed,
                }
            }
            5 => {
                self.features.insert("div");
                let a = self.expr(ctx, d, loads);
                let den = self.expr(ctx, d, loads);
                let den = self.tame(den, 4.0);
                E {
                    s: format!("({} / (1.0 + {} * {}))", a.s, den.s, den.s),
                    bound: a.bound,
                    typed: a.typed || den.typed,
                }
            }
            6 => {
                let a = self.expr(ctx, d, loads);
                let a = self.typed(ctx, a);
                self.squash(a)
            }
            7 => {
                self.features.insert("exp");
                let a = self.expr(ctx, d, loads);
                let a = self.typed(ctx, a);
                match self.rng.below(3) {
                    0 => E {
                        s: format!("({}).sin().exp()", a.s),
                        bound: 2.72,
                        typed: true,
                    },
                    1 => E {
                        s: format!("(0.5 * ({}).tanh()).exp()", a.s),
                        bound: 1.65,
                        typed: true,
                    },
                    _ => {
                        let a = self.tame(a, 4.0);
                        E {
                            s: format!("(-({}) * ({})).exp()", a.s, a.s),
                            bound: 1.0,
                            typed: true,
                        }
                    }
                }
            }
            8 => {
                self.features.insert("sqrt");
                let a = self.expr(ctx, d, loads);
                let a = self.typed(ctx, a);
                let a = self.tame(a, 50.0);
                let bound = (1.0 + a.bound * a.bound).sqrt();
                if self.rng.chance(0.5) {
                    E {
                        s: format!("(1.0 + {} * {}).sqrt()", a.s, a.s),
                        bound,
                        typed: true,
                    }
                } else {
                    E {
                        s: format!("({} * {} + 0.25).sqrt()", a.s, a.s),
                        bound,
                        typed: true,
                    }
                }
            }
            9 => {
                self.features.insert("powi");
                let a = self.expr(ctx, d, loads);
                let a = self.typed(ctx, a);
                let a = self.tame(a, 2.0);
                match self.rng.below(3) {
                    0 => E {
                        s: format!("({}).powi(2)", a.s),
                        bound: a.bound.powi(2),
                        typed: true,
                    },
                    1 => E {
                        s: format!("({}).powi(3)", a.s),
                        bound: a.bound.powi(3),
                        typed: true,
                    },
                    _ => E {
                        s: format!("(1.0 + {} * {}).powi(-2)", a.s, a.s),
                        bound: 1.0,
                        typed: true,
                    },
                }
            }
            10 => {
                let a = self.expr(ctx, d, loads);
                E {
                    s: format!("(-{})", a.s),
                    bound: a.bound,
                    typed: a.typed,
                }
            }
            _ => {
                let c = *self.rng.pick(&LITERALS);
                let a = self.expr(ctx, d, loads);
                let bound = c.parse::<f64>().expect("a literal") * a.bound;
                E {
                    s: format!("({c} * {})", a.s),
                    bound,
                    typed: a.typed,
                }
            }
        };
        self.tame(e, 50.0)
    }

    /// A boolean condition: on integers (loop indices, `n`), on floats, or both.
    fn cond(&mut self, ctx: &Ctx, loads: bool) -> String {
        let int = self.rng.pick(&ctx.int_conds).clone();
        let e = self.expr(ctx, 2, loads);
        let e = self.tame(e, 4.0);
        let float = if self.rng.chance(0.7) {
            format!("{} > {}", e.s, self.rng.pick(&THRESHOLDS))
        } else {
            let f = self.expr(ctx, 1, loads);
            format!("{} < {}", e.s, f.s)
        };
        match self.rng.below(10) {
            0..=3 => {
                self.features.insert("int_cond");
                int
            }
            4..=8 => {
                self.features.insert("float_cond");
                float
            }
            _ => {
                self.features.insert("int_cond");
                self.features.insert("float_cond");
                if self.rng.chance(0.5) {
                    format!("{int} && {float}")
                } else {
                    format!("{float} || {int}")
                }
            }
        }
    }

    fn take(&mut self, n: usize) {
        self.left = self.left.saturating_sub(n);
    }
}

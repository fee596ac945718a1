//! Statements of generated programs: assignments, branches, loops and exits, each keeping
//! indices in bounds, loops terminating and magnitudes tame.

use super::*;

impl Gen<'_> {
    /// `let v = e;` or `let mut v = e;`
    pub(super) fn let_stmt(&mut self, ctx: &Ctx, mutable: bool) -> String {
        self.take(1);
        let e = self.expr(ctx, 3, true);
        // Shadow only immutable variables: a shadowed accumulator could not be updated.
        let shadow = !mutable && self.rng.chance(0.1);
        let lets: Vec<usize> = self
            .visible()
            .into_iter()
            .filter(|&id| !self.scopes[id / 1000][id % 1000].mutable)
            .collect();
        let name = if shadow && !lets.is_empty() {
            self.features.insert("shadowing");
            self.var(lets[0]).name.clone()
        } else {
            self.fresh("v")
        };
        let annot = if e.typed { "" } else { ": f64" };
        let kw = if mutable { "let mut" } else { "let" };
        self.line(&format!("{kw} {name}{annot} = {};", e.s));
        self.declare(ctx, name.clone(), mutable, e.bound);
        name
    }

    /// A mutable variable in scope, declaring one if there is none.
    fn mutable_var(&mut self, ctx: &Ctx) -> usize {
        let muts: Vec<usize> = self
            .visible()
            .into_iter()
            .filter(|&id| self.scopes[id / 1000][id % 1000].mutable)
            .collect();
        if muts.is_empty() {
            self.let_stmt(ctx, true);
            return self.visible()[0];
        }
        muts[self.rng.below(muts.len())]
    }

    /// An update of a mutable variable; in a loop it accumulates so values grow at most
    /// linearly with the iterations.
    fn assign(&mut self, ctx: &Ctx) {
        let id = self.mutable_var(ctx);
        self.take(1);
        let (name, bound, carried, iterations) = {
            let v = self.var(id);
            (
                v.name.clone(),
                v.bound,
                v.loop_depth < ctx.loop_depth,
                ctx.trips / v.trips,
            )
        };
        let e = self.expr(ctx, 3, true);
        let fallback = e.clone();
        let (stmt, new_bound) = if carried {
            self.features.insert("carried");
            match self.rng.below(5) {
                0 | 1 => (format!("{name} += {};", e.s), bound + iterations * e.bound),
                2 => (format!("{name} -= {};", e.s), bound + iterations * e.bound),
                3 => (
                    format!("{name} = 0.5 * {name} + {};", e.s),
                    bound.max(2.0 * e.bound),
                ),
                _ => {
                    let e = self.typed(ctx, e);
                    if self.rng.chance(0.5) {
                        (
                            format!("{name} *= 1.0 + 0.1 * ({}).sin();", e.s),
                            bound * 1.1_f64.powf(iterations),
                        )
                    } else {
                        (format!("{name} *= ({}).cos();", e.s), bound)
                    }
                }
            }
        } else {
            match self.rng.below(4) {
                0 => (format!("{name} = {};", e.s), e.bound),
                1 => (format!("{name} += {};", e.s), bound + e.bound),
                2 => (format!("{name} -= {};", e.s), bound + e.bound),
                _ => {
                    let e = self.tame(e, 4.0);
                    let v = self.tame(
                        E {
                            s: name.clone(),
                            bound,
                            typed: true,
                        },
                        4.0,
                    );
                    (format!("{name} = {} * {};", v.s, e.s), v.bound * e.bound)
                }
            }
        };
        // Reset a variable that could have grown too large instead of letting it grow further.
        if new_bound > 200.0 {
            let e = self.tame(fallback, 50.0);
            self.line(&format!("{name} = 0.5 * ({name}).tanh() + {};", e.s));
            self.var(id).bound = 0.5 + e.bound;
        } else {
            self.line(&stmt);
            self.var(id).bound = new_bound;
        }
    }

    /// `count` random statements; `control` allows branches and loops.
    pub(super) fn filler(&mut self, ctx: &Ctx, count: usize, control: bool) {
        let stop = self.left.saturating_sub(count);
        while self.left > stop {
            self.stmt(ctx, control);
        }
    }

    pub(super) fn stmt(&mut self, ctx: &Ctx, control: bool) {
        let left = self.left;
        let weights: [(u32, bool); 10] = [
            (3, true),                                         // let
            (2, true),                                         // let mut
            (4, true),                                         // assign
            (1, control && ctx.if_depth < 2 && left >= 3),     // if
            (1, control && left >= 2),                         // if expression
            (1, control && ctx.loop_depth < 2 && left >= 3),   // for
            (1, control && ctx.loop_depth == 0 && left >= 4),  // while / loop
            (1, control && ctx.can_break),                     // break
            (1, control && ctx.can_continue),                  // continue
            (1, control && left >= 2 && self.rng.chance(0.3)), // return
        ];
        let total: u32 = weights.iter().filter(|w| w.1).map(|w| w.0).sum();
        let mut r = (self.rng.below(total as usize)) as u32;
        let mut choice = 0;
        for (k, (w, ok)) in weights.iter().enumerate() {
            if *ok {
                if r < *w {
                    choice = k;
                    break;
                }
                r -= w;
            }
        }
        match choice {
            0 => {
                self.let_stmt(ctx, false);
            }
            1 => {
                self.let_stmt(ctx, true);
            }
            2 => self.assign(ctx),
            3 => self.if_stmt(ctx),
            4 => self.if_expr(ctx),
            5 => {
                let range = if self.rng.chance(0.8) {
                    0
                } else {
                    1 + self.rng.below(6)
                };
                self.for_loop(ctx, range, None)
            }
            6 => {
                if self.rng.chance(0.5) {
                    self.while_loop(ctx)
                } else {
                    self.loop_break(ctx)
                }
            }
            7 => self.exit_stmt(ctx, "break;", "break_in_for"),
            8 => self.exit_stmt(ctx, "continue;", "continue"),
            _ => {
                let e = self.expr(ctx, 2, true);
                let label = if ctx.loop_depth > 0 {
                    "return_in_loop"
                } else {
                    "return_top"
                };
                self.exit_stmt(ctx, &self.returned(&e.s), label)
            }
        }
    }

    /// `if cond { <exit> }`
    fn exit_stmt(&mut self, ctx: &Ctx, exit: &str, feature: &'static str) {
        self.take(1);
        self.features.insert(feature);
        let c = self.cond(ctx, true);
        self.line(&format!("if {c} {{"));
        self.indent += 1;
        self.line(exit);
        self.indent -= 1;
        self.line("}");
    }

    fn body(&mut self, ctx: &Ctx, n: usize) {
        let n = n.min(self.left).max(1);
        let stop = self.left.saturating_sub(n);
        while self.left > stop {
            self.stmt(ctx, true);
        }
    }

    fn if_stmt(&mut self, ctx: &Ctx) {
        self.take(1);
        self.features.insert("if_stmt");
        let target = self.mutable_var(ctx);
        let c = self.cond(ctx, true);
        let inner = Ctx {
            if_depth: ctx.if_depth + 1,
            ..ctx.clone()
        };
        self.open(&format!("if {c} {{"));
        self.assign_to(&inner, target);
        let n = self.rng.below(3);
        self.body(&inner, n);
        if self.rng.chance(0.2) {
            self.features.insert("else_if");
            self.else_if(ctx);
            self.assign_to(&inner, target);
        }
        if self.rng.chance(0.6) {
            self.reopen("} else {");
            let n = 1 + self.rng.below(2);
            self.body(&inner, n);
        }
        self.close("}");
    }

    /// An update of the variable `id` (which must still be visible): accumulating when the
    /// variable is loop-carried, else overwriting.
    fn assign_to(&mut self, ctx: &Ctx, id: usize) {
        self.take(1);
        let e = self.expr(ctx, 2, true);
        let (name, bound, carried, iterations) = {
            let v = self.var(id);
            (
                v.name.clone(),
                v.bound,
                v.loop_depth < ctx.loop_depth,
                ctx.trips / v.trips,
            )
        };
        if !carried {
            self.line(&format!("{name} = {};", e.s));
            self.var(id).bound = bound.max(e.bound);
        } else if bound + iterations * e.bound > 200.0 {
            let e = self.tame(e, 50.0);
            self.line(&format!("{name} = 0.5 * ({name}).tanh() + {};", e.s));
            self.var(id).bound = 0.5 + e.bound;
        } else {
            self.line(&format!("{name} += {};", e.s));
            self.var(id).bound = bound + iterations * e.bound;
        }
    }

    /// `let v = if c { .. } else { .. };`
    fn if_expr(&mut self, ctx: &Ctx) {
        self.take(2);
        self.features.insert("if_expr");
        let c = self.cond(ctx, true);
        let name = self.fresh("v");
        // Annotated so that rustc knows the type even when both branches are literals.
        self.open(&format!("let {name}: f64 = if {c} {{"));
        let mut bound: f64 = 0.0;
        let with_let = self.rng.chance(0.4);
        for branch in 0..2 {
            if branch == 1 {
                let else_if = self.rng.chance(0.2);
                if else_if {
                    self.else_if(ctx);
                    let e = self.expr(ctx, 2, true);
                    bound = bound.max(e.bound);
                    self.line(&e.s);
                }
                self.reopen("} else {");
            }
            let inner = Ctx {
                if_depth: ctx.if_depth + 1,
                ..ctx.clone()
            };
            if with_let {
                self.let_stmt(&inner, false);
            }
            let e = self.expr(&inner, 2, true);
            bound = bound.max(e.bound);
            self.line(&e.s);
        }
        self.close("};");
        self.declare(ctx, name, false, bound);
    }

    /// A `for` loop. `range` picks the iteration space (0: `0..n`; 1..=6: reversed,
    /// stepped, shifted); `forced` is a statement that must occur in the body.
    fn for_loop(&mut self, ctx: &Ctx, range: usize, forced: Option<&'static str>) {
        self.take(1);
        self.features.insert("for");
        let acc = self.accumulator(ctx);
        let i = if ctx.for_vars.contains(&"i") {
            "j"
        } else {
            "i"
        };
        let (head, extra): (String, Vec<String>) = match range {
            0 => (format!("{i} in 0..n"), vec![]),
            1 => (format!("{i} in (0..n).rev()"), vec![]),
            2 => (format!("{i} in (0..n).step_by(2)"), vec![]),
            3 => (format!("{i} in (1..n).rev()"), vec![format!("{i} - 1")]),
            4 => (format!("{i} in 1..n"), vec![format!("{i} - 1")]),
            5 => (format!("{i} in (0..n).rev().step_by(2)"), vec![]),
            _ => (format!("{i} in 0..n - 1"), vec![format!("{i} + 1")]),
        };
        if range != 0 {
            self.features.insert("for_rev_step");
        }
        let mut inner = ctx.clone();
        inner.loop_depth += 1;
        inner.trips *= 5.0;
        inner.can_continue = true;
        inner.can_break = true;
        inner.for_vars.push(i);
        inner.indices.extend([
            i.to_string(),
            format!("({i} + 1) % n"),
            format!("n - 1 - {i}"),
            format!("{i} / 2"),
        ]);
        inner.indices.extend(extra);
        inner.int_conds.extend([
            format!("{i} % 2 == 0"),
            format!("{i} < n / 2"),
            format!("{i} + 1 < n"),
            format!("{i} == 0"),
        ]);
        if i == "j" {
            self.features.insert("for_nested");
            inner.indices.push("(i + j) % n".into());
            inner
                .int_conds
                .extend(["(i + j) % 3 == 1".to_string(), "j < i".to_string()]);
        }
        self.open(&format!("for {head} {{"));
        let n = 1 + self.rng.below(4);
        let at = self.rng.below(n + 1);
        for k in 0..=n {
            if k == at {
                match forced {
                    Some("accumulate") | None => self.accumulate(&inner, &acc),
                    Some("nested") => self.for_loop(&inner, 0, None),
                    Some("break") => self.exit_stmt(&inner, "break;", "break_in_for"),
                    Some("continue") => self.exit_stmt(&inner, "continue;", "continue"),
                    Some(_) => {
                        let e = self.expr(&inner, 2, true);
                        self.exit_stmt(&inner, &self.returned(&e.s), "return_in_loop")
                    }
                }
            }
            if k < n && self.left > 0 {
                self.stmt(&inner, true);
            }
        }
        if forced.is_some_and(|f| f != "accumulate") {
            self.accumulate(&inner, &acc);
        }
        self.close("}");
    }

    /// `let mut s = 0.0;` (or `1.0` for products) before a loop.
    fn accumulator(&mut self, ctx: &Ctx) -> String {
        self.take(1);
        let name = self.fresh("v");
        let line = match self.rng.below(3) {
            0 => format!("let mut {name}: f64 = 0.0;"),
            1 => format!("let mut {name}: f64 = 1.0;"),
            _ => format!("let mut {name} = 0.5 * {};", self.scalars[0]),
        };
        self.line(&line);
        self.declare(ctx, name.clone(), true, 1.5);
        name
    }

    /// `acc += e` (or a bounded product update) for the named accumulator.
    fn accumulate(&mut self, ctx: &Ctx, acc: &str) {
        let id = self.visible().into_iter().find(|&id| {
            let v = &self.scopes[id / 1000][id % 1000];
            v.name == acc && v.mutable
        });
        match id {
            Some(id) => self.assign_to(ctx, id),
            None => self.assign(ctx),
        }
    }

    /// `let mut w = vec![0.0; n];`, a loop that writes it, a loop that reads it.
    fn local_buffer(&mut self, ctx: &Ctx) {
        if self.rng.chance(0.4) {
            return self.local_matrix(ctx);
        }
        self.take(3);
        self.features.insert("local_buffer");
        let w = self.fresh("w");
        self.line(&format!("let mut {w} = vec![0.0; n];"));
        let mut inner = ctx.clone();
        inner.loop_depth += 1;
        inner.trips *= 5.0;
        inner.indices.extend([
            "i".to_string(),
            "(i + 1) % n".to_string(),
            "n - 1 - i".to_string(),
        ]);
        inner
            .int_conds
            .extend(["i % 2 == 0".to_string(), "i < n / 2".to_string()]);
        self.open("for i in 0..n {");
        // A typed value fixes the element type of `vec![0.0; n]` to f64.
        let e = self.expr(&inner, 3, true);
        let e = self.typed(&inner, e);
        let target = self
            .rng
            .pick(&["i", "(i + 1) % n", "n - 1 - i"])
            .to_string();
        let op = if self.rng.chance(0.7) { "=" } else { "+=" };
        self.line(&format!("{w}[{target}] {op} {};", e.s));
        let mut bound = e.bound;
        if self.rng.chance(0.4) {
            let e2 = self.expr(&inner, 2, true);
            self.line(&format!("{w}[i] += {};", e2.s));
            bound += e2.bound;
        }
        self.close("}");
        self.bufs.push(BufVar {
            name: w.clone(),
            bound,
        });
        let acc = self.accumulator(ctx);
        self.open("for i in 0..n {");
        let index = self
            .rng
            .pick(&["i", "(i + 1) % n", "n - 1 - i"])
            .to_string();
        let f = self.expr(&inner, 2, true);
        let f = self.tame(f, 4.0);
        let read = self.tame(
            E {
                s: format!("{w}[{index}]"),
                bound,
                typed: true,
            },
            4.0,
        );
        self.line(&format!("{acc} += {} * {};", read.s, f.s));
        self.close("}");
        if let Some(id) = self
            .visible()
            .into_iter()
            .find(|&id| self.scopes[id / 1000][id % 1000].name == acc)
        {
            self.var(id).bound = 1.5 + 5.0 * read.bound * f.bound;
        }
    }

    /// `let mut w = vec![vec![0.0; n]; 3];` written through mutable row views (`let row =
    /// &mut w[r];`), then read through a range of its rows (`for row in &w[1..]`) or all of
    /// it flattened (`w.iter().flatten()`).
    fn local_matrix(&mut self, ctx: &Ctx) {
        self.take(3);
        self.features.insert("local_buffer");
        self.features.insert("row_views");
        let (w, r, row) = (self.fresh("w"), self.fresh("r"), self.fresh("row"));
        self.line(&format!("let mut {w} = vec![vec![0.0; n]; 3];"));
        let mut inner = ctx.clone();
        inner.loop_depth += 2;
        inner.trips *= 15.0;
        inner.indices.extend([
            "i".to_string(),
            "(i + 1) % n".to_string(),
            "n - 1 - i".to_string(),
        ]);
        inner.int_conds.extend([
            "i % 2 == 0".to_string(),
            "i < n / 2".to_string(),
            format!("{r} == 1"),
        ]);
        self.open(&format!("for {r} in 0..3 {{"));
        self.line(&format!("let {row} = &mut {w}[{r}];"));
        self.open("for i in 0..n {");
        let e = self.expr(&inner, 3, true);
        let e = self.typed(&inner, e);
        let target = self
            .rng
            .pick(&["i", "(i + 1) % n", "n - 1 - i"])
            .to_string();
        let op = if self.rng.chance(0.7) { "=" } else { "+=" };
        self.line(&format!("{row}[{target}] {op} {};", e.s));
        self.close("}");
        self.close("}");
        let bound = 2.0 * e.bound;
        let acc = self.accumulator(ctx);
        let read = if self.rng.chance(0.5) {
            self.features.insert("row_range");
            let (row2, index) = (
                self.fresh("row"),
                self.rng
                    .pick(&["i", "(i + 1) % n", "n - 1 - i"])
                    .to_string(),
            );
            self.open(&format!("for {row2} in &{w}[1..] {{"));
            self.open("for i in 0..n {");
            let f = self.expr(&inner, 2, true);
            let f = self.tame(f, 4.0);
            let read = self.tame(
                E {
                    s: format!("{row2}[{index}]"),
                    bound,
                    typed: true,
                },
                4.0,
            );
            self.line(&format!("{acc} += {} * {};", read.s, f.s));
            self.close("}");
            self.close("}");
            read.bound * f.bound * 2.0
        } else {
            self.features.insert("flatten");
            let read = self.tame(
                E {
                    s: "v".to_string(),
                    bound,
                    typed: true,
                },
                4.0,
            );
            self.line(&format!(
                "{acc} += 0.1 * {w}.iter().flatten().map(|&v| {}).sum::<f64>();",
                read.s
            ));
            read.bound * 1.5
        };
        if let Some(id) = self
            .visible()
            .into_iter()
            .find(|&id| self.scopes[id / 1000][id % 1000].name == acc)
        {
            self.var(id).bound = 1.5 + 5.0 * read;
        }
    }

    /// `while k < n && cond { ..; k += 1; }` in three flavours.
    fn while_loop(&mut self, ctx: &Ctx) {
        self.take(2);
        self.features.insert("while");
        let acc = self.accumulator(ctx);
        let k = self.fresh("k");
        self.line(&format!("let mut {k} = 0;"));
        let limit = *self.rng.pick(&["0.8", "1.5", "3.0", "4.0"]);
        let (head, indices) = match self.rng.below(4) {
            0 | 1 => (
                format!("while {k} < n && {acc} < {limit} {{"),
                vec![k.clone(), format!("({k} + 1) % n")],
            ),
            2 => (
                format!("while {acc} < {limit} && {k} < 8 {{"),
                vec![format!("{k} % n")],
            ),
            _ => {
                // Short-circuit: `x[k]` is read only while `k < n`.
                self.features.insert("short_circuit");
                let x = self.bufs[0].name.clone();
                (
                    format!("while {k} < n && {x}[{k}] < {limit} {{"),
                    vec![k.clone(), format!("({k} + 1) % n")],
                )
            }
        };
        let mut inner = ctx.clone();
        inner.loop_depth += 1;
        inner.trips *= 8.0;
        inner.can_continue = false;
        inner.can_break = true;
        inner.indices.extend(indices);
        inner
            .int_conds
            .extend([format!("{k} % 2 == 0"), format!("{k} > 1")]);
        self.open(&head);
        self.accumulate(&inner, &acc);
        let n = self.rng.below(3);
        self.body(&inner, n);
        self.line(&format!("{k} += 1;"));
        self.close("}");
    }

    /// `loop { if k >= n { break; } ..; k += 1; }`, sometimes with a second break.
    fn loop_break(&mut self, ctx: &Ctx) {
        self.take(2);
        self.features.insert("loop_break");
        let acc = self.accumulator(ctx);
        let k = self.fresh("k");
        self.line(&format!("let mut {k} = 0;"));
        let mut inner = ctx.clone();
        inner.loop_depth += 1;
        inner.trips *= 5.0;
        inner.can_continue = false;
        inner.can_break = true;
        inner.indices.extend([k.clone(), format!("({k} + 1) % n")]);
        inner
            .int_conds
            .extend([format!("{k} % 2 == 1"), format!("{k} + 2 < n")]);
        self.open("loop {");
        if self.rng.chance(0.3) {
            let limit = *self.rng.pick(&["0.8", "1.5", "3.0"]);
            self.line(&format!("if {k} >= n || {acc} > {limit} {{"));
        } else {
            self.line(&format!("if {k} >= n {{"));
        }
        self.line("    break;");
        self.line("}");
        let n = self.rng.below(3);
        let second = self.rng.below(n + 1);
        for s in 0..=n {
            if s == second {
                self.accumulate(&inner, &acc);
                if self.rng.chance(0.4) {
                    self.exit_stmt(&inner, "break;", "loop_break");
                }
            }
            if s < n && self.left > 0 {
                self.stmt(&inner, true);
            }
        }
        self.line(&format!("{k} += 1;"));
        self.close("}");
    }

    /// The construct the program is built around.
    pub(super) fn focus(&mut self, ctx: &Ctx, kind: &'static str) {
        match kind {
            "straight_line" => {
                let n = 2 + self.rng.below(4);
                self.filler(ctx, n, false)
            }
            "if_stmt" => self.if_stmt(ctx),
            "if_expr" => self.if_expr(ctx),
            "for_carried" => self.for_loop(ctx, 0, Some("accumulate")),
            "for_rev_step" => {
                let range = 1 + self.rng.below(6);
                self.for_loop(ctx, range, Some("accumulate"))
            }
            "for_nested" => self.for_loop(ctx, 0, Some("nested")),
            "local_buffer" => self.local_buffer(ctx),
            "while_counter" => self.while_loop(ctx),
            "loop_break" => self.loop_break(ctx),
            "break_in_for" => self.for_loop(ctx, 0, Some("break")),
            "continue" => self.for_loop(ctx, 0, Some("continue")),
            "return_in_loop" => self.for_loop(ctx, 0, Some("return")),
            "return_top" => {
                let e = self.expr(ctx, 2, true);
                self.exit_stmt(ctx, &self.returned(&e.s), "return_top")
            }
            other => panic!("unknown program kind {other}"),
        }
    }

    /// `return e;`, with `e` in `Some` for a fallible program.
    fn returned(&self, e: &str) -> String {
        match self.fallible {
            true => format!("return Some({e});"),
            false => format!("return {e};"),
        }
    }

    /// The returned value: a combination of the variables (mutated ones first) and a
    /// parameter, sometimes as `return e;` or as an `if` expression.
    pub(super) fn tail(&mut self, ctx: &Ctx, kind: &str) {
        let vars = self.visible();
        let mut terms: Vec<E> = Vec::new();
        let muts: Vec<usize> = vars
            .iter()
            .copied()
            .filter(|&id| self.scopes[id / 1000][id % 1000].mutable)
            .collect();
        for id in muts.iter().take(2).chain(vars.iter().take(1)) {
            let v = &self.scopes[id / 1000][id % 1000];
            let e = E {
                s: v.name.clone(),
                bound: v.bound,
                typed: true,
            };
            terms.push(self.tame(e, 1000.0));
        }
        terms.push(self.typed_leaf(ctx, true));
        let mut s = terms
            .iter()
            .map(|t| t.s.clone())
            .collect::<Vec<_>>()
            .join(" + ");
        if kind != "straight_line" && self.rng.chance(0.1) {
            self.features.insert("if_expr");
            let c = self.cond(ctx, true);
            let other = self.expr(ctx, 2, true);
            s = format!("if {c} {{ {s} }} else {{ {} }}", other.s);
        }
        if self.fallible {
            s = format!("Some({s})");
        }
        if self.rng.chance(0.15) {
            self.line(&format!("return {s};"));
        } else {
            self.line(&s);
        }
    }
}

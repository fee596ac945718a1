//! Random compositions of rayon loops with the serial constructs around them (issue 45):
//! parallel writers (`par_iter_mut().enumerate().for_each`) and parallel sums
//! (`par_iter().map(..).sum()`, `(0..n).into_par_iter().map(..).sum()`) inside `for` loops,
//! `while` loops, nested loops and branches in loops, and, for the compiled flavour,
//! checkpointed loops and calls of differentiated helpers that have rayon loops of their
//! own. Each program comes with its serial twin: the same text with every parallel form
//! written as the serial loop it stands for, so the two gradients must agree to rounding.
//!
//! Every program is `fn NAME(u0: &[f64], a: f64) -> f64` over a state `u` (a copy of
//! `u0`), a second buffer `v` and a carried scalar `s`; values stay bounded (every update
//! goes through `sin` or `tanh`), reads stay in bounds (`(i + 1) % n`, `n - 1 - i`), and
//! loops run a fixed number of steps, so the programs run for any `n ≥ 1`.

use super::{Program, Rng, Shape, UserParam};
use std::collections::BTreeSet;
use std::fmt::Write;

/// Which constructs a composition may use.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(in crate::tests) enum Flavour {
    /// What the IR interpreter runs: no checkpointed loops, no calls.
    Interpreted,
    /// Compiled by rustc (`tests/numeric/compositions.rs`): checkpointed loops and calls of
    /// the helpers in [`HELPERS`] too.
    Compiled,
}

/// A program and its serial twin.
pub(in crate::tests) struct Composition {
    pub parallel: Program,
    /// The source of the twin, a function of the same signature named `NAME_serial`.
    pub serial: String,
}

/// Helpers the compiled flavour calls: a parallel sum and a parallel step, differentiated,
/// each beside its serial twin, a plain function phidiff inlines (the twins of the
/// programs call the twins: helpers without attributes in checkpointed, `while` and `for`
/// loops and branches).
pub(in crate::tests) const HELPERS: &str = "\
/// A parallel sum of a smooth function of the state and its neighbour.
#[differentiate(forward, reverse)]
pub fn ring_energy(u: &[f64], a: f64) -> f64 {
    let n = u.len();
    (0..n).into_par_iter().map(|i| (a * u[i] * u[(i + 1) % n]).sin()).sum::<f64>()
}

/// [`ring_energy`] as a serial loop, a helper without attributes (inlined where the twins
/// call it).
pub fn ring_energy_serial(u: &[f64], a: f64) -> f64 {
    let n = u.len();
    let mut e = 0.0;
    for i in 0..n {
        e += (a * u[i] * u[(i + 1) % n]).sin();
    }
    e
}

/// A parallel step of the state into `v`.
#[differentiate(forward, reverse)]
pub fn mirror_step(u: &[f64], v: &mut [f64], a: f64) {
    let n = u.len();
    v.par_iter_mut().enumerate().for_each(|(i, vi)| {
        *vi = (u[n - 1 - i] * a + 0.5 * u[i]).tanh();
    });
}

/// [`mirror_step`] as a serial loop, a helper without attributes (inlined where the twins
/// call it).
pub fn mirror_step_serial(u: &[f64], v: &mut [f64], a: f64) {
    let n = u.len();
    for i in 0..n {
        v[i] = (u[n - 1 - i] * a + 0.5 * u[i]).tanh();
    }
}
";

/// The text of one function twice: with rayon forms and with serial loops.
#[derive(Default)]
struct Twin {
    par: String,
    ser: String,
}

impl Twin {
    fn both(&mut self, indent: usize, line: &str) {
        self.par(indent, line);
        self.ser(indent, line);
    }
    fn par(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.par, "{}{line}", "    ".repeat(indent));
    }
    fn ser(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.ser, "{}{line}", "    ".repeat(indent));
    }
}

struct Gen<'a> {
    rng: &'a mut Rng,
    flavour: Flavour,
    out: Twin,
    features: BTreeSet<&'static str>,
    /// Fresh names for sums.
    sums: usize,
}

/// Composition number `number` of `flavour`, named `name`.
pub(in crate::tests) fn composition(number: usize, flavour: Flavour, name: &str) -> Composition {
    let mut rng = Rng::new(0x5EED_0045_0000_0000 ^ number as u64);
    let mut g = Gen {
        rng: &mut rng,
        flavour,
        out: Twin::default(),
        features: BTreeSet::new(),
        sums: 0,
    };
    g.out.both(1, "let n = u0.len();");
    g.out.both(1, "let mut u = u0.to_vec();");
    g.out.both(1, "let mut v = vec![0.0; n];");
    g.out.both(1, "let mut s = 0.5 * a;");
    let blocks = 1 + g.rng.below(2);
    for _ in 0..blocks {
        g.outer(1);
    }
    g.out.both(1, "let mut r = s;");
    g.out.both(1, "for i in 0..n {");
    g.out.both(2, "r += u[i] * u[i] + 0.5 * v[i];");
    g.out.both(1, "}");
    g.out.both(1, "r");
    let head = |suffix: &str| format!("pub fn {name}{suffix}(u0: &[f64], a: f64) -> f64 {{\n");
    let parallel = Program {
        src: format!("{}{}}}\n", head(""), g.out.par),
        params: vec![
            UserParam {
                name: "u0".into(),
                shape: Shape::Slice,
            },
            UserParam {
                name: "a".into(),
                shape: Shape::Scalar,
            },
        ],
        kind: "parallel_composition",
        features: g.features,
    };
    Composition {
        parallel,
        serial: format!("{}{}}}\n", head("_serial"), g.out.ser),
    }
}

impl Gen<'_> {
    /// A serial construct around a body of parallel and serial steps.
    fn outer(&mut self, d: usize) {
        let steps = 1 + self.rng.below(3);
        let choices = match self.flavour {
            Flavour::Interpreted => 5,
            Flavour::Compiled => 6,
        };
        match self.rng.below(choices) {
            0 => {
                self.features.insert("parallel in for");
                self.out.both(d, &format!("for _ in 0..{steps} {{"));
                self.body(d + 1);
                self.out.both(d, "}");
            }
            1 => {
                self.features.insert("parallel in while");
                self.out.both(d, "let mut k = 0;");
                // A data-dependent exit too, on a bounded carried value.
                self.out
                    .both(d, &format!("while k < {steps} && s.abs() < 50.0 {{"));
                self.body(d + 1);
                self.out.both(d + 1, "k += 1;");
                self.out.both(d, "}");
            }
            2 => {
                self.features.insert("parallel in nested for");
                let inner = 1 + self.rng.below(2);
                self.out.both(d, &format!("for _ in 0..{steps} {{"));
                self.out.both(d + 1, &format!("for _ in 0..{inner} {{"));
                self.body(d + 2);
                self.out.both(d + 1, "}");
                self.step(d + 1);
                self.out.both(d, "}");
            }
            3 => {
                self.features.insert("parallel in a branch in a loop");
                self.out.both(d, &format!("for t in 0..{} {{", steps + 1));
                self.out.both(d + 1, "if t % 2 == 0 {");
                self.body(d + 2);
                self.out.both(d + 1, "} else {");
                self.step(d + 2);
                self.out.both(d + 1, "}");
                self.out.both(d, "}");
            }
            4 => {
                self.features.insert("parallel at the top");
                self.body(d);
            }
            _ => {
                self.features.insert("parallel in a checkpointed loop");
                let scheme = *self.rng.pick(&[
                    "revolve(snapshots = 2)",
                    "periodic(every = 2)",
                    "online(snapshots = 2)",
                ]);
                let steps = steps + 2;
                // The twin keeps the loop, without checkpointing.
                self.out.par(d, &format!("#[checkpoint({scheme})]"));
                self.out.both(d, &format!("for _ in 0..{steps} {{"));
                self.body(d + 1);
                self.out.both(d, "}");
            }
        }
    }

    /// One to three steps.
    fn body(&mut self, d: usize) {
        for _ in 0..1 + self.rng.below(3) {
            self.step(d);
        }
    }

    /// One step: a parallel writer, a parallel sum, a serial update or (compiled) a call.
    fn step(&mut self, d: usize) {
        let choices = match self.flavour {
            Flavour::Interpreted => 4,
            Flavour::Compiled => 6,
        };
        match self.rng.below(choices) {
            0 => self.writer(d),
            1 | 2 => self.sum(d),
            3 => self.serial_update(d),
            4 => {
                self.features.insert("call with a parallel sum");
                self.out.par(d, "s = (s + 0.3 * ring_energy(&u, a)).sin();");
                self.out
                    .ser(d, "s = (s + 0.3 * ring_energy_serial(&u, a)).sin();");
            }
            _ => {
                self.features.insert("call with a parallel step");
                self.out.par(d, "mirror_step(&u, &mut v, a);");
                self.out.ser(d, "mirror_step_serial(&u, &mut v, a);");
                self.out.both(d, "std::mem::swap(&mut u, &mut v);");
            }
        }
    }

    /// A term of the state at the parallel index `i` (or a neighbour).
    fn read(&mut self) -> &'static str {
        *self
            .rng
            .pick(&["u[i]", "u[i]", "u[(i + 1) % n]", "u[n - 1 - i]", "v[i]"])
    }

    /// A bounded expression of the state around `i`, `a` and `s`.
    fn element(&mut self) -> String {
        let x = self.read();
        let y = self.read();
        let c = 0.2 + 0.6 * self.rng.unit();
        let inner = match self.rng.below(4) {
            0 => format!("{x} * {y} + {c:.3} * a"),
            1 => format!("a * {x} + {c:.3} * {y} * s"),
            2 => format!("{x} * ({y} + s)"),
            _ => format!("{c:.3} * {x} + a * {y} * {y}"),
        };
        let squash = *self.rng.pick(&["sin", "tanh"]);
        format!("({inner}).{squash}()")
    }

    /// `v[i] = E(i)` by a parallel loop, then the state moves on.
    fn writer(&mut self, d: usize) {
        self.features.insert("parallel writer");
        let e = self.element();
        // The element reads `v[i]`: the writer reads what it overwrites, so the loop
        // writes `w[i]` of a fresh buffer first when it does.
        self.out
            .par(d, "v.par_iter_mut().enumerate().for_each(|(i, vi)| {");
        let e_par = e.replace("v[i]", "*vi");
        self.out.par(d + 1, &format!("*vi = {e_par};"));
        self.out.par(d, "});");
        self.out.ser(d, "for i in 0..n {");
        self.out.ser(d + 1, &format!("v[i] = {e};"));
        self.out.ser(d, "}");
        match self.rng.below(3) {
            0 => {
                self.features.insert("swap after a parallel writer");
                self.out.both(d, "std::mem::swap(&mut u, &mut v);");
            }
            1 => {
                self.features.insert("copy after a parallel writer");
                self.out.both(d, "u.copy_from_slice(&v);");
            }
            _ => {}
        }
    }

    /// A parallel sum into a fresh `e`, then into the carried `s` or the state.
    fn sum(&mut self, d: usize) {
        self.sums += 1;
        let e = format!("e{}", self.sums);
        let c = 0.1 + 0.3 * self.rng.unit();
        if self.rng.chance(0.5) {
            self.features.insert("par_iter sum");
            let squash = *self.rng.pick(&["sin", "tanh"]);
            self.out.par(
                d,
                &format!("let {e}: f64 = u.par_iter().map(|x| (a * x * x).{squash}()).sum();"),
            );
            self.out.ser(d, &format!("let mut {e} = 0.0;"));
            self.out.ser(d, "for i in 0..n {");
            self.out.ser(d + 1, &format!("let x = u[i];"));
            self.out
                .ser(d + 1, &format!("{e} += (a * x * x).{squash}();"));
            self.out.ser(d, "}");
        } else {
            self.features.insert("into_par_iter sum");
            let term = self.element().replace("v[i]", "u[i]");
            self.out.par(
                d,
                &format!("let {e} = (0..n).into_par_iter().map(|i| {term}).sum::<f64>();"),
            );
            self.out.ser(d, &format!("let mut {e} = 0.0;"));
            self.out.ser(d, "for i in 0..n {");
            self.out.ser(d + 1, &format!("{e} += {term};"));
            self.out.ser(d, "}");
        }
        if self.rng.chance(0.5) {
            self.out.both(d, &format!("s = (s + {c:.3} * {e}).sin();"));
        } else {
            self.features.insert("sum scales the state");
            self.out.both(d, "for i in 0..n {");
            self.out.both(
                d + 1,
                &format!("u[i] = (u[i] * (1.0 + {c:.3} * {e})).tanh();"),
            );
            self.out.both(d, "}");
        }
    }

    /// A serial update of the state from `s`.
    fn serial_update(&mut self, d: usize) {
        self.out.both(d, "for i in 0..n {");
        self.out
            .both(d + 1, "u[i] = (u[i] + 0.3 * s * v[i] + 0.1 * a).sin();");
        self.out.both(d, "}");
    }
}

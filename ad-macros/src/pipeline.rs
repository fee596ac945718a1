//! The compiler's passes, declared in the order they run (see [`PIPELINE`]), the switches
//! that rule optional ones out ([`Passes`]), and what runs between passes ([`Runner`]):
//! the IR verifier (in tests and debug builds) and `PHIDIFF_DUMP_IR`.
//!
//! `expand::compile` runs the primal, forward and reverse programs' passes in this order;
//! `expand::batched_*` the batched ones; `expand::cuda_adjoint` the CUDA gather form. After
//! each, the verifier checks the IR (a failure is a compile error naming the pass, with
//! the IR), and `PHIDIFF_DUMP_IR=passes` (or a list of pass names) prints it.
//!
//! A pass that only makes the program faster can be ruled out, for tests that compare a
//! program with and without it and for a user reporting a bug, with the hidden attribute
//! option `skip_passes(..)`: `#[differentiate(reverse, skip_passes(twin_ifs, strip_mining))]`.

use crate::ir::{printer, verify::verify, Function};

/// A pass that can be ruled out (`skip_passes(name)`): it only makes the program faster.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Pass {
    SumFusion,
    LoopFusion,
    Extrema,
    BackwardCounters,
    SameSlots,
    CarriedAdds,
    InvariantAdds,
    IndexHoisting,
    TwinIfs,
    StripMining,
    IndexSets,
}

/// Which program a pass builds or rewrites.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Program {
    Primal,
    Forward,
    Reverse,
    Batched,
    Cuda,
}

/// One pass of [`PIPELINE`].
pub struct Stage {
    /// Its name in `PHIDIFF_DUMP_IR`, and in `skip_passes(..)` for those that have a switch.
    pub name: &'static str,
    #[cfg_attr(not(test), allow(dead_code))]
    pub program: Program,
    /// Its switch, for a pass that can be ruled out.
    pub switch: Option<Pass>,
    /// What it assumes and guarantees.
    #[cfg_attr(not(test), allow(dead_code))]
    pub doc: &'static str,
}

/// Every pass, in the order it runs. The verifier checks the IR after each one; the
/// reverse sweep's own steps (`derivative::reverse::reverse`) build one program and are
/// one stage here.
pub const PIPELINE: &[Stage] = &[
    Stage {
        name: "lowering",
        program: Program::Primal,
        switch: None,
        doc: "the desugared body (`desugar`) → the primal program in structured SSA IR (`lower`); every construct outside the supported Rust is a compile error at its span",
    },
    Stage {
        name: "sum_fusion",
        program: Program::Primal,
        switch: Some(Pass::SumFusion),
        doc: "a parallel sum over a buffer moved into the parallel loop that just wrote it, each element's term added in the iteration that makes the element final (`lower::sum_fusion`); the same sum, in one pass",
    },
    Stage {
        name: "loop_fusion",
        program: Program::Primal,
        switch: Some(Pass::LoopFusion),
        doc: "adjacent serial loops over the same range run as one loop where iteration `j` of the second reads only what iteration `j` of the first writes (`lower::loop_fusion`); the same values",
    },
    Stage {
        name: "forward",
        program: Program::Forward,
        switch: None,
        doc: "the tangent program (`derivative::forward`): each active value followed by its tangent; assumes the activity analysis of the primal",
    },
    Stage {
        name: "extrema",
        program: Program::Reverse,
        switch: Some(Pass::Extrema),
        doc: "max and min reductions rewritten to find their winning element, whose adjoint the reverse sweep adds to after the loop (`reverse::extremum`; coarsened programs only)",
    },
    Stage {
        name: "reverse",
        program: Program::Reverse,
        switch: None,
        doc: "the adjoint program (`derivative::reverse`): the recording plan (what is saved, taped or recomputed; backward counters and one-slot saves unless `backward_counters` or `same_slots` is ruled out), the forward sweep with its saves, then the reverse sweep of coarsened segments; shadows and scalar adjoints as `_rev` returns them",
    },
    Stage {
        name: "carried_adds",
        program: Program::Reverse,
        switch: Some(Pass::CarriedAdds),
        doc: "adds into a shadow at small constant shifts of a reversed loop's index wait in registers, so each element is written once (`reverse::carry`); only the additions are regrouped",
    },
    Stage {
        name: "invariant_adds",
        program: Program::Reverse,
        switch: Some(Pass::InvariantAdds),
        doc: "adds into one element fixed for a loop that touches its array no other way go to local accumulators, added to the element once after the loop (`reverse::promote`); only the additions are regrouped",
    },
    Stage {
        name: "index_hoisting",
        program: Program::Reverse,
        switch: Some(Pass::IndexHoisting),
        doc: "arithmetic and reads fixed for a loop computed once before it, under the check that the loop runs (`reverse::hoist`); nothing runs, or panics, that the loop would not have",
    },
    Stage {
        name: "twin_ifs",
        program: Program::Reverse,
        switch: Some(Pass::TwinIfs),
        doc: "two `if`s on one condition in one block, with nothing between them that the second reads from the first, merged into one (`reverse::twin_if`); bitwise the same results",
    },
    Stage {
        name: "strip_mining",
        program: Program::Reverse,
        switch: Some(Pass::StripMining),
        doc: "fused sums strip-mined by eight so their adjoint vectorizes, the sum's additions kept in order (`reverse::strip`); the strips' indices are known to stay below the loop's end (`Function::index_below`)",
    },
    Stage {
        name: "index_sets",
        program: Program::Reverse,
        switch: Some(Pass::IndexSets),
        doc: "a loop whose body branches on an interval of its index cut in three loops without the branch (`reverse::split`)",
    },
    Stage {
        name: "summation_aware",
        program: Program::Reverse,
        switch: None,
        doc: "every `+=` of a parallel loop into a shared buffer classified by its index: owned, halo, or scatter (`derivative::parallel`); code generation emits each class without races",
    },
    Stage {
        name: "batched",
        program: Program::Batched,
        switch: None,
        doc: "the forward or reverse program with N lanes of tangents or adjoints per sweep (`derivative::batch`); the primal part once, each derivative value N times",
    },
    Stage {
        name: "cuda_gather",
        program: Program::Cuda,
        switch: None,
        doc: "a CUDA element function's adjoint in gather form: its adds at shifts of the thread index summed by the thread that owns the element, the clears of output shadows in a finishing kernel (`derivative::gather`); where that is not sound, none",
    },
];

/// Each switch of `skip_passes(..)`: the pass, its name, and the stage of [`PIPELINE`] it
/// is (or is part of: the recording plan's choices are made inside `reverse`).
pub const SWITCHES: &[(Pass, &str, &str)] = &[
    (Pass::SumFusion, "sum_fusion", "sum_fusion"),
    (Pass::LoopFusion, "loop_fusion", "loop_fusion"),
    (Pass::Extrema, "extrema", "extrema"),
    (Pass::BackwardCounters, "backward_counters", "reverse"),
    (Pass::SameSlots, "same_slots", "reverse"),
    (Pass::CarriedAdds, "carried_adds", "carried_adds"),
    (Pass::InvariantAdds, "invariant_adds", "invariant_adds"),
    (Pass::IndexHoisting, "index_hoisting", "index_hoisting"),
    (Pass::TwinIfs, "twin_ifs", "twin_ifs"),
    (Pass::StripMining, "strip_mining", "strip_mining"),
    (Pass::IndexSets, "index_sets", "index_sets"),
];

/// The optional passes that run: all, less those ruled out.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct Passes {
    off: u32,
}

impl Passes {
    /// Every pass on.
    pub fn all() -> Passes {
        Passes::default()
    }

    /// The same, with `p` ruled out.
    pub fn without(self, p: Pass) -> Passes {
        Passes {
            off: self.off | 1 << p as u32,
        }
    }

    /// Whether `p` runs.
    pub fn on(self, p: Pass) -> bool {
        self.off & (1 << p as u32) == 0
    }

    /// The pass called `name` in `skip_passes(..)`.
    pub fn named(name: &str) -> Option<Pass> {
        SWITCHES.iter().find(|s| s.1 == name).map(|s| s.0)
    }

    /// The name of `p` in `skip_passes(..)`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn name_of(p: Pass) -> &'static str {
        SWITCHES
            .iter()
            .find(|s| s.0 == p)
            .map(|s| s.1)
            .expect("every pass has a switch")
    }

    /// The names `skip_passes(..)` takes, for messages.
    pub fn names() -> Vec<&'static str> {
        SWITCHES.iter().map(|s| s.1).collect()
    }
}

/// The stage called `name`.
fn stage(name: &str) -> &'static Stage {
    PIPELINE
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("phidiff internal error: no pass `{name}` in the pipeline"))
}

/// Runs optional pass `name` on `f` when `passes` has it on (a pass without a switch
/// always runs), then [`after`] it.
pub fn run(
    passes: Passes,
    name: &str,
    f: &mut Function,
    pass: impl FnOnce(&mut Function) -> Result<(), String>,
) -> Result<(), String> {
    let s = stage(name);
    if s.switch.is_some_and(|p| !passes.on(p)) {
        return Ok(());
    }
    pass(f)?;
    after(name, f)
}

/// Whether `PHIDIFF_DUMP_IR` asks for the primal, forward and reverse programs once, at the
/// end (set, but neither `passes` nor a list of passes).
pub fn dump_whole_programs() -> bool {
    match std::env::var("PHIDIFF_DUMP_IR") {
        Ok(v) => {
            v != "passes"
                && !v
                    .split(',')
                    .any(|d| PIPELINE.iter().any(|s| s.name == d.trim()))
        }
        Err(_) => false,
    }
}

/// What runs after pass `name` leaves `f`: the verifier (linear in the program's size),
/// and the IR printed to stderr when `PHIDIFF_DUMP_IR` names the pass (or is `passes`).
pub fn after(name: &str, f: &Function) -> Result<(), String> {
    let s = stage(name);
    if let Ok(dump) = std::env::var("PHIDIFF_DUMP_IR") {
        if dump == "passes" || dump.split(',').any(|d| d.trim() == s.name) {
            eprintln!("# after `{}`\n{}", s.name, printer::print(f));
        }
    }
    verify(f).map_err(|e| {
        format!(
            "phidiff internal error after the pass `{}`: {e}\n{}",
            s.name,
            printer::print(f)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `docs/pipeline.md`, as [`PIPELINE`] says.
    fn table() -> String {
        let mut out = String::from("| # | pass | program | `skip_passes` | assumes and guarantees |\n|---|---|---|---|---|\n");
        for (k, s) in PIPELINE.iter().enumerate() {
            let parts: Vec<String> = SWITCHES
                .iter()
                .filter(|w| w.2 == s.name)
                .map(|w| format!("`{}`", w.1))
                .collect();
            let switch = if parts.is_empty() {
                "—".to_string()
            } else {
                parts.join(", ")
            };
            let program = format!("{:?}", s.program).to_lowercase();
            out.push_str(&format!(
                "| {} | `{}` | {program} | {switch} | {} |\n",
                k + 1,
                s.name,
                s.doc
            ));
        }
        out
    }

    #[test]
    fn docs_list_every_pass_in_order() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/pipeline.md");
        let text = std::fs::read_to_string(&path).expect("docs/pipeline.md");
        let (begin, end) = ("<!-- passes: begin -->\n", "<!-- passes: end -->");
        let at = text.find(begin).expect("the table's begin marker") + begin.len();
        let to = text.find(end).expect("the table's end marker");
        let want = table();
        if std::env::var_os("PHIDIFF_BLESS").is_some() {
            let updated = format!("{}{want}{}", &text[..at], &text[to..]);
            std::fs::write(&path, updated).expect("write docs/pipeline.md");
            return;
        }
        assert_eq!(
            &text[at..to],
            want,
            "docs/pipeline.md lists other passes than pipeline::PIPELINE; rerun with PHIDIFF_BLESS=1"
        );
    }

    #[test]
    fn switches_have_one_name_each() {
        let names = Passes::names();
        for (k, n) in names.iter().enumerate() {
            assert!(!names[..k].contains(n), "{n} twice");
            let p = Passes::named(n).expect("named");
            assert_eq!(Passes::name_of(p), *n);
            assert!(!Passes::all().without(p).on(p));
            assert!(Passes::all().on(p));
        }
        assert_eq!(names.len(), 11);
        assert_eq!(Passes::named("reverse"), None, "a pass without a switch");
        // Each switch is a stage's, or part of one; a stage's own switch is its name.
        for (p, name, stage) in SWITCHES {
            let s = PIPELINE.iter().find(|s| s.name == *stage).expect("a stage");
            assert_eq!(s.switch == Some(*p), name == stage, "{name}");
        }
    }
}

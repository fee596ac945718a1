//! Reverse (adjoint) mode: one IR function holding the forward sweep (the primal plus the
//! saves the recording analysis asked for) followed by the reverse sweep. Adjoints are
//! accumulator cells; an `if` is reversed by branching on its (saved or recomputed)
//! condition; a loop by running its recorded trip count backwards, with loop-carried
//! adjoints in carry cells and saved values read from direct-indexed tapes at the
//! iteration's slot.

mod adjoint;
mod carry;
mod checkpoint;
pub use carry::{int_const, touched_bufs as touched};
pub use checkpoint::check as check_checkpoints;
pub use promote::is_checkpoint;
mod control;
mod extremum;
mod fuse;
mod hoist;
mod plan;
mod promote;
mod segment;
mod split;
mod strip;
mod sweep;
pub(crate) mod twin_if;

use super::forward::zero_like;
use super::Remap;
use crate::analysis::activity::Activity;
use crate::analysis::recording::{Planner, Recording, Storage, Structure, RECOMPUTE_BUDGET};
use crate::derivative::segments::{self, Segmentation};
use crate::ir::builder::Builder;
use crate::ir::*;
use crate::pipeline::{self, Pass, Passes};
use std::collections::{BTreeSet, HashMap, HashSet};

/// How the reverse program is built: coarsened (segments of at most `limit` nodes) or
/// fine-grained (`coarsen = off`: one adjoint per operation, every intermediate saved),
/// and which optional passes run (`crate::pipeline`).
#[derive(Copy, Clone, Debug)]
pub struct Coarsening {
    pub on: bool,
    pub limit: usize,
    /// Parallel adjoints add into shared arrays atomically only (`parallel_adjoint = atomic`).
    pub atomic_adjoint: bool,
    /// The optional passes that run (`skip_passes(..)` rules some out).
    pub passes: Passes,
}

/// The reverse program of `f` (the stages `extrema` to `summation_aware` of
/// [`crate::pipeline::PIPELINE`], in that order, each verified after it in debug builds).
pub fn reverse(
    f: &Function,
    act: &Activity,
    active_params: &[bool],
    name: &str,
    coarsening: Coarsening,
) -> Result<Function, String> {
    // Max and min reductions reversed through their winning element (`extremum`).
    let passes = coarsening.passes;
    let routed = match coarsening.on && passes.on(Pass::Extrema) {
        true => extremum::routed(f, active_params),
        false => None,
    };
    if let Some((g, _)) = &routed {
        pipeline::after("extrema", g)?;
    }
    let (f, act) = match &routed {
        Some((g, a)) => (g, a),
        None => (f, act),
    };
    let mut out = Function::new(name);
    // Parameters: each active buffer followed by its `&mut` shadow.
    let params = super::copy_params(f, &mut out, &|n| {
        (active_params[n] && matches!(f.params[n].kind, ParamKind::Buffer { .. })).then_some(true)
    });
    let (m, shadow, param_index) = (params.remap, params.derivative_buf, params.index);
    let ret = f.block(f.body).yields.first().copied();
    let seed_index = ret.map(|_| {
        out.params.push(ParamInfo {
            name: super::seed_name(f.params.iter().map(|q| q.name.as_str())),
            kind: ParamKind::Scalar(Ty::Float),
            span: proc_macro2::Span::call_site(),
        });
        out.params.len() - 1
    });

    let mut rv = Rev::new(f, act, m, shadow, param_index, coarsening)?;
    rv.plan.seed_param = seed_index;
    if seed_index.is_some() {
        rv.plan.fused = fuse::fusable_loops(f, act, &rv.plan.seg, &rv.plan.structure, &rv.plan.rec);
        rv.plan
            .fused
            .retain(|l, _| rv.plan.work.get(l).copied().unwrap_or(false));
        // A fused loop is not reversed as a whole (`reverse_loop`), where backward
        // counters step back: its counters are taped, as before there were any.
        for &l in rv.plan.fused.keys() {
            for p in f.loop_parts(l).0 {
                if rv.plan.rec.storage.get(&p) == Some(&Storage::Backward) {
                    rv.plan.rec.storage.insert(p, Storage::Tape(l));
                    rv.plan.rec.saved.insert(p);
                }
            }
        }
        rv.untape_fused();
    }
    let body = out.body;
    let mut b = Builder::new(&mut out, body);
    rv.declare_saves(&mut b);
    // Fused sums add into the adjoints of earlier values during the forward sweep.
    let early = !rv.plan.fused.is_empty();
    if early {
        rv.declare_adjoints(&mut b, f.body);
    }
    rv.sweep_block(&mut b, f.body);
    if let Some(e) = rv.fuse_error.take() {
        return Err(e);
    }
    let kept = rv.ck_keep_outputs(&mut b);
    // Reverse sweep.
    rv.memo.push(HashMap::new());
    if !early {
        rv.declare_adjoints(&mut b, f.body);
    }
    if let (Some(r), Some(si)) = (ret, seed_index) {
        if act.value(r) {
            let seed = b.value(InstKind::Param(si), Ty::Float);
            rv.accumulate(&mut b, r, seed);
        }
    }
    rv.reverse_block(&mut b, f.body)?;
    // Checkpointed loops restored earlier states into these: the primal's final values.
    for (dst, src) in kept {
        b.stmt(InstKind::CopyFrom { dst, src });
    }
    let mut yields = Vec::new();
    if let Some(r) = ret {
        yields.push(rv.m.v(r));
    }
    for (n, p) in f.params.iter().enumerate() {
        if active_params[n] && matches!(p.kind, ParamKind::Scalar(Ty::Float)) {
            let pv = rv.param_values[n].expect("scalar params are defined");
            let g = match rv.adj.get(&pv) {
                Some(c) => b.get(*c),
                None => b.fconst(0.0),
            };
            yields.push(g);
        }
    }
    b.set_yields(body, yields);
    pipeline::after("reverse", &out)?;
    let shadows: HashSet<Buf> = rv.shadow.iter().flatten().copied().collect();
    let fused = &rv.fused_out;
    pipeline::run(passes, "carried_adds", &mut out, |f| {
        carry::carry_shifted_adds(f, fused, &shadows);
        Ok(())
    })?;
    pipeline::run(passes, "invariant_adds", &mut out, |f| {
        promote::promote_invariant_adds(f);
        Ok(())
    })?;
    pipeline::run(passes, "index_hoisting", &mut out, |f| {
        hoist::hoist_invariant_index_math(f);
        Ok(())
    })?;
    pipeline::run(passes, "twin_ifs", &mut out, |f| {
        twin_if::merge_twin_ifs(f);
        Ok(())
    })?;
    pipeline::run(passes, "strip_mining", &mut out, |f| {
        strip::strip_mine_fused(f, fused);
        Ok(())
    })?;
    pipeline::run(passes, "index_sets", &mut out, |f| {
        split::split_index_sets(f);
        Ok(())
    })?;
    pipeline::run(passes, "summation_aware", &mut out, |f| {
        super::parallel::summation_aware(f, coarsening.atomic_adjoint)
    })?;
    Ok(out)
}

/// What the reverse program does, decided before any of it is emitted: the recording
/// plan, the segments, the work of each loop, the loops reversed in the forward sweep.
/// Only the setup in [`reverse`] changes it (the fused loops' choice); the emission reads it.
struct Planned {
    /// What the reverse sweep reads and how (saved, taped, recomputed).
    rec: Recording,
    structure: Structure,
    /// Of each loop: whether its reverse does any work.
    work: HashMap<Inst, bool>,
    /// The coarsened segments (empty with `coarsen = off`).
    seg: Segmentation,
    /// Segment nodes read from the forward sweep instead of recomputed, per segment.
    saved_nodes: HashMap<usize, std::collections::HashSet<crate::derivative::symbolic::Sym>>,
    /// The checkpointed loops reversed from their restored states, without a taped step
    /// (see [`Planner::with_steps`]).
    steps: BTreeSet<Inst>,
    /// The sums reversed iteration by iteration in the forward sweep, with their summed
    /// parameter and the constant of its adjoint `c · seed` (see [`fuse`]).
    fused: HashMap<Inst, (usize, f64)>,
    /// The generated function's `seed` parameter.
    seed_param: Option<usize>,
    /// Values of fused iterations saved in a tape by the plan, whose fused adjoint reads
    /// them from the iteration instead: they get no tape.
    iteration_saved: HashSet<Value>,
}

/// The reverse program being emitted: the plan, and the state of the emission (the
/// generated values of the primal's, tapes, slots, counters, adjoint cells).
struct Rev<'a> {
    f: &'a Function,
    act: &'a Activity,
    m: Remap,
    shadow: Vec<Option<Buf>>,
    param_index: Vec<usize>,
    param_values: Vec<Option<Value>>,
    /// Tape of each saved value (in loops) and slot cell (outside loops).
    tape: HashMap<Value, Buf>,
    slot: HashMap<Value, Cell>,
    /// Iteration counter of each loop that has tapes.
    counter: HashMap<Inst, Cell>,
    /// Loops nested in a parallel loop that save values: the parallel loop, whose
    /// iteration `i` owns row `i` of their (2-D) tapes, and the tape of each iteration's
    /// count of saves (the counter restarts in every parallel iteration).
    row_of: HashMap<Inst, Inst>,
    counts: HashMap<Inst, Buf>,
    /// The current iteration's slot index of each loop being swept (forward or reverse).
    iteration: HashMap<Inst, Value>,
    /// The current reversed index value of each loop being reversed.
    index: HashMap<Inst, Value>,
    /// Adjoint accumulator of each active value.
    adj: HashMap<Value, Cell>,
    /// Values fetched in the reverse sweep, per open block.
    memo: Vec<HashMap<Value, Value>>,
    /// Snapshot tape of each copied call argument.
    snap: HashMap<(Inst, usize), Buf>,
    /// The tape of each buffer copied when the forward sweep enters a loop
    /// ([`Storage::Row`]), one row per entry.
    rows: HashMap<(Inst, Buf), Buf>,
    /// The saved nodes of the segment being emitted.
    current_saved: std::collections::HashSet<crate::derivative::symbolic::Sym>,
    /// The cells of the hoisted values of closed loops (sums, products, tangents).
    hoisted: HashMap<Inst, Vec<Cell>>,
    /// Of each closed loop not at the top level: whether its hoisted values are computed.
    hoisted_done: HashMap<Inst, Cell>,
    /// Whether the forward code being emitted is a re-run for values only (no saves).
    plain: bool,
    /// Calls the forward code being emitted records but does not run (see
    /// [`checkpoint::unread_last_call`]).
    unrun_calls: std::collections::HashSet<Inst>,
    /// The checkpointed loops with reverse work.
    ck: HashMap<Inst, checkpoint::CkLoop>,
    /// An error met while emitting a fused adjoint in the forward sweep.
    fuse_error: Option<String>,
    /// The fused loops as emitted (instructions of the generated function).
    fused_out: HashSet<Inst>,
    /// The fused loops whose forward body is being emitted, outermost first, each with
    /// its body in the generated function (see [`Rev::from_iteration`]).
    fusing: Vec<(Inst, Block)>,
    /// The cell holding a value of a fused iteration where its definition does not
    /// enclose the adjoint that reads it (one inside an `if`).
    iteration_cells: HashMap<Value, Cell>,
    plan: Planned,
}

impl<'a> Rev<'a> {
    pub(super) fn new(
        f: &'a Function,
        act: &'a Activity,
        m: Remap,
        shadow: Vec<Option<Buf>>,
        param_index: Vec<usize>,
        coarsening: Coarsening,
    ) -> Result<Self, String> {
        let (seg, budget) = if coarsening.on {
            (
                segments::segment(f, act, coarsening.limit),
                RECOMPUTE_BUDGET,
            )
        } else {
            (Segmentation::default(), 0)
        };
        // Checkpointed loops are first planned to be reversed from their restored states
        // (no taped re-run of each step); those whose plan still saves something are
        // planned again with a taped step.
        let mut steps: BTreeSet<Inst> = f.checkpoints.keys().copied().collect();
        let (rec, structure, rv_work, saved_nodes) = loop {
            let mut planner = Planner::new(f, act, budget, coarsening.passes).with_steps(&steps);
            let mut rv_work = HashMap::new();
            let plan = plan::Plan {
                f,
                act,
                shadow: &shadow,
                seg: &seg,
                saved_nodes: Default::default(),
            };
            plan.block(f.body, &mut planner, &mut rv_work);
            let saved_nodes = plan.saved_nodes.into_inner();
            let (rec, structure) = planner.finish();
            let taped: Vec<Inst> = steps
                .iter()
                .copied()
                .filter(|l| rec.saves_inside(f, &structure, *l))
                .collect();
            if taped.is_empty() {
                parallel_tapes(f, &rec, &structure)?;
                break (rec, structure, rv_work, saved_nodes);
            }
            for l in taped {
                steps.remove(&l);
            }
        };
        Ok(Rev {
            f,
            act,
            m,
            shadow,
            param_index,
            param_values: vec![None; f.params.len()],
            tape: HashMap::new(),
            slot: HashMap::new(),
            counter: HashMap::new(),
            row_of: HashMap::new(),
            counts: HashMap::new(),
            iteration: HashMap::new(),
            index: HashMap::new(),
            adj: HashMap::new(),
            memo: Vec::new(),
            snap: HashMap::new(),
            rows: HashMap::new(),
            current_saved: Default::default(),
            hoisted: HashMap::new(),
            hoisted_done: HashMap::new(),
            plain: false,
            unrun_calls: Default::default(),
            ck: HashMap::new(),
            fuse_error: None,
            fused_out: HashSet::new(),
            fusing: Vec::new(),
            iteration_cells: HashMap::new(),
            plan: Planned {
                rec,
                structure,
                work: rv_work,
                seg,
                saved_nodes,
                steps,
                fused: HashMap::new(),
                seed_param: None,
                iteration_saved: HashSet::new(),
            },
        })
        .map(|mut rv| {
            rv.plan_checkpoints();
            rv
        })
    }

    /// Tapes and slots for the saved values, counters for loops with tapes.
    pub(super) fn declare_saves(&mut self, b: &mut Builder) {
        let saved: Vec<Value> = self.plan.rec.saved.iter().copied().collect();
        for v in saved {
            let ty = self.f.ty(v);
            match self.plan.rec.storage[&v] {
                Storage::Tape(l) => {
                    let name = format!(
                        "tape_{}",
                        self.f
                            .value(v)
                            .name
                            .clone()
                            .unwrap_or_else(|| v.to_string())
                    );
                    // Inside a parallel loop: one row per parallel iteration.
                    let par = self.parallel_ancestor(l);
                    let t = b.func.new_buf(BufData {
                        name,
                        rank: if par.is_some() { 2 } else { 1 },
                        elem: ty,
                        kind: BufKind::Tape,
                    });
                    self.tape.insert(v, t);
                    if let Some(p) = par {
                        self.row_of.insert(l, p);
                        if !self.counts.contains_key(&l) {
                            let cnt = b.func.new_buf(BufData {
                                name: "count".into(),
                                rank: 1,
                                elem: Ty::Int,
                                kind: BufKind::Tape,
                            });
                            self.counts.insert(l, cnt);
                        }
                    }
                    let direct = self.ck.contains_key(&l)
                        || self.f.parallel.contains_key(&l)
                        || par.is_some();
                    if !self.counter.contains_key(&l) && !direct {
                        let z = b.iconst(0);
                        let c = b.cell(Ty::Int, "iter", z);
                        self.counter.insert(l, c);
                    }
                }
                Storage::Slot => {
                    let z = b.zero(ty);
                    let c = b.cell(ty, "slot", z);
                    self.slot.insert(v, c);
                }
                _ => unreachable!("only tape and slot values are saved"),
            }
        }
        // A parallel loop inside another loop runs once per iteration of that loop: its
        // iteration `j` saves into slot `k₀ + j` (row `k₀ + j` of a nested loop's tapes),
        // `k₀` its counter at entry, and the counter moves past the entry's slots after it.
        let mut nested_parallel: Vec<Inst> = self
            .f
            .parallel
            .keys()
            .copied()
            .filter(|&p| self.enclosing_loop(p).is_some())
            .filter(|&p| !self.tapes_of(p).is_empty() || self.row_of.values().any(|q| *q == p))
            .collect();
        nested_parallel.sort();
        for p in nested_parallel {
            let z = b.iconst(0);
            let c = b.cell(Ty::Int, "iter", z);
            self.counter.insert(p, c);
        }
        let rows: Vec<(Inst, Buf)> = self.plan.rec.rows.iter().copied().collect();
        for (l, buf) in rows {
            let data = self.f.buf(buf);
            let t = b.func.new_buf(BufData {
                name: format!("rows_{}", data.name),
                rank: 2,
                elem: data.elem,
                kind: BufKind::Tape,
            });
            self.rows.insert((l, buf), t);
            if let Some(p) = self.loop_of(l) {
                if !self.counter.contains_key(&p) && !self.ck.contains_key(&p) {
                    let z = b.iconst(0);
                    let c = b.cell(Ty::Int, "iter", z);
                    self.counter.insert(p, c);
                }
            }
        }
        let snaps: Vec<(Inst, usize)> = self.plan.rec.snapshots.iter().copied().collect();
        for (i, k) in snaps {
            let InstKind::Call { args, .. } = &self.f.inst(i).kind else {
                unreachable!()
            };
            let CallArg::Buf { buf, .. } = &args[k] else {
                unreachable!()
            };
            let data = self.f.buf(*buf);
            let t = b.func.new_buf(BufData {
                name: format!("snap_{}", data.name),
                rank: 2,
                elem: data.elem,
                kind: BufKind::Tape,
            });
            self.snap.insert((i, k), t);
            if let Some(l) = self.loop_of(i) {
                if !self.counter.contains_key(&l) && !self.ck.contains_key(&l) {
                    let z = b.iconst(0);
                    let c = b.cell(Ty::Int, "iter", z);
                    self.counter.insert(l, c);
                }
            }
        }
    }

    /// The loop strictly enclosing instruction `i`, if any.
    fn enclosing_loop(&self, i: Inst) -> Option<Inst> {
        let chain = self.plan.structure.chain(i);
        chain[..chain.len() - 1].iter().rev().copied().find(|l| {
            matches!(
                self.f.inst(*l).kind,
                InstKind::For { .. } | InstKind::While { .. }
            )
        })
    }

    /// The parallel loop strictly enclosing loop `l`, if any.
    fn parallel_ancestor(&self, l: Inst) -> Option<Inst> {
        let chain = self.plan.structure.chain(l);
        chain[..chain.len() - 1]
            .iter()
            .rev()
            .copied()
            .find(|p| self.f.parallel.contains_key(p))
    }

    /// The tape index of a value saved by loop `l` at slot `k`: `[k]`, or for a loop
    /// nested in a parallel loop `[i, k]` with `i` the parallel iteration.
    pub(super) fn tape_index(&self, l: Inst, k: Value) -> Vec<Value> {
        match self.row_of.get(&l) {
            Some(p) => vec![self.iteration[p], k],
            None => vec![k],
        }
    }

    /// At the start of an iteration of parallel loop `p` (forward sweep, or its adjoint
    /// with the counts saved then): a fresh counter for each loop nested in it that saves.
    pub(super) fn parallel_counters(&mut self, b: &mut Builder, p: Inst, reverse: bool) {
        let mut nested: Vec<Inst> = self
            .row_of
            .iter()
            .filter(|(_, q)| **q == p)
            .map(|(l, _)| *l)
            .collect();
        nested.sort();
        for l in nested {
            let start = if reverse {
                let i = self.iteration[&p];
                b.load(self.counts[&l], vec![i])
            } else {
                b.iconst(0)
            };
            let c = b.cell(Ty::Int, "iter", start);
            self.counter.insert(l, c);
        }
    }

    /// At the end of a forward iteration of parallel loop `p`: each nested loop's count.
    pub(super) fn save_parallel_counts(&mut self, b: &mut Builder, p: Inst) {
        let mut nested: Vec<Inst> = self
            .row_of
            .iter()
            .filter(|(_, q)| **q == p)
            .map(|(l, _)| *l)
            .collect();
        nested.sort();
        for l in nested {
            let k = b.get(self.counter[&l]);
            let i = self.iteration[&p];
            b.store(self.counts[&l], vec![i], k);
        }
    }

    pub(super) fn loop_of(&self, i: Inst) -> Option<Inst> {
        let blk = self.plan.structure.inst_block[i.index()].expect("placed instruction");
        self.plan.structure.enclosing_loop(self.f, blk)
    }

    /// The snapshot row of call `i` in the current (forward or reverse) iteration.
    pub(super) fn snapshot_row(&mut self, b: &mut Builder, i: Inst) -> Value {
        match self.loop_of(i) {
            Some(l) => self.iteration[&l],
            None => b.iconst(0),
        }
    }
}

/// A call inside a parallel loop whose buffer argument is snapshotted would need a
/// snapshot row per parallel iteration, which the snapshot tapes do not have yet.
fn parallel_tapes(f: &Function, rec: &Recording, structure: &Structure) -> Result<(), String> {
    let in_parallel = |i: Inst| {
        structure
            .chain(i)
            .iter()
            .any(|l| f.parallel.contains_key(l))
    };
    if rec.snapshots.iter().any(|(i, _)| in_parallel(*i)) {
        return Err(
            "phidiff: a call inside a parallel loop passes a buffer that it writes; \
             not supported in parallel loops yet"
                .into(),
        );
    }
    Ok(())
}

/// ⌈(end − start) / step⌉ when positive, else 0: the trip count of a range loop.
pub(super) fn trip_count(b: &mut Builder, s: Value, e: Value, step: Option<Value>) -> Value {
    let len = range_len(b, s, e);
    match step {
        None => len,
        Some(step) => {
            let one = b.iconst(1);
            let t = b.add(len, step);
            let t = b.sub(t, one);
            b.div(t, step)
        }
    }
}

/// `end − start` when positive, else 0 (an upper bound of a range's trip count).
pub(super) fn range_len(b: &mut Builder, s: Value, e: Value) -> Value {
    let c = b.binary(BinOp::Gt, e, s);
    b.branch(c, &[Ty::Int], |b| vec![b.sub(e, s)], |b| vec![b.iconst(0)])[0]
}

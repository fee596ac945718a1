//! Crate-level tests that run the whole pipeline without rustc.

mod backward;
mod coarsening;
mod expansion;
mod extremum;
mod fused;
mod gather;
mod ir_snapshots;
mod program_gen;
mod random_programs;
mod same_slots;
mod split;
mod strip;
mod twin_if;

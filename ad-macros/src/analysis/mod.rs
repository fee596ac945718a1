//! Analyses over the IR, as side tables keyed by ids: activity (varied ∧ useful), loop trip
//! counts, and to-be-recorded values (store vs recompute, with loop structure).

pub mod activity;
pub mod loops;
pub mod recording;
pub mod reuse;

//! Analyses over the IR, as side tables keyed by ids: activity (varied ∧ useful) and
//! to-be-recorded values (store vs recompute, with loop structure).

pub mod activity;
pub mod recording;

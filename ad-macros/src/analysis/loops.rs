//! Loop trip counts: a `for` loop over a range that no `break` or `return` leaves early runs
//! exactly ⌈(end − start) / step⌉ times, so the reverse sweep recomputes its trip count from
//! the range instead of counting iterations in the forward sweep.

use crate::ir::*;

/// The range whose length is the trip count of loop `i`, when it is known at loop entry.
pub fn static_trip(f: &Function, i: Inst) -> Option<&RangeSpec> {
    match &f.inst(i).kind {
        InstKind::For { range, exit, .. } if exit.is_empty() => Some(range),
        _ => None,
    }
}

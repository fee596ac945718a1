//! Thread-local observers of checkpointed loops: [`record`] collects a
//! [`Report`] of every loop whose reverse phase finishes inside it (for
//! tests and benchmarks), and [`with_progress`] shows a long reverse phase
//! advancing (for users).

use std::cell::RefCell;

use super::Stats;

/// What one checkpointed loop did, published when its reverse phase ends.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The scheme: `"revolve"`, `"periodic"` or `"online"`.
    pub scheme: &'static str,
    /// The storage: `"memory"` or `"disk"`.
    pub storage: &'static str,
    /// The schedule's counts.
    pub stats: Stats,
    /// The most snapshot bytes held at one time.
    pub peak_snapshot_bytes: usize,
}

/// How far a reverse phase has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Steps whose adjoint has run.
    pub steps_reversed: usize,
    /// All steps of the loop.
    pub steps: usize,
    /// Plain steps recomputed so far in the reverse phase.
    pub recomputed_steps: usize,
}

impl Progress {
    /// `steps_reversed / steps` (1 for an empty loop).
    ///
    /// ```
    /// use ad_core::checkpoint::{with_progress, Checkpointer, Scheme, StorageKind, Action};
    /// use std::{cell::Cell, rc::Rc};
    ///
    /// let last = Rc::new(Cell::new(0.0));
    /// let sink = Rc::clone(&last);
    /// with_progress(move |p| sink.set(p.fraction()), || {
    ///     let mut ck = Checkpointer::<f64>::new(Scheme::Online { snapshots: 3 }, StorageKind::Memory, None);
    ///     for i in 0..50 {
    ///         ck.forward_step(i, |s| s.push_float(0.0));
    ///     }
    ///     ck.end_forward(50);
    ///     loop {
    ///         match ck.next_reverse() {
    ///             Action::Store { slot, .. } => ck.store(slot, |s| s.push_float(0.0)),
    ///             Action::Restore { slot, .. } => ck.restore(slot, |r| { r.float(); }),
    ///             Action::Done => break,
    ///             _ => {}
    ///         }
    ///     }
    /// });
    /// assert_eq!(last.get(), 1.0);
    /// ```
    pub fn fraction(&self) -> f64 {
        if self.steps == 0 {
            1.0
        } else {
            self.steps_reversed as f64 / self.steps as f64
        }
    }
}

type ProgressCallback = Box<dyn FnMut(Progress)>;

thread_local! {
    /// One list of reports per active [`record`], innermost last.
    static RECORDERS: RefCell<Vec<Vec<Report>>> = const { RefCell::new(Vec::new()) };
    /// One callback per active [`with_progress`], innermost last; `None`
    /// while it runs.
    static CALLBACKS: RefCell<Vec<Option<ProgressCallback>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` and returns its value with the reports of every checkpointed
/// loop whose reverse phase finished inside it on this thread, in order.
/// Nested calls each see their own loops, and the outer one sees them too.
///
/// ```
/// use ad_core::checkpoint::{record, Action, Checkpointer, Scheme, StorageKind};
///
/// let ((), reports) = record(|| {
///     let mut ck = Checkpointer::<f64>::new(Scheme::Revolve { snapshots: 2 }, StorageKind::Memory, Some(0));
///     ck.end_forward(0);
///     assert_eq!(ck.next_reverse(), Action::Done);
/// });
/// assert_eq!(reports.len(), 1);
/// assert_eq!((reports[0].scheme, reports[0].stats.steps), ("revolve", 0));
/// ```
pub fn record<R>(f: impl FnOnce() -> R) -> (R, Vec<Report>) {
    /// Removes this recorder also when `f` panics.
    struct Recording;
    impl Drop for Recording {
        fn drop(&mut self) {
            RECORDERS.with(|recorders| recorders.borrow_mut().pop());
        }
    }

    RECORDERS.with(|recorders| recorders.borrow_mut().push(Vec::new()));
    let recording = Recording;
    let value = f();
    let reports = RECORDERS.with(|recorders| {
        let mut recorders = recorders.borrow_mut();
        let mine = std::mem::take(recorders.last_mut().expect("this recorder"));
        if let [.., outer, _] = recorders.as_mut_slice() {
            outer.extend(mine.iter().cloned());
        }
        mine
    });
    drop(recording);
    (value, reports)
}

/// Hands `report` to the innermost active [`record`], if any.
pub(crate) fn publish(report: Report) {
    RECORDERS.with(|recorders| {
        if let Some(reports) = recorders.borrow_mut().last_mut() {
            reports.push(report);
        }
    });
}

/// Runs `f` with `callback` receiving the [`Progress`] of every checkpointed
/// reverse phase on this thread: at its start, every 1 % of its steps, and
/// at its end. The callback must own what it captures (share a counter
/// through `Rc<Cell<_>>`, or print).
///
/// ```
/// use ad_core::checkpoint::{with_progress, Action, Checkpointer, Scheme, StorageKind};
/// use std::{cell::RefCell, rc::Rc};
///
/// let seen = Rc::new(RefCell::new(Vec::new()));
/// let sink = Rc::clone(&seen);
/// with_progress(move |p| sink.borrow_mut().push(p.steps_reversed), || {
///     let mut ck = Checkpointer::<f64>::new(Scheme::Periodic { every: 10 }, StorageKind::Memory, Some(1000));
///     for i in 0..1000 {
///         ck.forward_step(i, |s| s.push_float(0.0));
///     }
///     ck.end_forward(1000);
///     loop {
///         match ck.next_reverse() {
///             Action::Store { slot, .. } => ck.store(slot, |s| s.push_float(0.0)),
///             Action::Restore { slot, .. } => ck.restore(slot, |r| { r.float(); }),
///             Action::Done => break,
///             _ => {}
///         }
///     }
/// });
/// let seen = seen.borrow();
/// assert_eq!((seen[0], seen[1], *seen.last().unwrap(), seen.len()), (0, 10, 1000, 101));
/// ```
pub fn with_progress<R>(callback: impl FnMut(Progress) + 'static, f: impl FnOnce() -> R) -> R {
    /// Removes this callback also when `f` panics.
    struct Installed;
    impl Drop for Installed {
        fn drop(&mut self) {
            CALLBACKS.with(|callbacks| callbacks.borrow_mut().pop());
        }
    }

    CALLBACKS.with(|callbacks| callbacks.borrow_mut().push(Some(Box::new(callback))));
    let _installed = Installed;
    f()
}

/// Whether a [`with_progress`] callback is active on this thread.
pub(crate) fn progress_wanted() -> bool {
    CALLBACKS.with(|callbacks| !callbacks.borrow().is_empty())
}

/// Calls the innermost progress callback (not while it is already running).
pub(crate) fn report_progress(progress: Progress) {
    let taken =
        CALLBACKS.with(|callbacks| callbacks.borrow_mut().last_mut().and_then(Option::take));
    if let Some(mut callback) = taken {
        callback(progress);
        CALLBACKS.with(|callbacks| {
            if let Some(slot) = callbacks.borrow_mut().last_mut() {
                *slot = Some(callback);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(steps: usize) -> Report {
        Report {
            scheme: "revolve",
            storage: "memory",
            stats: Stats {
                steps,
                ..Stats::default()
            },
            peak_snapshot_bytes: 0,
        }
    }

    #[test]
    fn nested_recorders_see_their_own_and_inner_reports() {
        publish(report(0)); // nobody listening: dropped
        let ((), outer) = record(|| {
            publish(report(1));
            let ((), inner) = record(|| publish(report(2)));
            assert_eq!(inner, [report(2)]);
        });
        assert_eq!(outer, [report(1), report(2)]);
    }

    #[test]
    fn a_panic_inside_record_leaves_no_recorder_behind() {
        let caught = std::panic::catch_unwind(|| record(|| panic!("boom")));
        assert!(caught.is_err());
        RECORDERS.with(|recorders| assert!(recorders.borrow().is_empty()));
        assert!(!progress_wanted());
    }

    #[test]
    fn progress_goes_to_the_innermost_callback() {
        use std::cell::Cell;
        use std::rc::Rc;
        let (outer, inner) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let (o, i) = (Rc::clone(&outer), Rc::clone(&inner));
        let progress = Progress {
            steps_reversed: 1,
            steps: 4,
            recomputed_steps: 0,
        };
        assert_eq!(progress.fraction(), 0.25);
        with_progress(
            move |_| o.set(o.get() + 1),
            || {
                report_progress(progress);
                with_progress(move |_| i.set(i.get() + 1), || report_progress(progress));
                report_progress(progress);
            },
        );
        assert_eq!((outer.get(), inner.get()), (2, 1));
        assert!(!progress_wanted());
        report_progress(progress); // nobody listening: fine
    }
}

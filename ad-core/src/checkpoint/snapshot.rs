//! A snapshot of a loop-carried state: its floats and its integers, written
//! and read back in the same order by generated code.

/// A loop-carried state: floats (`T`, scalars and buffers) and integers
/// (`i128`; generated code writes ints and bools with `as i128` and reads
/// them back with `as _` and `!= 0`).
///
/// A buffer is stored as its length (an integer) followed by its values, so
/// reading it back can check the length.
///
/// ```
/// use ad_core::checkpoint::Snapshot;
///
/// let (x, buf, k, flag) = (1.5_f64, vec![1.0, 2.0], 7_usize, true);
/// let mut snap = Snapshot::new();
/// snap.push_float(x);
/// snap.push_floats(&buf);
/// snap.push_int(k as i128);
/// snap.push_int(flag as i128);
///
/// let (mut x2, mut buf2, k2, flag2);
/// buf2 = vec![0.0; 2];
/// let mut r = snap.reader();
/// x2 = r.float();
/// r.floats_into(&mut buf2);
/// k2 = r.int() as usize;
/// flag2 = r.int() != 0;
/// r.finish();
/// assert_eq!((x2, buf2, k2, flag2), (x, buf, k, flag));
/// ```
#[derive(Debug, Default, PartialEq)]
pub struct Snapshot<T> {
    floats: Vec<T>,
    ints: Vec<i128>,
}

impl<T: Clone> Clone for Snapshot<T> {
    fn clone(&self) -> Self {
        Snapshot {
            floats: self.floats.clone(),
            ints: self.ints.clone(),
        }
    }

    /// Reuses `self`'s allocations.
    fn clone_from(&mut self, source: &Self) {
        self.floats.clone_from(&source.floats);
        self.ints.clone_from(&source.ints);
    }
}

impl<T: Copy> Snapshot<T> {
    /// An empty snapshot.
    pub fn new() -> Self {
        Snapshot {
            floats: Vec::new(),
            ints: Vec::new(),
        }
    }

    /// A snapshot of the given parts (as [`floats`](Self::floats) and
    /// [`ints`](Self::ints) return them).
    pub fn from_parts(floats: Vec<T>, ints: Vec<i128>) -> Self {
        Snapshot { floats, ints }
    }

    /// Empties the snapshot, keeping its allocation.
    pub fn clear(&mut self) {
        self.floats.clear();
        self.ints.clear();
    }

    /// Appends one float.
    #[inline]
    pub fn push_float(&mut self, value: T) {
        self.floats.push(value);
    }

    /// Appends a buffer: its length, then its values.
    #[inline]
    pub fn push_floats(&mut self, values: &[T]) {
        self.ints.push(values.len() as i128);
        self.floats.extend_from_slice(values);
    }

    /// Appends one integer.
    #[inline]
    pub fn push_int(&mut self, value: i128) {
        self.ints.push(value);
    }

    /// All floats, in push order.
    pub fn floats(&self) -> &[T] {
        &self.floats
    }

    /// All integers (buffer lengths included), in push order.
    pub fn ints(&self) -> &[i128] {
        &self.ints
    }

    /// The floats as the `Vec` they live in (for `TypeId` dispatch).
    pub(crate) fn float_vec(&self) -> &Vec<T> {
        &self.floats
    }

    /// Both parts, for decoding into.
    pub(crate) fn parts_mut(&mut self) -> (&mut Vec<T>, &mut Vec<i128>) {
        (&mut self.floats, &mut self.ints)
    }

    /// The payload size in bytes.
    pub fn bytes(&self) -> usize {
        self.floats.len() * core::mem::size_of::<T>() + self.ints.len() * 16
    }

    /// A reader that returns the values in push order.
    pub fn reader(&self) -> SnapshotReader<'_, T> {
        SnapshotReader {
            snapshot: self,
            next_float: 0,
            next_int: 0,
        }
    }
}

/// Reads a [`Snapshot`] back in the order it was written. Reading more
/// than was written, or a buffer of another length, panics with a message
/// saying what did not match.
#[derive(Debug)]
pub struct SnapshotReader<'a, T> {
    snapshot: &'a Snapshot<T>,
    next_float: usize,
    next_int: usize,
}

impl<T: Copy> SnapshotReader<'_, T> {
    /// The next float.
    #[inline]
    #[track_caller]
    pub fn float(&mut self) -> T {
        let Some(&value) = self.snapshot.floats.get(self.next_float) else {
            panic!(
                "phidiff checkpoint: snapshot read past its {} floats",
                self.snapshot.floats.len()
            );
        };
        self.next_float += 1;
        value
    }

    /// The next integer.
    #[inline]
    #[track_caller]
    pub fn int(&mut self) -> i128 {
        let Some(&value) = self.snapshot.ints.get(self.next_int) else {
            panic!(
                "phidiff checkpoint: snapshot read past its {} integers",
                self.snapshot.ints.len()
            );
        };
        self.next_int += 1;
        value
    }

    /// The next buffer's values, as a slice.
    #[track_caller]
    fn buffer(&mut self) -> &[T] {
        let len = self.int() as usize;
        let start = self.next_float;
        let Some(values) = self.snapshot.floats.get(start..start + len) else {
            panic!(
                "phidiff checkpoint: snapshot buffer of length {len} runs past its {} floats",
                self.snapshot.floats.len()
            );
        };
        self.next_float += len;
        values
    }

    /// Copies the next buffer into `out`.
    ///
    /// # Panics
    /// If the stored buffer's length is not `out.len()`.
    #[track_caller]
    pub fn floats_into(&mut self, out: &mut [T]) {
        let values = self.buffer();
        assert_eq!(
            values.len(),
            out.len(),
            "phidiff checkpoint: restoring a buffer of length {} from a snapshot \
             of length {}",
            out.len(),
            values.len()
        );
        out.copy_from_slice(values);
    }

    /// Replaces `out` by the next buffer, whatever its length (for a `Vec`
    /// whose length the loop changes).
    #[track_caller]
    pub fn floats_into_vec(&mut self, out: &mut Vec<T>) {
        let values = self.buffer();
        out.clear();
        out.extend_from_slice(values);
    }

    /// Panics unless every value written has been read: a state restored
    /// with fewer reads than it was stored with is a code generation bug.
    #[track_caller]
    pub fn finish(self) {
        let (floats, ints) = (self.snapshot.floats.len(), self.snapshot.ints.len());
        assert!(
            self.next_float == floats && self.next_int == ints,
            "phidiff checkpoint: snapshot restored incompletely: read {} of {floats} floats \
             and {} of {ints} integers",
            self.next_float,
            self.next_int
        );
    }
}

#[cfg(test)]
mod tests {
    use super::Snapshot;
    use crate::Dual;

    #[test]
    fn values_round_trip_in_order() {
        let mut snap = Snapshot::new();
        snap.push_int(-3);
        snap.push_floats(&[Dual::new(1.0_f64, 2.0), Dual::new(3.0, 4.0)]);
        snap.push_float(Dual::new(5.0, 6.0));
        assert_eq!(snap.bytes(), 3 * 16 + 2 * 16);
        let mut r = snap.reader();
        assert_eq!(r.int(), -3);
        let mut buf = vec![Dual::default(); 2];
        r.floats_into(&mut buf);
        assert_eq!((buf[1].re, buf[1].eps), (3.0, 4.0));
        assert_eq!(r.float().eps, 6.0);
        r.finish();
    }

    #[test]
    fn clear_forgets_values() {
        let mut snap = Snapshot::new();
        snap.push_float(1.0_f32);
        snap.clear();
        assert_eq!(snap, Snapshot::new());
    }

    #[test]
    fn vectors_take_the_stored_length() {
        let mut snap = Snapshot::new();
        snap.push_floats(&[1.0_f64, 2.0, 3.0]);
        let mut v = vec![9.0];
        let mut r = snap.reader();
        r.floats_into_vec(&mut v);
        r.finish();
        assert_eq!(v, [1.0, 2.0, 3.0]);
    }

    #[test]
    #[should_panic(expected = "restoring a buffer of length 2 from a snapshot of length 3")]
    fn buffer_length_mismatch_names_both_lengths() {
        let mut snap = Snapshot::new();
        snap.push_floats(&[1.0_f64, 2.0, 3.0]);
        snap.reader().floats_into(&mut [0.0; 2]);
    }

    #[test]
    #[should_panic(expected = "read past its 1 floats")]
    fn reading_too_far_panics() {
        let mut snap = Snapshot::new();
        snap.push_float(1.0_f64);
        let mut r = snap.reader();
        r.float();
        r.float();
    }

    #[test]
    #[should_panic(expected = "read 0 of 1 floats")]
    fn unread_values_are_reported() {
        let mut snap = Snapshot::new();
        snap.push_float(1.0_f64);
        snap.reader().finish();
    }
}

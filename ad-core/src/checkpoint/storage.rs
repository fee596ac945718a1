//! Where snapshots live: the [`Storage`] trait, in-[`Memory`] storage, and
//! the run-time choice between memory and disk ([`StorageKind`]).

use std::path::PathBuf;

use super::{CheckpointError, Disk, Snapshot};

/// Holds snapshots in numbered slots for a checkpointing schedule.
///
/// A slot is overwritten by the next `store` into it and may be restored
/// any number of times.
pub trait Storage<T> {
    /// Saves `snapshot` into `slot`, replacing what was there.
    ///
    /// # Errors
    /// A [`CheckpointError`] if the snapshot cannot be saved.
    fn store(&mut self, slot: usize, snapshot: &Snapshot<T>) -> Result<(), CheckpointError>;

    /// Overwrites `snapshot` with the one saved in `slot`.
    ///
    /// # Errors
    /// [`CheckpointError::EmptySlot`] if nothing was stored there, or a
    /// storage failure.
    fn restore(&mut self, slot: usize, snapshot: &mut Snapshot<T>) -> Result<(), CheckpointError>;

    /// The snapshot in `slot` without a copy, where the storage holds it in
    /// memory (`None`: use [`restore`](Self::restore)).
    fn view(&self, slot: usize) -> Option<&Snapshot<T>> {
        let _ = slot;
        None
    }

    /// Saves into `slot` the snapshot `fill` writes into a cleared one, by
    /// default through a [`store`](Self::store) of `scratch`; in-memory
    /// storage lets `fill` write into the slot itself (one copy of the state,
    /// not two).
    ///
    /// # Errors
    /// As [`store`](Self::store).
    fn store_with(
        &mut self,
        slot: usize,
        scratch: &mut Snapshot<T>,
        fill: &mut dyn FnMut(&mut Snapshot<T>),
    ) -> Result<(), CheckpointError>
    where
        T: Copy,
    {
        scratch.clear();
        fill(scratch);
        self.store(slot, scratch)
    }

    /// Bytes of snapshot payload held now.
    fn bytes(&self) -> usize;

    /// The most bytes held at one time.
    fn peak_bytes(&self) -> usize;

    /// `"memory"` or `"disk"` (for reports).
    fn name(&self) -> &'static str;
}

/// Snapshots kept as clones in memory; works for any float type.
///
/// ```
/// use ad_core::checkpoint::{Memory, Snapshot, Storage};
/// use ad_core::Dual;
///
/// let mut memory = Memory::new();
/// let mut snap = Snapshot::new();
/// snap.push_float(Dual::new(1.0_f64, 2.0));
/// memory.store(3, &snap).unwrap();
/// let mut back = Snapshot::new();
/// memory.restore(3, &mut back).unwrap();
/// assert_eq!(back.floats()[0].eps, 2.0);
/// assert_eq!(memory.peak_bytes(), 16);
/// ```
#[derive(Clone, Debug)]
pub struct Memory<T> {
    slots: Vec<Option<Snapshot<T>>>,
    bytes: usize,
    peak_bytes: usize,
}

impl<T> Memory<T> {
    /// Empty storage.
    pub fn new() -> Self {
        Memory {
            slots: Vec::new(),
            bytes: 0,
            peak_bytes: 0,
        }
    }
}

impl<T> Default for Memory<T> {
    fn default() -> Self {
        Memory::new()
    }
}

impl<T: Copy> Storage<T> for Memory<T> {
    fn store(&mut self, slot: usize, snapshot: &Snapshot<T>) -> Result<(), CheckpointError> {
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        let held = self.slots[slot].get_or_insert_with(Snapshot::new);
        self.bytes -= held.bytes();
        held.clone_from(snapshot);
        self.bytes += held.bytes();
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        Ok(())
    }

    fn restore(&mut self, slot: usize, snapshot: &mut Snapshot<T>) -> Result<(), CheckpointError> {
        match self.slots.get(slot) {
            Some(Some(held)) => {
                snapshot.clone_from(held);
                Ok(())
            }
            _ => Err(CheckpointError::EmptySlot { slot }),
        }
    }

    fn view(&self, slot: usize) -> Option<&Snapshot<T>> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    fn store_with(
        &mut self,
        slot: usize,
        _scratch: &mut Snapshot<T>,
        fill: &mut dyn FnMut(&mut Snapshot<T>),
    ) -> Result<(), CheckpointError> {
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        let held = self.slots[slot].get_or_insert_with(Snapshot::new);
        self.bytes -= held.bytes();
        held.clear();
        fill(held);
        self.bytes += held.bytes();
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        Ok(())
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    fn peak_bytes(&self) -> usize {
        self.peak_bytes
    }

    fn name(&self) -> &'static str {
        "memory"
    }
}

/// Which storage a checkpointed loop uses, chosen at run time so memory and
/// disk go through the same generated code.
///
/// ```
/// use ad_core::checkpoint::StorageKind;
///
/// let storage = StorageKind::Memory.open::<f64>().unwrap();
/// assert_eq!(storage.name(), "memory");
/// let storage = StorageKind::Disk.open::<f32>().unwrap();
/// assert_eq!(storage.name(), "disk");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StorageKind {
    /// [`Memory`].
    #[default]
    Memory,
    /// [`Disk`] in a private directory under [`std::env::temp_dir`].
    Disk,
    /// [`Disk`] in a private directory created inside this one.
    DiskIn(PathBuf),
}

impl StorageKind {
    /// Opens the storage for floats of type `T`.
    ///
    /// # Errors
    /// For disk: [`CheckpointError::UnsupportedScalar`] if `T` has no disk
    /// encoding, [`CheckpointError::Io`] if the directory cannot be created.
    pub fn open<T: Copy + Send + 'static>(
        &self,
    ) -> Result<Box<dyn Storage<T> + Send>, CheckpointError> {
        Ok(match self {
            StorageKind::Memory => Box::new(Memory::<T>::new()),
            StorageKind::Disk => {
                Disk::check_scalar::<T>()?;
                Box::new(Disk::new()?)
            }
            StorageKind::DiskIn(parent) => {
                Disk::check_scalar::<T>()?;
                Box::new(Disk::in_dir(parent)?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_counts_bytes_held_and_peak() {
        let mut memory = Memory::new();
        let mut snap = Snapshot::new();
        snap.push_floats(&[1.0_f64; 4]); // 32 bytes + 16 for the length
        memory.store(0, &snap).unwrap();
        memory.store(2, &snap).unwrap();
        assert_eq!((memory.bytes(), memory.peak_bytes()), (96, 96));
        memory.store(2, &Snapshot::new()).unwrap();
        assert_eq!((memory.bytes(), memory.peak_bytes()), (48, 96));
    }

    #[test]
    fn memory_restores_a_slot_repeatedly_and_rejects_empty_ones() {
        let mut memory = Memory::new();
        let mut snap = Snapshot::new();
        snap.push_int(42);
        memory.store(1, &snap).unwrap();
        for _ in 0..2 {
            let mut back = Snapshot::<f32>::new();
            memory.restore(1, &mut back).unwrap();
            assert_eq!(back.ints(), [42]);
        }
        let mut back = Snapshot::new();
        assert!(matches!(
            memory.restore(0, &mut back),
            Err(CheckpointError::EmptySlot { slot: 0 })
        ));
        assert!(matches!(
            memory.restore(5, &mut back),
            Err(CheckpointError::EmptySlot { slot: 5 })
        ));
    }
}

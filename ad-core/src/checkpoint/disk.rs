//! Snapshots in files: a private temporary directory holding one file of
//! fixed-size slots, removed when the storage is dropped — also when a panic
//! unwinds.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::codec::{encoded_len, read_snapshot, scalar_format, write_snapshot};
use super::{CheckpointError, Snapshot, Storage};

/// Distinguishes the directories of one process.
static NEXT_DIRECTORY: AtomicUsize = AtomicUsize::new(0);

/// The name of the shared slot file inside the private directory.
const SLOT_FILE: &str = "snapshots.bin";

/// Snapshot storage in files.
///
/// [`Disk::new`] creates a fresh directory under [`std::env::temp_dir`]
/// (named from the process id, a counter and the clock, created
/// exclusively, mode `0o700` on Unix); [`Disk::in_dir`] creates it inside a
/// chosen directory instead. Dropping the `Disk` removes the directory and
/// everything in it.
///
/// All slots share one file, `snapshots.bin`, created in that directory by
/// the first store and kept open: the first snapshot stored fixes the slot
/// size (its encoded size — every snapshot of one loop has the same), and
/// slot `k` lives at offset `k × size`. A store encodes into a reused buffer
/// and writes it with one positioned write; a restore reads the slot back
/// with one positioned read into a reused buffer and decodes it. Nothing is
/// synced to the device: the files only have to outlive the loop, not the
/// machine. A later snapshot larger than the slot size goes to a file of its
/// own, `slot-k.bin` (correct, just slower); a smaller one still fits its
/// slot.
///
/// Values are encoded by their type (`f32`, `f64`, `Dual<f32>`,
/// `Dual<f64>`, `Dual<Dual<f32>>`, `Dual<Dual<f64>>`, bit-exact,
/// little-endian), so generated code keeps its plain `T: Float` bound; any
/// other float type gives [`CheckpointError::UnsupportedScalar`]. Every I/O
/// failure is a [`CheckpointError::Io`] naming the path and the operation.
///
/// ```
/// use ad_core::checkpoint::{Disk, Snapshot, Storage};
///
/// let mut disk = Disk::new().unwrap();
/// let dir = disk.path().to_path_buf();
/// let mut snap = Snapshot::new();
/// snap.push_floats(&[1.0_f64, 2.0]);
/// disk.store(0, &snap).unwrap();
/// let mut back = Snapshot::new();
/// disk.restore(0, &mut back).unwrap();
/// assert_eq!(back, snap);
/// drop(disk);
/// assert!(!dir.exists());
/// ```
#[derive(Debug)]
pub struct Disk {
    dir: PathBuf,
    /// `dir/snapshots.bin`.
    slot_file_path: PathBuf,
    /// The shared slot file, open from the first store on.
    slot_file: Option<File>,
    /// Bytes per slot in the shared file; 0 until the first store.
    slot_size: usize,
    /// Where each slot's snapshot is (index: slot).
    slots: Vec<Slot>,
    /// Encoding and decoding buffer, reused across stores and restores.
    buffer: Vec<u8>,
    bytes: usize,
    peak_bytes: usize,
}

/// Where one slot's snapshot is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Never stored.
    Empty,
    /// The first `len` bytes of its region in the shared file.
    Shared { len: usize },
    /// Its own file `slot-k.bin`, `len` bytes (larger than the slot size).
    Own { len: usize },
}

impl Slot {
    fn len(self) -> usize {
        match self {
            Slot::Empty => 0,
            Slot::Shared { len } | Slot::Own { len } => len,
        }
    }
}

impl Disk {
    /// Storage in a new private directory under [`std::env::temp_dir`].
    ///
    /// # Errors
    /// [`CheckpointError::Io`] if the directory cannot be created.
    pub fn new() -> Result<Self, CheckpointError> {
        Disk::in_dir(std::env::temp_dir())
    }

    /// Storage in a new private directory inside `parent` (which must
    /// exist). Only that new directory is removed on drop.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] if the directory cannot be created.
    pub fn in_dir(parent: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let parent = parent.as_ref();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut attempts = 0;
        loop {
            let counter = NEXT_DIRECTORY.fetch_add(1, Ordering::Relaxed);
            let name = format!(
                "phidiff-checkpoints-{}-{counter}-{nanos}",
                std::process::id()
            );
            let dir = parent.join(name);
            match create_private_dir(&dir) {
                Ok(()) => {
                    return Ok(Disk {
                        slot_file_path: dir.join(SLOT_FILE),
                        dir,
                        slot_file: None,
                        slot_size: 0,
                        slots: Vec::new(),
                        buffer: Vec::new(),
                        bytes: 0,
                        peak_bytes: 0,
                    })
                }
                // Left over by another process with our pid: try the next name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 64 => {
                    attempts += 1;
                }
                Err(source) => {
                    return Err(CheckpointError::Io {
                        path: dir,
                        op: "create directory",
                        source,
                    })
                }
            }
        }
    }

    /// Bytes of snapshots held now (their encoded size, summed over the
    /// slots).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The most bytes of snapshots held at one time.
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes
    }

    /// The directory holding the snapshot files.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `Ok` if snapshots of float type `T` can be stored on disk.
    ///
    /// # Errors
    /// [`CheckpointError::UnsupportedScalar`] naming `T`.
    ///
    /// ```
    /// use ad_core::checkpoint::Disk;
    /// use ad_core::Dual;
    /// assert!(Disk::check_scalar::<Dual<Dual<f64>>>().is_ok());
    /// assert!(Disk::check_scalar::<u32>().is_err());
    /// ```
    pub fn check_scalar<T: 'static>() -> Result<(), CheckpointError> {
        match scalar_format::<T>() {
            Some(_) => Ok(()),
            None => Err(CheckpointError::UnsupportedScalar {
                type_name: std::any::type_name::<T>(),
            }),
        }
    }

    /// The file of a snapshot larger than the slot size.
    fn own_path(&self, slot: usize) -> PathBuf {
        self.dir.join(format!("slot-{slot}.bin"))
    }

    /// Byte offset of `slot` in the shared file.
    fn offset(&self, slot: usize) -> io::Result<u64> {
        (slot as u64)
            .checked_mul(self.slot_size as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "slot offset overflows"))
    }

    /// Writes the encoded snapshot in `self.buffer` into `slot` of the
    /// shared file, opening the file on first use.
    fn write_shared(&mut self, slot: usize) -> Result<(), CheckpointError> {
        let path = &self.slot_file_path;
        if self.slot_file.is_none() {
            self.slot_file = Some(create_slot_file(path).map_err(io_error(path, "create"))?);
        }
        let offset = self.offset(slot).map_err(io_error(path, "write"))?;
        let file = self.slot_file.as_ref().expect("opened above");
        write_at(file, &self.buffer, offset).map_err(io_error(path, "write"))
    }

    /// Writes the encoded snapshot in `self.buffer` to the own file of
    /// `slot`.
    fn write_own(&self, slot: usize) -> Result<(), CheckpointError> {
        let path = self.own_path(slot);
        let mut file = File::create(&path).map_err(io_error(&path, "create"))?;
        file.write_all(&self.buffer)
            .map_err(io_error(&path, "write"))
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir(dir)
}

/// Creates the shared slot file (which must not exist yet), for reading
/// and writing.
fn create_slot_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, offset)
}

#[cfg(unix)]
fn read_at(file: &File, bytes: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(bytes, offset)
}

#[cfg(not(unix))]
fn write_at(mut file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, bytes: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(bytes)
}

/// An [`CheckpointError::Io`] for `path`.
fn io_error<'a>(
    path: &'a Path,
    op: &'static str,
) -> impl FnOnce(io::Error) -> CheckpointError + 'a {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

impl<T: Copy + 'static> Storage<T> for Disk {
    fn store(&mut self, slot: usize, snapshot: &Snapshot<T>) -> Result<(), CheckpointError> {
        Disk::check_scalar::<T>()?;
        self.buffer.clear();
        self.buffer.reserve(encoded_len(snapshot));
        // Into a `Vec` this fails only for an unsupported type, checked above.
        write_snapshot(snapshot, &mut self.buffer)
            .map_err(io_error(&self.slot_file_path, "encode"))?;
        let len = self.buffer.len();
        debug_assert_eq!(len, encoded_len(snapshot));
        if self.slot_size == 0 {
            self.slot_size = len;
        }
        if slot >= self.slots.len() {
            self.slots.resize(slot + 1, Slot::Empty);
        }
        let held = if len <= self.slot_size {
            self.write_shared(slot)?;
            if let Slot::Own { .. } = self.slots[slot] {
                // Stale now; the shared slot holds the snapshot.
                let path = self.own_path(slot);
                fs::remove_file(&path).map_err(io_error(&path, "remove"))?;
            }
            Slot::Shared { len }
        } else {
            self.write_own(slot)?;
            Slot::Own { len }
        };
        self.bytes = self.bytes - self.slots[slot].len() + len;
        self.slots[slot] = held;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        Ok(())
    }

    fn restore(&mut self, slot: usize, snapshot: &mut Snapshot<T>) -> Result<(), CheckpointError> {
        Disk::check_scalar::<T>()?;
        let held = self.slots.get(slot).copied().unwrap_or(Slot::Empty);
        match held {
            Slot::Empty => return Err(CheckpointError::EmptySlot { slot }),
            Slot::Shared { len } => {
                let path = &self.slot_file_path;
                let offset = self.offset(slot).map_err(io_error(path, "read"))?;
                let file = self.slot_file.as_ref().expect("a shared slot was written");
                self.buffer.resize(len, 0);
                read_at(file, &mut self.buffer, offset).map_err(io_error(path, "read"))?;
            }
            Slot::Own { len } => {
                let path = self.own_path(slot);
                self.buffer.clear();
                self.buffer.reserve(len);
                File::open(&path)
                    .and_then(|mut file| file.read_to_end(&mut self.buffer))
                    .map_err(io_error(&path, "read"))?;
            }
        }
        read_snapshot(&self.buffer, snapshot).map_err(|reason| CheckpointError::Corrupt {
            path: match held {
                Slot::Own { .. } => self.own_path(slot),
                _ => self.slot_file_path.clone(),
            },
            reason: format!("slot {slot}: {reason}"),
        })
    }

    fn bytes(&self) -> usize {
        Disk::bytes(self)
    }

    fn peak_bytes(&self) -> usize {
        Disk::peak_bytes(self)
    }

    fn name(&self) -> &'static str {
        "disk"
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        // Close the slot file first: some systems refuse to remove open files.
        drop(self.slot_file.take());
        // Nothing to report to from a destructor; a directory that cannot be
        // removed is left behind (its name says what it is).
        let _ = fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dual;

    #[test]
    fn directories_are_fresh_private_and_removed_on_drop() {
        let a = Disk::new().unwrap();
        let b = Disk::new().unwrap();
        assert_ne!(a.path(), b.path());
        assert!(a.path().starts_with(std::env::temp_dir()));
        assert!(a.path().is_dir());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(a.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
    }

    #[test]
    fn slots_hold_dual_snapshots_and_count_file_bytes() {
        let mut disk = Disk::new().unwrap();
        let mut snap = Snapshot::new();
        snap.push_float(Dual::new(1.0_f64, 2.0));
        snap.push_int(9);
        disk.store(4, &snap).unwrap();
        disk.store(4, &snap).unwrap(); // overwrite: same bytes
        let file_bytes = 24 + 16 + 16;
        assert_eq!((disk.bytes(), disk.peak_bytes()), (file_bytes, file_bytes));
        // One shared file holding slots of that size; no file per slot.
        let file = disk.path().join(SLOT_FILE);
        assert_eq!(fs::metadata(&file).unwrap().len(), 5 * file_bytes as u64);
        assert_eq!(fs::read_dir(disk.path()).unwrap().count(), 1);
        for _ in 0..2 {
            let mut back = Snapshot::<Dual<f64>>::new();
            disk.restore(4, &mut back).unwrap();
            assert_eq!((back.floats()[0].eps, back.ints()[0]), (2.0, 9));
        }
    }

    #[test]
    fn empty_slots_and_unsupported_types_are_typed_errors() {
        let mut disk = Disk::new().unwrap();
        let mut back = Snapshot::<f64>::new();
        assert!(matches!(
            disk.restore(0, &mut back),
            Err(CheckpointError::EmptySlot { slot: 0 })
        ));
        let err = disk.store(0, &Snapshot::from_parts(vec![1_i32], vec![]));
        match err {
            Err(CheckpointError::UnsupportedScalar { type_name }) => assert_eq!(type_name, "i32"),
            other => panic!("expected UnsupportedScalar, got {other:?}"),
        }
    }

    #[test]
    fn io_failure_names_the_path() {
        let mut disk = Disk::new().unwrap();
        fs::remove_dir_all(disk.path()).unwrap();
        let err = disk
            .store(2, &Snapshot::from_parts(vec![1.0_f32], vec![]))
            .unwrap_err();
        let expected = disk.path().join(SLOT_FILE);
        match &err {
            CheckpointError::Io { path, op, .. } => assert_eq!((path, *op), (&expected, "create")),
            other => panic!("expected Io, got {other:?}"),
        }
        assert!(err.to_string().contains(&expected.display().to_string()));
    }

    #[test]
    fn a_chosen_parent_keeps_existing_and_rejects_missing() {
        let parent = Disk::new().unwrap();
        let inner = Disk::in_dir(parent.path()).unwrap();
        assert_eq!(inner.path().parent(), Some(parent.path()));
        drop(inner);
        assert!(parent.path().is_dir());
        let missing = parent.path().join("missing");
        match Disk::in_dir(&missing) {
            Err(CheckpointError::Io { path, op, .. }) => {
                assert!(path.starts_with(&missing));
                assert_eq!(op, "create directory");
            }
            other => panic!("expected Io, got {other:?}"),
        }
    }

    #[test]
    fn directory_is_removed_when_a_panic_unwinds() {
        let mut seen = None;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut disk = Disk::new().unwrap();
            seen = Some(disk.path().to_path_buf());
            disk.store(0, &Snapshot::from_parts(vec![1.0_f64], vec![]))
                .unwrap();
            panic!("adjoint failed");
        }));
        assert!(result.is_err());
        let dir = seen.unwrap();
        assert!(!dir.exists(), "{} survived the panic", dir.display());
    }

    /// A snapshot of `n` floats and 2 integers, different for each `seed`
    /// (NaN payloads and signed zeros included, to check bits).
    fn numbered(seed: u64, n: usize) -> Snapshot<f64> {
        let floats = (0..n as u64)
            .map(|i| match (seed + i) % 7 {
                0 => -0.0,
                1 => f64::from_bits(0x7ff8_0000_0000_0000 | seed),
                _ => (seed * 1000 + i) as f64 / 3.0,
            })
            .collect();
        Snapshot::from_parts(floats, vec![seed as i128, -(i128::from(seed) << 90)])
    }

    fn bits(snap: &Snapshot<f64>) -> (Vec<u64>, Vec<i128>) {
        let floats = snap.floats().iter().map(|f| f.to_bits()).collect();
        (floats, snap.ints().to_vec())
    }

    #[test]
    fn many_stores_and_restores_in_varying_order_round_trip_exactly() {
        let mut disk = Disk::new().unwrap();
        let mut expected: Vec<Option<Snapshot<f64>>> = vec![None; 5];
        let mut back = Snapshot::new();
        // A fixed pseudo-random walk over 5 slots, storing and restoring.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for step in 0..2000_u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // A store one time in three, a restore otherwise.
            let pick = state % 15;
            let slot = (pick % 5) as usize;
            if pick < 5 || expected[slot].is_none() {
                let snap = numbered(step, 40);
                disk.store(slot, &snap).unwrap();
                expected[slot] = Some(snap);
            } else {
                disk.restore(slot, &mut back).unwrap();
                assert_eq!(bits(&back), bits(expected[slot].as_ref().unwrap()));
            }
        }
        // Every slot again, twice, backwards.
        for slot in (0..5).rev().chain((0..5).rev()) {
            disk.restore(slot, &mut back).unwrap();
            assert_eq!(bits(&back), bits(expected[slot].as_ref().unwrap()));
        }
        let one = encoded_len(&numbered(0, 40));
        assert_eq!((disk.bytes(), disk.peak_bytes()), (5 * one, 5 * one));
        assert_eq!(fs::read_dir(disk.path()).unwrap().count(), 1);
    }

    #[test]
    fn snapshots_of_other_sizes_are_kept_correctly() {
        let mut disk = Disk::new().unwrap();
        let (small, mid, large) = (numbered(1, 2), numbered(2, 10), numbered(3, 50));
        let len = |s: &Snapshot<f64>| encoded_len(s);
        disk.store(1, &mid).unwrap(); // fixes the slot size
        disk.store(0, &small).unwrap(); // fits its slot
        disk.store(2, &large).unwrap(); // its own file
        assert!(disk.path().join("slot-2.bin").is_file());
        assert!(!disk.path().join("slot-0.bin").exists());
        assert_eq!(disk.bytes(), len(&small) + len(&mid) + len(&large));
        let mut back = Snapshot::new();
        for (slot, snap) in [(2, &large), (0, &small), (1, &mid), (2, &large)] {
            disk.restore(slot, &mut back).unwrap();
            assert_eq!(bits(&back), bits(snap));
        }
        // Back to the slot size: the shared file again, the own file goes.
        disk.store(2, &mid).unwrap();
        assert!(!disk.path().join("slot-2.bin").exists());
        disk.restore(2, &mut back).unwrap();
        assert_eq!(bits(&back), bits(&mid));
        // And out again, into a slot past the others.
        disk.store(7, &large).unwrap();
        disk.store(1, &large).unwrap();
        for (slot, snap) in [(0, &small), (1, &large), (2, &mid), (7, &large)] {
            disk.restore(slot, &mut back).unwrap();
            assert_eq!(bits(&back), bits(snap));
        }
        assert_eq!(
            (disk.bytes(), disk.peak_bytes()),
            (
                len(&small) + len(&mid) + 2 * len(&large),
                len(&small) + len(&mid) + 2 * len(&large)
            )
        );
        let dir = disk.path().to_path_buf();
        drop(disk);
        assert!(!dir.exists());
    }

    #[test]
    #[ignore = "timing; run with --release --ignored --nocapture"]
    fn store_and_restore_cost_of_a_16_kib_snapshot() {
        let mut disk = Disk::new().unwrap();
        let snap = Snapshot::from_parts((0..2045).map(f64::from).collect::<Vec<_>>(), vec![]);
        assert_eq!(encoded_len(&snap), 16 * 1024);
        let mut back = Snapshot::<f64>::new();
        for slot in 0..8 {
            disk.store(slot, &snap).unwrap();
        }
        let n = 20_000;
        let start = std::time::Instant::now();
        for i in 0..n {
            disk.store(i % 8, &snap).unwrap();
        }
        let store = start.elapsed() / n as u32;
        let start = std::time::Instant::now();
        for i in 0..n {
            disk.restore(i % 8, &mut back).unwrap();
        }
        let restore = start.elapsed() / n as u32;
        assert_eq!(back, snap);
        eprintln!("16 KiB snapshot: store {store:?}, restore {restore:?}");
    }
}

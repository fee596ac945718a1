//! Snapshots in files: a private temporary directory with one file per
//! slot, removed when the storage is dropped — also when a panic unwinds.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::codec::{encoded_len, read_snapshot, scalar_format, write_snapshot};
use super::{CheckpointError, Snapshot, Storage};

/// Distinguishes the directories of one process.
static NEXT_DIRECTORY: AtomicUsize = AtomicUsize::new(0);

/// Snapshot storage in files.
///
/// [`Disk::new`] creates a fresh directory under [`std::env::temp_dir`]
/// (named from the process id, a counter and the clock, created
/// exclusively, mode `0o700` on Unix); [`Disk::in_dir`] creates it inside a
/// chosen directory instead. Slot `k` is the file `slot-k.bin`; stores go
/// through a buffered writer, restores read the whole file. Dropping the
/// `Disk` removes the directory and everything in it.
///
/// Values are encoded by their type (`f32`, `f64`, `Dual<f32>`,
/// `Dual<f64>`, `Dual<Dual<f32>>`, `Dual<Dual<f64>>`, bit-exact,
/// little-endian), so generated code keeps its plain `T: Float` bound; any
/// other float type gives [`CheckpointError::UnsupportedScalar`]. Every I/O
/// failure is a [`CheckpointError::Io`] naming the path.
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
    /// File size of each slot written (0 for never).
    slot_bytes: Vec<usize>,
    bytes: usize,
    peak_bytes: usize,
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
                        dir,
                        slot_bytes: Vec::new(),
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

    /// Bytes of snapshot files held now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The most bytes of snapshot files held at one time.
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

    fn slot_path(&self, slot: usize) -> PathBuf {
        self.dir.join(format!("slot-{slot}.bin"))
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
        let path = self.slot_path(slot);
        let file = File::create(&path).map_err(io_error(&path, "create"))?;
        let mut writer = BufWriter::new(file);
        write_snapshot(snapshot, &mut writer).map_err(io_error(&path, "write"))?;
        writer.flush().map_err(io_error(&path, "write"))?;
        let written = encoded_len(snapshot);
        if slot >= self.slot_bytes.len() {
            self.slot_bytes.resize(slot + 1, 0);
        }
        self.bytes = self.bytes - self.slot_bytes[slot] + written;
        self.slot_bytes[slot] = written;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        Ok(())
    }

    fn restore(&mut self, slot: usize, snapshot: &mut Snapshot<T>) -> Result<(), CheckpointError> {
        Disk::check_scalar::<T>()?;
        if !matches!(self.slot_bytes.get(slot), Some(&bytes) if bytes > 0) {
            return Err(CheckpointError::EmptySlot { slot });
        }
        let path = self.slot_path(slot);
        let bytes = fs::read(&path).map_err(io_error(&path, "read"))?;
        read_snapshot(&bytes, snapshot).map_err(|reason| CheckpointError::Corrupt { path, reason })
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
        assert!(disk.path().join("slot-4.bin").is_file());
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
        let expected = disk.path().join("slot-2.bin");
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
}

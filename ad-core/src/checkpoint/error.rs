//! The one error type of checkpointing: bad parameters, unsupported scalar
//! types for disk storage, and I/O failures that name their path.

use core::fmt;
use std::io;
use std::path::PathBuf;

/// Why a checkpointing schedule or snapshot storage failed.
///
/// Generated code cannot return errors from the middle of a reverse sweep, so
/// [`Checkpointer`](super::Checkpointer) turns these into a panic whose
/// message is this error's `Display` (which names the path for I/O failures).
///
/// ```
/// use ad_core::checkpoint::CheckpointError;
/// use std::path::PathBuf;
///
/// let err = CheckpointError::Io {
///     path: PathBuf::from("/tmp/x/slot-0.bin"),
///     op: "create",
///     source: std::io::Error::from(std::io::ErrorKind::NotFound),
/// };
/// assert!(err.to_string().contains("/tmp/x/slot-0.bin"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointError {
    /// A scheme parameter is out of range (`snapshots = 0`, `every = 0`).
    InvalidParameter {
        /// The scheme: `"revolve"`, `"periodic"` or `"online"`.
        scheme: &'static str,
        /// The parameter's name as written in `#[checkpoint(...)]`.
        parameter: &'static str,
        /// The rejected value.
        value: usize,
    },
    /// Disk storage cannot encode this float type (it knows `f32`, `f64`
    /// and `Dual`s of them, nested up to twice).
    UnsupportedScalar {
        /// `std::any::type_name` of the float type.
        type_name: &'static str,
    },
    /// A file system operation failed.
    Io {
        /// The file or directory operated on.
        path: PathBuf,
        /// What was attempted: `"create directory"`, `"create"`, `"write"`,
        /// `"read"`, ….
        op: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// A snapshot file does not hold what was written to it.
    Corrupt {
        /// The snapshot file.
        path: PathBuf,
        /// What did not match.
        reason: String,
    },
    /// A slot was restored that was never stored.
    EmptySlot {
        /// The slot index.
        slot: usize,
    },
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::InvalidParameter {
                scheme,
                parameter,
                value,
            } => write!(
                f,
                "checkpoint scheme `{scheme}`: `{parameter}` must be at least 1, got {value}"
            ),
            CheckpointError::UnsupportedScalar { type_name } => write!(
                f,
                "disk checkpoints cannot store the float type `{type_name}` \
                 (supported: f32, f64, Dual<f32>, Dual<f64>, Dual<Dual<f32>>, \
                 Dual<Dual<f64>>); use `storage = memory`"
            ),
            CheckpointError::Io { path, op, source } => {
                write!(
                    f,
                    "checkpoint I/O failed: {op} `{}`: {source}",
                    path.display()
                )
            }
            CheckpointError::Corrupt { path, reason } => {
                write!(
                    f,
                    "checkpoint file `{}` is corrupt: {reason}",
                    path.display()
                )
            }
            CheckpointError::EmptySlot { slot } => {
                write!(f, "checkpoint slot {slot} was restored but never stored")
            }
        }
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckpointError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CheckpointError;
    use std::error::Error;

    #[test]
    fn io_errors_name_the_path_and_keep_the_source() {
        let err = CheckpointError::Io {
            path: "/nowhere/slot-3.bin".into(),
            op: "read",
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let text = err.to_string();
        assert!(text.contains("read `/nowhere/slot-3.bin`"), "{text}");
        assert!(err.source().is_some());
    }

    #[test]
    fn parameter_errors_say_which_parameter() {
        let err = CheckpointError::InvalidParameter {
            scheme: "revolve",
            parameter: "snapshots",
            value: 0,
        };
        assert_eq!(
            err.to_string(),
            "checkpoint scheme `revolve`: `snapshots` must be at least 1, got 0"
        );
        assert!(err.source().is_none());
    }
}

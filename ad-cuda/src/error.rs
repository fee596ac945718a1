//! What can go wrong, said so a user knows what to do.

use std::fmt;

/// An error of the CUDA runtime. Its `Display` says what to do about it.
///
/// ```
/// use ad_cuda::CudaError;
///
/// let e = CudaError::NoDevice { ordinal: 1, count: 1 };
/// assert_eq!(e.to_string(), "there is no CUDA device 1 (1 device(s) present)");
/// assert!(CudaError::NoNvrtc.to_string().contains("LD_LIBRARY_PATH"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaError {
    /// `libnvrtc` could not be loaded.
    NoNvrtc,
    /// `libcuda` (the driver) could not be loaded: no NVIDIA driver on this machine.
    NoDriver,
    /// The driver is there but reports no device with this ordinal.
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// NVRTC rejected a kernel: its name and NVRTC's log.
    Compile {
        /// The kernel's name.
        kernel: String,
        /// NVRTC's compilation log.
        log: String,
    },
    /// A driver call failed.
    Driver(String),
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::NoNvrtc => write!(
                f,
                "cannot load libnvrtc (CUDA's runtime compiler): install it (for example \
                 `pip install nvidia-cuda-nvrtc-cu12` in a virtual environment) and put its \
                 `nvidia/cuda_nvrtc/lib` directory on LD_LIBRARY_PATH; `scripts/test-all` does \
                 both"
            ),
            CudaError::NoDriver => write!(
                f,
                "cannot load libcuda: there is no NVIDIA driver on this machine; use the CPU \
                 launcher instead"
            ),
            CudaError::NoDevice { ordinal, count } => {
                write!(
                    f,
                    "there is no CUDA device {ordinal} ({count} device(s) present)"
                )
            }
            CudaError::Compile { kernel, log } => {
                write!(f, "NVRTC could not compile kernel `{kernel}`:\n{log}")
            }
            CudaError::Driver(msg) => write!(f, "CUDA driver error: {msg}"),
        }
    }
}

impl std::error::Error for CudaError {}

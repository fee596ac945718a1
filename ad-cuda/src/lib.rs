//! phidiff's CUDA runtime: compiles kernels with NVRTC (once per source, cached), runs
//! them on a device through cudarc, and runs the same element function on the CPU with
//! rayon as reference and fallback.
//!
//! Nothing here links against CUDA: cudarc opens `libnvrtc` and `libcuda` at run time,
//! the first time a kernel is compiled or a device is opened. Without them the calls
//! return a [`CudaError`] that says what is missing, and code can fall back to the CPU
//! launcher ([`cpu::for_each`]).

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

mod compile;
pub mod cpu;
mod device;
mod error;

pub use compile::{compile, compile_count, nvrtc_available, ARCH};
pub use cudarc;
pub use device::{driver_available, Gpu};
pub use error::CudaError;

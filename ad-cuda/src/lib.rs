//! phidiff's CUDA runtime: compiles kernels with NVRTC (once per source, cached), runs
//! them on a device through cudarc, and runs the same element function on the CPU with
//! rayon as reference and fallback.
//!
//! Nothing here links against CUDA: cudarc opens `libnvrtc` and `libcuda` at run time,
//! the first time a kernel is compiled or a device is opened. Without them the calls
//! return a [`CudaError`] that says what is missing, and code can fall back to the CPU
//! launcher ([`cpu::for_each`]).
//!
//! Users normally meet this crate through the launchers that
//! `#[differentiate(reverse, cuda)]` generates (`phidiff::cuda` with the `cuda` feature);
//! `ad-cuda/examples/kernel_gradient.rs` uses it directly with hand-written kernels.
//!
//! # Example
//!
//! Open a device if there is one, else run on the CPU: the same code runs on machines
//! with and without CUDA.
//!
//! ```
//! use ad_cuda::{cpu, CudaError, Gpu};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! match Gpu::new(0) {
//!     Ok(gpu) => {
//!         // A round trip through device memory.
//!         let x = gpu.upload(&[1.0_f64, 2.0, 3.0]).unwrap();
//!         assert_eq!(gpu.download(&x).unwrap(), [1.0, 2.0, 3.0]);
//!     }
//!     Err(CudaError::NoDriver | CudaError::NoDevice { .. }) => {
//!         // The CPU launcher: one call per element, in parallel.
//!         let hits = AtomicUsize::new(0);
//!         cpu::for_each(1000, |i| {
//!             hits.fetch_add(i % 2, Ordering::Relaxed);
//!         });
//!         assert_eq!(hits.into_inner(), 500);
//!     }
//!     Err(e) => panic!("{e}"),
//! }
//! ```

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

mod compile;
pub mod cpu;
mod device;
mod error;

pub use compile::{arch, compile, compile_count, nvrtc_available, MIN_COMPUTE_CAPABILITY};
pub use cudarc;
pub use device::{driver_available, Gpu};
pub use error::CudaError;

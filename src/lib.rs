//! phidiff: automatic differentiation for Rust by source transformation.
pub use ad_core::*;
pub use ad_macros::differentiate;

/// Runtime for differentiated rayon loops: deterministic blocked loops and
/// reductions, owned writes, private accumulators, atomic float adds.
#[cfg(feature = "rayon")]
pub mod par {
    pub use ad_rayon::*;
}

/// Differentiable MPI (feature `mpi`, needs a system MPI): `Comm` and its
/// communication methods with `_fwd`/`_rev`, so a differentiated function that takes
/// `comm: &Comm` is differentiated through its communication.
#[cfg(feature = "mpi")]
pub mod mpi {
    pub use ad_mpi::*;
}

/// The CUDA runtime (feature `cuda`): NVRTC compilation with a cache, devices and
/// launches over cudarc, for the kernels of `#[differentiate(reverse, cuda)]`.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use ad_cuda::*;
}

/// The user guide's snippets, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
pub struct UserGuideSnippets;

#[doc(hidden)]
pub mod __private {
    pub use ad_core::__private::*;
    pub use ad_macros::differentiate_coarsen_off;
    #[cfg(feature = "rayon")]
    pub use ad_rayon as par;
}

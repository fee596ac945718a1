//! NVRTC compilation, once per source text.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};

use crate::CudaError;

/// Whether `libnvrtc` can be loaded on this machine (searched like any shared library:
/// `LD_LIBRARY_PATH` and the system's paths).
///
/// ```
/// use ad_cuda::{compile, nvrtc_available, CudaError};
///
/// if !nvrtc_available() {
///     assert_eq!(compile("k", "extern \"C\" __global__ void k() {}").unwrap_err(), CudaError::NoNvrtc);
/// }
/// ```
pub fn nvrtc_available() -> bool {
    // SAFETY: `is_culib_present` only tries to open the library (libloading) and reports
    // whether it succeeded; no symbol of it is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiled sources and how many compilations ran.
fn cache() -> &'static Mutex<HashMap<String, Arc<Ptx>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Ptx>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

static COMPILATIONS: AtomicUsize = AtomicUsize::new(0);

/// The oldest compute capability the generated kernels run on, as NVRTC numbers it
/// (7.0, Volta): `atomicAdd` on doubles needs 6.0, warp-synchronous shuffles and
/// `__activemask` 7.0.
pub const MIN_COMPUTE_CAPABILITY: i32 = 70;

/// The virtual architecture kernels are compiled for: the oldest one that the loaded
/// NVRTC supports at or above [`MIN_COMPUTE_CAPABILITY`]. That is `compute_70` with
/// CUDA 12 and `compute_75` with CUDA 13, which dropped Volta. The PTX then loads on
/// every device that both NVRTC and the generated kernels support; the driver compiles it
/// for the device at hand.
///
/// # Errors
/// [`CudaError::NoNvrtc`] without libnvrtc; [`CudaError::Compile`] (kernel `*`) if
/// NVRTC supports no architecture at or above [`MIN_COMPUTE_CAPABILITY`].
///
/// ```
/// use ad_cuda::{arch, nvrtc_available, CudaError, MIN_COMPUTE_CAPABILITY};
///
/// match arch() {
///     Ok(arch) => {
///         let number: i32 = arch.strip_prefix("compute_").unwrap().parse().unwrap();
///         assert!(number >= MIN_COMPUTE_CAPABILITY);
///     }
///     Err(e) => assert!(!nvrtc_available() && e == CudaError::NoNvrtc),
/// }
/// ```
pub fn arch() -> Result<&'static str, CudaError> {
    static ARCH: OnceLock<Result<String, CudaError>> = OnceLock::new();
    if !nvrtc_available() {
        return Err(CudaError::NoNvrtc);
    }
    ARCH.get_or_init(|| {
        let supported = supported_archs()?;
        let lowest = supported
            .iter()
            .copied()
            .filter(|&a| a >= MIN_COMPUTE_CAPABILITY)
            .min()
            .ok_or_else(|| CudaError::Compile {
                kernel: "*".into(),
                log: format!(
                    "this NVRTC supports the architectures {supported:?}, none of them at or \
                     above compute_{MIN_COMPUTE_CAPABILITY}, which the generated kernels need"
                ),
            })?;
        Ok(format!("compute_{lowest}"))
    })
    .as_deref()
    .map_err(Clone::clone)
}

/// The architectures (as `70` for `compute_70`) that the loaded NVRTC compiles for.
fn supported_archs() -> Result<Vec<i32>, CudaError> {
    use cudarc::nvrtc::sys::{nvrtcGetNumSupportedArchs, nvrtcGetSupportedArchs, nvrtcResult};
    let failed = |what: &str, r: nvrtcResult| CudaError::Compile {
        kernel: "*".into(),
        log: format!("{what} failed: {r:?}"),
    };
    let mut count = 0;
    // SAFETY: libnvrtc is loadable (checked by the caller); the call writes one int.
    let r = unsafe { nvrtcGetNumSupportedArchs(&mut count) };
    if r != nvrtcResult::NVRTC_SUCCESS {
        return Err(failed("nvrtcGetNumSupportedArchs", r));
    }
    let mut archs = vec![0; count.max(0) as usize];
    // SAFETY: `archs` has room for the `count` ints NVRTC writes.
    let r = unsafe { nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
    if r != nvrtcResult::NVRTC_SUCCESS {
        return Err(failed("nvrtcGetSupportedArchs", r));
    }
    Ok(archs)
}

/// How many times NVRTC has compiled a source in this process (a cached source is
/// compiled once).
pub fn compile_count() -> usize {
    COMPILATIONS.load(Ordering::Relaxed)
}

/// The PTX of the CUDA C `source`, whose kernel is named `kernel` (for messages),
/// compiled by NVRTC the first time this source is seen and taken from a process-wide
/// cache after that.
///
/// # Errors
/// [`CudaError::NoNvrtc`] without libnvrtc; [`CudaError::Compile`] with NVRTC's log if
/// the source does not compile.
///
/// ```
/// use ad_cuda::{compile, compile_count, nvrtc_available, CudaError};
///
/// const SCALE: &str = r#"
/// extern "C" __global__ void scale(double* x, const double a, const unsigned long long n) {
///     const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
///     if (i < n) x[i] *= a;
/// }"#;
///
/// if nvrtc_available() {
///     let ptx = compile("scale", SCALE).unwrap();
///     assert!(ptx.to_src().contains(".entry scale"));
///     let count = compile_count();
///     compile("scale", SCALE).unwrap(); // cached: not compiled again
///     assert_eq!(compile_count(), count);
///     // A source NVRTC rejects: the error carries its log.
///     let err = compile("bad", "extern \"C\" __global__ void bad() { undeclared = 1; }").unwrap_err();
///     assert!(matches!(err, CudaError::Compile { ref kernel, ref log } if kernel == "bad" && log.contains("undeclared")));
/// } else {
///     assert_eq!(compile("scale", SCALE).unwrap_err(), CudaError::NoNvrtc);
/// }
/// ```
pub fn compile(kernel: &str, source: &str) -> Result<Arc<Ptx>, CudaError> {
    if let Some(ptx) = cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(source)
    {
        return Ok(ptx.clone());
    }
    let opts = CompileOptions {
        name: Some(format!("{kernel}.cu")),
        arch: Some(arch()?),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(source, opts).map_err(|e| match e {
        CompileError::CompileError { log, .. } => CudaError::Compile {
            kernel: kernel.to_string(),
            log: log.to_string_lossy().into_owned(),
        },
        other => CudaError::Compile {
            kernel: kernel.to_string(),
            log: other.to_string(),
        },
    })?;
    COMPILATIONS.fetch_add(1, Ordering::Relaxed);
    let ptx = Arc::new(ptx);
    cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(source.to_string(), ptx.clone());
    Ok(ptx)
}

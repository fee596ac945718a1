//! A device, its stream, buffers and launches, over cudarc.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits,
};

use crate::{compile, CudaError};

/// Whether `libcuda` (the NVIDIA driver) can be loaded on this machine.
pub fn driver_available() -> bool {
    // SAFETY: as `nvrtc_available`: it only tries to open the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// A CUDA device and the stream kernels run on.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    block: u32,
    /// Kernels loaded into this context, by name and source.
    loaded: std::sync::Mutex<std::collections::HashMap<(String, String), CudaFunction>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ctx.ordinal())
            .field("block", &self.block)
            .finish()
    }
}

fn driver(e: impl std::fmt::Debug) -> CudaError {
    CudaError::Driver(format!("{e:?}"))
}

impl Gpu {
    /// Device `ordinal`, with launches of 256 threads per block.
    ///
    /// # Errors
    /// [`CudaError::NoDriver`] without libcuda, [`CudaError::NoDevice`] if there is no such
    /// device.
    pub fn new(ordinal: usize) -> Result<Gpu, CudaError> {
        if !driver_available() {
            return Err(CudaError::NoDriver);
        }
        let count = CudaContext::device_count().map_err(driver)?.max(0) as usize;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver)?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            block: 256,
            loaded: Default::default(),
        })
    }

    /// The same device with `block` threads per block in its launches (overrides the
    /// automatic choice of 256).
    ///
    /// # Panics
    /// If `block` is 0 or above 1024.
    pub fn with_block_size(mut self, block: u32) -> Gpu {
        assert!(
            (1..=1024).contains(&block),
            "Gpu::with_block_size: {block} threads per block (1..=1024)"
        );
        self.block = block;
        self
    }

    /// The launch configuration for `n` threads: `ceil(n / block)` blocks of `block`.
    pub fn config(&self, n: usize) -> LaunchConfig {
        let n = u32::try_from(n).expect("at most 2³² threads per launch");
        LaunchConfig {
            grid_dim: (n.div_ceil(self.block).max(1), 1, 1),
            block_dim: (self.block, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The stream launches run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Kernel `name` of the CUDA C `source`, compiled with NVRTC (cached per process) and
    /// loaded into this device's context once.
    pub fn kernel(&self, name: &str, source: &str) -> Result<CudaFunction, CudaError> {
        let key = (name.to_string(), source.to_string());
        if let Some(f) = self
            .loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(f.clone());
        }
        let ptx = compile(name, source)?;
        let module = self.ctx.load_module((*ptx).clone()).map_err(driver)?;
        let f = module.load_function(name).map_err(driver)?;
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, f.clone());
        Ok(f)
    }

    /// A device copy of `host`.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, CudaError> {
        self.stream.clone_htod(host).map_err(driver)
    }

    /// `n` zeros on the device.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<CudaSlice<T>, CudaError> {
        self.stream.alloc_zeros(n).map_err(driver)
    }

    /// A host copy of `device`.
    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        device: &CudaSlice<T>,
    ) -> Result<Vec<T>, CudaError> {
        self.stream.clone_dtoh(device).map_err(driver)
    }

    /// Waits for every launch so far.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream.synchronize().map_err(driver)
    }
}

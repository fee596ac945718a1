//! The runtime without a GPU: NVRTC compiles a kernel to PTX (once per source), a bad
//! kernel gives NVRTC's log, and opening a device without a driver says so. With a
//! device present, the kernel also runs and matches the CPU launcher.
//!
//! NVRTC comes from the `nvidia-cuda-nvrtc-cu12` wheel that `scripts/test-all` installs.
//! Without it these tests print a notice and pass, unless `PHIDIFF_REQUIRE_NVRTC=1`
//! (which `scripts/test-all` sets) makes a missing NVRTC a failure.

use ad_cuda::cudarc::driver::PushKernelArg;
use ad_cuda::{
    arch, compile, compile_count, cpu, driver_available, nvrtc_available, CudaError, Gpu,
    MIN_COMPUTE_CAPABILITY,
};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(const double a, const double* x, double* y, const unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"#;

/// Whether NVRTC is here; if not, prints a notice (or fails when it is required).
fn nvrtc_or_skip(test: &str) -> bool {
    if nvrtc_available() {
        return true;
    }
    if std::env::var("PHIDIFF_REQUIRE_NVRTC").as_deref() == Ok("1") {
        panic!("{test}: {}", CudaError::NoNvrtc);
    }
    eprintln!("{test}: skipped, {}", CudaError::NoNvrtc);
    false
}

#[test]
fn nvrtc_compiles_once_per_source() {
    if !nvrtc_or_skip("nvrtc_compiles_once_per_source") {
        return;
    }
    let source = SAXPY.replace("saxpy", "saxpy_once");
    let before = compile_count();
    let ptx = compile("saxpy_once", &source).expect("saxpy compiles");
    assert!(
        ptx.to_src().contains(".entry saxpy_once"),
        "PTX:\n{}",
        ptx.to_src()
    );
    // The PTX is for the architecture `arch()` chose: the oldest this NVRTC has from
    // compute_70 on (CUDA 13's NVRTC rejects compute_70).
    let arch = arch().expect("NVRTC lists its architectures");
    let number: i32 = arch["compute_".len()..].parse().expect("compute_NN");
    assert!(number >= MIN_COMPUTE_CAPABILITY, "{arch}");
    assert!(
        ptx.to_src().contains(&format!(".target sm_{number}")),
        "PTX for {arch}:\n{}",
        ptx.to_src()
    );
    let again = compile("saxpy_once", &source).expect("cached");
    assert_eq!(
        compile_count(),
        before + 1,
        "the second compile came from the cache"
    );
    assert_eq!(ptx.to_src(), again.to_src());
}

#[test]
fn a_bad_kernel_reports_nvrtc_log() {
    if !nvrtc_or_skip("a_bad_kernel_reports_nvrtc_log") {
        return;
    }
    let err = compile(
        "broken",
        "extern \"C\" __global__ void broken() { undefined_thing(); }",
    )
    .expect_err("does not compile");
    let CudaError::Compile { kernel, log } = &err else {
        panic!("expected a compile error, got {err:?}");
    };
    assert_eq!(kernel, "broken");
    assert!(log.contains("undefined_thing"), "log: {log}");
    assert!(err
        .to_string()
        .starts_with("NVRTC could not compile kernel `broken`"));
}

#[test]
fn device_or_a_clear_error() {
    match Gpu::new(0) {
        Err(CudaError::NoDriver) => {
            assert!(!driver_available());
            assert!(CudaError::NoDriver.to_string().contains("no NVIDIA driver"));
            eprintln!("device_or_a_clear_error: no driver here, the CPU launcher is the fallback");
        }
        Err(e @ CudaError::NoDevice { .. }) => {
            assert!(e.to_string().contains("there is no CUDA device 0"));
        }
        Err(e) => panic!("unexpected error opening device 0: {e}"),
        Ok(gpu) => {
            // A device: saxpy on it equals the CPU launcher.
            let n = 1000;
            let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
            let y0: Vec<f64> = (0..n).map(|i| 1.0 - i as f64).collect();
            let f = gpu.kernel("saxpy", SAXPY).expect("kernel");
            let dx = gpu.upload(&x).unwrap();
            let mut dy = gpu.upload(&y0).unwrap();
            let (a, count) = (2.0_f64, n as u64);
            let mut launch = gpu.stream().launch_builder(&f);
            launch.arg(&a).arg(&dx).arg(&mut dy).arg(&count);
            // SAFETY: the arguments match the kernel's parameters in type and order.
            unsafe { launch.launch(gpu.config(n)) }.expect("launch");
            let got = gpu.download(&dy).unwrap();
            let cells: Vec<std::sync::Mutex<f64>> =
                y0.iter().map(|v| std::sync::Mutex::new(*v)).collect();
            cpu::for_each(n, |i| {
                let mut c = cells[i].lock().unwrap();
                *c += a * x[i];
            });
            let want: Vec<f64> = cells.into_iter().map(|c| c.into_inner().unwrap()).collect();
            assert_eq!(got, want);
        }
    }
}

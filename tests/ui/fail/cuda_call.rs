use phidiff::differentiate;

// A helper phidiff does not inline (an early `return`) cannot be called in a CUDA kernel;
// plain helpers are inlined (tests/cuda_kernels.rs, `helper_in_a_kernel`).
fn halved(v: f64) -> f64 {
    if v < 0.0 {
        return 0.0;
    }
    v * 0.5
}

#[differentiate(reverse, cuda)]
fn k(i: usize, x: &[f64], y: &mut [f64]) {
    y[i] = halved(x[i]);
}

fn main() {}

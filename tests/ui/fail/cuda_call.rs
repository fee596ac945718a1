use phidiff::differentiate;

// A helper phidiff does not inline (a `return` inside a loop) cannot be called in a CUDA
// kernel; plain helpers are inlined (tests/cuda_kernels.rs, `helper_in_a_kernel`).
fn halved(v: f64) -> f64 {
    let mut s = v;
    for _ in 0..2 {
        if s < 0.0 {
            return 0.0;
        }
        s *= 0.5;
    }
    s
}

#[differentiate(reverse, cuda)]
fn k(i: usize, x: &[f64], y: &mut [f64]) {
    y[i] = halved(x[i]);
}

fn main() {}

//! Helpers shared by the ad-rayon tests.
#![allow(dead_code)]

/// Thread counts every determinism test runs on.
pub const THREADS: [usize; 3] = [1, 2, 8];

/// Runs `f` inside a rayon pool of `threads` threads.
pub fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("build rayon pool")
        .install(f)
}

/// Runs `f` on every count in [`THREADS`] and asserts all results equal.
pub fn same_on_all_threads<R: Send + PartialEq + std::fmt::Debug>(f: impl Fn() -> R + Sync) -> R {
    let results: Vec<R> = THREADS.iter().map(|&n| on_threads(n, &f)).collect();
    for (n, r) in THREADS.iter().zip(&results) {
        assert_eq!(
            r, &results[0],
            "result on {n} threads differs from 1 thread"
        );
    }
    results.into_iter().next().unwrap()
}

/// Deterministic pseudo-random u64 for index `i` (splitmix64).
pub fn hash(i: usize) -> u64 {
    let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Pseudo-random f64 in [-1, 1) scaled over many magnitudes, for i.
pub fn random_f64(i: usize) -> f64 {
    let unit = (hash(i) >> 11) as f64 / (1u64 << 53) as f64;
    (2.0 * unit - 1.0) * 10f64.powi((hash(i + 1) % 12) as i32 - 6)
}

/// Bit patterns, so `assert_eq!` compares floats bitwise (and -0.0 != 0.0).
pub fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

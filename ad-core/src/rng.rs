//! A small deterministic pseudo-random generator (SplitMix64) for the
//! gradient checks: reproducible across platforms and runs, no dependency.

/// SplitMix64: a 64-bit state advanced by a fixed odd increment and mixed by
/// two xor-shift-multiply rounds. Every seed (including 0) gives a full
/// period-2⁶⁴ stream; statistically good enough for test vectors.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The golden-ratio increment of SplitMix64.
    const INCREMENT: u64 = 0x9E37_79B9_7F4A_7C15;

    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::INCREMENT);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub(crate) fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1_u64 << 53) as f64)
    }

    /// Uniform in `[-1, 1)`.
    pub(crate) fn next_symmetric(&mut self) -> f64 {
        2.0 * self.next_unit() - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn is_deterministic_and_seed_dependent() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SplitMix64::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SplitMix64::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut other = SplitMix64::new(8);
        assert_eq!(a, b);
        assert_ne!(a[0], other.next_u64());
    }

    #[test]
    fn symmetric_draws_cover_the_interval() {
        let mut r = SplitMix64::new(0);
        let draws: Vec<f64> = (0..10_000).map(|_| r.next_symmetric()).collect();
        assert!(draws.iter().all(|v| (-1.0..1.0).contains(v)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!(draws.iter().any(|&v| v < -0.99) && draws.iter().any(|&v| v > 0.99));
    }
}

//! A tiny deterministic random number generator (SplitMix64) and the shuffles built on it.
//!
//! Data pipelines need reproducible randomness — the same seed must give the same split and
//! the same batch order on every machine and every run — but nothing cryptographic or
//! statistically fancy. SplitMix64 (Steele, Lea & Flood, 2014) is eight lines, passes
//! BigCrush, and has no dependencies, so the data crate needs no `rand`.

/// SplitMix64: a 64-bit state advanced by a constant, then scrambled.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started from `seed`. Equal seeds give equal streams.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..bound` (`bound > 0`), without modulo bias (Lemire's method
    /// with rejection).
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0);
        if bound <= 1 {
            return 0;
        }
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = (self.next_u64() as u128) * (bound as u128);
            if (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// A uniform float in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform float in `[low, high)` (`low` itself when the range is empty).
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.next_f64()
    }

    /// True with probability `p` (never for `p <= 0`, always for `p >= 1`).
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// Shuffle `items` in place (Fisher–Yates): every permutation equally likely.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// SplitMix64's output scramble applied to one value: a bijective 64-bit mix in which every
/// input bit affects every output bit.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of sample `index` in `epoch` of a pipeline seeded with `seed`.
///
/// Augmentation draws from `SplitMix64::new(sample_seed(seed, epoch, index))`, so what a
/// sample looks like depends only on these three numbers: not on the number of worker
/// threads, the batch size, the shuffle order or which thread got the sample.
pub fn sample_seed(seed: u64, epoch: u64, index: u64) -> u64 {
    let h = mix64(seed ^ 0x243F_6A88_85A3_08D3);
    let h = mix64(h ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    mix64(h ^ index.wrapping_mul(0xD6E8_FEB8_6659_FD93))
}

/// A random permutation of `0..n` drawn from `seed`.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..n).collect();
    SplitMix64::new(seed).shuffle(&mut indices);
    indices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    }

    #[test]
    fn known_first_value() {
        // Reference value of SplitMix64 seeded with 0 (from the original C code).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn permutation_is_a_permutation() {
        let p = permutation(1000, 7);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_ne!(p, (0..1000).collect::<Vec<_>>());
        assert_eq!(p, permutation(1000, 7));
        assert_ne!(p, permutation(1000, 8));
        assert!(permutation(0, 1).is_empty());
    }

    #[test]
    fn floats_and_sample_seeds() {
        let mut rng = SplitMix64::new(9);
        let draws: Vec<f64> = (0..10_000).map(|_| rng.uniform(2.0, 3.0)).collect();
        assert!(draws.iter().all(|&x| (2.0..3.0).contains(&x)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 2.5).abs() < 0.02, "{mean}");
        assert!(!rng.bernoulli(0.0) && rng.bernoulli(1.0));
        let seeds: std::collections::HashSet<u64> = (0..3)
            .flat_map(|s| (0..3).flat_map(move |e| (0..100).map(move |i| sample_seed(s, e, i))))
            .collect();
        assert_eq!(
            seeds.len(),
            900,
            "every (seed, epoch, index) gets its own stream"
        );
        assert_eq!(sample_seed(1, 2, 3), sample_seed(1, 2, 3));
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut rng = SplitMix64::new(3);
        let mut counts = [0usize; 10];
        for _ in 0..100_000 {
            counts[rng.below(10) as usize] += 1;
        }
        for count in counts {
            assert!((9_000..11_000).contains(&count), "{counts:?}");
        }
    }
}

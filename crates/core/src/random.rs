//! Counter-based random numbers: element `i` of a draw is a pure function of
//! `(seed, offset + i)`, so the CPU loop and the GPU kernel (which computes the same 32-bit
//! integer hash in WGSL) produce the same numbers from the same seed, in any order, on any
//! number of threads. A global generator hands out `(seed, offset)` pairs like PyTorch's default
//! generator; `manual_seed` resets it.

use std::sync::Mutex;

/// The PCG output permutation used as a 32-bit integer hash (also written in WGSL).
pub fn pcg_hash(value: u32) -> u32 {
    let state = value.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The 32-bit key derived from a 64-bit seed.
pub fn seed_key(seed: u64) -> u32 {
    pcg_hash((seed as u32) ^ pcg_hash((seed >> 32) as u32))
}

/// Second key used for the second uniform of a Box–Muller pair.
pub const SECOND_STREAM: u32 = 0x9E37_79B9;

/// Random 32 bits for `counter` under `key`.
pub fn random_bits(key: u32, counter: u32) -> u32 {
    pcg_hash(pcg_hash(counter ^ key).wrapping_add(key))
}

/// A uniform float in `[0, 1)` with 24 random bits (exact in f32).
pub fn unit_uniform(bits: u32) -> f32 {
    (bits >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// A standard normal by Box–Muller from two streams, computed in f32 like the GPU kernel.
pub fn standard_normal(key: u32, counter: u32) -> f32 {
    let u1 = ((random_bits(key, counter) >> 8) + 1) as f32 * (1.0 / 16_777_216.0);
    let u2 = unit_uniform(random_bits(key ^ SECOND_STREAM, counter));
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// The distribution of a random draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform on `[low, high)`.
    Uniform { low: f64, high: f64 },
    /// Normal with the given mean and standard deviation.
    Normal { mean: f64, std: f64 },
}

struct GlobalGenerator {
    seed: u64,
    offset: u64,
}

static GENERATOR: Mutex<GlobalGenerator> = Mutex::new(GlobalGenerator {
    seed: 0x5EED,
    offset: 0,
});

/// Reset the global generator (like `torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    let mut generator = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    generator.seed = seed;
    generator.offset = 0;
}

/// The global generator's `(seed, offset)`, to save in a checkpoint so that a resumed run
/// draws the same numbers as an uninterrupted one.
pub fn generator_state() -> (u64, u64) {
    let generator = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (generator.seed, generator.offset)
}

/// Restore a state returned by [`generator_state`].
pub fn set_generator_state(seed: u64, offset: u64) {
    let mut generator = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    generator.seed = seed;
    generator.offset = offset;
}

/// Reserve `count` counters from the global generator; returns `(seed, first counter)`.
pub fn next_draw(count: usize) -> (u64, u64) {
    let mut generator = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let draw = (generator.seed, generator.offset);
    generator.offset = generator.offset.wrapping_add(count as u64);
    draw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_bits_look_uniform() {
        let key = seed_key(42);
        let n = 100_000;
        let mean: f64 = (0..n)
            .map(|i| unit_uniform(random_bits(key, i)) as f64)
            .sum::<f64>()
            / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
        let normal_mean: f64 =
            (0..n).map(|i| standard_normal(key, i) as f64).sum::<f64>() / n as f64;
        let normal_var: f64 = (0..n)
            .map(|i| (standard_normal(key, i) as f64).powi(2))
            .sum::<f64>()
            / n as f64;
        assert!(normal_mean.abs() < 0.02, "mean {normal_mean}");
        assert!((normal_var - 1.0).abs() < 0.03, "var {normal_var}");
    }

    #[test]
    fn different_seeds_differ() {
        assert_ne!(random_bits(seed_key(1), 0), random_bits(seed_key(2), 0));
    }
}

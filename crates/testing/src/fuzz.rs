//! Seeded mutation fuzzing for the loaders, small enough for a plain `cargo test`: a valid
//! input is mutated a fixed number of times (bit flips, byte overwrites, truncations,
//! insertions, and length fields set to extreme values), and every outcome must be `Ok` or a
//! clean `Err`: a panic fails the test with the seed and mutation that caused it.

/// SplitMix64: a tiny, good-enough generator so that every run mutates the same way.
pub struct FuzzRng(u64);

impl FuzzRng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> FuzzRng {
        FuzzRng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }
}

/// Values that break length fields: zero, one, powers of two around the 32-bit limit, and
/// the all-ones patterns.
const EXTREMES: [u64; 8] = [
    0,
    1,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 40,
    u64::MAX / 2,
    u64::MAX,
];

/// One mutation of `valid`, chosen by `rng`; the second value says what was done.
pub fn mutate(valid: &[u8], rng: &mut FuzzRng) -> (Vec<u8>, String) {
    let mut bytes = valid.to_vec();
    let len = bytes.len().max(1);
    let what = match rng.below(6) {
        0 => {
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let bit = rng.below(len * 8);
                if let Some(byte) = bytes.get_mut(bit / 8) {
                    *byte ^= 1 << (bit % 8);
                }
            }
            format!("{flips} bit flips")
        }
        1 => {
            let at = rng.below(len);
            let value = rng.next_u64() as u8;
            if let Some(byte) = bytes.get_mut(at) {
                *byte = value;
            }
            format!("byte {at} = {value}")
        }
        2 => {
            let keep = rng.below(len);
            bytes.truncate(keep);
            format!("truncated to {keep}")
        }
        3 => {
            let at = rng.below(len);
            let count = 1 + rng.below(16);
            let insert: Vec<u8> = (0..count).map(|_| rng.next_u64() as u8).collect();
            let tail = bytes.split_off(at.min(bytes.len()));
            bytes.extend(insert);
            bytes.extend(tail);
            format!("{count} bytes inserted at {at}")
        }
        _ => {
            // A length field: 4 or 8 bytes, little or big endian, set to an extreme value.
            // Headers hold them near the start, so aim there most of the time.
            let width = if rng.below(2) == 0 { 4 } else { 8 };
            let span = if rng.below(4) == 0 { len } else { len.min(64) };
            let at = rng.below(span);
            let value = EXTREMES[rng.below(EXTREMES.len())];
            let encoded = if rng.below(2) == 0 {
                value.to_le_bytes()
            } else {
                value.to_be_bytes()
            };
            let source = if width == 4 {
                &encoded[4..]
            } else {
                &encoded[..]
            };
            for (offset, &byte) in source.iter().enumerate() {
                if let Some(target) = bytes.get_mut(at + offset) {
                    *target = byte;
                }
            }
            format!("{width}-byte field at {at} = {value:#x}")
        }
    };
    (bytes, what)
}

/// Mutate `valid` `count` times from `seed` and hand each mutant to `check`; a panic inside
/// `check` fails with the seed, the mutation number and what was changed.
pub fn fuzz(name: &str, valid: &[u8], seed: u64, count: usize, mut check: impl FnMut(&[u8])) {
    let mut rng = FuzzRng::new(seed);
    let mut failure = None;
    for index in 0..count {
        let (mutant, what) = mutate(valid, &mut rng);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&mutant)));
        if let Err(payload) = outcome {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failure = Some(format!(
                "{name}: mutation {index} (seed {seed}, {what}) panicked: {message}"
            ));
            break;
        }
    }
    if let Some(failure) = failure {
        panic!("{failure}");
    }
}

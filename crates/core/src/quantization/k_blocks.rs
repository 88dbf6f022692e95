//! The 256-element super-block types of GGML (`ggml-common.h`'s `block_q4_K`, `block_q5_K`,
//! `block_q6_K`):
//!
//! - Q4_K (144 bytes): f16 `d`, f16 `dmin`, 12 bytes of packed 6-bit scales and minimums of
//!   the eight 32-value sub-blocks, 128 bytes of nibbles. Each 64 values share 32 bytes: the
//!   low nibbles are sub-block `2j`, the high nibbles sub-block `2j + 1`;
//!   `x = d · scale · q - dmin · min`.
//! - Q5_K (176 bytes): as Q4_K with 32 bytes `qh` of fifth bits between the scales and the
//!   nibbles (bit `2j` of `qh[l]` for value `l` of sub-block `2j`, bit `2j + 1` for `2j + 1`).
//! - Q6_K (210 bytes): 128 bytes `ql` (low 4 bits), 64 bytes `qh` (high 2 bits), 16 signed
//!   8-bit scales of 16-value groups, f16 `d`; `x = d · scale · (q - 32)`.
//!
//! Each function decodes whole super-blocks into `out`, 256 values a block (`out` holds
//! exactly that many; callers check).

use super::format::f16_at;

/// Sub-block `j`'s 6-bit (scale, minimum) from the 12 packed bytes of a Q4_K/Q5_K block:
/// sub-blocks 0..4 keep theirs in the low 6 bits of bytes `j` and `j + 4`; 4..8 take their
/// low 4 bits from byte `j + 4` and their top 2 bits from the spare top bits of bytes
/// `j - 4` (scale) and `j` (minimum).
fn scale_and_min(packed: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (packed[j] & 63, packed[j + 4] & 63)
    } else {
        (
            (packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4),
            (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4),
        )
    }
}

/// Q4_K super-blocks to f32.
pub(crate) fn q4_k(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(144).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(block, 0);
        let dmin = f16_at(block, 2);
        let packed = &block[4..16];
        let quants = &block[16..144];
        for pair in 0..4 {
            let nibbles = &quants[pair * 32..pair * 32 + 32];
            let (scale_low, min_low) = scale_and_min(packed, 2 * pair);
            let (scale_high, min_high) = scale_and_min(packed, 2 * pair + 1);
            let (d1, m1) = (d * scale_low as f32, dmin * min_low as f32);
            let (d2, m2) = (d * scale_high as f32, dmin * min_high as f32);
            let (low, high) = out[pair * 64..pair * 64 + 64].split_at_mut(32);
            for i in 0..32 {
                low[i] = d1 * (nibbles[i] & 0x0F) as f32 - m1;
                high[i] = d2 * (nibbles[i] >> 4) as f32 - m2;
            }
        }
    }
}

/// Q5_K super-blocks to f32.
pub(crate) fn q5_k(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(176).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(block, 0);
        let dmin = f16_at(block, 2);
        let packed = &block[4..16];
        let high = &block[16..48];
        let quants = &block[48..176];
        for pair in 0..4 {
            let nibbles = &quants[pair * 32..pair * 32 + 32];
            let (scale_low, min_low) = scale_and_min(packed, 2 * pair);
            let (scale_high, min_high) = scale_and_min(packed, 2 * pair + 1);
            let (d1, m1) = (d * scale_low as f32, dmin * min_low as f32);
            let (d2, m2) = (d * scale_high as f32, dmin * min_high as f32);
            let bit_low = 1u8 << (2 * pair);
            let bit_high = 1u8 << (2 * pair + 1);
            let (low, upper) = out[pair * 64..pair * 64 + 64].split_at_mut(32);
            for i in 0..32 {
                let fifth_low = if high[i] & bit_low != 0 { 16.0 } else { 0.0 };
                let fifth_high = if high[i] & bit_high != 0 { 16.0 } else { 0.0 };
                low[i] = d1 * ((nibbles[i] & 0x0F) as f32 + fifth_low) - m1;
                upper[i] = d2 * ((nibbles[i] >> 4) as f32 + fifth_high) - m2;
            }
        }
    }
}

/// Q6_K super-blocks to f32.
pub(crate) fn q6_k(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(210).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(block, 208);
        for half in 0..2 {
            let low = &block[half * 64..half * 64 + 64];
            let high = &block[128 + half * 32..128 + half * 32 + 32];
            let scales = &block[192 + half * 8..192 + half * 8 + 8];
            let base = half * 128;
            for l in 0..32 {
                let group = l / 16;
                let h = high[l];
                let q1 = ((low[l] & 0x0F) | ((h & 3) << 4)) as i32 - 32;
                let q2 = ((low[l + 32] & 0x0F) | (((h >> 2) & 3) << 4)) as i32 - 32;
                let q3 = ((low[l] >> 4) | (((h >> 4) & 3) << 4)) as i32 - 32;
                let q4 = ((low[l + 32] >> 4) | (((h >> 6) & 3) << 4)) as i32 - 32;
                let scale = |k: usize| d * (scales[group + k] as i8) as f32;
                out[base + l] = scale(0) * q1 as f32;
                out[base + l + 32] = scale(2) * q2 as f32;
                out[base + l + 64] = scale(4) * q3 as f32;
                out[base + l + 96] = scale(6) * q4 as f32;
            }
        }
    }
}

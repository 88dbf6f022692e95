//! The 32-element block types of GGML (`ggml-common.h`'s `block_q4_0` ... `block_q8_0`),
//! each block starting with an f16 scale `d` (and, for the `_1` types, an f16 minimum `m`):
//!
//! - Q4_0 (18 bytes): `d`, 16 bytes of nibbles; value `i < 16` is the low nibble of byte
//!   `i`, value `i + 16` its high nibble; `x = (q - 8) · d`.
//! - Q4_1 (20 bytes): `d`, `m`, nibbles as Q4_0; `x = q · d + m`.
//! - Q5_0 (22 bytes): `d`, 4 bytes `qh` (bit `i` is value `i`'s fifth bit), nibbles as Q4_0;
//!   `x = (q - 16) · d`.
//! - Q5_1 (24 bytes): `d`, `m`, `qh`, nibbles; `x = q · d + m`.
//! - Q8_0 (34 bytes): `d`, 32 signed bytes; `x = q · d`.
//!
//! Callers ([`super::dequantize_blocks`]) pass whole blocks.

use super::format::f16_at;

/// Q4_0 blocks to f32, appended to `out`.
pub(crate) fn q4_0(bytes: &[u8], out: &mut Vec<f32>) {
    for block in bytes.chunks_exact(18) {
        let d = f16_at(block, 0);
        let nibbles = &block[2..18];
        out.extend(nibbles.iter().map(|&b| ((b & 0x0F) as f32 - 8.0) * d));
        out.extend(nibbles.iter().map(|&b| ((b >> 4) as f32 - 8.0) * d));
    }
}

/// Q4_1 blocks to f32, appended to `out`.
pub(crate) fn q4_1(bytes: &[u8], out: &mut Vec<f32>) {
    for block in bytes.chunks_exact(20) {
        let d = f16_at(block, 0);
        let m = f16_at(block, 2);
        let nibbles = &block[4..20];
        out.extend(nibbles.iter().map(|&b| (b & 0x0F) as f32 * d + m));
        out.extend(nibbles.iter().map(|&b| (b >> 4) as f32 * d + m));
    }
}

/// The fifth bits of a Q5 block: bit `i` belongs to value `i`.
fn fifth_bits(block: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        block[offset],
        block[offset + 1],
        block[offset + 2],
        block[offset + 3],
    ])
}

/// The 32 five-bit values of a Q5 block: nibbles at `nibbles`, fifth bits `high`.
fn five_bit_values(nibbles: &[u8], high: u32) -> impl Iterator<Item = u8> + '_ {
    let low = nibbles
        .iter()
        .enumerate()
        .map(move |(i, &b)| (b & 0x0F) | ((((high >> i) & 1) as u8) << 4));
    let upper = nibbles
        .iter()
        .enumerate()
        .map(move |(i, &b)| (b >> 4) | ((((high >> (i + 16)) & 1) as u8) << 4));
    low.chain(upper)
}

/// Q5_0 blocks to f32, appended to `out`.
pub(crate) fn q5_0(bytes: &[u8], out: &mut Vec<f32>) {
    for block in bytes.chunks_exact(22) {
        let d = f16_at(block, 0);
        let high = fifth_bits(block, 2);
        out.extend(five_bit_values(&block[6..22], high).map(|q| (q as f32 - 16.0) * d));
    }
}

/// Q5_1 blocks to f32, appended to `out`.
pub(crate) fn q5_1(bytes: &[u8], out: &mut Vec<f32>) {
    for block in bytes.chunks_exact(24) {
        let d = f16_at(block, 0);
        let m = f16_at(block, 2);
        let high = fifth_bits(block, 4);
        out.extend(five_bit_values(&block[8..24], high).map(|q| q as f32 * d + m));
    }
}

/// Q8_0 blocks to f32, appended to `out`.
pub(crate) fn q8_0(bytes: &[u8], out: &mut Vec<f32>) {
    for block in bytes.chunks_exact(34) {
        let d = f16_at(block, 0);
        out.extend(block[2..34].iter().map(|&b| (b as i8) as f32 * d));
    }
}

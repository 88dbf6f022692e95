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
//! Each function decodes whole blocks into `out`, 32 values a block (`out` holds exactly
//! that many; callers check), with loops over fixed-size arrays that the compiler vectorizes.

use super::format::f16_at;

/// The 32 four-bit codes of a block's 16 bytes: value `i < 16` the low nibble of byte `i`,
/// value `i + 16` its high nibble.
#[inline]
fn four_bit_codes(nibbles: &[u8]) -> [f32; 32] {
    let mut codes = [0f32; 32];
    for i in 0..16 {
        codes[i] = (nibbles[i] & 0x0F) as f32;
        codes[i + 16] = (nibbles[i] >> 4) as f32;
    }
    codes
}

/// The 32 five-bit codes of a Q5 block: nibbles as [`four_bit_codes`], fifth bits `high`.
#[inline]
fn five_bit_codes(nibbles: &[u8], high: u32) -> [f32; 32] {
    let mut codes = four_bit_codes(nibbles);
    for (i, code) in codes.iter_mut().enumerate() {
        *code += (((high >> i) & 1) * 16) as f32;
    }
    codes
}

/// The fifth bits of a Q5 block: bit `i` belongs to value `i`.
#[inline]
fn fifth_bits(block: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        block[offset],
        block[offset + 1],
        block[offset + 2],
        block[offset + 3],
    ])
}

/// `codes[i] · d + m` into `out`.
#[inline]
fn scale(codes: &[f32; 32], d: f32, m: f32, out: &mut [f32]) {
    for (value, code) in out.iter_mut().zip(codes) {
        *value = code * d + m;
    }
}

/// Q4_0 blocks to f32.
pub(crate) fn q4_0(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(block, 0);
        scale(&four_bit_codes(&block[2..18]), d, -8.0 * d, out);
    }
}

/// Q4_1 blocks to f32.
pub(crate) fn q4_1(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(20).zip(out.chunks_exact_mut(32)) {
        scale(
            &four_bit_codes(&block[4..20]),
            f16_at(block, 0),
            f16_at(block, 2),
            out,
        );
    }
}

/// Q5_0 blocks to f32.
pub(crate) fn q5_0(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(22).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(block, 0);
        let codes = five_bit_codes(&block[6..22], fifth_bits(block, 2));
        scale(&codes, d, -16.0 * d, out);
    }
}

/// Q5_1 blocks to f32.
pub(crate) fn q5_1(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(24).zip(out.chunks_exact_mut(32)) {
        let codes = five_bit_codes(&block[8..24], fifth_bits(block, 4));
        scale(&codes, f16_at(block, 0), f16_at(block, 2), out);
    }
}

/// Q8_0 blocks to f32.
pub(crate) fn q8_0(bytes: &[u8], out: &mut [f32]) {
    for (block, out) in bytes.chunks_exact(34).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(block, 0);
        for (value, &code) in out.iter_mut().zip(&block[2..34]) {
            *value = (code as i8) as f32 * d;
        }
    }
}

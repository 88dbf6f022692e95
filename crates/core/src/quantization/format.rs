//! [`QuantFormat`]: the block-quantized number formats of GGML (llama.cpp's GGUF files) that
//! a `QuantizedMatrix` (`tensor/quantized.rs`) holds, with their block sizes, and [`dequantize_blocks`], the
//! host's reference decoding of whole blocks (the GPU kernels spell the same arithmetic in
//! WGSL, `backend/gpu/quantized/decode.rs`).

use crate::error::{Error, Result};

use super::{k_blocks, legacy_blocks};

/// A block-quantized format: every `block_values()` consecutive values of a row are stored as
/// one block of `block_bytes()` bytes (scales and packed integers), little-endian, exactly as
/// GGML lays them out.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantFormat {
    /// 32 values in 18 bytes: f16 `d`, 4-bit `q`; `x = (q - 8) · d`.
    Q4_0,
    /// 32 values in 20 bytes: f16 `d` and `m`, 4-bit `q`; `x = q · d + m`.
    Q4_1,
    /// 32 values in 22 bytes: f16 `d`, 5-bit `q`; `x = (q - 16) · d`.
    Q5_0,
    /// 32 values in 24 bytes: f16 `d` and `m`, 5-bit `q`; `x = q · d + m`.
    Q5_1,
    /// 32 values in 34 bytes: f16 `d`, signed 8-bit `q`; `x = q · d`.
    Q8_0,
    /// 256 values in 144 bytes: f16 `d` and `dmin`, 6-bit scales and minimums of eight
    /// 32-value sub-blocks, 4-bit `q`.
    Q4K,
    /// 256 values in 176 bytes: as Q4K with a fifth bit per value.
    Q5K,
    /// 256 values in 210 bytes: 6-bit `q`, signed 8-bit scales of sixteen 16-value groups,
    /// f16 `d`.
    Q6K,
}

impl QuantFormat {
    /// Every format, in a fixed order (tests and the doctor).
    pub const ALL: [QuantFormat; 8] = [
        QuantFormat::Q4_0,
        QuantFormat::Q4_1,
        QuantFormat::Q5_0,
        QuantFormat::Q5_1,
        QuantFormat::Q8_0,
        QuantFormat::Q4K,
        QuantFormat::Q5K,
        QuantFormat::Q6K,
    ];

    /// GGML's name of the format (`Q4_0`, `Q4_K`, ...).
    pub fn name(self) -> &'static str {
        match self {
            QuantFormat::Q4_0 => "Q4_0",
            QuantFormat::Q4_1 => "Q4_1",
            QuantFormat::Q5_0 => "Q5_0",
            QuantFormat::Q5_1 => "Q5_1",
            QuantFormat::Q8_0 => "Q8_0",
            QuantFormat::Q4K => "Q4_K",
            QuantFormat::Q5K => "Q5_K",
            QuantFormat::Q6K => "Q6_K",
        }
    }

    /// Values per block (32, or 256 for the K formats).
    pub fn block_values(self) -> usize {
        match self {
            QuantFormat::Q4K | QuantFormat::Q5K | QuantFormat::Q6K => 256,
            _ => 32,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            QuantFormat::Q4_0 => 18,
            QuantFormat::Q4_1 => 20,
            QuantFormat::Q5_0 => 22,
            QuantFormat::Q5_1 => 24,
            QuantFormat::Q8_0 => 34,
            QuantFormat::Q4K => 144,
            QuantFormat::Q5K => 176,
            QuantFormat::Q6K => 210,
        }
    }

    /// Byte offsets in a block of its f16 scale fields: `d`, and `m` or `dmin` where the
    /// format has one (the other bytes are codes, or Q4_K/Q5_K's 6-bit sub-block scales and
    /// Q6_K's 8-bit ones).
    pub fn half_scale_offsets(self) -> &'static [usize] {
        match self {
            QuantFormat::Q4_0 | QuantFormat::Q5_0 | QuantFormat::Q8_0 => &[0],
            QuantFormat::Q4_1 | QuantFormat::Q5_1 | QuantFormat::Q4K | QuantFormat::Q5K => &[0, 2],
            QuantFormat::Q6K => &[208],
        }
    }

    /// The bytes of one row of `columns` values: an error naming `op` when `columns` is not a
    /// positive whole number of blocks or the size overflows.
    pub fn row_bytes(self, columns: usize, op: &'static str) -> Result<usize> {
        let block = self.block_values();
        if columns == 0 || !columns.is_multiple_of(block) {
            return Err(Error::invalid(
                op,
                format!(
                    "{} rows hold whole blocks of {block} values: {columns} columns are not",
                    self.name()
                ),
            ));
        }
        (columns / block)
            .checked_mul(self.block_bytes())
            .ok_or_else(|| Error::invalid(op, format!("{columns} columns overflow")))
    }
}

impl std::fmt::Display for QuantFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The f32 values of whole blocks of `format` in `bytes`, appended to `out`: an error naming
/// `op` when `bytes` is not a whole number of blocks.
pub fn dequantize_blocks(
    format: QuantFormat,
    bytes: &[u8],
    out: &mut Vec<f32>,
    op: &'static str,
) -> Result<()> {
    if !bytes.len().is_multiple_of(format.block_bytes()) {
        return Err(Error::invalid(
            op,
            format!(
                "{} bytes are not whole {} blocks of {} bytes",
                bytes.len(),
                format.name(),
                format.block_bytes()
            ),
        ));
    }
    decode_whole_blocks(format, bytes, out);
    Ok(())
}

/// [`dequantize_blocks`] of bytes known to be whole blocks, appended to `out` (a trailing
/// partial block is left out).
pub(crate) fn decode_whole_blocks(format: QuantFormat, bytes: &[u8], out: &mut Vec<f32>) {
    let blocks = bytes.len() / format.block_bytes();
    let start = out.len();
    out.resize(start + blocks * format.block_values(), 0.0);
    decode_into(format, bytes, &mut out[start..]);
}

/// Whole blocks of `bytes` decoded into `out` (as many values as the blocks hold, or fewer
/// when `out` is shorter).
pub(crate) fn decode_into(format: QuantFormat, bytes: &[u8], out: &mut [f32]) {
    match format {
        QuantFormat::Q4_0 => legacy_blocks::q4_0(bytes, out),
        QuantFormat::Q4_1 => legacy_blocks::q4_1(bytes, out),
        QuantFormat::Q5_0 => legacy_blocks::q5_0(bytes, out),
        QuantFormat::Q5_1 => legacy_blocks::q5_1(bytes, out),
        QuantFormat::Q8_0 => legacy_blocks::q8_0(bytes, out),
        QuantFormat::Q4K => k_blocks::q4_k(bytes, out),
        QuantFormat::Q5K => k_blocks::q5_k(bytes, out),
        QuantFormat::Q6K => k_blocks::q6_k(bytes, out),
    }
}

/// The IEEE half at `offset` of `bytes` (little-endian), as f32 (exact).
#[inline]
pub(crate) fn f16_at(bytes: &[u8], offset: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([bytes[offset], bytes[offset + 1]])).to_f32()
}

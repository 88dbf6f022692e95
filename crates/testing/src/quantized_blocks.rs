//! Random block-quantized matrices for the tests of `QuantizedMatrix` and of quantized
//! models: random codes with every block's f16 scale fields set to finite values of a chosen
//! size, so decoded matrices hold no NaN or infinity.

use anygrad_core::QuantFormat;

use crate::pseudo_random;

/// `rows` rows of `columns` values of `format` (`columns` whole blocks): random codes, scales
/// uniform in `(-scale, scale)`; deterministic for `seed`.
pub fn random_quantized_blocks(
    format: QuantFormat,
    [rows, columns]: [usize; 2],
    scale: f32,
    seed: u64,
) -> Vec<u8> {
    let row_bytes = format
        .row_bytes(columns, "random_quantized_blocks")
        .expect("columns of whole blocks");
    let bytes = rows * row_bytes;
    let mut out: Vec<u8> = pseudo_random(bytes, seed)
        .iter()
        .map(|v| ((v + 1.0) * 127.99) as u8)
        .collect();
    let scales = pseudo_random(bytes, seed + 1);
    for (block, chunk) in out.chunks_mut(format.block_bytes()).enumerate() {
        for (i, &field) in format.half_scale_offsets().iter().enumerate() {
            let value = half::f16::from_f32(scales[block * 2 + i] * scale);
            chunk[field..field + 2].copy_from_slice(&value.to_bits().to_le_bytes());
        }
    }
    out
}

//! Dequantization to f32: [`dequantize`] dispatches on the tensor's [`GgmlType`]; the float
//! types (F32, F16, BF16) are converted here, the block types by the core's
//! `anygrad_core::quantization::dequantize_blocks` (the one definition the GPU kernels
//! follow too).

use anygrad_core::quantization::dequantize_blocks;
use anygrad_core::{Error, Result};

use super::tensor_info::GgmlType;

/// The f32 values of `elements` values of type `ggml_type` stored in `bytes` (exactly the
/// tensor's data). `tensor` names the tensor in errors: a type this reader does not know, a
/// count that is not whole blocks, or a byte length that does not match.
pub fn dequantize(
    ggml_type: GgmlType,
    bytes: &[u8],
    elements: usize,
    tensor: &str,
) -> Result<Vec<f32>> {
    let expected = ggml_type.byte_size(elements, tensor)?;
    if bytes.len() != expected {
        return Err(Error::invalid(
            "gguf dequantize",
            format!(
                "tensor `{tensor}`: {} bytes given, {expected} expected for {elements} {} values",
                bytes.len(),
                ggml_type.name()
            ),
        ));
    }
    let mut out = Vec::with_capacity(elements);
    match ggml_type {
        GgmlType::F32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ),
        GgmlType::F16 => out.extend(bytes.chunks_exact(2).map(|b| f16_bits_to_f32(u16_at(b, 0)))),
        GgmlType::BF16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|b| f32::from_bits((u16_at(b, 0) as u32) << 16)),
        ),
        other => {
            if let Some(format) = other.quant_format() {
                dequantize_blocks(format, bytes, &mut out, "gguf dequantize")?;
            }
        }
    }
    Ok(out)
}

/// The little-endian `u16` at `offset` of `bytes` (callers pass whole blocks).
fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes([bytes[offset], bytes[offset + 1]])
}

/// An IEEE half's bits as f32 (exact).
fn f16_bits_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

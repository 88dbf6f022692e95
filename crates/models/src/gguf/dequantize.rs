//! Dequantization to f32: [`dequantize`] dispatches on the tensor's [`GgmlType`]; the float
//! types (F32, F16, BF16) are converted here, the block types in `legacy_quants.rs` and
//! `k_quants.rs`.

use anygrad_core::{Error, Result};

use super::k_quants;
use super::legacy_quants;
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
        GgmlType::Q4_0 => legacy_quants::q4_0(bytes, &mut out),
        GgmlType::Q4_1 => legacy_quants::q4_1(bytes, &mut out),
        GgmlType::Q5_0 => legacy_quants::q5_0(bytes, &mut out),
        GgmlType::Q5_1 => legacy_quants::q5_1(bytes, &mut out),
        GgmlType::Q8_0 => legacy_quants::q8_0(bytes, &mut out),
        GgmlType::Q4K => k_quants::q4_k(bytes, &mut out),
        GgmlType::Q5K => k_quants::q5_k(bytes, &mut out),
        GgmlType::Q6K => k_quants::q6_k(bytes, &mut out),
        // `byte_size` refused it above.
        GgmlType::Other(_) => {}
    }
    Ok(out)
}

/// The little-endian `u16` at `offset` of `bytes` (callers pass whole blocks).
pub(super) fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes([bytes[offset], bytes[offset + 1]])
}

/// The IEEE half at `offset` of `bytes`, as f32.
pub(super) fn f16_at(bytes: &[u8], offset: usize) -> f32 {
    f16_bits_to_f32(u16_at(bytes, offset))
}

/// An IEEE half's bits as f32 (exact).
pub(super) fn f16_bits_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

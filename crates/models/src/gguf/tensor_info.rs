//! [`GgmlType`]: the element types of GGUF tensors with their block layout (elements per
//! block, bytes per block), and [`TensorInfo`]: one entry of the tensor table (name, shape,
//! type, offset), with the checked byte size of its data.

use anygrad_core::{Error, QuantFormat, Result};

/// A tensor element type of GGML (`ggml_type`). Only the types this reader can dequantize
/// have variants; any other type id is kept as [`GgmlType::Other`] and refused when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgmlType {
    /// 0: `f32`.
    F32,
    /// 1: IEEE half.
    F16,
    /// 2: blocks of 32: an f16 scale, 16 bytes of 4-bit values (offset 8).
    Q4_0,
    /// 3: blocks of 32: f16 scale and minimum, 16 bytes of 4-bit values.
    Q4_1,
    /// 6: blocks of 32: f16 scale, 4 bytes of fifth bits, 16 bytes of low nibbles (offset 16).
    Q5_0,
    /// 7: blocks of 32: f16 scale and minimum, 4 bytes of fifth bits, 16 bytes of nibbles.
    Q5_1,
    /// 8: blocks of 32: an f16 scale and 32 signed bytes.
    Q8_0,
    /// 12: super-blocks of 256: f16 scale and minimum, 6-bit sub-block scales and minimums,
    /// 4-bit values.
    Q4K,
    /// 13: like Q4_K with a fifth bit per value.
    Q5K,
    /// 14: super-blocks of 256: 6-bit values, 8-bit sub-block scales, an f16 scale.
    Q6K,
    /// 30: bfloat16.
    BF16,
    /// Any other type id (not dequantized by this reader).
    Other(u32),
}

impl GgmlType {
    /// The type of a GGML type id.
    pub fn from_id(id: u32) -> GgmlType {
        match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            30 => GgmlType::BF16,
            other => GgmlType::Other(other),
        }
    }

    /// The GGML type id.
    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q5_0 => 6,
            GgmlType::Q5_1 => 7,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4K => 12,
            GgmlType::Q5K => 13,
            GgmlType::Q6K => 14,
            GgmlType::BF16 => 30,
            GgmlType::Other(id) => id,
        }
    }

    /// GGML's name of the type (`Q4_K`, ...).
    pub fn name(self) -> String {
        match self {
            GgmlType::F32 => "F32".into(),
            GgmlType::F16 => "F16".into(),
            GgmlType::Q4_0 => "Q4_0".into(),
            GgmlType::Q4_1 => "Q4_1".into(),
            GgmlType::Q5_0 => "Q5_0".into(),
            GgmlType::Q5_1 => "Q5_1".into(),
            GgmlType::Q8_0 => "Q8_0".into(),
            GgmlType::Q4K => "Q4_K".into(),
            GgmlType::Q5K => "Q5_K".into(),
            GgmlType::Q6K => "Q6_K".into(),
            GgmlType::BF16 => "BF16".into(),
            GgmlType::Other(id) => format!("type {id}"),
        }
    }

    /// The core's block format of a block type (`None` for the float types and unknown
    /// ones): what a `QuantizedMatrix` keeps on a device.
    pub fn quant_format(self) -> Option<QuantFormat> {
        Some(match self {
            GgmlType::Q4_0 => QuantFormat::Q4_0,
            GgmlType::Q4_1 => QuantFormat::Q4_1,
            GgmlType::Q5_0 => QuantFormat::Q5_0,
            GgmlType::Q5_1 => QuantFormat::Q5_1,
            GgmlType::Q8_0 => QuantFormat::Q8_0,
            GgmlType::Q4K => QuantFormat::Q4K,
            GgmlType::Q5K => QuantFormat::Q5K,
            GgmlType::Q6K => QuantFormat::Q6K,
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 | GgmlType::Other(_) => return None,
        })
    }

    /// `(elements per block, bytes per block)`, or `None` for a type this reader does not
    /// know.
    pub fn block_layout(self) -> Option<(usize, usize)> {
        if let Some(format) = self.quant_format() {
            return Some((format.block_values(), format.block_bytes()));
        }
        match self {
            GgmlType::F32 => Some((1, 4)),
            GgmlType::F16 | GgmlType::BF16 => Some((1, 2)),
            _ => None,
        }
    }

    /// The bytes of `elements` values, or an error when the count is not whole blocks or the
    /// size overflows.
    pub fn byte_size(self, elements: usize, tensor: &str) -> Result<usize> {
        let (block, bytes) = self.block_layout().ok_or_else(|| {
            Error::invalid(
                "gguf",
                format!(
                "tensor `{tensor}`: element type {} is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K are)",
                self.name()
            ),
            )
        })?;
        if !elements.is_multiple_of(block) {
            return Err(Error::invalid(
                "gguf",
                format!(
                    "tensor `{tensor}`: {elements} elements are not whole {}-element blocks of {}",
                    block,
                    self.name()
                ),
            ));
        }
        (elements / block).checked_mul(bytes).ok_or_else(|| {
            Error::invalid("gguf", format!("tensor `{tensor}`: byte size overflows"))
        })
    }
}

/// One entry of a GGUF tensor table.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// The tensor's name (`blk.0.attn_q.weight`, ...).
    pub name: String,
    /// GGML's dims, innermost first (`ne[0]` is the row length).
    pub dims: Vec<usize>,
    /// The element type.
    pub ggml_type: GgmlType,
    /// The offset of the data from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// The shape in row-major order (PyTorch's): GGML's dims reversed.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }

    /// The number of elements (checked against overflow when the table was read).
    pub fn element_count(&self) -> usize {
        self.dims.iter().product()
    }
}

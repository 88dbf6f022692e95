//! The backend contract's `QuantizedMatrices` family: products with, and reads of, a matrix
//! kept in a block-quantized format (`crate::quantization::QuantFormat`) on the device, so
//! that a quantized model's weights are never widened to f32 as a whole. The rules every
//! primitive keeps are in `contract/mod.rs`.
//!
//! A quantized matrix is a U32 storage holding its bytes: `shape[0]` rows of `shape[1]`
//! values, row after row from byte 0, each row whole blocks of the format, little-endian, and
//! at least one word past the last byte (the GPU kernels read any 4 bytes as one word).

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::quantization::QuantFormat;

/// Products with and reads of block-quantized matrices.
pub(crate) trait QuantizedMatrices: BackendStorage {
    /// `x [m, k]` (this storage: a rank-2 F32 or F16 view whose columns are adjacent, any row
    /// stride) times the transpose of the quantized matrix `weights` of `shape` `[n, k]`:
    /// output contiguous `[m, n]` in x's dtype, each value summed in f32.
    fn quantized_matmul(
        &self,
        layout: &Layout,
        weights: &Self,
        format: QuantFormat,
        shape: [usize; 2],
    ) -> Result<Self>;

    /// The F32 values of rows of the quantized matrix in this storage (of `shape` `[n, k]`):
    /// `[count, k]` for the rows named by the integer view `rows` (`count` its elements, in
    /// row-major order; a row outside `[0, n)` is an error, on a GPU at the next readback),
    /// or the whole `[n, k]` matrix when `rows` is `None`.
    fn dequantize_rows(
        &self,
        format: QuantFormat,
        shape: [usize; 2],
        rows: Option<(&Self, &Layout)>,
    ) -> Result<Self>;
}

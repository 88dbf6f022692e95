//! Kernel family `quantized`: matrices kept on the device in GGML's block formats
//! (`crate::quantization::QuantFormat`: Q4_0 to Q8_0, Q4_K to Q6_K), read in place by the
//! kernels that use them, so a quantized model's weights are never widened as a whole:
//!
//! - `decode.rs`: the WGSL readers, one `decode8` per format (eight values of a row);
//! - `vector.rs`: a few rows times the matrix's transpose (decode steps);
//! - `tiled.rs`: many rows times the matrix's transpose, 64 x 64 tiles (prompts);
//! - `dequantize.rs`: rows to f32, all or by index (embedding lookups, gradients);
//! - `kernel.rs`: the key, `contract.rs`: `QuantizedMatrices` for `GpuStorage`.

mod contract;
mod decode;
mod dequantize;
pub(crate) mod kernel;
mod tiled;
mod vector;

use crate::backend::gpu::runtime::params::kernel_params;

kernel_params! {
    /// Parameters of the products: `y [m, n] = x [m, k] · Wᵀ`, `W` `[n, k]` quantized.
    struct ProductParams {
        /// Rows of x and y.
        m: u32,
        /// Rows of W, columns of y.
        n: u32,
        /// Columns of x and W.
        k: u32,
        /// x's first element and row stride (its columns are adjacent).
        x_offset: u32,
        x_row_stride: u32,
        /// Bytes of one row of W.
        row_bytes: u32,
    }
}

kernel_params! {
    /// Parameters of `QuantizedKernel::Dequantize`.
    struct DequantizeParams {
        /// Rows written.
        rows: u32,
        /// Values per row.
        k: u32,
        /// Bytes of one row of the matrix.
        row_bytes: u32,
        /// Rows of the matrix (indices must be below).
        matrix_rows: u32,
        /// The indices' first element and stride.
        index_offset: u32,
        index_stride: u32,
        /// This dispatch's word of the index-flag buffer (set by the context).
        flag_slot: u32,
    }
}

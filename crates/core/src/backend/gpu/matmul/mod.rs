//! Kernel family `Matmul`: the batched, register-tiled 64 x 64 matrix product for every dtype
//! but Bool (`shaders/matmul.wgsl`; F16 also with f32 outputs, split-K's slices), and [`MatmulParams`], the parameters all three matmul
//! families share (`matmul/large.rs` and `matmul/coop.rs` read the same struct). The primitive
//! that picks a family for a product is `GpuStorage::matmul` in `matmul/primitive.rs`.

mod contract;
pub(crate) mod coop;
pub(crate) mod dot;
pub(crate) mod kernel;
pub(crate) mod large;
pub(crate) mod primitive;
pub(crate) mod vector;

use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams};
use crate::backend::gpu::runtime::wgsl::value_header;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

kernel_params! {
    /// Parameters of every matmul kernel: `C[b] = A[b] x B[b]` for `b < batch`, A `[m, k]` and
    /// B `[k, n]` read through their offsets and strides (C is dense).
    struct MatmulParams {
        /// Batches.
        batch: u32,
        /// Rows of A and C.
        m: u32,
        /// Columns of B and C.
        n: u32,
        /// Columns of A, rows of B.
        k: u32,
        /// A's offset.
        a_offset: u32,
        /// A's batch stride (0: broadcast).
        a_batch_stride: u32,
        /// A's row stride.
        a_row_stride: u32,
        /// A's column stride.
        a_column_stride: u32,
        /// B's offset.
        b_offset: u32,
        /// B's batch stride (0: broadcast).
        b_batch_stride: u32,
        /// B's row stride.
        b_row_stride: u32,
        /// B's column stride.
        b_column_stride: u32,
    }
}

impl MatmulParams {
    /// The parameters of `[batch, m, k] x [batch, k, n]` over the rank-3 views `a` and `b`
    /// (checked by the caller); an error when a value does not fit 32 bits.
    pub(crate) fn new(
        [batch, m, n, k]: [usize; 4],
        a: &Layout,
        b: &Layout,
    ) -> Result<MatmulParams> {
        let stride =
            |layout: &Layout, dim: usize| word(layout.strides.get(dim).copied().unwrap_or(0));
        Ok(MatmulParams {
            batch: word(batch)?,
            m: word(m)?,
            n: word(n)?,
            k: word(k)?,
            a_offset: word(a.offset)?,
            a_batch_stride: stride(a, 0)?,
            a_row_stride: stride(a, 1)?,
            a_column_stride: stride(a, 2)?,
            b_offset: word(b.offset)?,
            b_batch_stride: stride(b, 0)?,
            b_row_stride: stride(b, 1)?,
            b_column_stride: stride(b, 2)?,
        })
    }
}

/// WGSL of `MatmulKernel::Matmul` (after `enable f16;` where needed): C stored as the dtype, or
/// as f32 where `f32_partials` (F16 split-K slices).
pub(crate) fn source(dtype: DType, f32_partials: bool) -> String {
    let mut text = value_header(dtype);
    text.push_str(MatmulParams::WGSL);
    text.push_str(if f32_partials {
        "alias C = f32;\nfn store_product(v: T) -> C { return f32(v); }\n"
    } else {
        "alias C = S;\nfn store_product(v: T) -> C { return store_value(v); }\n"
    });
    text.push_str(include_str!("../shaders/matmul.wgsl"));
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<MatmulKernel>, dtype: DType) {
    if dtype != DType::Bool {
        let f32_partials = false;
        keys.push(MatmulKernel::Matmul {
            dtype,
            f32_partials,
        });
    }
    if dtype == DType::F16 {
        keys.push(MatmulKernel::Matmul {
            dtype,
            f32_partials: true,
        });
    }
}

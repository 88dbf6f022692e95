//! The matmul family's key: [`MatmulKernel`] (the 64- and 128-tile products, the dot
//! product, the matrix-vector product, the tensor-core products), per dtype and variant.

use crate::backend::gpu::matmul::coop::CoopVariant;
use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one matrix-product kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum MatmulKernel {
    /// Batched tiled matrix product (64 x 64 tiles, any dtype but Bool); `f32_partials`: an
    /// F16 product stored in f32 (the k-slices of a split-K product, added before rounding).
    Matmul { dtype: DType, f32_partials: bool },
    /// Batched float matrix product with 128 x 128 tiles (`matmul/large.rs`); `aligned`: the
    /// vec4, double-buffered variant for shapes and layouts that pass `aligned_applies`.
    MatmulLarge { dtype: DType, aligned: bool },
    /// F16 or F32 product of operands contiguous along k, one dot product per output
    /// (`matmul/dot.rs`): small outputs such as a classifier head.
    MatmulDot { dtype: DType },
    /// F16 or F32 product of at most four rows of A and a weight's transpose, both contiguous
    /// along k, 32 invocations splitting k for each output (`matmul/vector.rs`): a decode step.
    MatmulVector { dtype: DType },
    /// F16 batched matrix product on cooperative matrices (tensor cores), f32 accumulation
    /// (`matmul/coop.rs`); `emulated`: the same kernel with the cooperative-matrix operations
    /// written in plain WGSL (tests on devices without them).
    MatmulCoop {
        variant: CoopVariant,
        emulated: bool,
    },
}

impl Kernel for MatmulKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            MatmulKernel::Matmul {
                dtype,
                f32_partials,
            } => enable_f16_if(dtype == DType::F16, super::source(dtype, f32_partials)),
            MatmulKernel::MatmulLarge { dtype, aligned } => {
                enable_f16_if(dtype == DType::F16, super::large::source(dtype, aligned))
            }
            MatmulKernel::MatmulDot { dtype } => {
                enable_f16_if(dtype == DType::F16, super::dot::source(dtype))
            }
            MatmulKernel::MatmulVector { dtype } => {
                enable_f16_if(dtype == DType::F16, super::vector::source(dtype))
            }
            MatmulKernel::MatmulCoop { variant, emulated } => {
                enable_f16_if(true, super::coop::source_body(variant, emulated))
            }
        }
    }

    /// Every matmul bounds-checks its accesses in the kernel: rows below m, columns below n,
    /// k below K of views the launcher checked (the aligned and tensor-core variants only
    /// where `aligned_applies` / `coop_applies` hold; the dot kernel reads rows below m,
    /// columns clamped below n and vectors below k, `matmul/dot.rs`; the vector kernel rows
    /// below m, columns clamped below n, vectors below k, `matmul/vector.rs`).
    fn is_trusted(&self) -> bool {
        true
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        !matches!(self, MatmulKernel::MatmulDot { .. })
    }

    fn catalogue() -> Vec<MatmulKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::large::catalogue(&mut keys, dtype);
            super::catalogue(&mut keys, dtype);
            super::dot::catalogue(&mut keys, dtype);
            super::vector::catalogue(&mut keys, dtype);
        }
        super::coop::catalogue(&mut keys);
        keys
    }
}

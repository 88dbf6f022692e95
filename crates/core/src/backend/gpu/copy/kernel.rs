//! The dense-copy family's key: [`CopyKernel`], per dtype (and, for the transposing copy,
//! whether F16 moves in pairs).

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one dense-copy kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CopyKernel {
    /// The dense copy of a view with contiguous rows, `vec4`s at a time (`copy/rows.rs`).
    CopyRows { dtype: DType },
    /// The dense copy of a batch of transposed matrices through tiles (`copy/transpose.rs`);
    /// `paired`: F16 moved two halves per 4-byte access.
    CopyTranspose { dtype: DType, paired: bool },
}

impl Kernel for CopyKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            CopyKernel::CopyRows { dtype } => {
                enable_f16_if(dtype == DType::F16, super::rows::source(dtype))
            }
            CopyKernel::CopyTranspose { dtype, paired } => {
                enable_f16_if(dtype == DType::F16, super::transpose::source(dtype, paired))
            }
        }
    }

    /// The transposing copy clamps every access to its buffer and indexes its tile inside
    /// the tile (`copy/transpose.rs`).
    fn is_trusted(&self) -> bool {
        matches!(self, CopyKernel::CopyTranspose { .. })
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        matches!(self, CopyKernel::CopyTranspose { .. })
    }

    fn catalogue() -> Vec<CopyKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::rows::catalogue(&mut keys, dtype);
            super::transpose::catalogue(&mut keys, dtype);
        }
        keys
    }
}

//! The random family's key: [`RandomKernel`], per float dtype and distribution.

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one random-number kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RandomKernel {
    /// Counter-based uniform (`normal = false`) or normal draws.
    Random { dtype: DType, normal: bool },
}

impl Kernel for RandomKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        let RandomKernel::Random { dtype, normal } = *self;
        enable_f16_if(dtype == DType::F16, super::source(dtype, normal))
    }

    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<RandomKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype);
        }
        keys
    }
}

//! The reduction family's key: [`ReduceKernel`], per dtype and op.

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;
use crate::op::ReduceOp;

/// The identity of one reduction kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ReduceKernel {
    /// Reduction over a set of dims.
    Reduce { dtype: DType, op: ReduceOp },
}

impl Kernel for ReduceKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        let ReduceKernel::Reduce { dtype, op } = *self;
        enable_f16_if(dtype == DType::F16, super::source(dtype, op))
    }

    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<ReduceKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype);
        }
        keys
    }
}

//! The optimizer family's key: [`OptimizerKernel`], the in-place training updates per dtype.

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one in-place update kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum OptimizerKernel {
    /// One SGD step in place, with or without a momentum buffer.
    SgdStep {
        dtype: DType,
        /// With the momentum buffer's binding and update.
        momentum: bool,
        /// With a U32 flag binding that skips the step where nonzero.
        skip: bool,
    },
    /// One Adam / AdamW step in place on the parameter and its moments.
    AdamStep {
        dtype: DType,
        /// With the running maximum's binding (AMSGrad).
        amsgrad: bool,
    },
    /// Gradient unscaling in place with its inf/NaN flag.
    Unscale { dtype: DType },
}

impl Kernel for OptimizerKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            OptimizerKernel::SgdStep {
                dtype,
                momentum,
                skip,
            } => enable_f16_if(dtype == DType::F16, super::source(dtype, momentum, skip)),
            OptimizerKernel::AdamStep { dtype, amsgrad } => {
                enable_f16_if(dtype == DType::F16, super::adam_source(dtype, amsgrad))
            }
            OptimizerKernel::Unscale { dtype } => {
                enable_f16_if(dtype == DType::F16, super::unscale_source(dtype))
            }
        }
    }

    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<OptimizerKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype);
        }
        keys
    }
}

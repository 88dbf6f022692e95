//! The normalization family's key: [`NormKernel`] (softmax and layer norm rows, the rotary
//! embedding of rows, batch norm's sums and input gradient), per dtype and variant.

use crate::backend::gpu::norm::batch_norm::SumsPass;
use crate::backend::gpu::norm::rows::RowKey;
use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one normalization kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum NormKernel {
    /// Batch norm's per-channel statistics or backward sums in one pass (`norm/batch_norm.rs`).
    BatchNormSums {
        dtype: DType,
        backward: bool,
        pass: SumsPass,
    },
    /// Batch norm's input gradient in one pass, per `vec4` or per element
    /// (`norm/batch_norm_input.rs`).
    BatchNormInputGrad { dtype: DType, vector: bool },
    /// Softmax or layer normalization over the last dim, one row per `lanes` invocations
    /// (`norm/rows.rs`).
    Rows(RowKey),
    /// The rotary position embedding of rows, one invocation per element (`norm/rotary.rs`).
    Rotary { dtype: DType },
}

impl Kernel for NormKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            NormKernel::BatchNormSums {
                dtype,
                backward,
                pass,
            } => enable_f16_if(
                dtype == DType::F16,
                super::batch_norm::source(dtype, backward, pass),
            ),
            NormKernel::BatchNormInputGrad { dtype, vector } => enable_f16_if(
                dtype == DType::F16,
                super::batch_norm_input::source(dtype, vector),
            ),
            NormKernel::Rows(key) => enable_f16_if(key.dtype == DType::F16, key.source()),
            NormKernel::Rotary { dtype } => {
                enable_f16_if(dtype == DType::F16, super::rotary::source(dtype))
            }
        }
    }

    /// The row and rotary kernels clamp every read and write only what they own
    /// (`norm/rows.rs`, `norm/rotary.rs`).
    fn is_trusted(&self) -> bool {
        matches!(self, NormKernel::Rows(_) | NormKernel::Rotary { .. })
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<NormKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::rows::catalogue(&mut keys, dtype);
            super::rotary::catalogue(&mut keys, dtype);
            super::batch_norm_input::catalogue(&mut keys, dtype);
            super::batch_norm::catalogue(&mut keys, dtype);
        }
        keys
    }
}

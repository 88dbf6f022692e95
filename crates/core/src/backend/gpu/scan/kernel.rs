//! The scan family's key: [`ScanKernel`], per dtype.

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::dtype::DType;

/// The identity of one running-sum kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ScanKernel {
    /// The storage dtype (F32, F16, I32 or U32).
    pub(crate) dtype: DType,
}

impl Kernel for ScanKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        enable_f16_if(self.dtype == DType::F16, super::source(self.dtype))
    }

    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<ScanKernel> {
        super::SCAN_DTYPES
            .into_iter()
            .map(|dtype| ScanKernel { dtype })
            .collect()
    }
}

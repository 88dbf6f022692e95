//! The sort family's key: [`SortKernel`], per 32-bit key dtype, inside one workgroup or
//! over storage buffers.

use crate::backend::gpu::runtime::kernel::Kernel;
use crate::dtype::DType;

/// The identity of one sort kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum SortKernel {
    /// `argsort` of rows up to 1024 long inside one workgroup; `key`: the 32-bit dtype the
    /// values were cast to (F32, I32 or U32).
    SortRows { key: DType },
    /// `argsort` of longer rows: one bitonic step per dispatch over storage buffers.
    SortGlobal { key: DType },
}

impl Kernel for SortKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            SortKernel::SortRows { key } => super::source(key, false),
            SortKernel::SortGlobal { key } => super::source(key, true),
        }
    }

    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<SortKernel> {
        let mut keys = Vec::new();
        super::catalogue(&mut keys);
        keys
    }
}

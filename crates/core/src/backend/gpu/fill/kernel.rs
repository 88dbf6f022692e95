//! The fill family's key: [`FillKernel`], one kernel for every dtype (the pattern is a
//! 32-bit word).

use crate::backend::gpu::runtime::kernel::Kernel;

/// Write a 32-bit pattern into every word.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FillKernel;

impl Kernel for FillKernel {
    fn name(&self) -> String {
        "Fill".into()
    }

    fn source(&self) -> String {
        super::source()
    }

    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<FillKernel> {
        vec![FillKernel]
    }
}

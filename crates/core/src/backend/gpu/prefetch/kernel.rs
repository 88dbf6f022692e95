//! The prefetch family's key: [`PrefetchKernel`], one kernel for every buffer.

use crate::backend::gpu::runtime::kernel::Kernel;

/// Read a buffer into the L2 cache ahead of the kernel that needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PrefetchKernel;

impl Kernel for PrefetchKernel {
    fn name(&self) -> String {
        "Prefetch".into()
    }

    fn source(&self) -> String {
        super::source()
    }

    /// The prefetch reads only vectors below its count, which the launcher takes from the
    /// buffer's length.
    fn is_trusted(&self) -> bool {
        true
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<PrefetchKernel> {
        vec![PrefetchKernel]
    }
}

//! The fusion family's key: [`FusedKernel`], one kernel per fused program's structure.

use std::sync::Arc;

use crate::backend::gpu::fusion::FusedProgram;
use crate::backend::gpu::runtime::kernel::Kernel;

/// A chain of float elementwise ops compiled into one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FusedKernel {
    /// The program the kernel runs.
    pub(crate) program: Arc<FusedProgram>,
}

impl Kernel for FusedKernel {
    fn name(&self) -> String {
        format!(
            "Fused {{ {:?}, {} instructions, vector: {} }}",
            self.program.dtype,
            self.program.instructions.len(),
            self.program.vector
        )
    }

    /// Fused programs write their own first line.
    fn source(&self) -> String {
        self.program.source()
    }

    /// A vec4 program reads and writes whole vectors below its count.
    fn is_trusted(&self) -> bool {
        self.program.vector
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    /// The sample programs that use every fusable op.
    fn catalogue() -> Vec<FusedKernel> {
        super::sample_programs()
            .into_iter()
            .map(|program| FusedKernel {
                program: Arc::new(program),
            })
            .collect()
    }
}

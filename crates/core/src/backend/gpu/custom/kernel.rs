//! The key of users' kernels: [`CustomKernel`], per input count and source text.

use std::sync::Arc;

use crate::backend::gpu::runtime::kernel::Kernel;

/// A user's kernel (`custom_op::CustomOp::wgsl`): f32 inputs `input0..`, one f32 output,
/// the user's `fn compute(i: u32) -> f32` per output element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CustomKernel {
    /// How many inputs the kernel binds.
    pub(crate) inputs: u32,
    /// The user's WGSL.
    pub(crate) source: Arc<str>,
}

impl Kernel for CustomKernel {
    fn name(&self) -> String {
        format!("Custom {{ inputs: {} }}", self.inputs)
    }

    /// Users' kernels write their own first line.
    fn source(&self) -> String {
        super::custom_source(self.inputs, &self.source)
    }

    /// User kernels keep wgpu's runtime bounds checks.
    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    /// Users' kernels are not catalogued.
    fn catalogue() -> Vec<CustomKernel> {
        Vec::new()
    }
}

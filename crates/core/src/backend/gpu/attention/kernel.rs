//! The attention family's key: [`AttentionKernel`] (the scalar passes and the tensor-core
//! forward and backward), per dtype, head and value size, causal flag and variant.

use crate::backend::gpu::attention::coop::backward::CoopBackward;
use crate::backend::gpu::attention::coop::CoopForward;
use crate::backend::gpu::attention::AttentionKey;
use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one attention kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum AttentionKernel {
    /// One pass of fused scaled dot-product attention (forward or a backward kernel), per
    /// dtype, head and value size and causal flag (`attention/`).
    Attention(AttentionKey),
    /// The f16 fused attention forward on cooperative matrices (`attention/coop.rs`).
    AttentionCoop(CoopForward),
    /// The f16 fused attention backward's key-value and query kernels on cooperative matrices
    /// (`attention/coop/backward.rs`).
    AttentionCoopBackward(CoopBackward),
}

impl Kernel for AttentionKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match self {
            AttentionKernel::Attention(key) => enable_f16_if(key.dtype == DType::F16, key.source()),
            // The tensor-core kernels write their own `enable` lines.
            AttentionKernel::AttentionCoop(key) => key.source(),
            AttentionKernel::AttentionCoopBackward(key) => key.source(),
        }
    }

    /// The hardware attention kernels (`attention/coop/source.rs`,
    /// `attention/coop/backward/source.rs`) read dense operands whose lengths the launchers
    /// checked (`attention/`: `check_inputs`, `check_operand`, `check_bias`) only for rows
    /// below the length they stage, write only rows below the length they own, flags and fold
    /// sums inside the buffers the launchers sized for the grid, and index workgroup memory
    /// with offsets fixed by the layout and the lane. H200, 8 x 12 x 512 x 64 f16: forward
    /// 103.1 -> 101.5, key-value 143.5 -> 139.5, query 97.8 -> 96.2 µs. The emulations (tests
    /// only) keep the checks: without them lavapipe's compiler took minutes on the emulated
    /// backward (seconds with).
    fn is_trusted(&self) -> bool {
        match self {
            AttentionKernel::Attention(_) => false,
            AttentionKernel::AttentionCoop(key) => !key.emulated,
            AttentionKernel::AttentionCoopBackward(key) => !key.emulated,
        }
    }

    /// The tensor-core kernels stage Q, K and V whole, and write each subgroup's P, dS and
    /// scratch tiles (every row, every column a fragment reads), the bias tile and the redo's
    /// flag copy before the barrier that precedes their reads (`attention/coop/source.rs`,
    /// `attention/coop/backward/source.rs`).
    fn writes_workgroup_memory_first(&self) -> bool {
        !matches!(self, AttentionKernel::Attention(_))
    }

    fn catalogue() -> Vec<AttentionKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype);
        }
        super::coop::catalogue(&mut keys);
        super::coop::backward::catalogue(&mut keys);
        keys
    }
}

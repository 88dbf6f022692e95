//! What kernel families register with the runtime, so that the runtime calls into them
//! without naming them: the family that defers work into the recording (elementwise fusion:
//! its ops wait and are planned into fused kernels at the next drain), and the caches that
//! families keep per device (emptied by `empty_cache`). `backend/gpu/mod.rs` hands one
//! [`Hooks`] to every context it opens.

use std::any::Any;

use super::buffers::BufferSlot;
use super::kernel::KernelId;

/// One op a family deferred; only the family that deferred it reads it (at the drain).
pub(crate) type DeferredWork = Box<dyn Any + Send>;

/// One kernel a drain records: its key and parameter words, its input buffers (tensors'
/// buffers or outputs of kernels recorded before it), its output (allocated when it is
/// recorded, unless it already is), and its one-dimensional grid.
#[derive(Debug)]
pub(crate) struct PlannedKernel {
    /// The kernel's key.
    pub(crate) key: Box<dyn KernelId>,
    /// The kernel's parameter words.
    pub(crate) params: Vec<u32>,
    /// The input buffers, in binding order after the parameters.
    pub(crate) inputs: Vec<BufferSlot>,
    /// The output buffer, bound last.
    pub(crate) output: BufferSlot,
    /// The output's size, for its allocation.
    pub(crate) output_bytes: u64,
    /// Workgroups along x.
    pub(crate) workgroups: u32,
}

/// The family whose ops wait in the recording: they are planned into kernels before any other
/// work is recorded (a dispatch, a copy, a readback, a flush), so their order against
/// everything else is unchanged.
pub(crate) trait DeferredPlanner: Send + Sync {
    /// How many ops may wait before the recording drains them.
    fn capacity(&self) -> usize;

    /// The kernels that compute `ops` (in the order they were deferred), in recording order.
    fn plan(&self, ops: Vec<DeferredWork>) -> Vec<PlannedKernel>;
}

/// What the families register with every context.
pub(crate) struct Hooks {
    /// The family that defers work (elementwise fusion).
    pub(crate) deferred: &'static dyn DeferredPlanner,
    /// Empty the caches families keep for the device of this ordinal (`empty_cache`).
    pub(crate) clear_caches: &'static [fn(usize)],
}

//! What kernel families register with the runtime, so that the runtime — and the other
//! families, through it — call into them without naming them: the family that defers work
//! into the recording (elementwise fusion: the elementwise family offers it its float ops,
//! which wait and are planned into fused kernels at the next drain), the dense copies that
//! beat an element-by-element copy (taken by the elementwise copy and asked about by the
//! convolutions), the prefetch of a buffer into the L2 cache (before the matmuls and
//! convolutions that step through it), and the caches that families keep per device (emptied
//! by `empty_cache`). `backend/gpu/mod.rs` hands one [`Hooks`] to every context it opens.

use std::any::Any;

use super::buffers::BufferSlot;
use super::kernel::KernelId;
use super::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};

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

/// The op of an elementwise deferral request (the second input of a binary op comes
/// separately).
#[derive(Debug, Clone, Copy)]
pub(crate) enum ElementwiseRequest {
    /// A unary op on the input.
    Unary(UnaryOp),
    /// A binary op on the input and a second view.
    Binary(BinaryOp),
    /// A binary op of the input and a scalar (`bits`: its value in the storage's bits),
    /// the scalar on the left where `on_left`.
    Scalar {
        op: BinaryOp,
        on_left: bool,
        bits: u32,
    },
}

/// The family whose ops wait in the recording: they are planned into kernels before any other
/// work is recorded (a dispatch, a copy, a readback, a flush), so their order against
/// everything else is unchanged.
pub(crate) trait DeferredPlanner: Send + Sync {
    /// Defer `request` on `input` (and `rhs` for a binary op) where it can wait: the output
    /// storage (allocated now, written when the recording drains), or `None` where the
    /// caller must dispatch the op itself. The operands have been checked by the caller.
    fn defer(
        &self,
        op_name: &'static str,
        input: (&GpuStorage, &Layout),
        request: ElementwiseRequest,
        rhs: Option<(&GpuStorage, &Layout)>,
    ) -> Result<Option<GpuStorage>>;

    /// How many ops may wait before the recording drains them.
    fn capacity(&self) -> usize;

    /// The kernels that compute `ops` (in the order they were deferred), in recording order.
    fn plan(&self, ops: Vec<DeferredWork>) -> Vec<PlannedKernel>;
}

/// Copies of views into dense views that run faster than an element-by-element copy (rows
/// of `vec4`s, transposed tiles).
pub(crate) trait DenseCopies: Send + Sync {
    /// Copy the view `layout` of `source` into the dense view `destination_layout` of
    /// `destination` (same dtype) where one of these copies takes it: `Ok(true)` when it was
    /// recorded, `Ok(false)` when the caller copies.
    fn copy(
        &self,
        source: &GpuStorage,
        layout: &Layout,
        destination: &GpuStorage,
        destination_layout: &Layout,
    ) -> Result<bool>;

    /// Whether a same-dtype copy of `source` into the dense `destination` moves transposed
    /// tiles (a batch of transposed matrices, rows and columns both spanning a tile).
    fn transposes(&self, dtype: DType, source: &Layout, destination: &Layout) -> bool;
}

/// `lhs op rhs` elementwise over views of one shape: the output a new dense storage.
pub(crate) type FoldFn =
    fn(&GpuStorage, &Layout, &GpuStorage, &Layout, BinaryOp) -> Result<GpuStorage>;

/// What the families register with every context.
pub(crate) struct Hooks {
    /// The family that defers work (elementwise fusion).
    pub(crate) deferred: &'static dyn DeferredPlanner,
    /// The dense copies (`copy/`).
    pub(crate) dense_copies: &'static dyn DenseCopies,
    /// The elementwise binary op over two dense views of one shape (`elementwise/`): sliced
    /// plans fold their slices' partial results with it (`sliced::Combine::Fold`).
    pub(crate) fold: FoldFn,
    /// Record a read of a storage into the L2 cache where that pays (`prefetch/`).
    pub(crate) prefetch: fn(&GpuStorage) -> Result<()>,
    /// Empty the caches families keep for the device of this ordinal (`empty_cache`).
    pub(crate) clear_caches: &'static [fn(usize)],
}

//! `GpuDevice`: a cheap handle to one opened GPU (an `Arc` of its context). Opening an
//! ordinal twice returns the same context (`GpuDevice::open`, in `backend/gpu/mod.rs`, which
//! hands the context what the kernel families register), so tensors on `gpu:0` share one
//! memory pool and one queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::context::GpuContext;
use crate::backend::gpu_facts::{AdapterInfo, AutotuneMode, ExecutionMode, OpTiming};
use crate::error::Result;

/// A handle to one opened GPU (cheap to clone; equal when it is the same context).
#[derive(Clone)]
pub struct GpuDevice {
    pub(crate) context: Arc<GpuContext>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuDevice(gpu:{} {})",
            self.context.ordinal, self.context.info.name
        )
    }
}

impl PartialEq for GpuDevice {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.context, &other.context)
    }
}

impl Eq for GpuDevice {}

/// The devices `GpuDevice::open` opened, by ordinal.
pub(crate) static OPEN_DEVICES: Mutex<Option<HashMap<usize, GpuDevice>>> = Mutex::new(None);

impl GpuDevice {
    /// The adapter's position in `adapter_infos()`.
    pub fn ordinal(&self) -> usize {
        self.context.ordinal
    }

    /// `NVIDIA H200 (Vulkan)`.
    pub fn name(&self) -> String {
        format!("{}, {}", self.context.info.name, self.context.info.backend)
    }

    /// Submit pending work and wait for the GPU to finish it.
    pub fn synchronize(&self) -> Result<()> {
        self.context.synchronize()
    }

    /// Start timing the ops recorded from now on with GPU timestamps (used by the
    /// profiler). Returns false when the adapter has no timestamp queries. Work recorded
    /// before is recorded first (deferred elementwise ops included), outside the timing.
    pub fn begin_timing(&self) -> Result<bool> {
        self.context().begin_timed_op()
    }

    /// Stop timing; the GPU time of the kernels recorded since `begin_timing`, in all and
    /// kernel by kernel (`None` when there were none). Waits for the GPU.
    pub fn end_timing(&self) -> Result<Option<OpTiming>> {
        self.context().end_timed_op()
    }

    /// Whether f16 tensors work on this device.
    pub fn supports_f16(&self) -> bool {
        self.context.supports_f16()
    }

    /// What the adapter reports.
    pub fn info(&self) -> AdapterInfo {
        self.context.info.clone()
    }

    /// The current execution mode.
    pub fn execution_mode(&self) -> ExecutionMode {
        self.context.mode()
    }

    /// Whether kernel variants are timed per shape (`ANYGRAD_AUTOTUNE`).
    pub fn autotune_mode(&self) -> AutotuneMode {
        self.context().autotune.mode()
    }

    /// Turn the autotuner on, off (the fixed heuristics) or to refresh, for this device, as
    /// `ANYGRAD_AUTOTUNE` does at start.
    pub fn set_autotune_mode(&self, mode: AutotuneMode) {
        self.context().autotune.set_mode(mode);
    }

    /// Compile every kernel with wgpu's runtime bounds checks (`true`), including the
    /// trusted kernels that normally run without them for speed, or return to the default
    /// (`false`); `ANYGRAD_GPU_BOUNDS_CHECKS=on` sets it at start. A debugging switch: a
    /// kernel that reads out of bounds gives different results with the checks on. Kernels
    /// compile again in the new mode on their next use.
    pub fn set_bounds_checks(&self, on: bool) {
        self.context().set_bounds_checks(on);
    }

    /// Whether every kernel is compiled with bounds checks (see
    /// [`GpuDevice::set_bounds_checks`]).
    pub fn bounds_checks(&self) -> bool {
        self.context().bounds_checks()
    }

    /// How many compute pipelines this device has compiled so far (each kernel once per
    /// bounds-check mode; a cache hit compiles nothing).
    pub fn pipelines_compiled(&self) -> u64 {
        self.context().pipelines_compiled()
    }

    /// How many kernel candidates the autotuner has timed on this device so far.
    pub fn autotuned_candidates(&self) -> u64 {
        self.context().autotune.measured()
    }

    pub(crate) fn context(&self) -> &GpuContext {
        &self.context
    }

    /// Tests: dispatches whose parameter words came from the cache (`runtime/context/reuse.rs`).
    #[cfg(test)]
    pub(crate) fn cached_parameter_hits(&self) -> u64 {
        self.context.cached_parameter_hits()
    }
}

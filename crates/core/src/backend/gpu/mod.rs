//! The GPU backend: wgpu (Vulkan, DX12, Metal) with WGSL compute kernels — anygrad's answer to
//! DirectML. Layout of the module:
//! - `adapters.rs`: enumerate and order adapters (their `AdapterInfo`, like the memory and
//!   fusion counters and `ExecutionMode`, is plain data in `../gpu_facts.rs`, which exists
//!   without the `gpu` feature too);
//! - `context.rs`: one opened device (queue, open command encoder, flushes, readback, errors; copies and clears in `context/copies.rs`);
//! - `buffers.rs`: the caching allocator (its counters: `MemoryStats`);
//! - `kernels.rs`: the typed `KernelKey` of every pipeline, the one list of kernel families;
//!   each family lives in one module with its WGSL (`shaders/*.wgsl` or a generator), its
//!   `kernel_params!` struct, its catalogue entries and its launcher: `fill.rs`, `random.rs`,
//!   `elementwise.rs` (+ `vector.rs`), `reduce.rs`, `matmul.rs`, `matmul_large.rs`,
//!   `matmul_coop.rs` (tensor cores), `conv.rs`, `conv_backward.rs` (+ `conv_gemm.rs`),
//!   `indexing.rs`, `pool.rs` (max pooling), `fusion.rs` (+ `fusion_source.rs`), `custom.rs`,
//!   `attention.rs` (+ `attention_source.rs`: fused scaled dot-product attention and its
//!   backward); shared leaves: `wgsl.rs` (dtype to WGSL), `params.rs` (parameter structs and words);
//!   `kernel_catalog.rs`: every instantiation, for the naga test and `anygrad kernels dump`;
//! - `storage.rs`: `GpuStorage` creation and transfers; `ops.rs`: shared operand checks and
//!   the matmul primitive.
//!
//! The whole module is compiled only with the `gpu` cargo feature (on by default); without it
//! `../gpu_absent.rs` stands in under the same path.
//!
//! `GpuDevice` is a cheap handle (an `Arc` of the context); opening the same ordinal twice
//! returns the same context, so tensors on `gpu:0` share one memory pool and one queue.

// The contract layer: the backend contract and what names every family.
mod contract;
mod kernel_catalog;
#[cfg(test)]
mod kernel_snapshots;
mod kernels;
mod sliced;

// The runtime every family runs on.
mod runtime;

// The kernel families.
mod attention;
mod conv;
mod copy;
mod custom;
mod elementwise;
mod fill;
mod fusion;
mod index;
mod matmul;
mod norm;
mod optimizer;
mod pool;
mod prefetch;
mod random;
mod reduce;
mod sort;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use crate::backend::gpu_facts::{
    is_software, AdapterInfo, AutotuneMode, ExecutionMode, FusionStats, MemoryStats, OpTiming,
};
pub use fusion::{elementwise_fusion_enabled, set_elementwise_fusion};
pub use kernel_catalog::all_kernel_sources;
pub use matmul::coop::CoopVariant;
pub use runtime::pending_read::GpuPendingRead;
pub use runtime::storage::GpuStorage;

use crate::error::Result;
use runtime::context::GpuContext;
pub(crate) use runtime::context::GpuStaging;
use runtime::hooks::Hooks;

/// A handle to one opened GPU (cheap to clone; equal when it is the same context).
#[derive(Clone)]
pub struct GpuDevice {
    context: Arc<GpuContext>,
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

/// What the kernel families register with every context: elementwise fusion plans the work
/// deferred into the recording; the convolution's weight cache empties with `empty_cache`.
static HOOKS: Hooks = Hooks {
    deferred: &fusion::PLANNER,
    clear_caches: &[conv::weight_cache::clear],
};

static OPEN_DEVICES: Mutex<Option<HashMap<usize, GpuDevice>>> = Mutex::new(None);

impl GpuDevice {
    /// Open adapter `ordinal` (in `adapter_infos()` order); the same ordinal always gives the
    /// same device. `Error::NoAdapter` (with a hint) when it does not exist or fails to open.
    pub fn open(ordinal: usize) -> Result<GpuDevice> {
        let mut open = OPEN_DEVICES.lock().unwrap_or_else(|p| p.into_inner());
        let devices = open.get_or_insert_with(HashMap::new);
        if let Some(device) = devices.get(&ordinal) {
            return Ok(device.clone());
        }
        let device = GpuDevice::open_new_instance(ordinal)?;
        devices.insert(ordinal, device.clone());
        Ok(device)
    }

    /// Open a separate context on adapter `ordinal` (its own queue and memory pool); tensors
    /// on it count as living on another device.
    pub fn open_new_instance(ordinal: usize) -> Result<GpuDevice> {
        Ok(GpuDevice {
            context: Arc::new(GpuContext::create(ordinal, &HOOKS)?),
        })
    }

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

    /// How many kernel candidates the autotuner has timed on this device so far.
    pub fn autotuned_candidates(&self) -> u64 {
        self.context().autotune.measured()
    }

    pub(crate) fn context(&self) -> &GpuContext {
        &self.context
    }

    /// Tests: dispatches whose parameter words came from the cache (`context/reuse.rs`).
    #[cfg(test)]
    pub(crate) fn cached_parameter_hits(&self) -> u64 {
        self.context.cached_parameter_hits()
    }
}

/// Number of usable GPU adapters.
pub fn device_count() -> usize {
    runtime::adapters::registry().adapters.len()
}

/// Every usable adapter, in ordinal order.
pub fn adapter_infos() -> Vec<AdapterInfo> {
    runtime::adapters::registry().infos.clone()
}

/// Memory counters of `device`.
pub fn memory_stats(device: &GpuDevice) -> MemoryStats {
    device.context.memory_stats()
}

/// Elementwise-fusion counters of `device` (see `set_elementwise_fusion`).
pub fn fusion_stats(device: &GpuDevice) -> FusionStats {
    device.context.fusion_stats()
}

/// Give cached (free) buffers of `device` back to the driver.
pub fn empty_cache(device: &GpuDevice) {
    device.context.empty_cache()
}

/// Restart peak-memory tracking of `device`.
pub fn reset_peak_memory(device: &GpuDevice) {
    device.context.reset_peak()
}

/// Change how `device` batches submissions and caches memory.
pub fn set_execution_mode(device: &GpuDevice, mode: ExecutionMode) -> Result<()> {
    device.context.set_mode(mode)
}

//! The GPU backend: wgpu (Vulkan, DX12, Metal) with WGSL compute kernels — anygrad's answer to
//! DirectML. Three layers, each importing only from the layers below it:
//!
//! - `runtime/`: what every kernel runs on and nothing that names a family — adapters and
//!   their facts (tensor cores: `runtime/adapters/cooperative.rs`), the context (queue, open
//!   command encoder, flushes, readback, errors, the pipeline cache keyed by the `Kernel`
//!   trait of `runtime/kernel.rs`, per-device family state), `GpuDevice`, buffers and
//!   `GpuStorage`, parameter structs, the shared WGSL, operand checks, autotuning. Families
//!   that the runtime calls back (fusion drains deferred work, the convolution's weight cache
//!   empties) register through `runtime/hooks.rs`.
//! - one folder per kernel family, each with its WGSL (a template in `shaders/` or a
//!   generator), its `kernel_params!` structs, its catalogue entries and its launchers:
//!   `elementwise/` (+ vec4 bodies), `fusion/`, `reduce/`, `norm/` (softmax and layer norm
//!   rows, batch norm), `matmul/` (the primitive choosing among the 64- and 128-tile, dot and
//!   tensor-core kernels), `conv/` (direct, backward, Winograd, tensor cores, channels-last,
//!   the epilogue, the tuning entry points), `attention/` (scalar and tensor-core kernels),
//!   `pool/`, `index/`, `copy/`, `sort/`, `scan/`, `fill/`, `random/`, `optimizer/`, `custom/`,
//!   `prefetch/`, `quantized/` (products with block-quantized matrices read in place).
//! - what names every family: `kernel_catalog.rs` (every family's `Kernel::catalogue`, for
//!   the naga test and `anygrad kernels dump`), `kernel_snapshots.rs`, and this file (the
//!   public API and the hooks handed to every context).
//!
//! Each family implements its traits of the backend contract (`backend/contract/`) in its own
//! `contract.rs`, through the runtime's `sliced::Plan` (which runs a primitive in slices when a
//! tensor exceeds one buffer). Each family's key
//!   type (`<family>/kernel.rs`) implements `Kernel`; no enum lists them all.
//!
//! The whole module is compiled only with the `gpu` cargo feature (on by default); without it
//! `../gpu_absent.rs` stands in under the same path.

// The contract layer: the backend contract and what names every family.
mod kernel_catalog;
#[cfg(test)]
mod kernel_snapshots;
#[cfg(test)]
mod layering;

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
mod quantized;
mod random;
mod reduce;
mod scan;
mod sort;

use std::collections::HashMap;
use std::sync::Arc;

pub use crate::backend::gpu_facts::{
    is_software, AdapterInfo, AutotuneMode, ExecutionMode, FusionStats, KernelDispatches,
    MemoryStats, OpTiming,
};
pub use fusion::{elementwise_fusion_enabled, set_elementwise_fusion};
pub use kernel_catalog::all_kernel_sources;
pub use matmul::coop::CoopVariant;
pub use runtime::device::GpuDevice;
pub use runtime::pending_read::GpuPendingRead;
pub use runtime::storage::GpuStorage;

use crate::error::Result;
use runtime::context::GpuContext;
pub(crate) use runtime::context::GpuStaging;
use runtime::device::OPEN_DEVICES;
use runtime::hooks::Hooks;

/// What the kernel families register with every context: elementwise fusion plans the work
/// deferred into the recording; the dense copies and the prefetch serve the other families;
/// the convolution's weight cache empties with `empty_cache`.
static HOOKS: Hooks = Hooks {
    deferred: &fusion::PLANNER,
    dense_copies: &copy::COPIES,
    fold: elementwise::fold,
    prefetch: prefetch::prefetch,
    clear_caches: &[conv::weight_cache::clear],
};

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

/// Kernels dispatched on `device` since it opened, by name.
pub fn kernel_dispatches(device: &GpuDevice) -> KernelDispatches {
    device.context.kernel_dispatches()
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

//! The public face of the GPU backend (the backend itself is crate-private): the device
//! handle inside `Device::Gpu`, what each adapter reports, memory and fusion statistics, the
//! execution mode, and every kernel's WGSL source (for `anygrad kernels` and review). Tensors
//! never need more than `Device`; this module is for tools such as `anygrad devices` and
//! `anygrad doctor`, and for tests that inspect the allocator.
//!
//! Without the `gpu` cargo feature ([`ENABLED`] is false) the same names exist: opening a GPU
//! is `Error::NoAdapter` ("built without the `gpu` feature"), the adapter list and the kernel
//! catalogue are empty, and `Device::best` picks the CPU.

/// Whether this build has the GPU backend (anygrad-core's `gpu` cargo feature, on by
/// default). Tests use it to skip GPU variants, even under `ANYGRAD_REQUIRE_GPU=1`, in a
/// CPU-only build.
pub const ENABLED: bool = cfg!(feature = "gpu");

pub use crate::backend::gpu::{
    adapter_infos, all_kernel_sources, device_count, elementwise_fusion_enabled, empty_cache,
    fusion_stats, kernel_dispatches, memory_stats, reset_peak_memory, set_elementwise_fusion,
    set_execution_mode, AdapterInfo, AutotuneMode, CoopVariant, ExecutionMode, FusionStats,
    GpuDevice, KernelDispatches, MemoryStats, OpTiming,
};

/// Wait until every GPU opened through `Device::gpu`/`Device::parse` has finished the work
/// submitted to it, and close those no tensor holds any more (a later `Device::gpu` opens a
/// fresh one). Call it before the process exits, on error paths too: a Vulkan driver still
/// running submitted work on its own threads while the process exits can crash it (Mesa's
/// lavapipe compiles kernels with LLVM on its queue thread, and the exit destroys LLVM's
/// globals under it). The `anygrad` command calls it at the end of `main`.
pub fn shutdown() {
    #[cfg(feature = "gpu")]
    crate::backend::gpu::GpuDevice::close_all();
}

/// Tests: lose `device` now, as a driver reset would (the wgpu device is destroyed). Every
/// later call on it, and every wait for work already submitted, returns
/// `Error::DeviceLost`; tensors on it become unusable.
#[doc(hidden)]
pub fn simulate_device_loss(device: &GpuDevice) {
    #[cfg(feature = "gpu")]
    device.context().simulate_loss();
    #[cfg(not(feature = "gpu"))]
    let _ = device;
}

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
    fusion_stats, memory_stats, reset_peak_memory, set_elementwise_fusion, set_execution_mode,
    AdapterInfo, AutotuneMode, CoopVariant, ExecutionMode, FusionStats, GpuDevice, MemoryStats,
    OpTiming,
};

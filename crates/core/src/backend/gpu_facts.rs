//! What the GPU backend reports, as plain data with no wgpu in it: adapter facts
//! (`AdapterInfo`), memory and fusion counters, and the execution mode. Kept out of `gpu/` so
//! that it exists in every build: with the `gpu` cargo feature the backend fills these in;
//! without it (`gpu_absent.rs`) the adapter list is empty and no counters can be asked for, yet
//! code naming these types still compiles.

/// What `anygrad devices` shows about one adapter.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdapterInfo {
    /// Position in anygrad's ordering (`gpu:index`).
    pub index: usize,
    /// Adapter name reported by the driver.
    pub name: String,
    /// PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x10005 Mesa).
    pub vendor: u32,
    /// `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` or `Other`.
    pub device_type: String,
    /// Graphics API: `Vulkan`, `Dx12`, `Metal` or `Gl`.
    pub backend: String,
    /// Driver name.
    pub driver: String,
    /// Driver version text.
    pub driver_info: String,
    /// Largest buffer the adapter can create, in bytes.
    pub max_buffer_size: u64,
    /// Largest buffer range one kernel binding can see, in bytes (tensors above it are refused).
    pub max_storage_binding_size: u64,
    /// Most workgroups per dispatch dimension (65,535 on most hardware).
    pub max_workgroups_per_dimension: u32,
    /// Bytes of workgroup (shared) memory per workgroup.
    pub max_workgroup_storage_size: u32,
    /// Whether kernels can compute in f16 (`SHADER_F16`).
    pub shader_f16: bool,
    /// Whether subgroup (warp/wave) operations are available.
    pub subgroups: bool,
    /// Smallest subgroup size.
    pub min_subgroup_size: u32,
    /// Largest subgroup size.
    pub max_subgroup_size: u32,
    /// Whether GPU timestamps can be recorded (profiler).
    pub timestamp_query: bool,
    /// Whether kernels can add to f32 in storage atomically (`SHADER_FLOAT32_ATOMIC`: the
    /// attention backward then sums the query gradient in its key-value kernel).
    pub float_atomics: bool,
    /// Cooperative-matrix (tensor-core) configurations, as `MxNxK ab->cr`.
    pub cooperative_matrix: Vec<String>,
    /// Features turned off by `ANYGRAD_DISABLE_FEATURES` (`coop`, `subgroups`, `f16`,
    /// `float-atomics`, `timestamps`): the fields above report them absent, and anygrad
    /// neither requests nor uses them.
    pub disabled_features: Vec<String>,
    /// Device memory in bytes, when the API reports it (wgpu does not yet: `None`).
    pub memory_bytes: Option<u64>,
}

/// Whether an adapter's `device_type` (as [`AdapterInfo`] spells it) is a software
/// rasterizer running on the CPU.
pub fn is_software(info: &AdapterInfo) -> bool {
    info.device_type == "Cpu"
}

/// Memory counters of one device, in the spirit of `torch.cuda.memory_stats()`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MemoryStats {
    /// Bytes held by live tensors (size-class rounded).
    pub allocated_bytes: u64,
    /// Bytes the live tensors asked for (before size-class rounding): `allocated_bytes -
    /// requested_bytes` is the caching allocator's rounding waste.
    pub requested_bytes: u64,
    /// Highest `requested_bytes` since the device opened or `reset_peak_memory`.
    pub peak_requested_bytes: u64,
    /// Bytes the pool holds from the driver: allocated + cached + internal + pending reuse.
    pub reserved_bytes: u64,
    /// Highest `allocated_bytes` since the device opened or `reset_peak_memory`.
    pub peak_allocated_bytes: u64,
    /// Number of live tensor buffers.
    pub allocation_count: u64,
    /// Bytes sitting in the free lists, ready for reuse.
    pub cached_bytes: u64,
    /// Buffers created through the driver since the device opened.
    pub driver_allocations: u64,
    /// Requests served from the cache instead of the driver.
    pub cache_hits: u64,
    /// Times an allocation failed, the cache was emptied and the request retried.
    pub out_of_memory_retries: u64,
    /// Computations of a primitive on large tensors that were refused as needing one buffer
    /// above the largest storage binding and computed again in smaller slices. A primitive
    /// plans its slices from its operands' and output's sizes; only a kernel's internal buffer
    /// can exceed what the plan foresaw, so a count that grows means work done twice.
    pub sliced_retries: u64,
}

/// Counters of elementwise fusion on one GPU since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FusionStats {
    /// Elementwise ops that were deferred for fusion.
    pub ops_deferred: u64,
    /// Kernels they ran as (each writes one result; the other ops were computed inside them).
    pub kernels: u64,
}

impl FusionStats {
    /// Ops whose results were computed inside another op's kernel instead of being written.
    pub fn ops_fused_away(&self) -> u64 {
        self.ops_deferred.saturating_sub(self.kernels)
    }
}

/// Kernels dispatched on one GPU since it was opened, by kernel name (its family and
/// instantiation, as the profiler names kernels). Elementwise ops deferred for fusion count
/// as the kernels they ran as, once recorded. The difference of two readings is the kernels
/// that the work between them recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelDispatches {
    /// Dispatches per kernel name.
    pub by_kernel: std::collections::BTreeMap<String, u64>,
}

impl KernelDispatches {
    /// Every dispatch, of every kernel.
    pub fn total(&self) -> u64 {
        self.by_kernel.values().sum()
    }

    /// The dispatches recorded since `earlier` (a reading of the same device), by kernel
    /// name; kernels not dispatched since are left out.
    pub fn since(&self, earlier: &KernelDispatches) -> KernelDispatches {
        KernelDispatches {
            by_kernel: self
                .by_kernel
                .iter()
                .filter_map(|(name, &count)| {
                    let before = earlier.by_kernel.get(name).copied().unwrap_or(0);
                    (count > before).then(|| (name.clone(), count - before))
                })
                .collect(),
        }
    }
}

/// Whether kernel variants are timed per shape (`ANYGRAD_AUTOTUNE`; see the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum AutotuneMode {
    /// Run the fixed heuristic's kernel (the default on software adapters).
    Off,
    /// Time new shapes once; reuse choices from memory and the cache file (the default on
    /// hardware adapters).
    On,
    /// Time new shapes again, ignoring (and rewriting) the cache file.
    Refresh,
}

/// How eagerly work is submitted and memory is cached (`ANYGRAD_EXECUTION_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ExecutionMode {
    /// 64 dispatches per submit, caching allocator on.
    Default,
    /// 256 dispatches per submit (fewer, larger submissions), caching on.
    Throughput,
    /// Submit after every dispatch, so the GPU starts at once; caching on.
    Latency,
    /// 32 dispatches per submit and no caching: freed buffers go back to the driver.
    Memory,
}

impl ExecutionMode {
    /// The mode named by `ANYGRAD_EXECUTION_MODE` (`default` when unset or unknown).
    pub fn from_env() -> ExecutionMode {
        match std::env::var("ANYGRAD_EXECUTION_MODE")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            Some("throughput") => ExecutionMode::Throughput,
            Some("latency") => ExecutionMode::Latency,
            Some("memory") => ExecutionMode::Memory,
            Some("default") | Some("") | None => ExecutionMode::Default,
            Some(other) => {
                tracing::warn!("ANYGRAD_EXECUTION_MODE={other} is unknown (default|throughput|latency|memory); using default");
                ExecutionMode::Default
            }
        }
    }

    /// Dispatches recorded before the encoder is submitted.
    pub fn dispatches_per_submit(self) -> u32 {
        match self {
            ExecutionMode::Default => 64,
            ExecutionMode::Throughput => 256,
            ExecutionMode::Latency => 1,
            ExecutionMode::Memory => 32,
        }
    }

    /// Whether freed buffers are kept for reuse.
    pub fn caches_buffers(self) -> bool {
        match self {
            ExecutionMode::Default | ExecutionMode::Throughput | ExecutionMode::Latency => true,
            ExecutionMode::Memory => false,
        }
    }
}

/// The GPU time of one op the profiler timed (`GpuDevice::end_timing`).
#[derive(Debug, Clone, PartialEq)]
pub struct OpTiming {
    /// From its first kernel's start to its last kernel's end, µs.
    pub device_us: f64,
    /// Each kernel (its `Kernel` key's name) and its own time, µs, in dispatch order (the first
    /// 511 of the op).
    pub kernels: Vec<(String, f64)>,
}

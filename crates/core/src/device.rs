//! `Device`: where a tensor lives. A closed enum (CPU or one GPU adapter opened through wgpu),
//! chosen at run time; `Device::best()` picks the fastest working GPU or falls back to the CPU
//! and says why. `ANYGRAD_DEVICE=cpu|gpu|gpu:N` overrides the choice.

use crate::backend::gpu::{self, GpuDevice};
use crate::error::{Error, Result};

/// A compute device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Device {
    /// The host CPU (reference backend: `gemm` for matmul, rayon for large elementwise work).
    Cpu,
    /// A GPU adapter opened through wgpu (Vulkan, DX12 or Metal).
    Gpu(GpuDevice),
}

impl Device {
    /// The CPU device.
    pub fn cpu() -> Device {
        Device::Cpu
    }

    /// GPU number `ordinal` in `anygrad devices` order (discrete first). Opening the same
    /// ordinal twice returns the same device (one context, one memory pool).
    pub fn gpu(ordinal: usize) -> Result<Device> {
        Ok(Device::Gpu(GpuDevice::open(ordinal)?))
    }

    /// The best device: `ANYGRAD_DEVICE` when set, else the first hardware GPU whose device
    /// opens, else the CPU (a software rasterizer such as llvmpipe or lavapipe is slower than
    /// the CPU backend, so it is used only when asked for by `gpu:N`). The reason for a CPU
    /// choice is logged with `tracing::warn!`.
    pub fn best() -> Result<Device> {
        if let Ok(requested) = std::env::var("ANYGRAD_DEVICE") {
            if !requested.is_empty() {
                return Device::parse(&requested);
            }
        }
        let (device, reason) = Device::best_available();
        if let Some(reason) = reason {
            tracing::warn!("using the CPU: {reason}");
        }
        Ok(device)
    }

    /// The best device and why it was chosen: the first GPU adapter when it is hardware and
    /// opens, else the CPU with the reason no GPU was used (no adapter, only software
    /// rasterizers, or the adapter failed to open).
    pub fn best_available() -> (Device, Option<String>) {
        let infos = gpu::adapter_infos();
        if let Some(first) = infos.first() {
            if gpu::is_software(first) {
                let names: Vec<&str> = infos.iter().map(|info| info.name.as_str()).collect();
                let reason = if names.len() == 1 {
                    format!(
                        "the only GPU adapter, {}, is a software rasterizer; --device gpu:0 \
                         uses it anyway",
                        names[0]
                    )
                } else {
                    format!(
                        "the GPU adapters ({}) are software rasterizers; --device gpu:0 uses \
                         the first anyway",
                        names.join(", ")
                    )
                };
                return (Device::Cpu, Some(reason));
            }
        }
        match GpuDevice::open(0) {
            Ok(gpu) => (Device::Gpu(gpu), None),
            Err(error) => (Device::Cpu, Some(format!("no usable GPU ({error})"))),
        }
    }

    /// Parse `cpu`, `gpu` (= `gpu:0`), `gpu:N`, `best`.
    pub fn parse(text: &str) -> Result<Device> {
        let text = text.trim().to_ascii_lowercase();
        match text.as_str() {
            "cpu" => Ok(Device::Cpu),
            "gpu" | "cuda" | "dml" => Device::gpu(0),
            "best" | "auto" => Ok(Device::best_available().0),
            other => {
                let ordinal = other
                    .strip_prefix("gpu:")
                    .and_then(|n| n.parse::<usize>().ok())
                    .ok_or_else(|| {
                        Error::invalid(
                            "device",
                            format!("unknown device `{text}`; use cpu, gpu, gpu:N or best (see `anygrad devices`)"),
                        )
                    })?;
                Device::gpu(ordinal)
            }
        }
    }

    /// True for the CPU.
    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// True for a GPU.
    pub fn is_gpu(&self) -> bool {
        matches!(self, Device::Gpu(_))
    }

    /// A human-readable description (`cpu`, `gpu:0 (NVIDIA H200, Vulkan)`).
    pub fn description(&self) -> String {
        match self {
            Device::Cpu => "cpu".to_string(),
            Device::Gpu(gpu) => format!("gpu:{} ({})", gpu.ordinal(), gpu.name()),
        }
    }

    /// Wait until all queued work on the device has finished.
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Gpu(gpu) => gpu.synchronize(),
        }
    }

    /// Whether the device computes in f16 (the CPU always can; a GPU needs SHADER_F16).
    pub fn supports_f16(&self) -> bool {
        match self {
            Device::Cpu => true,
            Device::Gpu(gpu) => gpu.supports_f16(),
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Gpu(gpu) => write!(f, "gpu:{}", gpu.ordinal()),
        }
    }
}

/// Number of GPU adapters anygrad can use (like `torch_directml.device_count()`).
pub fn device_count() -> usize {
    gpu::device_count()
}

/// The name of GPU number `ordinal`, if it exists.
pub fn device_name(ordinal: usize) -> Option<String> {
    gpu::adapter_infos()
        .into_iter()
        .nth(ordinal)
        .map(|info| info.name)
}

/// Memory statistics of a device (like `torch.cuda.memory_stats`): bytes held by live
/// tensors, bytes reserved from the driver, the peak, and allocation counts. The CPU backend
/// allocates with the system allocator and reports `None`.
pub fn memory_stats(device: &Device) -> Option<gpu::MemoryStats> {
    match device {
        Device::Cpu => None,
        Device::Gpu(gpu_device) => Some(gpu::memory_stats(gpu_device)),
    }
}

/// Elementwise-fusion counters of a GPU (`None` on the CPU, which does not fuse): how many
/// float elementwise ops were deferred and how many kernels they ran as.
pub fn fusion_stats(device: &Device) -> Option<gpu::FusionStats> {
    match device {
        Device::Cpu => None,
        Device::Gpu(gpu_device) => Some(gpu::fusion_stats(gpu_device)),
    }
}

/// Kernels dispatched on a GPU since it opened, by kernel name (`None` on the CPU, which
/// runs no kernels): subtract an earlier reading ([`gpu::KernelDispatches::since`]) to count
/// the kernels a piece of work records.
pub fn kernel_dispatches(device: &Device) -> Option<gpu::KernelDispatches> {
    match device {
        Device::Cpu => None,
        Device::Gpu(gpu_device) => Some(gpu::kernel_dispatches(gpu_device)),
    }
}

/// Return cached, unused device memory to the driver (like `torch.cuda.empty_cache`).
pub fn empty_cache(device: &Device) {
    match device {
        Device::Cpu => {}
        Device::Gpu(gpu_device) => gpu::empty_cache(gpu_device),
    }
}

/// Reset the peak figure of [`memory_stats`] (like `torch.cuda.reset_peak_memory_stats`).
pub fn reset_peak_memory(device: &Device) {
    match device {
        Device::Cpu => {}
        Device::Gpu(gpu_device) => gpu::reset_peak_memory(gpu_device),
    }
}

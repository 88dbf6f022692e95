//! Adapter enumeration. A wgpu *adapter* is one physical (or software) GPU seen through one
//! graphics API; the same card often shows up twice (Vulkan and OpenGL), and Mesa's lavapipe
//! adds a CPU-emulated "GPU". We list the adapters once per process, drop OpenGL duplicates
//! of cards that a modern API already exposes, and order them hardware before software
//! rasterizers, Vulkan/DX12/Metal before OpenGL, then discrete > integrated > virtual, so that
//! `gpu:0` is the fastest device.
//!
//! The features an adapter reports become anygrad's adapter facts (`AdapterInfo`) and the
//! features a device is opened with ([`usable_features`]) less those `ANYGRAD_DISABLE_FEATURES`
//! turns off (`disabled_features.rs`), so that a capable GPU can take the path of one that
//! lacks them.

pub(crate) mod cooperative;
mod disabled_features;

use std::sync::OnceLock;

use crate::backend::gpu_facts::AdapterInfo;
use crate::error::{Error, Result};
use disabled_features::DisabledFeatures;

/// The process-wide instance and the ordered adapters (created on first use).
pub(crate) struct AdapterRegistry {
    pub(crate) adapters: Vec<wgpu::Adapter>,
    pub(crate) infos: Vec<AdapterInfo>,
    /// What `ANYGRAD_DISABLE_FEATURES` turned off, read once.
    disabled: DisabledFeatures,
}

static REGISTRY: OnceLock<AdapterRegistry> = OnceLock::new();

/// The adapters, enumerated once.
pub(crate) fn registry() -> &'static AdapterRegistry {
    REGISTRY.get_or_init(enumerate)
}

/// Sort key of an adapter: hardware before software rasterizers (device type `Cpu`:
/// llvmpipe, lavapipe, WARP), then Vulkan/DX12/Metal before OpenGL, then by device type.
fn adapter_rank(info: &wgpu::AdapterInfo) -> (bool, bool, u8) {
    (
        info.device_type == wgpu::DeviceType::Cpu,
        info.backend == wgpu::Backend::Gl,
        type_rank(info.device_type),
    )
}

fn type_rank(device_type: wgpu::DeviceType) -> u8 {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn enumerate() -> AdapterRegistry {
    // `InstanceDescriptor` has no `Default` in wgpu 30; this reads WGPU_BACKEND etc. from the
    // environment and needs no window. Unless WGPU_BACKEND chooses, probe the modern APIs
    // first and OpenGL only when they find nothing: probing GL without a display logs EGL
    // errors, and GL compute is the weakest path anyway.
    let user_chose_backends = std::env::var_os("WGPU_BACKEND").is_some();
    // Mesa's implicit "device select" layer looks for a Wayland display while the adapters
    // are listed, and without a desktop session (servers, containers, CI) prints "error:
    // XDG_RUNTIME_DIR is invalid or not set" to stderr: a false alarm on every run. anygrad
    // orders the adapters itself, so the layer is turned off for this process unless the
    // user set its variable. This runs once, before the first Vulkan instance exists.
    if std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    if !user_chose_backends {
        descriptor.backends = wgpu::Backends::PRIMARY;
    }
    let instance = wgpu::Instance::new(descriptor);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    if adapters.is_empty() && !user_chose_backends {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        descriptor.backends = wgpu::Backends::SECONDARY;
        let fallback = wgpu::Instance::new(descriptor);
        adapters = pollster::block_on(fallback.enumerate_adapters(wgpu::Backends::all()));
    }
    // OpenGL exposes fewer features (no f16, weak compute): keep a GL adapter only when no
    // modern API sees a card of the same name.
    let modern_names: Vec<String> = adapters
        .iter()
        .filter(|a| a.get_info().backend != wgpu::Backend::Gl)
        .map(|a| a.get_info().name)
        .collect();
    adapters.retain(|a| {
        let info = a.get_info();
        info.backend != wgpu::Backend::Gl || !modern_names.contains(&info.name)
    });
    adapters.retain(|a| a.get_info().backend != wgpu::Backend::Noop);
    adapters.sort_by_key(|a| adapter_rank(&a.get_info()));
    let disabled = DisabledFeatures::from_env();
    let infos = adapters
        .iter()
        .enumerate()
        .map(|(index, a)| describe(index, a, &disabled))
        .collect();
    AdapterRegistry {
        adapters,
        infos,
        disabled,
    }
}

/// The features anygrad may request and use on `adapter`: the adapter's, less those that
/// `ANYGRAD_DISABLE_FEATURES` turned off. `GpuContext::create` opens devices with these, and
/// every kernel choice follows the device's features, so a disabled feature is never used.
pub(crate) fn usable_features(adapter: &wgpu::Adapter) -> wgpu::Features {
    adapter.features() - registry().disabled.features
}

/// The facts of `adapter`, its features less the `disabled` ones.
fn describe(index: usize, adapter: &wgpu::Adapter, disabled: &DisabledFeatures) -> AdapterInfo {
    let info = adapter.get_info();
    let limits = adapter.limits();
    let features = adapter.features() - disabled.features;
    let cooperative_matrix = if features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
        adapter
            .cooperative_matrix_properties()
            .iter()
            .map(|p| {
                format!(
                    "{}x{}x{} {:?}->{:?}",
                    p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    AdapterInfo {
        index,
        name: info.name.clone(),
        vendor: info.vendor,
        device_type: format!("{:?}", info.device_type),
        backend: format!("{:?}", info.backend),
        driver: info.driver.clone(),
        driver_info: info.driver_info.clone(),
        max_buffer_size: limits.max_buffer_size,
        max_storage_binding_size: limits.max_storage_buffer_binding_size,
        max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
        max_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
        shader_f16: features.contains(wgpu::Features::SHADER_F16),
        subgroups: features.contains(wgpu::Features::SUBGROUP),
        min_subgroup_size: info.subgroup_min_size,
        max_subgroup_size: info.subgroup_max_size,
        timestamp_query: features.contains(wgpu::Features::TIMESTAMP_QUERY),
        float_atomics: features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC),
        cooperative_matrix,
        disabled_features: disabled.names.iter().map(|name| name.to_string()).collect(),
        memory_bytes: None,
    }
}

/// The hint attached to `Error::NoAdapter`.
pub(crate) fn no_adapter_hint() -> String {
    "no Vulkan, DX12 or Metal adapter was found. On Linux install a Vulkan driver (the GPU \
     vendor's, or Mesa's software one: `apt-get install mesa-vulkan-drivers libvulkan1`), or \
     point the loader at one with VK_DRIVER_FILES=/usr/share/vulkan/icd.d/<driver>.json; \
     `anygrad doctor` shows what was found"
        .to_string()
}

/// The adapter at `ordinal`, or `NoAdapter` with a hint.
pub(crate) fn adapter(ordinal: usize) -> Result<(&'static wgpu::Adapter, &'static AdapterInfo)> {
    let registry = registry();
    match (registry.adapters.get(ordinal), registry.infos.get(ordinal)) {
        (Some(adapter), Some(info)) => Ok((adapter, info)),
        _ if registry.adapters.is_empty() => Err(Error::NoAdapter {
            hint: no_adapter_hint(),
        }),
        _ => Err(Error::NoAdapter {
            hint: format!(
                "gpu:{ordinal} does not exist; {} adapter(s) found (gpu:0..gpu:{})",
                registry.adapters.len(),
                registry.adapters.len() - 1
            ),
        }),
    }
}

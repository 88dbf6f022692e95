//! `anygrad.device` and the GPU queries of `anygrad.gpu` (alias `anygrad.cuda`). A device
//! string is `"cpu"`, `"gpu"`, `"gpu:N"`, `"cuda"` or `"cuda:N"`: `cuda` means a GPU of any
//! vendor, the N-th in `anygrad devices` order, so scripts written for CUDA keep their device
//! strings.

use anygrad::Device;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::{run, type_error, value_error};

/// A device (`torch.device`): `type` is `"cpu"`, `"gpu"` or `"cuda"` (the same GPUs), `index`
/// the GPU's number or `None`.
#[pyclass(frozen, name = "device", module = "anygrad")]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PyDevice {
    /// `"cpu"`, `"gpu"` or `"cuda"`.
    pub kind: String,
    /// The GPU's ordinal, when given.
    pub index: Option<usize>,
}

impl PyDevice {
    /// Parse a device string (`"cpu"`, `"gpu:1"`, `"cuda"`, ...).
    pub fn parse(text: &str) -> PyResult<PyDevice> {
        let trimmed = text.trim();
        let (kind, index) = match trimmed.split_once(':') {
            Some((kind, index)) => {
                let index = index.parse::<usize>().map_err(|_| {
                    value_error(
                        "device",
                        format!("invalid device string {text:?}: the index must be a number"),
                    )
                })?;
                (kind, Some(index))
            }
            None => (trimmed, None),
        };
        match kind {
            "cpu" if index.is_none() || index == Some(0) => Ok(PyDevice {
                kind: "cpu".into(),
                index: None,
            }),
            "gpu" | "cuda" => Ok(PyDevice {
                kind: kind.into(),
                index,
            }),
            _ => Err(value_error(
                "device",
                format!(
                    "invalid device string {text:?}: expected \"cpu\", \"gpu\", \"gpu:N\", \"cuda\" or \"cuda:N\""
                ),
            )),
        }
    }

    /// The device of a library tensor.
    pub fn of(device: &Device) -> PyDevice {
        match device {
            Device::Cpu => PyDevice {
                kind: "cpu".into(),
                index: None,
            },
            Device::Gpu(_) => {
                let text = device.to_string();
                let index = text
                    .split_once(':')
                    .and_then(|(_, index)| index.parse().ok())
                    .unwrap_or(0);
                PyDevice {
                    kind: "gpu".into(),
                    index: Some(index),
                }
            }
        }
    }

    /// The library device (opens the GPU on first use).
    pub fn open(&self) -> PyResult<Device> {
        if self.kind == "cpu" {
            return Ok(Device::Cpu);
        }
        let index = self.index.unwrap_or(0);
        run("device", || Device::gpu(index))
    }

    /// Whether this is a GPU (`gpu` or `cuda`).
    pub fn is_gpu(&self) -> bool {
        self.kind != "cpu"
    }
}

#[pymethods]
impl PyDevice {
    /// `device("cuda:0")`, `device("cpu")` or `device("gpu", 1)`.
    #[new]
    #[pyo3(signature = (spec, index=None))]
    pub fn new(spec: &Bound<'_, PyAny>, index: Option<usize>) -> PyResult<PyDevice> {
        if let Ok(device) = spec.downcast::<PyDevice>() {
            return Ok(device.get().clone());
        }
        if let Ok(ordinal) = spec.extract::<usize>() {
            return Ok(PyDevice {
                kind: "gpu".into(),
                index: Some(ordinal),
            });
        }
        let text = spec
            .downcast::<PyString>()
            .map_err(|_| type_error("device", format!("expected a device string, got {spec}")))?
            .to_cow()?
            .into_owned();
        let mut device = PyDevice::parse(&text)?;
        if let Some(index) = index {
            if device.index.is_some() {
                return Err(value_error(
                    "device",
                    format!("{text:?} already names an index; do not pass index={index}"),
                ));
            }
            if device.kind == "cpu" && index != 0 {
                return Err(value_error("device", "the CPU has only index 0"));
            }
            if device.is_gpu() {
                device.index = Some(index);
            }
        }
        Ok(device)
    }

    /// `"cpu"`, `"gpu"` or `"cuda"`.
    #[getter(r#type)]
    fn kind(&self) -> String {
        self.kind.clone()
    }

    /// The GPU's ordinal, or `None`.
    #[getter]
    fn index(&self) -> Option<usize> {
        self.index
    }

    fn __repr__(&self) -> String {
        match self.index {
            Some(index) => format!("device(type='{}', index={index})", self.kind),
            None => format!("device(type='{}')", self.kind),
        }
    }

    pub fn __str__(&self) -> String {
        match self.index {
            Some(index) => format!("{}:{index}", self.kind),
            None => self.kind.clone(),
        }
    }

    /// Equal when both are the CPU, or the same GPU (`cuda` and `gpu` name the same GPUs).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let other = if let Ok(device) = other.downcast::<PyDevice>() {
            device.get().clone()
        } else if let Ok(text) = other.extract::<String>() {
            match PyDevice::parse(&text) {
                Ok(device) => device,
                Err(_) => return false,
            }
        } else {
            return false;
        };
        self.is_gpu() == other.is_gpu() && self.index == other.index
    }

    fn __hash__(&self) -> u64 {
        match (self.is_gpu(), self.index) {
            (false, _) => 0,
            (true, None) => 1,
            (true, Some(index)) => 2 + index as u64,
        }
    }
}

/// The device that `value` stands for (a `device`, a string, a GPU number), or `None`.
pub fn optional_device(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<PyDevice>> {
    match value {
        Some(value) if !value.is_none() => Ok(Some(PyDevice::new(value, None)?)),
        _ => Ok(None),
    }
}

/// The library device for an optional `device=` argument (the CPU when absent).
pub fn device_or_cpu(value: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    match optional_device(value)? {
        Some(device) => device.open(),
        None => Ok(Device::Cpu),
    }
}

/// Number of GPUs anygrad can use (`torch.cuda.device_count`).
#[pyfunction]
pub fn gpu_device_count(py: Python<'_>) -> usize {
    py.allow_threads(anygrad::device_count)
}

/// The name of GPU `index` (`torch.cuda.get_device_name`).
#[pyfunction]
#[pyo3(signature = (index=0))]
pub fn gpu_device_name(py: Python<'_>, index: usize) -> PyResult<String> {
    py.allow_threads(|| anygrad::device_name(index))
        .ok_or_else(|| {
            value_error(
                "get_device_name",
                format!(
                    "there is no GPU {index} ({} found)",
                    anygrad::device_count()
                ),
            )
        })
}

/// The GPU's memory counters: (bytes allocated to tensors, bytes reserved by the pool, peak
/// allocated), all 0 for a GPU that was never opened.
#[pyfunction]
#[pyo3(signature = (index=0))]
pub fn gpu_memory_stats(py: Python<'_>, index: usize) -> PyResult<(u64, u64, u64)> {
    if index >= py.allow_threads(anygrad::device_count) {
        return Err(value_error(
            "memory_stats",
            format!("there is no GPU {index}"),
        ));
    }
    let device = run("memory_stats", || Device::gpu(index))?;
    Ok(match anygrad::memory_stats(&device) {
        Some(stats) => (
            stats.allocated_bytes,
            stats.reserved_bytes,
            stats.peak_allocated_bytes,
        ),
        None => (0, 0, 0),
    })
}

/// Return the GPU's cached, unused memory to the driver (`torch.cuda.empty_cache`).
#[pyfunction]
#[pyo3(signature = (index=0))]
pub fn gpu_empty_cache(py: Python<'_>, index: usize) -> PyResult<()> {
    if index >= py.allow_threads(anygrad::device_count) {
        return Ok(());
    }
    let device = run("empty_cache", || Device::gpu(index))?;
    py.allow_threads(|| anygrad::empty_cache(&device));
    Ok(())
}

/// Wait until the GPU's queued work is done (`torch.cuda.synchronize`).
#[pyfunction]
#[pyo3(signature = (index=0))]
pub fn gpu_synchronize(py: Python<'_>, index: usize) -> PyResult<()> {
    if index >= py.allow_threads(anygrad::device_count) {
        return Err(value_error(
            "synchronize",
            format!("there is no GPU {index}"),
        ));
    }
    let device = run("synchronize", || Device::gpu(index))?;
    py.allow_threads(|| run("synchronize", || device.synchronize()))
}

/// Reset the peak of the GPU's allocated bytes (`torch.cuda.reset_peak_memory_stats`).
#[pyfunction]
#[pyo3(signature = (index=0))]
pub fn gpu_reset_peak_memory(py: Python<'_>, index: usize) -> PyResult<()> {
    if index >= py.allow_threads(anygrad::device_count) {
        return Err(value_error(
            "reset_peak_memory_stats",
            format!("there is no GPU {index}"),
        ));
    }
    let device = run("reset_peak_memory_stats", || Device::gpu(index))?;
    py.allow_threads(|| anygrad::reset_peak_memory(&device));
    Ok(())
}

/// What the driver says of GPU `index` (`torch.cuda.get_device_properties`): name, vendor id,
/// adapter type, graphics API, driver, and the limits anygrad works within.
#[pyfunction]
#[pyo3(signature = (index=0))]
pub fn gpu_device_properties(py: Python<'_>, index: usize) -> PyResult<Bound<'_, PyDict>> {
    let infos = py.allow_threads(anygrad::gpu::adapter_infos);
    let info = infos
        .iter()
        .find(|info| info.index == index)
        .ok_or_else(|| {
            value_error(
                "get_device_properties",
                format!("there is no GPU {index} ({} found)", infos.len()),
            )
        })?;
    let properties = PyDict::new(py);
    properties.set_item("name", &info.name)?;
    properties.set_item("vendor", info.vendor)?;
    properties.set_item("device_type", &info.device_type)?;
    properties.set_item("backend", &info.backend)?;
    properties.set_item("driver", &info.driver)?;
    properties.set_item("driver_info", &info.driver_info)?;
    properties.set_item("max_buffer_size", info.max_buffer_size)?;
    properties.set_item("max_storage_binding_size", info.max_storage_binding_size)?;
    properties.set_item("shader_f16", info.shader_f16)?;
    properties.set_item("subgroups", info.subgroups)?;
    Ok(properties)
}

/// Register the device class and the GPU functions on the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyDevice>()?;
    module.add_function(wrap_pyfunction!(gpu_device_count, module)?)?;
    module.add_function(wrap_pyfunction!(gpu_device_name, module)?)?;
    module.add_function(wrap_pyfunction!(gpu_memory_stats, module)?)?;
    module.add_function(wrap_pyfunction!(gpu_empty_cache, module)?)?;
    module.add_function(wrap_pyfunction!(gpu_synchronize, module)?)?;
    module.add_function(wrap_pyfunction!(gpu_reset_peak_memory, module)?)?;
    module.add_function(wrap_pyfunction!(gpu_device_properties, module)?)?;
    Ok(())
}

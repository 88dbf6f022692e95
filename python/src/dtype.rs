//! `anygrad.dtype`: the element types Python sees (`anygrad.float32`, `anygrad.int64`, ...),
//! and their conversion from what scripts pass as `dtype=` (a dtype object, a Python type, a
//! numpy dtype or a name). anygrad stores integers in 32 bits: `int64` (`long`) is a dtype of
//! its own in Python, reported as PyTorch reports it, stored as `I32` (values outside its
//! range are an error where they enter).

use std::sync::atomic::{AtomicU8, Ordering};

use anygrad::DType;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

use crate::errors::type_error;

/// The dtype a Python tensor reports: anygrad's storage dtype, with 64-bit integers told
/// apart from 32-bit ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Logical {
    /// `float32`.
    Float32,
    /// `float16`.
    Float16,
    /// `bfloat16` (stored as 16 bits, computed in f32).
    BFloat16,
    /// `float64`.
    Float64,
    /// `int32`.
    Int32,
    /// `int64` (stored as `I32`).
    Int64,
    /// `uint32`.
    UInt32,
    /// `uint8`.
    UInt8,
    /// `bool`.
    Bool,
}

/// The float dtype of creation functions given no dtype (`torch.set_default_dtype`): 0 for
/// float32, 1 for float64, 2 for float16.
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(0);

impl Logical {
    /// The float dtype that creation functions use when given none (float32 unless
    /// `set_default_dtype` chose another).
    pub fn default_float() -> Logical {
        match DEFAULT_FLOAT.load(Ordering::Relaxed) {
            1 => Logical::Float64,
            2 => Logical::Float16,
            _ => Logical::Float32,
        }
    }

    /// Every logical dtype, in the order the module exports them.
    pub const ALL: [Logical; 9] = [
        Logical::Float32,
        Logical::Float16,
        Logical::BFloat16,
        Logical::Float64,
        Logical::Int32,
        Logical::Int64,
        Logical::UInt32,
        Logical::UInt8,
        Logical::Bool,
    ];

    /// The storage dtype.
    pub fn storage(self) -> DType {
        match self {
            Logical::Float32 => DType::F32,
            Logical::Float16 => DType::F16,
            Logical::BFloat16 => DType::BF16,
            Logical::Float64 => DType::F64,
            Logical::Int32 | Logical::Int64 => DType::I32,
            Logical::UInt32 => DType::U32,
            Logical::UInt8 => DType::U8,
            Logical::Bool => DType::Bool,
        }
    }

    /// The logical dtype of a storage dtype (I32 reads as `int64` unless `int32` is set).
    pub fn of(dtype: DType, int32: bool) -> Logical {
        match dtype {
            DType::F32 => Logical::Float32,
            DType::F16 => Logical::Float16,
            DType::BF16 => Logical::BFloat16,
            DType::F64 => Logical::Float64,
            DType::I32 if int32 => Logical::Int32,
            DType::I32 => Logical::Int64,
            DType::U32 => Logical::UInt32,
            DType::U8 => Logical::UInt8,
            DType::Bool => Logical::Bool,
        }
    }

    /// PyTorch's name (`float32`, `int64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Logical::Float32 => "float32",
            Logical::Float16 => "float16",
            Logical::BFloat16 => "bfloat16",
            Logical::Float64 => "float64",
            Logical::Int32 => "int32",
            Logical::Int64 => "int64",
            Logical::UInt32 => "uint32",
            Logical::UInt8 => "uint8",
            Logical::Bool => "bool",
        }
    }

    /// Bytes per element as PyTorch counts them (`int64`: 8).
    pub fn itemsize(self) -> usize {
        match self {
            Logical::Float64 | Logical::Int64 => 8,
            Logical::Float32 | Logical::Int32 | Logical::UInt32 => 4,
            Logical::Float16 | Logical::BFloat16 => 2,
            Logical::UInt8 | Logical::Bool => 1,
        }
    }

    /// The logical dtype named `name` (PyTorch's names and aliases).
    pub fn parse(name: &str) -> Option<Logical> {
        let name = name.strip_prefix("torch.").unwrap_or(name);
        let name = name.strip_prefix("anygrad.").unwrap_or(name);
        Some(match name {
            "float32" | "float" => Logical::Float32,
            "float16" | "half" => Logical::Float16,
            "bfloat16" => Logical::BFloat16,
            "float64" | "double" => Logical::Float64,
            "int32" | "int" => Logical::Int32,
            "int64" | "long" => Logical::Int64,
            "uint32" => Logical::UInt32,
            "uint8" => Logical::UInt8,
            "bool" => Logical::Bool,
            _ => return None,
        })
    }
}

/// A tensor's element type (`torch.dtype`): compare with `==` against `anygrad.float32` and
/// friends.
#[pyclass(frozen, eq, hash, name = "dtype", module = "anygrad")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    /// The logical dtype.
    pub logical: Logical,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("anygrad.{}", self.logical.name())
    }

    /// True for float16, bfloat16, float32 and float64.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.logical.storage().is_float()
    }

    /// True for the signed types (floats and signed integers).
    #[getter]
    fn is_signed(&self) -> bool {
        !matches!(
            self.logical,
            Logical::UInt8 | Logical::UInt32 | Logical::Bool
        )
    }

    /// Bytes per element as PyTorch counts them.
    #[getter]
    fn itemsize(&self) -> usize {
        self.logical.itemsize()
    }

    /// The name without the module (`float32`).
    #[getter]
    fn name(&self) -> &'static str {
        self.logical.name()
    }
}

/// The logical dtype that `value` (a `dtype`, a Python type `float`/`int`/`bool`, a numpy
/// dtype or type, or a name) stands for; `op` names the caller in the error.
pub fn logical_dtype(op: &str, value: &Bound<'_, PyAny>) -> PyResult<Logical> {
    if let Ok(dtype) = value.downcast::<PyDType>() {
        return Ok(dtype.get().logical);
    }
    if let Ok(text) = value.downcast::<PyString>() {
        let name = text.to_cow()?;
        return Logical::parse(&name)
            .ok_or_else(|| type_error(op, format!("unknown dtype {name:?}")));
    }
    if let Ok(kind) = value.downcast::<PyType>() {
        let name = kind.name()?.to_string();
        let logical = match name.as_str() {
            // PyTorch: float is float64, int is int64.
            "float" => Some(Logical::Float64),
            "int" => Some(Logical::Int64),
            "bool" => Some(Logical::Bool),
            other => Logical::parse(other),
        };
        if let Some(logical) = logical {
            return Ok(logical);
        }
    }
    // numpy dtypes (`np.float32`, `np.dtype("int64")`) carry their name.
    if let Ok(dtype) = value.getattr("dtype").and_then(|d| d.getattr("name")) {
        if let Ok(name) = dtype.extract::<String>() {
            if let Some(logical) = Logical::parse(&name) {
                return Ok(logical);
            }
        }
    }
    if let Ok(name) = value.getattr("name").and_then(|n| n.extract::<String>()) {
        if let Some(logical) = Logical::parse(&name) {
            return Ok(logical);
        }
    }
    Err(type_error(
        op,
        format!("dtype must be an anygrad dtype such as anygrad.float32, got {value}"),
    ))
}

/// [`logical_dtype`] for an optional argument (`None` stays `None`).
pub fn optional_dtype(op: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Logical>> {
    match value {
        Some(value) if !value.is_none() => Ok(Some(logical_dtype(op, value)?)),
        _ => Ok(None),
    }
}

/// The float dtype of creation functions given none (`torch.get_default_dtype`).
#[pyfunction]
pub fn get_default_dtype() -> PyDType {
    PyDType {
        logical: Logical::default_float(),
    }
}

/// Choose the float dtype of creation functions given none (`torch.set_default_dtype`):
/// float32, float64 (the CPU's; a GPU refuses float64 tensors) or float16.
#[pyfunction]
pub fn set_default_dtype(dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    let code = match logical_dtype("set_default_dtype", dtype)? {
        Logical::Float32 => 0,
        Logical::Float64 => 1,
        Logical::Float16 => 2,
        other => {
            return Err(type_error(
                "set_default_dtype",
                format!(
                    "only floating point dtypes are supported, got {}",
                    other.name()
                ),
            ))
        }
    };
    DEFAULT_FLOAT.store(code, Ordering::Relaxed);
    Ok(())
}

/// Register the dtype class and one object per dtype on the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyDType>()?;
    module.add_function(wrap_pyfunction!(get_default_dtype, module)?)?;
    module.add_function(wrap_pyfunction!(set_default_dtype, module)?)?;
    for logical in Logical::ALL {
        module.add(logical.name(), PyDType { logical })?;
    }
    Ok(())
}

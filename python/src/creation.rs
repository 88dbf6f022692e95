//! Creation functions (`anygrad.tensor`, `zeros`, `ones`, `full`, `arange`, `linspace`,
//! `randn`, `rand`, `randint`, `randperm`, `eye`, `empty`), tensors from raw bytes (what
//! `from_numpy` uses), joining (`cat`, `stack`) and the global seed.
//!
//! Defaults follow PyTorch: Python floats give float32, Python ints int64 (stored as I32:
//! a value outside its range is an error), bools bool.

use anygrad::{DType, Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PySequence, PyTuple};

use crate::device::{device_or_cpu, optional_device};
use crate::dtype::{optional_dtype, Logical};
use crate::errors::{run, type_error, value_error};
use crate::tensor::{shape_args, sizes, tensor_arg, PyTensor};

/// The kind of Python values found in nested data: the widest decides the default dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Bool,
    Int,
    Float,
}

/// Values and shape collected from nested sequences.
struct Collected {
    values: Vec<f64>,
    shape: Vec<usize>,
    kind: Kind,
    /// The dtype of tensors found inside the data, when all of them agree.
    tensor_kind: Option<Logical>,
}

/// Walk `data` (numbers, one-element tensors, nested lists/tuples) at `depth`.
fn collect(op: &str, data: &Bound<'_, PyAny>, depth: usize, out: &mut Collected) -> PyResult<()> {
    if depth > 64 {
        return Err(value_error(op, "data is nested more than 64 levels deep"));
    }
    if data.downcast::<PyBool>().is_ok() {
        out.values
            .push(if data.extract::<bool>()? { 1.0 } else { 0.0 });
        return scalar_at(op, depth, out, Kind::Bool);
    }
    if data.downcast::<PyInt>().is_ok() {
        let value: i64 = data
            .extract()
            .map_err(|_| value_error(op, format!("integer {data} does not fit in 64 bits")))?;
        out.values.push(value as f64);
        return scalar_at(op, depth, out, Kind::Int);
    }
    if data.downcast::<PyFloat>().is_ok() {
        out.values.push(data.extract::<f64>()?);
        return scalar_at(op, depth, out, Kind::Float);
    }
    if let Ok(tensor) = data.downcast::<PyTensor>() {
        let tensor = tensor.borrow();
        let values = tensor.values_f64(data.py())?;
        let logical = tensor.logical();
        let kind = if logical.storage().is_float() {
            Kind::Float
        } else if logical == Logical::Bool {
            Kind::Bool
        } else {
            Kind::Int
        };
        out.tensor_kind = Some(logical);
        if tensor.tensor.rank() == 0 {
            out.values.push(values[0]);
            return scalar_at(op, depth, out, kind);
        }
        // A tensor inside a list stands for its nested values.
        let list = tensor.tolist(data.py())?;
        return collect(op, list.bind(data.py()), depth, out);
    }
    if let Ok(sequence) = data.downcast::<PySequence>() {
        if data.is_instance_of::<pyo3::types::PyString>() {
            return Err(type_error(
                op,
                format!("cannot make a tensor from the string {data}"),
            ));
        }
        let length = sequence.len()?;
        if depth == out.shape.len() {
            if !out.values.is_empty() {
                return Err(value_error(op, "the nested lists have uneven depths"));
            }
            out.shape.push(length);
        } else if depth > out.shape.len() || out.shape[depth] != length {
            return Err(value_error(
                op,
                format!(
                    "expected a sequence of length {} at dim {depth} (got {length})",
                    out.shape.get(depth).copied().unwrap_or(0)
                ),
            ));
        }
        for item in sequence.try_iter()? {
            collect(op, &item?, depth + 1, out)?;
        }
        return Ok(());
    }
    // numpy scalars and other numbers.
    if let Ok(value) = data.extract::<i64>() {
        if !data.hasattr("is_integer")? || data.get_type().name()?.to_string().contains("int") {
            out.values.push(value as f64);
            return scalar_at(op, depth, out, Kind::Int);
        }
    }
    if let Ok(value) = data.extract::<f64>() {
        out.values.push(value);
        return scalar_at(op, depth, out, Kind::Float);
    }
    Err(type_error(
        op,
        format!(
            "could not make a tensor from an object of type {}",
            data.get_type().name()?
        ),
    ))
}

/// Record a scalar found at `depth`: it must be where the shape says numbers are.
fn scalar_at(op: &str, depth: usize, out: &mut Collected, kind: Kind) -> PyResult<()> {
    if depth != out.shape.len() {
        return Err(value_error(op, "the nested lists have uneven depths"));
    }
    out.kind = out.kind.max(kind);
    Ok(())
}

/// Build a tensor of `logical` from `values` on `device`.
pub fn from_values(
    op: &str,
    values: Vec<f64>,
    shape: &[usize],
    logical: Logical,
    device: &Device,
) -> PyResult<PyTensor> {
    let storage = logical.storage();
    if storage == DType::I32 {
        if let Some(bad) = values
            .iter()
            .find(|v| **v < i32::MIN as f64 || **v > i32::MAX as f64)
        {
            return Err(value_error(
                op,
                format!(
                    "value {bad} does not fit in anygrad's 32-bit integer storage of {} (range {} to {})",
                    logical.name(),
                    i32::MIN,
                    i32::MAX
                ),
            ));
        }
    }
    let tensor = run(op, || {
        let tensor = Tensor::from_vec(values, shape, &Device::Cpu)?;
        tensor.to_dtype(storage)?.to_device(device)
    })?;
    Ok(PyTensor::with_logical(tensor, logical))
}

/// `anygrad.tensor(data, dtype=, device=, requires_grad=)` for Python data.
pub fn tensor_from_data(
    _py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let mut collected = Collected {
        values: Vec::new(),
        shape: Vec::new(),
        kind: Kind::Bool,
        tensor_kind: None,
    };
    collect("tensor", data, 0, &mut collected)?;
    let logical = match optional_dtype("tensor", dtype)? {
        Some(logical) => logical,
        None => match (collected.tensor_kind, collected.kind) {
            (Some(logical), _)
                if collected.values.len() == 1
                    || collected.kind != Kind::Float
                    || logical.storage().is_float() =>
            {
                logical
            }
            (_, Kind::Float) => Logical::default_float(),
            (_, Kind::Int) => Logical::Int64,
            (_, Kind::Bool) if collected.values.is_empty() => Logical::default_float(),
            (_, Kind::Bool) => Logical::Bool,
        },
    };
    let device = device_or_cpu(device)?;
    let tensor = from_values(
        "tensor",
        collected.values,
        &collected.shape,
        logical,
        &device,
    )?;
    set_requires_grad("tensor", &tensor, requires_grad)?;
    Ok(tensor)
}

/// Mark `tensor` as requiring a gradient (only float tensors can).
pub fn set_requires_grad(op: &str, tensor: &PyTensor, requires_grad: bool) -> PyResult<()> {
    if requires_grad && !tensor.tensor.dtype().is_float() {
        return Err(crate::errors::runtime_error(
            op,
            format!(
                "only tensors of floating point dtype can require gradients, not {}",
                tensor.logical().name()
            ),
        ));
    }
    tensor.tensor.requires_grad_(requires_grad);
    Ok(())
}

/// A CPU tensor over a numpy array's own memory (`from_numpy`, as PyTorch's: no copy, writes
/// show both ways; the tensor keeps the array alive). The caller (`anygrad.from_numpy`) passes
/// only C-contiguous, aligned, writeable, little-endian arrays of `float32`, `float16`,
/// `float64`, `int32`, `uint8` or `uint32`; `dtype` is the numpy dtype's name.
#[pyfunction]
pub fn from_numpy_shared(
    array: &Bound<'_, PyAny>,
    dtype: &str,
    shape: Vec<usize>,
) -> PyResult<PyTensor> {
    const OP: &str = "from_numpy";
    let (core_dtype, logical) = match dtype {
        "float32" => (DType::F32, Logical::Float32),
        "float16" => (DType::F16, Logical::Float16),
        "float64" => (DType::F64, Logical::Float64),
        "int32" => (DType::I32, Logical::Int32),
        "uint8" => (DType::U8, Logical::UInt8),
        "uint32" => (DType::U32, Logical::UInt32),
        other => {
            return Err(type_error(
                OP,
                format!("numpy dtype {other} cannot share memory"),
            ))
        }
    };
    let interface = array.getattr("__array_interface__")?;
    let (address, read_only): (usize, bool) = interface.get_item("data")?.extract()?;
    let flags = array.getattr("flags")?;
    let contiguous: bool = flags.getattr("c_contiguous")?.extract()?;
    let aligned: bool = flags.getattr("aligned")?.extract()?;
    if read_only || !contiguous || !aligned {
        return Err(value_error(
            OP,
            "only a writeable, aligned, C-contiguous array can share memory",
        ));
    }
    let count: usize = shape.iter().product();
    let nbytes: usize = array.getattr("nbytes")?.extract()?;
    if nbytes != count * core_dtype.size_in_bytes() {
        return Err(value_error(
            OP,
            format!("{nbytes} bytes do not hold {count} elements of {dtype}"),
        ));
    }
    let owner: Py<PyAny> = array.clone().unbind();
    // SAFETY: numpy keeps the array's memory in place while the array lives (it refuses to
    // resize an array that another object references), the checks above make it aligned,
    // contiguous, writeable and `count` elements of `dtype` long, and the tensor holds the
    // array as the owner.
    let tensor = run(OP, || unsafe {
        Tensor::from_host_memory(address, core_dtype, &shape, Box::new(owner))
    })?;
    Ok(PyTensor::with_logical(tensor, logical))
}

/// A tensor from little-endian bytes in row-major order (`from_numpy`): `dtype` is a numpy
/// dtype name (`float32`, `float64`, `float16`, `int32`, `int64`, `uint8`, `bool`, ...).
#[pyfunction]
#[pyo3(signature = (data, dtype, shape, device=None))]
pub fn from_bytes(
    py: Python<'_>,
    data: &[u8],
    dtype: &str,
    shape: Vec<usize>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    const OP: &str = "from_numpy";
    let count: usize = shape.iter().product();
    let width = match dtype {
        "float64" | "int64" | "uint64" => 8,
        "float32" | "int32" | "uint32" => 4,
        "float16" | "int16" | "uint16" => 2,
        "uint8" | "int8" | "bool" => 1,
        other => {
            return Err(type_error(
                OP,
                format!("numpy dtype {other} is not supported"),
            ))
        }
    };
    if data.len() != count * width {
        return Err(value_error(
            OP,
            format!(
                "{} bytes do not hold {count} elements of {dtype}",
                data.len()
            ),
        ));
    }
    let device = device_or_cpu(device)?;
    let chunks = data.chunks_exact(width);
    let built: anygrad::Result<(Tensor, Logical)> = py.allow_threads(|| match dtype {
        "float32" => Ok((
            Tensor::from_vec(
                chunks
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<f32>>(),
                &shape,
                &Device::Cpu,
            )?,
            Logical::Float32,
        )),
        "float64" => Ok((
            Tensor::from_vec(
                chunks
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<f64>>(),
                &shape,
                &Device::Cpu,
            )?,
            Logical::Float64,
        )),
        "float16" => {
            let wide: Vec<f32> = chunks
                .map(|c| half_to_f32(u16::from_le_bytes(c.try_into().unwrap())))
                .collect();
            Ok((
                Tensor::from_vec(wide, &shape, &Device::Cpu)?.to_dtype(DType::F16)?,
                Logical::Float16,
            ))
        }
        "int32" => Ok((
            Tensor::from_vec(
                chunks
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<i32>>(),
                &shape,
                &Device::Cpu,
            )?,
            Logical::Int32,
        )),
        "uint32" => Ok((
            Tensor::from_vec(
                chunks
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<u32>>(),
                &shape,
                &Device::Cpu,
            )?,
            Logical::UInt32,
        )),
        "int64" | "uint64" => {
            let mut narrow = Vec::with_capacity(count);
            for c in chunks {
                let value = i64::from_le_bytes(c.try_into().unwrap());
                let fitted = i32::try_from(value).map_err(|_| {
                    anygrad::Error::invalid(
                        "from_numpy",
                        format!(
                            "int64 value {value} does not fit in anygrad's 32-bit integer storage"
                        ),
                    )
                })?;
                narrow.push(fitted);
            }
            Ok((
                Tensor::from_vec(narrow, &shape, &Device::Cpu)?,
                Logical::Int64,
            ))
        }
        "int16" | "uint16" | "int8" => {
            let wide: Vec<i32> = chunks
                .map(|c| match dtype {
                    "int16" => i16::from_le_bytes(c.try_into().unwrap()) as i32,
                    "uint16" => u16::from_le_bytes(c.try_into().unwrap()) as i32,
                    _ => c[0] as i8 as i32,
                })
                .collect();
            Ok((
                Tensor::from_vec(wide, &shape, &Device::Cpu)?,
                Logical::Int32,
            ))
        }
        "uint8" => Ok((
            Tensor::from_vec(data.to_vec(), &shape, &Device::Cpu)?,
            Logical::UInt8,
        )),
        _ => Ok((
            Tensor::from_vec(data.to_vec(), &shape, &Device::Cpu)?.to_dtype(DType::Bool)?,
            Logical::Bool,
        )),
    });
    let (tensor, logical) = crate::errors::run(OP, || built)?;
    let tensor = run(OP, || tensor.to_device(&device))?;
    Ok(PyTensor::with_logical(tensor, logical))
}

/// An IEEE half-precision bit pattern as f32.
fn half_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exponent = ((bits >> 10) & 0x1f) as i32;
    let mantissa = (bits & 0x3ff) as f32;
    match exponent {
        0 => sign * mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15),
    }
}

/// The dtype, device and shape arguments of a filled creation function.
fn filled(
    op: &str,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    default: Logical,
) -> PyResult<(Vec<usize>, Logical, Device)> {
    let shape = sizes(op, &shape_args(op, shape)?)?;
    let logical = optional_dtype(op, dtype)?.unwrap_or(default);
    Ok((shape, logical, device_or_cpu(device)?))
}

/// A non-negative count argument (`steps`, `n`), or the `RuntimeError` PyTorch raises.
fn count(op: &str, name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| {
        crate::errors::runtime_error(op, format!("{name} must be non-negative, got {value}"))
    })
}

/// A tensor of `value` everywhere.
fn full_of(
    op: &str,
    shape: &[usize],
    value: f64,
    logical: Logical,
    device: &Device,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let tensor = run(op, || Tensor::full(shape, value, logical.storage(), device))?;
    let tensor = PyTensor::with_logical(tensor, logical);
    set_requires_grad(op, &tensor, requires_grad)?;
    Ok(tensor)
}

/// Zeros of the given shape (`zeros(2, 3)` or `zeros((2, 3))`).
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, device=None, requires_grad=false))]
pub fn zeros(
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (shape, logical, device) = filled("zeros", shape, dtype, device, Logical::default_float())?;
    full_of("zeros", &shape, 0.0, logical, &device, requires_grad)
}

/// Ones of the given shape.
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, device=None, requires_grad=false))]
pub fn ones(
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (shape, logical, device) = filled("ones", shape, dtype, device, Logical::default_float())?;
    full_of("ones", &shape, 1.0, logical, &device, requires_grad)
}

/// Uninitialised memory in PyTorch; zeros here.
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, device=None, requires_grad=false))]
pub fn empty(
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (shape, logical, device) = filled("empty", shape, dtype, device, Logical::default_float())?;
    full_of("empty", &shape, 0.0, logical, &device, requires_grad)
}

/// `value` everywhere; the dtype follows the value (float32, int64 or bool) unless given.
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
pub fn full(
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "full";
    let shape: Vec<isize> = if let Ok(single) = size.extract::<isize>() {
        vec![single]
    } else {
        size.extract()
            .map_err(|_| type_error(OP, format!("size must be a sequence of ints, got {size}")))?
    };
    let shape = sizes(OP, &shape)?;
    let (value, default) = scalar_value(OP, fill_value)?;
    let logical = optional_dtype(OP, dtype)?.unwrap_or(default);
    full_of(
        OP,
        &shape,
        value,
        logical,
        &device_or_cpu(device)?,
        requires_grad,
    )
}

/// A Python number and the dtype PyTorch gives it (bool, int64 or float32).
pub fn scalar_value(op: &str, value: &Bound<'_, PyAny>) -> PyResult<(f64, Logical)> {
    if value.downcast::<PyBool>().is_ok() {
        return Ok((
            if value.extract::<bool>()? { 1.0 } else { 0.0 },
            Logical::Bool,
        ));
    }
    if value.downcast::<PyInt>().is_ok() {
        return Ok((value.extract::<i64>()? as f64, Logical::Int64));
    }
    if let Ok(tensor) = value.downcast::<PyTensor>() {
        let tensor = tensor.borrow();
        if tensor.tensor.numel() == 1 {
            return Ok((tensor.values_f64(value.py())?[0], tensor.logical()));
        }
    }
    value
        .extract::<f64>()
        .map(|v| (v, Logical::default_float()))
        .map_err(|_| type_error(op, format!("expected a number, got {value}")))
}

/// `arange(end)`, `arange(start, end)`, `arange(start, end, step)`: int64 when every bound
/// is an int, float32 otherwise.
#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, *, dtype=None, device=None, requires_grad=false))]
pub fn arange(
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "arange";
    let (first, first_kind) = scalar_value(OP, start)?;
    let mut all_int = first_kind == Logical::Int64;
    let (start, end) = match end {
        Some(end) if !end.is_none() => {
            let (end, kind) = scalar_value(OP, end)?;
            all_int &= kind == Logical::Int64;
            (first, end)
        }
        _ => (0.0, first),
    };
    let step = match step {
        Some(step) if !step.is_none() => {
            let (step, kind) = scalar_value(OP, step)?;
            all_int &= kind == Logical::Int64;
            step
        }
        _ => 1.0,
    };
    if step == 0.0 || !step.is_finite() {
        return Err(value_error(
            OP,
            format!("step must be nonzero and finite, got {step}"),
        ));
    }
    let default = if all_int {
        Logical::Int64
    } else {
        Logical::default_float()
    };
    let logical = optional_dtype(OP, dtype)?.unwrap_or(default);
    let device = device_or_cpu(device)?;
    let tensor = run(OP, || {
        Tensor::arange(start, end, step, DType::F64, &Device::Cpu)?
            .to_dtype(logical.storage())?
            .to_device(&device)
    })?;
    let tensor = PyTensor::with_logical(tensor, logical);
    set_requires_grad(OP, &tensor, requires_grad)?;
    Ok(tensor)
}

/// `steps` evenly spaced values from `start` to `end` inclusive.
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false))]
pub fn linspace(
    start: f64,
    end: f64,
    steps: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "linspace";
    let steps = count(OP, "steps", steps)?;
    let logical = optional_dtype(OP, dtype)?.unwrap_or(Logical::default_float());
    let device = device_or_cpu(device)?;
    let tensor = run(OP, || {
        Tensor::linspace(start, end, steps, DType::F64, &Device::Cpu)?
            .to_dtype(logical.storage())?
            .to_device(&device)
    })?;
    let tensor = PyTensor::with_logical(tensor, logical);
    set_requires_grad(OP, &tensor, requires_grad)?;
    Ok(tensor)
}

/// Standard normal samples.
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, device=None, requires_grad=false))]
pub fn randn(
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (shape, logical, device) = filled("randn", shape, dtype, device, Logical::default_float())?;
    float_only("randn", logical)?;
    let tensor = PyTensor::with_logical(
        run("randn", || {
            Tensor::randn(&shape, logical.storage(), &device)
        })?,
        logical,
    );
    set_requires_grad("randn", &tensor, requires_grad)?;
    Ok(tensor)
}

/// Uniform samples in [0, 1).
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, device=None, requires_grad=false))]
pub fn rand(
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (shape, logical, device) = filled("rand", shape, dtype, device, Logical::default_float())?;
    float_only("rand", logical)?;
    let tensor = PyTensor::with_logical(
        run("rand", || Tensor::rand(&shape, logical.storage(), &device))?,
        logical,
    );
    set_requires_grad("rand", &tensor, requires_grad)?;
    Ok(tensor)
}

/// An error unless `logical` is a float dtype.
fn float_only(op: &str, logical: Logical) -> PyResult<()> {
    if logical.storage().is_float() {
        Ok(())
    } else {
        Err(type_error(
            op,
            format!("needs a floating point dtype, got {}", logical.name()),
        ))
    }
}

/// Random integers in [low, high): `randint(high, size)` or `randint(low, high, size)`.
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
pub fn randint(
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "randint";
    let mut numbers = Vec::new();
    let mut shape = size
        .map(|s| s.extract::<Vec<isize>>())
        .transpose()
        .map_err(|_| type_error(OP, "size must be a tuple of ints"))?;
    for arg in args.iter() {
        if let Ok(number) = arg.extract::<i64>() {
            numbers.push(number);
        } else if shape.is_none() {
            shape =
                Some(arg.extract::<Vec<isize>>().map_err(|_| {
                    type_error(OP, format!("size must be a tuple of ints, got {arg}"))
                })?);
        } else {
            return Err(type_error(OP, format!("unexpected argument {arg}")));
        }
    }
    let (low, high) = match numbers.as_slice() {
        [high] => (0, *high),
        [low, high] => (*low, *high),
        _ => {
            return Err(type_error(
                OP,
                "expected randint(high, size) or randint(low, high, size)",
            ))
        }
    };
    let shape = sizes(
        OP,
        &shape.ok_or_else(|| type_error(OP, "missing the size argument"))?,
    )?;
    let logical = optional_dtype(OP, dtype)?.unwrap_or(Logical::Int64);
    let device = device_or_cpu(device)?;
    let tensor = run(OP, || {
        Tensor::randint(low, high, &shape, &device)?.to_dtype(logical.storage())
    })?;
    let tensor = PyTensor::with_logical(tensor, logical);
    set_requires_grad(OP, &tensor, requires_grad)?;
    Ok(tensor)
}

/// A random permutation of 0..n (int64).
#[pyfunction]
#[pyo3(signature = (n, *, dtype=None, device=None))]
pub fn randperm(
    n: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let n = count("randperm", "n", n)?;
    let logical = optional_dtype("randperm", dtype)?.unwrap_or(Logical::Int64);
    let device = device_or_cpu(device)?;
    let tensor = run("randperm", || {
        Tensor::randperm(n, &device)?.to_dtype(logical.storage())
    })?;
    Ok(PyTensor::with_logical(tensor, logical))
}

/// The n×m identity matrix.
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
pub fn eye(
    n: i64,
    m: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let n = count("eye", "n", n)?;
    let m = m.map(|m| count("eye", "m", m)).transpose()?;
    let logical = optional_dtype("eye", dtype)?.unwrap_or(Logical::default_float());
    let device = device_or_cpu(device)?;
    let m = m.unwrap_or(n);
    let tensor = run("eye", || {
        let square = Tensor::eye(n.max(m), logical.storage(), &device)?;
        square.narrow(0, 0, n)?.narrow(1, 0, m)?.contiguous()
    })?;
    let tensor = PyTensor::with_logical(tensor, logical);
    set_requires_grad("eye", &tensor, requires_grad)?;
    Ok(tensor)
}

/// `value` everywhere, shaped like `other` (`zeros_like`, `ones_like`, `full_like`).
#[pyfunction]
#[pyo3(signature = (other, fill_value, *, dtype=None, device=None, requires_grad=false))]
pub fn full_like(
    other: &Bound<'_, PyAny>,
    fill_value: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let other = tensor_arg("full_like", "input", other)?;
    let logical = optional_dtype("full_like", dtype)?.unwrap_or(other.logical());
    let device = match optional_device(device)? {
        Some(device) => device.open()?,
        None => other.tensor.device().clone(),
    };
    full_of(
        "full_like",
        other.tensor.shape(),
        fill_value,
        logical,
        &device,
        requires_grad,
    )
}

/// Samples shaped like `other`: `kind` is `"rand"` or `"randn"`.
#[pyfunction]
#[pyo3(signature = (other, kind, *, dtype=None, device=None))]
pub fn random_like(
    other: &Bound<'_, PyAny>,
    kind: &str,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let other = tensor_arg(kind, "input", other)?;
    let logical = optional_dtype(kind, dtype)?.unwrap_or(other.logical());
    float_only(kind, logical)?;
    let device = match optional_device(device)? {
        Some(device) => device.open()?,
        None => other.tensor.device().clone(),
    };
    let shape = other.tensor.shape().to_vec();
    let tensor = run(kind, || match kind {
        "rand" => Tensor::rand(&shape, logical.storage(), &device),
        _ => Tensor::randn(&shape, logical.storage(), &device),
    })?;
    Ok(PyTensor::with_logical(tensor, logical))
}

/// The tensors of a list argument.
pub(crate) fn tensor_list(op: &str, tensors: &Bound<'_, PyAny>) -> PyResult<Vec<PyTensor>> {
    let mut out = Vec::new();
    for item in tensors
        .try_iter()
        .map_err(|_| type_error(op, "expected a sequence of tensors"))?
    {
        out.push(tensor_arg(op, "tensors", &item?)?);
    }
    if out.is_empty() {
        return Err(value_error(op, "expected a non-empty sequence of tensors"));
    }
    Ok(out)
}

/// Join tensors along an existing dim (`torch.cat`).
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
pub fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: isize) -> PyResult<PyTensor> {
    let list = tensor_list("cat", tensors)?;
    let _ = py;
    let handles: Vec<&Tensor> = list.iter().map(|t| &t.tensor).collect();
    let joined = run("cat", || Tensor::cat(&handles, dim))?;
    Ok(list[0].derived(joined))
}

/// Join tensors along a new dim (`torch.stack`).
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
pub fn stack(tensors: &Bound<'_, PyAny>, dim: isize) -> PyResult<PyTensor> {
    let list = tensor_list("stack", tensors)?;
    let handles: Vec<&Tensor> = list.iter().map(|t| &t.tensor).collect();
    let joined = run("stack", || Tensor::stack(&handles, dim))?;
    Ok(list[0].derived(joined))
}

/// Seed the global random number generator (`torch.manual_seed`).
#[pyfunction]
pub fn manual_seed(seed: u64) {
    anygrad::manual_seed(seed);
}

/// The global generator's `(seed, counter)`: every random tensor is a function of the seed
/// and the counter of its first element (`torch.get_rng_state`'s content).
#[pyfunction]
pub fn generator_state() -> (u64, u64) {
    anygrad::random::generator_state()
}

/// Restore a state from [`generator_state`] (`torch.set_rng_state`, and draws made with a
/// `torch.Generator` of the package's own).
#[pyfunction]
pub fn set_generator_state(seed: u64, counter: u64) {
    anygrad::random::set_generator_state(seed, counter);
}

/// Register the creation functions on the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(from_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(from_numpy_shared, module)?)?;
    module.add_function(wrap_pyfunction!(zeros, module)?)?;
    module.add_function(wrap_pyfunction!(ones, module)?)?;
    module.add_function(wrap_pyfunction!(empty, module)?)?;
    module.add_function(wrap_pyfunction!(full, module)?)?;
    module.add_function(wrap_pyfunction!(arange, module)?)?;
    module.add_function(wrap_pyfunction!(linspace, module)?)?;
    module.add_function(wrap_pyfunction!(randn, module)?)?;
    module.add_function(wrap_pyfunction!(rand, module)?)?;
    module.add_function(wrap_pyfunction!(randint, module)?)?;
    module.add_function(wrap_pyfunction!(randperm, module)?)?;
    module.add_function(wrap_pyfunction!(eye, module)?)?;
    module.add_function(wrap_pyfunction!(full_like, module)?)?;
    module.add_function(wrap_pyfunction!(random_like, module)?)?;
    module.add_function(wrap_pyfunction!(cat, module)?)?;
    module.add_function(wrap_pyfunction!(stack, module)?)?;
    module.add_function(wrap_pyfunction!(manual_seed, module)?)?;
    module.add_function(wrap_pyfunction!(generator_state, module)?)?;
    module.add_function(wrap_pyfunction!(set_generator_state, module)?)?;
    let _ = PyList::empty(module.py());
    Ok(())
}

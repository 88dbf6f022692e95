//! `anygrad.Tensor`: the Python handle of a library [`Tensor`], its properties (`shape`,
//! `dtype`, `device`, `grad`, `data`, ...), readback (`item`, `tolist`, the raw bytes behind
//! `numpy()`), conversions (`to`, `cpu`, `float`, `long`, ...) and the Python protocols that
//! are not arithmetic (`len`, `iter`, `bool`, `float`, `int`, `hash`, `repr`).
//!
//! Arithmetic lives in `operators.rs`, indexing in `indexing.rs`, views in `views.rs`,
//! reductions in `reductions.rs`, other math in `math.rs` and autograd in `autograd.rs`: each
//! adds its own `#[pymethods]` block to this class.

use anygrad::{DType, Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::device::{optional_device, PyDevice};
use crate::dtype::{logical_dtype, Logical, PyDType};
use crate::errors::{index_error, run, runtime_error, type_error, value_error};
use crate::host_array::HostArray;

/// A multi-dimensional array on the CPU or a GPU, with autograd (`torch.Tensor`).
#[pyclass(subclass, weakref, name = "Tensor", module = "anygrad")]
#[derive(Clone)]
pub struct PyTensor {
    /// The library tensor.
    pub tensor: Tensor,
    /// For I32 storage: report `int32` instead of `int64` (set where the user asked for it).
    pub int32: bool,
}

impl PyTensor {
    /// Wrap a library tensor (I32 storage reads as `int64`).
    pub fn wrap(tensor: Tensor) -> PyTensor {
        PyTensor {
            tensor,
            int32: false,
        }
    }

    /// Wrap `tensor`, computed from this one: it keeps this tensor's `int32` marking when
    /// it is still I32.
    pub fn derived(&self, tensor: Tensor) -> PyTensor {
        let int32 = self.int32 && tensor.dtype() == DType::I32;
        PyTensor { tensor, int32 }
    }

    /// Wrap `tensor` as the logical dtype `logical`.
    pub fn with_logical(tensor: Tensor, logical: Logical) -> PyTensor {
        PyTensor {
            tensor,
            int32: logical == Logical::Int32,
        }
    }

    /// The logical dtype.
    pub fn logical(&self) -> Logical {
        Logical::of(self.tensor.dtype(), self.int32)
    }

    /// Convert to `logical` (a no-op when it already is), on the same device.
    pub fn cast(&self, logical: Logical) -> PyResult<PyTensor> {
        let converted = run("to", || self.tensor.to_dtype(logical.storage()))?;
        Ok(PyTensor::with_logical(converted, logical))
    }

    /// The values as `f64`, read back from the device with the GIL released.
    pub fn values_f64(&self, py: Python<'_>) -> PyResult<Vec<f64>> {
        let tensor = self.tensor.clone();
        py.allow_threads(move || run("tolist", || tensor.to_vec_f64()))
    }

    /// Move to `device` with the GIL released.
    pub fn moved(&self, py: Python<'_>, device: &Device) -> PyResult<PyTensor> {
        let tensor = self.tensor.clone();
        let device = device.clone();
        let moved = py.allow_threads(move || run("to", || tensor.to_device(&device)))?;
        Ok(self.derived(moved))
    }

    /// One Python number for element `value` of this tensor's dtype.
    fn python_number(&self, py: Python<'_>, value: f64) -> PyResult<PyObject> {
        Ok(match self.tensor.dtype() {
            DType::Bool => (value != 0.0)
                .into_pyobject(py)?
                .to_owned()
                .into_any()
                .unbind(),
            DType::I32 | DType::U32 | DType::U8 => {
                (value as i64).into_pyobject(py)?.into_any().unbind()
            }
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                value.into_pyobject(py)?.into_any().unbind()
            }
        })
    }
}

/// Extract a tensor argument (a `Tensor` or a subclass such as `Parameter`).
pub fn tensor_arg(op: &str, name: &str, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    match value.downcast::<PyTensor>() {
        Ok(tensor) => Ok(tensor.borrow().clone()),
        Err(_) => Err(type_error(
            op,
            format!(
                "argument '{name}' must be a Tensor, not {}",
                value.get_type().name()?
            ),
        )),
    }
}

/// An optional tensor argument (`None` stays `None`).
pub fn optional_tensor_arg(
    op: &str,
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<PyTensor>> {
    match value {
        Some(value) if !value.is_none() => Ok(Some(tensor_arg(op, name, value)?)),
        _ => Ok(None),
    }
}

/// A shape given as separate ints (`view(2, 3)`) or one sequence (`view((2, 3))`), with
/// `-1` allowed.
pub fn shape_args(op: &str, args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if first.extract::<isize>().is_err() {
            return first.extract::<Vec<isize>>().map_err(|_| {
                type_error(
                    op,
                    format!("the shape must be ints or a sequence of ints, got {first}"),
                )
            });
        }
    }
    args.iter()
        .map(|item| {
            item.extract::<isize>()
                .map_err(|_| type_error(op, format!("the shape must be ints, got {item}")))
        })
        .collect()
}

/// A shape of sizes only (creation functions): `-1` or any negative size is an error.
pub fn sizes(op: &str, shape: &[isize]) -> PyResult<Vec<usize>> {
    shape
        .iter()
        .map(|&size| {
            usize::try_from(size).map_err(|_| {
                runtime_error(op, format!("negative dimension {size} in shape {shape:?}"))
            })
        })
        .collect()
}

/// Dims given as `None` (every dim), one int or a sequence of ints.
pub fn dims_arg(op: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match value {
        None => Ok(None),
        Some(value) if value.is_none() => Ok(None),
        Some(value) => {
            if let Ok(dim) = value.extract::<isize>() {
                return Ok(Some(vec![dim]));
            }
            value.extract::<Vec<isize>>().map(Some).map_err(|_| {
                type_error(
                    op,
                    format!("dim must be an int or a tuple of ints, got {value}"),
                )
            })
        }
    }
}

/// `anygrad.Size` (PyTorch's `torch.Size`, a tuple subclass), looked up once.
static SIZE_TYPE: pyo3::sync::GILOnceCell<Py<pyo3::types::PyType>> = pyo3::sync::GILOnceCell::new();

/// `shape` as an `anygrad.Size`.
fn size_of<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let kind = SIZE_TYPE.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("anygrad")?
            .getattr("Size")?
            .downcast_into::<pyo3::types::PyType>()?
            .unbind())
    })?;
    kind.bind(py).call1((PyTuple::new(py, shape)?,))
}

/// Build nested Python lists of `values` with `shape`.
fn nested_list(
    py: Python<'_>,
    tensor: &PyTensor,
    values: &[f64],
    shape: &[usize],
) -> PyResult<PyObject> {
    if shape.is_empty() {
        return tensor.python_number(py, values[0]);
    }
    let rows = shape[0];
    let stride: usize = shape[1..].iter().product();
    let mut items = Vec::with_capacity(rows);
    for row in 0..rows {
        items.push(nested_list(
            py,
            tensor,
            &values[row * stride..(row + 1) * stride],
            &shape[1..],
        )?);
    }
    Ok(PyList::new(py, items)?.into_any().unbind())
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data)`: a tensor from a list, a number or another tensor (as
    /// `anygrad.tensor(data)`); what `nn.Parameter` builds on.
    #[new]
    #[pyo3(signature = (data=None, *, dtype=None, device=None, requires_grad=false))]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        let empty;
        let data = match data {
            Some(data) if !data.is_none() => data,
            _ => {
                empty = PyList::empty(py).into_any();
                &empty
            }
        };
        if let Ok(tensor) = data.downcast::<PyTensor>() {
            let tensor = tensor.borrow().clone();
            let detached = tensor.derived(tensor.tensor.detach());
            let detached = match crate::dtype::optional_dtype("Tensor", dtype)? {
                Some(logical) => detached.cast(logical)?,
                None => detached,
            };
            let detached = match optional_device(device)? {
                Some(device) => detached.moved(py, &device.open()?)?,
                None => detached,
            };
            detached.tensor.requires_grad_(requires_grad);
            return Ok(detached);
        }
        crate::creation::tensor_from_data(py, data, dtype, device, requires_grad)
    }

    /// The sizes of the dims, as an `anygrad.Size` (a tuple).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_of(py, self.tensor.shape())
    }

    /// The sizes of the dims (`size()`), or one dim's size (`size(dim)`).
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<PyObject> {
        match dim {
            None => Ok(size_of(py, self.tensor.shape())?.unbind()),
            Some(dim) => {
                let size = run("size", || self.tensor.dim(dim))?;
                Ok(size.into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    /// The number of dims.
    fn dim(&self) -> usize {
        self.tensor.rank()
    }

    /// The step in elements between neighbours along each dim (`stride()`), or along `dim`.
    #[pyo3(signature = (dim=None))]
    fn stride(&self, py: Python<'_>, dim: Option<isize>) -> PyResult<PyObject> {
        let strides = &self.tensor.layout().strides;
        match dim {
            None => Ok(PyTuple::new(py, strides)?.into_any().unbind()),
            Some(dim) => {
                let rank = strides.len() as isize;
                let resolved = if dim < 0 { dim + rank } else { dim };
                if resolved < 0 || resolved >= rank {
                    return Err(index_error(
                        "stride",
                        format!("dimension {dim} is out of range for a tensor of {rank} dims"),
                    ));
                }
                Ok(strides[resolved as usize]
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            }
        }
    }

    /// Where the view starts in its storage, in elements.
    fn storage_offset(&self) -> usize {
        self.tensor.layout().offset
    }

    /// The number of dims (`ndim`).
    #[getter]
    fn ndim(&self) -> usize {
        self.tensor.rank()
    }

    /// The number of dims (`ndimension()`).
    fn ndimension(&self) -> usize {
        self.tensor.rank()
    }

    /// The number of elements.
    fn numel(&self) -> usize {
        self.tensor.numel()
    }

    /// The number of elements (`nelement()`).
    fn nelement(&self) -> usize {
        self.tensor.numel()
    }

    /// Bytes per element as PyTorch counts them.
    fn element_size(&self) -> usize {
        self.logical().itemsize()
    }

    /// The element type.
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType {
            logical: self.logical(),
        }
    }

    /// The device the tensor lives on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice::of(self.tensor.device())
    }

    /// True on a GPU (the name PyTorch scripts test).
    #[getter]
    fn is_cuda(&self) -> bool {
        self.tensor.device().is_gpu()
    }

    /// True on a GPU.
    #[getter]
    fn is_gpu(&self) -> bool {
        self.tensor.device().is_gpu()
    }

    /// True on the CPU.
    #[getter]
    fn is_cpu(&self) -> bool {
        self.tensor.device().is_cpu()
    }

    /// Whether the elements are floats.
    fn is_floating_point(&self) -> bool {
        self.tensor.dtype().is_float()
    }

    /// Whether the elements lie densely in row-major order.
    fn is_contiguous(&self) -> bool {
        self.tensor.is_contiguous()
    }

    /// Methods written in Python (`anygrad._tensor_methods`), found when the class has no
    /// attribute of that name: they are bound to this tensor. Of the dunder names, only the
    /// DLPack protocol's (which its consumers look up as attributes) are among them.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyObject> {
        let py = slf.py();
        if !name.starts_with("__") || matches!(name, "__dlpack__" | "__dlpack_device__") {
            let methods = py.import("anygrad._tensor_methods")?;
            if let Ok(function) = methods.getattr(name) {
                return Ok(py
                    .import("types")?
                    .getattr("MethodType")?
                    .call1((function, slf))?
                    .unbind());
            }
        }
        Err(pyo3::exceptions::PyAttributeError::new_err(format!(
            "'Tensor' object has no attribute '{name}'"
        )))
    }

    /// The one element as a Python number.
    fn item(&self, py: Python<'_>) -> PyResult<PyObject> {
        if self.tensor.numel() != 1 {
            return Err(runtime_error(
                "item",
                format!(
                    "a Tensor with {} elements cannot be converted to a Python scalar",
                    self.tensor.numel()
                ),
            ));
        }
        let values = self.values_f64(py)?;
        self.python_number(py, values[0])
    }

    /// The values as nested Python lists (a number for a zero-dim tensor).
    pub fn tolist(&self, py: Python<'_>) -> PyResult<PyObject> {
        let values = self.values_f64(py)?;
        nested_list(py, self, &values, self.tensor.shape())
    }

    /// The tensor's CPU memory for numpy to share (`numpy()`), or `None` where numpy gets a
    /// copy (see `HostArray::of`).
    fn _host_array(&self) -> Option<HostArray> {
        let reports_stored_dtype = self.tensor.dtype() != DType::I32 || self.int32;
        HostArray::of(&self.tensor, reports_stored_dtype)
    }

    /// The raw values for numpy: `(bytes, numpy dtype name, shape)`, little-endian, in
    /// row-major order; float16 travels as float32 and bool as uint8.
    fn _raw<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyBytes>, &'static str, Vec<usize>)> {
        let tensor = self.tensor.clone();
        let (bytes, name) = py.allow_threads(move || {
            run("numpy", || {
                Ok(match tensor.dtype() {
                    // As PyTorch: numpy has no bfloat16.
                    DType::BF16 => {
                        return Err(anygrad::Error::Unsupported {
                            op: "numpy",
                            dtype: DType::BF16,
                            device: tensor.device().to_string(),
                            hint: ": Got unsupported ScalarType BFloat16 (convert with \
                                   .float() first)"
                                .into(),
                        })
                    }
                    DType::F32 | DType::F16 => (
                        to_bytes(
                            tensor.to_dtype(DType::F32)?.to_vec::<f32>()?,
                            f32::to_le_bytes,
                        ),
                        "float32",
                    ),
                    DType::F64 => (
                        to_bytes(tensor.to_vec::<f64>()?, f64::to_le_bytes),
                        "float64",
                    ),
                    DType::I32 => (to_bytes(tensor.to_vec::<i32>()?, i32::to_le_bytes), "int32"),
                    DType::U32 => (
                        to_bytes(tensor.to_vec::<u32>()?, u32::to_le_bytes),
                        "uint32",
                    ),
                    DType::U8 => (tensor.to_vec::<u8>()?, "uint8"),
                    DType::Bool => (tensor.to_dtype(DType::U8)?.to_vec::<u8>()?, "bool"),
                })
            })
        })?;
        Ok((PyBytes::new(py, &bytes), name, self.tensor.shape().to_vec()))
    }

    /// A copy on `device` and/or as `dtype`: `to("cuda")`, `to(anygrad.float16)`,
    /// `to(device, dtype)`, `to(other_tensor)`, `to(device=..., dtype=...)`.
    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false))]
    fn to(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        copy: bool,
    ) -> PyResult<PyTensor> {
        let _ = non_blocking;
        let mut target_dtype = crate::dtype::optional_dtype("to", dtype)?;
        let mut target_device = optional_device(device)?;
        for arg in args.iter() {
            if arg.is_none() {
                continue;
            }
            if let Ok(other) = arg.downcast::<PyTensor>() {
                let other = other.borrow();
                target_dtype = Some(other.logical());
                target_device = Some(PyDevice::of(other.tensor.device()));
            } else if arg.downcast::<PyDType>().is_ok()
                || arg.downcast::<pyo3::types::PyType>().is_ok()
            {
                target_dtype = Some(logical_dtype("to", &arg)?);
            } else if let Ok(device) = PyDevice::new(&arg, None) {
                target_device = Some(device);
            } else if let Ok(text) = arg.extract::<String>() {
                match Logical::parse(&text) {
                    Some(logical) => target_dtype = Some(logical),
                    None => target_device = Some(PyDevice::parse(&text)?),
                }
            } else {
                target_dtype = Some(logical_dtype("to", &arg).map_err(|_| {
                    type_error("to", format!("expected a device or a dtype, got {arg}"))
                })?);
            }
        }
        let mut result = self.clone();
        // Onto a GPU, convert first (a float64 tensor becomes float32 on the CPU, where
        // float64 lives); elsewhere, move first.
        let cast_first = target_device.as_ref().is_some_and(|d| d.is_gpu());
        if cast_first {
            if let Some(logical) = target_dtype {
                result = result.cast(logical)?;
            }
        }
        if let Some(device) = target_device {
            let device = device.open()?;
            result = result.moved(py, &device)?;
        }
        if !cast_first {
            if let Some(logical) = target_dtype {
                result = result.cast(logical)?;
            }
        }
        if copy && result.tensor.same_storage(&self.tensor) {
            let copied = run("to", || result.tensor.copy())?;
            result = result.derived(copied);
        }
        Ok(result)
    }

    /// A copy on the CPU (itself when already there).
    fn cpu(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.moved(py, &Device::Cpu)
    }

    /// A copy on GPU `device` (0 by default): PyTorch's `.cuda()`.
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(
        &self,
        py: Python<'_>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<PyTensor> {
        let _ = non_blocking;
        let target = match optional_device(device)? {
            Some(device) if device.is_gpu() => device,
            Some(device) => {
                return Err(value_error(
                    "cuda",
                    format!("{} is not a GPU", device.__str__()),
                ))
            }
            None => PyDevice::parse("gpu:0")?,
        };
        self.moved(py, &target.open()?)
    }

    /// As float32.
    fn float(&self) -> PyResult<PyTensor> {
        self.cast(Logical::Float32)
    }

    /// As float64.
    fn double(&self) -> PyResult<PyTensor> {
        self.cast(Logical::Float64)
    }

    /// As float16.
    fn half(&self) -> PyResult<PyTensor> {
        self.cast(Logical::Float16)
    }

    /// As bfloat16.
    fn bfloat16(&self) -> PyResult<PyTensor> {
        self.cast(Logical::BFloat16)
    }

    /// As int64.
    fn long(&self) -> PyResult<PyTensor> {
        self.cast(Logical::Int64)
    }

    /// As int32.
    fn int(&self) -> PyResult<PyTensor> {
        self.cast(Logical::Int32)
    }

    /// As bool.
    fn bool(&self) -> PyResult<PyTensor> {
        self.cast(Logical::Bool)
    }

    /// As uint8.
    fn byte(&self) -> PyResult<PyTensor> {
        self.cast(Logical::UInt8)
    }

    /// As `other`'s dtype.
    fn type_as(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let other = tensor_arg("type_as", "other", other)?;
        self.cast(other.logical())
    }

    /// With `dtype=`: a copy as that dtype; without: the type's name (`torch.FloatTensor`).
    #[pyo3(signature = (dtype=None))]
    fn r#type(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyObject> {
        match crate::dtype::optional_dtype("type", dtype)? {
            Some(logical) => Ok(self.cast(logical)?.into_pyobject(py)?.into_any().unbind()),
            None => {
                let name = match self.logical() {
                    Logical::Float32 => "FloatTensor",
                    Logical::Float16 => "HalfTensor",
                    Logical::BFloat16 => "BFloat16Tensor",
                    Logical::Float64 => "DoubleTensor",
                    Logical::Int32 => "IntTensor",
                    Logical::Int64 => "LongTensor",
                    Logical::UInt32 => "UInt32Tensor",
                    Logical::UInt8 => "ByteTensor",
                    Logical::Bool => "BoolTensor",
                };
                Ok(format!("anygrad.{name}")
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            }
        }
    }

    /// A copy that owns new storage (differentiable).
    #[pyo3(name = "clone")]
    fn clone_tensor(&self) -> PyResult<PyTensor> {
        let copied = run("clone", || self.tensor.copy())?;
        Ok(self.derived(copied))
    }

    /// Whether two handles share storage.
    fn _same_storage(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let other = tensor_arg("_same_storage", "other", other)?;
        Ok(self.tensor.same_storage(&other.tensor))
    }

    /// The first dim's size.
    fn __len__(&self) -> PyResult<usize> {
        self.tensor
            .shape()
            .first()
            .copied()
            .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("len() of a 0-d tensor"))
    }

    /// Iterate over the first dim (rows as tensors).
    fn __iter__<'py>(slf: PyRef<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if slf.tensor.rank() == 0 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "iteration over a 0-d tensor",
            ));
        }
        let rows = slf.tensor.shape()[0];
        let mut items = Vec::with_capacity(rows);
        for row in 0..rows {
            let view = run("__iter__", || slf.tensor.narrow(0, row, 1)?.squeeze(0))?;
            items.push(slf.derived(view));
        }
        PyList::new(py, items)?
            .into_any()
            .try_iter()
            .map(|it| it.into_any())
    }

    /// The truth of a one-element tensor.
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        if self.tensor.numel() != 1 {
            return Err(runtime_error(
                "bool",
                format!(
                    "Boolean value of Tensor with {} values is ambiguous",
                    self.tensor.numel()
                ),
            ));
        }
        Ok(self.values_f64(py)?[0] != 0.0)
    }

    /// The value of a one-element tensor as a float.
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        if self.tensor.numel() != 1 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "only one-element tensors can be converted to Python scalars",
            ));
        }
        Ok(self.values_f64(py)?[0])
    }

    /// The value of a one-element tensor as an int (truncated).
    fn __int__(&self, py: Python<'_>) -> PyResult<i64> {
        if self.tensor.numel() != 1 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "only one-element tensors can be converted to Python scalars",
            ));
        }
        Ok(self.values_f64(py)?[0] as i64)
    }

    /// The value of a one-element integer tensor (so it can index a list).
    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        if self.tensor.dtype().is_float() || self.tensor.numel() != 1 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(self.values_f64(py)?[0] as i64)
    }

    /// Tensors hash by identity, as in PyTorch.
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        py.import("anygrad._format")?
            .getattr("tensor_repr")?
            .call1((slf,))?
            .extract()
    }

    fn __format__(slf: &Bound<'_, Self>, spec: &str) -> PyResult<String> {
        let tensor = slf.borrow();
        if tensor.tensor.numel() == 1 && tensor.tensor.rank() == 0 && !spec.is_empty() {
            let value = tensor.item(slf.py())?;
            return value
                .bind(slf.py())
                .call_method1("__format__", (spec,))?
                .extract();
        }
        drop(tensor);
        PyTensor::__repr__(slf)
    }

    /// The values as a numpy array (`numpy.asarray(tensor)`).
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy;
        slf.py()
            .import("anygrad._tensor_methods")?
            .getattr("array_of")?
            .call1((slf, dtype))
    }

    /// Keep the tensor when pickled or deep-copied: its values, dtype and device.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("anygrad._format")?
            .getattr("tensor_reduce")?
            .call1((slf,))
    }
}

/// Little-endian bytes of `values`.
fn to_bytes<T: Copy, const N: usize>(values: Vec<T>, encode: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * N);
    for value in values {
        bytes.extend_from_slice(&encode(value));
    }
    bytes
}

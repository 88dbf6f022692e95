//! `anygrad.onnx`'s native part: an ONNX model loaded by `anygrad-onnx` onto a device, run on
//! tensors, with its float initializers as trainable tensors (the same tensors the model
//! computes with, so an optimizer stepping them changes the model) and saved as safetensors.

use std::path::PathBuf;

use anygrad::{Device, Tensor};
use anygrad_onnx::{Int64Tensor, OnnxError, OnnxModel, Value};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::IntoPyObjectExt;

use crate::device::device_or_cpu;
use crate::dtype::Logical;
use crate::errors::{run, value_error};
use crate::tensor::PyTensor;

/// ONNX's element type code for int32 (its outputs read back as `int32`, not `int64`).
const ONNX_INT32: i32 = 6;

/// The Python exception of an ONNX error: files that cannot be read are `OSError`, every
/// other problem (malformed file, bad input, unsupported operator) `ValueError`.
fn onnx_error(op: &str, error: OnnxError) -> PyErr {
    match error {
        OnnxError::Io { .. } => PyOSError::new_err(format!("{op}: {error}")),
        other => PyValueError::new_err(format!("{op}: {other}")),
    }
}

/// A loaded ONNX model.
#[pyclass(name = "OnnxModel", module = "anygrad._native")]
pub struct PyOnnxModel {
    model: OnnxModel,
}

#[pymethods]
impl PyOnnxModel {
    /// Load `path` (external data files beside it) onto `device` (the CPU by default).
    #[new]
    #[pyo3(signature = (path, device=None))]
    fn new(py: Python<'_>, path: PathBuf, device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let device = device_or_cpu(device)?;
        let model = py
            .allow_threads(|| OnnxModel::load(&path, &device))
            .map_err(|error| onnx_error("onnx.load", error))?;
        Ok(PyOnnxModel { model })
    }

    /// The graph inputs: `(name, element type, shape)` with symbolic dims as strings and
    /// unknown ones as None.
    fn inputs(&self, py: Python<'_>) -> PyResult<PyObject> {
        declarations(py, self.model.inputs())
    }

    /// The graph outputs, as `inputs()` gives them.
    fn outputs(&self, py: Python<'_>) -> PyResult<PyObject> {
        declarations(py, self.model.outputs())
    }

    /// `(op_type, node name)` of every node whose operator is not supported.
    fn unsupported_nodes(&self) -> Vec<(String, String)> {
        self.model.unsupported_nodes()
    }

    /// The float initializers as `(name, tensor)` pairs, each requiring grad.
    fn parameters(&self) -> Vec<(String, PyTensor)> {
        self.model
            .parameters()
            .into_iter()
            .map(|(name, tensor)| {
                let logical = Logical::of(tensor.dtype(), false);
                (name, PyTensor::with_logical(tensor, logical))
            })
            .collect()
    }

    /// Run on `(name, tensor)` pairs; the outputs as `(name, tensor)` pairs in declared
    /// order. int64 tensors go in as exact int64 values; int64 outputs come back on the CPU
    /// (an error names one that does not fit anygrad's 32-bit integers).
    fn run(
        &self,
        py: Python<'_>,
        inputs: Vec<(String, PyRef<'_, PyTensor>)>,
    ) -> PyResult<Vec<(String, PyTensor)>> {
        const OP: &str = "onnx.run";
        let mut values = Vec::with_capacity(inputs.len());
        for (name, tensor) in &inputs {
            let value = if tensor.logical() == Logical::Int64 {
                let data: Vec<i64> = tensor.values_f64(py)?.iter().map(|&v| v as i64).collect();
                Value::Int64(
                    Int64Tensor::new(tensor.tensor.shape().to_vec(), data)
                        .map_err(|message| value_error(OP, format!("input `{name}`: {message}")))?,
                )
            } else {
                Value::Tensor(tensor.tensor.clone())
            };
            values.push((name.clone(), value));
        }
        let model = &self.model;
        let outputs = py
            .allow_threads(|| {
                let feeds: Vec<(&str, Value)> = values
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.clone()))
                    .collect();
                model.run(&feeds)
            })
            .map_err(|error| onnx_error(OP, error))?;
        outputs
            .into_iter()
            .map(|(name, value)| {
                let int32 = model
                    .outputs()
                    .iter()
                    .any(|d| d.name == name && d.element_type == ONNX_INT32);
                let tensor = match value {
                    Value::Tensor(tensor) => {
                        let logical = Logical::of(tensor.dtype(), int32);
                        PyTensor::with_logical(tensor, logical)
                    }
                    Value::Int64(values) => {
                        PyTensor::with_logical(int64_tensor(OP, &name, &values)?, Logical::Int64)
                    }
                };
                Ok((name, tensor))
            })
            .collect()
    }

    /// Write the float initializers (their current values) to a safetensors file.
    fn save_safetensors(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.allow_threads(|| self.model.save_safetensors(&path))
            .map_err(|error| onnx_error("onnx.save_safetensors", error))
    }

    /// The device the model runs on, as a string (`cpu`, `gpu:0`).
    #[getter]
    fn device(&self) -> String {
        self.model.device().to_string()
    }
}

/// int64 values as anygrad's 32-bit integer storage on the CPU.
fn int64_tensor(op: &str, name: &str, values: &Int64Tensor) -> PyResult<Tensor> {
    let mut data = Vec::with_capacity(values.data.len());
    for &value in &values.data {
        data.push(i32::try_from(value).map_err(|_| {
            value_error(
                op,
                format!("output `{name}` holds {value}, beyond anygrad's 32-bit integers"),
            )
        })?);
    }
    run(op, || Tensor::from_vec(data, &values.shape, &Device::Cpu))
}

/// Declarations as Python tuples.
fn declarations(py: Python<'_>, declared: &[anygrad_onnx::Declaration]) -> PyResult<PyObject> {
    let list = PyList::empty(py);
    for declaration in declared {
        let shape: Option<Vec<PyObject>> = declaration
            .shape
            .as_ref()
            .map(|dims| {
                dims.iter()
                    .map(|dim| match dim {
                        anygrad_onnx::DeclaredDim::Fixed(size) => size.into_py_any(py),
                        anygrad_onnx::DeclaredDim::Symbolic(name) => name.into_py_any(py),
                        anygrad_onnx::DeclaredDim::Unknown => Ok(py.None()),
                    })
                    .collect::<PyResult<Vec<_>>>()
            })
            .transpose()?;
        list.append((
            declaration.name.clone(),
            declaration.element_type_name(),
            shape,
        ))?;
    }
    Ok(list.into_any().unbind())
}

/// Register the ONNX model class on the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyOnnxModel>()?;
    Ok(())
}

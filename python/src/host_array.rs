//! `Tensor.numpy()` without a copy: a CPU tensor whose stored dtype is the one it reports is
//! handed to numpy through the array interface protocol (`__array_interface__`), so the array
//! and the tensor share memory as in PyTorch — a write through either shows in the other.
//! The exporting object keeps a tensor on the storage alive for as long as numpy's array
//! (whose `base` it becomes) lives; CPU storage never moves (`Tensor::host_storage_address`).

use anygrad::{DType, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The CPU memory of one tensor view, in the form numpy's array interface reads.
#[pyclass(module = "anygrad._native", frozen)]
pub struct HostArray {
    /// Keeps the storage (and so the exported memory) alive.
    tensor: Tensor,
    /// numpy's type string of the element (`<f4`, ...).
    typestr: &'static str,
    /// The address of the view's first element.
    address: usize,
}

impl HostArray {
    /// The export of `tensor`, or `None` where numpy needs a copy: a GPU tensor, a dtype that
    /// is stored differently from how it reports itself (int64 held in 32 bits), or bool
    /// (numpy could write bytes other than 0 and 1 into it).
    pub fn of(tensor: &Tensor, reports_stored_dtype: bool) -> Option<HostArray> {
        if !reports_stored_dtype {
            return None;
        }
        let typestr = match tensor.dtype() {
            DType::F32 => "<f4",
            DType::F16 => "<f2",
            DType::F64 => "<f8",
            DType::I32 => "<i4",
            DType::U32 => "<u4",
            DType::U8 => "|u1",
            // numpy has no bfloat16; bool could be written as other bytes.
            DType::BF16 | DType::Bool => return None,
        };
        let base = tensor.host_storage_address()?;
        let address = base + tensor.layout().offset * tensor.dtype().size_in_bytes();
        Some(HostArray {
            tensor: tensor.clone(),
            typestr,
            address,
        })
    }
}

#[pymethods]
impl HostArray {
    /// numpy's array interface (version 3): shape, element type, address and byte strides.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let size = self.tensor.dtype().size_in_bytes();
        let layout = self.tensor.layout();
        let strides: Vec<usize> = layout.strides.iter().map(|s| s * size).collect();
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", PyTuple::new(py, &layout.shape)?)?;
        interface.set_item("typestr", self.typestr)?;
        interface.set_item("data", (self.address, false))?;
        interface.set_item("strides", PyTuple::new(py, strides)?)?;
        Ok(interface)
    }
}

//! The data sets bundled in the library, for Python: the 8×8 digits (what
//! `anygrad.vision.datasets.load_digits` returns, scikit-learn's `load_digits` data).

use anygrad::{Device, Tensor};
use pyo3::prelude::*;

use crate::dtype::Logical;
use crate::errors::run;
use crate::tensor::PyTensor;

/// The embedded digits: features `float32 [1797, 64]` (raw intensities 0..16) and labels
/// `int64 [1797]` (0..9), on the CPU.
#[pyfunction]
pub fn load_digits() -> PyResult<(PyTensor, PyTensor)> {
    let (features, labels): (Tensor, Tensor) = run("load_digits", || {
        anygrad::data::digits_tensors(&Device::Cpu)
    })?;
    Ok((
        PyTensor::wrap(features),
        PyTensor::with_logical(labels, Logical::Int64),
    ))
}

/// Register the data set functions.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(load_digits, module)?)?;
    Ok(())
}

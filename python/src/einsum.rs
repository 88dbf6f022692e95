//! `torch.einsum`: the library's `Tensor::einsum` over a list of tensors.

use anygrad::Tensor;
use pyo3::prelude::*;

use crate::creation::tensor_list;
use crate::errors::run;
use crate::tensor::PyTensor;

/// Einstein summation of `operands` by `equation` (`torch.einsum`); differentiable.
#[pyfunction]
pub fn einsum(equation: &str, operands: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let list = tensor_list("einsum", operands)?;
    let handles: Vec<&Tensor> = list.iter().map(|t| &t.tensor).collect();
    let result = run("einsum", || Tensor::einsum(equation, &handles))?;
    Ok(list[0].derived(result))
}

/// Register `einsum`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(einsum, module)?)?;
    Ok(())
}

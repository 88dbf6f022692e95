//! The native part of `anygrad.nn.functional`'s classification losses: `cross_entropy` and
//! `nll_loss` with class-index targets are the library's `nn::CrossEntropyLoss` and
//! `nn::NllLoss` (class weights, `ignore_index`, label smoothing, the three reductions, class
//! dims after the batch), so Python and Rust share one definition and a training step pays one
//! call for its loss. The Python wrappers check shapes with PyTorch's messages first.

use anygrad::nn::{CrossEntropyLoss, NllLoss, Reduction};
use pyo3::prelude::*;

use crate::errors::{run, value_error};
use crate::tensor::{optional_tensor_arg, tensor_arg, PyTensor};

/// PyTorch's reduction name as the library's [`Reduction`].
fn reduction(op: &str, name: &str) -> PyResult<Reduction> {
    match name {
        "mean" => Ok(Reduction::Mean),
        "sum" => Ok(Reduction::Sum),
        "none" => Ok(Reduction::None),
        other => Err(value_error(
            op,
            format!("{other} is not a valid value for reduction (mean, sum or none)"),
        )),
    }
}

/// Cross-entropy of class scores `input` (`[N, C]`, `[C]` or `[N, C, d...]`) against class
/// indices `target` or class probabilities (a float `target` of the input's shape).
#[pyfunction]
#[pyo3(signature = (input, target, weight, ignore_index, reduction_name, label_smoothing))]
pub fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction_name: &str,
    label_smoothing: f64,
) -> PyResult<PyTensor> {
    const OP: &str = "cross_entropy";
    let input = tensor_arg(OP, "input", input)?.tensor;
    let target = tensor_arg(OP, "target", target)?.tensor;
    let loss = CrossEntropyLoss {
        reduction: reduction(OP, reduction_name)?,
        weight: optional_tensor_arg(OP, "weight", weight)?.map(|w| w.tensor),
        label_smoothing,
        ignore_index: Some(ignore_index),
    };
    let scores = input;
    let result = py.allow_threads(move || run(OP, || loss.forward(&scores, &target)))?;
    Ok(PyTensor::wrap(result))
}

/// Negative log-likelihood of log-probabilities `input` at class indices `target`.
#[pyfunction]
#[pyo3(signature = (input, target, weight, ignore_index, reduction_name))]
pub fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction_name: &str,
) -> PyResult<PyTensor> {
    const OP: &str = "nll_loss";
    let input = tensor_arg(OP, "input", input)?.tensor;
    let target = tensor_arg(OP, "target", target)?.tensor;
    let loss = NllLoss {
        reduction: reduction(OP, reduction_name)?,
        weight: optional_tensor_arg(OP, "weight", weight)?.map(|w| w.tensor),
        ignore_index: Some(ignore_index),
    };
    let log_probs = input;
    let result = py.allow_threads(move || run(OP, || loss.forward(&log_probs, &target)))?;
    Ok(PyTensor::wrap(result))
}

/// Register the losses.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(cross_entropy, module)?)?;
    module.add_function(wrap_pyfunction!(nll_loss, module)?)?;
    Ok(())
}

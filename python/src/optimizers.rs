//! The native steps of `anygrad.optim`: one call per parameter and step, with the library's
//! update rules (`torch.optim`'s formulas). SGD, Adam and AdamW are the library's fused
//! in-place steps (the parameter and its state written in place); Adadelta computes the new
//! state as the library's optimizer does, writes the parameter in place and returns the new
//! state tensors for the Python optimizer to keep.

use anygrad::Tensor;
use pyo3::prelude::*;

use crate::errors::run;
use crate::tensor::{optional_tensor_arg, tensor_arg, PyTensor};

/// One fused SGD update of `param` in place (`torch.optim.SGD`'s rule), with its momentum
/// buffer `buffer` when momentum is used.
#[pyfunction]
#[pyo3(signature = (param, grad, buffer, lr, momentum, dampening, weight_decay, nesterov, first))]
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    py: Python<'_>,
    param: &Bound<'_, PyAny>,
    grad: &Bound<'_, PyAny>,
    buffer: Option<&Bound<'_, PyAny>>,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    first: bool,
) -> PyResult<()> {
    const OP: &str = "SGD.step";
    let param = tensor_arg(OP, "param", param)?;
    let grad = tensor_arg(OP, "grad", grad)?;
    let buffer = optional_tensor_arg(OP, "buffer", buffer)?;
    let step = anygrad::SgdStep {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        first,
    };
    let (p, g, b) = (param.tensor, grad.tensor, buffer.map(|b| b.tensor));
    py.allow_threads(move || run(OP, || p.sgd_step_(&g, b.as_ref(), &step)))
}

/// One Adam (or, with `decoupled`, AdamW) update of `param` at step `step` (from 1), in place
/// on the parameter and its state (`exp_avg`, `exp_avg_sq` and, with `amsgrad`,
/// `max_exp_avg_sq`): the library's fused step (`Tensor::adam_step_`, one GPU kernel per
/// parameter).
#[pyfunction]
#[pyo3(signature = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad))]
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    py: Python<'_>,
    param: &Bound<'_, PyAny>,
    grad: &Bound<'_, PyAny>,
    exp_avg: &Bound<'_, PyAny>,
    exp_avg_sq: &Bound<'_, PyAny>,
    max_exp_avg_sq: Option<&Bound<'_, PyAny>>,
    step: u64,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    amsgrad: bool,
) -> PyResult<()> {
    const OP: &str = "Adam.step";
    let param = tensor_arg(OP, "param", param)?.tensor;
    let grad = tensor_arg(OP, "grad", grad)?.tensor;
    let m = tensor_arg(OP, "exp_avg", exp_avg)?.tensor;
    let v = tensor_arg(OP, "exp_avg_sq", exp_avg_sq)?.tensor;
    let maximum = optional_tensor_arg(OP, "max_exp_avg_sq", max_exp_avg_sq)?.map(|t| t.tensor);
    let rule = anygrad::AdamStep {
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        decoupled,
        amsgrad,
        step,
    };
    py.allow_threads(move || {
        run(OP, || {
            param.adam_step_(&grad, &m, &v, maximum.as_ref(), &rule)
        })
    })
}

/// One Adadelta update of `param` in place: returns the new `(square_avg, acc_delta)`.
#[pyfunction]
#[pyo3(signature = (param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay))]
#[allow(clippy::too_many_arguments)]
pub fn adadelta_step(
    py: Python<'_>,
    param: &Bound<'_, PyAny>,
    grad: &Bound<'_, PyAny>,
    square_avg: &Bound<'_, PyAny>,
    acc_delta: &Bound<'_, PyAny>,
    lr: f64,
    rho: f64,
    eps: f64,
    weight_decay: f64,
) -> PyResult<(PyTensor, PyTensor)> {
    const OP: &str = "Adadelta.step";
    let param = tensor_arg(OP, "param", param)?.tensor;
    let grad = tensor_arg(OP, "grad", grad)?.tensor;
    let square: Tensor = tensor_arg(OP, "square_avg", square_avg)?.tensor;
    let accumulated: Tensor = tensor_arg(OP, "acc_delta", acc_delta)?.tensor;
    let (square, accumulated) = py.allow_threads(move || {
        run(OP, || {
            let current = param.detach();
            let g = if weight_decay != 0.0 {
                grad.add(&current.mul_scalar(weight_decay)?)?
            } else {
                grad
            };
            let square = square
                .mul_scalar(rho)?
                .add(&g.square()?.mul_scalar(1.0 - rho)?)?;
            let std = square.add_scalar(eps)?.sqrt()?;
            let delta = accumulated.add_scalar(eps)?.sqrt()?.div(&std)?.mul(&g)?;
            let accumulated = accumulated
                .mul_scalar(rho)?
                .add(&delta.square()?.mul_scalar(1.0 - rho)?)?;
            param.assign(&current.sub(&delta.mul_scalar(lr)?)?)?;
            Ok((square, accumulated))
        })
    })?;
    Ok((PyTensor::wrap(square), PyTensor::wrap(accumulated)))
}

/// Register the optimizer steps.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(sgd_step, module)?)?;
    module.add_function(wrap_pyfunction!(adam_step, module)?)?;
    module.add_function(wrap_pyfunction!(adadelta_step, module)?)?;
    Ok(())
}

//! Mixed precision from Python: the autocast scopes behind `anygrad.amp.autocast` (a
//! per-thread stack of the library's guards, pushed and popped by the Python context
//! manager) and whether one is active; the gradient scaler's unscaling.

use std::cell::RefCell;

use anygrad::{AutocastGuard, DType};
use pyo3::prelude::*;

use crate::creation::tensor_list;
use crate::device::PyDevice;
use crate::errors::run;
use crate::tensor::PyTensor;

thread_local! {
    static AUTOCAST_STACK: RefCell<Vec<AutocastGuard>> = const { RefCell::new(Vec::new()) };
}

/// Enter an autocast scope on `device`: matmuls and convolutions run in `dtype` there
/// (`"float16"`, the default, or `"bfloat16"`). A device without float16 is an error naming
/// it for float16; every device runs bfloat16.
#[pyfunction]
#[pyo3(signature = (device, dtype="float16"))]
pub fn push_autocast(device: &Bound<'_, PyAny>, dtype: &str) -> PyResult<()> {
    let device = PyDevice::new(device, None)?.open()?;
    let low = match dtype {
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        other => {
            return Err(crate::errors::type_error(
                "autocast",
                format!("only float16 and bfloat16 are supported, got {other}"),
            ))
        }
    };
    let guard = run("autocast", || anygrad::autocast(low, &device))?;
    AUTOCAST_STACK.with(|stack| stack.borrow_mut().push(guard));
    Ok(())
}

/// Leave the innermost autocast scope.
#[pyfunction]
pub fn pop_autocast() -> PyResult<()> {
    let popped = AUTOCAST_STACK.with(|stack| stack.borrow_mut().pop());
    match popped {
        Some(guard) => {
            drop(guard);
            Ok(())
        }
        None => Err(crate::errors::runtime_error(
            "autocast",
            "exited an autocast scope that was never entered",
        )),
    }
}

/// Whether an autocast scope is active on this thread (`torch.is_autocast_enabled`).
#[pyfunction]
pub fn is_autocast_enabled() -> bool {
    anygrad::autocast_dtype().is_some()
}

/// Divide `grads` in place by `scale` (one kernel each, the library's `unscale_gradients`) and
/// tell whether any held inf or NaN, read back once per device (`GradScaler.unscale_`).
/// Returns `(found_inf, replaced)`: `replaced` lists `(index, tensor)` for each gradient that
/// overlapped another and was copied first; the caller makes the copy that parameter's
/// gradient.
#[pyfunction]
pub fn unscale_gradients(
    grads: &Bound<'_, PyAny>,
    scale: f64,
) -> PyResult<(bool, Vec<(usize, PyTensor)>)> {
    const OP: &str = "unscale_";
    let list = tensor_list(OP, grads)?;
    let tensors: Vec<anygrad::Tensor> = list.iter().map(|t| t.tensor.clone()).collect();
    let mut replaced = Vec::new();
    let found = run(OP, || {
        let flags = anygrad::nn::unscale_gradients(&tensors, scale, |index, copy| {
            replaced.push((index, copy))
        })?;
        let mut found = false;
        for (_, flag) in flags {
            found |= flag.item_f64()? != 0.0;
        }
        Ok(found)
    })?;
    let replaced = replaced
        .into_iter()
        .map(|(index, copy)| (index, list[index].derived(copy)))
        .collect();
    Ok((found, replaced))
}

/// Register the autocast functions.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(push_autocast, module)?)?;
    module.add_function(wrap_pyfunction!(pop_autocast, module)?)?;
    module.add_function(wrap_pyfunction!(is_autocast_enabled, module)?)?;
    module.add_function(wrap_pyfunction!(unscale_gradients, module)?)?;
    Ok(())
}

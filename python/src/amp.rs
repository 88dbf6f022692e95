//! Mixed precision from Python: the autocast scopes behind `anygrad.amp.autocast` (a
//! per-thread stack of the library's guards, pushed and popped by the Python context
//! manager) and whether one is active.

use std::cell::RefCell;

use anygrad::{AutocastGuard, DType};
use pyo3::prelude::*;

use crate::device::PyDevice;
use crate::errors::run;

thread_local! {
    static AUTOCAST_STACK: RefCell<Vec<AutocastGuard>> = const { RefCell::new(Vec::new()) };
}

/// Enter an autocast scope on `device` (a GPU: matmuls and convolutions run in float16 there;
/// the library supports float16 only). A device without float16 is an error naming it.
#[pyfunction]
pub fn push_autocast(device: &Bound<'_, PyAny>) -> PyResult<()> {
    let device = PyDevice::new(device, None)?.open()?;
    let guard = run("autocast", || anygrad::autocast(DType::F16, &device))?;
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

/// Register the autocast functions.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(push_autocast, module)?)?;
    module.add_function(wrap_pyfunction!(pop_autocast, module)?)?;
    module.add_function(wrap_pyfunction!(is_autocast_enabled, module)?)?;
    Ok(())
}

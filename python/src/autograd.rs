//! Autograd from Python: `backward`, `grad`, `requires_grad`, `requires_grad_`, `detach`,
//! `data`, `is_leaf`, `retain_grad`, and the gradient mode behind `no_grad()` /
//! `enable_grad()` / `set_grad_enabled()` (a per-thread stack of the library's guards, which
//! the Python context managers push and pop).

use std::cell::RefCell;

use anygrad::{EnableGradGuard, NoGradGuard};
use pyo3::prelude::*;

use crate::errors::{run, runtime_error};
use crate::tensor::{optional_tensor_arg, tensor_arg, PyTensor};

/// One entry of the gradient-mode stack.
enum ModeGuard {
    /// Inside `no_grad()`.
    Disabled(#[allow(dead_code)] NoGradGuard),
    /// Inside `enable_grad()`.
    Enabled(#[allow(dead_code)] EnableGradGuard),
}

thread_local! {
    static MODE_STACK: RefCell<Vec<ModeGuard>> = const { RefCell::new(Vec::new()) };
}

/// Enter a gradient mode: recording on (`enabled`) or off, until the matching
/// [`pop_grad_mode`].
#[pyfunction]
pub fn push_grad_mode(enabled: bool) {
    let guard = if enabled {
        ModeGuard::Enabled(anygrad::enable_grad())
    } else {
        ModeGuard::Disabled(anygrad::no_grad())
    };
    MODE_STACK.with(|stack| stack.borrow_mut().push(guard));
}

/// Leave the innermost gradient mode.
#[pyfunction]
pub fn pop_grad_mode() -> PyResult<()> {
    let popped = MODE_STACK.with(|stack| stack.borrow_mut().pop());
    match popped {
        Some(guard) => {
            drop(guard);
            Ok(())
        }
        None => Err(runtime_error(
            "no_grad",
            "exited a gradient mode that was never entered",
        )),
    }
}

/// Whether ops record a graph on this thread (`torch.is_grad_enabled`).
#[pyfunction]
pub fn is_grad_enabled() -> bool {
    anygrad::is_grad_enabled()
}

#[pymethods]
impl PyTensor {
    /// Accumulate gradients of this tensor into the leaves that require them; `gradient`
    /// is required for a non-scalar output.
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if create_graph {
            return Err(runtime_error(
                "backward",
                "create_graph=True (higher-order gradients) is not supported",
            ));
        }
        if inputs.is_some_and(|i| !i.is_none()) {
            return Err(runtime_error(
                "backward",
                "inputs= is not supported; every leaf that requires grad receives its gradient",
            ));
        }
        if !self.tensor.requires_grad() {
            return Err(runtime_error(
                "backward",
                "element 0 of tensors does not require grad and does not have a grad_fn",
            ));
        }
        let gradient = optional_tensor_arg("backward", "gradient", gradient)?;
        if gradient.is_none() && self.tensor.numel() != 1 {
            return Err(runtime_error(
                "backward",
                "grad can be implicitly created only for scalar outputs",
            ));
        }
        let tensor = self.tensor.clone();
        let retain = retain_graph.unwrap_or(false);
        py.allow_threads(move || {
            run("backward", || match (gradient, retain) {
                (Some(gradient), _) => tensor.backward_with(&gradient.tensor),
                (None, true) => tensor.backward_retain_graph(),
                (None, false) => tensor.backward(),
            })
        })
    }

    /// The accumulated gradient, or `None`.
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        self.tensor.grad().map(|g| self.derived(g))
    }

    /// Replace (or clear, with `None`) the accumulated gradient.
    #[setter(grad)]
    fn set_grad(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let gradient = optional_tensor_arg("grad", "grad", value)?;
        if let Some(gradient) = &gradient {
            if gradient.tensor.shape() != self.tensor.shape() {
                return Err(runtime_error(
                    "grad",
                    format!(
                        "assigned grad has shape {:?} but the tensor has shape {:?}",
                        gradient.tensor.shape(),
                        self.tensor.shape()
                    ),
                ));
            }
        }
        self.tensor.set_grad(gradient.map(|g| g.tensor));
        Ok(())
    }

    /// Whether gradients flow to (or through) this tensor.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.tensor.requires_grad()
    }

    /// Set whether this leaf tensor records gradients.
    #[setter(requires_grad)]
    fn set_requires_grad(&self, value: bool) -> PyResult<()> {
        if !value && !self.tensor.is_leaf() {
            return Err(runtime_error(
                "requires_grad",
                "you can only change requires_grad flags of leaf variables; use detach()",
            ));
        }
        crate::creation::set_requires_grad("requires_grad_", self, value)
    }

    /// Set `requires_grad` in place and return the tensor.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: PyRef<'_, Self>, requires_grad: bool) -> PyResult<PyRef<'_, Self>> {
        slf.set_requires_grad(requires_grad)?;
        Ok(slf)
    }

    /// True for tensors created by the user (not the result of a recorded op).
    #[getter]
    fn is_leaf(&self) -> bool {
        self.tensor.is_leaf()
    }

    /// The op that made this tensor, or `None` for a leaf (a marker object here: anygrad's
    /// graph is not exposed node by node).
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<PyObject> {
        if self.tensor.is_leaf() {
            Ok(py.None())
        } else {
            Ok("<anygrad backward node>"
                .into_pyobject(py)?
                .into_any()
                .unbind())
        }
    }

    /// The same values, cut from the graph (shares storage).
    fn detach(&self) -> PyTensor {
        self.derived(self.tensor.detach())
    }

    /// In place: cut this handle from the graph.
    fn detach_<'py>(mut slf: PyRefMut<'py, Self>) -> PyRefMut<'py, Self> {
        slf.tensor = slf.tensor.detach();
        slf
    }

    /// The values as a tensor outside autograd (shares storage).
    #[getter]
    fn data(&self) -> PyTensor {
        self.derived(self.tensor.detach())
    }

    /// Replace this tensor's values with `value`'s (as PyTorch's `param.data = ...`); a
    /// parameter keeps its `requires_grad`.
    #[setter(data)]
    fn set_data(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = tensor_arg("data", "data", value)?;
        let requires_grad = self.tensor.requires_grad();
        self.tensor = value.tensor.detach().requires_grad_(requires_grad);
        self.int32 = value.int32;
        Ok(())
    }

    /// Keep the gradient of a non-leaf tensor in `.grad` during backward.
    fn retain_grad(&self) -> PyResult<()> {
        run("retain_grad", || self.tensor.retain_grad())
    }

    /// Call `hook(grad)` with this tensor's gradient during backward, once every contribution
    /// is summed; a returned tensor replaces the gradient (`None` keeps it). Returns a handle
    /// whose `remove()` takes the hook off.
    fn register_hook(&self, hook: &Bound<'_, PyAny>) -> PyResult<PyRemovableHandle> {
        if !hook.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "register_hook: the hook must be callable",
            ));
        }
        let callable: Py<PyAny> = hook.clone().unbind();
        let logical = self.logical();
        let handle = run("register_hook", || {
            self.tensor.register_hook(move |grad| {
                Python::with_gil(|py| {
                    let argument = PyTensor::with_logical(grad.clone(), logical);
                    let result = callable.call1(py, (argument,)).map_err(|error| {
                        anygrad::Error::Autograd {
                            message: format!("a gradient hook raised {error}"),
                        }
                    })?;
                    if result.is_none(py) {
                        return Ok(None);
                    }
                    match result.extract::<PyRef<'_, PyTensor>>(py) {
                        Ok(replacement) => Ok(Some(replacement.tensor.clone())),
                        Err(_) => Err(anygrad::Error::Autograd {
                            message: "a gradient hook must return a Tensor or None".into(),
                        }),
                    }
                })
            })
        })?;
        Ok(PyRemovableHandle {
            handle: Some(handle),
        })
    }

    /// In place: copy `src`'s values into this tensor (outside autograd), broadcasting.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        mut slf: PyRefMut<'py, Self>,
        src: &Bound<'_, PyAny>,
        non_blocking: bool,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let _ = non_blocking;
        let src = tensor_arg("copy_", "src", src)?;
        // Not detached: while a graph is recorded, copying into a non-leaf tensor rebinds it
        // to the source (differentiably), as `apply_in_place` does for every in-place op.
        let moved = run("copy_", || {
            src.tensor
                .to_device(slf.tensor.device())?
                .to_dtype(slf.tensor.dtype())?
                .broadcast_to(slf.tensor.shape())
        })?;
        let result = slf.derived(moved);
        slf.apply_in_place("copy_", result)?;
        Ok(slf)
    }

    /// In place: set every element to `value`.
    fn fill_<'py>(mut slf: PyRefMut<'py, Self>, value: f64) -> PyResult<PyRefMut<'py, Self>> {
        let filled = run("fill_", || {
            anygrad::Tensor::full(
                slf.tensor.shape(),
                value,
                slf.tensor.dtype(),
                slf.tensor.device(),
            )
        })?;
        let result = slf.derived(filled);
        slf.apply_in_place_unchecked("fill_", result)?;
        Ok(slf)
    }

    /// In place: set every element to 0.
    fn zero_<'py>(slf: PyRefMut<'py, Self>) -> PyResult<PyRefMut<'py, Self>> {
        PyTensor::fill_(slf, 0.0)
    }

    /// In place: normal samples with `mean` and `std`.
    #[pyo3(signature = (mean=0.0, std=1.0))]
    fn normal_<'py>(
        mut slf: PyRefMut<'py, Self>,
        mean: f64,
        std: f64,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let samples = run("normal_", || {
            anygrad::Tensor::randn(slf.tensor.shape(), anygrad::DType::F32, slf.tensor.device())?
                .mul_scalar(std)?
                .add_scalar(mean)?
                .to_dtype(slf.tensor.dtype())
        })?;
        let result = slf.derived(samples);
        slf.apply_in_place_unchecked("normal_", result)?;
        Ok(slf)
    }

    /// In place: uniform samples in [from, to).
    #[pyo3(signature = (from=0.0, to=1.0))]
    fn uniform_<'py>(
        mut slf: PyRefMut<'py, Self>,
        from: f64,
        to: f64,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let samples = run("uniform_", || {
            anygrad::Tensor::rand_uniform(
                slf.tensor.shape(),
                from,
                to,
                anygrad::DType::F32,
                slf.tensor.device(),
            )?
            .to_dtype(slf.tensor.dtype())
        })?;
        let result = slf.derived(samples);
        slf.apply_in_place_unchecked("uniform_", result)?;
        Ok(slf)
    }
}

impl PyTensor {
    /// Write `result` into this tensor's storage, outside autograd (what initialisers and
    /// `copy_` do under `no_grad`); a leaf that requires grad is refused while recording.
    pub fn apply_in_place_unchecked(&mut self, op: &str, result: PyTensor) -> PyResult<()> {
        if anygrad::is_grad_enabled() && self.tensor.is_leaf() && self.tensor.requires_grad() {
            return Err(runtime_error(
                op,
                "a leaf Variable that requires grad is being used in an in-place operation",
            ));
        }
        let source = run(op, || {
            result
                .tensor
                .detach()
                .broadcast_to(self.tensor.shape())?
                .contiguous()
        })?;
        run(op, || self.tensor.assign(&source))
    }
}

/// What `Tensor.register_hook` returns (PyTorch's `RemovableHandle`): `remove()` takes the
/// hook off; usable as a context manager that removes it on exit.
#[pyclass(name = "RemovableHandle", module = "anygrad._native")]
pub struct PyRemovableHandle {
    handle: Option<anygrad::HookHandle>,
}

#[pymethods]
impl PyRemovableHandle {
    /// Take the hook off (a second call changes nothing).
    fn remove(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.remove();
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.remove();
        false
    }
}

/// Register the gradient-mode functions.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(push_grad_mode, module)?)?;
    module.add_function(wrap_pyfunction!(pop_grad_mode, module)?)?;
    module.add_function(wrap_pyfunction!(is_grad_enabled, module)?)?;
    module.add_class::<PyRemovableHandle>()?;
    Ok(())
}

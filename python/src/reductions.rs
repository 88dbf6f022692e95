//! Reductions of `Tensor`: `sum`, `mean`, `max`, `min`, `argmax`, `argmin`, `prod`, `std`,
//! `var`, `all`, `any`, `norm`, `logsumexp`, with `dim` (an int or a tuple; every dim when
//! omitted) and `keepdim`. `max(dim)` and `min(dim)` return `(values, indices)` with
//! `.values` and `.indices`, as PyTorch's named tuples; `max(other)` is the elementwise
//! maximum. Bool inputs sum and average as integers, as in PyTorch.

use anygrad::{DType, Tensor};
use pyo3::prelude::*;

use crate::errors::{run, type_error};
use crate::tensor::{dims_arg, PyTensor};

/// A `(values, indices)` pair as PyTorch's named tuple (`anygrad.return_types`).
fn values_indices(
    py: Python<'_>,
    name: &str,
    values: PyTensor,
    indices: PyTensor,
) -> PyResult<PyObject> {
    Ok(py
        .import("anygrad._return_types")?
        .getattr(name)?
        .call1((values, indices))?
        .unbind())
}

impl PyTensor {
    /// This tensor as a summable dtype: bool becomes int64.
    fn summable(&self) -> anygrad::Result<Tensor> {
        if self.tensor.dtype() == DType::Bool {
            self.tensor.to_dtype(DType::I32)
        } else {
            Ok(self.tensor.clone())
        }
    }

    /// The reduction `max` or `min` in any of its forms.
    fn extremum(
        &self,
        py: Python<'_>,
        name: &str,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyObject> {
        if let Some(other) = dim.filter(|d| d.downcast::<PyTensor>().is_ok()) {
            let result = if name == "max" {
                self.maximum(other)?
            } else {
                self.minimum(other)?
            };
            return Ok(result.into_pyobject(py)?.into_any().unbind());
        }
        match dim.filter(|d| !d.is_none()) {
            None => {
                let result = run(name, || {
                    if name == "max" {
                        self.tensor.max_all()
                    } else {
                        self.tensor.min_all()
                    }
                })?;
                Ok(self.derived(result).into_pyobject(py)?.into_any().unbind())
            }
            Some(dim) => {
                let dim: isize = dim
                    .extract()
                    .map_err(|_| type_error(name, format!("dim must be an int, got {dim}")))?;
                let (values, indices) = run(name, || {
                    if name == "max" {
                        self.tensor.max_dim(dim, keepdim)
                    } else {
                        self.tensor.min_dim(dim, keepdim)
                    }
                })?;
                values_indices(py, name, self.derived(values), PyTensor::wrap(indices))
            }
        }
    }
}

#[pymethods]
impl PyTensor {
    /// The sum over `dim` (every dim when omitted).
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg("sum", dim)?;
        let cast = crate::dtype::optional_dtype("sum", dtype)?;
        let result = run("sum", || {
            let x = match cast {
                Some(logical) => self.tensor.to_dtype(logical.storage())?,
                None => self.summable()?,
            };
            match &dims {
                None => x.sum_all(),
                Some(dims) => x.sum(dims, keepdim),
            }
        })?;
        Ok(self.derived(result))
    }

    /// The mean over `dim` (every dim when omitted).
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg("mean", dim)?;
        let cast = crate::dtype::optional_dtype("mean", dtype)?;
        if cast.is_none() && !self.tensor.dtype().is_float() {
            return Err(crate::errors::runtime_error(
                "mean",
                format!(
                    "could not infer output dtype: input dtype is {}; give a floating point dtype with dtype= or convert with .float()",
                    self.logical().name()
                ),
            ));
        }
        let result = run("mean", || {
            let x = match cast {
                Some(logical) => self.tensor.to_dtype(logical.storage())?,
                None => self.tensor.clone(),
            };
            match &dims {
                None => x.mean_all(),
                Some(dims) => x.mean(dims, keepdim),
            }
        })?;
        Ok(PyTensor::wrap(result))
    }

    /// `max()`: the largest element; `max(dim)`: `(values, indices)`; `max(other)`: the
    /// elementwise maximum.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyObject> {
        self.extremum(py, "max", dim, keepdim)
    }

    /// `min()`, `min(dim)` or `min(other)`, like `max`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyObject> {
        self.extremum(py, "min", dim, keepdim)
    }

    /// The largest values over `dim` (no indices).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("amax", dim)?.unwrap_or_default();
        self.same_dims("amax", |t| t.max(&dims, keepdim))
    }

    /// The smallest values over `dim` (no indices).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("amin", dim)?.unwrap_or_default();
        self.same_dims("amin", |t| t.min(&dims, keepdim))
    }

    /// The index of the largest element (of the flattened tensor when `dim` is omitted).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, dim: Option<isize>, keepdim: bool) -> PyResult<PyTensor> {
        let result = run("argmax", || match dim {
            Some(dim) => self.tensor.argmax(dim, keepdim),
            None => self.tensor.reshape([-1isize])?.argmax(0, false),
        })?;
        Ok(PyTensor::wrap(result))
    }

    /// The index of the smallest element (of the flattened tensor when `dim` is omitted).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, dim: Option<isize>, keepdim: bool) -> PyResult<PyTensor> {
        let result = run("argmin", || match dim {
            Some(dim) => self.tensor.argmin(dim, keepdim),
            None => self.tensor.reshape([-1isize])?.argmin(0, false),
        })?;
        Ok(PyTensor::wrap(result))
    }

    /// The product over `dim` (every dim when omitted).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn prod(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("prod", dim)?.unwrap_or_default();
        let result = run("prod", || self.summable()?.prod(&dims, keepdim))?;
        Ok(self.derived(result))
    }

    /// The variance over `dim`; `unbiased` (or `correction=1`) divides by n - 1.
    #[pyo3(signature = (dim=None, unbiased=true, keepdim=false, *, correction=None))]
    fn var(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: bool,
        keepdim: bool,
        correction: Option<i64>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg("var", dim)?.unwrap_or_default();
        let unbiased = correction.map(|c| c != 0).unwrap_or(unbiased);
        Ok(PyTensor::wrap(run("var", || {
            self.float_input()?.var(&dims, keepdim, unbiased)
        })?))
    }

    /// The standard deviation over `dim`.
    #[pyo3(signature = (dim=None, unbiased=true, keepdim=false, *, correction=None))]
    fn std(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: bool,
        keepdim: bool,
        correction: Option<i64>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg("std", dim)?.unwrap_or_default();
        let unbiased = correction.map(|c| c != 0).unwrap_or(unbiased);
        Ok(PyTensor::wrap(run("std", || {
            self.float_input()?.std(&dims, unbiased, keepdim)
        })?))
    }

    /// Whether every element over `dim` is nonzero.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("all", dim)?.unwrap_or_default();
        Ok(PyTensor::wrap(run("all", || {
            self.tensor.all(&dims, keepdim)
        })?))
    }

    /// Whether any element over `dim` is nonzero.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("any", dim)?.unwrap_or_default();
        Ok(PyTensor::wrap(run("any", || {
            self.tensor.any(&dims, keepdim)
        })?))
    }

    /// The p-norm over `dim` (every dim when omitted).
    #[pyo3(signature = (p=2.0, dim=None, keepdim=false))]
    fn norm(&self, p: f64, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("norm", dim)?.unwrap_or_default();
        Ok(PyTensor::wrap(run("norm", || {
            self.float_input()?.norm(p, &dims, keepdim)
        })?))
    }

    /// log(sum(exp(x))) over `dim`, computed stably.
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(&self, dim: &Bound<'_, PyAny>, keepdim: bool) -> PyResult<PyTensor> {
        let dims = dims_arg("logsumexp", Some(dim))?.unwrap_or_default();
        Ok(PyTensor::wrap(run("logsumexp", || {
            self.float_input()?.logsumexp(&dims, keepdim)
        })?))
    }
}

impl PyTensor {
    /// This tensor, as float32 when it is not a float.
    pub fn float_input(&self) -> anygrad::Result<Tensor> {
        if self.tensor.dtype().is_float() {
            Ok(self.tensor.clone())
        } else {
            self.tensor.to_dtype(DType::F32)
        }
    }

    /// A library reduction keeping this tensor's dtype marking.
    fn same_dims(
        &self,
        name: &str,
        op: impl FnOnce(&Tensor) -> anygrad::Result<Tensor>,
    ) -> PyResult<PyTensor> {
        Ok(self.derived(run(name, || op(&self.tensor))?))
    }
}

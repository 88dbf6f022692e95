//! Elementwise math and linear algebra methods of `Tensor` (`exp`, `log`, `sqrt`, `relu`,
//! `sigmoid`, `clamp`, `matmul`, `softmax`, ...) and the module functions that have no
//! method spelling (`where`). Integer inputs of float functions compute in float32, as
//! PyTorch's do.

use anygrad::op::UnaryOp;
use anygrad::{DType, Tensor};
use pyo3::prelude::*;

use crate::errors::{run, value_error};
use crate::operators::{match_devices, operand, Operand};
use crate::tensor::{tensor_arg, PyTensor};

impl PyTensor {
    /// `op` of the float version of this tensor.
    fn float_unary(&self, name: &str, op: UnaryOp) -> PyResult<PyTensor> {
        let result = run(name, || {
            let x = if self.tensor.dtype().is_float() {
                self.tensor.clone()
            } else {
                self.tensor.to_dtype(DType::F32)?
            };
            x.unary(op)
        })?;
        Ok(PyTensor::wrap(result))
    }

    /// A library op on this tensor, keeping its dtype marking.
    fn same_kind(
        &self,
        name: &str,
        op: impl FnOnce(&Tensor) -> anygrad::Result<Tensor>,
    ) -> PyResult<PyTensor> {
        Ok(self.derived(run(name, || op(&self.tensor))?))
    }

    /// `self @ other` with the GIL released.
    pub fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let other = tensor_arg("matmul", "other", other)?;
        let (a, b) = (self.tensor.clone(), other.tensor.clone());
        let result = py.allow_threads(move || run("matmul", || a.matmul(&b)))?;
        Ok(self.derived(result))
    }
}

#[pymethods]
impl PyTensor {
    /// e^x.
    fn exp(&self) -> PyResult<PyTensor> {
        self.float_unary("exp", UnaryOp::Exp)
    }
    /// Natural logarithm.
    fn log(&self) -> PyResult<PyTensor> {
        self.float_unary("log", UnaryOp::Log)
    }
    /// Square root.
    fn sqrt(&self) -> PyResult<PyTensor> {
        self.float_unary("sqrt", UnaryOp::Sqrt)
    }
    /// 1 / sqrt(x).
    fn rsqrt(&self) -> PyResult<PyTensor> {
        self.float_unary("rsqrt", UnaryOp::Rsqrt)
    }
    /// 1 / x.
    fn reciprocal(&self) -> PyResult<PyTensor> {
        self.float_unary("reciprocal", UnaryOp::Recip)
    }
    /// Sine.
    fn sin(&self) -> PyResult<PyTensor> {
        self.float_unary("sin", UnaryOp::Sin)
    }
    /// Cosine.
    fn cos(&self) -> PyResult<PyTensor> {
        self.float_unary("cos", UnaryOp::Cos)
    }
    /// Hyperbolic tangent.
    fn tanh(&self) -> PyResult<PyTensor> {
        self.float_unary("tanh", UnaryOp::Tanh)
    }
    /// The logistic function.
    fn sigmoid(&self) -> PyResult<PyTensor> {
        self.float_unary("sigmoid", UnaryOp::Sigmoid)
    }
    /// The error function.
    fn erf(&self) -> PyResult<PyTensor> {
        self.float_unary("erf", UnaryOp::Erf)
    }
    /// max(x, 0).
    fn relu(&self) -> PyResult<PyTensor> {
        self.same_kind("relu", |t| t.relu())
    }
    /// The absolute value.
    fn abs(&self) -> PyResult<PyTensor> {
        self.same_kind("abs", |t| t.abs())
    }
    /// -x.
    fn neg(&self) -> PyResult<PyTensor> {
        self.same_kind("neg", |t| t.neg())
    }
    /// The sign (-1, 0 or 1).
    fn sign(&self) -> PyResult<PyTensor> {
        self.same_kind("sign", |t| t.sign())
    }
    /// Round down to a whole number (integers unchanged).
    fn floor(&self) -> PyResult<PyTensor> {
        self.same_kind("floor", |t| t.floor())
    }
    /// Round up to a whole number (integers unchanged).
    fn ceil(&self) -> PyResult<PyTensor> {
        self.same_kind("ceil", |t| t.ceil())
    }
    /// Round toward zero (integers unchanged).
    fn trunc(&self) -> PyResult<PyTensor> {
        self.same_kind("trunc", |t| t.trunc())
    }
    /// Round to `decimals` digits after the point, halves to even, like `torch.round`.
    #[pyo3(signature = (decimals=0))]
    fn round(&self, decimals: i32) -> PyResult<PyTensor> {
        if decimals == 0 || !self.tensor.dtype().is_float() {
            return self.same_kind("round", |t| t.round());
        }
        let scale = 10f64.powi(decimals);
        self.same_kind("round", |t| t.mul_scalar(scale)?.round()?.div_scalar(scale))
    }
    /// x * x.
    fn square(&self) -> PyResult<PyTensor> {
        self.same_kind("square", |t| t.square())
    }
    /// x * sigmoid(x).
    fn silu(&self) -> PyResult<PyTensor> {
        self.float_unary("silu", UnaryOp::Silu)
    }
    /// GELU, exact (`approximate="none"`) or with the tanh formula (`"tanh"`).
    #[pyo3(signature = (approximate="none"))]
    fn gelu(&self, approximate: &str) -> PyResult<PyTensor> {
        match approximate {
            "none" => self.float_unary("gelu", UnaryOp::Gelu),
            "tanh" => Ok(PyTensor::wrap(run("gelu", || self.tensor.gelu_tanh())?)),
            other => Err(value_error(
                "gelu",
                format!("approximate must be \"none\" or \"tanh\", got {other:?}"),
            )),
        }
    }
    /// Clamp to [min, max] (either may be omitted).
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(&self, min: Option<f64>, max: Option<f64>) -> PyResult<PyTensor> {
        if min.is_none() && max.is_none() {
            return Err(value_error(
                "clamp",
                "at least one of 'min' or 'max' must not be None",
            ));
        }
        let low = min.unwrap_or(f64::NEG_INFINITY);
        let high = max.unwrap_or(f64::INFINITY);
        self.same_kind("clamp", |t| t.clamp(low, high))
    }
    /// Alias of `clamp`.
    #[pyo3(signature = (min=None, max=None))]
    fn clip(&self, min: Option<f64>, max: Option<f64>) -> PyResult<PyTensor> {
        self.clamp(min, max)
    }
    /// In place: clamp to [min, max].
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_(
        mut slf: PyRefMut<'_, Self>,
        min: Option<f64>,
        max: Option<f64>,
    ) -> PyResult<PyRefMut<'_, Self>> {
        let result = slf.clamp(min, max)?;
        slf.apply_in_place("clamp_", result)?;
        Ok(slf)
    }
    /// Matrix product (batched, broadcasting batch dims).
    #[pyo3(name = "matmul")]
    fn matmul_method(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }
    /// Matrix product of 2-D tensors.
    fn mm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }
    /// Batched matrix product of 3-D tensors.
    fn bmm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }
    /// Softmax along `dim`.
    #[pyo3(signature = (dim=-1, dtype=None))]
    fn softmax(&self, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let x = match crate::dtype::optional_dtype("softmax", dtype)? {
            Some(logical) => self.cast(logical)?,
            None => self.clone(),
        };
        Ok(PyTensor::wrap(run("softmax", || x.tensor.softmax(dim))?))
    }
    /// Log-softmax along `dim`.
    #[pyo3(signature = (dim=-1, dtype=None))]
    fn log_softmax(&self, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let x = match crate::dtype::optional_dtype("log_softmax", dtype)? {
            Some(logical) => self.cast(logical)?,
            None => self.clone(),
        };
        Ok(PyTensor::wrap(run("log_softmax", || {
            x.tensor.log_softmax(dim)
        })?))
    }
    /// `self` where `condition` holds, `other` elsewhere (`Tensor.where`).
    #[pyo3(name = "where")]
    fn where_method(
        &self,
        condition: &Bound<'_, PyAny>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        where_(
            condition,
            &self.clone().into_pyobject(condition.py())?.into_any(),
            other,
        )
    }
    /// Fill with `value` where `mask` is true.
    fn masked_fill(&self, mask: &Bound<'_, PyAny>, value: f64) -> PyResult<PyTensor> {
        let mask = tensor_arg("masked_fill", "mask", mask)?;
        self.same_kind("masked_fill", |t| t.masked_fill(&mask.tensor, value))
    }
    /// In place: fill with `value` where `mask` is true.
    fn masked_fill_<'py>(
        mut slf: PyRefMut<'py, Self>,
        mask: &Bound<'_, PyAny>,
        value: f64,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let result = slf.masked_fill(mask, value)?;
        slf.apply_in_place("masked_fill_", result)?;
        Ok(slf)
    }
    /// Lower triangle.
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, diagonal: isize) -> PyResult<PyTensor> {
        self.same_kind("tril", |t| t.tril(diagonal))
    }
    /// Upper triangle.
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, diagonal: isize) -> PyResult<PyTensor> {
        self.same_kind("triu", |t| t.triu(diagonal))
    }
    /// Running sum along `dim` (one kernel); integer and bool tensors give int64, as in
    /// PyTorch; `dtype` converts first.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(&self, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let source = match crate::dtype::optional_dtype("cumsum", dtype)? {
            Some(logical) => self.cast(logical)?,
            None => self.clone(),
        };
        let result = run("cumsum", || source.tensor.cumsum(dim))?;
        if result.dtype() == DType::I32 {
            Ok(PyTensor::with_logical(result, crate::dtype::Logical::Int64))
        } else {
            Ok(source.derived(result))
        }
    }
    /// Running product along `dim` (exact with zeros and negative values); `dtype` converts
    /// first. Float tensors only.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumprod(&self, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let source = match crate::dtype::optional_dtype("cumprod", dtype)? {
            Some(logical) => self.cast(logical)?,
            None => self.clone(),
        };
        let result = run("cumprod", || source.tensor.cumprod(dim))?;
        Ok(source.derived(result))
    }
    /// Sorted values and their indices along `dim`.
    #[pyo3(signature = (dim=-1, descending=false))]
    fn sort(&self, dim: isize, descending: bool) -> PyResult<(PyTensor, PyTensor)> {
        let (values, indices) = run("sort", || self.tensor.sort(dim, descending))?;
        Ok((self.derived(values), PyTensor::wrap(indices)))
    }
    /// Indices that sort along `dim`.
    #[pyo3(signature = (dim=-1, descending=false))]
    fn argsort(&self, dim: isize, descending: bool) -> PyResult<PyTensor> {
        Ok(PyTensor::wrap(run("argsort", || {
            self.tensor.argsort(dim, descending)
        })?))
    }
    /// The `k` largest (or smallest) values and their indices along `dim`.
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(
        &self,
        k: usize,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let (values, indices) = run("topk", || self.tensor.topk(k, dim, largest, sorted))?;
        Ok((self.derived(values), PyTensor::wrap(indices)))
    }
    /// One-hot rows of `num_classes` (int64).
    #[pyo3(signature = (num_classes=-1))]
    fn _one_hot(&self, py: Python<'_>, num_classes: i64) -> PyResult<PyTensor> {
        if self.tensor.dtype().is_float() {
            return Err(crate::errors::runtime_error(
                "one_hot",
                "one_hot is only applicable to index tensors",
            ));
        }
        let values = self.values_f64(py)?;
        if values.iter().any(|&v| v < 0.0) {
            return Err(crate::errors::runtime_error(
                "one_hot",
                "class values must be non-negative",
            ));
        }
        let largest = values.iter().fold(-1.0f64, |a, &b| a.max(b));
        let classes = if num_classes < 0 {
            (largest + 1.0) as usize
        } else {
            if largest >= num_classes as f64 {
                return Err(crate::errors::runtime_error(
                    "one_hot",
                    format!("class values must be smaller than num_classes ({num_classes})"),
                ));
            }
            num_classes as usize
        };
        Ok(PyTensor::wrap(run("one_hot", || {
            self.tensor.one_hot(classes, DType::I32)
        })?))
    }
}

/// `on_true` where `condition` holds, `on_false` elsewhere (`torch.where`); either branch
/// may be a number.
#[pyfunction]
#[pyo3(name = "where_")]
pub fn where_(
    condition: &Bound<'_, PyAny>,
    on_true: &Bound<'_, PyAny>,
    on_false: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    const OP: &str = "where";
    let condition = tensor_arg(OP, "condition", condition)?;
    let device = condition.tensor.device().clone();
    let branch = |value: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>| -> PyResult<PyTensor> {
        match operand(value) {
            Some(Operand::Tensor(tensor)) => Ok(tensor),
            Some(Operand::Scalar(number, kind)) => {
                let dtype = match operand(other) {
                    Some(Operand::Tensor(tensor)) => tensor.tensor.dtype(),
                    _ => match kind {
                        crate::operators::ScalarKind::Float => DType::F32,
                        crate::operators::ScalarKind::Int => DType::I32,
                        crate::operators::ScalarKind::Bool => DType::Bool,
                    },
                };
                Ok(PyTensor::wrap(run(OP, || {
                    Tensor::scalar(number, dtype, &device)
                })?))
            }
            None => Err(crate::errors::type_error(
                OP,
                format!("expected a tensor or a number, got {value}"),
            )),
        }
    };
    let a = branch(on_true, on_false)?;
    let b = branch(on_false, on_true)?;
    let result = run(OP, || {
        // Zero-dim tensors on another device join the condition's (PyTorch's CPU scalars).
        let (_, on_true) = match_devices(&condition.tensor, &a.tensor)?;
        let (_, on_false) = match_devices(&condition.tensor, &b.tensor)?;
        Tensor::where_(&condition.tensor, &on_true, &on_false)
    })?;
    Ok(a.derived(result))
}

/// Register the module functions of this file.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(where_, module)?)?;
    Ok(())
}

//! Python's operators on tensors (`+ - * / // % ** @`, their reversed and in-place forms,
//! comparisons, `~ & | ^`, unary `-`/`+`/`abs`) and their method spellings (`add`, `sub`,
//! `mul`, `div`, `pow`, `eq`, ...), with Python numbers and tensors on either side.
//!
//! Types follow PyTorch: a float scalar makes an integer tensor float32, `/` is true
//! division (integers give float32), `//` floors and `%` takes the divisor's sign. In-place
//! forms write into the tensor's storage (views see the change) outside autograd; where a
//! gradient is being recorded through a non-leaf tensor they rebind it to the result instead,
//! so the graph stays right.

use anygrad::op::BinaryOp;
use anygrad::{DType, Tensor};
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use crate::dtype::Logical;
use crate::errors::{run, runtime_error, type_error};
use crate::tensor::PyTensor;

/// The other operand of a binary operator.
pub enum Operand {
    /// A tensor.
    Tensor(PyTensor),
    /// A Python number with the kind PyTorch infers for it.
    Scalar(f64, ScalarKind),
}

/// The kind of a Python scalar (what it promotes an integer or bool tensor to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    /// `True` / `False`.
    Bool,
    /// An int.
    Int,
    /// A float.
    Float,
}

/// The operand `value` stands for, or `None` when it is not a tensor or a number.
pub fn operand(value: &Bound<'_, PyAny>) -> Option<Operand> {
    if let Ok(tensor) = value.downcast::<PyTensor>() {
        return Some(Operand::Tensor(tensor.borrow().clone()));
    }
    if value.downcast::<PyBool>().is_ok() {
        return value
            .extract::<bool>()
            .ok()
            .map(|b| Operand::Scalar(if b { 1.0 } else { 0.0 }, ScalarKind::Bool));
    }
    if value.downcast::<PyInt>().is_ok() {
        return value
            .extract::<i64>()
            .ok()
            .map(|v| Operand::Scalar(v as f64, ScalarKind::Int));
    }
    if value.downcast::<PyFloat>().is_ok() {
        return value
            .extract::<f64>()
            .ok()
            .map(|v| Operand::Scalar(v, ScalarKind::Float));
    }
    // numpy scalars and other numbers: integers through __index__, the rest through __float__.
    if let Ok(v) = value.extract::<i64>() {
        return Some(Operand::Scalar(v as f64, ScalarKind::Int));
    }
    value
        .extract::<f64>()
        .ok()
        .map(|v| Operand::Scalar(v, ScalarKind::Float))
}

/// The operand, or the `TypeError` PyTorch raises for an unsupported type.
fn required_operand(op: &str, value: &Bound<'_, PyAny>) -> PyResult<Operand> {
    operand(value).ok_or_else(|| {
        let name = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        type_error(op, format!("unsupported operand type: Tensor and {name}"))
    })
}

/// The dtype a tensor computes in with a scalar of `kind` (PyTorch: a float scalar makes an
/// integer tensor float32; an int scalar makes a bool tensor int64).
fn scalar_promotion(dtype: DType, kind: ScalarKind) -> Option<DType> {
    match kind {
        ScalarKind::Float if !dtype.is_float() => Some(DType::F32),
        ScalarKind::Int if dtype == DType::Bool => Some(DType::I32),
        _ => None,
    }
}

/// Which arithmetic a binary operator does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// A library primitive.
    Primitive(BinaryOp),
    /// True division (`/`).
    TrueDiv,
    /// Floor division (`//`).
    FloorDiv,
    /// Python's modulo (`%`).
    Remainder,
}

/// `lhs op rhs` (or `rhs op lhs` when `reversed`), with PyTorch's types.
pub fn arith(
    op_name: &str,
    lhs: &PyTensor,
    rhs: Operand,
    arith: Arith,
    reversed: bool,
) -> PyResult<PyTensor> {
    if let Operand::Scalar(value, ScalarKind::Int | ScalarKind::Bool) = rhs {
        let integer = !lhs.tensor.dtype().is_float();
        if integer
            && !reversed
            && value == 0.0
            && matches!(arith, Arith::FloorDiv | Arith::Remainder)
        {
            return Err(runtime_error(
                op_name,
                "ZeroDivisionError: integer division by zero",
            ));
        }
        if integer && !reversed && value < 0.0 && arith == Arith::Primitive(BinaryOp::Pow) {
            return Err(runtime_error(
                op_name,
                "integers to negative integer powers are not allowed",
            ));
        }
    }
    let int32 = lhs.int32;
    let result = run(op_name, || {
        let base = &lhs.tensor;
        match rhs {
            Operand::Scalar(value, kind) => {
                let mut x = match scalar_promotion(base.dtype(), kind) {
                    Some(dtype) => base.to_dtype(dtype)?,
                    None => base.clone(),
                };
                if matches!(arith, Arith::TrueDiv | Arith::FloorDiv | Arith::Remainder)
                    && !x.dtype().is_float()
                {
                    let integer = x.dtype();
                    x = x.to_dtype(DType::F32)?;
                    if arith != Arith::TrueDiv {
                        let out = scalar_division(&x, value, arith, reversed)?;
                        return out.to_dtype(integer);
                    }
                }
                match arith {
                    Arith::Primitive(op) => x.binary_scalar(op, value, reversed),
                    _ => scalar_division(&x, value, arith, reversed),
                }
            }
            Operand::Tensor(other) => {
                let (base, other) = match_devices(base, &other.tensor)?;
                let (a, b) = if reversed {
                    (&other, &base)
                } else {
                    (&base, &other)
                };
                match arith {
                    Arith::Primitive(op) => a.binary(b, op),
                    _ => {
                        let integer = !a.dtype().is_float() && !b.dtype().is_float();
                        let (fa, fb) = if integer {
                            (a.to_dtype(DType::F32)?, b.to_dtype(DType::F32)?)
                        } else {
                            (a.clone(), b.clone())
                        };
                        let quotient = fa.div(&fb)?;
                        let out = match arith {
                            Arith::TrueDiv => return Ok(quotient),
                            Arith::FloorDiv => quotient.floor()?,
                            _ => fa.sub(&quotient.floor()?.mul(&fb)?)?,
                        };
                        if integer {
                            out.to_dtype(a.dtype().max_integer(b.dtype()))
                        } else {
                            Ok(out)
                        }
                    }
                }
            }
        }
    })?;
    Ok(PyTensor {
        int32: int32 && result.dtype() == DType::I32,
        tensor: result,
    })
}

/// `/`, `//` or `%` between float tensor `x` and `value`.
fn scalar_division(
    x: &Tensor,
    value: f64,
    arith: Arith,
    reversed: bool,
) -> anygrad::Result<Tensor> {
    let quotient = x.binary_scalar(BinaryOp::Div, value, reversed)?;
    match arith {
        Arith::FloorDiv => quotient.floor(),
        Arith::Remainder => {
            let floored = quotient.floor()?;
            if reversed {
                // value - floor(value / x) * x
                floored.mul(x)?.rsub_scalar(value)
            } else {
                x.sub(&floored.mul_scalar(value)?)
            }
        }
        _ => Ok(quotient),
    }
}

/// The operands on one device: a zero-dim tensor on another device joins the other operand's
/// (as PyTorch lets a CPU scalar tensor meet a GPU tensor on either side); other device mixes
/// stay an error of the op.
pub fn match_devices(base: &Tensor, other: &Tensor) -> anygrad::Result<(Tensor, Tensor)> {
    if other.device() == base.device() {
        return Ok((base.clone(), other.clone()));
    }
    if other.rank() == 0 {
        Ok((base.clone(), other.to_device(base.device())?))
    } else if base.rank() == 0 {
        Ok((base.to_device(other.device())?, other.clone()))
    } else {
        Ok((base.clone(), other.clone()))
    }
}

/// Helper trait: the wider of two integer dtypes (for `//` and `%` on integers).
trait IntegerWidth {
    fn max_integer(self, other: DType) -> DType;
}

impl IntegerWidth for DType {
    fn max_integer(self, other: DType) -> DType {
        let rank = |d: DType| match d {
            DType::Bool => 0,
            DType::U8 => 1,
            DType::I32 => 2,
            _ => 3,
        };
        let widest = if rank(self) >= rank(other) {
            self
        } else {
            other
        };
        if widest == DType::Bool {
            DType::I32
        } else {
            widest
        }
    }
}

/// A comparison: Bool result.
fn compare(lhs: &PyTensor, rhs: Operand, op: BinaryOp) -> PyResult<PyTensor> {
    let name = op.name();
    let result = run(name, || match rhs {
        Operand::Scalar(value, kind) => {
            let x = match scalar_promotion(lhs.tensor.dtype(), kind) {
                Some(dtype) if dtype.is_float() => lhs.tensor.to_dtype(dtype)?,
                _ => lhs.tensor.clone(),
            };
            x.binary_scalar(op, value, false)
        }
        Operand::Tensor(other) => {
            let (base, other) = match_devices(&lhs.tensor, &other.tensor)?;
            base.binary(&other, op)
        }
    })?;
    Ok(PyTensor::wrap(result))
}

/// A bit operator (`&`, `|`, `^`, `<<`, `>>`) on integer or bool tensors, with PyTorch's types
/// (a bool tensor with an int gives an integer; bools stay bools); float operands are a
/// `TypeError` naming the op.
fn bitwise(op: BinaryOp, lhs: &PyTensor, rhs: Operand, reversed: bool) -> PyResult<PyTensor> {
    arith(op.name(), lhs, rhs, Arith::Primitive(op), reversed)
}

impl PyTensor {
    /// The in-place form of an op: write `result` into this tensor (see the module docs).
    pub fn apply_in_place(&mut self, op: &str, result: PyTensor) -> PyResult<()> {
        let mut result = result.tensor;
        if result.dtype() != self.tensor.dtype() {
            if result.dtype().is_float() && !self.tensor.dtype().is_float() {
                return Err(runtime_error(
                    op,
                    format!(
                        "result type {} can't be cast to the desired output type {}",
                        Logical::of(result.dtype(), false).name(),
                        self.logical().name()
                    ),
                ));
            }
            result = run(op, || result.to_dtype(self.tensor.dtype()))?;
        }
        let recording =
            anygrad::is_grad_enabled() && (self.tensor.requires_grad() || result.requires_grad());
        if recording {
            if self.tensor.is_leaf() && self.tensor.requires_grad() {
                return Err(runtime_error(
                    op,
                    "a leaf Variable that requires grad is being used in an in-place operation",
                ));
            }
            if result.shape() != self.tensor.shape() {
                return Err(runtime_error(
                    op,
                    format!(
                        "output with shape {:?} doesn't match the broadcast shape {:?}",
                        self.tensor.shape(),
                        result.shape()
                    ),
                ));
            }
            self.tensor = result;
            return Ok(());
        }
        let source = if result.shape() != self.tensor.shape() {
            run(op, || result.broadcast_to(self.tensor.shape())).map_err(|_| {
                runtime_error(
                    op,
                    format!(
                        "output with shape {:?} doesn't match the broadcast shape {:?}",
                        self.tensor.shape(),
                        result.shape()
                    ),
                )
            })?
        } else {
            result
        };
        let source = run(op, || source.detach().contiguous())?;
        run(op, || self.tensor.assign(&source))
    }

    /// `self op other`.
    fn binary_op(
        &self,
        op: &str,
        other: &Bound<'_, PyAny>,
        kind: Arith,
        reversed: bool,
    ) -> PyResult<PyTensor> {
        arith(op, self, required_operand(op, other)?, kind, reversed)
    }

    /// `self op= other`.
    fn in_place_op(&mut self, op: &str, other: &Bound<'_, PyAny>, kind: Arith) -> PyResult<()> {
        let result = self.binary_op(op, other, kind, false)?;
        self.apply_in_place(op, result)
    }
}

#[pymethods]
impl PyTensor {
    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("add", other, Arith::Primitive(BinaryOp::Add), false)
    }
    fn __radd__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("add", other, Arith::Primitive(BinaryOp::Add), true)
    }
    fn __sub__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("sub", other, Arith::Primitive(BinaryOp::Sub), false)
    }
    fn __rsub__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("sub", other, Arith::Primitive(BinaryOp::Sub), true)
    }
    fn __mul__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("mul", other, Arith::Primitive(BinaryOp::Mul), false)
    }
    fn __rmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("mul", other, Arith::Primitive(BinaryOp::Mul), true)
    }
    fn __truediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("div", other, Arith::TrueDiv, false)
    }
    fn __rtruediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("div", other, Arith::TrueDiv, true)
    }
    fn __floordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("floor_divide", other, Arith::FloorDiv, false)
    }
    fn __rfloordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("floor_divide", other, Arith::FloorDiv, true)
    }
    fn __mod__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("remainder", other, Arith::Remainder, false)
    }
    fn __rmod__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.binary_op("remainder", other, Arith::Remainder, true)
    }
    fn __pow__(
        &self,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(type_error("pow", "three-argument pow() is not supported"));
        }
        self.binary_op("pow", other, Arith::Primitive(BinaryOp::Pow), false)
    }
    fn __rpow__(
        &self,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(type_error("pow", "three-argument pow() is not supported"));
        }
        self.binary_op("pow", other, Arith::Primitive(BinaryOp::Pow), true)
    }
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let other = crate::tensor::tensor_arg("matmul", "other", other)?;
        other.matmul(py, &self.clone().into_pyobject(py)?.into_any())
    }
    fn __iadd__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.in_place_op("add_", other, Arith::Primitive(BinaryOp::Add))
    }
    fn __isub__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.in_place_op("sub_", other, Arith::Primitive(BinaryOp::Sub))
    }
    fn __imul__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.in_place_op("mul_", other, Arith::Primitive(BinaryOp::Mul))
    }
    fn __itruediv__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.in_place_op("div_", other, Arith::TrueDiv)
    }
    fn __ifloordiv__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.in_place_op("floor_divide_", other, Arith::FloorDiv)
    }
    fn __imod__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.in_place_op("remainder_", other, Arith::Remainder)
    }
    fn __ipow__(
        &mut self,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = modulo;
        self.in_place_op("pow_", other, Arith::Primitive(BinaryOp::Pow))
    }
    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<PyObject> {
        let py = other.py();
        let Some(rhs) = operand(other) else {
            // `tensor == "text"` is False (and != True) as in PyTorch's fallback to identity.
            return match op {
                CompareOp::Eq => Ok(false.into_pyobject(py)?.to_owned().into_any().unbind()),
                CompareOp::Ne => Ok(true.into_pyobject(py)?.to_owned().into_any().unbind()),
                _ => Err(type_error(
                    "compare",
                    format!(
                        "'<' not supported between Tensor and {}",
                        other.get_type().name()?
                    ),
                )),
            };
        };
        let binary = match op {
            CompareOp::Eq => BinaryOp::Eq,
            CompareOp::Ne => BinaryOp::Ne,
            CompareOp::Lt => BinaryOp::Lt,
            CompareOp::Le => BinaryOp::Le,
            CompareOp::Gt => BinaryOp::Gt,
            CompareOp::Ge => BinaryOp::Ge,
        };
        Ok(compare(self, rhs, binary)?
            .into_pyobject(py)?
            .into_any()
            .unbind())
    }
    fn __neg__(&self) -> PyResult<PyTensor> {
        if self.tensor.dtype() == DType::Bool {
            return Err(type_error(
                "neg",
                "negation, the `-` operator, on a bool tensor is not supported; use `~`",
            ));
        }
        Ok(self.derived(run("neg", || self.tensor.neg())?))
    }
    fn __pos__(&self) -> PyTensor {
        self.clone()
    }
    fn __abs__(&self) -> PyResult<PyTensor> {
        Ok(self.derived(run("abs", || self.tensor.abs())?))
    }
    fn __invert__(&self) -> PyResult<PyTensor> {
        Ok(self.derived(run("bitwise_not", || self.tensor.bitwise_not())?))
    }
    fn __and__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseAnd,
            self,
            required_operand("__and__", other)?,
            false,
        )
    }
    fn __rand__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseAnd,
            self,
            required_operand("__and__", other)?,
            true,
        )
    }
    fn __or__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseOr,
            self,
            required_operand("__or__", other)?,
            false,
        )
    }
    fn __ror__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseOr,
            self,
            required_operand("__or__", other)?,
            true,
        )
    }
    fn __xor__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseXor,
            self,
            required_operand("__xor__", other)?,
            false,
        )
    }
    fn __rxor__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseXor,
            self,
            required_operand("__xor__", other)?,
            true,
        )
    }
    fn __iand__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let result = bitwise(
            BinaryOp::BitwiseAnd,
            self,
            required_operand("__iand__", other)?,
            false,
        )?;
        self.apply_in_place("__iand__", result)
    }
    fn __ior__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let result = bitwise(
            BinaryOp::BitwiseOr,
            self,
            required_operand("__ior__", other)?,
            false,
        )?;
        self.apply_in_place("__ior__", result)
    }
    fn __ixor__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let result = bitwise(
            BinaryOp::BitwiseXor,
            self,
            required_operand("__ixor__", other)?,
            false,
        )?;
        self.apply_in_place("__ixor__", result)
    }
    fn __lshift__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::ShiftLeft,
            self,
            required_operand("__lshift__", other)?,
            false,
        )
    }
    fn __rlshift__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::ShiftLeft,
            self,
            required_operand("__lshift__", other)?,
            true,
        )
    }
    fn __ilshift__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let result = bitwise(
            BinaryOp::ShiftLeft,
            self,
            required_operand("__ilshift__", other)?,
            false,
        )?;
        self.apply_in_place("__ilshift__", result)
    }
    fn __rshift__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::ShiftRight,
            self,
            required_operand("__rshift__", other)?,
            false,
        )
    }
    fn __rrshift__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::ShiftRight,
            self,
            required_operand("__rshift__", other)?,
            true,
        )
    }
    fn __irshift__(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let result = bitwise(
            BinaryOp::ShiftRight,
            self,
            required_operand("__irshift__", other)?,
            false,
        )?;
        self.apply_in_place("__irshift__", result)
    }

    /// `self & other` (`torch.bitwise_and`): integer or bool tensors.
    fn bitwise_and(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseAnd,
            self,
            required_operand("bitwise_and", other)?,
            false,
        )
    }
    /// `self | other` (`torch.bitwise_or`): integer or bool tensors.
    fn bitwise_or(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseOr,
            self,
            required_operand("bitwise_or", other)?,
            false,
        )
    }
    /// `self ^ other` (`torch.bitwise_xor`): integer or bool tensors.
    fn bitwise_xor(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::BitwiseXor,
            self,
            required_operand("bitwise_xor", other)?,
            false,
        )
    }
    /// `self << other` (`torch.bitwise_left_shift`): integer tensors.
    fn bitwise_left_shift(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::ShiftLeft,
            self,
            required_operand("bitwise_left_shift", other)?,
            false,
        )
    }
    /// `self >> other` (`torch.bitwise_right_shift`): integer tensors, arithmetic when signed.
    fn bitwise_right_shift(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        bitwise(
            BinaryOp::ShiftRight,
            self,
            required_operand("bitwise_right_shift", other)?,
            false,
        )
    }
    /// `~self` (`torch.bitwise_not`): every bit flipped, or logical not of a bool tensor.
    fn bitwise_not(&self) -> PyResult<PyTensor> {
        self.__invert__()
    }

    /// `self + alpha * other`.
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<f64>,
    ) -> PyResult<PyTensor> {
        match alpha {
            Some(alpha) if alpha != 1.0 => {
                let scaled = self.scaled_operand(py, other, alpha)?;
                self.__add__(scaled.bind(py))
            }
            _ => self.__add__(other),
        }
    }
    /// `self - alpha * other`.
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<f64>,
    ) -> PyResult<PyTensor> {
        match alpha {
            Some(alpha) if alpha != 1.0 => {
                let scaled = self.scaled_operand(py, other, alpha)?;
                self.__sub__(scaled.bind(py))
            }
            _ => self.__sub__(other),
        }
    }
    /// `self * other`.
    fn mul(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.__mul__(other)
    }
    /// `self / other` (`rounding_mode="floor"` for `//`).
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(&self, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyTensor> {
        match rounding_mode {
            None => self.__truediv__(other),
            Some("floor") => self.__floordiv__(other),
            Some(mode) => Err(crate::errors::value_error(
                "div",
                format!("rounding_mode {mode:?} is not supported (None or \"floor\")"),
            )),
        }
    }
    /// `self / other`.
    fn true_divide(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.__truediv__(other)
    }
    /// `self // other`.
    fn floor_divide(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.__floordiv__(other)
    }
    /// `self % other`.
    fn remainder(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.__mod__(other)
    }
    /// `self ** exponent`.
    fn pow(&self, exponent: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.__pow__(exponent, None)
    }
    /// `self == other`, elementwise.
    fn eq(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        compare(self, required_operand("eq", other)?, BinaryOp::Eq)
    }
    /// `self != other`, elementwise.
    fn ne(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        compare(self, required_operand("ne", other)?, BinaryOp::Ne)
    }
    /// `self < other`, elementwise.
    fn lt(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        compare(self, required_operand("lt", other)?, BinaryOp::Lt)
    }
    /// `self <= other`, elementwise.
    fn le(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        compare(self, required_operand("le", other)?, BinaryOp::Le)
    }
    /// `self > other`, elementwise.
    fn gt(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        compare(self, required_operand("gt", other)?, BinaryOp::Gt)
    }
    /// `self >= other`, elementwise.
    fn ge(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        compare(self, required_operand("ge", other)?, BinaryOp::Ge)
    }
    /// The elementwise maximum with another tensor.
    pub fn maximum(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        arith(
            "maximum",
            self,
            required_operand("maximum", other)?,
            Arith::Primitive(BinaryOp::Maximum),
            false,
        )
    }
    /// The elementwise minimum with another tensor.
    pub fn minimum(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        arith(
            "minimum",
            self,
            required_operand("minimum", other)?,
            Arith::Primitive(BinaryOp::Minimum),
            false,
        )
    }
    /// Logical not (bool result).
    fn logical_not(&self) -> PyResult<PyTensor> {
        Ok(PyTensor::wrap(run("logical_not", || {
            self.tensor.eq_scalar(0.0)
        })?))
    }
    /// In place: `self += alpha * other`.
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(
        mut slf: PyRefMut<'py, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<f64>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = other.py();
        let result = slf.add(py, other, alpha)?;
        slf.apply_in_place("add_", result)?;
        Ok(slf)
    }
    /// In place: `self -= alpha * other`.
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_<'py>(
        mut slf: PyRefMut<'py, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<f64>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = other.py();
        let result = slf.sub(py, other, alpha)?;
        slf.apply_in_place("sub_", result)?;
        Ok(slf)
    }
    /// In place: `self *= other`.
    fn mul_<'py>(
        mut slf: PyRefMut<'py, Self>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.in_place_op("mul_", other, Arith::Primitive(BinaryOp::Mul))?;
        Ok(slf)
    }
    /// In place: `self /= other`.
    fn div_<'py>(
        mut slf: PyRefMut<'py, Self>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.in_place_op("div_", other, Arith::TrueDiv)?;
        Ok(slf)
    }
    /// In place: `self **= exponent`.
    fn pow_<'py>(
        mut slf: PyRefMut<'py, Self>,
        exponent: &Bound<'_, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.in_place_op("pow_", exponent, Arith::Primitive(BinaryOp::Pow))?;
        Ok(slf)
    }
}

impl PyTensor {
    /// `alpha * other` as a Python object (for `add`/`sub` with `alpha`).
    fn scaled_operand(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: f64,
    ) -> PyResult<PyObject> {
        match required_operand("add", other)? {
            Operand::Scalar(value, _) => Ok((value * alpha).into_pyobject(py)?.into_any().unbind()),
            Operand::Tensor(tensor) => Ok(arith(
                "mul",
                &tensor,
                Operand::Scalar(alpha, ScalarKind::Float),
                Arith::Primitive(BinaryOp::Mul),
                false,
            )?
            .into_pyobject(py)?
            .into_any()
            .unbind()),
        }
    }
}

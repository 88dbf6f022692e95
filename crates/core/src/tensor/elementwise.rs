//! Elementwise tensor ops: unary maths, binary ops with NumPy/PyTorch broadcasting, scalar
//! variants, comparisons and `where_`. Broadcasting is done here with stride-0 views, so the
//! backends only ever see equal shapes, and the broadcast is an ordinary recorded view whose
//! gradient (a sum over the stretched dims) autograd already knows.

use std::sync::{Arc, RwLock};

use super::promotion::{promote_types, result_type};
use super::Tensor;
use crate::autograd::GradFn;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};
use crate::shape::broadcast_shapes;

macro_rules! unary_methods {
    ($($name:ident => $op:expr, $doc:literal;)*) => {
        impl Tensor {
            $(
                #[doc = $doc]
                pub fn $name(&self) -> Result<Tensor> {
                    self.unary($op)
                }
            )*
        }
    };
}

unary_methods! {
    neg => UnaryOp::Neg, "Elementwise `-x`.";
    abs => UnaryOp::Abs, "Elementwise `|x|`.";
    sign => UnaryOp::Sign, "Elementwise sign (-1, 0 or 1).";
    floor => UnaryOp::Floor, "Elementwise floor (the largest whole number not above `x`).";
    ceil => UnaryOp::Ceil, "Elementwise ceiling (the smallest whole number not below `x`).";
    round => UnaryOp::Round, "Elementwise rounding to the nearest whole number, halves to even (`torch.round`).";
    trunc => UnaryOp::Trunc, "Elementwise truncation toward zero.";
    exp => UnaryOp::Exp, "Elementwise `e^x`.";
    log => UnaryOp::Log, "Elementwise natural logarithm.";
    sqrt => UnaryOp::Sqrt, "Elementwise square root.";
    rsqrt => UnaryOp::Rsqrt, "Elementwise `1/sqrt(x)`.";
    recip => UnaryOp::Recip, "Elementwise `1/x`.";
    sin => UnaryOp::Sin, "Elementwise sine.";
    cos => UnaryOp::Cos, "Elementwise cosine.";
    tanh => UnaryOp::Tanh, "Elementwise hyperbolic tangent.";
    sigmoid => UnaryOp::Sigmoid, "Elementwise logistic sigmoid.";
    relu => UnaryOp::Relu, "Elementwise `max(x, 0)`.";
    gelu => UnaryOp::Gelu, "Elementwise GELU (the exact erf form, PyTorch's default).";
    erf => UnaryOp::Erf, "Elementwise error function.";
    silu => UnaryOp::Silu, "Elementwise SiLU (swish): `x * sigmoid(x)`.";
}

macro_rules! binary_methods {
    ($($name:ident, $scalar_name:ident => $op:expr, $doc:literal;)*) => {
        impl Tensor {
            $(
                #[doc = $doc]
                #[doc = ""]
                #[doc = "Operands broadcast like NumPy/PyTorch."]
                pub fn $name(&self, rhs: &Tensor) -> Result<Tensor> {
                    self.binary(rhs, $op)
                }

                #[doc = $doc]
                #[doc = ""]
                #[doc = "The right operand is a scalar."]
                pub fn $scalar_name(&self, scalar: f64) -> Result<Tensor> {
                    self.binary_scalar($op, scalar, false)
                }
            )*
        }
    };
}

binary_methods! {
    add, add_scalar => BinaryOp::Add, "Elementwise sum.";
    sub, sub_scalar => BinaryOp::Sub, "Elementwise difference.";
    mul, mul_scalar => BinaryOp::Mul, "Elementwise product.";
    div, div_scalar => BinaryOp::Div, "Elementwise quotient.";
    maximum, maximum_scalar => BinaryOp::Maximum, "Elementwise maximum (NaN propagates).";
    minimum, minimum_scalar => BinaryOp::Minimum, "Elementwise minimum (NaN propagates).";
    pow, pow_scalar => BinaryOp::Pow, "Elementwise power.";
    eq, eq_scalar => BinaryOp::Eq, "Elementwise `==` (Bool result).";
    ne, ne_scalar => BinaryOp::Ne, "Elementwise `!=` (Bool result).";
    lt, lt_scalar => BinaryOp::Lt, "Elementwise `<` (Bool result).";
    le, le_scalar => BinaryOp::Le, "Elementwise `<=` (Bool result).";
    gt, gt_scalar => BinaryOp::Gt, "Elementwise `>` (Bool result).";
    ge, ge_scalar => BinaryOp::Ge, "Elementwise `>=` (Bool result).";
    bitwise_and, bitwise_and_scalar => BinaryOp::BitwiseAnd, "Elementwise `&` of integer or Bool tensors.";
    bitwise_or, bitwise_or_scalar => BinaryOp::BitwiseOr, "Elementwise `|` of integer or Bool tensors.";
    bitwise_xor, bitwise_xor_scalar => BinaryOp::BitwiseXor, "Elementwise `^` of integer or Bool tensors.";
    bitwise_left_shift, bitwise_left_shift_scalar => BinaryOp::ShiftLeft, "Elementwise `<<` of integer tensors (bits past the dtype's width are lost; a negative amount or one of 64 or more gives 0).";
    bitwise_right_shift, bitwise_right_shift_scalar => BinaryOp::ShiftRight, "Elementwise `>>` of integer tensors, arithmetic for signed dtypes.";
}

impl Tensor {
    /// Elementwise `~x` of an integer tensor (every bit flipped), or logical not of a Bool one.
    pub fn bitwise_not(&self) -> Result<Tensor> {
        let ones = if self.dtype() == DType::Bool {
            1.0
        } else {
            -1.0
        };
        self.bitwise_xor_scalar(ones)
    }
}

impl Tensor {
    /// Apply a unary primitive.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        // A dense view in another order (a channels-last activation) runs as one flat run and
        // keeps its strides (`Layout::kept_order`).
        let (view, layout) = self.layout().elementwise_views();
        let storage = Arc::new(RwLock::new(self.storage().unary(&view, op)?));
        let grad_fn = Tensor::record(&[self], self.dtype(), || {
            if op.derivative_from_output() {
                GradFn::UnaryFromOutput {
                    input: self.clone(),
                    output: Tensor::from_view(storage.clone(), layout.clone(), None),
                    op,
                }
            } else {
                GradFn::Unary {
                    input: self.clone(),
                    op,
                }
            }
        });
        Ok(Tensor::from_view(storage, layout, grad_fn))
    }

    /// Apply a binary primitive with broadcasting.
    pub fn binary(&self, rhs: &Tensor, op: BinaryOp) -> Result<Tensor> {
        self.same_device(op.name(), rhs)?;
        if self.dtype() != rhs.dtype() {
            // Mixed dtypes compute in their common dtype, as in PyTorch (`promotion.rs`): an
            // f16 matmul output plus an f32 bias under autocast runs in f32, I32 predictions
            // compared with U8 labels in I32, a float times a Bool mask in the float.
            let common = match promote_types(self.dtype(), rhs.dtype()) {
                Some(common) => common,
                None if op.is_comparison() => return self.compare_unsigned_signed(rhs, op),
                None => {
                    return Err(Error::DTypeMismatch {
                        op: op.name(),
                        lhs: self.dtype(),
                        rhs: rhs.dtype(),
                    })
                }
            };
            return self.to_dtype(common)?.binary(&rhs.to_dtype(common)?, op);
        }
        let shape = broadcast_shapes(op.name(), self.shape(), rhs.shape())?;
        let lhs = self.broadcast_to(&shape)?;
        let rhs = rhs.broadcast_to(&shape)?;
        // Operands in one dense order other than row-major run as flat runs and the result
        // keeps that order (`Layout::kept_order`).
        let (views, layout) = match Layout::kept_order(&[lhs.layout(), rhs.layout()]) {
            Some((runs, kept)) => (runs, kept),
            None => (
                vec![lhs.layout().clone(), rhs.layout().clone()],
                Layout::contiguous(&shape),
            ),
        };
        let storage = {
            let (l, r) = (lhs.storage(), rhs.storage());
            l.binary(&views[0], &r, &views[1], op)?
        };
        let result_dtype = if op.is_comparison() {
            DType::Bool
        } else {
            self.dtype()
        };
        let grad_fn = Tensor::record(&[&lhs, &rhs], result_dtype, || GradFn::Binary {
            lhs: lhs.clone(),
            rhs: rhs.clone(),
            op,
        });
        Ok(Tensor::from_view(
            Arc::new(RwLock::new(storage)),
            layout,
            grad_fn,
        ))
    }

    /// Apply a binary primitive with a scalar operand (`scalar op x` when `scalar_on_left`).
    pub fn binary_scalar(&self, op: BinaryOp, scalar: f64, scalar_on_left: bool) -> Result<Tensor> {
        let (view, layout) = self.layout().elementwise_views();
        let storage = self
            .storage()
            .binary_scalar(&view, op, scalar, scalar_on_left)?;
        let result_dtype = if op.is_comparison() {
            DType::Bool
        } else {
            self.dtype()
        };
        let grad_fn = Tensor::record(&[self], result_dtype, || GradFn::BinaryScalar {
            input: self.clone(),
            op,
            scalar,
            scalar_on_left,
        });
        Ok(Tensor::from_view(
            Arc::new(RwLock::new(storage)),
            layout,
            grad_fn,
        ))
    }

    /// `scalar - x`.
    pub fn rsub_scalar(&self, scalar: f64) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Sub, scalar, true)
    }

    /// `scalar / x`.
    pub fn rdiv_scalar(&self, scalar: f64) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Div, scalar, true)
    }

    /// Elementwise `x²`.
    pub fn square(&self) -> Result<Tensor> {
        self.mul(self)
    }

    /// Clamp every element into `[min, max]`.
    pub fn clamp(&self, min: f64, max: f64) -> Result<Tensor> {
        if min > max {
            return Err(Error::invalid(
                "clamp",
                format!("min {min} is greater than max {max}"),
            ));
        }
        self.maximum_scalar(min)?.minimum_scalar(max)
    }

    /// `condition ? on_true : on_false` elementwise, with broadcasting of all three.
    pub fn where_(condition: &Tensor, on_true: &Tensor, on_false: &Tensor) -> Result<Tensor> {
        on_true.same_device("where", condition)?;
        on_true.same_device("where", on_false)?;
        if on_true.dtype() != on_false.dtype() {
            // The two branches meet in their common dtype, as PyTorch's `where`.
            let common = result_type("where", on_true.dtype(), on_false.dtype())?;
            return Tensor::where_(
                condition,
                &on_true.to_dtype(common)?,
                &on_false.to_dtype(common)?,
            );
        }
        let shape = broadcast_shapes("where", on_true.shape(), on_false.shape())?;
        let shape = broadcast_shapes("where", condition.shape(), &shape)?;
        let condition = condition.detach().broadcast_to(&shape)?;
        let on_true = on_true.broadcast_to(&shape)?;
        let on_false = on_false.broadcast_to(&shape)?;
        let storage = {
            let (c, t, f) = (condition.storage(), on_true.storage(), on_false.storage());
            c.where_select(
                condition.layout(),
                &t,
                on_true.layout(),
                &f,
                on_false.layout(),
            )?
        };
        let grad_fn = Tensor::record(&[&on_true, &on_false], on_true.dtype(), || GradFn::Where {
            condition: condition.clone(),
            on_true: on_true.clone(),
            on_false: on_false.clone(),
        });
        Ok(Tensor::from_storage(storage, &shape, grad_fn))
    }
}

/// The wider of two different float dtypes (`None` when equal or not both floats); F16 with
/// BF16 is F32, as PyTorch promotes them (neither holds the other's values).
pub(crate) fn float_promotion(a: DType, b: DType) -> Option<DType> {
    if a == b || !a.is_float() || !b.is_float() {
        return None;
    }
    if matches!(
        (a, b),
        (DType::F16, DType::BF16) | (DType::BF16, DType::F16)
    ) {
        return Some(DType::F32);
    }
    let rank = |d: DType| match d {
        DType::F16 | DType::BF16 => 0,
        DType::F32 => 1,
        DType::F64 => 2,
        DType::I32 | DType::U32 | DType::U8 | DType::Bool => 0,
    };
    Some(if rank(a) >= rank(b) { a } else { b })
}

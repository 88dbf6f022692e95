//! Type promotion of two tensor operands, after PyTorch's `torch.promote_types`, as far as
//! anygrad's dtypes allow. Elementwise binary ops (arithmetic and comparisons) and `where_`
//! convert both operands to the common dtype before running their primitive, so `pred.eq(labels)`
//! works when the predictions are I32 (argmax) and the labels U8 (a dataset's), and `x * mask`
//! works when the mask is Bool.
//!
//! The rules, in order:
//! - equal dtypes stay as they are;
//! - two floats: the wider (F16 < F32 < F64, BF16 < F32); F16 with BF16 is F32;
//! - a float and an integer or Bool: the float (as PyTorch, whatever the integer's size);
//! - two of Bool, U8, I32, U32: the larger kind along Bool < U8 < I32 and Bool < U8 < U32;
//! - U32 and I32: PyTorch's answer is int64, which anygrad lacks, so there is no common dtype
//!   ([`promote_types`] returns `None`). Comparisons between them are still exact (see
//!   [`Tensor::compare_unsigned_signed`]); arithmetic is an error that says to convert one.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::BinaryOp;

/// The dtype that an elementwise op between `a` and `b` computes in (`None` for U32 with I32,
/// whose PyTorch result type, int64, anygrad does not have).
pub(crate) fn promote_types(a: DType, b: DType) -> Option<DType> {
    if a == b {
        return Some(a);
    }
    match (a.is_float(), b.is_float()) {
        (true, true)
            if matches!(
                (a, b),
                (DType::F16, DType::BF16) | (DType::BF16, DType::F16)
            ) =>
        {
            Some(DType::F32)
        }
        (true, true) => Some(if float_rank(a) >= float_rank(b) { a } else { b }),
        (true, false) => Some(a),
        (false, true) => Some(b),
        (false, false) => integer_promotion(a, b),
    }
}

/// Width order of the float dtypes.
fn float_rank(dtype: DType) -> u8 {
    match dtype {
        DType::F16 | DType::BF16 => 0,
        DType::F32 => 1,
        DType::F64 => 2,
        DType::I32 | DType::U32 | DType::U8 | DType::Bool => 0,
    }
}

/// The common dtype of two different non-float dtypes.
fn integer_promotion(a: DType, b: DType) -> Option<DType> {
    let (low, high) = if integer_rank(a) <= integer_rank(b) {
        (a, b)
    } else {
        (b, a)
    };
    match (low, high) {
        // The only pair neither of whose dtypes holds the other's values.
        (DType::I32, DType::U32) => None,
        _ => Some(high),
    }
}

/// Bool < U8 < I32 < U32 (I32 and U32 have no common dtype; the order only sorts the pair).
fn integer_rank(dtype: DType) -> u8 {
    match dtype {
        DType::Bool => 0,
        DType::U8 => 1,
        DType::I32 => 2,
        DType::U32 => 3,
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => 4,
    }
}

/// The common dtype of `lhs` and `rhs` for `op`, or the error naming `op` and both dtypes.
pub(crate) fn result_type(op: &'static str, lhs: DType, rhs: DType) -> Result<DType> {
    promote_types(lhs, rhs).ok_or(Error::DTypeMismatch { op, lhs, rhs })
}

impl Tensor {
    /// `op` between a U32 and an I32 tensor, exactly (PyTorch compares them as int64). A
    /// negative I32 element is below every U32 element; elsewhere the I32 element converted to
    /// U32 is the same number, so the U32 comparison decides.
    pub(crate) fn compare_unsigned_signed(&self, rhs: &Tensor, op: BinaryOp) -> Result<Tensor> {
        let (unsigned, signed, unsigned_on_left) = if self.dtype() == DType::U32 {
            (self, rhs, true)
        } else {
            (rhs, self, false)
        };
        // Conversions saturate: negative I32 elements become 0, masked out below.
        let compared = if unsigned_on_left {
            unsigned.binary(&signed.to_dtype(DType::U32)?, op)?
        } else {
            signed.to_dtype(DType::U32)?.binary(unsigned, op)?
        };
        // Where the I32 element is negative, the U32 one is greater.
        let unsigned_greater = match op {
            BinaryOp::Eq => false,
            BinaryOp::Ne => true,
            BinaryOp::Lt | BinaryOp::Le => !unsigned_on_left,
            BinaryOp::Gt | BinaryOp::Ge => unsigned_on_left,
            _ => {
                return Err(Error::invalid(
                    op.name(),
                    "internal: compare_unsigned_signed takes only comparisons",
                ))
            }
        };
        let negative = signed.lt_scalar(0.0)?;
        let fixed = Tensor::full(
            &[],
            if unsigned_greater { 1.0 } else { 0.0 },
            DType::Bool,
            self.device(),
        )?;
        Tensor::where_(&negative, &fixed, &compared)
    }
}

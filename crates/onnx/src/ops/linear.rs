//! Matrix products: MatMul (NumPy rules: 1-D operands, broadcast batch dims), Gemm
//! (`alpha * A' B' + beta * C` with optional transposes and a broadcast C), and the quantized
//! MatMulInteger and QLinearMatMul.

use anygrad_core::{DType, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::proto::DataType;
use crate::value::Value;

/// The matrix product operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("MatMul", matmul),
    any_opset("Gemm", gemm),
    any_opset("MatMulInteger", matmul_integer),
    any_opset("QLinearMatMul", qlinear_matmul),
];

/// `(x - zero_point)` in float32, the zero point per tensor or per row/column (`axis`).
fn centered(ctx: &NodeContext, x: usize, zero: Option<usize>, axis: isize) -> Result<Tensor> {
    let v = ctx.core(ctx.tensor(x)?.to_dtype(DType::F32))?;
    let Some(z) = zero.and_then(|z| ctx.optional(z).map(|_| z)) else {
        return Ok(v);
    };
    let z = ctx.core(ctx.tensor(z)?.to_dtype(DType::F32))?;
    if z.numel() <= 1 {
        return ctx.core(v.sub(&z.reshape(Vec::<usize>::new()).map_err(|e| ctx.error(e))?));
    }
    let mut shape = vec![1usize; v.rank()];
    let d = if axis < 0 {
        v.rank() as isize + axis
    } else {
        axis
    } as usize;
    if d >= shape.len() {
        return Err(ctx.error("zero point does not match the operand"));
    }
    shape[d] = z.numel();
    ctx.core(z.reshape(shape).and_then(|z| v.sub(&z)))
}

/// MatMulInteger: `(A - a_zero_point) (B - b_zero_point)` exactly (float32 holds the 8-bit
/// products' sums exactly up to 2^24), as int32.
fn matmul_integer(ctx: &NodeContext) -> Result<Vec<Value>> {
    let a = centered(ctx, 0, Some(2), -2)?;
    let b = centered(ctx, 1, Some(3), -1)?;
    single(ctx.core(a.matmul(&b).and_then(|y| y.round()?.to_dtype(DType::I32)))?)
}

/// QLinearMatMul: dequantize both operands, multiply, quantize to the output's scale and zero
/// point (uint8 or, for an int32-held zero point, int8).
fn qlinear_matmul(ctx: &NodeContext) -> Result<Vec<Value>> {
    let a = centered(ctx, 0, Some(2), -2)?;
    let b = centered(ctx, 3, Some(5), -1)?;
    let scale_of = |i: usize, axis: isize, rank: usize| -> Result<Tensor> {
        let s = ctx.core(ctx.tensor(i)?.to_dtype(DType::F32))?;
        if s.numel() <= 1 {
            return ctx.core(s.reshape(Vec::<usize>::new()));
        }
        let mut shape = vec![1usize; rank];
        let d = if axis < 0 { rank as isize + axis } else { axis } as usize;
        if d >= rank {
            return Err(ctx.error("scale does not match the operand"));
        }
        shape[d] = s.numel();
        ctx.core(s.reshape(shape))
    };
    let a = ctx.core(a.mul(&scale_of(1, -2, a.rank())?))?;
    let b = ctx.core(b.mul(&scale_of(4, -1, b.rank())?))?;
    let y = ctx.core(a.matmul(&b))?;
    let y_scale = ctx.core(ctx.tensor(6)?.to_dtype(DType::F32))?;
    let zero = ctx.tensor(7)?;
    let (low, high, dtype) = match (ctx.declared_output_type(0), zero.dtype()) {
        (Some(DataType::Int8), _) | (None, DType::I32) => (-128.0, 127.0, DType::I32),
        _ => (0.0, 255.0, DType::U8),
    };
    let q = ctx.core((|| {
        y.div(&y_scale.reshape(Vec::<usize>::new())?)?
            .round()?
            .add(&zero.to_dtype(DType::F32)?.reshape(Vec::<usize>::new())?)?
            .clamp(low, high)?
            .to_dtype(dtype)
    })())?;
    single(q)
}

fn matmul(ctx: &NodeContext) -> Result<Vec<Value>> {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    single(ctx.core(a.matmul(&b))?)
}

fn gemm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let mut a = ctx.tensor(0)?;
    let mut b = ctx.tensor(1)?;
    if a.rank() != 2 || b.rank() != 2 {
        return Err(ctx.error("A and B must be matrices"));
    }
    if ctx.attr_int("transA", 0)? != 0 {
        a = ctx.core(a.t())?;
    }
    if ctx.attr_int("transB", 0)? != 0 {
        b = ctx.core(b.t())?;
    }
    let alpha = ctx.attr_float("alpha", 1.0)? as f64;
    let beta = ctx.attr_float("beta", 1.0)? as f64;
    let mut y = ctx.core(a.matmul(&b))?;
    if alpha != 1.0 {
        y = ctx.core(y.mul_scalar(alpha))?;
    }
    if let Some(c) = ctx.optional_tensor(2)? {
        let c = if beta != 1.0 {
            ctx.core(c.mul_scalar(beta))?
        } else {
            c
        };
        y = ctx.core(y.add(&c))?;
    }
    single(y)
}

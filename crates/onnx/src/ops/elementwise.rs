//! Elementwise arithmetic and maths: Add, Sub, Mul, Div, Pow, Mod, Sum, Mean, Max, Min, Neg,
//! Abs, Sign, Exp, Log, Sqrt, Reciprocal, the trigonometric (Atan, Asin, Acos by a series)
//! and hyperbolic functions anygrad can compose, Floor, Ceil, Round, IsNaN, IsInf. Integer
//! operands that involve int64 host values (shape arithmetic) are computed exactly on the
//! host; the rest are device ops.

use anygrad_core::op::BinaryOp;
use anygrad_core::{DType, Device, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::host_int64;
use crate::host_tensor::{HostData, HostTensor};
use crate::value::{Int64Tensor, Value};

/// The elementwise operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Add", add),
    any_opset("Sub", sub),
    any_opset("Mul", mul),
    any_opset("Div", div),
    any_opset("Pow", pow),
    any_opset("Mod", modulo),
    any_opset("Sum", sum),
    any_opset("Mean", mean),
    any_opset("Max", max),
    any_opset("Min", min),
    any_opset("Neg", neg),
    any_opset("Abs", abs),
    any_opset("Sign", sign),
    any_opset("Exp", |c| unary(c, Tensor::exp)),
    any_opset("Log", |c| unary(c, Tensor::log)),
    any_opset("Sqrt", |c| unary(c, Tensor::sqrt)),
    any_opset("Reciprocal", |c| unary(c, Tensor::recip)),
    any_opset("Sin", |c| unary(c, Tensor::sin)),
    any_opset("Cos", |c| unary(c, Tensor::cos)),
    any_opset("Tan", |c| unary(c, |x| x.sin()?.div(&x.cos()?))),
    any_opset("Sinh", |c| {
        unary(c, |x| x.exp()?.sub(&x.neg()?.exp()?)?.mul_scalar(0.5))
    }),
    any_opset("Cosh", |c| {
        unary(c, |x| x.exp()?.add(&x.neg()?.exp()?)?.mul_scalar(0.5))
    }),
    any_opset("Asinh", |c| {
        unary(c, |x| x.add(&x.square()?.add_scalar(1.0)?.sqrt()?)?.log())
    }),
    any_opset("Acosh", |c| {
        unary(c, |x| x.add(&x.square()?.sub_scalar(1.0)?.sqrt()?)?.log())
    }),
    any_opset("Atanh", |c| {
        unary(c, |x| {
            x.add_scalar(1.0)?
                .div(&x.rsub_scalar(1.0)?)?
                .log()?
                .mul_scalar(0.5)
        })
    }),
    any_opset("Atan", |c| unary(c, atan)),
    any_opset("Asin", |c| unary(c, asin)),
    any_opset("Acos", |c| {
        unary(c, |x| {
            asin(x)?.neg()?.add_scalar(std::f64::consts::FRAC_PI_2)
        })
    }),
    any_opset("Floor", |c| unary(c, Tensor::floor)),
    any_opset("Ceil", |c| unary(c, Tensor::ceil)),
    any_opset("Round", |c| unary(c, Tensor::round)),
    any_opset("IsNaN", |c| unary(c, |x| x.ne(x))),
    any_opset("IsInf", is_inf),
];

/// Whether a binary op on these operands runs on the host in exact int64.
fn on_host(a: &Value, b: &Value) -> bool {
    (matches!(a, Value::Int64(_)) && b.is_integer())
        || (matches!(b, Value::Int64(_)) && a.is_integer())
}

/// An integer result in the representation of `like`: int64 host values stay on the host,
/// other integer types go back to a device tensor of their type.
pub(crate) fn integer_result(
    ctx: &NodeContext,
    data: Int64Tensor,
    like: &Value,
    device: &Device,
) -> Result<Value> {
    match like {
        Value::Int64(_) => Ok(Value::Int64(data)),
        Value::Tensor(t) => {
            let target = match t.dtype() {
                DType::U8 => crate::proto::DataType::Uint8,
                DType::U32 => crate::proto::DataType::Uint32,
                _ => crate::proto::DataType::Int32,
            };
            let host = HostTensor {
                shape: data.shape,
                data: HostData::I64(data.data),
            }
            .into_integer_type(target);
            if matches!(host.data, HostData::I64(_)) {
                return Err(ctx.error("an integer result does not fit its element type"));
            }
            host.to_value(device).map_err(|e| ctx.error(e))
        }
    }
}

/// A binary op: exact int64 on the host when int64 values are involved, else `op` on the
/// device (integer division and modulo on the host too, for their exact semantics).
fn binary(
    ctx: &NodeContext,
    op: BinaryOp,
    host: fn(i64, i64) -> std::result::Result<i64, String>,
) -> Result<Vec<Value>> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let integer_division = matches!(op, BinaryOp::Div) && a.is_integer() && b.is_integer();
    if on_host(a, b) || integer_division {
        let (x, y) = (ctx.int64(0)?, ctx.int64(1)?);
        let out =
            host_int64::elementwise(&[&x, &y], |v| host(v[0], v[1])).map_err(|e| ctx.error(e))?;
        let like = if matches!(b, Value::Int64(_)) { b } else { a };
        return single(integer_result(ctx, out, like, ctx.device)?);
    }
    let (x, y) = (ctx.tensor(0)?, ctx.tensor(1)?);
    single(ctx.core(x.binary(&y, op))?)
}

fn add(ctx: &NodeContext) -> Result<Vec<Value>> {
    binary(ctx, BinaryOp::Add, |a, b| Ok(a.wrapping_add(b)))
}

fn sub(ctx: &NodeContext) -> Result<Vec<Value>> {
    binary(ctx, BinaryOp::Sub, |a, b| Ok(a.wrapping_sub(b)))
}

fn mul(ctx: &NodeContext) -> Result<Vec<Value>> {
    binary(ctx, BinaryOp::Mul, |a, b| Ok(a.wrapping_mul(b)))
}

fn div(ctx: &NodeContext) -> Result<Vec<Value>> {
    binary(ctx, BinaryOp::Div, |a, b| {
        if b == 0 {
            Err("integer division by zero".into())
        } else {
            Ok(a.wrapping_div(b))
        }
    })
}

fn pow(ctx: &NodeContext) -> Result<Vec<Value>> {
    let base = ctx.tensor(0)?;
    let exponent = ctx.tensor(1)?;
    if !base.dtype().is_float() {
        let wide = ctx.core(base.to_dtype(DType::F32))?;
        let e = ctx.core(exponent.to_dtype(DType::F32))?;
        let out = ctx.core(wide.pow(&e).and_then(|p| p.round()))?;
        return single(ctx.core(out.to_dtype(base.dtype()))?);
    }
    let exponent = ctx.core(exponent.to_dtype(base.dtype()))?;
    single(ctx.core(base.pow(&exponent))?)
}

fn modulo(ctx: &NodeContext) -> Result<Vec<Value>> {
    let fmod = ctx.attr_int("fmod", 0)? != 0;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if a.is_integer() && b.is_integer() {
        let (x, y) = (ctx.int64(0)?, ctx.int64(1)?);
        let out = host_int64::elementwise(&[&x, &y], |v| {
            let (a, b) = (v[0], v[1]);
            if b == 0 {
                return Err("integer modulo by zero".into());
            }
            let r = a.wrapping_rem(b);
            Ok(if !fmod && r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            })
        })
        .map_err(|e| ctx.error(e))?;
        let like = if matches!(b, Value::Int64(_)) { b } else { a };
        return single(integer_result(ctx, out, like, ctx.device)?);
    }
    let (x, y) = (ctx.tensor(0)?, ctx.tensor(1)?);
    // C's fmod (`x - trunc(x / y) * y`, `x` itself for an infinite `y`), then for Python's
    // mod (fmod = 0) the divisor added where the remainder's sign differs from it.
    let out = ctx.core((|| {
        let infinite = y.abs()?.eq_scalar(f64::INFINITY)?;
        let taken = x.div(&y)?.trunc()?.mul(&y)?;
        let zero = taken.zeros_like()?;
        let remainder = x.sub(&Tensor::where_(&infinite, &zero, &taken)?)?;
        if fmod {
            return Ok(remainder);
        }
        let differs = remainder
            .sign()?
            .ne(&y.sign()?)?
            .to_dtype(DType::U8)?
            .minimum(&remainder.ne_scalar(0.0)?.to_dtype(DType::U8)?)?
            .to_dtype(DType::Bool)?;
        Tensor::where_(&differs, &remainder.add(&y)?, &remainder)
    })())?;
    single(out)
}

/// A variadic op folded pairwise.
fn variadic(ctx: &NodeContext, op: BinaryOp, host: fn(i64, i64) -> i64) -> Result<Vec<Value>> {
    let values: Vec<&Value> = ctx.inputs.iter().flatten().collect();
    if values.is_empty() {
        return Err(ctx.error("needs at least one input"));
    }
    if values.iter().all(|v| v.is_integer()) && values.iter().any(|v| matches!(v, Value::Int64(_)))
    {
        let mut acc = values[0].to_int64().map_err(|e| ctx.error(e))?;
        for v in &values[1..] {
            let next = v.to_int64().map_err(|e| ctx.error(e))?;
            acc = host_int64::elementwise(&[&acc, &next], |x| Ok(host(x[0], x[1])))
                .map_err(|e| ctx.error(e))?;
        }
        return single(acc);
    }
    let mut acc = values[0].to_tensor(ctx.device).map_err(|e| ctx.error(e))?;
    for v in &values[1..] {
        let next = v.to_tensor(ctx.device).map_err(|e| ctx.error(e))?;
        acc = ctx.core(acc.binary(&next, op))?;
    }
    single(acc)
}

fn sum(ctx: &NodeContext) -> Result<Vec<Value>> {
    variadic(ctx, BinaryOp::Add, i64::wrapping_add)
}

fn max(ctx: &NodeContext) -> Result<Vec<Value>> {
    variadic(ctx, BinaryOp::Maximum, i64::max)
}

fn min(ctx: &NodeContext) -> Result<Vec<Value>> {
    variadic(ctx, BinaryOp::Minimum, i64::min)
}

fn mean(ctx: &NodeContext) -> Result<Vec<Value>> {
    let count = ctx.inputs.iter().flatten().count();
    let total = sum(ctx)?;
    let total = total
        .first()
        .ok_or_else(|| ctx.error("no sum"))?
        .to_tensor(ctx.device)
        .map_err(|e| ctx.error(e))?;
    single(ctx.core(total.div_scalar(count as f64))?)
}

/// A unary op on an int64 host value computed on the host.
fn host_unary(ctx: &NodeContext, f: fn(i64) -> i64) -> Option<Result<Vec<Value>>> {
    match ctx.input(0) {
        Ok(Value::Int64(v)) => Some(single(Int64Tensor {
            shape: v.shape.clone(),
            data: v.data.iter().map(|&x| f(x)).collect(),
        })),
        _ => None,
    }
}

fn neg(ctx: &NodeContext) -> Result<Vec<Value>> {
    if let Some(done) = host_unary(ctx, i64::wrapping_neg) {
        return done;
    }
    unary(ctx, Tensor::neg)
}

fn abs(ctx: &NodeContext) -> Result<Vec<Value>> {
    if let Some(done) = host_unary(ctx, i64::wrapping_abs) {
        return done;
    }
    unary(ctx, Tensor::abs)
}

fn sign(ctx: &NodeContext) -> Result<Vec<Value>> {
    if let Some(done) = host_unary(ctx, i64::signum) {
        return done;
    }
    unary(ctx, Tensor::sign)
}

/// `f` of input 0 on the device.
pub(crate) fn unary(
    ctx: &NodeContext,
    f: impl Fn(&Tensor) -> anygrad_core::Result<Tensor>,
) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    single(ctx.core(f(&x))?)
}

fn is_inf(ctx: &NodeContext) -> Result<Vec<Value>> {
    let positive = ctx.attr_int("detect_positive", 1)? != 0;
    let negative = ctx.attr_int("detect_negative", 1)? != 0;
    let x = ctx.tensor(0)?;
    let pos = ctx.core(x.eq_scalar(f64::INFINITY))?;
    let neg = ctx.core(x.eq_scalar(f64::NEG_INFINITY))?;
    let out = match (positive, negative) {
        (true, true) => ctx.core(
            pos.to_dtype(DType::U8)
                .and_then(|p| p.maximum(&neg.to_dtype(DType::U8)?)),
        )?,
        (true, false) => pos,
        (false, true) => neg,
        (false, false) => ctx.core(Tensor::zeros(x.shape(), DType::Bool, x.device()))?,
    };
    single(ctx.core(out.to_dtype(DType::Bool))?)
}

/// `atan(x)` composed from tensor ops (anygrad has no arctangent primitive): `|x| > 1` folds
/// to `pi/2 - atan(1/|x|)`, values above `tan(pi/8)` shift by `pi/4` through
/// `(t - 1) / (t + 1)`, and the Taylor series to `t^15` (error below 1e-7 on `|t| <= 0.415`)
/// finishes; the sign is restored last. Differentiable like any composite.
fn atan(x: &Tensor) -> anygrad_core::Result<Tensor> {
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};
    let a = x.abs()?;
    let folded = a.gt_scalar(1.0)?;
    let t = Tensor::where_(&folded, &a.maximum_scalar(1.0)?.recip()?, &a)?;
    let shifted = t.gt_scalar(0.414_213_56)?;
    let u = Tensor::where_(&shifted, &t.sub_scalar(1.0)?.div(&t.add_scalar(1.0)?)?, &t)?;
    let u2 = u.square()?;
    let mut series = Tensor::full(&[], -1.0 / 15.0, u.dtype(), u.device())?;
    for k in (0..7).rev() {
        let coefficient = if k % 2 == 0 { 1.0 } else { -1.0 } / (2 * k + 1) as f64;
        series = series.mul(&u2)?.add_scalar(coefficient)?;
    }
    let mut r = u.mul(&series)?;
    r = Tensor::where_(&shifted, &r.add_scalar(FRAC_PI_4)?, &r)?;
    r = Tensor::where_(&folded, &r.neg()?.add_scalar(FRAC_PI_2)?, &r)?;
    r.mul(&x.sign()?)
}

/// `asin(x) = atan(x / sqrt(1 - x^2))` (NaN outside [-1, 1], +-pi/2 at the ends).
fn asin(x: &Tensor) -> anygrad_core::Result<Tensor> {
    atan(&x.div(&x.square()?.rsub_scalar(1.0)?.sqrt()?)?)
}

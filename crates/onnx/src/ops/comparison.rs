//! Comparisons and logic: Equal, Less, LessOrEqual, Greater, GreaterOrEqual (Bool results),
//! Not, And, Or, Xor, and Where. int64 host operands are compared exactly on the host.

use anygrad_core::op::BinaryOp;
use anygrad_core::{DType, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::host_int64;
use crate::value::Value;

/// The comparison and logic operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Equal", |c| compare(c, BinaryOp::Eq, |a, b| a == b)),
    any_opset("Less", |c| compare(c, BinaryOp::Lt, |a, b| a < b)),
    any_opset("LessOrEqual", |c| compare(c, BinaryOp::Le, |a, b| a <= b)),
    any_opset("Greater", |c| compare(c, BinaryOp::Gt, |a, b| a > b)),
    any_opset("GreaterOrEqual", |c| {
        compare(c, BinaryOp::Ge, |a, b| a >= b)
    }),
    any_opset("Not", not),
    any_opset("And", |c| logic(c, BinaryOp::Minimum)),
    any_opset("Or", |c| logic(c, BinaryOp::Maximum)),
    any_opset("Xor", |c| logic(c, BinaryOp::Ne)),
    any_opset("Where", where_),
];

fn compare(ctx: &NodeContext, op: BinaryOp, host: fn(i64, i64) -> bool) -> Result<Vec<Value>> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let int64 = matches!(a, Value::Int64(_)) || matches!(b, Value::Int64(_));
    if int64 && a.is_integer() && b.is_integer() {
        let (x, y) = (ctx.int64(0)?, ctx.int64(1)?);
        let out = host_int64::elementwise(&[&x, &y], |v| Ok(host(v[0], v[1]) as i64))
            .map_err(|e| ctx.error(e))?;
        let bools: Vec<bool> = out.data.iter().map(|&x| x != 0).collect();
        return single(ctx.core(Tensor::from_vec(bools, &out.shape, ctx.device))?);
    }
    let (x, y) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let (x, y) = if x.dtype() == DType::Bool || y.dtype() == DType::Bool {
        (
            ctx.core(x.to_dtype(DType::U8))?,
            ctx.core(y.to_dtype(DType::U8))?,
        )
    } else {
        (x, y)
    };
    single(ctx.core(x.binary(&y, op))?)
}

fn not(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    single(ctx.core(x.to_dtype(DType::U8).and_then(|u| u.eq_scalar(0.0)))?)
}

/// And (minimum), Or (maximum), Xor (not equal) of Bool tensors through uint8.
fn logic(ctx: &NodeContext, op: BinaryOp) -> Result<Vec<Value>> {
    let x = ctx.core(ctx.tensor(0)?.to_dtype(DType::U8))?;
    let y = ctx.core(ctx.tensor(1)?.to_dtype(DType::U8))?;
    single(ctx.core(x.binary(&y, op).and_then(|r| r.to_dtype(DType::Bool)))?)
}

fn where_(ctx: &NodeContext) -> Result<Vec<Value>> {
    let condition = ctx.core(ctx.tensor(0)?.to_dtype(DType::Bool))?;
    let (a, b) = (ctx.input(1)?, ctx.input(2)?);
    if matches!(a, Value::Int64(_)) || matches!(b, Value::Int64(_)) {
        let c = ctx.core(condition.to_dtype(DType::I32))?;
        let c = Value::Tensor(c).to_int64().map_err(|e| ctx.error(e))?;
        let (x, y) = (ctx.int64(1)?, ctx.int64(2)?);
        let out =
            host_int64::elementwise(&[&c, &x, &y], |v| Ok(if v[0] != 0 { v[1] } else { v[2] }))
                .map_err(|e| ctx.error(e))?;
        return single(out);
    }
    let (x, y) = (ctx.tensor(1)?, ctx.tensor(2)?);
    single(ctx.core(Tensor::where_(&condition, &x, &y))?)
}

//! Linear quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis and blocked
//! scales) and DynamicQuantizeLinear, for 8- and 16-bit integer types. The quantized type
//! comes from `output_dtype` or the zero point's type; anygrad holds int8, int16 and uint16 as
//! int32 tensors, so an int32 zero point stands for int8 unless `output_dtype` says otherwise.

use anygrad_core::{DType, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::proto::DataType;
use crate::value::Value;

/// The quantization operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("QuantizeLinear", quantize),
    any_opset("DequantizeLinear", dequantize),
    any_opset("DynamicQuantizeLinear", dynamic_quantize),
];

/// `scale` (or a zero point) shaped to broadcast over `x`: a scalar as it is, a 1-D vector
/// along `axis`, a blocked tensor repeated `block_size` times along `axis`.
fn broadcast_parameter(
    ctx: &NodeContext,
    p: &Tensor,
    x: &Tensor,
    axis: usize,
    block: usize,
) -> Result<Tensor> {
    if p.numel() == 1 {
        return ctx.core(p.reshape(Vec::<usize>::new()));
    }
    if block > 0 {
        let size = x.shape()[axis];
        let picks: Vec<i32> = (0..size).map(|i| (i / block) as i32).collect();
        let index = ctx.core(Tensor::from_vec(picks, &[size], p.device()))?;
        return ctx.core(p.index_select(axis as isize, &index));
    }
    let mut shape = vec![1usize; x.rank()];
    shape[axis] = p.numel();
    ctx.core(p.reshape(shape))
}

/// The integer range and the anygrad dtype of a quantized type.
fn range_of(ctx: &NodeContext, t: DataType) -> Result<(f64, f64, DType)> {
    Ok(match t {
        DataType::Uint8 => (0.0, 255.0, DType::U8),
        DataType::Int8 => (-128.0, 127.0, DType::I32),
        DataType::Uint16 => (0.0, 65535.0, DType::I32),
        DataType::Int16 => (-32768.0, 32767.0, DType::I32),
        DataType::Int32 => (i32::MIN as f64, i32::MAX as f64, DType::I32),
        other => return Err(ctx.error(format!("quantizing to {other:?} is not supported"))),
    })
}

/// The quantization axis (unused, 0, for a per-tensor scale) and block size.
fn axis_and_block(ctx: &NodeContext, rank: usize, per_tensor: bool) -> Result<(usize, usize)> {
    let axis = if per_tensor {
        0
    } else {
        ctx.axis(ctx.attr_int("axis", 1)?, rank)?
    };
    let block = usize::try_from(ctx.attr_int("block_size", 0)?)
        .map_err(|_| ctx.error("negative block_size"))?;
    Ok((axis, block))
}

fn quantize(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let scale = ctx.tensor(1)?;
    let zero = ctx.optional_tensor(2)?;
    let target = match ctx.attr_opt_int("output_dtype")? {
        Some(code) if code != 0 => DataType::try_from(code as i32)
            .map_err(|_| ctx.error(format!("unknown type {code}")))?,
        _ => match (&zero, ctx.declared_output_type(0)) {
            (_, Some(declared)) if declared != DataType::Undefined => declared,
            _ => match &zero {
                Some(z) if z.dtype() == DType::U8 => DataType::Uint8,
                Some(z) if z.dtype() == DType::I32 => DataType::Int8,
                Some(z) => {
                    return Err(
                        ctx.error(format!("zero point of type {} is not supported", z.dtype()))
                    )
                }
                None => DataType::Uint8,
            },
        },
    };
    let (low, high, dtype) = range_of(ctx, target)?;
    let (axis, block) = axis_and_block(ctx, x.rank(), scale.numel() == 1)?;
    let scale = broadcast_parameter(ctx, &ctx.core(scale.to_dtype(DType::F32))?, &x, axis, block)?;
    let y = ctx.core((|| {
        let mut q = x.to_dtype(DType::F32)?.div(&scale)?.round()?;
        if let Some(z) = &zero {
            let z = broadcast_parameter(ctx, &z.to_dtype(DType::F32)?, &x, axis, block)
                .map_err(|e| anygrad_core::Error::invalid("QuantizeLinear", e.to_string()))?;
            q = q.add(&z)?;
        }
        q.clamp(low, high)?.to_dtype(dtype)
    })())?;
    single(y)
}

fn dequantize(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let scale = ctx.tensor(1)?;
    let zero = ctx.optional_tensor(2)?;
    let (axis, block) = axis_and_block(ctx, x.rank(), scale.numel() == 1)?;
    let float = if scale.dtype().is_float() {
        scale.dtype()
    } else {
        DType::F32
    };
    let scale = broadcast_parameter(ctx, &scale, &x, axis, block)?;
    let y = ctx.core((|| {
        let mut v = x.to_dtype(DType::F32)?;
        if let Some(z) = &zero {
            let z = broadcast_parameter(ctx, &z.to_dtype(DType::F32)?, &x, axis, block)
                .map_err(|e| anygrad_core::Error::invalid("DequantizeLinear", e.to_string()))?;
            v = v.sub(&z)?;
        }
        v.mul(&scale.to_dtype(DType::F32)?)?.to_dtype(float)
    })())?;
    single(y)
}

fn dynamic_quantize(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.core(ctx.tensor(0)?.to_dtype(DType::F32))?;
    let values = ctx.core(x.to_vec_f64())?;
    let high = values.iter().copied().fold(0.0f64, f64::max);
    let low = values.iter().copied().fold(0.0f64, f64::min);
    let scale = ((high - low) / 255.0) as f32 as f64;
    let zero = if scale == 0.0 {
        0.0
    } else {
        (-low / scale).round_ties_even().clamp(0.0, 255.0)
    };
    let y = ctx.core((|| {
        let q = if scale == 0.0 {
            x.zeros_like()?
        } else {
            x.div_scalar(scale)?.round()?
        };
        q.add_scalar(zero)?.clamp(0.0, 255.0)?.to_dtype(DType::U8)
    })())?;
    let scale = ctx.core(Tensor::full(&[], scale, DType::F32, ctx.device))?;
    let zero = ctx.core(Tensor::full(&[], zero, DType::U8, ctx.device))?;
    Ok(vec![
        Value::Tensor(y),
        Value::Tensor(scale),
        Value::Tensor(zero),
    ])
}

//! Cast and CastLike: conversions between element types (and BitCast: the same bytes read
//! as another type). Conversions to int64 give exact host values (float values truncated
//! toward zero); narrower integer types wrap like C; float64 exists on the CPU only.

use anygrad_core::{DType, Device, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::proto::DataType;
use crate::value::Value;

/// The conversion operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Cast", cast),
    any_opset("CastLike", cast_like),
    any_opset("BitCast", bit_cast),
];

/// BitCast: the same bytes read as another type of the same width (on the host). The input's
/// declared type decides its bytes (int8 and int16 compute as int32 tensors).
fn bit_cast(ctx: &NodeContext) -> Result<Vec<Value>> {
    let to = ctx
        .attr_opt_int("to")?
        .ok_or_else(|| ctx.error("attribute `to` is required"))?;
    let to = DataType::try_from(to as i32)
        .map_err(|_| ctx.error(format!("unknown element type {to}")))?;
    let mut host =
        crate::host_tensor::HostTensor::from_value(ctx.input(0)?).map_err(|e| ctx.error(e))?;
    if let Some(declared) = ctx.declared_input_type(0) {
        host = host.into_integer_type(declared);
    }
    let bytes = host.data.to_le_bytes();
    let count = host.data.len();
    let data = crate::tensor_data::from_raw(to, &bytes, count).map_err(|e| {
        ctx.error(format!(
            "cannot reinterpret {:?} as {to:?}: {e}",
            host.data_type()
        ))
    })?;
    let out = crate::host_tensor::HostTensor {
        shape: host.shape,
        data,
    };
    single(out.to_value(ctx.device).map_err(|e| ctx.error(e))?)
}

fn cast(ctx: &NodeContext) -> Result<Vec<Value>> {
    let to = ctx
        .attr_opt_int("to")?
        .ok_or_else(|| ctx.error("attribute `to` is required"))?;
    let to = DataType::try_from(to as i32)
        .map_err(|_| ctx.error(format!("unknown element type {to}")))?;
    single(cast_value(ctx, ctx.input(0)?, to)?)
}

fn cast_like(ctx: &NodeContext) -> Result<Vec<Value>> {
    let to = match ctx.input(1)? {
        Value::Int64(_) => DataType::Int64,
        Value::Tensor(t) => data_type_of(t.dtype()),
    };
    single(cast_value(ctx, ctx.input(0)?, to)?)
}

/// The ONNX element type of an anygrad dtype.
pub(crate) fn data_type_of(dtype: DType) -> DataType {
    match dtype {
        DType::F32 => DataType::Float,
        DType::F16 => DataType::Float16,
        DType::BF16 => DataType::Bfloat16,
        DType::F64 => DataType::Double,
        DType::I32 => DataType::Int32,
        DType::U32 => DataType::Uint32,
        DType::U8 => DataType::Uint8,
        DType::Bool => DataType::Bool,
    }
}

/// `value` converted to `to`.
pub(crate) fn cast_value(ctx: &NodeContext, value: &Value, to: DataType) -> Result<Value> {
    let float = match to {
        DataType::Float | DataType::Bfloat16 => Some(DType::F32),
        DataType::Float16 => Some(DType::F16),
        DataType::Double => Some(DType::F64),
        _ => None,
    };
    if let Some(dtype) = float {
        let t = match value {
            Value::Int64(v) => {
                let wide: Vec<f64> = v.data.iter().map(|&x| x as f64).collect();
                ctx.core(
                    Tensor::from_vec(wide, &v.shape, &Device::Cpu)
                        .and_then(|t| t.to_dtype(dtype))
                        .and_then(|t| t.to_device(ctx.device)),
                )?
            }
            Value::Tensor(t) => ctx.core(t.to_dtype(dtype))?,
        };
        if to == DataType::Bfloat16 {
            return Ok(Value::Tensor(
                round_to_bfloat16(&t).map_err(|e| ctx.error(e))?,
            ));
        }
        return Ok(Value::Tensor(t));
    }
    if to == DataType::Bool {
        let t = match value {
            Value::Int64(v) => {
                let bools: Vec<bool> = v.data.iter().map(|&x| x != 0).collect();
                ctx.core(Tensor::from_vec(bools, &v.shape, ctx.device))?
            }
            Value::Tensor(t) if t.dtype() == DType::Bool => t.clone(),
            Value::Tensor(t) => ctx.core(t.ne_scalar(0.0))?,
        };
        return Ok(Value::Tensor(t));
    }
    if to == DataType::Int32 {
        if let Value::Tensor(t) = value {
            if t.dtype() != DType::U32 {
                return Ok(Value::Tensor(ctx.core(t.to_dtype(DType::I32))?));
            }
        }
    }
    let exact = value.to_int64().map_err(|e| ctx.error(e))?;
    let wrap: fn(i64) -> i64 = match to {
        DataType::Int64 | DataType::Uint64 => return Ok(Value::Int64(exact)),
        DataType::Int32 => |x| x as i32 as i64,
        DataType::Int16 => |x| x as i16 as i64,
        DataType::Int8 => |x| x as i8 as i64,
        DataType::Uint16 => |x| x as u16 as i64,
        DataType::Uint8 => |x| x as u8 as i64,
        DataType::Uint32 => |x| x as u32 as i64,
        other => return Err(ctx.error(format!("casting to {other:?} is not supported"))),
    };
    let data: Vec<i64> = exact.data.iter().map(|&x| wrap(x)).collect();
    let shape = exact.shape;
    let t = match to {
        DataType::Uint8 => {
            let v: Vec<u8> = data.iter().map(|&x| x as u8).collect();
            Tensor::from_vec(v, &shape, ctx.device)
        }
        DataType::Uint32 => {
            let v: Vec<u32> = data.iter().map(|&x| x as u32).collect();
            Tensor::from_vec(v, &shape, ctx.device)
        }
        _ => {
            let v: Vec<i32> = data.iter().map(|&x| x as i32).collect();
            Tensor::from_vec(v, &shape, ctx.device)
        }
    };
    Ok(Value::Tensor(ctx.core(t)?))
}

/// Float32 values rounded to bfloat16's precision (nearest, ties to even; NaN kept), the
/// importer's representation of bfloat16 (anygrad has no bfloat16 dtype). Computed on the
/// host: no gradient flows through it.
pub(crate) fn round_to_bfloat16(t: &Tensor) -> std::result::Result<Tensor, String> {
    let values = t.to_vec::<f32>().map_err(|e| e.to_string())?;
    let rounded: Vec<f32> = values
        .iter()
        .map(|&x| {
            if x.is_nan() {
                return x;
            }
            let bits = x.to_bits();
            let lsb = (bits >> 16) & 1;
            f32::from_bits(bits.wrapping_add(0x7fff + lsb) & 0xffff_0000)
        })
        .collect();
    Tensor::from_vec(rounded, t.shape(), t.device()).map_err(|e| e.to_string())
}

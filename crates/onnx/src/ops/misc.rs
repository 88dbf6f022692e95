//! The remaining operators: Constant (all its `value*` attribute forms), Identity, Dropout
//! (inference), CumSum, CumProd, OneHot, TopK, NonZero, Trilu and EyeLike.

use std::path::Path;

use anygrad_core::{DType, Tensor};

use super::cast::{cast_value, data_type_of};
use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::{OnnxError, Result};
use crate::host_tensor::{HostData, HostTensor};
use crate::proto::{AttributeType, DataType, NodeProto, SparseTensorProto};
use crate::tensor_data::{checked_shape, decode_tensor};
use crate::value::Value;

/// The remaining operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Constant", constant),
    any_opset("Identity", identity),
    any_opset("Dropout", dropout),
    any_opset("CumSum", |c| cumulative(c, false)),
    any_opset("CumProd", |c| cumulative(c, true)),
    any_opset("OneHot", one_hot),
    any_opset("TopK", top_k),
    any_opset("NonZero", non_zero),
    any_opset("Trilu", trilu),
    any_opset("EyeLike", eye_like),
];

/// The value of a `Constant` node (`value`, `value_float(s)`, `value_int(s)`,
/// `sparse_value`), its tensor data read from below `folder` when external.
pub fn constant_value(node: &NodeProto, index: usize, folder: Option<&Path>) -> Result<HostTensor> {
    let fail = |message: String| OnnxError::Node {
        node: crate::context::describe_node(node, index),
        message,
    };
    let attribute = match node.attribute.as_slice() {
        [one] => one,
        _ => return Err(fail("a Constant needs exactly one value attribute".into())),
    };
    let kind = AttributeType::try_from(attribute.r#type).unwrap_or(AttributeType::Undefined);
    match (attribute.name.as_str(), kind) {
        ("value", AttributeType::Tensor) => {
            let tensor = attribute
                .t
                .as_ref()
                .ok_or_else(|| fail("attribute `value` holds no tensor".into()))?;
            decode_tensor(tensor, folder)
        }
        ("value_float", AttributeType::Float) => Ok(HostTensor {
            shape: Vec::new(),
            data: HostData::F32(vec![attribute.f]),
        }),
        ("value_floats", AttributeType::Floats) => Ok(HostTensor {
            shape: vec![attribute.floats.len()],
            data: HostData::F32(attribute.floats.clone()),
        }),
        ("value_int", AttributeType::Int) => Ok(HostTensor {
            shape: Vec::new(),
            data: HostData::I64(vec![attribute.i]),
        }),
        ("value_ints", AttributeType::Ints) => Ok(HostTensor {
            shape: vec![attribute.ints.len()],
            data: HostData::I64(attribute.ints.clone()),
        }),
        ("sparse_value", AttributeType::SparseTensor) => {
            let sparse = attribute
                .sparse_tensor
                .as_ref()
                .ok_or_else(|| fail("attribute `sparse_value` holds no tensor".into()))?;
            densify(sparse, folder).map_err(fail)
        }
        (name, kind) => Err(fail(format!(
            "Constant attribute `{name}` of type {kind:?} is not supported"
        ))),
    }
}

/// The dense tensor of a sparse one (float values).
fn densify(
    sparse: &SparseTensorProto,
    folder: Option<&Path>,
) -> std::result::Result<HostTensor, String> {
    let shape = checked_shape(&sparse.dims)?;
    let count: usize = shape.iter().product();
    let values = sparse
        .values
        .as_ref()
        .ok_or("sparse tensor without values")?;
    let values = decode_tensor(values, folder).map_err(|e| e.to_string())?;
    let indices = sparse
        .indices
        .as_ref()
        .ok_or("sparse tensor without indices")?;
    let indices = decode_tensor(indices, folder).map_err(|e| e.to_string())?;
    let index_values = indices
        .data
        .to_i128()
        .ok_or("sparse indices must be integers")?;
    let nnz = values.data.len();
    let linear: Vec<usize> = if indices.shape.len() == 2 {
        let rank = shape.len();
        let mut out = Vec::with_capacity(nnz);
        for row in index_values.chunks(rank.max(1)) {
            let mut at = 0usize;
            for (d, &i) in row.iter().enumerate() {
                at = at * shape[d] + usize::try_from(i).map_err(|_| "negative sparse index")?;
            }
            out.push(at);
        }
        out
    } else {
        index_values
            .iter()
            .map(|&i| usize::try_from(i).map_err(|_| "negative sparse index"))
            .collect::<std::result::Result<_, _>>()?
    };
    let source = values.data.to_f64();
    let mut dense = vec![0f64; count];
    for (k, &at) in linear.iter().enumerate() {
        *dense.get_mut(at).ok_or("sparse index out of range")? =
            *source.get(k).ok_or("fewer values than indices")?;
    }
    let data = match values.data {
        HostData::I64(_) => HostData::I64(dense.iter().map(|&x| x as i64).collect()),
        HostData::I32(_) => HostData::I32(dense.iter().map(|&x| x as i32).collect()),
        _ => HostData::F32(dense.iter().map(|&x| x as f32).collect()),
    };
    Ok(HostTensor { shape, data })
}

fn constant(ctx: &NodeContext) -> Result<Vec<Value>> {
    let host = constant_value(ctx.node, ctx.index, None)?;
    single(host.to_value(ctx.device).map_err(|e| ctx.error(e))?)
}

fn identity(ctx: &NodeContext) -> Result<Vec<Value>> {
    single(ctx.input(0)?.clone())
}

fn dropout(ctx: &NodeContext) -> Result<Vec<Value>> {
    let training = match ctx.optional(2) {
        Some(_) => ctx.scalar(2)? != 0.0,
        None => false,
    };
    let ratio = match ctx.optional(1) {
        Some(_) => ctx.scalar(1)?,
        None => ctx.attr_float("ratio", 0.5)? as f64,
    };
    if training && ratio != 0.0 {
        return Err(ctx.error("training-mode Dropout with a ratio above 0 is not supported"));
    }
    let x = ctx.input(0)?.clone();
    let mask = ctx.core(Tensor::ones(x.shape(), DType::Bool, ctx.device))?;
    Ok(vec![x, Value::Tensor(mask)])
}

/// CumSum and CumProd along the axis of input 1 (`exclusive`: the element itself left out;
/// `reverse`: from the end).
fn cumulative(ctx: &NodeContext, product: bool) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let axis = ctx.axis(ctx.scalar(1)? as i64, x.rank())? as isize;
    let exclusive = ctx.attr_int("exclusive", 0)? != 0;
    let reverse = ctx.attr_int("reverse", 0)? != 0;
    let out = ctx.core((|| {
        let mut input = if reverse { x.flip(&[axis])? } else { x.clone() };
        let size = input.dim(axis)?;
        if exclusive && size > 0 {
            // Shift by one along the axis, the identity first.
            let mut shape = input.shape().to_vec();
            shape[axis as usize] = 1;
            let first = Tensor::full(
                &shape,
                if product { 1.0 } else { 0.0 },
                input.dtype(),
                input.device(),
            )?;
            let rest = input.narrow(axis, 0, size - 1)?;
            input = Tensor::cat(&[&first, &rest], axis)?;
        }
        let mut out = if product {
            // The core's cumprod takes floats: integers go through float64 (exact while the
            // products stay below 2^53) on the CPU.
            if input.dtype().is_float() {
                input.cumprod(axis)?
            } else {
                let wide = input
                    .to_device(&anygrad_core::Device::Cpu)?
                    .to_dtype(DType::F64)?;
                wide.cumprod(axis)?
                    .to_dtype(input.dtype())?
                    .to_device(input.device())?
            }
        } else {
            input.cumsum(axis)?
        };
        if reverse {
            out = out.flip(&[axis])?;
        }
        Ok(out)
    })())?;
    single(out)
}

fn one_hot(ctx: &NodeContext) -> Result<Vec<Value>> {
    let indices = ctx.input(0)?.clone();
    let depth = ctx.scalar(1)?;
    if !(depth >= 1.0 && depth <= crate::value::MAX_ELEMENTS as f64) {
        return Err(ctx.error(format!("depth {depth} must be positive")));
    }
    let depth = depth as i64;
    let on_off = ctx.tensor(2)?;
    if on_off.numel() != 2 {
        return Err(ctx.error("values must hold [off, on]"));
    }
    let rank = indices.shape().len() + 1;
    let axis = ctx.axis(ctx.attr_int("axis", -1)?, rank)?;
    let raw = match &indices {
        Value::Int64(v) => v.data.clone(),
        Value::Tensor(t) => ctx
            .core(t.to_vec_f64())?
            .into_iter()
            .map(|x| x as i64)
            .collect(),
    };
    // Negative indices count from the end; out-of-range ones select no class.
    let fixed: Vec<i32> = raw
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + depth } else { i };
            if (0..depth).contains(&j) {
                j as i32
            } else {
                -1
            }
        })
        .collect();
    let out = ctx.core((|| {
        let index =
            Tensor::from_vec(fixed, indices.shape(), ctx.device)?.unsqueeze(axis as isize)?;
        let mut shape = vec![1usize; rank];
        shape[axis] = depth as usize;
        let classes =
            Tensor::arange(0.0, depth as f64, 1.0, DType::I32, ctx.device)?.reshape(shape)?;
        let hot = classes.eq(&index)?;
        let off = on_off.narrow(0, 0, 1)?.reshape(Vec::<usize>::new())?;
        let on = on_off.narrow(0, 1, 1)?.reshape(Vec::<usize>::new())?;
        Tensor::where_(&hot, &on, &off)
    })())?;
    single(out)
}

fn top_k(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let k = if ctx.opset >= 10 {
        ctx.scalar(1)? as i64
    } else {
        ctx.attr_int("k", 0)?
    };
    let k = usize::try_from(k).map_err(|_| ctx.error(format!("k = {k}")))?;
    let axis = ctx.axis(ctx.attr_int("axis", -1)?, x.rank())? as isize;
    let largest = ctx.attr_int("largest", 1)? != 0;
    let sorted = ctx.attr_int("sorted", 1)? != 0;
    let (values, indices) = ctx.core(x.topk(k, axis, largest, sorted))?;
    Ok(vec![Value::Tensor(values), Value::Tensor(indices)])
}

fn non_zero(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    if x.rank() == 0 {
        return Err(ctx.error("NonZero of a scalar is not supported"));
    }
    let positions = ctx.core(x.nonzero())?;
    let out = ctx.core(positions.t().and_then(|t| t.contiguous()))?;
    single(Value::Tensor(out).to_int64().map_err(|e| ctx.error(e))?)
}

fn trilu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let k = match ctx.optional(1) {
        Some(_) => ctx.scalar(1)? as isize,
        None => 0,
    };
    let upper = ctx.attr_int("upper", 1)? != 0;
    single(ctx.core(if upper { x.triu(k) } else { x.tril(k) })?)
}

fn eye_like(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input = ctx.input(0)?;
    let (rows, cols) = match input.shape() {
        &[r, c] => (r, c),
        other => return Err(ctx.error(format!("needs a 2-D input, got {other:?}"))),
    };
    let k = ctx.attr_int("k", 0)?;
    let to = match ctx.attr_opt_int("dtype")? {
        Some(code) => DataType::try_from(code as i32)
            .map_err(|_| ctx.error(format!("unknown element type {code}")))?,
        None => match input {
            Value::Int64(_) => DataType::Int64,
            Value::Tensor(t) => data_type_of(t.dtype()),
        },
    };
    let mut ones = vec![0f32; rows * cols];
    for r in 0..rows {
        let c = r as i64 + k;
        if c >= 0 && (c as usize) < cols {
            ones[r * cols + c as usize] = 1.0;
        }
    }
    let eye = ctx.core(Tensor::from_vec(ones, &[rows, cols], ctx.device))?;
    single(cast_value(ctx, &Value::Tensor(eye), to)?)
}

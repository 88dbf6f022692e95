//! Indexed reads and writes: ScatterElements (and the older Scatter), ScatterND, GatherND and
//! Compress. The flat positions each element reads or writes are computed on the host (every
//! index checked against its dim); the device then gathers (`index_select`) or writes
//! (`index_add`, with a mask for overwrites). Reductions mul / max / min and int64 data run
//! on the host.

use anygrad_core::{DType, Device, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::{Int64Tensor, Value};

/// The indexed read/write operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("ScatterElements", scatter_elements),
    any_opset("Scatter", scatter_elements),
    any_opset("ScatterND", scatter_nd),
    any_opset("GatherND", gather_nd),
    any_opset("Compress", compress),
];

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// `index` made non-negative and checked against a dim of `size`.
fn checked(ctx: &NodeContext, index: i64, size: usize) -> Result<usize> {
    let j = if index < 0 {
        index + size as i64
    } else {
        index
    };
    if j < 0 || j >= size as i64 {
        return Err(ctx.error(format!(
            "index {index} is out of range for a dim of size {size}"
        )));
    }
    Ok(j as usize)
}

/// Write `updates` into `data` at the flat `positions` (one per update element) with
/// `reduction` (none, add, mul, max, min).
fn write(ctx: &NodeContext, positions: &[usize], reduction: &str) -> Result<Value> {
    let data = ctx.input(0)?;
    let shape = data.shape().to_vec();
    let count: usize = shape.iter().product();
    let host = !matches!(reduction, "none" | "add") || matches!(data, Value::Int64(_));
    if host {
        let reduce = |a: f64, b: f64| match reduction {
            "add" => a + b,
            "mul" => a * b,
            "max" => a.max(b),
            "min" => a.min(b),
            _ => b,
        };
        if let Value::Int64(d) = data {
            let u = ctx.int64(2)?;
            let mut out = d.data.clone();
            for (k, &p) in positions.iter().enumerate() {
                let (a, b) = (out[p], u.data[k]);
                out[p] = match reduction {
                    "add" => a.wrapping_add(b),
                    "mul" => a.wrapping_mul(b),
                    "max" => a.max(b),
                    "min" => a.min(b),
                    _ => b,
                };
            }
            return Ok(Value::Int64(Int64Tensor { shape, data: out }));
        }
        let d = ctx.tensor(0)?;
        let u = ctx.tensor(2)?;
        let mut out = ctx.core(d.to_vec_f64())?;
        let updates = ctx.core(u.to_vec_f64())?;
        for (k, &p) in positions.iter().enumerate() {
            out[p] = reduce(out[p], updates[k]);
        }
        let t = ctx.core(
            Tensor::from_vec(out, &shape, &Device::Cpu)
                .and_then(|t| t.to_dtype(d.dtype()))
                .and_then(|t| t.to_device(ctx.device)),
        )?;
        return Ok(Value::Tensor(t));
    }
    let d = ctx.tensor(0)?;
    let u = ctx.tensor(2)?;
    let m = positions.len();
    let out = ctx.core((|| {
        let index: Vec<i32> = positions.iter().map(|&p| p as i32).collect();
        let index = Tensor::from_vec(index, &[m], d.device())?;
        let flat = d.reshape([count])?;
        let values = u.reshape([m])?.to_dtype(d.dtype())?;
        if reduction == "add" {
            return flat.index_add(0, &index, &values)?.reshape(shape.clone());
        }
        let zeros = flat.zeros_like()?;
        let written = zeros.to_dtype(DType::F32)?.index_add(
            0,
            &index,
            &Tensor::ones(&[m], DType::F32, d.device())?,
        )?;
        let mask = written.gt_scalar(0.0)?;
        let placed = if d.dtype() == DType::Bool {
            zeros
                .to_dtype(DType::U8)?
                .index_add(0, &index, &values.to_dtype(DType::U8)?)?
                .to_dtype(DType::Bool)?
        } else {
            zeros.index_add(0, &index, &values)?
        };
        Tensor::where_(&mask, &placed, &flat)?.reshape(shape.clone())
    })())?;
    Ok(Value::Tensor(out))
}

fn scatter_elements(ctx: &NodeContext) -> Result<Vec<Value>> {
    let shape = ctx.input(0)?.shape().to_vec();
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, shape.len())?;
    let indices = ctx.int64(1)?;
    if indices.shape != ctx.input(2)?.shape() || indices.shape.len() != shape.len() {
        return Err(ctx.error("indices and updates must have one shape, of the data's rank"));
    }
    let data_strides = strides(&shape);
    let index_strides = strides(&indices.shape);
    let mut positions = Vec::with_capacity(indices.data.len());
    for (e, &i) in indices.data.iter().enumerate() {
        let mut flat = 0;
        for d in 0..shape.len() {
            let coordinate = if d == axis {
                checked(ctx, i, shape[d])?
            } else {
                let c = (e / index_strides[d]) % indices.shape[d];
                if c >= shape[d] {
                    return Err(ctx.error("indices reach outside the data"));
                }
                c
            };
            flat += coordinate * data_strides[d];
        }
        positions.push(flat);
    }
    let reduction = ctx.attr_string("reduction", "none")?;
    single(write(ctx, &positions, &reduction)?)
}

/// The flat start of each index tuple of `indices` (`[..., k]`) into `shape` after `batch`
/// leading batch dims, and the size of the slice each tuple selects.
fn tuple_starts(
    ctx: &NodeContext,
    shape: &[usize],
    indices: &Int64Tensor,
    batch: usize,
) -> Result<(Vec<usize>, usize)> {
    let k = *indices
        .shape
        .last()
        .ok_or_else(|| ctx.error("indices must have rank 1 or more"))?;
    if batch + k > shape.len() || indices.shape.len() <= batch {
        return Err(ctx.error(format!(
            "index tuples of {k} entries after {batch} batch dims do not fit data of rank {}",
            shape.len()
        )));
    }
    if shape[..batch] != indices.shape[..batch] {
        return Err(ctx.error("batch dims of data and indices differ"));
    }
    let data_strides = strides(shape);
    let slice: usize = shape[batch + k..].iter().product();
    let tuples = indices.data.len() / k.max(1);
    let per_batch = if batch == 0 {
        tuples
    } else {
        tuples / indices.shape[..batch].iter().product::<usize>().max(1)
    };
    let mut starts = Vec::with_capacity(tuples);
    for t in 0..tuples {
        let b = t.checked_div(per_batch).unwrap_or(0);
        let mut flat = if batch > 0 {
            b * shape[batch..].iter().product::<usize>()
        } else {
            0
        };
        for j in 0..k {
            let i = indices.data[t * k + j];
            flat += checked(ctx, i, shape[batch + j])? * data_strides[batch + j];
        }
        starts.push(flat);
    }
    Ok((starts, slice))
}

fn scatter_nd(ctx: &NodeContext) -> Result<Vec<Value>> {
    let shape = ctx.input(0)?.shape().to_vec();
    let indices = ctx.int64(1)?;
    let (starts, slice) = tuple_starts(ctx, &shape, &indices, 0)?;
    let update_count: usize = ctx.input(2)?.shape().iter().product();
    if update_count != starts.len() * slice {
        return Err(ctx.error("updates do not match the indexed slices"));
    }
    let positions: Vec<usize> = starts
        .iter()
        .flat_map(|&s| (0..slice).map(move |j| s + j))
        .collect();
    let reduction = ctx.attr_string("reduction", "none")?;
    single(write(ctx, &positions, &reduction)?)
}

fn gather_nd(ctx: &NodeContext) -> Result<Vec<Value>> {
    let shape = ctx.input(0)?.shape().to_vec();
    let indices = ctx.int64(1)?;
    let batch = usize::try_from(ctx.attr_int("batch_dims", 0)?)
        .map_err(|_| ctx.error("negative batch_dims"))?;
    let (starts, slice) = tuple_starts(ctx, &shape, &indices, batch)?;
    let k = indices.shape.last().copied().unwrap_or(0);
    let mut out_shape = indices.shape[..indices.shape.len() - 1].to_vec();
    out_shape.extend_from_slice(&shape[batch + k..]);
    let positions: Vec<usize> = starts
        .iter()
        .flat_map(|&s| (0..slice).map(move |j| s + j))
        .collect();
    let count: usize = shape.iter().product();
    single(gather_flat(ctx, &positions, count, out_shape)?)
}

/// The elements of input 0 at flat `positions`, shaped `shape`.
fn gather_flat(
    ctx: &NodeContext,
    positions: &[usize],
    count: usize,
    shape: Vec<usize>,
) -> Result<Value> {
    if let Value::Int64(d) = ctx.input(0)? {
        let data = positions.iter().map(|&p| d.data[p]).collect();
        return Ok(Value::Int64(Int64Tensor { shape, data }));
    }
    let d = ctx.tensor(0)?;
    let index: Vec<i32> = positions.iter().map(|&p| p as i32).collect();
    let m = index.len();
    let out = ctx.core(
        Tensor::from_vec(index, &[m], d.device())
            .and_then(|i| d.reshape([count])?.index_select(0, &i))
            .and_then(|t| t.reshape(shape)),
    )?;
    Ok(Value::Tensor(out))
}

fn compress(ctx: &NodeContext) -> Result<Vec<Value>> {
    let shape = ctx.input(0)?.shape().to_vec();
    let condition = ctx.ints(1)?;
    let axis = match ctx.attr_opt_int("axis")? {
        Some(a) => Some(ctx.axis(a, shape.len())?),
        None => None,
    };
    let size = match axis {
        Some(a) => shape[a],
        None => shape.iter().product(),
    };
    let kept: Vec<usize> = condition
        .iter()
        .take(size)
        .enumerate()
        .filter(|(_, &c)| c != 0)
        .map(|(i, _)| i)
        .collect();
    match axis {
        None => {
            let count = size;
            single(gather_flat(ctx, &kept, count, vec![kept.len()])?)
        }
        Some(a) => {
            let strides_of = strides(&shape);
            let outer: usize = shape[..a].iter().product();
            let inner: usize = shape[a + 1..].iter().product();
            let mut positions = Vec::with_capacity(outer * kept.len() * inner);
            for o in 0..outer {
                for &k in &kept {
                    for i in 0..inner {
                        positions.push(o * shape[a] * inner + k * strides_of[a] + i);
                    }
                }
            }
            let mut out_shape = shape.clone();
            out_shape[a] = kept.len();
            single(gather_flat(
                ctx,
                &positions,
                shape.iter().product(),
                out_shape,
            )?)
        }
    }
}

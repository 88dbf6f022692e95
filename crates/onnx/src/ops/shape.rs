//! Shape and movement operators: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
//! Split, Slice, Gather, GatherElements, Expand, Tile, Pad, CenterCropPad, DepthToSpace,
//! SpaceToDepth, ReverseSequence, Shape, Size, ConstantOfShape, Range. Movement ops run once over device
//! tensors, or over position tensors standing for int64 host values (`host_int64.rs`), so
//! shape arithmetic stays exact.

use anygrad_core::{DType, Device, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::host_int64::{self, broadcast_shape};
use crate::tensor_data::decode_tensor;
use crate::value::{element_count, Int64Tensor, Value};

/// The shape and movement operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Reshape", reshape),
    any_opset("Flatten", flatten),
    any_opset("Squeeze", squeeze),
    any_opset("Unsqueeze", unsqueeze),
    any_opset("Transpose", transpose),
    any_opset("Concat", concat),
    any_opset("Split", split),
    any_opset("Slice", slice),
    any_opset("Gather", gather),
    any_opset("GatherElements", gather_elements),
    any_opset("Expand", expand),
    any_opset("Tile", tile),
    any_opset("Pad", pad),
    any_opset("DepthToSpace", depth_to_space),
    any_opset("SpaceToDepth", space_to_depth),
    any_opset("Shape", shape),
    any_opset("Size", size),
    any_opset("ConstantOfShape", constant_of_shape),
    any_opset("Range", range),
    any_opset("CenterCropPad", center_crop_pad),
    any_opset("ReverseSequence", reverse_sequence),
];

/// ReverseSequence: for each batch entry, its first `sequence_lens[b]` steps along the time
/// axis reversed, the rest kept.
fn reverse_sequence(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let lengths = ctx.ints(1)?;
    let batch_axis = ctx.axis(ctx.attr_int("batch_axis", 1)?, rank)?;
    let time_axis = ctx.axis(ctx.attr_int("time_axis", 0)?, rank)?;
    if batch_axis == time_axis {
        return Err(ctx.error("batch_axis and time_axis must differ"));
    }
    let (batches, steps) = (x.shape()[batch_axis], x.shape()[time_axis]);
    if lengths.len() != batches {
        return Err(ctx.error("sequence_lens must hold one length per batch entry"));
    }
    let mut shape = vec![1usize; rank];
    shape[batch_axis] = batches;
    shape[time_axis] = steps;
    let mut index = Vec::with_capacity(batches * steps);
    let source = |b: usize, t: usize| -> i32 {
        let len = lengths[b].clamp(0, steps as i64) as usize;
        if t < len {
            (len - 1 - t) as i32
        } else {
            t as i32
        }
    };
    if batch_axis < time_axis {
        for b in 0..batches {
            for t in 0..steps {
                index.push(source(b, t));
            }
        }
    } else {
        for t in 0..steps {
            for b in 0..batches {
                index.push(source(b, t));
            }
        }
    }
    let out = ctx.core(
        Tensor::from_vec(index, &shape, x.device())
            .and_then(|i| i.broadcast_to(x.shape())?.contiguous())
            .and_then(|i| x.gather(time_axis as isize, &i)),
    )?;
    single(out)
}

/// CenterCropPad: each listed axis cropped or zero-padded to the target size around its
/// center (the extra element of an odd difference at the end).
fn center_crop_pad(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let target = ctx.ints(1)?;
    let axes: Vec<usize> = match ctx.attr_ints("axes")? {
        Some(a) => a
            .iter()
            .map(|&a| ctx.axis(a, rank))
            .collect::<Result<_>>()?,
        None => (0..rank).collect(),
    };
    if target.len() != axes.len() {
        return Err(ctx.error("shape must hold one size per axis"));
    }
    let target = usize_shape(ctx, &target)?;
    let mut out = x;
    for (&axis, &t) in axes.iter().zip(&target) {
        let n = out.shape()[axis];
        let a = axis as isize;
        if n > t {
            out = ctx.core(out.narrow(a, (n - t) / 2, t))?;
        } else if n < t {
            let before = (t - n) / 2;
            let mut side = out.shape().to_vec();
            side[axis] = before;
            let head = ctx.core(Tensor::zeros(&side, out.dtype(), out.device()))?;
            side[axis] = t - n - before;
            let tail = ctx.core(Tensor::zeros(&side, out.dtype(), out.device()))?;
            out = ctx.core(Tensor::cat(&[&head, &out, &tail], a))?;
        }
    }
    single(out)
}

/// `op` over the data inputs `data`: on device tensors, or on positions standing for int64
/// host values when any of them is one.
fn movement(
    ctx: &NodeContext,
    data: &[usize],
    op: impl FnOnce(&[Tensor]) -> anygrad_core::Result<Tensor>,
) -> Result<Value> {
    let host = data
        .iter()
        .any(|&i| matches!(ctx.optional(i), Some(Value::Int64(_))));
    if host {
        let values = data
            .iter()
            .map(|&i| ctx.int64(i))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Int64Tensor> = values.iter().collect();
        let out = host_int64::through_positions(&refs, op).map_err(|e| ctx.error(e))?;
        return Ok(Value::Int64(out));
    }
    let tensors = data
        .iter()
        .map(|&i| ctx.tensor(i))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Tensor(ctx.core(op(&tensors))?))
}

/// An int32 index tensor on `device`.
fn index_tensor(indices: &[usize], device: &Device) -> anygrad_core::Result<Tensor> {
    let values: Vec<i32> = indices.iter().map(|&i| i as i32).collect();
    let count = values.len();
    Tensor::from_vec(values, &[count], device)
}

/// A shape from int64 values, refusing negative dims and absurd sizes.
fn usize_shape(ctx: &NodeContext, dims: &[i64]) -> Result<Vec<usize>> {
    crate::tensor_data::checked_shape(dims).map_err(|e| ctx.error(e))
}

fn reshape(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let target = if ctx.opset < 5 {
        ctx.attr_ints("shape")?
            .ok_or_else(|| ctx.error("attribute `shape` is required"))?
    } else {
        ctx.ints(1)?
    };
    let allow_zero = ctx.attr_int("allowzero", 0)? != 0;
    let total: usize = input_shape.iter().product();
    let mut shape = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, &d) in target.iter().enumerate() {
        match d {
            0 if !allow_zero => shape.push(*input_shape.get(i).ok_or_else(|| {
                ctx.error(format!(
                    "shape {target:?}: dim {i} copies a dim the input lacks"
                ))
            })?),
            -1 if infer.is_none() => {
                infer = Some(i);
                shape.push(1);
            }
            d if d >= 0 => shape.push(d as usize),
            _ => return Err(ctx.error(format!("invalid target shape {target:?}"))),
        }
    }
    element_count(&shape).map_err(|e| ctx.error(e))?;
    if let Some(i) = infer {
        let known: usize = shape.iter().product();
        if known == 0 || !total.is_multiple_of(known) {
            return Err(ctx.error(format!("cannot reshape {input_shape:?} to {target:?}")));
        }
        shape[i] = total / known;
    }
    if shape.iter().product::<usize>() != total {
        return Err(ctx.error(format!(
            "cannot reshape {input_shape:?} ({total} elements) to {shape:?}"
        )));
    }
    single(movement(ctx, &[0], |t| t[0].reshape(shape))?)
}

fn flatten(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let rank = input_shape.len() as i64;
    let mut axis = ctx.attr_int("axis", 1)?;
    if axis < 0 {
        axis += rank;
    }
    if axis < 0 || axis > rank {
        return Err(ctx.error(format!("axis {axis} is out of range for rank {rank}")));
    }
    let rows: usize = input_shape[..axis as usize].iter().product();
    let cols: usize = input_shape[axis as usize..].iter().product();
    single(movement(ctx, &[0], |t| t[0].reshape([rows, cols]))?)
}

/// Axes from the attribute (before `input_since`) or input 1.
fn axes_of(ctx: &NodeContext, input_since: i64) -> Result<Option<Vec<i64>>> {
    if ctx.opset >= input_since {
        ctx.optional_ints(1)
    } else {
        ctx.attr_ints("axes")
    }
}

fn squeeze(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let rank = input_shape.len();
    let axes = axes_of(ctx, 13)?;
    let mut drop = vec![false; rank];
    match axes {
        Some(axes) if !axes.is_empty() => {
            for a in axes {
                let d = ctx.axis(a, rank)?;
                if input_shape[d] != 1 {
                    return Err(
                        ctx.error(format!("cannot squeeze dim {d} of size {}", input_shape[d]))
                    );
                }
                drop[d] = true;
            }
        }
        _ => {
            for (d, &s) in input_shape.iter().enumerate() {
                drop[d] = s == 1;
            }
        }
    }
    let shape: Vec<usize> = input_shape
        .iter()
        .zip(&drop)
        .filter(|(_, &dropped)| !dropped)
        .map(|(&s, _)| s)
        .collect();
    single(movement(ctx, &[0], |t| t[0].reshape(shape))?)
}

fn unsqueeze(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let axes = axes_of(ctx, 13)?.ok_or_else(|| ctx.error("axes are required"))?;
    let rank = input_shape.len() + axes.len();
    let mut inserted = vec![false; rank];
    for a in axes {
        let d = ctx.axis(a, rank)?;
        if inserted[d] {
            return Err(ctx.error(format!("axis {a} is repeated")));
        }
        inserted[d] = true;
    }
    let mut rest = input_shape.iter();
    let shape: Vec<usize> = inserted
        .iter()
        .map(|&new| if new { 1 } else { *rest.next().unwrap_or(&1) })
        .collect();
    single(movement(ctx, &[0], |t| t[0].reshape(shape))?)
}

fn transpose(ctx: &NodeContext) -> Result<Vec<Value>> {
    let rank = ctx.input(0)?.shape().len();
    let perm = match ctx.attr_ints("perm")? {
        Some(p) => p
            .iter()
            .map(|&a| ctx.axis(a, rank))
            .collect::<Result<Vec<_>>>()?,
        None => (0..rank).rev().collect(),
    };
    single(movement(ctx, &[0], |t| t[0].permute(&perm))?)
}

fn concat(ctx: &NodeContext) -> Result<Vec<Value>> {
    let present: Vec<usize> = (0..ctx.input_count())
        .filter(|&i| ctx.optional(i).is_some())
        .collect();
    let first = ctx.input(*present.first().ok_or_else(|| ctx.error("no inputs"))?)?;
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, first.shape().len())? as isize;
    single(movement(ctx, &present, |t| {
        let refs: Vec<&Tensor> = t.iter().collect();
        Tensor::cat(&refs, axis)
    })?)
}

fn split(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, input_shape.len())?;
    let size = input_shape[axis];
    let outputs = ctx.node.output.len();
    let sizes: Vec<usize> = match if ctx.opset >= 13 {
        ctx.optional_ints(1)?
    } else {
        ctx.attr_ints("split")?
    } {
        Some(s) if !s.is_empty() => s
            .iter()
            .map(|&x| usize::try_from(x).map_err(|_| ctx.error(format!("negative split {x}"))))
            .collect::<Result<_>>()?,
        _ => {
            let parts = match ctx.attr_opt_int("num_outputs")? {
                Some(n) if n > 0 => n as usize,
                Some(n) => return Err(ctx.error(format!("num_outputs {n} must be positive"))),
                None => outputs,
            };
            if parts == 0 || parts != outputs {
                return Err(ctx.error(format!("{parts} parts for {outputs} outputs")));
            }
            let chunk = size.div_ceil(parts);
            (0..parts)
                .map(|i| chunk.min(size.saturating_sub(i * chunk)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != size {
        return Err(ctx.error(format!(
            "split sizes {sizes:?} do not add up to dim {axis} of size {size}"
        )));
    }
    let mut results = Vec::with_capacity(sizes.len());
    let mut start = 0;
    for len in sizes {
        results.push(movement(ctx, &[0], |t| {
            t[0].narrow(axis as isize, start, len)
        })?);
        start += len;
    }
    Ok(results)
}

/// The positions `start, start + step, ...` before `end` along a dim of `dim` elements,
/// clamped as ONNX's Slice does.
fn slice_positions(dim: usize, start: i64, end: i64, step: i64) -> Vec<usize> {
    let n = dim as i64;
    let fix = |x: i64| if x < 0 { x.saturating_add(n) } else { x };
    let (mut s, mut e) = (fix(start), fix(end));
    let mut out = Vec::new();
    if step > 0 {
        s = s.clamp(0, n);
        e = e.clamp(0, n);
        while s < e {
            out.push(s as usize);
            s = s.saturating_add(step);
        }
    } else {
        s = s.clamp(0, n - 1);
        e = e.clamp(-1, n - 1);
        while s > e {
            out.push(s as usize);
            s = s.saturating_add(step);
        }
    }
    out
}

fn slice(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let rank = input_shape.len();
    let (starts, ends, axes, steps) = if ctx.opset < 10 {
        (
            ctx.attr_ints("starts")?.unwrap_or_default(),
            ctx.attr_ints("ends")?.unwrap_or_default(),
            ctx.attr_ints("axes")?,
            None,
        )
    } else {
        (
            ctx.ints(1)?,
            ctx.ints(2)?,
            ctx.optional_ints(3)?,
            ctx.optional_ints(4)?,
        )
    };
    if starts.len() != ends.len() {
        return Err(ctx.error("starts and ends differ in length"));
    }
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(ctx.error("starts, ends, axes and steps differ in length"));
    }
    let mut plan = Vec::new();
    for i in 0..starts.len() {
        let axis = ctx.axis(axes[i], rank)?;
        if steps[i] == 0 {
            return Err(ctx.error("a step of 0"));
        }
        plan.push((
            axis,
            slice_positions(input_shape[axis], starts[i], ends[i], steps[i]),
            steps[i] == 1,
        ));
    }
    single(movement(ctx, &[0], |t| {
        let mut out = t[0].clone();
        for (axis, positions, contiguous) in &plan {
            let axis = *axis as isize;
            out = match positions.first() {
                None => out.narrow(axis, 0, 0)?,
                Some(&first) if *contiguous => out.narrow(axis, first, positions.len())?,
                Some(_) => out.index_select(axis, &index_tensor(positions, out.device())?)?,
            };
        }
        Ok(out)
    })?)
}

/// Index values made non-negative and checked against a dim of `size`.
fn normalized_indices(ctx: &NodeContext, indices: &[i64], size: usize) -> Result<Vec<usize>> {
    indices
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + size as i64 } else { i };
            if j < 0 || j >= size as i64 {
                Err(ctx.error(format!(
                    "index {i} is out of range for a dim of size {size}"
                )))
            } else {
                Ok(j as usize)
            }
        })
        .collect()
}

fn gather(ctx: &NodeContext) -> Result<Vec<Value>> {
    let data_shape = ctx.input(0)?.shape().to_vec();
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, data_shape.len())?;
    let indices = ctx.int64(1)?;
    let picked = normalized_indices(ctx, &indices.data, data_shape[axis])?;
    let mut shape = data_shape[..axis].to_vec();
    shape.extend_from_slice(&indices.shape);
    shape.extend_from_slice(&data_shape[axis + 1..]);
    single(movement(ctx, &[0], |t| {
        let index = index_tensor(&picked, t[0].device())?;
        t[0].index_select(axis as isize, &index)?.reshape(shape)
    })?)
}

fn gather_elements(ctx: &NodeContext) -> Result<Vec<Value>> {
    let data_shape = ctx.input(0)?.shape().to_vec();
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, data_shape.len())?;
    let indices = ctx.int64(1)?;
    let picked = normalized_indices(ctx, &indices.data, data_shape[axis])?;
    single(movement(ctx, &[0], |t| {
        let index = index_tensor(&picked, t[0].device())?.reshape(indices.shape.clone())?;
        t[0].gather(axis as isize, &index)
    })?)
}

fn expand(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let target = ctx.ints(1)?;
    let target = usize_shape(ctx, &target)?;
    let shape = broadcast_shape(&input_shape, &target).map_err(|e| ctx.error(e))?;
    element_count(&shape).map_err(|e| ctx.error(e))?;
    single(movement(ctx, &[0], |t| {
        t[0].broadcast_to(&shape)?.contiguous()
    })?)
}

fn tile(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input_shape = ctx.input(0)?.shape().to_vec();
    let repeats = usize_shape(ctx, &ctx.ints(1)?)?;
    if repeats.len() != input_shape.len() {
        return Err(ctx.error("repeats must have one entry per dim"));
    }
    let out: Vec<usize> = input_shape
        .iter()
        .zip(&repeats)
        .map(|(a, b)| a * b)
        .collect();
    element_count(&out).map_err(|e| ctx.error(e))?;
    single(movement(ctx, &[0], |t| t[0].repeat(&repeats))?)
}

fn pad(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let mode = ctx.attr_string("mode", "constant")?;
    let (pads, value, axes) = if ctx.opset < 11 {
        let pads = ctx
            .attr_ints("pads")?
            .or(ctx.attr_ints("paddings")?)
            .ok_or_else(|| ctx.error("attribute `pads` is required"))?;
        (pads, ctx.attr_float("value", 0.0)? as f64, None)
    } else {
        let value = match ctx.optional(2) {
            Some(v) if !v.shape().is_empty() && v.shape().iter().product::<usize>() == 0 => 0.0,
            Some(_) => ctx.scalar(2)?,
            None => 0.0,
        };
        (ctx.ints(1)?, value, ctx.optional_ints(3)?)
    };
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|&a| ctx.axis(a, rank))
            .collect::<Result<_>>()?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(ctx.error(format!(
            "pads {pads:?} must hold a begin and an end for each of {} axes",
            axes.len()
        )));
    }
    let mut out = x;
    for (k, &axis) in axes.iter().enumerate() {
        let (mut begin, mut end) = (pads[k], pads[k + axes.len()]);
        let a = axis as isize;
        if begin < 0 || end < 0 {
            let n = out.shape()[axis] as i64;
            let from = (-begin).max(0);
            let to = n - (-end).max(0);
            if to < from {
                return Err(ctx.error(format!("pads {pads:?} crop away dim {axis}")));
            }
            out = ctx.core(out.narrow(a, from as usize, (to - from) as usize))?;
            begin = begin.max(0);
            end = end.max(0);
        }
        if begin == 0 && end == 0 {
            continue;
        }
        let n = out.shape()[axis];
        let (begin, end) = (begin as usize, end as usize);
        let mut grown = out.shape().to_vec();
        grown[axis] = n
            .checked_add(begin)
            .and_then(|g| g.checked_add(end))
            .ok_or_else(|| ctx.error(format!("pads {pads:?} overflow")))?;
        element_count(&grown).map_err(|e| ctx.error(e))?;
        out = match mode.as_str() {
            "constant" => {
                let mut parts = Vec::new();
                let mut side = out.shape().to_vec();
                side[axis] = begin;
                let before = ctx.core(Tensor::full(&side, value, out.dtype(), out.device()))?;
                side[axis] = end;
                let after = ctx.core(Tensor::full(&side, value, out.dtype(), out.device()))?;
                if begin > 0 {
                    parts.push(&before);
                }
                parts.push(&out);
                if end > 0 {
                    parts.push(&after);
                }
                ctx.core(Tensor::cat(&parts, a))?
            }
            "edge" | "reflect" | "wrap" => {
                if n == 0 || (mode == "reflect" && (begin >= n || end >= n)) {
                    return Err(ctx.error(format!(
                        "{mode} padding of {begin} and {end} needs a larger dim than {n}"
                    )));
                }
                let source: Vec<usize> = (0..n + begin + end)
                    .map(|i| {
                        let j = i as i64 - begin as i64;
                        let last = n as i64 - 1;
                        (match mode.as_str() {
                            "edge" => j.clamp(0, last),
                            "reflect" => {
                                if j < 0 {
                                    -j
                                } else if j > last {
                                    2 * last - j
                                } else {
                                    j
                                }
                            }
                            _ => j.rem_euclid(n as i64),
                        }) as usize
                    })
                    .collect();
                let index = ctx.core(index_tensor(&source, out.device()))?;
                ctx.core(out.index_select(a, &index))?
            }
            other => return Err(ctx.error(format!("pad mode `{other}` is not supported"))),
        };
    }
    single(out)
}

fn depth_to_space(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let b = ctx.attr_int("blocksize", 0)?;
    let crd = ctx.attr_string("mode", "DCR")? == "CRD";
    let [n, c, h, w] = four_dims(ctx, &x)?;
    if !(1..=1 << 16).contains(&b) || c % (b * b) as usize != 0 {
        return Err(ctx.error(format!("blocksize {b} does not divide the channels {c}")));
    }
    let b = b as usize;
    let out = if crd {
        x.reshape([n, c / (b * b), b, b, h, w])
            .and_then(|t| t.permute(&[0, 1, 4, 2, 5, 3]))
    } else {
        x.reshape([n, b, b, c / (b * b), h, w])
            .and_then(|t| t.permute(&[0, 3, 4, 1, 5, 2]))
    };
    let out = ctx.core(out.and_then(|t| t.reshape([n, c / (b * b), h * b, w * b])))?;
    single(out)
}

fn space_to_depth(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let b = ctx.attr_int("blocksize", 0)?;
    let [n, c, h, w] = four_dims(ctx, &x)?;
    if !(1..=1 << 16).contains(&b) || h % b as usize != 0 || w % b as usize != 0 {
        return Err(ctx.error(format!("blocksize {b} does not divide {h}x{w}")));
    }
    let b = b as usize;
    let crd = ctx.attr_string("mode", "DCR")? == "CRD";
    let order: &[usize] = if crd {
        &[0, 1, 3, 5, 2, 4]
    } else {
        &[0, 3, 5, 1, 2, 4]
    };
    let out = x
        .reshape([n, c, h / b, b, w / b, b])
        .and_then(|t| t.permute(order))
        .and_then(|t| t.reshape([n, c * b * b, h / b, w / b]));
    single(ctx.core(out)?)
}

/// The dims of a rank-4 tensor.
fn four_dims(ctx: &NodeContext, x: &Tensor) -> Result<[usize; 4]> {
    match x.shape() {
        &[n, c, h, w] => Ok([n, c, h, w]),
        other => Err(ctx.error(format!("needs a 4-D input, got {other:?}"))),
    }
}

fn shape(ctx: &NodeContext) -> Result<Vec<Value>> {
    let dims: Vec<i64> = ctx.input(0)?.shape().iter().map(|&d| d as i64).collect();
    let rank = dims.len() as i64;
    let clamp = |x: i64| {
        let x = if x < 0 { x + rank } else { x };
        x.clamp(0, rank) as usize
    };
    let start = clamp(ctx.attr_int("start", 0)?);
    let end = match ctx.attr_opt_int("end")? {
        Some(e) => clamp(e),
        None => rank as usize,
    };
    let picked = if start < end {
        dims[start..end].to_vec()
    } else {
        Vec::new()
    };
    single(Int64Tensor::vector(picked))
}

fn size(ctx: &NodeContext) -> Result<Vec<Value>> {
    let count: usize = ctx.input(0)?.shape().iter().product();
    single(Int64Tensor {
        shape: Vec::new(),
        data: vec![count as i64],
    })
}

fn constant_of_shape(ctx: &NodeContext) -> Result<Vec<Value>> {
    let shape = usize_shape(ctx, &ctx.ints(0)?)?;
    let count: usize = shape.iter().product();
    let (value, dtype) = match ctx.attr_tensor("value")? {
        Some(t) => {
            let host = decode_tensor(t, None)?;
            let values = host.data.to_f64();
            let first = *values
                .first()
                .ok_or_else(|| ctx.error("attribute `value` holds no value"))?;
            match host.to_value(ctx.device).map_err(|e| ctx.error(e))? {
                Value::Int64(_) => {
                    return single(Int64Tensor {
                        shape,
                        data: vec![first as i64; count],
                    })
                }
                Value::Tensor(t) => (first, t.dtype()),
            }
        }
        None => (0.0, DType::F32),
    };
    single(ctx.core(Tensor::full(&shape, value, dtype, ctx.device))?)
}

fn range(ctx: &NodeContext) -> Result<Vec<Value>> {
    let start_value = ctx.input(0)?;
    let integer = start_value.is_integer();
    let (start, limit, delta) = (ctx.scalar(0)?, ctx.scalar(1)?, ctx.scalar(2)?);
    if delta == 0.0 {
        return Err(ctx.error("delta is 0"));
    }
    let count = ((limit - start) / delta).ceil().max(0.0);
    if !count.is_finite() || count > crate::value::MAX_ELEMENTS as f64 {
        return Err(ctx.error(format!("{count} elements (absurd range)")));
    }
    let count = count as usize;
    if integer {
        let (s, d) = (start as i64, delta as i64);
        let data: Vec<i64> = (0..count as i64)
            .map(|i| s.wrapping_add(i.wrapping_mul(d)))
            .collect();
        let out = Int64Tensor::vector(data);
        return single(super::elementwise::integer_result(
            ctx,
            out,
            start_value,
            ctx.device,
        )?);
    }
    let values: Vec<f64> = (0..count).map(|i| start + i as f64 * delta).collect();
    let dtype = match start_value {
        Value::Tensor(t) => t.dtype(),
        Value::Int64(_) => DType::F32,
    };
    let t = ctx.core(
        Tensor::from_vec(values, &[count], &Device::Cpu)
            .and_then(|t| t.to_dtype(dtype))
            .and_then(|t| t.to_device(ctx.device)),
    )?;
    single(t)
}

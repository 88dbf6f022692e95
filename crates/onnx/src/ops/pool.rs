//! Pooling: MaxPool (with its Indices output), AveragePool and LpPool (asymmetric pads,
//! `auto_pad`, `ceil_mode`, `count_include_pad`, dilations, any number of spatial dims),
//! GlobalAveragePool and GlobalMaxPool. 1-D and 2-D float pooling without dilations runs on
//! the core's pooling; the rest visits the kernel's taps (`pool_by_taps`). Symmetric MaxPool
//! pads of at most half the kernel go to the core's pooling (which reads them as `-inf`);
//! other pads and the extra end rows of `ceil_mode` are explicit padding (`-inf` for max,
//! zeros with a count mask for average).

use anygrad_core::Tensor;

use super::conv::as_2d;
use super::geometry::windows;
use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The pooling operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("MaxPool", |c| pool(c, true)),
    any_opset("AveragePool", |c| pool(c, false)),
    any_opset("GlobalAveragePool", |c| global(c, false)),
    any_opset("GlobalMaxPool", |c| global(c, true)),
    any_opset("LpPool", lp_pool),
];

/// What a window computes.
#[derive(Clone, Copy)]
enum Reduction {
    /// The largest value (padding never wins).
    Max,
    /// The mean; padded positions count when `include_pad`.
    Average { include_pad: bool },
    /// `(sum |x|^p)^(1/p)`.
    Lp(f64),
}

/// Per spatial dim: the output size and the extra end padding `ceil_mode` needs.
#[allow(clippy::needless_range_loop)] // parallel per-dim lists
fn output_sizes(
    ctx: &NodeContext,
    spatial: &[usize],
    win: &super::geometry::Windows,
    ceil_mode: bool,
) -> Result<Vec<(usize, usize)>> {
    let mut out = Vec::with_capacity(spatial.len());
    for i in 0..spatial.len() {
        let span = (win.kernel[i].max(1) - 1).saturating_mul(win.dilations[i]) + 1;
        let padded = spatial[i] + win.pads_begin[i] + win.pads_end[i];
        if padded < span {
            return Err(ctx.error(format!(
                "window of {span} is larger than the padded input {padded}"
            )));
        }
        let rest = padded - span;
        let mut size = if ceil_mode {
            rest.div_ceil(win.strides[i]) + 1
        } else {
            rest / win.strides[i] + 1
        };
        if ceil_mode && (size - 1) * win.strides[i] >= spatial[i] + win.pads_begin[i] {
            size -= 1;
        }
        let extra = ((size - 1) * win.strides[i] + span).saturating_sub(padded);
        out.push((size, extra));
    }
    Ok(out)
}

/// `t` with `before` and `after` entries of `value` added along `axis`.
/// The taps of a pooling window (the product of its sizes), at most 2^20: each tap is one
/// strided slice of the input, so an absurd window is refused rather than looped over.
fn tap_count(ctx: &NodeContext, kernel: &[usize]) -> Result<usize> {
    kernel
        .iter()
        .try_fold(1usize, |acc, &k| acc.checked_mul(k))
        .filter(|&t| t <= 1 << 20)
        .ok_or_else(|| ctx.error(format!("kernel {kernel:?} has too many taps")))
}

/// The multi-index of tap number `k` of a window (row-major over the kernel's dims).
fn tap_index(k: usize, kernel: &[usize]) -> Vec<usize> {
    let mut tap = vec![0; kernel.len()];
    let mut rest = k;
    for i in (0..kernel.len()).rev() {
        tap[i] = rest % kernel[i].max(1);
        rest /= kernel[i].max(1);
    }
    tap
}

/// What one window tap reads of the (padded) input `t`: along each spatial dim, the positions
/// `tap · dilation + j · stride` for the `sizes[i].0` outputs.
fn tap_slice(
    t: &Tensor,
    tap: &[usize],
    sizes: &[(usize, usize)],
    win: &super::geometry::Windows,
) -> anygrad_core::Result<Tensor> {
    let mut out = t.clone();
    for (i, &(outputs, _)) in sizes.iter().enumerate() {
        let positions: Vec<i32> = (0..outputs)
            .map(|j| (tap[i] * win.dilations[i] + j * win.strides[i]) as i32)
            .collect();
        let count = positions.len();
        let index = Tensor::from_vec(positions, &[count], t.device())?;
        out = out.index_select((i + 2) as isize, &index)?;
    }
    Ok(out)
}

fn pad_axis(
    t: &Tensor,
    axis: usize,
    before: usize,
    after: usize,
    value: f64,
) -> anygrad_core::Result<Tensor> {
    if before == 0 && after == 0 {
        return Ok(t.clone());
    }
    let mut shape = t.shape().to_vec();
    shape[axis] = before;
    let head = Tensor::full(&shape, value, t.dtype(), t.device())?;
    shape[axis] = after;
    let tail = Tensor::full(&shape, value, t.dtype(), t.device())?;
    Tensor::cat(&[&head, t, &tail], axis as isize)
}

/// Pooling over any number of spatial dims by visiting the kernel's taps: each tap is a
/// strided slice of the padded input, and the windows' values are combined tap by tap
/// (dilations, 3-D inputs, Lp pooling).
#[allow(clippy::needless_range_loop)] // parallel per-dim lists
fn pool_by_taps(
    ctx: &NodeContext,
    x: &Tensor,
    win: &super::geometry::Windows,
    ceil_mode: bool,
    reduction: Reduction,
) -> Result<Tensor> {
    let spatial = x.shape()[2..].to_vec();
    let n = spatial.len();
    let sizes = output_sizes(ctx, &spatial, win, ceil_mode)?;
    let fill = match reduction {
        Reduction::Max => f64::NEG_INFINITY,
        _ => 0.0,
    };
    let mut padded = x.clone();
    for i in 0..n {
        padded = ctx.core(pad_axis(
            &padded,
            i + 2,
            win.pads_begin[i],
            win.pads_end[i] + sizes[i].1,
            fill,
        ))?;
    }
    if let Reduction::Lp(p) = reduction {
        padded = ctx.core(padded.abs().and_then(|a| a.pow_scalar(p)))?;
    }
    let taps = tap_count(ctx, &win.kernel)?;
    let mut acc: Option<Tensor> = None;
    for k in 0..taps {
        let part = ctx.core(tap_slice(&padded, &tap_index(k, &win.kernel), &sizes, win))?;
        acc = Some(match acc {
            None => part,
            Some(a) => ctx.core(match reduction {
                Reduction::Max => a.maximum(&part),
                _ => a.add(&part),
            })?,
        });
    }
    let acc = acc.ok_or_else(|| ctx.error("empty kernel"))?;
    match reduction {
        Reduction::Max => Ok(acc),
        Reduction::Lp(p) => ctx.core(acc.pow_scalar(1.0 / p)),
        Reduction::Average { include_pad } => {
            let mut shape = vec![1usize, 1];
            shape.extend_from_slice(&spatial);
            let mut mask = ctx.core(Tensor::ones(&shape, x.dtype(), x.device()))?;
            for i in 0..n {
                let inside = if include_pad { 1.0 } else { 0.0 };
                mask = ctx.core(pad_axis(
                    &mask,
                    i + 2,
                    win.pads_begin[i],
                    win.pads_end[i],
                    inside,
                ))?;
                mask = ctx.core(pad_axis(&mask, i + 2, 0, sizes[i].1, 0.0))?;
            }
            let mut counts: Option<Tensor> = None;
            for k in 0..taps {
                let part = ctx.core(tap_slice(&mask, &tap_index(k, &win.kernel), &sizes, win))?;
                counts = Some(match counts {
                    None => part,
                    Some(c) => ctx.core(c.add(&part))?,
                });
            }
            let counts = counts.ok_or_else(|| ctx.error("empty kernel"))?;
            ctx.core(acc.div(&counts))
        }
    }
}

fn lp_pool(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    if x.rank() < 3 {
        return Err(ctx.error("needs an input [N, C, spatial...]"));
    }
    let spatial = x.shape()[2..].to_vec();
    let kernel = kernel_shape(ctx)?;
    let win = windows(ctx, &spatial, kernel)?;
    let p = ctx.attr_int("p", 2)? as f64;
    let ceil_mode = ctx.attr_int("ceil_mode", 0)? != 0;
    single(pool_by_taps(ctx, &x, &win, ceil_mode, Reduction::Lp(p))?)
}

/// The `kernel_shape` attribute.
fn kernel_shape(ctx: &NodeContext) -> Result<Vec<usize>> {
    ctx.attr_ints("kernel_shape")?
        .ok_or_else(|| ctx.error("attribute `kernel_shape` is required"))?
        .iter()
        .map(|&k| usize::try_from(k).map_err(|_| ctx.error(format!("kernel size {k}"))))
        .collect()
}

fn global(ctx: &NodeContext, max: bool) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    if x.rank() < 3 {
        return Err(ctx.error("needs an input [N, C, spatial...]"));
    }
    let dims: Vec<isize> = (2..x.rank() as isize).collect();
    single(ctx.core(if max {
        x.max(&dims, true)
    } else {
        x.mean(&dims, true)
    })?)
}

fn pool(ctx: &NodeContext, max: bool) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    if x.rank() < 3 {
        return Err(ctx.error("needs an input [N, C, spatial...]"));
    }
    let spatial = x.shape()[2..].to_vec();
    let kernel = kernel_shape(ctx)?;
    let win = windows(ctx, &spatial, kernel)?;
    let count_include_pad = ctx.attr_int("count_include_pad", 0)? != 0;
    let ceil_mode = ctx.attr_int("ceil_mode", 0)? != 0;
    if max && ctx.node.output.get(1).is_some_and(|o| !o.is_empty()) {
        let storage_order = ctx.attr_int("storage_order", 0)?;
        let (values, indices) = max_pool_with_indices(ctx, &x, &win, ceil_mode, storage_order)?;
        return Ok(vec![Value::Tensor(values), Value::Tensor(indices)]);
    }
    if win.dilations.iter().any(|&d| d != 1) || x.rank() > 4 || !x.dtype().is_float() {
        let reduction = if max {
            Reduction::Max
        } else {
            Reduction::Average {
                include_pad: count_include_pad,
            }
        };
        let wide = if x.dtype().is_float() {
            x.clone()
        } else {
            ctx.core(x.to_dtype(anygrad_core::DType::F32))?
        };
        let y = pool_by_taps(ctx, &wide, &win, ceil_mode, reduction)?;
        return single(ctx.core(y.to_dtype(x.dtype()))?);
    }
    let one_d = x.rank() == 3;
    let x2 = as_2d(ctx, &x)?;
    // Height first; a 1-D input has a height of one and no window along it.
    let lift = |v: &[usize], fill: usize| -> Vec<usize> {
        if one_d {
            vec![fill, v[0]]
        } else {
            v.to_vec()
        }
    };
    let size = [x2.shape()[2], x2.shape()[3]];
    let kernel = lift(&win.kernel, 1);
    let strides = lift(&win.strides, 1);
    let begin = lift(&win.pads_begin, 0);
    let end = lift(&win.pads_end, 0);
    let mut extra = [0usize; 2];
    for i in 0..2 {
        let padded = size[i] + begin[i] + end[i];
        if padded < kernel[i] {
            return Err(ctx.error(format!(
                "kernel {} is larger than the padded input {padded}",
                kernel[i]
            )));
        }
        let span = padded - kernel[i];
        let mut out = if ceil_mode {
            span.div_ceil(strides[i]) + 1
        } else {
            span / strides[i] + 1
        };
        if ceil_mode && (out - 1) * strides[i] >= size[i] + begin[i] {
            out -= 1;
        }
        extra[i] = ((out - 1) * strides[i] + kernel[i]).saturating_sub(padded);
    }
    let k = (kernel[0], kernel[1]);
    let s = (strides[0], strides[1]);
    let padded = begin.iter().chain(&end).any(|&p| p > 0) || extra.iter().any(|&p| p > 0);
    let symmetric = begin == end && extra == [0, 0] && (0..2).all(|i| begin[i] * 2 <= kernel[i]);
    let y = if max && symmetric {
        // The core pads with -inf itself (and keeps a channels-last input so, as the native
        // models' pooling does); no padded copy of the input.
        ctx.core(x2.max_pool2d(k, s, (begin[0], begin[1])))?
    } else if max {
        let input = if padded {
            ctx.core(x2.pad(
                begin[1],
                end[1] + extra[1],
                begin[0],
                end[0] + extra[0],
                f64::NEG_INFINITY,
            ))?
        } else {
            x2
        };
        ctx.core(input.max_pool2d(k, s, (0, 0)))?
    } else if !padded {
        ctx.core(x2.avg_pool2d(k, s, (0, 0)))?
    } else {
        let input = ctx.core(x2.pad(
            begin[1],
            end[1] + extra[1],
            begin[0],
            end[0] + extra[0],
            0.0,
        ))?;
        let sums = ctx.core(input.avg_pool2d(k, s, (0, 0)))?;
        let fill = if count_include_pad { 1.0 } else { 0.0 };
        let ones = ctx.core(Tensor::ones(
            &[1, 1, size[0], size[1]],
            x2.dtype(),
            x2.device(),
        ))?;
        let mask = ctx.core(
            ones.pad(begin[1], end[1], begin[0], end[0], fill)
                .and_then(|m| m.pad(0, extra[1], 0, extra[0], 0.0)),
        )?;
        let counts = ctx.core(mask.avg_pool2d(k, s, (0, 0)))?;
        ctx.core(sums.div(&counts))?
    };
    single(if one_d { ctx.core(y.squeeze(2))? } else { y })
}

/// MaxPool with its Indices output: each window's maximum (the first in the window's
/// row-major order among equals) and its flat position in the input,
/// `((n * C + c) * H + h) * W + w` (column-major over the spatial dims with
/// `storage_order = 1`).
#[allow(clippy::needless_range_loop)] // parallel per-dim lists
fn max_pool_with_indices(
    ctx: &NodeContext,
    x: &Tensor,
    win: &super::geometry::Windows,
    ceil_mode: bool,
    storage_order: i64,
) -> Result<(Tensor, Tensor)> {
    let spatial = x.shape()[2..].to_vec();
    let n = spatial.len();
    let plane: usize = spatial.iter().product();
    if plane > i32::MAX as usize || x.numel() > i32::MAX as usize {
        return Err(ctx.error("too many elements for int32 indices"));
    }
    let sizes = output_sizes(ctx, &spatial, win, ceil_mode)?;
    // Position of every spatial element within its plane.
    let mut strides = vec![1usize; n];
    if storage_order == 1 {
        for i in 1..n {
            strides[i] = strides[i - 1] * spatial[i - 1];
        }
    } else {
        for i in (0..n.saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * spatial[i + 1];
        }
    }
    let mut position = vec![0i32; plane];
    for (flat, p) in position.iter_mut().enumerate() {
        let mut rest = flat;
        let mut at = 0;
        for i in (0..n).rev() {
            at += (rest % spatial[i]) * strides[i];
            rest /= spatial[i];
        }
        *p = at as i32;
    }
    let mut shape = vec![1usize, 1];
    shape.extend_from_slice(&spatial);
    let mut padded = x.clone();
    let mut positions = ctx.core(Tensor::from_vec(position, &shape, x.device()))?;
    for i in 0..n {
        let (b, e) = (win.pads_begin[i], win.pads_end[i] + sizes[i].1);
        padded = ctx.core(pad_axis(&padded, i + 2, b, e, f64::NEG_INFINITY))?;
        positions = ctx.core(pad_axis(&positions, i + 2, b, e, -1.0))?;
    }
    let taps = tap_count(ctx, &win.kernel)?;
    let mut best: Option<(Tensor, Tensor)> = None;
    for k in 0..taps {
        let tap = tap_index(k, &win.kernel);
        let value = ctx.core(tap_slice(&padded, &tap, &sizes, win))?;
        let place = ctx.core(tap_slice(&positions, &tap, &sizes, win))?;
        best = Some(match best {
            None => (
                value,
                ctx.core(
                    place.broadcast_to(
                        x.shape()[..2]
                            .iter()
                            .copied()
                            .chain(sizes.iter().map(|s| s.0))
                            .collect::<Vec<_>>()
                            .as_slice(),
                    ),
                )?,
            ),
            Some((v, p)) => {
                let better = ctx.core(value.gt(&v))?;
                (
                    ctx.core(Tensor::where_(&better, &value, &v))?,
                    ctx.core(Tensor::where_(&better, &place, &p))?,
                )
            }
        });
    }
    let (values, places) = best.ok_or_else(|| ctx.error("empty kernel"))?;
    // Offsets of each (n, c) plane.
    let (batch, channels) = (x.shape()[0], x.shape()[1]);
    let offsets: Vec<i32> = (0..batch * channels).map(|p| (p * plane) as i32).collect();
    let mut offset_shape = vec![batch, channels];
    offset_shape.extend(std::iter::repeat_n(1, n));
    let offsets = ctx.core(Tensor::from_vec(offsets, &offset_shape, x.device()))?;
    let indices = ctx.core(places.add(&offsets))?;
    Ok((values, indices))
}

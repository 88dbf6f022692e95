//! Convolutions: Conv and ConvTranspose over 1-D and 2-D inputs (`[N, C, L]`, `[N, C, H, W]`)
//! with groups, strides, dilations, asymmetric pads and `auto_pad`. 1-D runs as 2-D over a
//! height of one; asymmetric pads are explicit zero padding (Conv) or a crop of the full
//! transposed output (ConvTranspose).

use anygrad_core::{Conv2dParams, ConvTranspose2dParams, Tensor};

use super::geometry::windows;
use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The convolution operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Conv", conv),
    any_opset("ConvTranspose", conv_transpose),
];

/// 1-D operands as 2-D ones over a height of one.
pub(crate) fn as_2d(ctx: &NodeContext, x: &Tensor) -> Result<Tensor> {
    match x.rank() {
        3 => ctx.core(x.unsqueeze(2)),
        4 => Ok(x.clone()),
        r => Err(ctx.error(format!(
            "only 1-D and 2-D spatial inputs are supported (rank {r})"
        ))),
    }
}

/// Per-dim lists padded to two entries for a 1-D operand (height first, of `fill`).
fn two(values: &[usize], fill: usize) -> (usize, usize) {
    match values {
        [h, w] => (*h, *w),
        [w] => (fill, *w),
        _ => (fill, fill),
    }
}

/// A Conv node's operands as a 2-D convolution: the input (asymmetric pads already applied
/// as zero padding, 1-D inputs over a height of one), the weight, the bias and the
/// parameters. Conv and the fused convolution chains (`conv_fusion.rs`) share it.
pub(crate) struct Conv2dOperands {
    /// `[n, c, h, w]`, padded where the pads were asymmetric.
    pub input: Tensor,
    /// `[o, c / groups, kh, kw]`.
    pub weight: Tensor,
    /// `[o]`, if the node has one.
    pub bias: Option<Tensor>,
    /// Strides, the symmetric padding left, dilations and groups.
    pub params: Conv2dParams,
    /// Whether the node's input was 1-D (`[n, c, l]`; its output loses the height again).
    pub one_d: bool,
}

/// The operands of the Conv node `ctx` runs.
pub(crate) fn conv2d_operands(ctx: &NodeContext) -> Result<Conv2dOperands> {
    let x = ctx.tensor(0)?;
    let w = ctx.tensor(1)?;
    let bias = ctx.optional_tensor(2)?;
    let spatial = x.shape().get(2..).unwrap_or(&[]).to_vec();
    let kernel = w.shape().get(2..).unwrap_or(&[]).to_vec();
    let win = windows(ctx, &spatial, kernel)?;
    let groups = ctx.attr_int("group", 1)?;
    if groups <= 0 {
        return Err(ctx.error(format!("group {groups} must be positive")));
    }
    let one_d = x.rank() == 3;
    let x2 = as_2d(ctx, &x)?;
    let weight = as_2d(ctx, &w)?;
    let (pt, pl) = two(&win.pads_begin, 0);
    let (pb, pr) = two(&win.pads_end, 0);
    let (input, padding) = if pt == pb && pl == pr {
        (x2, (pt, pl))
    } else {
        (ctx.core(x2.pad(pl, pr, pt, pb, 0.0))?, (0, 0))
    };
    let params = Conv2dParams {
        stride: two(&win.strides, 1),
        padding,
        dilation: two(&win.dilations, 1),
        groups: groups as usize,
    };
    Ok(Conv2dOperands {
        input,
        weight,
        bias,
        params,
        one_d,
    })
}

fn conv(ctx: &NodeContext) -> Result<Vec<Value>> {
    let operands = conv2d_operands(ctx)?;
    let y = ctx.core(operands.input.conv2d(
        &operands.weight,
        operands.bias.as_ref(),
        operands.params,
    ))?;
    single(if operands.one_d {
        ctx.core(y.squeeze(2))?
    } else {
        y
    })
}

fn conv_transpose(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let w = ctx.tensor(1)?;
    let bias = ctx.optional_tensor(2)?;
    let spatial = x.shape().get(2..).unwrap_or(&[]).to_vec();
    let kernel = w.shape().get(2..).unwrap_or(&[]).to_vec();
    let n = spatial.len();
    let mut win = windows(
        &NodeContext {
            node: &without_auto_pad(ctx),
            index: ctx.index,
            inputs: Vec::new(),
            opset: ctx.opset,
            device: ctx.device,
            declared_types: ctx.declared_types,
            subgraphs: ctx.subgraphs,
        },
        &spatial,
        kernel.clone(),
    )?;
    let groups = ctx.attr_int("group", 1)?;
    if groups <= 0 {
        return Err(ctx.error(format!("group {groups} must be positive")));
    }
    let output_padding: Vec<i64> = ctx.attr_ints("output_padding")?.unwrap_or(vec![0; n]);
    if output_padding.len() != n {
        return Err(ctx.error("output_padding must hold one entry per spatial dim"));
    }
    let auto_pad = ctx.attr_string("auto_pad", "NOTSET")?;
    let output_shape = ctx.attr_ints("output_shape")?;
    let full: Vec<i64> = (0..n)
        .map(|i| {
            (spatial[i] as i64 - 1) * win.strides[i] as i64
                + (kernel[i] as i64 - 1) * win.dilations[i] as i64
                + 1
        })
        .collect();
    let mut begin: Vec<i64> = win.pads_begin.iter().map(|&p| p as i64).collect();
    let mut end: Vec<i64> = win.pads_end.iter().map(|&p| p as i64).collect();
    let wanted = match (&output_shape, auto_pad.as_str()) {
        (Some(shape), _) => Some(
            shape
                .get(shape.len().saturating_sub(n)..)
                .unwrap_or(&[])
                .to_vec(),
        ),
        (None, "SAME_UPPER" | "SAME_LOWER") => Some(
            (0..n)
                .map(|i| (spatial[i] * win.strides[i]) as i64)
                .collect(),
        ),
        _ => None,
    };
    if let Some(wanted) = wanted {
        if wanted.len() != n {
            return Err(ctx.error("output_shape must hold one entry per spatial dim"));
        }
        for i in 0..n {
            // As ONNX's reference: SAME_UPPER puts the larger half at the end, every other
            // setting at the begin (halves rounded toward minus infinity).
            let total = full[i] + output_padding[i] - wanted[i];
            let half = total.div_euclid(2);
            if auto_pad == "SAME_UPPER" {
                begin[i] = half;
                end[i] = total - half;
            } else {
                begin[i] = total - half;
                end[i] = half;
            }
        }
    }
    let one_d = x.rank() == 3;
    let x2 = as_2d(ctx, &x)?;
    let w2 = as_2d(ctx, &w)?;
    win.pads_begin = vec![0; n];
    let params = ConvTranspose2dParams {
        stride: two(&win.strides, 1),
        padding: (0, 0),
        output_padding: (0, 0),
        dilation: two(&win.dilations, 1),
        groups: groups as usize,
    };
    let mut y = ctx.core(x2.conv_transpose2d(&w2, None, params))?;
    // Crop (or zero-extend) each spatial dim to begin .. full - end + output_padding.
    for i in 0..n {
        let dim = (y.rank() - n + i) as isize;
        let size = full[i] - begin[i] - end[i] + output_padding[i];
        if size <= 0 {
            return Err(ctx.error(format!("output size {size} along spatial dim {i}")));
        }
        let start = begin[i];
        let before = (-start).max(0) as usize;
        let after = (start + size - full[i]).max(0) as usize;
        if before > 0 || after > 0 {
            let mut side = y.shape().to_vec();
            let d = dim as usize;
            side[d] = before;
            let head = ctx.core(Tensor::zeros(&side, y.dtype(), y.device()))?;
            side[d] = after;
            let tail = ctx.core(Tensor::zeros(&side, y.dtype(), y.device()))?;
            y = ctx.core(Tensor::cat(&[&head, &y, &tail], dim))?;
        }
        let from = (start + before as i64) as usize;
        y = ctx.core(y.narrow(dim, from, size as usize))?;
    }
    if let Some(bias) = bias {
        let mut shape = vec![1usize; y.rank()];
        shape[1] = bias.numel();
        y = ctx.core(y.add(&ctx.core(bias.reshape(shape))?))?;
    }
    single(if one_d { ctx.core(y.squeeze(2))? } else { y })
}

/// The node without `auto_pad` (ConvTranspose resolves SAME itself, from the output size).
fn without_auto_pad(ctx: &NodeContext) -> crate::proto::NodeProto {
    let mut node = ctx.node.clone();
    node.attribute.retain(|a| a.name != "auto_pad");
    node
}

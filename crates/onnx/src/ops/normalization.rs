//! Normalizations: BatchNormalization (inference, and training mode's batch statistics with
//! the running ones updated), LayerNormalization (with its optional
//! Mean and InvStdDev outputs), InstanceNormalization, MeanVarianceNormalization,
//! RMSNormalization, LpNormalization, GroupNormalization and LRN, written
//! as tensor ops so gradients flow to the scale and bias.

use anygrad_core::Tensor;

use super::{any_opset, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The normalization operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("BatchNormalization", batch_norm),
    any_opset("LayerNormalization", layer_norm),
    any_opset("InstanceNormalization", instance_norm),
    any_opset("MeanVarianceNormalization", mean_variance_norm),
    any_opset("RMSNormalization", rms_norm),
    any_opset("LpNormalization", lp_norm),
    any_opset("GroupNormalization", group_norm),
    any_opset("LRN", local_response_norm),
];

fn group_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let shape = x.shape().to_vec();
    if shape.len() < 2 {
        return Err(ctx.error("needs an input [N, C, ...]"));
    }
    let groups = ctx.attr_int("num_groups", 0)?;
    let (n, c) = (shape[0], shape[1]);
    if groups <= 0 || c % groups as usize != 0 {
        return Err(ctx.error(format!("num_groups {groups} does not divide {c} channels")));
    }
    let g = groups as usize;
    let eps = ctx.attr_float("epsilon", 1e-5)? as f64;
    let rest = x.numel() / (n * g).max(1);
    let mut scale = ctx.tensor(1)?;
    let mut bias = ctx.tensor(2)?;
    if scale.numel() == g && g != c {
        // Opset 18: one scale and bias per group, repeated over its channels.
        let index: Vec<i32> = (0..c).map(|ch| (ch / (c / g)) as i32).collect();
        let index = ctx.core(Tensor::from_vec(index, &[c], x.device()))?;
        scale = ctx.core(scale.index_select(0, &index))?;
        bias = ctx.core(bias.index_select(0, &index))?;
    }
    let rank = shape.len();
    let y = ctx.core((|| {
        let grouped = x.reshape([n, g, rest])?;
        let mean = grouped.mean(&[2], true)?;
        let centered = grouped.sub(&mean)?;
        let var = centered.square()?.mean(&[2], true)?;
        let normalized = centered
            .mul(&var.add_scalar(eps)?.rsqrt()?)?
            .reshape(shape.clone())?;
        let mut channel = vec![1usize; rank];
        channel[1] = c;
        normalized
            .mul(&scale.reshape(channel.clone())?)?
            .add(&bias.reshape(channel)?)
    })())?;
    Ok(vec![Value::Tensor(y)])
}

fn local_response_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    if x.rank() < 3 {
        return Err(ctx.error("needs an input [N, C, ...]"));
    }
    let size = ctx.attr_int("size", 0)?;
    if !(1..=4096).contains(&size) {
        return Err(ctx.error(format!("size {size} must be in 1..=4096")));
    }
    let size = size as usize;
    let alpha = ctx.attr_float("alpha", 1e-4)? as f64;
    let beta = ctx.attr_float("beta", 0.75)? as f64;
    let bias = ctx.attr_float("bias", 1.0)? as f64;
    let (before, after) = ((size - 1) / 2, (size - 1).div_ceil(2));
    let c = x.shape()[1];
    let y = ctx.core((|| {
        let squares = x.square()?;
        let mut side = squares.shape().to_vec();
        side[1] = before;
        let head = Tensor::zeros(&side, x.dtype(), x.device())?;
        side[1] = after;
        let tail = Tensor::zeros(&side, x.dtype(), x.device())?;
        let padded = Tensor::cat(&[&head, &squares, &tail], 1)?;
        let mut sum = padded.narrow(1, 0, c)?;
        for k in 1..size {
            sum = sum.add(&padded.narrow(1, k, c)?)?;
        }
        let denominator = sum
            .mul_scalar(alpha / size as f64)?
            .add_scalar(bias)?
            .pow_scalar(beta)?;
        x.div(&denominator)
    })())?;
    Ok(vec![Value::Tensor(y)])
}

fn rms_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let axis = ctx.axis(ctx.attr_int("axis", -1)?, rank)?;
    let eps = ctx.attr_float("epsilon", 1e-5)? as f64;
    let dims: Vec<isize> = (axis as isize..rank as isize).collect();
    let scale = ctx.tensor(1)?;
    let y = ctx.core(
        x.square()
            .and_then(|s| s.mean(&dims, true))
            .and_then(|m| m.add_scalar(eps)?.rsqrt())
            .and_then(|inv| x.mul(&inv)?.mul(&scale)),
    )?;
    Ok(vec![Value::Tensor(y)])
}

fn lp_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let axis = ctx.axis(ctx.attr_int("axis", -1)?, x.rank())? as isize;
    let p = ctx.attr_int("p", 2)?;
    let norm = match p {
        1 => ctx.core(x.abs().and_then(|a| a.sum(&[axis], true)))?,
        2 => ctx.core(x.square().and_then(|s| s.sum(&[axis], true)?.sqrt()))?,
        other => return Err(ctx.error(format!("p = {other} is not 1 or 2"))),
    };
    // A zero norm divides zeros: by one, giving zeros (not NaN), as ONNX's reference.
    let norm = ctx.core(
        norm.eq_scalar(0.0)
            .and_then(|zero| Tensor::where_(&zero, &norm.ones_like()?, &norm)),
    )?;
    Ok(vec![Value::Tensor(ctx.core(x.div(&norm))?)])
}

/// A per-channel vector shaped `[1, C, 1, ...]` to broadcast over `[N, C, ...]`.
fn per_channel(ctx: &NodeContext, v: &Tensor, rank: usize) -> Result<Tensor> {
    let mut shape = vec![1usize; rank.max(2)];
    shape[1] = v.numel();
    ctx.core(v.reshape(shape))
}

fn batch_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let eps = ctx.attr_float("epsilon", 1e-5)? as f64;
    let scale = per_channel(ctx, &ctx.tensor(1)?, rank)?;
    let bias = per_channel(ctx, &ctx.tensor(2)?, rank)?;
    let mut mean = per_channel(ctx, &ctx.tensor(3)?, rank)?;
    let mut var = per_channel(ctx, &ctx.tensor(4)?, rank)?;
    let mut running = Vec::new();
    if ctx.attr_int("training_mode", 0)? != 0 {
        // Batch statistics (biased variance) normalize; the running ones are updated with
        // `momentum` and returned as the second and third outputs.
        let momentum = ctx.attr_float("momentum", 0.9)? as f64;
        let dims: Vec<isize> = (0..rank as isize).filter(|&d| d != 1).collect();
        let batch_mean = ctx.core(x.mean(&dims, true))?;
        let batch_var = ctx.core(
            x.sub(&batch_mean)
                .and_then(|c| c.square()?.mean(&dims, true)),
        )?;
        for (old, new) in [(&mean, &batch_mean), (&var, &batch_var)] {
            let updated = ctx.core(
                old.mul_scalar(momentum)
                    .and_then(|o| o.add(&new.mul_scalar(1.0 - momentum)?))
                    .and_then(|u| u.reshape([u.numel()])),
            )?;
            running.push(Value::Tensor(updated));
        }
        mean = batch_mean;
        var = batch_var;
    }
    let y = ctx.core(
        var.add_scalar(eps)
            .and_then(|v| v.rsqrt())
            .and_then(|inv| inv.mul(&scale))
            .and_then(|factor| x.sub(&mean)?.mul(&factor))
            .and_then(|y| y.add(&bias)),
    )?;
    let mut outputs = vec![Value::Tensor(y)];
    outputs.extend(running);
    Ok(outputs)
}

fn layer_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let axis = ctx.axis(ctx.attr_int("axis", -1)?, rank)?;
    let eps = ctx.attr_float("epsilon", 1e-5)? as f64;
    let dims: Vec<isize> = (axis as isize..rank as isize).collect();
    let scale = ctx.tensor(1)?;
    let bias = ctx.optional_tensor(2)?;
    let mean = ctx.core(x.mean(&dims, true))?;
    let centered = ctx.core(x.sub(&mean))?;
    let var = ctx.core(centered.square().and_then(|s| s.mean(&dims, true)))?;
    let inv = ctx.core(var.add_scalar(eps).and_then(|v| v.rsqrt()))?;
    let mut y = ctx.core(centered.mul(&inv).and_then(|n| n.mul(&scale)))?;
    if let Some(bias) = bias {
        y = ctx.core(y.add(&bias))?;
    }
    Ok(vec![
        Value::Tensor(y),
        Value::Tensor(mean),
        Value::Tensor(inv),
    ])
}

fn instance_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    if rank < 3 {
        return Err(ctx.error("needs an input [N, C, spatial...]"));
    }
    let eps = ctx.attr_float("epsilon", 1e-5)? as f64;
    let dims: Vec<isize> = (2..rank as isize).collect();
    let scale = per_channel(ctx, &ctx.tensor(1)?, rank)?;
    let bias = per_channel(ctx, &ctx.tensor(2)?, rank)?;
    let mean = ctx.core(x.mean(&dims, true))?;
    let centered = ctx.core(x.sub(&mean))?;
    let var = ctx.core(centered.square().and_then(|s| s.mean(&dims, true)))?;
    let y = ctx.core(
        var.add_scalar(eps)
            .and_then(|v| v.rsqrt())
            .and_then(|inv| centered.mul(&inv))
            .and_then(|n| n.mul(&scale))
            .and_then(|n| n.add(&bias)),
    )?;
    Ok(vec![Value::Tensor(y)])
}

fn mean_variance_norm(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let axes = ctx.attr_ints("axes")?.unwrap_or(vec![0, 2, 3]);
    let dims: Vec<isize> = axes
        .iter()
        .map(|&a| ctx.axis(a, rank).map(|d| d as isize))
        .collect::<Result<_>>()?;
    let mean = ctx.core(x.mean(&dims, true))?;
    let centered = ctx.core(x.sub(&mean))?;
    let var = ctx.core(centered.square().and_then(|s| s.mean(&dims, true)))?;
    let y = ctx.core(var.add_scalar(1e-9).and_then(|v| centered.mul(&v.rsqrt()?)))?;
    Ok(vec![Value::Tensor(y)])
}

//! CausalConvWithState (opset 27+): a stateful causal depthwise 1-D convolution. The input
//! `[B, C, L]` is prefixed with the carried state `[B, C, k - 1]` (zeros when absent), each
//! channel is convolved with its own kernel `[C, 1, k]` (as `k` shifted windows times the
//! kernel's taps), plus the optional bias and SiLU (`silu` or its alias `swish`). The present
//! state is the last `k - 1` positions of the prefixed sequence.

use anygrad_core::{DType, Tensor};

use super::OperatorEntry;
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The causal convolution operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "CausalConvWithState",
    min_opset: 27,
    max_opset: i64::MAX,
    run: causal_conv_with_state,
}];

/// CausalConvWithState: `(output, present_state)`.
fn causal_conv_with_state(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input = ctx.tensor(0)?;
    let weight = ctx.tensor(1)?;
    let apply_silu = match ctx.attr_string("activation", "none")?.as_str() {
        "none" => false,
        "silu" | "swish" => true,
        other => {
            return Err(ctx.error(format!(
                "activation {other:?} is not one of none, silu, swish"
            )))
        }
    };
    let &[batch, channels, length] = input.shape() else {
        return Err(ctx.error("input must be 3-D [batch, channels, length]"));
    };
    let &[weight_channels, 1, kernel] = weight.shape() else {
        return Err(ctx.error("weight must be 3-D [channels, 1, kernel]"));
    };
    if weight_channels != channels || kernel == 0 {
        return Err(ctx.error(format!(
            "weight must be [{channels}, 1, k] with k >= 1, got {:?}",
            weight.shape()
        )));
    }
    let dtype = input.dtype();
    let carried = kernel - 1;
    let past = match ctx.optional_tensor(3)? {
        Some(past) => {
            if past.shape() != [batch, channels, carried] {
                return Err(ctx.error(format!(
                    "past_state must be [{batch}, {channels}, {carried}], got {:?}",
                    past.shape()
                )));
            }
            ctx.core(past.to_dtype(dtype))?
        }
        None => ctx.core(Tensor::zeros(
            &[batch, channels, carried],
            dtype,
            input.device(),
        ))?,
    };
    let bias = ctx.optional_tensor(2)?;
    if let Some(bias) = &bias {
        if bias.shape() != [channels] {
            return Err(ctx.error(format!("bias must be [{channels}], got {:?}", bias.shape())));
        }
    }
    let padded = ctx.core(Tensor::cat(&[&past, &input], 2))?;
    let output = ctx.core((|| {
        // Accumulate in float32: taps `[C, k]`, each `[C, 1]` over the channels' windows.
        let padded32 = padded.to_dtype(DType::F32)?;
        let taps = weight.to_dtype(DType::F32)?.reshape([channels, kernel])?;
        let mut sum = match &bias {
            Some(bias) => bias
                .to_dtype(DType::F32)?
                .reshape([1, channels, 1])?
                .expand(&[batch, channels, length])?
                .contiguous()?,
            None => Tensor::zeros(&[batch, channels, length], DType::F32, input.device())?,
        };
        for tap in 0..kernel {
            let window = padded32.narrow(2, tap, length)?;
            sum = sum.add(&window.mul(&taps.narrow(1, tap, 1)?)?)?;
        }
        if apply_silu {
            // The reference rounds the convolution to the input's type before the activation.
            sum = sum.to_dtype(dtype)?.to_dtype(DType::F32)?.silu()?;
        }
        sum.to_dtype(dtype)
    })())?;
    let present = ctx.core(
        padded
            .narrow(2, length, carried)
            .and_then(|t| t.contiguous()),
    )?;
    Ok(vec![Value::Tensor(output), Value::Tensor(present)])
}

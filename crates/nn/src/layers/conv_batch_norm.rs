//! `conv_batch_norm`: a convolution, its batch norm, an optional residual and an activation as
//! a network writes them (`relu(bn(conv(x)) + shortcut)`), run as one fused convolution
//! (`Tensor::conv2d_fused`) when the batch norm is in eval mode: its running statistics fold
//! into a per-channel scale and shift (`BatchNorm::eval_scale_shift`, a convolution bias into
//! the shift) that the GPU applies in the convolution's store. In training mode it is the
//! modules' own forward passes, unchanged.

use anygrad_core::{ConvEpilogue, EpilogueActivation, Error, Result, Tensor};

use super::conv::Conv2d;
use super::norm::BatchNorm2d;
use crate::module::Module;

/// `activation(bn(conv(x)) + residual)`, fused into the convolution when `bn` is in eval mode
/// (the result equals the modules' forward passes within float rounding). The residual must
/// have the convolution's output shape.
pub fn conv_batch_norm(
    x: &Tensor,
    conv: &Conv2d,
    bn: &BatchNorm2d,
    residual: Option<&Tensor>,
    activation: EpilogueActivation,
) -> Result<Tensor> {
    let out_channels = conv.weight.tensor().shape().first().copied().unwrap_or(0);
    if bn.num_features() != out_channels {
        return Err(Error::ShapeMismatch {
            op: "conv_batch_norm",
            lhs: vec![out_channels],
            rhs: vec![bn.num_features()],
            reason: "the batch norm must have one feature per output channel of the convolution"
                .into(),
        });
    }
    if bn.is_training() {
        let mut out = bn.forward(&conv.forward(x)?)?;
        if let Some(residual) = residual {
            out = out.add(residual)?;
        }
        return match activation {
            EpilogueActivation::Identity => Ok(out),
            EpilogueActivation::Relu => out.relu(),
        };
    }
    let (scale, shift) = bn.eval_scale_shift()?;
    // bn(conv + β) = conv * scale + (shift + β * scale).
    let shift = match &conv.bias {
        Some(bias) => shift.add(&bias.tensor().to_dtype(scale.dtype())?.mul(&scale)?)?,
        None => shift,
    };
    let epilogue = ConvEpilogue {
        scale: &scale,
        shift: &shift,
        residual,
        activation,
    };
    x.conv2d_fused(&conv.weight.tensor(), conv.options.params(), &epilogue)
}

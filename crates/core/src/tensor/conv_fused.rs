//! `conv2d_fused`: a convolution and what follows it in a network's inference — a per-channel
//! scale and shift (an eval-mode batch norm folded into two vectors), a residual add and an
//! activation — in one primitive, so that the GPU applies them in the convolution's store
//! instead of passing over the output once more (`Convolution::conv2d_epilogue`).
//!
//! The primitive runs when no gradient is recorded (inference, `no_grad`, or no input that
//! requires one) for a one-group float convolution whose residual (if any) has its dtype;
//! otherwise the same result comes from the
//! composite `conv2d`, `mul`, `add`, `relu`, which autograd differentiates. The composite is
//! also the reference the primitive is tested against. The primitive computes the epilogue in
//! f32 and rounds once to the convolution's dtype (the composite rounds after each op in F16).

use std::sync::{Arc, RwLock};

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::Conv2dShape;
use crate::op::EpilogueActivation;
use crate::tensor::Conv2dParams;

/// What a fused convolution applies to its output, per output value at channel `c`:
/// `activation(conv * scale[c] + shift[c] + residual)`.
///
/// An eval-mode `BatchNorm2d` with running mean `m`, variance `v`, weight `g`, bias `b` and
/// `eps` is `scale = g / sqrt(v + eps)`, `shift = b - m * scale` (and a convolution bias `β`
/// folds into `shift + β * scale`).
#[derive(Debug, Clone, Copy)]
pub struct ConvEpilogue<'a> {
    /// One multiplier per output channel, `[o]` (any float dtype; used in f32).
    pub scale: &'a Tensor,
    /// One offset per output channel, `[o]` (any float dtype; used in f32).
    pub shift: &'a Tensor,
    /// Added after the shift: a tensor of the convolution's output shape (a ResNet block's
    /// shortcut), or none.
    pub residual: Option<&'a Tensor>,
    /// Applied last.
    pub activation: EpilogueActivation,
}

impl Tensor {
    /// `activation(conv2d(self, weight) * scale + shift + residual)` with per-output-channel
    /// `scale` and `shift` (see [`ConvEpilogue`]), in one pass on the GPU when no gradient is
    /// recorded. `self` is `[n, c, h, w]`, `weight` `[o, c / groups, kh, kw]`; under autocast
    /// the convolution and the residual run in the autocast dtype.
    pub fn conv2d_fused(
        &self,
        weight: &Tensor,
        params: Conv2dParams,
        epilogue: &ConvEpilogue<'_>,
    ) -> Result<Tensor> {
        if let Some(low) = crate::amp::autocast_dtype() {
            let residual_low = epilogue.residual.is_none_or(|r| r.dtype() == low);
            if (self.dtype() != low || weight.dtype() != low || !residual_low)
                && self.dtype().is_float()
                && weight.dtype().is_float()
            {
                let _outside = crate::amp::suspend();
                let residual = epilogue.residual.map(|r| r.to_dtype(low)).transpose()?;
                let lowered = ConvEpilogue {
                    residual: residual.as_ref(),
                    ..*epilogue
                };
                let cast = |t: &Tensor| crate::tensor::autocast_cache::autocast_input(t, low);
                return cast(self)?.conv2d_fused(&cast(weight)?, params, &lowered);
            }
        }
        let recorded = crate::autograd::is_grad_enabled()
            && [
                Some(self),
                Some(weight),
                Some(epilogue.scale),
                Some(epilogue.shift),
            ]
            .into_iter()
            .chain([epilogue.residual])
            .flatten()
            .any(Tensor::is_tracked);
        // A residual of another dtype promotes the result, as the composite's `add` does.
        let promotes = epilogue.residual.is_some_and(|r| r.dtype() != self.dtype());
        if recorded || promotes || params.groups != 1 || !self.dtype().is_float() {
            return self.conv2d_epilogue_composite(weight, params, epilogue);
        }
        self.same_device("conv2d_fused", weight)?;
        self.same_dtype("conv2d_fused", weight)?;
        if self.rank() != 4 || weight.rank() != 4 {
            return Err(Error::ShapeMismatch {
                op: "conv2d_fused",
                lhs: self.shape().to_vec(),
                rhs: weight.shape().to_vec(),
                reason: "must be [n, c, h, w] and [out, c, kh, kw]".into(),
            });
        }
        let output_shape =
            Conv2dShape::new(self.layout(), weight.layout(), &params)?.output_shape();
        let scale = as_f32(epilogue.scale)?;
        let shift = as_f32(epilogue.shift)?;
        // The backend picks the output's memory format (channels-last where its tensor-core
        // kernels write that fastest; `Tensor::memory_format`).
        let format = self
            .storage()
            .conv2d_epilogue_format(self.layout(), weight.layout(), &params);
        let storage = {
            let (input, kernels) = (self.storage(), weight.storage());
            let (scale_storage, shift_storage) = (scale.storage(), shift.storage());
            let residual_storage = epilogue.residual.map(|r| r.storage());
            input.conv2d_epilogue(
                self.layout(),
                &kernels,
                weight.layout(),
                &params,
                (&scale_storage, scale.layout()),
                (&shift_storage, shift.layout()),
                epilogue
                    .residual
                    .zip(residual_storage.as_ref())
                    .map(|(r, storage)| (&**storage, r.layout())),
                epilogue.activation,
                format,
            )?
        };
        let layout = format.layout(&output_shape);
        Ok(Tensor::from_view(
            Arc::new(RwLock::new(storage)),
            layout,
            None,
        ))
    }

    /// The composite of [`Tensor::conv2d_fused`]: `conv2d`, then `mul`, `add` (twice with a
    /// residual) and the activation as tensor ops (autograd records them).
    fn conv2d_epilogue_composite(
        &self,
        weight: &Tensor,
        params: Conv2dParams,
        epilogue: &ConvEpilogue<'_>,
    ) -> Result<Tensor> {
        let out = self.conv2d(weight, None, params)?;
        let channels = out.shape().get(1).copied().unwrap_or(0);
        let per_channel = |vector: &Tensor, name: &str| -> Result<Tensor> {
            if vector.shape() != [channels] {
                return Err(Error::ShapeMismatch {
                    op: "conv2d_fused",
                    lhs: vec![channels],
                    rhs: vector.shape().to_vec(),
                    reason: format!("the epilogue's {name} needs one value per output channel"),
                });
            }
            as_f32(vector)?
                .to_dtype(out.dtype())?
                .reshape([1, channels, 1, 1])
        };
        let mut out = out
            .mul(&per_channel(epilogue.scale, "scale")?)?
            .add(&per_channel(epilogue.shift, "shift")?)?;
        if let Some(residual) = epilogue.residual {
            if residual.shape() != out.shape() {
                return Err(Error::ShapeMismatch {
                    op: "conv2d_fused",
                    lhs: out.shape().to_vec(),
                    rhs: residual.shape().to_vec(),
                    reason: "the residual must have the convolution's output shape".into(),
                });
            }
            out = out.add(residual)?;
        }
        match epilogue.activation {
            EpilogueActivation::Identity => Ok(out),
            EpilogueActivation::Relu => out.relu(),
        }
    }
}

/// A per-channel vector of the epilogue in F32 (the primitive's scale and shift dtype).
fn as_f32(vector: &Tensor) -> Result<Tensor> {
    if vector.dtype() == DType::F32 {
        Ok(vector.clone())
    } else if vector.dtype().is_float() {
        vector.to_dtype(DType::F32)
    } else {
        Err(Error::invalid(
            "conv2d_fused",
            format!(
                "the epilogue's scale and shift must be float tensors, got {}",
                vector.dtype()
            ),
        ))
    }
}

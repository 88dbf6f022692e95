//! Training-mode batch normalization as one autograd node.
//!
//! Written as a chain of tensor ops (mean, subtract, square, mean, multiply, add), batch norm
//! keeps five activation-sized intermediates alive for backward. As one node it keeps only its
//! input and two per-channel vectors (the batch mean and 1/√(var + eps)), and its backward is
//! the closed form (x̂ = (x − μ)·σ⁻¹, N values per channel, sums over every dim but 1):
//!
//! ```text
//! dβ = Σ g        dγ = Σ g·x̂        dx = γ·σ⁻¹ · (g − dβ/N − x̂·dγ/N)
//! ```
//!
//! Statistics are computed in f32 also for an f16 input (as PyTorch does under autocast), and the
//! output keeps the input's dtype, so f16 activations stay f16.

use std::sync::Arc;

use anygrad_core::{CustomBackward, DType, Result, Tensor};

/// What [`batch_norm_training`] returns: the normalized output and the batch statistics (f32,
/// shape `[1, c, 1, …]`) for the running averages.
pub(crate) struct BatchNormOutput {
    /// `γ·x̂ + β`, in the input's dtype.
    pub output: Tensor,
    /// The batch mean per channel.
    pub mean: Tensor,
    /// The biased batch variance per channel.
    pub biased_var: Tensor,
}

/// Normalize `x` over every dim but 1 with the batch's own statistics, then scale and shift by
/// `weight` and `bias` (both `[c]`, or neither). Differentiable in `x`, `weight` and `bias`.
pub(crate) fn batch_norm_training(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<BatchNormOutput> {
    let dims: Vec<isize> = (0..x.rank() as isize).filter(|&d| d != 1).collect();
    let mut stat_shape = vec![1usize; x.rank()];
    stat_shape[1] = x.shape()[1];
    let (output, mean, biased_var, inv_std) = {
        let _guard = anygrad_core::no_grad();
        let wide = widen(x)?;
        let mean = wide.mean(&dims, true)?;
        let squared = {
            // Dropped before the reduction reads it, so the subtraction fuses into the square.
            let centered = wide.sub(&mean)?;
            centered.square()?
        };
        let biased_var = squared.mean(&dims, true)?;
        drop(squared);
        drop(wide);
        let inv_std = biased_var.add_scalar(eps)?.rsqrt()?;
        // y = x·scale + shift with scale = γσ⁻¹, shift = β − μ·scale (per channel, small).
        let scale = match weight {
            Some(weight) => inv_std.mul(&weight.reshape(stat_shape.clone())?)?,
            None => inv_std.clone(),
        };
        let shifted_mean = mean.mul(&scale)?;
        let shift = match bias {
            Some(bias) => bias.reshape(stat_shape.clone())?.sub(&shifted_mean)?,
            None => shifted_mean.neg()?,
        };
        let output = x
            .mul(&scale.to_dtype(x.dtype())?)?
            .add(&shift.to_dtype(x.dtype())?)?;
        (output, mean, biased_var, inv_std)
    };
    let mut inputs = vec![x];
    if let (Some(weight), Some(bias)) = (weight, bias) {
        inputs.push(weight);
        inputs.push(bias);
    }
    let backward = Arc::new(BatchNormBackward {
        mean: mean.clone(),
        inv_std,
        dims,
        count: x.numel() / x.shape()[1].max(1),
    });
    let output = Tensor::with_custom_backward(&output, &inputs, backward);
    Ok(BatchNormOutput {
        output,
        mean,
        biased_var,
    })
}

/// `x` in f32 when it is f16 (statistics and gradients are accumulated in f32).
fn widen(x: &Tensor) -> Result<Tensor> {
    if x.dtype() == DType::F16 {
        x.to_dtype(DType::F32)
    } else {
        Ok(x.clone())
    }
}

/// The saved state of one training-mode batch norm: the batch mean and 1/√(var + eps), f32.
struct BatchNormBackward {
    mean: Tensor,
    inv_std: Tensor,
    dims: Vec<isize>,
    count: usize,
}

impl CustomBackward for BatchNormBackward {
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let x = &inputs[0];
        let weight = inputs.get(1);
        let g = widen(grad_output)?;
        // x̂ is recomputed inside each fused kernel rather than stored: the two reductions
        // and the input gradient each read x again, and no activation-sized x̂ (nor an f32
        // copy of an f16 x) stays alive between them.
        let normalized = || -> Result<Tensor> { widen(x)?.sub(&self.mean)?.mul(&self.inv_std) };
        let grad_bias = g.sum(&self.dims, true)?;
        let grad_weight = {
            let product = g.mul(&normalized()?)?;
            product.sum(&self.dims, true)?
        };
        let mut grads = Vec::with_capacity(inputs.len());
        if x.requires_grad() {
            let scale = match weight {
                Some(weight) => self.inv_std.mul(&weight.reshape(self.inv_std.shape())?)?,
                None => self.inv_std.clone(),
            };
            let per_element = 1.0 / self.count as f64;
            let grad_input = g
                .sub(&grad_bias.mul_scalar(per_element)?)?
                .sub(&normalized()?.mul(&grad_weight.mul_scalar(per_element)?)?)?
                .mul(&scale)?
                .to_dtype(x.dtype())?;
            grads.push(Some(grad_input));
        } else {
            grads.push(None);
        }
        if let Some(weight) = weight {
            grads.push(Some(
                grad_weight
                    .reshape(weight.shape())?
                    .to_dtype(weight.dtype())?,
            ));
        }
        if let Some(bias) = inputs.get(2) {
            grads.push(Some(
                grad_bias.reshape(bias.shape())?.to_dtype(bias.dtype())?,
            ));
        }
        Ok(grads)
    }
}

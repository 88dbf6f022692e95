//! Batch normalization as a function (`torch.nn.functional.batch_norm`): the tensors passed in,
//! nothing owned. [`BatchNorm`](super::norm::BatchNorm) and the Python package's
//! `F.batch_norm` both run it, so a network written either way takes the same kernels: in
//! training one autograd node (`batch_norm_training.rs`) whose per-channel kernel also updates
//! the running statistics; in eval one `x·scale + shift` over the activation, in its own dtype,
//! with the running statistics and affine parameters folded into the per-channel `scale` and
//! `shift` first — kept in a [`FoldCache`] across calls while nothing they come from changed.

use std::sync::Mutex;

use anygrad_core::{is_grad_enabled, mutation_epoch, DType, Error, Result, Tensor, TensorId};

use super::batch_norm_training::{batch_norm_training, RunningUpdate};

/// What [`batch_norm`] reads besides its input (PyTorch's `F.batch_norm` arguments).
#[derive(Debug, Clone, Copy)]
pub struct BatchNormInputs<'a> {
    /// Running mean `[c]`: read in eval, updated in training (when given with the variance).
    pub running_mean: Option<&'a Tensor>,
    /// Running unbiased variance `[c]`.
    pub running_var: Option<&'a Tensor>,
    /// Scale `[c]` (γ), or none.
    pub weight: Option<&'a Tensor>,
    /// Shift `[c]` (β), or none.
    pub bias: Option<&'a Tensor>,
    /// Normalize with the batch's statistics (and update the running ones) instead of the
    /// running ones.
    pub training: bool,
    /// `running = (1 − momentum)·running + momentum·batch_stat`.
    pub momentum: f64,
    /// Added to the variance before the square root.
    pub eps: f64,
    /// Where eval mode keeps its folded scale and shift between calls (a module's own).
    pub fold_cache: Option<&'a FoldCache>,
}

/// `[1, c, 1, …]` for an input of `rank` dims with `c` channels.
fn stat_shape(rank: usize, channels: usize) -> Vec<usize> {
    let mut shape = vec![1usize; rank];
    shape[1] = channels;
    shape
}

/// Normalize `x` (`[n, c, …]`) over every dim but 1, then scale and shift per channel, as
/// `torch.nn.functional.batch_norm` does: with the batch's biased variance in training (the
/// running variance takes the unbiased one), with the running statistics in eval.
pub fn batch_norm(x: &Tensor, inputs: &BatchNormInputs<'_>) -> Result<Tensor> {
    const OP: &str = "batch_norm";
    if x.rank() < 2 {
        return Err(Error::InvalidShape {
            op: OP,
            shape: x.shape().to_vec(),
            message: "expected an input of 2 or more dims, channels in dim 1".into(),
        });
    }
    let channels = x.shape()[1];
    for (name, tensor) in [
        ("running_mean", inputs.running_mean),
        ("running_var", inputs.running_var),
        ("weight", inputs.weight),
        ("bias", inputs.bias),
    ] {
        if let Some(tensor) = tensor {
            if tensor.numel() != channels {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: x.shape().to_vec(),
                    rhs: tensor.shape().to_vec(),
                    reason: format!("{name} must hold one value per channel (dim 1 of the input)"),
                });
            }
        }
    }
    if inputs.weight.is_some() != inputs.bias.is_some() {
        return Err(Error::invalid(
            OP,
            "weight and bias must be given together (or neither)",
        ));
    }
    let running = match (inputs.running_mean, inputs.running_var) {
        (Some(mean), Some(var)) => Some((mean, var)),
        (None, None) => None,
        _ => {
            return Err(Error::invalid(
                OP,
                "running_mean and running_var must be given together (or neither)",
            ))
        }
    };
    if !inputs.training {
        let Some((mean, var)) = running else {
            return Err(Error::invalid(
                OP,
                "eval mode (training=False) needs running_mean and running_var",
            ));
        };
        let (scale, shift) = match inputs.fold_cache {
            Some(cache) => {
                cache.scale_shift(mean, var, inputs.weight, inputs.bias, inputs.eps, x.dtype())?
            }
            None => {
                let (scale, shift) = fold(mean, var, inputs.weight, inputs.bias, inputs.eps)?;
                in_dtype_of(x.dtype(), (scale, shift))?
            }
        };
        return apply_scale_shift(x, &scale, &shift);
    }
    let count = x.numel() / channels.max(1);
    if count <= 1 {
        return Err(Error::invalid(
            OP,
            format!(
                "expected more than 1 value per channel when training, got input shape {:?}",
                x.shape()
            ),
        ));
    }
    let correction = count as f64 / (count.max(2) - 1) as f64;
    let update = running.map(|(mean, var)| RunningUpdate {
        mean,
        var,
        factor: inputs.momentum,
        correction,
    });
    let normalized = batch_norm_training(x, (inputs.weight, inputs.bias), inputs.eps, update)?;
    if let (Some((mean, var)), false) = (running, normalized.running_updated) {
        update_running(
            (mean, var),
            (&normalized.mean, &normalized.biased_var),
            inputs.momentum,
            correction,
        )?;
    }
    Ok(normalized.output)
}

/// `running = running·(1 − factor) + stat·factor` for the mean and the variance, the batch's
/// biased variance made unbiased (`·correction`) first; without recording gradients.
pub(crate) fn update_running(
    (running_mean, running_var): (&Tensor, &Tensor),
    (mean, biased_var): (&Tensor, &Tensor),
    factor: f64,
    correction: f64,
) -> Result<()> {
    let _guard = anygrad_core::no_grad();
    let unbiased = biased_var.mul_scalar(correction)?;
    for (running, stat) in [(running_mean, mean), (running_var, &unbiased)] {
        let stat = stat
            .detach()
            .reshape(running.shape())?
            .to_dtype(running.dtype())?;
        let updated = running
            .mul_scalar(1.0 - factor)?
            .add(&stat.mul_scalar(factor)?)?;
        running.assign(&updated)?;
    }
    Ok(())
}

/// Eval mode's per-channel affine map, `[c]` each in the statistics' dtype:
/// `scale = weight / sqrt(running_var + eps)` and `shift = bias - running_mean·scale` (weight 1
/// and bias 0 without affine parameters).
pub(crate) fn fold(
    mean: &Tensor,
    var: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor)> {
    let inv_std = var.add_scalar(eps)?.rsqrt()?;
    match (weight, bias) {
        (Some(weight), Some(bias)) => {
            let scale = weight.reshape(inv_std.shape())?.mul(&inv_std)?;
            let shift = bias.reshape(inv_std.shape())?.sub(&mean.mul(&scale)?)?;
            Ok((scale, shift))
        }
        _ => {
            let shift = mean.mul(&inv_std)?.neg()?;
            Ok((inv_std, shift))
        }
    }
}

/// The scale and shift to apply to an activation of `dtype`: f16 (bf16) for an f16 (bf16)
/// activation (under autocast, like cuDNN's inference batch norm) so that it is not widened to
/// f32 and narrowed again, and read once; as they are otherwise.
fn in_dtype_of(dtype: DType, (scale, shift): (Tensor, Tensor)) -> Result<(Tensor, Tensor)> {
    if matches!(dtype, DType::F16 | DType::BF16) && scale.dtype() != dtype {
        Ok((scale.to_dtype(dtype)?, shift.to_dtype(dtype)?))
    } else {
        Ok((scale, shift))
    }
}

/// `x·scale + shift` per channel (dim 1), `scale` and `shift` `[c]` (see [`in_dtype_of`]).
pub(crate) fn apply_scale_shift(x: &Tensor, scale: &Tensor, shift: &Tensor) -> Result<Tensor> {
    let shape = stat_shape(x.rank(), x.shape()[1]);
    x.mul(&scale.reshape(shape.clone())?)?
        .add(&shift.reshape(shape)?)
}

/// Eval mode's folded scale and shift kept for the next call: valid while the statistics and
/// parameters are the same tensors (ids), no tensor was written in place since
/// (`mutation_epoch`) and `eps` is unchanged, so an inference loop folds each batch norm once
/// instead of running five small kernels a forward.
#[derive(Debug, Default)]
pub struct FoldCache {
    kept: Mutex<Option<Folded>>,
}

#[derive(Debug)]
struct Folded {
    sources: Vec<TensorId>,
    epoch: u64,
    eps: u64,
    /// The activation dtype they were made for.
    dtype: DType,
    scale: Tensor,
    shift: Tensor,
}

impl FoldCache {
    /// An empty cache.
    pub fn new() -> FoldCache {
        FoldCache::default()
    }

    /// [`fold`]'s result for an activation of `dtype` (f16 for f16, as they are otherwise),
    /// from the cache where it is still valid. Nothing is kept where gradients are recorded
    /// through the parameters (each forward needs its own graph).
    pub fn scale_shift(
        &self,
        mean: &Tensor,
        var: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
        dtype: DType,
    ) -> Result<(Tensor, Tensor)> {
        let mut sources = vec![mean, var];
        sources.extend(weight.into_iter().chain(bias));
        let cacheable = !is_grad_enabled() || sources.iter().all(|t| !t.requires_grad());
        if !cacheable {
            return in_dtype_of(dtype, fold(mean, var, weight, bias, eps)?);
        }
        let ids: Vec<TensorId> = sources.iter().map(|t| t.id()).collect();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(folded) = kept.as_ref() {
            if folded.sources == ids
                && folded.epoch == mutation_epoch()
                && folded.eps == eps.to_bits()
                && folded.dtype == dtype
            {
                return Ok((folded.scale.clone(), folded.shift.clone()));
            }
        }
        let epoch = mutation_epoch();
        let (scale, shift) = in_dtype_of(dtype, fold(mean, var, weight, bias, eps)?)?;
        *kept = Some(Folded {
            sources: ids,
            epoch,
            eps: eps.to_bits(),
            dtype,
            scale: scale.clone(),
            shift: shift.clone(),
        });
        Ok((scale, shift))
    }
}

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
//! output keeps the input's dtype, so f16 activations stay f16. The backward's sums and input
//! gradient are one pass each over `g` and `x` (`batch_norm_backward_sums`,
//! `batch_norm_backward_input`), reading f16 as it is. The per-channel numbers between the
//! passes (inv_std, scale and shift forward; the input gradient's coefficients and both
//! parameter gradients backward) are one small kernel each (`batch_norm_coefficients.rs`). Tensors above one buffer binding take
//! the composites, whose f32 temporaries for a large f16 input are kept slice-sized by working
//! through batch slices (whole f32 copies made autocast's training peak exceed f32's).

use std::sync::Arc;

use anygrad_core::custom_op::apply;
use anygrad_core::{CustomBackward, DType, Error, Result, Tensor};

use super::batch_norm_coefficients::{BackwardCoefficients, ForwardCoefficients};

/// What [`batch_norm_training`] returns: the normalized output and the batch statistics (f32,
/// shape `[1, c, 1, …]`) for the running averages.
pub(crate) struct BatchNormOutput {
    /// `γ·x̂ + β`, in the input's dtype.
    pub output: Tensor,
    /// The batch mean per channel.
    pub mean: Tensor,
    /// The biased batch variance per channel.
    pub biased_var: Tensor,
    /// Whether the running statistics passed in were updated (by the coefficients' kernel).
    pub running_updated: bool,
}

/// The running statistics a training batch norm updates:
/// `running = running·(1 − factor) + stat·factor`, the variance's stat unbiased
/// (`var·correction`). Both F32 `[c]`.
pub(crate) struct RunningUpdate<'a> {
    pub mean: &'a Tensor,
    pub var: &'a Tensor,
    pub factor: f64,
    pub correction: f64,
}

/// Normalize `x` over every dim but 1 with the batch's own statistics, then scale and shift by
/// `weight` and `bias` (both `[c]`, or neither). Differentiable in `x`, `weight` and `bias`.
/// Where the per-channel numbers take their one kernel, it also updates `running` (see
/// `BatchNormOutput::running_updated`; the caller updates them otherwise).
pub(crate) fn batch_norm_training(
    x: &Tensor,
    (weight, bias): (Option<&Tensor>, Option<&Tensor>),
    eps: f64,
    running: Option<RunningUpdate<'_>>,
) -> Result<BatchNormOutput> {
    let dims: Vec<isize> = (0..x.rank() as isize).filter(|&d| d != 1).collect();
    let mut stat_shape = vec![1usize; x.rank()];
    stat_shape[1] = x.shape()[1];
    let mut running_updated = false;
    let (output, mean, biased_var, inv_std) = {
        let _guard = anygrad_core::no_grad();
        let stats = match x.batch_norm_stats_rows() {
            // One pass over x, f32 sums also for an f16 x: F32 [2, c] (mean, biased variance).
            Ok(stats) => stats,
            // A tensor above one buffer binding (in pieces on the GPU): the composite.
            Err(Error::BufferTooLarge { .. }) => {
                let wide = widen(x)?;
                let mean = wide.mean(&dims, true)?;
                let squared = {
                    // Dropped before the reduction reads it, so the subtraction fuses into
                    // the square.
                    let centered = wide.sub(&mean)?;
                    centered.square()?
                };
                let var = squared.mean(&dims, true)?;
                let c = x.shape()[1];
                Tensor::cat(&[&mean.reshape([1, c])?, &var.reshape([1, c])?], 0)?
            }
            Err(error) => return Err(error),
        };
        let row = |t: &Tensor, r: usize| t.narrow(0, r, 1)?.reshape(stat_shape.clone());
        let (mean, biased_var) = (row(&stats, 0)?, row(&stats, 1)?);
        // y = x·scale + shift with inv_std = 1/√(var + eps), scale = γ·inv_std and
        // shift = β − μ·scale (per channel, small): one kernel for f32 parameters.
        let (inv_std, scale, shift) = match coefficients(&stats, (weight, bias), eps, &running)? {
            Some(rows) => {
                if let Some(running) = &running {
                    running
                        .mean
                        .assign(&rows.narrow(0, 3, 1)?.reshape(running.mean.shape())?)?;
                    running
                        .var
                        .assign(&rows.narrow(0, 4, 1)?.reshape(running.var.shape())?)?;
                    running_updated = true;
                }
                // Scale and shift in x's dtype by one cast of both rows.
                let pair = rows.narrow(0, 1, 2)?.to_dtype(x.dtype())?;
                (row(&rows, 0)?, row(&pair, 0)?, row(&pair, 1)?)
            }
            None => {
                let inv_std = biased_var.add_scalar(eps)?.rsqrt()?;
                let scale = match weight {
                    Some(weight) => inv_std.mul(&weight.reshape(stat_shape.clone())?)?,
                    None => inv_std.clone(),
                };
                let shifted_mean = mean.mul(&scale)?;
                let shift = match bias {
                    Some(bias) => bias.reshape(stat_shape.clone())?.sub(&shifted_mean)?,
                    None => shifted_mean.neg()?,
                };
                (inv_std, scale, shift)
            }
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
        running_updated,
    })
}

/// The forward's `[3, c]` coefficients (inv_std, scale, shift) in one kernel
/// (`batch_norm_coefficients.rs`), or `None` where the parameters are not f32 (the caller
/// computes them as tensor ops).
fn coefficients(
    stats: &Tensor,
    (weight, bias): (Option<&Tensor>, Option<&Tensor>),
    eps: f64,
    running: &Option<RunningUpdate<'_>>,
) -> Result<Option<Tensor>> {
    let mut inputs = vec![stats];
    inputs.extend(weight.into_iter().chain(bias));
    if let Some(running) = running {
        inputs.extend([running.mean, running.var]);
    }
    if inputs.iter().any(|t| t.dtype() != DType::F32) || weight.is_some() != bias.is_some() {
        return Ok(None);
    }
    let c = stats.shape()[1];
    let flat: Vec<Tensor> = inputs[1..]
        .iter()
        .map(|t| t.reshape([c]))
        .collect::<Result<_>>()?;
    let mut operands = vec![stats];
    operands.extend(&flat);
    let op = ForwardCoefficients {
        eps,
        affine: weight.is_some(),
        running: running.as_ref().map(|r| (r.factor, r.correction)),
    };
    apply(Arc::new(op), &operands).map(Some)
}

/// `x` in f32 when it is f16 or bf16 (statistics and gradients are accumulated in f32).
fn widen(x: &Tensor) -> Result<Tensor> {
    if matches!(x.dtype(), DType::F16 | DType::BF16) {
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

impl BatchNormBackward {
    /// x̂ = (x − μ)·σ⁻¹ in f32 for (a batch slice of) the input.
    fn normalized(&self, x: &Tensor) -> Result<Tensor> {
        widen(x)?.sub(&self.mean)?.mul(&self.inv_std)
    }
}

/// Elements of an f16 input from which its backward runs in batch slices.
const SLICED_FROM: usize = 1 << 18;
/// Elements of one slice at most (beyond the minimum number of slices).
const SLICE_ELEMENTS: usize = 1 << 22;
/// Slices an f16 input of at least [`SLICED_FROM`] elements is cut into at least.
const MIN_SLICES: usize = 4;

/// The `(start, len)` ranges along the batch dim (0) the backward works through one at a time.
/// An f16 input's f32 temporaries (the widened gradient and input, their product, the f32
/// input gradient before its cast back) are then slice-sized instead of several times the
/// activation; an f32 input needs no widened copies and is done in one piece.
fn batch_slices(x: &Tensor) -> Vec<(usize, usize)> {
    let batch = x.shape().first().copied().unwrap_or(1);
    let numel = x.numel();
    let count = if matches!(x.dtype(), DType::F16 | DType::BF16) && numel >= SLICED_FROM {
        numel
            .div_ceil(SLICE_ELEMENTS)
            .max(MIN_SLICES)
            .min(batch)
            .max(1)
    } else {
        1
    };
    if count == 1 {
        return vec![(0, batch)];
    }
    let per_slice = batch.div_ceil(count).max(1);
    (0..batch)
        .step_by(per_slice)
        .map(|start| (start, per_slice.min(batch - start)))
        .collect()
}

/// Rows `start..start + len` of `tensor` along the batch dim, or `tensor` itself when the
/// backward works in one piece (`whole`).
fn batch_range(tensor: &Tensor, (start, len): (usize, usize), whole: bool) -> Result<Tensor> {
    if whole {
        Ok(tensor.clone())
    } else {
        tensor.narrow(0, start, len)
    }
}

impl BatchNormBackward {
    /// `(Σ g, Σ g·x̂)` per channel (shape of the statistics) from one pass over `g` and `x`.
    fn sums(&self, grad_output: &Tensor, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let g = if grad_output.dtype() == x.dtype() {
            grad_output.clone()
        } else {
            grad_output.to_dtype(x.dtype())?
        };
        let channels = self.mean.numel();
        let (sum, centered) = g.batch_norm_backward_sums(x, &self.mean.reshape([channels])?)?;
        let shape = self.inv_std.shape().to_vec();
        Ok((
            sum.reshape(shape.clone())?,
            centered.reshape(shape)?.mul(&self.inv_std)?,
        ))
    }

    /// The same sums from reductions over batch slices (tensors above one buffer binding).
    fn sliced_sums(
        &self,
        grad_output: &Tensor,
        x: &Tensor,
        slices: &[(usize, usize)],
    ) -> Result<(Tensor, Tensor)> {
        let slice = |tensor: &Tensor, range| batch_range(tensor, range, slices.len() <= 1);
        let mut grad_bias: Option<Tensor> = None;
        let mut grad_weight: Option<Tensor> = None;
        for &range in slices {
            let g = widen(&slice(grad_output, range)?)?;
            let bias_part = g.sum(&self.dims, true)?;
            let weight_part = {
                let product = g.mul(&self.normalized(&slice(x, range)?)?)?;
                product.sum(&self.dims, true)?
            };
            grad_bias = Some(match grad_bias {
                Some(total) => total.add(&bias_part)?,
                None => bias_part,
            });
            grad_weight = Some(match grad_weight {
                Some(total) => total.add(&weight_part)?,
                None => weight_part,
            });
        }
        let (Some(grad_bias), Some(grad_weight)) = (grad_bias, grad_weight) else {
            return Err(anygrad_core::Error::invalid(
                "batch_norm backward",
                format!("empty batch in input of shape {:?}", x.shape()),
            ));
        };
        Ok((grad_bias, grad_weight))
    }
}

impl BatchNormBackward {
    /// The whole backward in three kernels where it can run so: the sums (one pass over `g`
    /// and `x`), every per-channel coefficient and both parameter gradients
    /// (`BackwardCoefficients`, one small kernel), the input gradient (one pass). `None` for
    /// parameters that are not f32 and tensors above one buffer binding (the general path).
    fn fused_backward(
        &self,
        inputs: &[Tensor],
        grad_output: &Tensor,
    ) -> Result<Option<Vec<Option<Tensor>>>> {
        let (x, weight, bias) = (&inputs[0], inputs.get(1), inputs.get(2));
        if weight.is_some_and(|w| w.dtype() != DType::F32)
            || bias.is_some_and(|b| b.dtype() != DType::F32)
        {
            return Ok(None);
        }
        let g = if grad_output.dtype() == x.dtype() {
            grad_output.clone()
        } else {
            grad_output.to_dtype(x.dtype())?
        };
        let c = self.mean.numel();
        let mean = self.mean.reshape([c])?;
        let sums = match g.batch_norm_backward_sums_rows(x, &mean) {
            Ok(sums) => sums,
            Err(Error::BufferTooLarge { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        let inv_std = self.inv_std.reshape([c])?;
        let weight_flat = weight.map(|w| w.reshape([c])).transpose()?;
        let mut operands = vec![&sums, &mean, &inv_std];
        operands.extend(weight_flat.as_ref());
        let op = BackwardCoefficients {
            count: self.count,
            affine: weight.is_some(),
        };
        let rows = apply(Arc::new(op), &operands)?;
        let mut grads = Vec::with_capacity(inputs.len());
        if x.requires_grad() {
            match g.batch_norm_backward_input(x, &rows.narrow(0, 0, 4)?) {
                Ok(grad_input) => grads.push(Some(grad_input)),
                Err(Error::BufferTooLarge { .. }) => return Ok(None),
                Err(error) => return Err(error),
            }
        } else {
            grads.push(None);
        }
        if let Some(weight) = weight {
            grads.push(Some(rows.narrow(0, 4, 1)?.reshape(weight.shape())?));
        }
        if let Some(bias) = bias {
            grads.push(Some(rows.narrow(0, 5, 1)?.reshape(bias.shape())?));
        }
        Ok(Some(grads))
    }
}

impl CustomBackward for BatchNormBackward {
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        if let Some(grads) = self.fused_backward(inputs, grad_output)? {
            return Ok(grads);
        }
        let x = &inputs[0];
        let weight = inputs.get(1);
        let slices = batch_slices(x);
        let whole = slices.len() <= 1;
        let slice = |tensor: &Tensor, range| batch_range(tensor, range, whole);
        // x̂ is never stored: the sums read x in one pass (`batch_norm_backward_sums`), and
        // the input gradient recomputes it inside its fused kernel, slice by slice.
        let (grad_bias, grad_weight) = match self.sums(grad_output, x) {
            Ok(sums) => sums,
            Err(Error::BufferTooLarge { .. }) => self.sliced_sums(grad_output, x, &slices)?,
            Err(error) => return Err(error),
        };
        let mut grads = Vec::with_capacity(inputs.len());
        if x.requires_grad() {
            let scale = match weight {
                Some(weight) => self.inv_std.mul(&weight.reshape(self.inv_std.shape())?)?,
                None => self.inv_std.clone(),
            };
            let per_element = 1.0 / self.count as f64;
            let mean_grad_bias = grad_bias.mul_scalar(per_element)?;
            let mean_grad_weight = grad_weight.mul_scalar(per_element)?;
            let input_gradient = |range: (usize, usize)| -> Result<Tensor> {
                widen(&slice(grad_output, range)?)?
                    .sub(&mean_grad_bias)?
                    .sub(&self.normalized(&slice(x, range)?)?.mul(&mean_grad_weight)?)?
                    .mul(&scale)?
                    .to_dtype(x.dtype())
            };
            // One pass over g and x (`batch_norm_backward_input`: f16 read as it is, no f32
            // temporaries); the composite below for tensors above one buffer binding.
            let one_pass = || -> Result<Tensor> {
                let channels = self.mean.numel();
                let row = |t: &Tensor| t.reshape([1, channels]);
                let slope = self.inv_std.mul(&mean_grad_weight)?;
                let coefficients = Tensor::cat(
                    &[
                        &row(&self.mean)?,
                        &row(&scale)?,
                        &row(&mean_grad_bias)?,
                        &row(&slope)?,
                    ],
                    0,
                )?;
                let g = if grad_output.dtype() == x.dtype() {
                    grad_output.clone()
                } else {
                    grad_output.to_dtype(x.dtype())?
                };
                g.batch_norm_backward_input(x, &coefficients)
            };
            let fused = match one_pass() {
                Ok(grad_input) => Some(grad_input),
                Err(Error::BufferTooLarge { .. }) => None,
                Err(error) => return Err(error),
            };
            let grad_input = if let Some(grad_input) = fused {
                grad_input
            } else if whole {
                input_gradient(slices.first().copied().unwrap_or((0, 0)))?
            } else {
                let grad_input = Tensor::zeros(x.shape(), x.dtype(), x.device())?;
                for &(start, len) in &slices {
                    grad_input
                        .narrow(0, start, len)?
                        .assign(&input_gradient((start, len))?)?;
                }
                grad_input
            };
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

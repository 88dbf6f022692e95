//! Gradient clipping, like `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`. The norm
//! is computed and applied with tensor ops on the gradients' device; only the returned total
//! norm is read back.

use anygrad_core::{no_grad, Error, Result, Tensor};

/// Scale all gradients so that their joint L2 norm is at most `max_norm`; returns the norm
/// before clipping. Tensors without a gradient are skipped. As in PyTorch the scale is
/// `min(1, max_norm / (norm + 1e-6))`.
pub fn clip_grad_norm_(parameters: &[Tensor], max_norm: f64) -> Result<f64> {
    let _guard = no_grad();
    let grads: Vec<(Tensor, Tensor)> = parameters
        .iter()
        .filter_map(|p| p.grad().map(|g| (p.clone(), g)))
        .collect();
    let Some((_, first)) = grads.first() else {
        return Ok(0.0);
    };
    let device = first.device().clone();
    let mut total_sq = Tensor::zeros(&[], anygrad_core::DType::F32, &device)?;
    for (_, grad) in &grads {
        if grad.device() != &device {
            return Err(Error::invalid(
                "clip_grad_norm_",
                "all gradients must be on one device",
            ));
        }
        total_sq = total_sq.add(
            &grad
                .to_dtype(anygrad_core::DType::F32)?
                .square()?
                .sum_all()?,
        )?;
    }
    let total = total_sq.sqrt()?;
    let scale = total
        .add_scalar(1e-6)?
        .recip()?
        .mul_scalar(max_norm)?
        .clamp(0.0, 1.0)?;
    for (parameter, grad) in &grads {
        parameter.set_grad(Some(grad.mul(&scale.to_dtype(grad.dtype())?)?));
    }
    total.item_f64()
}

/// Clamp every gradient element into `[-clip_value, clip_value]` (PyTorch's
/// `clip_grad_value_`); `clip_value` must be finite and `>= 0`.
pub fn clip_grad_value_(parameters: &[Tensor], clip_value: f64) -> Result<()> {
    if !(clip_value.is_finite() && clip_value >= 0.0) {
        return Err(Error::invalid(
            "clip_grad_value_",
            format!("clip_value {clip_value} must be finite and >= 0"),
        ));
    }
    let _guard = no_grad();
    for parameter in parameters {
        if let Some(grad) = parameter.grad() {
            parameter.set_grad(Some(grad.clamp(-clip_value, clip_value)?));
        }
    }
    Ok(())
}

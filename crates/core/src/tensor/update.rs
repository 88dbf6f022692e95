//! `Tensor::sgd_step_` and `Tensor::adam_step_`: an optimizer's update of one parameter (and
//! its state) in place, and `Tensor::unscale_`, mixed precision's gradient unscaling.
//! Contiguous operands of one dtype take the fused primitive (`Update::sgd_step`,
//! `Update::adam_step`: one GPU kernel per parameter); any other view, or operands sharing
//! storage, take the composite ops, which compute the same rule (`update::SgdStep`,
//! `update::AdamStep`) and are its reference in the tests.

use super::Tensor;
use crate::error::{Error, Result};
use crate::storage::AdamMoments;
use crate::update::{AdamStep, SgdStep};

impl Tensor {
    /// One SGD step on this parameter, in place (PyTorch's `torch.optim.SGD` rule, see
    /// [`SgdStep`]): `grad` is its gradient and `buffer` its momentum buffer, updated in place
    /// too (needed when `step.momentum != 0`; on a `first` step it becomes the gradient, so a
    /// fresh zero buffer will do). Runs without recording gradients. Errors name `sgd_step`:
    /// a missing buffer, or operands of another shape, dtype or device.
    pub fn sgd_step_(&self, grad: &Tensor, buffer: Option<&Tensor>, step: &SgdStep) -> Result<()> {
        self.sgd_step_skipping(grad, buffer, step, None)
    }

    /// [`Tensor::sgd_step_`] unless `found` (a U32 `[1]` tensor on this device, as
    /// [`Tensor::unscale_`] sets it) is nonzero: then nothing changes. The fused kernel reads
    /// the flag on the device, so a mixed-precision step needs no readback (PyTorch's fused
    /// optimizers' `found_inf`); the composite ops read it back first.
    pub fn sgd_step_unless_(
        &self,
        grad: &Tensor,
        buffer: Option<&Tensor>,
        step: &SgdStep,
        found: &Tensor,
    ) -> Result<()> {
        check_flag("sgd_step", self, found)?;
        self.sgd_step_skipping(grad, buffer, step, Some(found))
    }

    /// [`Tensor::sgd_step_`], skipped where `skip` (checked) is nonzero.
    fn sgd_step_skipping(
        &self,
        grad: &Tensor,
        buffer: Option<&Tensor>,
        step: &SgdStep,
        skip: Option<&Tensor>,
    ) -> Result<()> {
        const OP: &str = "sgd_step";
        let buffer = if step.uses_buffer() {
            Some(buffer.ok_or_else(|| {
                Error::invalid(OP, "a step with momentum needs a momentum buffer")
            })?)
        } else {
            None
        };
        for other in std::iter::once(grad).chain(buffer) {
            if other.shape() != self.shape() {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: self.shape().to_vec(),
                    rhs: other.shape().to_vec(),
                    reason: "the gradient and the buffer must have the parameter's shape".into(),
                });
            }
            if other.dtype() != self.dtype() {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    lhs: self.dtype(),
                    rhs: other.dtype(),
                });
            }
            if other.device() != self.device() {
                return Err(Error::DeviceMismatch {
                    op: OP,
                    lhs: self.device().to_string(),
                    rhs: other.device().to_string(),
                });
            }
        }
        let _guard = crate::autograd::no_grad();
        let grad = &dense_gradient(grad)?;
        let dense = |t: &Tensor| t.layout().is_contiguous();
        let shared = self.same_storage(grad)
            || buffer.is_some_and(|b| b.same_storage(self) || b.same_storage(grad))
            || skip.is_some_and(|s| {
                s.same_storage(self)
                    || s.same_storage(grad)
                    || buffer.is_some_and(|b| s.same_storage(b))
            });
        // The kernels read the flag's first stored element.
        let flag_at_start = skip.is_none_or(|s| s.layout().offset == 0);
        if self.dtype().is_float()
            && dense(self)
            && dense(grad)
            && buffer.is_none_or(dense)
            && !shared
            && flag_at_start
        {
            let fused = {
                let grad_storage = grad.storage();
                let skip_storage = skip.map(Tensor::storage);
                let mut buffer_storage = buffer.map(Tensor::storage_mut);
                let mut storage = self.storage_mut();
                let buffer_view = match (&mut buffer_storage, buffer) {
                    (Some(guard), Some(b)) => Some((&mut **guard, b.layout())),
                    _ => None,
                };
                storage.sgd_step(
                    self.layout(),
                    (&grad_storage, grad.layout()),
                    buffer_view,
                    step,
                    skip_storage.as_deref(),
                )
            };
            match fused {
                // A dtype the backend has no kernel for, or a tensor above one GPU buffer
                // binding: the composite ops (nothing was written).
                Err(Error::Unsupported { .. } | Error::BufferTooLarge { .. }) => {}
                done => return done,
            }
        }
        if let Some(skip) = skip {
            if skip.item_f64()? != 0.0 {
                return Ok(());
            }
        }
        self.sgd_step_composite(grad, buffer, step)
    }

    /// [`Tensor::sgd_step_`] as elementwise ops and copies into the parameter and the buffer
    /// (called under `no_grad`).
    fn sgd_step_composite(
        &self,
        grad: &Tensor,
        buffer: Option<&Tensor>,
        step: &SgdStep,
    ) -> Result<()> {
        let mut g = if step.weight_decay != 0.0 {
            grad.add(&self.mul_scalar(step.weight_decay)?)?
        } else {
            grad.clone()
        };
        if let (true, Some(buffer)) = (step.uses_buffer(), buffer) {
            let next = if step.first {
                g.copy()?
            } else if step.dampening == 0.0 {
                buffer.mul_scalar(step.momentum)?.add(&g)?
            } else {
                buffer
                    .mul_scalar(step.momentum)?
                    .add(&g.mul_scalar(1.0 - step.dampening)?)?
            };
            buffer.assign(&next)?;
            g = if step.nesterov {
                g.add(&next.mul_scalar(step.momentum)?)?
            } else {
                next
            };
        }
        self.assign(&self.sub(&g.mul_scalar(step.lr)?)?)
    }
}

impl Tensor {
    /// One Adam or AdamW step on this parameter, in place (PyTorch's `torch.optim.Adam` /
    /// `AdamW` rule, see [`AdamStep`]): `grad` is its gradient, `exp_avg` and `exp_avg_sq` its
    /// first and second moments (zeros before the first step) and `max_exp_avg_sq` the running
    /// maximum of the second moment (needed with `step.amsgrad`), each updated in place. Runs
    /// without recording gradients. Errors name `adam_step`: a missing maximum, or operands
    /// of another shape, dtype or device.
    pub fn adam_step_(
        &self,
        grad: &Tensor,
        exp_avg: &Tensor,
        exp_avg_sq: &Tensor,
        max_exp_avg_sq: Option<&Tensor>,
        step: &AdamStep,
    ) -> Result<()> {
        const OP: &str = "adam_step";
        let maximum = if step.amsgrad {
            Some(max_exp_avg_sq.ok_or_else(|| {
                Error::invalid(
                    OP,
                    "an AMSGrad step needs the running maximum of the second moment",
                )
            })?)
        } else {
            None
        };
        let others: Vec<&Tensor> = [grad, exp_avg, exp_avg_sq]
            .into_iter()
            .chain(maximum)
            .collect();
        for other in &others {
            check_operand(OP, self, other)?;
        }
        let _guard = crate::autograd::no_grad();
        let grad = &dense_gradient(grad)?;
        let others: Vec<&Tensor> = std::iter::once(grad)
            .chain(others[1..].iter().copied())
            .collect();
        let mut everyone = vec![self];
        everyone.extend(&others);
        let shared = everyone
            .iter()
            .enumerate()
            .any(|(i, a)| everyone[i + 1..].iter().any(|b| a.same_storage(b)));
        let dense = everyone.iter().all(|t| t.layout().is_contiguous());
        if self.dtype().is_float() && dense && !shared {
            let fused = {
                let grad_storage = grad.storage();
                let mut m_storage = exp_avg.storage_mut();
                let mut v_storage = exp_avg_sq.storage_mut();
                let mut x_storage = maximum.map(Tensor::storage_mut);
                let mut storage = self.storage_mut();
                let moments = AdamMoments {
                    exp_avg: (&mut *m_storage, exp_avg.layout()),
                    exp_avg_sq: (&mut *v_storage, exp_avg_sq.layout()),
                    maximum: match (&mut x_storage, maximum) {
                        (Some(guard), Some(x)) => Some((&mut **guard, x.layout())),
                        _ => None,
                    },
                };
                storage.adam_step(self.layout(), (&grad_storage, grad.layout()), moments, step)
            };
            match fused {
                // A dtype the backend has no kernel for, or a tensor above one GPU buffer
                // binding: the composite ops (nothing was written).
                Err(Error::Unsupported { .. } | Error::BufferTooLarge { .. }) => {}
                done => return done,
            }
        }
        self.adam_step_composite(grad, exp_avg, exp_avg_sq, maximum, step)
    }

    /// [`Tensor::adam_step_`] as elementwise ops and copies into the parameter and its state
    /// (called under `no_grad`), in [`AdamStep`]'s order of operations. Half-precision
    /// operands are widened to f32 for the arithmetic and narrowed once at the end, as the
    /// fused kernels do (in f16, `eps` and small squared gradients round to zero).
    fn adam_step_composite(
        &self,
        grad: &Tensor,
        exp_avg: &Tensor,
        exp_avg_sq: &Tensor,
        maximum: Option<&Tensor>,
        step: &AdamStep,
    ) -> Result<()> {
        let stored = self.dtype();
        let wide = |t: &Tensor| {
            if matches!(stored, crate::dtype::DType::F16 | crate::dtype::DType::BF16) {
                t.to_dtype(crate::dtype::DType::F32)
            } else {
                Ok(t.clone())
            }
        };
        let write = |target: &Tensor, value: &Tensor| target.assign(&value.to_dtype(stored)?);
        let [_lr, beta1, keep1, beta2, keep2, eps, decay, shrink, step_size, bias2_root] =
            step.scalars();
        let parameter = wide(self)?;
        let (exp_avg_wide, exp_avg_sq_wide) = (wide(exp_avg)?, wide(exp_avg_sq)?);
        let mut current = parameter.clone();
        let mut g = wide(grad)?;
        if step.weight_decay != 0.0 {
            if step.decoupled {
                current = parameter.mul_scalar(shrink)?;
            } else {
                g = g.add(&parameter.mul_scalar(decay)?)?;
            }
        }
        let m = exp_avg_wide.mul_scalar(beta1)?.add(&g.mul_scalar(keep1)?)?;
        let v = exp_avg_sq_wide
            .mul_scalar(beta2)?
            .add(&g.square()?.mul_scalar(keep2)?)?;
        let second = match maximum {
            Some(maximum) => {
                let largest = wide(maximum)?.maximum(&v)?;
                write(maximum, &largest)?;
                largest
            }
            None => v.clone(),
        };
        let denominator = second.sqrt()?.div_scalar(bias2_root)?.add_scalar(eps)?;
        let update = m.div(&denominator)?.mul_scalar(step_size)?;
        write(self, &current.sub(&update)?)?;
        write(exp_avg, &m)?;
        write(exp_avg_sq, &v)
    }
}

/// The gradient an update reads: a strided one (a linear layer's weight gradient, a transposed
/// product) made dense once, so that the step stays one kernel.
fn dense_gradient(grad: &Tensor) -> Result<Tensor> {
    if grad.layout().is_contiguous() {
        Ok(grad.clone())
    } else {
        grad.contiguous()
    }
}

/// `other`, an operand of the in-place update `op` on `parameter`, checked: the parameter's
/// shape, dtype and device.
fn check_operand(op: &'static str, parameter: &Tensor, other: &Tensor) -> Result<()> {
    if other.shape() != parameter.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: parameter.shape().to_vec(),
            rhs: other.shape().to_vec(),
            reason: "the gradient and the optimizer state must have the parameter's shape".into(),
        });
    }
    if other.dtype() != parameter.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: parameter.dtype(),
            rhs: other.dtype(),
        });
    }
    if other.device() != parameter.device() {
        return Err(Error::DeviceMismatch {
            op,
            lhs: parameter.device().to_string(),
            rhs: other.device().to_string(),
        });
    }
    Ok(())
}

impl Tensor {
    /// Divide this gradient by `scale` in place and set `found` (a U32 `[1]` tensor on the same
    /// device) to a nonzero value if any element was inf or NaN; `found` is never cleared, so
    /// one flag can collect every gradient of a device and be read back once (PyTorch's
    /// `_amp_foreach_non_finite_check_and_unscale_`). One kernel for a contiguous float view;
    /// other views take tensor ops and a readback. Runs without recording gradients.
    pub fn unscale_(&self, scale: f64, found: &Tensor) -> Result<()> {
        const OP: &str = "unscale";
        check_flag(OP, self, found)?;
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("a gradient of dtype {:?} cannot be unscaled", self.dtype()),
            ));
        }
        let _guard = crate::autograd::no_grad();
        if self.layout().is_contiguous() && found.is_contiguous() && !self.same_storage(found) {
            let fused = {
                let mut flag = found.storage_mut();
                let mut storage = self.storage_mut();
                storage.unscale(self.layout(), scale, &mut flag)
            };
            match fused {
                Err(Error::Unsupported { .. } | Error::BufferTooLarge { .. }) => {}
                done => return done,
            }
        }
        // The composite: max |x| is inf or NaN exactly when some element is.
        let total = self.abs()?.max_all()?.item_f64()?;
        self.assign(&self.div_scalar(scale)?)?;
        if !total.is_finite() {
            found.assign(
                &Tensor::full(&[1], 1.0, crate::dtype::DType::U32, self.device())?
                    .reshape(found.shape())?,
            )?;
        }
        Ok(())
    }
}

/// `found`, the inf/NaN flag of `op` on `tensor`: a U32 tensor of one element on its device.
fn check_flag(op: &'static str, tensor: &Tensor, found: &Tensor) -> Result<()> {
    if found.dtype() != crate::dtype::DType::U32 || found.numel() != 1 {
        return Err(Error::invalid(
            op,
            format!(
                "the flag must be a U32 tensor of one element, got {:?} {:?}",
                found.dtype(),
                found.shape()
            ),
        ));
    }
    tensor.same_device(op, found)
}

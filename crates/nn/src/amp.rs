//! `GradScaler`: dynamic loss scaling for mixed-precision training, like
//! `torch.cuda.amp.GradScaler`. f16 gradients of small magnitude underflow to zero; scaling the
//! loss by `S` before `backward` keeps them representable, and dividing the gradients by `S`
//! before the optimizer step restores their value. When a step produces inf/NaN gradients the
//! step is skipped and `S` shrinks (`backoff`); after `growth_interval` good steps `S` grows.

use anygrad_core::{no_grad, DType, Device, Result, Tensor};

use crate::optim::Optimizer;

/// Dynamic loss scaler.
#[derive(Debug, Clone)]
pub struct GradScaler {
    scale: f64,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: usize,
    good_steps: usize,
    unscaled: bool,
    found_inf: bool,
    skipped_steps: usize,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new(65536.0, 2.0, 0.5, 2000)
    }
}

impl GradScaler {
    /// A scaler with PyTorch's parameter names: initial scale, growth and backoff factors,
    /// and the number of good steps between growths.
    pub fn new(
        init_scale: f64,
        growth_factor: f64,
        backoff_factor: f64,
        growth_interval: usize,
    ) -> GradScaler {
        GradScaler {
            scale: init_scale,
            growth_factor,
            backoff_factor,
            growth_interval: growth_interval.max(1),
            good_steps: 0,
            unscaled: false,
            found_inf: false,
            skipped_steps: 0,
        }
    }

    /// The current scale.
    pub fn scale_value(&self) -> f64 {
        self.scale
    }

    /// Steps skipped so far because of inf/NaN gradients.
    pub fn skipped_steps(&self) -> usize {
        self.skipped_steps
    }

    /// `loss * scale`, to call `backward` on.
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        loss.mul_scalar(self.scale)
    }

    /// Divide every gradient by the scale (call before clipping); remembers whether any
    /// gradient is inf/NaN. Idempotent until the next `update`. The check reads back one
    /// value per device. Over a data-parallel `ReplicatedOptimizer` every replica's
    /// gradients are unscaled and checked (they are identical, so all replicas agree).
    pub fn unscale(&mut self, optimizer: &dyn Optimizer) -> Result<()> {
        if self.unscaled {
            return Ok(());
        }
        let _guard = no_grad();
        // One flag per device collects every gradient's inf/NaN check; each gradient is
        // divided in place by one kernel (`Tensor::unscale_`), and each flag read back once.
        let mut flags: Vec<(Device, Tensor)> = Vec::new();
        let mut done: Vec<Tensor> = Vec::new();
        for parameter in optimizer.gradient_slots() {
            let Some(mut grad) = parameter.grad() else {
                continue;
            };
            // A gradient whose storage another parameter's gradient shares (autograd may hand
            // both the same tensor) is copied first, so that it is divided once.
            if done.iter().any(|other| other.same_storage(&grad)) {
                grad = grad.copy()?;
                parameter.set_grad(Some(grad.clone()));
            }
            let flag = match flags.iter().find(|(d, _)| d == grad.device()) {
                Some((_, flag)) => flag.clone(),
                None => {
                    let flag = Tensor::zeros(&[1], DType::U32, grad.device())?;
                    flags.push((grad.device().clone(), flag.clone()));
                    flag
                }
            };
            grad.unscale_(self.scale, &flag)?;
            done.push(grad);
        }
        let mut found_inf = false;
        for (_, flag) in &flags {
            if flag.item_f64()? != 0.0 {
                found_inf = true;
            }
        }
        self.found_inf = found_inf;
        self.unscaled = true;
        Ok(())
    }

    /// Unscale (if not done yet) and step the optimizer unless a gradient was inf/NaN.
    /// Returns whether the step was taken.
    pub fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<bool> {
        self.unscale(optimizer)?;
        if self.found_inf {
            self.skipped_steps += 1;
            return Ok(false);
        }
        optimizer.step()?;
        Ok(true)
    }

    /// Adjust the scale after a step: back off after an overflow, grow after
    /// `growth_interval` good steps.
    pub fn update(&mut self) {
        if self.found_inf {
            self.scale *= self.backoff_factor;
            self.good_steps = 0;
        } else {
            self.good_steps += 1;
            if self.good_steps >= self.growth_interval {
                self.scale *= self.growth_factor;
                self.good_steps = 0;
            }
        }
        self.unscaled = false;
        self.found_inf = false;
    }
}

//! `GradScaler`: dynamic loss scaling for mixed-precision training, like
//! `torch.cuda.amp.GradScaler`. f16 gradients of small magnitude underflow to zero; scaling the
//! loss by `S` before `backward` keeps them representable, and dividing the gradients by `S`
//! before the optimizer step restores their value. When a step produces inf/NaN gradients the
//! step is skipped and `S` shrinks (`backoff`); after `growth_interval` good steps `S` grows.

use anygrad_core::{no_grad, DType, Device, Result, Tensor};

use crate::optim::Optimizer;

/// Whether two tensors may share an element: the same storage, and (for contiguous views)
/// intersecting ranges of it.
fn overlaps(a: &Tensor, b: &Tensor) -> bool {
    if !a.same_storage(b) {
        return false;
    }
    if !(a.is_contiguous() && b.is_contiguous()) {
        return true;
    }
    let (a_start, b_start) = (a.layout().offset, b.layout().offset);
    a_start < b_start + b.numel() && b_start < a_start + a.numel()
}

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
        // Each distinct gradient once: one tensor handed to several parameters (autograd may
        // do that) is divided once; a gradient overlapping another in any other way is copied
        // first (before anything is divided), and disjoint rows of one tensor (a batch norm's
        // two gradients) are left as they are.
        let mut distinct: Vec<Tensor> = Vec::new();
        for parameter in optimizer.gradient_slots() {
            let Some(grad) = parameter.grad() else {
                continue;
            };
            let same =
                |other: &Tensor| other.same_storage(&grad) && other.layout() == grad.layout();
            if distinct.iter().any(same) {
                continue;
            }
            if distinct.iter().any(|other| overlaps(other, &grad)) {
                let copy = grad.copy()?;
                parameter.set_grad(Some(copy.clone()));
                distinct.push(copy);
            } else {
                distinct.push(grad);
            }
        }
        for grad in &distinct {
            let flag = match flags.iter().find(|(d, _)| d == grad.device()) {
                Some((_, flag)) => flag.clone(),
                None => {
                    let flag = Tensor::zeros(&[1], DType::U32, grad.device())?;
                    flags.push((grad.device().clone(), flag.clone()));
                    flag
                }
            };
            grad.unscale_(self.scale, &flag)?;
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

//! Learning-rate schedulers, stepped once per epoch after the optimizer, like
//! `torch.optim.lr_scheduler`. Both use PyTorch's closed forms (which its recursive updates
//! reproduce when nothing else changes the rate):
//!
//! - `StepLR`: `lr = base_lr · γ^⌊epoch / step_size⌋`
//! - `CosineAnnealingLR`: `lr = η_min + (base_lr − η_min) · (1 + cos(π · epoch / T_max)) / 2`

use super::Optimizer;

/// A schedule that sets the optimizer's learning rate each epoch.
pub trait LrScheduler {
    /// The learning rate at `epoch` (0 = before the first `step`).
    fn lr_at(&self, epoch: usize) -> f64;

    /// Number of `step` calls so far.
    fn last_epoch(&self) -> usize;

    /// Advance one epoch and set the optimizer's learning rate.
    fn step(&mut self, optimizer: &mut dyn Optimizer);

    /// The rate the last `step` set (PyTorch's `get_last_lr()`).
    fn last_lr(&self) -> f64 {
        self.lr_at(self.last_epoch())
    }
}

/// Decay by `gamma` every `step_size` epochs, like `torch.optim.lr_scheduler.StepLR`.
#[derive(Debug, Clone)]
pub struct StepLR {
    base_lr: f64,
    step_size: usize,
    gamma: f64,
    epoch: usize,
}

impl StepLR {
    /// Start from the optimizer's current learning rate.
    pub fn new(optimizer: &dyn Optimizer, step_size: usize, gamma: f64) -> StepLR {
        StepLR {
            base_lr: optimizer.learning_rate(),
            step_size: step_size.max(1),
            gamma,
            epoch: 0,
        }
    }

    /// Resume at `epoch` (after loading a checkpoint).
    pub fn set_last_epoch(&mut self, epoch: usize) {
        self.epoch = epoch;
    }
}

impl LrScheduler for StepLR {
    fn lr_at(&self, epoch: usize) -> f64 {
        self.base_lr * self.gamma.powi((epoch / self.step_size) as i32)
    }

    fn last_epoch(&self) -> usize {
        self.epoch
    }

    fn step(&mut self, optimizer: &mut dyn Optimizer) {
        self.epoch += 1;
        optimizer.set_learning_rate(self.lr_at(self.epoch));
    }
}

/// Cosine annealing from the base rate to `eta_min` over `t_max` epochs, like
/// `torch.optim.lr_scheduler.CosineAnnealingLR` (it rises again after `t_max`, as there).
#[derive(Debug, Clone)]
pub struct CosineAnnealingLR {
    base_lr: f64,
    t_max: usize,
    eta_min: f64,
    epoch: usize,
}

impl CosineAnnealingLR {
    /// Start from the optimizer's current learning rate.
    pub fn new(optimizer: &dyn Optimizer, t_max: usize, eta_min: f64) -> CosineAnnealingLR {
        CosineAnnealingLR {
            base_lr: optimizer.learning_rate(),
            t_max: t_max.max(1),
            eta_min,
            epoch: 0,
        }
    }

    /// Resume at `epoch` (after loading a checkpoint).
    pub fn set_last_epoch(&mut self, epoch: usize) {
        self.epoch = epoch;
    }
}

impl LrScheduler for CosineAnnealingLR {
    fn lr_at(&self, epoch: usize) -> f64 {
        let phase = std::f64::consts::PI * epoch as f64 / self.t_max as f64;
        self.eta_min + (self.base_lr - self.eta_min) * (1.0 + phase.cos()) / 2.0
    }

    fn last_epoch(&self) -> usize {
        self.epoch
    }

    fn step(&mut self, optimizer: &mut dyn Optimizer) {
        self.epoch += 1;
        optimizer.set_learning_rate(self.lr_at(self.epoch));
    }
}

//! Learning-rate schedulers, like `torch.optim.lr_scheduler`: stepped after the optimizer,
//! once per epoch or once per iteration (a scheduler only counts its `step` calls; size
//! `step_size`, `milestones`, `t_max` or `total_iters` in the unit you step it in). Every
//! scheduler sets **every parameter group's** rate, from that group's own base rate (the rate
//! the group had when the scheduler was created), as PyTorch does.
//!
//! The schedules here have closed forms ([`LrSchedule::lr`]); PyTorch's recursive updates
//! reproduce them when nothing else changes the rate:
//!
//! - `StepLR`: `lr = base · γ^⌊t / step_size⌋`
//! - `MultiStepLR`: `lr = base · γ^(number of milestones ≤ t)`
//! - `CosineAnnealingLR`: `lr = η_min + (base − η_min) · (1 + cos(π · t / T_max)) / 2`
//! - `LinearLR`: `lr = base · (start + (end − start) · min(t, total_iters) / total_iters)`
//! - `LambdaLR`: `lr = base · λ(t)`
//! - `SequentialLR`: the `i`-th schedule from milestone `i − 1` on, restarted at its step 0
//!
//! `OneCycleLR` (per-iteration one-cycle policy with momentum cycling) and `ReduceLROnPlateau`
//! (driven by a metric) live in their own files.

use anygrad_core::{Error, Result};

use super::Optimizer;

/// A schedule that sets the optimizer's learning rates each time it is stepped.
pub trait LrScheduler {
    /// Advance one step (epoch or iteration) and set every parameter group's learning rate.
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()>;

    /// Number of `step` calls so far.
    fn last_epoch(&self) -> usize;

    /// Resume at `epoch` (after loading a checkpoint); the next `step` sets the rate of
    /// `epoch + 1`.
    fn set_last_epoch(&mut self, epoch: usize);

    /// The rates the last `step` set, one per parameter group (PyTorch's `get_last_lr()`).
    fn last_lrs(&self) -> Vec<f64>;

    /// The rate the last `step` set for group 0.
    fn last_lr(&self) -> f64 {
        self.last_lrs().first().copied().unwrap_or(0.0)
    }
}

/// The step count and per-group base rates every closed-form schedule keeps.
#[derive(Debug, Clone)]
pub struct ScheduleState {
    /// Each parameter group's rate when the scheduler was created.
    pub base_lrs: Vec<f64>,
    /// Number of `step` calls so far.
    pub epoch: usize,
}

impl ScheduleState {
    /// Read every group's current rate from `optimizer`.
    fn from_optimizer(optimizer: &dyn Optimizer) -> ScheduleState {
        let base_lrs = (0..optimizer.group_count())
            .map(|group| {
                optimizer
                    .group_learning_rate(group)
                    .unwrap_or_else(|_| optimizer.learning_rate())
            })
            .collect();
        ScheduleState { base_lrs, epoch: 0 }
    }
}

/// A schedule with a closed form: the rate at step `epoch` from a group's base rate. Every
/// `LrSchedule` is an [`LrScheduler`]; [`SequentialLR`] chains them.
pub trait LrSchedule: Send {
    /// The rate at step `epoch` for a group whose base rate is `base_lr`.
    fn lr(&self, base_lr: f64, epoch: usize) -> f64;

    /// The step count and base rates.
    fn state(&self) -> &ScheduleState;

    /// The step count and base rates, mutably.
    fn state_mut(&mut self) -> &mut ScheduleState;
}

/// Set every group of `optimizer` to the rate of `schedule` at `epoch`.
fn apply_schedule<S: LrSchedule + ?Sized>(
    schedule: &S,
    optimizer: &mut dyn Optimizer,
    epoch: usize,
) -> Result<()> {
    let base_lrs = &schedule.state().base_lrs;
    if optimizer.group_count() != base_lrs.len() {
        return Err(Error::invalid(
            "LrScheduler::step",
            format!(
                "the scheduler was created for {} parameter groups but the optimizer has {}",
                base_lrs.len(),
                optimizer.group_count()
            ),
        ));
    }
    for (group, &base) in base_lrs.iter().enumerate() {
        optimizer.set_group_learning_rate(group, schedule.lr(base, epoch))?;
    }
    Ok(())
}

impl<S: LrSchedule> LrScheduler for S {
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        let epoch = self.state().epoch + 1;
        apply_schedule(self, optimizer, epoch)?;
        self.state_mut().epoch = epoch;
        Ok(())
    }

    fn last_epoch(&self) -> usize {
        self.state().epoch
    }

    fn set_last_epoch(&mut self, epoch: usize) {
        self.state_mut().epoch = epoch;
    }

    fn last_lrs(&self) -> Vec<f64> {
        let state = self.state();
        state
            .base_lrs
            .iter()
            .map(|&base| self.lr(base, state.epoch))
            .collect()
    }
}

/// Decay by `gamma` every `step_size` steps, like `torch.optim.lr_scheduler.StepLR`.
#[derive(Debug, Clone)]
pub struct StepLR {
    state: ScheduleState,
    step_size: usize,
    gamma: f64,
}

impl StepLR {
    /// Start from the optimizer's current rates (step 0 keeps them).
    pub fn new(optimizer: &dyn Optimizer, step_size: usize, gamma: f64) -> StepLR {
        StepLR {
            state: ScheduleState::from_optimizer(optimizer),
            step_size: step_size.max(1),
            gamma,
        }
    }
}

impl LrSchedule for StepLR {
    fn lr(&self, base_lr: f64, epoch: usize) -> f64 {
        base_lr * self.gamma.powi((epoch / self.step_size) as i32)
    }
    fn state(&self) -> &ScheduleState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut ScheduleState {
        &mut self.state
    }
}

/// Decay by `gamma` at each milestone, like `torch.optim.lr_scheduler.MultiStepLR`.
#[derive(Debug, Clone)]
pub struct MultiStepLR {
    state: ScheduleState,
    milestones: Vec<usize>,
    gamma: f64,
}

impl MultiStepLR {
    /// Start from the optimizer's current rates; `milestones` are step counts (sorted here;
    /// a repeated milestone decays twice, as in PyTorch). Sets the rate of step 0.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        milestones: &[usize],
        gamma: f64,
    ) -> Result<MultiStepLR> {
        if !gamma.is_finite() {
            return Err(Error::invalid(
                "MultiStepLR::new",
                format!("gamma {gamma} must be finite"),
            ));
        }
        let mut milestones = milestones.to_vec();
        milestones.sort_unstable();
        let schedule = MultiStepLR {
            state: ScheduleState::from_optimizer(optimizer),
            milestones,
            gamma,
        };
        apply_schedule(&schedule, optimizer, 0)?;
        Ok(schedule)
    }
}

impl LrSchedule for MultiStepLR {
    fn lr(&self, base_lr: f64, epoch: usize) -> f64 {
        let passed = self.milestones.partition_point(|&m| m <= epoch);
        base_lr * self.gamma.powi(passed as i32)
    }
    fn state(&self) -> &ScheduleState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut ScheduleState {
        &mut self.state
    }
}

/// Cosine annealing from the base rate to `eta_min` over `t_max` steps, like
/// `torch.optim.lr_scheduler.CosineAnnealingLR` (it rises again after `t_max`, as there).
#[derive(Debug, Clone)]
pub struct CosineAnnealingLR {
    state: ScheduleState,
    t_max: usize,
    eta_min: f64,
}

impl CosineAnnealingLR {
    /// Start from the optimizer's current rates (step 0 keeps them).
    pub fn new(optimizer: &dyn Optimizer, t_max: usize, eta_min: f64) -> CosineAnnealingLR {
        CosineAnnealingLR {
            state: ScheduleState::from_optimizer(optimizer),
            t_max: t_max.max(1),
            eta_min,
        }
    }
}

impl LrSchedule for CosineAnnealingLR {
    fn lr(&self, base_lr: f64, epoch: usize) -> f64 {
        let phase = std::f64::consts::PI * epoch as f64 / self.t_max as f64;
        self.eta_min + (base_lr - self.eta_min) * (1.0 + phase.cos()) / 2.0
    }
    fn state(&self) -> &ScheduleState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut ScheduleState {
        &mut self.state
    }
}

/// Scale the base rate linearly from `start_factor` to `end_factor` over `total_iters` steps,
/// then keep `end_factor`, like `torch.optim.lr_scheduler.LinearLR` (a warm-up with the
/// defaults' start 1/3, end 1, 5 steps).
#[derive(Debug, Clone)]
pub struct LinearLR {
    state: ScheduleState,
    start_factor: f64,
    end_factor: f64,
    total_iters: usize,
}

impl LinearLR {
    /// Start from the optimizer's current rates and set the rate of step 0
    /// (`base · start_factor`). PyTorch's checks: `0 < start_factor ≤ 1`, `0 ≤ end_factor ≤ 1`.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> Result<LinearLR> {
        if !(start_factor > 0.0 && start_factor <= 1.0 && (0.0..=1.0).contains(&end_factor)) {
            return Err(Error::invalid(
                "LinearLR::new",
                format!(
                    "start_factor {start_factor} must be in (0, 1] and end_factor {end_factor} \
                     in [0, 1]"
                ),
            ));
        }
        let schedule = LinearLR {
            state: ScheduleState::from_optimizer(optimizer),
            start_factor,
            end_factor,
            total_iters,
        };
        apply_schedule(&schedule, optimizer, 0)?;
        Ok(schedule)
    }

    /// PyTorch's defaults: from 1/3 of the base rate to the base rate over 5 steps.
    pub fn with_defaults(optimizer: &mut dyn Optimizer) -> Result<LinearLR> {
        LinearLR::new(optimizer, 1.0 / 3.0, 1.0, 5)
    }
}

impl LrSchedule for LinearLR {
    fn lr(&self, base_lr: f64, epoch: usize) -> f64 {
        let progress = if self.total_iters == 0 {
            1.0
        } else {
            epoch.min(self.total_iters) as f64 / self.total_iters as f64
        };
        base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress)
    }
    fn state(&self) -> &ScheduleState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut ScheduleState {
        &mut self.state
    }
}

/// The factor function of a [`LambdaLR`].
type LrLambda = Box<dyn Fn(usize) -> f64 + Send + Sync>;

/// `base · λ(step)`, like `torch.optim.lr_scheduler.LambdaLR` (one function for every
/// group).
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{LambdaLR, LrScheduler, Optimizer, Parameter, Sgd, SgdConfig};
/// let p = Parameter::new(Tensor::zeros(&[1], DType::F32, &Device::Cpu)?);
/// let mut optimizer = Sgd::new(vec![("p".into(), p)], SgdConfig::new(0.1))?;
/// let mut scheduler = LambdaLR::new(&mut optimizer, |epoch| 0.5f64.powi(epoch as i32))?;
/// scheduler.step(&mut optimizer)?;
/// assert!((optimizer.learning_rate() - 0.05).abs() < 1e-12);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct LambdaLR {
    state: ScheduleState,
    factor: LrLambda,
}

impl std::fmt::Debug for LambdaLR {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LambdaLR")
            .field("state", &self.state)
            .finish()
    }
}

impl LambdaLR {
    /// Start from the optimizer's current rates and set the rate of step 0 (`base · λ(0)`).
    pub fn new<F>(optimizer: &mut dyn Optimizer, factor: F) -> Result<LambdaLR>
    where
        F: Fn(usize) -> f64 + Send + Sync + 'static,
    {
        let schedule = LambdaLR {
            state: ScheduleState::from_optimizer(optimizer),
            factor: Box::new(factor),
        };
        apply_schedule(&schedule, optimizer, 0)?;
        Ok(schedule)
    }
}

impl LrSchedule for LambdaLR {
    fn lr(&self, base_lr: f64, epoch: usize) -> f64 {
        base_lr * (self.factor)(epoch)
    }
    fn state(&self) -> &ScheduleState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut ScheduleState {
        &mut self.state
    }
}

/// Schedules one after another, like `torch.optim.lr_scheduler.SequentialLR`: schedule `i`
/// runs from milestone `i − 1` (restarted at its own step 0) until milestone `i`. The base
/// rates are the first schedule's (so a warm-up followed by a decay both start from the
/// optimizer's rates before the warm-up changed them, as in PyTorch).
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{CosineAnnealingLR, LinearLR, LrScheduler, Optimizer, Parameter, SequentialLR, Sgd, SgdConfig};
/// let p = Parameter::new(Tensor::zeros(&[1], DType::F32, &Device::Cpu)?);
/// let mut optimizer = Sgd::new(vec![("p".into(), p)], SgdConfig::new(0.1))?;
/// let warmup = LinearLR::new(&mut optimizer, 0.1, 1.0, 5)?;
/// let decay = CosineAnnealingLR::new(&optimizer, 20, 0.0);
/// let mut scheduler = SequentialLR::new(&mut optimizer, vec![Box::new(warmup), Box::new(decay)], &[5])?;
/// assert!((optimizer.learning_rate() - 0.01).abs() < 1e-12);
/// for _ in 0..5 {
///     scheduler.step(&mut optimizer)?;
/// }
/// assert!((optimizer.learning_rate() - 0.1).abs() < 1e-12);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct SequentialLR {
    state: ScheduleState,
    schedules: Vec<Box<dyn LrSchedule>>,
    milestones: Vec<usize>,
}

impl std::fmt::Debug for SequentialLR {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequentialLR")
            .field("state", &self.state)
            .field("schedules", &self.schedules.len())
            .field("milestones", &self.milestones)
            .finish()
    }
}

impl SequentialLR {
    /// Chain `schedules` switching at `milestones` (one fewer than the schedules, strictly
    /// increasing); sets the rate of step 0 (the first schedule's).
    pub fn new(
        optimizer: &mut dyn Optimizer,
        schedules: Vec<Box<dyn LrSchedule>>,
        milestones: &[usize],
    ) -> Result<SequentialLR> {
        let Some(first) = schedules.first() else {
            return Err(Error::invalid(
                "SequentialLR::new",
                "needs at least one schedule",
            ));
        };
        if milestones.len() + 1 != schedules.len() {
            return Err(Error::invalid(
                "SequentialLR::new",
                format!(
                    "{} schedules need {} milestones, got {milestones:?}",
                    schedules.len(),
                    schedules.len() - 1
                ),
            ));
        }
        if milestones.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(
                "SequentialLR::new",
                format!("milestones {milestones:?} must be strictly increasing"),
            ));
        }
        let state = ScheduleState {
            base_lrs: first.state().base_lrs.clone(),
            epoch: 0,
        };
        if let Some(other) = schedules
            .iter()
            .position(|s| s.state().base_lrs.len() != state.base_lrs.len())
        {
            return Err(Error::invalid(
                "SequentialLR::new",
                format!(
                    "schedule {other} was created for {} parameter groups, schedule 0 for {}",
                    schedules[other].state().base_lrs.len(),
                    state.base_lrs.len()
                ),
            ));
        }
        let schedule = SequentialLR {
            state,
            schedules,
            milestones: milestones.to_vec(),
        };
        apply_schedule(&schedule, optimizer, 0)?;
        Ok(schedule)
    }
}

impl LrSchedule for SequentialLR {
    fn lr(&self, base_lr: f64, epoch: usize) -> f64 {
        let index = self.milestones.partition_point(|&m| m <= epoch);
        let local = match index {
            0 => epoch,
            _ => epoch - self.milestones[index - 1],
        };
        self.schedules[index].lr(base_lr, local)
    }
    fn state(&self) -> &ScheduleState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut ScheduleState {
        &mut self.state
    }
}

//! `ReduceLROnPlateau`: lower the learning rate when a metric stops improving, like
//! `torch.optim.lr_scheduler.ReduceLROnPlateau`, with its defaults (mode min, factor 0.1,
//! patience 10, threshold 1e-4 relative, cooldown 0, min_lr 0, eps 1e-8). Stepped with the
//! metric, usually once per epoch after validation:
//!
//! ```text
//! better = metric < best · (1 − threshold)     (min, rel; max: > best · (1 + threshold);
//!                                               abs: < best − threshold / > best + threshold)
//! better: best = metric, bad = 0;  else bad += 1
//! in cooldown: cooldown −= 1, bad = 0
//! bad > patience: every group's lr = max(lr · factor, min_lr) unless that changes it by
//!                 eps or less; cooldown = cooldown period; bad = 0
//! ```

use anygrad_core::{Error, Result};

use super::Optimizer;

/// Whether a lower or a higher metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlateauMode {
    /// Lower is better (losses; PyTorch's default `'min'`).
    Min,
    /// Higher is better (accuracies; `'max'`).
    Max,
}

/// How the improvement threshold is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdMode {
    /// Relative to the best value (PyTorch's default `'rel'`).
    Rel,
    /// In the metric's units (`'abs'`).
    Abs,
}

/// The counters of a [`ReduceLROnPlateau`], to checkpoint and resume it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlateauState {
    /// The best metric so far (±∞ before the first step).
    pub best: f64,
    /// Steps without improvement since the last improvement or reduction.
    pub num_bad_epochs: usize,
    /// Steps of cooldown left.
    pub cooldown_counter: usize,
    /// Number of `step` calls so far.
    pub last_epoch: usize,
}

/// Reduce every group's learning rate when the metric plateaus.
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{Optimizer, Parameter, ReduceLROnPlateau, Sgd, SgdConfig};
/// let p = Parameter::new(Tensor::zeros(&[1], DType::F32, &Device::Cpu)?);
/// let mut optimizer = Sgd::new(vec![("p".into(), p)], SgdConfig::new(0.1))?;
/// let mut scheduler = ReduceLROnPlateau::new(&optimizer).patience(1);
/// for loss in [1.0, 0.9, 0.9, 0.9] {
///     scheduler.step(&mut optimizer, loss)?;
/// }
/// assert!((optimizer.learning_rate() - 0.01).abs() < 1e-12);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ReduceLROnPlateau {
    mode: PlateauMode,
    factor: f64,
    patience: usize,
    threshold: f64,
    threshold_mode: ThresholdMode,
    cooldown: usize,
    min_lrs: Vec<f64>,
    eps: f64,
    groups: usize,
    best: f64,
    num_bad_epochs: usize,
    cooldown_counter: usize,
    epoch: usize,
}

impl ReduceLROnPlateau {
    /// PyTorch's defaults, for `optimizer`'s parameter groups.
    pub fn new(optimizer: &dyn Optimizer) -> ReduceLROnPlateau {
        let groups = optimizer.group_count();
        ReduceLROnPlateau {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lrs: vec![0.0; groups],
            eps: 1e-8,
            groups,
            best: f64::INFINITY,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            epoch: 0,
        }
    }

    /// Lower (`Min`) or higher (`Max`) is better (builder style).
    pub fn mode(mut self, mode: PlateauMode) -> Self {
        self.mode = mode;
        self.best = match mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        };
        self
    }

    /// The factor applied on a plateau, in `[0, 1)` (builder style; checked by `step`).
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// Number of steps without improvement tolerated before reducing (builder style).
    pub fn patience(mut self, patience: usize) -> Self {
        self.patience = patience;
        self
    }

    /// The improvement threshold and how it is measured (builder style).
    pub fn threshold(mut self, threshold: f64, mode: ThresholdMode) -> Self {
        self.threshold = threshold;
        self.threshold_mode = mode;
        self
    }

    /// Steps to wait after a reduction before counting bad steps again (builder style).
    pub fn cooldown(mut self, cooldown: usize) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// The lowest rate of every group (builder style).
    pub fn min_lr(mut self, min_lr: f64) -> Self {
        self.min_lrs = vec![min_lr; self.groups];
        self
    }

    /// The lowest rate of each group, one value per group (builder style; checked by `step`).
    pub fn min_lrs(mut self, min_lrs: &[f64]) -> Self {
        self.min_lrs = min_lrs.to_vec();
        self
    }

    /// Reductions smaller than this are skipped (builder style).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }

    /// The best metric so far.
    pub fn best(&self) -> f64 {
        self.best
    }

    /// Steps without improvement so far.
    pub fn num_bad_epochs(&self) -> usize {
        self.num_bad_epochs
    }

    /// Number of `step` calls so far.
    pub fn last_epoch(&self) -> usize {
        self.epoch
    }

    /// The counters to save with a checkpoint.
    pub fn state(&self) -> PlateauState {
        PlateauState {
            best: self.best,
            num_bad_epochs: self.num_bad_epochs,
            cooldown_counter: self.cooldown_counter,
            last_epoch: self.epoch,
        }
    }

    /// Resume from saved counters (the settings are the builder's).
    pub fn load_state(&mut self, state: PlateauState) {
        self.best = state.best;
        self.num_bad_epochs = state.num_bad_epochs;
        self.cooldown_counter = state.cooldown_counter;
        self.epoch = state.last_epoch;
    }

    fn is_better(&self, metric: f64) -> bool {
        let best = self.best;
        match (self.mode, self.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => metric < best * (1.0 - self.threshold),
            (PlateauMode::Min, ThresholdMode::Abs) => metric < best - self.threshold,
            (PlateauMode::Max, ThresholdMode::Rel) => metric > best * (1.0 + self.threshold),
            (PlateauMode::Max, ThresholdMode::Abs) => metric > best + self.threshold,
        }
    }

    fn check(&self, optimizer: &dyn Optimizer) -> Result<()> {
        let op = "ReduceLROnPlateau::step";
        if !(0.0..1.0).contains(&self.factor) {
            return Err(Error::invalid(
                op,
                format!("factor {} must be in [0, 1)", self.factor),
            ));
        }
        if !(self.threshold.is_finite() && self.threshold >= 0.0) {
            return Err(Error::invalid(
                op,
                format!("threshold {} must be finite and >= 0", self.threshold),
            ));
        }
        if self.min_lrs.len() != optimizer.group_count() {
            return Err(Error::invalid(
                op,
                format!(
                    "{} min_lrs for an optimizer with {} parameter groups",
                    self.min_lrs.len(),
                    optimizer.group_count()
                ),
            ));
        }
        Ok(())
    }

    /// Record `metric` for this step and reduce the rates if it has plateaued.
    pub fn step(&mut self, optimizer: &mut dyn Optimizer, metric: f64) -> Result<()> {
        self.check(optimizer)?;
        self.epoch += 1;
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.patience {
            for (group, &min_lr) in self.min_lrs.iter().enumerate() {
                let old = optimizer.group_learning_rate(group)?;
                let new = (old * self.factor).max(min_lr);
                if old - new > self.eps {
                    optimizer.set_group_learning_rate(group, new)?;
                }
            }
            self.cooldown_counter = self.cooldown;
            self.num_bad_epochs = 0;
        }
        Ok(())
    }
}

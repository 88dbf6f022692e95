//! `OneCycleLR`: the one-cycle policy, like `torch.optim.lr_scheduler.OneCycleLR`, stepped
//! once per **iteration** (batch). With PyTorch's defaults the rate starts at
//! `max_lr / div_factor` (25), rises to `max_lr` over the first `pct_start` (30 %) of the
//! steps and anneals (cosine) to `initial / final_div_factor` (1e4) at the last step, while
//! the momentum (SGD's and RMSprop's `momentum`, Adam's `beta1`) moves the opposite way
//! between `max_momentum` (0.95) and `base_momentum` (0.85). With `three_phase` the rate
//! rises, falls back to the initial rate, then anneals to the minimum.
//!
//! Phase `i` ends at step `e_i` (`pct_start · T − 1`, then `T − 1`; three-phase:
//! `pct_start · T − 1`, `2 · pct_start · T − 2`, `T − 1`); within a phase starting at `s`, the
//! rate is `anneal(start, end, (t − s) / (e − s))` with `cos`:
//! `end + (start − end) · (1 + cos(π · pct)) / 2`, or `linear`: `start + (end − start) · pct`.

use anygrad_core::{Error, Result};

use super::scheduler::LrScheduler;
use super::Optimizer;

/// How [`OneCycleLR`] moves between two values within a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnealStrategy {
    /// Half a cosine (PyTorch's default `'cos'`).
    Cos,
    /// A straight line (`'linear'`).
    Linear,
}

impl AnnealStrategy {
    fn anneal(self, start: f64, end: f64, pct: f64) -> f64 {
        match self {
            AnnealStrategy::Cos => {
                end + (start - end) / 2.0 * ((std::f64::consts::PI * pct).cos() + 1.0)
            }
            AnnealStrategy::Linear => (end - start) * pct + start,
        }
    }
}

/// The options of [`OneCycleLR`], with PyTorch's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct OneCycleOptions {
    /// The peak rate of each parameter group (one value: every group).
    pub max_lrs: Vec<f64>,
    /// Number of steps in the cycle (epochs × steps per epoch).
    pub total_steps: usize,
    /// Fraction of the cycle spent raising the rate (0.3).
    pub pct_start: f64,
    /// Cosine or linear annealing (cosine).
    pub anneal_strategy: AnnealStrategy,
    /// Cycle the momentum inversely to the rate (true).
    pub cycle_momentum: bool,
    /// The momentum at the peak rate (0.85).
    pub base_momentum: f64,
    /// The momentum at the start and end (0.95).
    pub max_momentum: f64,
    /// `initial_lr = max_lr / div_factor` (25).
    pub div_factor: f64,
    /// `min_lr = initial_lr / final_div_factor` (1e4).
    pub final_div_factor: f64,
    /// Three phases: up, back down to the initial rate, then to the minimum (false).
    pub three_phase: bool,
}

impl OneCycleOptions {
    /// A cycle of `total_steps` steps peaking at `max_lr` for every group, other options at
    /// PyTorch's defaults.
    pub fn new(max_lr: f64, total_steps: usize) -> OneCycleOptions {
        OneCycleOptions {
            max_lrs: vec![max_lr],
            total_steps,
            pct_start: 0.3,
            anneal_strategy: AnnealStrategy::Cos,
            cycle_momentum: true,
            base_momentum: 0.85,
            max_momentum: 0.95,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }

    /// A cycle over `epochs × steps_per_epoch` steps (PyTorch's `epochs`, `steps_per_epoch`).
    pub fn with_epochs(max_lr: f64, epochs: usize, steps_per_epoch: usize) -> OneCycleOptions {
        OneCycleOptions::new(max_lr, epochs.saturating_mul(steps_per_epoch))
    }

    /// One peak rate per parameter group (builder style).
    pub fn max_lrs(mut self, max_lrs: &[f64]) -> Self {
        self.max_lrs = max_lrs.to_vec();
        self
    }

    /// Set `pct_start` (builder style).
    pub fn pct_start(mut self, pct_start: f64) -> Self {
        self.pct_start = pct_start;
        self
    }

    /// Set the annealing strategy (builder style).
    pub fn anneal_strategy(mut self, strategy: AnnealStrategy) -> Self {
        self.anneal_strategy = strategy;
        self
    }

    /// Cycle the momentum or not (builder style).
    pub fn cycle_momentum(mut self, cycle: bool) -> Self {
        self.cycle_momentum = cycle;
        self
    }

    /// Set the momentum range (builder style).
    pub fn momentum_range(mut self, base_momentum: f64, max_momentum: f64) -> Self {
        self.base_momentum = base_momentum;
        self.max_momentum = max_momentum;
        self
    }

    /// Set `div_factor` and `final_div_factor` (builder style).
    pub fn div_factors(mut self, div_factor: f64, final_div_factor: f64) -> Self {
        self.div_factor = div_factor;
        self.final_div_factor = final_div_factor;
        self
    }

    /// Use three phases (builder style).
    pub fn three_phase(mut self, three_phase: bool) -> Self {
        self.three_phase = three_phase;
        self
    }
}

/// One phase: ends at `end_step`, moving the rate between two of (initial, max, min) and the
/// momentum between max and base.
#[derive(Debug, Clone, Copy)]
struct Phase {
    end_step: f64,
    start_lr: Level,
    end_lr: Level,
    momentum_falls: bool,
}

/// Which of a group's three rates a phase starts or ends at.
#[derive(Debug, Clone, Copy)]
enum Level {
    Initial,
    Max,
    Min,
}

/// The one-cycle learning-rate (and momentum) policy, stepped per iteration.
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::optim::OneCycleOptions;
/// use anygrad_nn::{LrScheduler, OneCycleLR, Optimizer, Parameter, Sgd, SgdConfig};
/// let p = Parameter::new(Tensor::zeros(&[1], DType::F32, &Device::Cpu)?);
/// let mut optimizer = Sgd::new(vec![("p".into(), p)], SgdConfig::new(0.1).momentum(0.9))?;
/// let mut scheduler = OneCycleLR::new(&mut optimizer, OneCycleOptions::new(1.0, 100))?;
/// assert!((optimizer.learning_rate() - 1.0 / 25.0).abs() < 1e-12);
/// for _ in 0..29 {
///     scheduler.step(&mut optimizer)?;
/// }
/// assert!((optimizer.learning_rate() - 1.0).abs() < 1e-12); // the peak, at step 0.3·100 − 1
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OneCycleLR {
    options: OneCycleOptions,
    /// Per group: (initial, max, min) rates.
    levels: Vec<(f64, f64, f64)>,
    phases: Vec<Phase>,
    epoch: usize,
}

impl OneCycleLR {
    /// Set up the cycle on `optimizer` and set the rates (and momenta) of step 0. Errors like
    /// PyTorch's: no steps, `pct_start` outside `[0, 1]`, a `max_lrs` count that is neither 1
    /// nor the group count, or momentum cycling on an optimizer without momentum (Adagrad;
    /// turn `cycle_momentum` off).
    pub fn new(optimizer: &mut dyn Optimizer, options: OneCycleOptions) -> Result<OneCycleLR> {
        let op = "OneCycleLR::new";
        if options.total_steps == 0 {
            return Err(Error::invalid(op, "total_steps must be at least 1"));
        }
        if !(0.0..=1.0).contains(&options.pct_start) {
            return Err(Error::invalid(
                op,
                format!("pct_start {} must be in [0, 1]", options.pct_start),
            ));
        }
        let groups = optimizer.group_count();
        let max_lrs = match options.max_lrs.len() {
            1 => vec![options.max_lrs[0]; groups],
            n if n == groups => options.max_lrs.clone(),
            n => {
                return Err(Error::invalid(
                    op,
                    format!("{n} max_lrs for an optimizer with {groups} parameter groups"),
                ))
            }
        };
        if let Some(bad) = max_lrs.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err(Error::invalid(
                op,
                format!("max_lr {bad} must be finite and >= 0"),
            ));
        }
        if !(options.div_factor > 0.0 && options.final_div_factor > 0.0) {
            return Err(Error::invalid(
                op,
                format!(
                    "div_factor {} and final_div_factor {} must be > 0",
                    options.div_factor, options.final_div_factor
                ),
            ));
        }
        if options.cycle_momentum {
            for group in 0..groups {
                if optimizer.group_momentum(group)?.is_none() {
                    return Err(Error::invalid(
                        op,
                        "cycle_momentum is on but the optimizer has no momentum (its rule has \
                         neither `momentum` nor `beta1`); set cycle_momentum(false)",
                    ));
                }
            }
        }
        let levels = max_lrs
            .iter()
            .map(|&max| {
                let initial = max / options.div_factor;
                (initial, max, initial / options.final_div_factor)
            })
            .collect();
        let total = options.total_steps as f64;
        let phases = if options.three_phase {
            vec![
                Phase {
                    end_step: options.pct_start * total - 1.0,
                    start_lr: Level::Initial,
                    end_lr: Level::Max,
                    momentum_falls: true,
                },
                Phase {
                    end_step: 2.0 * options.pct_start * total - 2.0,
                    start_lr: Level::Max,
                    end_lr: Level::Initial,
                    momentum_falls: false,
                },
                Phase {
                    end_step: total - 1.0,
                    start_lr: Level::Initial,
                    end_lr: Level::Min,
                    momentum_falls: false,
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: options.pct_start * total - 1.0,
                    start_lr: Level::Initial,
                    end_lr: Level::Max,
                    momentum_falls: true,
                },
                Phase {
                    end_step: total - 1.0,
                    start_lr: Level::Max,
                    end_lr: Level::Min,
                    momentum_falls: false,
                },
            ]
        };
        let schedule = OneCycleLR {
            options,
            levels,
            phases,
            epoch: 0,
        };
        schedule.apply(optimizer, 0)?;
        Ok(schedule)
    }

    /// `(lr, momentum)` of group `group` at step `epoch`.
    fn values_at(&self, group: usize, epoch: usize) -> (f64, f64) {
        let (initial, max, min) = self.levels[group];
        let level = |l: Level| match l {
            Level::Initial => initial,
            Level::Max => max,
            Level::Min => min,
        };
        let (base_m, max_m) = (self.options.base_momentum, self.options.max_momentum);
        let step = epoch as f64;
        let mut start_step = 0.0;
        let last = self.phases.len() - 1;
        for (index, phase) in self.phases.iter().enumerate() {
            if step <= phase.end_step || index == last {
                let span = phase.end_step - start_step;
                let pct = if span == 0.0 {
                    0.0
                } else {
                    (step - start_step) / span
                };
                let strategy = self.options.anneal_strategy;
                let lr = strategy.anneal(level(phase.start_lr), level(phase.end_lr), pct);
                let momentum = if phase.momentum_falls {
                    strategy.anneal(max_m, base_m, pct)
                } else {
                    strategy.anneal(base_m, max_m, pct)
                };
                return (lr, momentum);
            }
            start_step = phase.end_step;
        }
        (min, max_m)
    }

    /// Set every group's rate (and momentum, when cycled) to those of step `epoch`.
    fn apply(&self, optimizer: &mut dyn Optimizer, epoch: usize) -> Result<()> {
        if optimizer.group_count() != self.levels.len() {
            return Err(Error::invalid(
                "OneCycleLR::step",
                format!(
                    "the scheduler was created for {} parameter groups but the optimizer has {}",
                    self.levels.len(),
                    optimizer.group_count()
                ),
            ));
        }
        for group in 0..self.levels.len() {
            let (lr, momentum) = self.values_at(group, epoch);
            optimizer.set_group_learning_rate(group, lr)?;
            if self.options.cycle_momentum {
                optimizer.set_group_momentum(group, momentum)?;
            }
        }
        Ok(())
    }

    /// The momentum of each group at the current step (what `step` set when cycling).
    pub fn last_momentums(&self) -> Vec<f64> {
        (0..self.levels.len())
            .map(|group| self.values_at(group, self.epoch).1)
            .collect()
    }
}

impl LrScheduler for OneCycleLR {
    /// Advance one iteration; stepping past `total_steps` is an error, as in PyTorch.
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        let epoch = self.epoch + 1;
        if epoch > self.options.total_steps {
            return Err(Error::invalid(
                "OneCycleLR::step",
                format!(
                    "stepped {epoch} times but the cycle has {} steps (total_steps, or epochs × \
                     steps_per_epoch)",
                    self.options.total_steps
                ),
            ));
        }
        self.apply(optimizer, epoch)?;
        self.epoch = epoch;
        Ok(())
    }

    fn last_epoch(&self) -> usize {
        self.epoch
    }

    fn set_last_epoch(&mut self, epoch: usize) {
        self.epoch = epoch;
    }

    fn last_lrs(&self) -> Vec<f64> {
        (0..self.levels.len())
            .map(|group| self.values_at(group, self.epoch).0)
            .collect()
    }
}

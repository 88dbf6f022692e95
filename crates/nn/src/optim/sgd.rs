//! Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay,
//! with `torch.optim.SGD`'s exact update:
//!
//! ```text
//! g = grad + weight_decay * p
//! if momentum != 0:
//!     buf = g                                        (first step)
//!     buf = momentum * buf + (1 - dampening) * g     (later steps)
//!     g = g + momentum * buf   if nesterov   else   buf
//! p = p - lr * g
//! ```
//!
//! Each parameter's update is one fused in-place step (`Tensor::sgd_step_`: one GPU kernel
//! writing the parameter and its momentum buffer, where the same rule as separate ops recorded
//! five kernels and a copy), like PyTorch's fused SGD.

use anygrad_core::{Result, SgdStep, Tensor};

use super::group::GroupConfig;
use super::rule::{OperationNames, StateTensor, StateTensors, UpdateRule};
use super::rule_optimizer::RuleOptimizer;
use super::state::StateValues;
use super::{check_non_negative, parse_flag};

/// Hyper-parameters of [`Sgd`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdConfig {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0 disables the buffer).
    pub momentum: f64,
    /// Dampening of the gradient added to the momentum buffer.
    pub dampening: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum (needs momentum > 0 and dampening 0).
    pub nesterov: bool,
}

impl SgdConfig {
    /// Plain SGD with learning rate `lr`.
    pub fn new(lr: f64) -> SgdConfig {
        SgdConfig {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        }
    }

    /// Set momentum (builder style).
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }

    /// Set dampening (builder style).
    pub fn dampening(mut self, dampening: f64) -> Self {
        self.dampening = dampening;
        self
    }

    /// Set weight decay (builder style).
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Enable Nesterov momentum (builder style).
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.nesterov = nesterov;
        self
    }
}

impl SgdConfig {
    /// Check every hyper-parameter like `torch.optim.SGD` does: `lr`, `momentum` and
    /// `weight_decay` finite and `>= 0`, `dampening` finite, and Nesterov only with a momentum
    /// and zero dampening. On failure returns the name of the first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        check_non_negative("momentum", self.momentum)?;
        check_non_negative("weight_decay", self.weight_decay)?;
        if !self.dampening.is_finite() {
            return Err((
                "dampening",
                format!("is {}, must be finite", self.dampening),
            ));
        }
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err((
                "nesterov",
                "requires a momentum and zero dampening".to_string(),
            ));
        }
        Ok(())
    }
}

impl GroupConfig for SgdConfig {
    fn lr(&self) -> f64 {
        self.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    fn momentum(&self) -> Option<f64> {
        Some(self.momentum)
    }

    fn set_momentum(&mut self, momentum: f64) {
        self.momentum = momentum;
    }

    fn check(&self) -> std::result::Result<(), (&'static str, String)> {
        self.validate()
    }

    fn to_scalars(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("lr", self.lr),
            ("momentum", self.momentum),
            ("dampening", self.dampening),
            ("weight_decay", self.weight_decay),
            ("nesterov", if self.nesterov { 1.0 } else { 0.0 }),
        ]
    }

    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        let nesterov = read("nesterov")?;
        Ok(SgdConfig {
            lr: read("lr")?,
            momentum: read("momentum")?,
            dampening: read("dampening")?,
            weight_decay: read("weight_decay")?,
            nesterov: parse_flag("nesterov", nesterov)?,
        })
    }
}

/// SGD, like `torch.optim.SGD`, with parameter groups (`Sgd::with_groups`): a
/// [`RuleOptimizer`] over [`SgdRule`].
pub type Sgd = RuleOptimizer<SgdRule>;

/// SGD's update rule: one momentum buffer per parameter (created at its first update with a
/// momentum, checkpointed as `momentum_buffer`), no step count, and a fused kernel that can
/// skip the step on the device.
#[derive(Debug, Clone, Copy, Default)]
pub struct SgdRule;

impl SgdRule {
    /// The fused step's settings for `config`; `first` on a buffer's first update.
    fn fused_step(config: &SgdConfig, first: bool) -> SgdStep {
        SgdStep {
            lr: config.lr,
            momentum: config.momentum,
            dampening: config.dampening,
            weight_decay: config.weight_decay,
            nesterov: config.nesterov,
            first,
        }
    }

    /// The momentum buffer an update writes: the kept one, or a new one (then `first`) when
    /// the config has a momentum and none exists yet.
    fn buffer(
        parameter: &Tensor,
        config: &SgdConfig,
        buffer: Option<Tensor>,
    ) -> Result<(Option<Tensor>, bool)> {
        match buffer {
            None if config.momentum != 0.0 => Ok((Some(parameter.zeros_like()?), true)),
            buffer => Ok((buffer, false)),
        }
    }
}

impl UpdateRule for SgdRule {
    type Config = SgdConfig;
    /// The momentum buffer, updated in place.
    type State = Tensor;
    const KIND: &'static str = "sgd";
    const OPERATIONS: OperationNames = OperationNames {
        new: "Sgd::new",
        add_param_group: "Sgd::add_param_group",
        step: "Sgd::step",
    };
    const COUNTS_STEPS: bool = false;
    const STATE_TENSORS: &'static [StateTensor] = &[StateTensor {
        name: "momentum_buffer",
        values: StateValues::Finite,
        required: true,
    }];

    fn update(
        parameter: &Tensor,
        gradient: Tensor,
        config: &SgdConfig,
        _step: u64,
        state: Option<Tensor>,
    ) -> Result<Option<Tensor>> {
        // The buffer is updated in place; on the first step it becomes the gradient.
        let (buffer, first) = SgdRule::buffer(parameter, config, state)?;
        let step = SgdRule::fused_step(config, first);
        parameter.sgd_step_(&gradient, buffer.as_ref(), &step)?;
        Ok(buffer)
    }

    /// Every update but a buffer's first: a skipped first step must leave the buffer unset
    /// (as PyTorch does), which only a readback can decide.
    fn skips_on_device(config: &SgdConfig, state: Option<&Tensor>) -> bool {
        config.momentum == 0.0 || state.is_some()
    }

    fn update_unless_found(
        parameter: &Tensor,
        gradient: Tensor,
        config: &SgdConfig,
        state: Option<Tensor>,
        found: &Tensor,
    ) -> Result<Option<Tensor>> {
        let (buffer, first) = SgdRule::buffer(parameter, config, state)?;
        let step = SgdRule::fused_step(config, first);
        parameter.sgd_step_unless_(&gradient, buffer.as_ref(), &step, found)?;
        Ok(buffer)
    }

    fn save(buffer: &Tensor) -> Result<Vec<(&'static str, Tensor)>> {
        // A snapshot: the live buffer changes in place at every step.
        Ok(vec![("momentum_buffer", buffer.copy()?)])
    }

    fn restore(tensors: &mut StateTensors) -> Result<Tensor> {
        tensors.required("momentum_buffer")
    }
}

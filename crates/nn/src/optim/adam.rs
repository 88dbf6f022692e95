//! Adam and AdamW with `torch.optim.Adam`/`AdamW`'s exact updates (per-parameter step
//! counts, bias correction, optional AMSGrad):
//!
//! ```text
//! t = t + 1
//! Adam:  g = grad + weight_decay * p        AdamW:  p = p * (1 - lr * weight_decay); g = grad
//! m = β1 m + (1 - β1) g
//! v = β2 v + (1 - β2) g²
//! v̂ = max(v̂, v) with AMSGrad, else v
//! p = p - (lr / (1 - β1ᵗ)) · m / (√v̂ / √(1 - β2ᵗ) + eps)
//! ```

use anygrad_core::{AdamStep, Result, Tensor};

use super::group::GroupConfig;
use super::rule::{OperationNames, StateTensor, StateTensors, UpdateRule};
use super::rule_optimizer::RuleOptimizer;
use super::state::StateValues;
use super::{check_non_negative, check_unit_interval, parse_flag};
use crate::module::Parameter;

/// Hyper-parameters of [`Adam`] and [`AdamW`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamConfig {
    /// Learning rate (PyTorch's default 1e-3).
    pub lr: f64,
    /// Decay of the first moment (0.9).
    pub beta1: f64,
    /// Decay of the second moment (0.999).
    pub beta2: f64,
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// L2 penalty (Adam) or decoupled decay (AdamW; PyTorch's AdamW default is 1e-2).
    pub weight_decay: f64,
    /// Use the running maximum of the second moment.
    pub amsgrad: bool,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
        }
    }
}

impl AdamConfig {
    /// Defaults with learning rate `lr`.
    pub fn new(lr: f64) -> AdamConfig {
        AdamConfig {
            lr,
            ..Default::default()
        }
    }

    /// Set the betas (builder style).
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.beta1 = beta1;
        self.beta2 = beta2;
        self
    }

    /// Set eps (builder style).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }

    /// Set weight decay (builder style).
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Enable AMSGrad (builder style).
    pub fn amsgrad(mut self, amsgrad: bool) -> Self {
        self.amsgrad = amsgrad;
        self
    }
}

impl AdamConfig {
    /// Check every hyper-parameter like `torch.optim.Adam` does: `lr`, `eps` and
    /// `weight_decay` finite and `>= 0`, both betas in `[0, 1)`. On failure returns the name of
    /// the first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        check_unit_interval("beta1", self.beta1)?;
        check_unit_interval("beta2", self.beta2)?;
        check_non_negative("eps", self.eps)?;
        check_non_negative("weight_decay", self.weight_decay)
    }
}

impl GroupConfig for AdamConfig {
    fn lr(&self) -> f64 {
        self.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    fn momentum(&self) -> Option<f64> {
        Some(self.beta1)
    }

    fn set_momentum(&mut self, momentum: f64) {
        self.beta1 = momentum;
    }

    fn check(&self) -> std::result::Result<(), (&'static str, String)> {
        self.validate()
    }

    fn to_scalars(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("lr", self.lr),
            ("beta1", self.beta1),
            ("beta2", self.beta2),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("amsgrad", if self.amsgrad { 1.0 } else { 0.0 }),
        ]
    }

    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        Ok(AdamConfig {
            lr: read("lr")?,
            beta1: read("beta1")?,
            beta2: read("beta2")?,
            eps: read("eps")?,
            weight_decay: read("weight_decay")?,
            amsgrad: parse_flag("amsgrad", read("amsgrad")?)?,
        })
    }
}

/// Adam, like `torch.optim.Adam` (weight decay is an L2 term added to the gradient): a
/// [`RuleOptimizer`] over [`AdamRule`]. The decoupled variant is [`AdamW`], a separate type.
pub type Adam = RuleOptimizer<AdamRule>;

/// AdamW: Adam with decoupled weight decay (`torch.optim.AdamW`): every step first shrinks
/// the parameter by `lr · weight_decay · p`, then applies the Adam update of the plain
/// gradient. Its checkpoints carry the kind `adamw`, which an [`Adam`] refuses to load (and
/// the other way round). PyTorch's default decay is `AdamConfig::default().weight_decay(1e-2)`;
/// with groups, typically no weight decay on biases and norms (see
/// [`split_no_decay`](super::split_no_decay)).
pub type AdamW = RuleOptimizer<AdamWRule>;

impl Adam {
    /// AdamW (decoupled weight decay) over named parameter slots; the same as `AdamW::new`.
    pub fn adamw(parameters: Vec<(String, Parameter)>, config: AdamConfig) -> Result<AdamW> {
        AdamW::new(parameters, config)
    }
}

/// Per-parameter Adam state (the step count is the optimizer's).
pub struct AdamState {
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    max_exp_avg_sq: Option<Tensor>,
}

/// Adam's checkpointed tensors: the first moment, the second moment and AMSGrad's running
/// maximum of the second moment (only with `amsgrad`).
const ADAM_STATE_TENSORS: &[StateTensor] = &[
    StateTensor {
        name: "exp_avg",
        values: StateValues::Finite,
        required: true,
    },
    StateTensor {
        name: "exp_avg_sq",
        values: StateValues::NonNegative,
        required: true,
    },
    StateTensor {
        name: "max_exp_avg_sq",
        values: StateValues::NonNegative,
        required: false,
    },
];

/// Adam's update rule with an L2 term in the gradient (`decoupled` false) or a decoupled
/// decay of the parameter (true): one fused in-place step of the parameter and its moments
/// (`Tensor::adam_step_`, one GPU kernel per parameter).
fn adam_update(
    decoupled: bool,
    param: &Tensor,
    grad: Tensor,
    c: &AdamConfig,
    step: u64,
    state: Option<AdamState>,
) -> Result<Option<AdamState>> {
    let mut state = match state {
        Some(state) => state,
        None => AdamState {
            exp_avg: param.zeros_like()?,
            exp_avg_sq: param.zeros_like()?,
            max_exp_avg_sq: None,
        },
    };
    if c.amsgrad && state.max_exp_avg_sq.is_none() {
        state.max_exp_avg_sq = Some(param.zeros_like()?);
    }
    let rule = AdamStep {
        lr: c.lr,
        beta1: c.beta1,
        beta2: c.beta2,
        eps: c.eps,
        weight_decay: c.weight_decay,
        decoupled,
        amsgrad: c.amsgrad,
        step,
    };
    param.adam_step_(
        &grad,
        &state.exp_avg,
        &state.exp_avg_sq,
        state.max_exp_avg_sq.as_ref(),
        &rule,
    )?;
    Ok(Some(state))
}

/// The tensors of an Adam state to checkpoint.
fn adam_save(state: &AdamState) -> Vec<(&'static str, Tensor)> {
    let mut tensors = vec![
        ("exp_avg", state.exp_avg.clone()),
        ("exp_avg_sq", state.exp_avg_sq.clone()),
    ];
    if let Some(max) = &state.max_exp_avg_sq {
        tensors.push(("max_exp_avg_sq", max.clone()));
    }
    tensors
}

/// An Adam state from checkpointed tensors.
fn adam_restore(tensors: &mut StateTensors) -> Result<AdamState> {
    Ok(AdamState {
        exp_avg: tensors.required("exp_avg")?,
        exp_avg_sq: tensors.required("exp_avg_sq")?,
        max_exp_avg_sq: tensors.optional("max_exp_avg_sq"),
    })
}

/// Adam's update rule (L2 weight decay), with `torch.optim.Adam`'s per-parameter step
/// counts and bias correction.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdamRule;

impl UpdateRule for AdamRule {
    type Config = AdamConfig;
    type State = AdamState;
    const KIND: &'static str = "adam";
    const OPERATIONS: OperationNames = OperationNames {
        new: "Adam::new",
        add_param_group: "Adam::add_param_group",
        step: "Adam::step",
    };
    const COUNTS_STEPS: bool = true;
    const STATE_TENSORS: &'static [StateTensor] = ADAM_STATE_TENSORS;

    fn update(
        parameter: &Tensor,
        gradient: Tensor,
        config: &AdamConfig,
        step: u64,
        state: Option<AdamState>,
    ) -> Result<Option<AdamState>> {
        adam_update(false, parameter, gradient, config, step, state)
    }

    fn save(state: &AdamState) -> Result<Vec<(&'static str, Tensor)>> {
        Ok(adam_save(state))
    }

    fn restore(tensors: &mut StateTensors) -> Result<AdamState> {
        adam_restore(tensors)
    }
}

/// AdamW's update rule: Adam's with decoupled weight decay; its checkpoints carry the kind
/// `adamw`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdamWRule;

impl UpdateRule for AdamWRule {
    type Config = AdamConfig;
    type State = AdamState;
    const KIND: &'static str = "adamw";
    const OPERATIONS: OperationNames = OperationNames {
        new: "AdamW::new",
        add_param_group: "AdamW::add_param_group",
        step: "AdamW::step",
    };
    const COUNTS_STEPS: bool = true;
    const STATE_TENSORS: &'static [StateTensor] = ADAM_STATE_TENSORS;

    fn update(
        parameter: &Tensor,
        gradient: Tensor,
        config: &AdamConfig,
        step: u64,
        state: Option<AdamState>,
    ) -> Result<Option<AdamState>> {
        adam_update(true, parameter, gradient, config, step, state)
    }

    fn save(state: &AdamState) -> Result<Vec<(&'static str, Tensor)>> {
        Ok(adam_save(state))
    }

    fn restore(tensors: &mut StateTensors) -> Result<AdamState> {
        adam_restore(tensors)
    }
}

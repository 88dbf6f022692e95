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

use anygrad_core::{no_grad, Error, Result, Tensor};

use super::group::{GroupConfig, Groups, ParamGroup};
use super::{
    adopt_non_negative_state_tensor, adopt_state_tensor, check_expected_entries,
    check_known_parameters, check_non_negative, check_unit_interval, kind_mismatch, parse_flag,
    selected_parameters, Optimizer, OptimizerState,
};
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

/// Per-parameter Adam state.
#[derive(Clone)]
struct AdamState {
    step: u64,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    max_exp_avg_sq: Option<Tensor>,
}

/// Adam, like `torch.optim.Adam` (weight decay is an L2 term added to the gradient). The
/// decoupled variant is [`AdamW`], a separate type.
pub struct Adam {
    groups: Groups<AdamConfig>,
    decoupled: bool,
    states: Vec<Option<AdamState>>,
}

/// AdamW: Adam with decoupled weight decay (`torch.optim.AdamW`): every step first shrinks
/// the parameter by `lr · weight_decay · p`, then applies the Adam update of the plain
/// gradient. Its checkpoints carry the kind `adamw`, which an [`Adam`] refuses to load (and
/// the other way round).
pub struct AdamW(Adam);

impl AdamW {
    /// AdamW over named parameter slots (`module.named_parameter_slots()`); PyTorch's default
    /// decay is `AdamConfig::default().weight_decay(1e-2)`.
    pub fn new(parameters: Vec<(String, Parameter)>, config: AdamConfig) -> Result<AdamW> {
        AdamW::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// AdamW over several parameter groups, each with its own hyper-parameters (typically
    /// no weight decay on biases and norms: see [`super::split_no_decay`]).
    pub fn with_groups(groups: Vec<ParamGroup<AdamConfig>>) -> Result<AdamW> {
        Adam::build(groups, true).map(AdamW)
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &AdamConfig {
        self.0.config()
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[AdamConfig] {
        self.0.configs()
    }

    /// Append a parameter group (see [`Adam::add_param_group`]).
    pub fn add_param_group(&mut self, group: ParamGroup<AdamConfig>) -> Result<()> {
        self.0.add_param_group(group)
    }

    /// The step count of parameter `name` (0 before its first update).
    pub fn step_count(&self, name: &str) -> u64 {
        self.0.step_count(name)
    }
}

impl Optimizer for AdamW {
    fn step(&mut self) -> Result<()> {
        self.0.step()
    }

    fn supports_partial_step(&self) -> bool {
        self.0.supports_partial_step()
    }

    fn step_parameters(&mut self, indices: &[usize]) -> Result<()> {
        self.0.step_parameters(indices)
    }

    fn parameters(&self) -> &[(String, Parameter)] {
        self.0.parameters()
    }

    fn learning_rate(&self) -> f64 {
        self.0.learning_rate()
    }

    fn set_learning_rate(&mut self, learning_rate: f64) {
        self.0.set_learning_rate(learning_rate)
    }

    fn group_count(&self) -> usize {
        self.0.group_count()
    }

    fn group_learning_rate(&self, group: usize) -> Result<f64> {
        self.0.group_learning_rate(group)
    }

    fn set_group_learning_rate(&mut self, group: usize, learning_rate: f64) -> Result<()> {
        self.0.set_group_learning_rate(group, learning_rate)
    }

    fn group_momentum(&self, group: usize) -> Result<Option<f64>> {
        self.0.group_momentum(group)
    }

    fn set_group_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        self.0.set_group_momentum(group, momentum)
    }

    fn state_dict(&self) -> Result<OptimizerState> {
        self.0.state_dict()
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        self.0.load_state_dict(state)
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

impl Adam {
    fn build(groups: Vec<ParamGroup<AdamConfig>>, decoupled: bool) -> Result<Adam> {
        let groups = Groups::new(if decoupled { "AdamW::new" } else { "Adam::new" }, groups)?;
        let count = groups.parameters.len();
        Ok(Adam {
            groups,
            decoupled,
            states: vec![None; count],
        })
    }

    /// Adam over named parameter slots (`module.named_parameter_slots()`), one group.
    pub fn new(parameters: Vec<(String, Parameter)>, config: AdamConfig) -> Result<Adam> {
        Adam::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// Adam over several parameter groups, each with its own hyper-parameters (PyTorch's
    /// `Adam([{"params": ..., "lr": ...}, ...])`).
    pub fn with_groups(groups: Vec<ParamGroup<AdamConfig>>) -> Result<Adam> {
        Adam::build(groups, false)
    }

    /// AdamW (decoupled weight decay) over named parameter slots; the same as
    /// [`AdamW::new`].
    pub fn adamw(parameters: Vec<(String, Parameter)>, config: AdamConfig) -> Result<AdamW> {
        AdamW::new(parameters, config)
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &AdamConfig {
        &self.groups.configs[0]
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[AdamConfig] {
        &self.groups.configs
    }

    /// Append a parameter group (PyTorch's `add_param_group`, e.g. to fine-tune layers
    /// unfrozen mid-training). Schedulers created before it refuse the optimizer: create them
    /// after adding groups.
    pub fn add_param_group(&mut self, group: ParamGroup<AdamConfig>) -> Result<()> {
        let op = if self.decoupled {
            "AdamW::add_param_group"
        } else {
            "Adam::add_param_group"
        };
        let added = self.groups.add(op, group)?;
        self.states.extend(std::iter::repeat_n(None, added));
        Ok(())
    }

    /// The step count of parameter `name` (0 before its first update).
    pub fn step_count(&self, name: &str) -> u64 {
        self.groups
            .parameters
            .iter()
            .position(|(n, _)| n == name)
            .and_then(|i| self.states[i].as_ref())
            .map_or(0, |s| s.step)
    }

    fn kind(&self) -> &'static str {
        if self.decoupled {
            "adamw"
        } else {
            "adam"
        }
    }
}

impl Adam {
    /// One step over every parameter (`None`) or those at the given positions.
    fn step_selected(&mut self, indices: Option<&[usize]>) -> Result<()> {
        let _guard = no_grad();
        let selected = selected_parameters("Adam::step", self.groups.parameters.len(), indices)?;
        let groups = &self.groups;
        for ((((_, parameter), slot), &group), &selected) in groups
            .parameters
            .iter()
            .zip(self.states.iter_mut())
            .zip(&groups.group_of)
            .zip(&selected)
        {
            if !selected {
                continue;
            }
            let c = groups.configs[group];
            let param = parameter.tensor();
            let Some(grad) = param.grad() else { continue };
            let state = match slot.take() {
                Some(state) => state,
                None => AdamState {
                    step: 0,
                    exp_avg: param.zeros_like()?,
                    exp_avg_sq: param.zeros_like()?,
                    max_exp_avg_sq: if c.amsgrad {
                        Some(param.zeros_like()?)
                    } else {
                        None
                    },
                },
            };
            let step = state
                .step
                .checked_add(1)
                .ok_or_else(|| Error::invalid("Adam::step", "the step count overflowed a u64"))?;
            let mut current = param.clone();
            let g = if c.weight_decay == 0.0 {
                grad
            } else if self.decoupled {
                current = param.mul_scalar(1.0 - c.lr * c.weight_decay)?;
                grad
            } else {
                grad.add(&param.mul_scalar(c.weight_decay)?)?
            };
            let exp_avg = state
                .exp_avg
                .mul_scalar(c.beta1)?
                .add(&g.mul_scalar(1.0 - c.beta1)?)?;
            let exp_avg_sq = state
                .exp_avg_sq
                .mul_scalar(c.beta2)?
                .add(&g.square()?.mul_scalar(1.0 - c.beta2)?)?;
            let max_exp_avg_sq = match state.max_exp_avg_sq {
                Some(previous) => Some(previous.maximum(&exp_avg_sq)?),
                None if c.amsgrad => Some(exp_avg_sq.clone()),
                None => None,
            };
            let bias_correction1 = 1.0 - c.beta1.powf(step as f64);
            let bias_correction2 = 1.0 - c.beta2.powf(step as f64);
            let second = max_exp_avg_sq.as_ref().unwrap_or(&exp_avg_sq);
            let denom = second
                .sqrt()?
                .div_scalar(bias_correction2.sqrt())?
                .add_scalar(c.eps)?;
            let update = exp_avg.div(&denom)?.mul_scalar(c.lr / bias_correction1)?;
            param.assign(&current.sub(&update)?)?;
            *slot = Some(AdamState {
                step,
                exp_avg,
                exp_avg_sq,
                max_exp_avg_sq,
            });
        }
        Ok(())
    }
}

impl Optimizer for Adam {
    fn step(&mut self) -> Result<()> {
        self.step_selected(None)
    }

    fn supports_partial_step(&self) -> bool {
        true
    }

    fn step_parameters(&mut self, indices: &[usize]) -> Result<()> {
        self.step_selected(Some(indices))
    }

    fn parameters(&self) -> &[(String, Parameter)] {
        &self.groups.parameters
    }

    fn learning_rate(&self) -> f64 {
        self.groups.learning_rate()
    }

    fn set_learning_rate(&mut self, learning_rate: f64) {
        self.groups.set_learning_rate(learning_rate);
    }

    fn group_count(&self) -> usize {
        self.groups.configs.len()
    }

    fn group_learning_rate(&self, group: usize) -> Result<f64> {
        self.groups.group_learning_rate(group)
    }

    fn set_group_learning_rate(&mut self, group: usize, learning_rate: f64) -> Result<()> {
        self.groups.set_group_learning_rate(group, learning_rate)
    }

    fn group_momentum(&self, group: usize) -> Result<Option<f64>> {
        self.groups.group_momentum(group)
    }

    fn set_group_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        self.groups.set_group_momentum(group, momentum)
    }

    fn state_dict(&self) -> Result<OptimizerState> {
        let mut state = OptimizerState {
            kind: self.kind().into(),
            ..Default::default()
        };
        self.groups.save_configs(&mut state);
        for ((name, _), slot) in self.groups.parameters.iter().zip(&self.states) {
            if let Some(s) = slot {
                state
                    .scalars
                    .insert(format!("state.{name}.step"), s.step as f64);
                state
                    .tensors
                    .insert(format!("state.{name}.exp_avg"), s.exp_avg.clone());
                state
                    .tensors
                    .insert(format!("state.{name}.exp_avg_sq"), s.exp_avg_sq.clone());
                if let Some(max) = &s.max_exp_avg_sq {
                    state
                        .tensors
                        .insert(format!("state.{name}.max_exp_avg_sq"), max.clone());
                }
            }
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != self.kind() {
            return Err(kind_mismatch(self.kind(), &state.kind));
        }
        check_known_parameters(state, &self.groups.parameters)?;
        let configs = self.groups.load_configs(state)?;
        let mut expected = Groups::config_keys(&configs);
        let mut states = Vec::with_capacity(self.groups.parameters.len());
        for (name, parameter) in &self.groups.parameters {
            let step_key = format!("state.{name}.step");
            let Some(step) = state.step_count(&step_key)? else {
                states.push(None);
                continue;
            };
            let exp_avg_key = format!("state.{name}.exp_avg");
            let exp_avg_sq_key = format!("state.{name}.exp_avg_sq");
            let max_key = format!("state.{name}.max_exp_avg_sq");
            let max_exp_avg_sq = if state.tensors.contains_key(&max_key) {
                Some(adopt_non_negative_state_tensor(state, &max_key, parameter)?)
            } else {
                None
            };
            states.push(Some(AdamState {
                step,
                exp_avg: adopt_state_tensor(state, &exp_avg_key, parameter)?,
                exp_avg_sq: adopt_non_negative_state_tensor(state, &exp_avg_sq_key, parameter)?,
                max_exp_avg_sq,
            }));
            expected.extend([step_key, exp_avg_key, exp_avg_sq_key, max_key]);
        }
        check_expected_entries(state, &expected)?;
        self.groups.configs = configs;
        self.states = states;
        Ok(())
    }
}

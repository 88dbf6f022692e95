//! RMSprop with `torch.optim.RMSprop`'s exact update and defaults (lr 1e-2, alpha 0.99,
//! eps 1e-8, no weight decay, no momentum, not centered):
//!
//! ```text
//! g = grad + weight_decay * p
//! v = alpha * v + (1 - alpha) * g²
//! centered:  m = alpha * m + (1 - alpha) * g;  avg = √(v - m²) + eps
//! else:      avg = √v + eps
//! momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
//! else:          p = p - lr * g / avg
//! ```
//!
//! Its state per parameter (`step`, `square_avg`, `momentum_buffer`, `grad_avg`) is
//! checkpointed like the other optimizers'.

use anygrad_core::{no_grad, Error, Result, Tensor};

use super::group::{GroupConfig, Groups, ParamGroup};
use super::{
    adopt_non_negative_state_tensor, adopt_state_tensor, check_expected_entries,
    check_known_parameters, check_non_negative, kind_mismatch, parse_flag, selected_parameters,
    Optimizer, OptimizerState,
};
use crate::module::Parameter;

/// Hyper-parameters of [`RMSprop`] (PyTorch's defaults from [`RMSpropConfig::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RMSpropConfig {
    /// Learning rate (1e-2).
    pub lr: f64,
    /// Smoothing constant of the squared-gradient average (0.99).
    pub alpha: f64,
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Momentum factor (0: no buffer).
    pub momentum: f64,
    /// Normalize by the gradient's estimated variance instead of its second moment.
    pub centered: bool,
}

impl Default for RMSpropConfig {
    fn default() -> Self {
        RMSpropConfig {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
        }
    }
}

impl RMSpropConfig {
    /// Defaults with learning rate `lr`.
    pub fn new(lr: f64) -> RMSpropConfig {
        RMSpropConfig {
            lr,
            ..Default::default()
        }
    }

    /// Set alpha (builder style).
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
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

    /// Set momentum (builder style).
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }

    /// Use the centered variant (builder style).
    pub fn centered(mut self, centered: bool) -> Self {
        self.centered = centered;
        self
    }

    /// Check every hyper-parameter like `torch.optim.RMSprop` does: `lr`, `alpha`, `eps`,
    /// `weight_decay` and `momentum` finite and `>= 0`. On failure returns the name of the
    /// first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        check_non_negative("alpha", self.alpha)?;
        check_non_negative("eps", self.eps)?;
        check_non_negative("weight_decay", self.weight_decay)?;
        check_non_negative("momentum", self.momentum)
    }
}

impl GroupConfig for RMSpropConfig {
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
            ("alpha", self.alpha),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("momentum", self.momentum),
            ("centered", if self.centered { 1.0 } else { 0.0 }),
        ]
    }

    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        Ok(RMSpropConfig {
            lr: read("lr")?,
            alpha: read("alpha")?,
            eps: read("eps")?,
            weight_decay: read("weight_decay")?,
            momentum: read("momentum")?,
            centered: parse_flag("centered", read("centered")?)?,
        })
    }
}

/// Per-parameter RMSprop state.
#[derive(Clone)]
struct RMSpropState {
    step: u64,
    square_avg: Tensor,
    momentum_buffer: Option<Tensor>,
    grad_avg: Option<Tensor>,
}

/// RMSprop, like `torch.optim.RMSprop`, with parameter groups.
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{Optimizer, Parameter, RMSprop, RMSpropConfig};
/// let p = Parameter::new(Tensor::ones(&[2], DType::F32, &Device::Cpu)?);
/// let mut optimizer = RMSprop::new(vec![("p".into(), p.clone())], RMSpropConfig::new(0.01))?;
/// p.tensor().square()?.sum_all()?.backward()?;
/// optimizer.step()?;
/// // First step: v = 0.01 g², so the step is lr · g / (0.1 |g|) = 0.1.
/// assert!((p.tensor().to_vec::<f32>()?[0] - 0.9).abs() < 1e-5);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct RMSprop {
    groups: Groups<RMSpropConfig>,
    states: Vec<Option<RMSpropState>>,
}

impl RMSprop {
    /// RMSprop over named parameter slots (`module.named_parameter_slots()`), one group.
    pub fn new(parameters: Vec<(String, Parameter)>, config: RMSpropConfig) -> Result<RMSprop> {
        RMSprop::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// RMSprop over several parameter groups, each with its own hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<RMSpropConfig>>) -> Result<RMSprop> {
        let groups = Groups::new("RMSprop::new", groups)?;
        let count = groups.parameters.len();
        Ok(RMSprop {
            groups,
            states: vec![None; count],
        })
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &RMSpropConfig {
        &self.groups.configs[0]
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[RMSpropConfig] {
        &self.groups.configs
    }

    /// Append a parameter group (PyTorch's `add_param_group`, e.g. to fine-tune layers
    /// unfrozen mid-training). Schedulers created before it refuse the optimizer: create them
    /// after adding groups.
    pub fn add_param_group(&mut self, group: ParamGroup<RMSpropConfig>) -> Result<()> {
        let added = self.groups.add("RMSprop::add_param_group", group)?;
        self.states.extend(std::iter::repeat_n(None, added));
        Ok(())
    }
}

impl RMSprop {
    /// One step over every parameter (`None`) or those at the given positions.
    fn step_selected(&mut self, indices: Option<&[usize]>) -> Result<()> {
        let _guard = no_grad();
        let selected = selected_parameters("RMSprop::step", self.groups.parameters.len(), indices)?;
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
                None => RMSpropState {
                    step: 0,
                    square_avg: param.zeros_like()?,
                    momentum_buffer: None,
                    grad_avg: None,
                },
            };
            let step = state.step.checked_add(1).ok_or_else(|| {
                Error::invalid("RMSprop::step", "the step count overflowed a u64")
            })?;
            let g = if c.weight_decay != 0.0 {
                grad.add(&param.mul_scalar(c.weight_decay)?)?
            } else {
                grad
            };
            let square_avg = state
                .square_avg
                .mul_scalar(c.alpha)?
                .add(&g.square()?.mul_scalar(1.0 - c.alpha)?)?;
            let (avg, grad_avg) = if c.centered {
                let previous = match state.grad_avg {
                    Some(previous) => previous,
                    None => param.zeros_like()?,
                };
                let grad_avg = previous
                    .mul_scalar(c.alpha)?
                    .add(&g.mul_scalar(1.0 - c.alpha)?)?;
                let variance = square_avg.sub(&grad_avg.square()?)?;
                (variance.sqrt()?.add_scalar(c.eps)?, Some(grad_avg))
            } else {
                (square_avg.sqrt()?.add_scalar(c.eps)?, state.grad_avg)
            };
            let normalized = g.div(&avg)?;
            let (update, momentum_buffer) = if c.momentum > 0.0 {
                let buffer = match state.momentum_buffer {
                    Some(previous) => previous.mul_scalar(c.momentum)?.add(&normalized)?,
                    None => normalized,
                };
                (buffer.clone(), Some(buffer))
            } else {
                (normalized, state.momentum_buffer)
            };
            param.assign(&param.sub(&update.mul_scalar(c.lr)?)?)?;
            *slot = Some(RMSpropState {
                step,
                square_avg,
                momentum_buffer,
                grad_avg,
            });
        }
        Ok(())
    }
}

impl Optimizer for RMSprop {
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
            kind: "rmsprop".into(),
            ..Default::default()
        };
        self.groups.save_configs(&mut state);
        for ((name, _), slot) in self.groups.parameters.iter().zip(&self.states) {
            let Some(s) = slot else { continue };
            state
                .scalars
                .insert(format!("state.{name}.step"), s.step as f64);
            state
                .tensors
                .insert(format!("state.{name}.square_avg"), s.square_avg.clone());
            if let Some(buffer) = &s.momentum_buffer {
                state
                    .tensors
                    .insert(format!("state.{name}.momentum_buffer"), buffer.clone());
            }
            if let Some(grad_avg) = &s.grad_avg {
                state
                    .tensors
                    .insert(format!("state.{name}.grad_avg"), grad_avg.clone());
            }
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != "rmsprop" {
            return Err(kind_mismatch("rmsprop", &state.kind));
        }
        check_known_parameters(state, &self.groups.parameters)?;
        let configs = self.groups.load_configs(state)?;
        let mut expected = Groups::config_keys(&configs);
        let optional = |key: &str, parameter: &Parameter| -> Result<Option<Tensor>> {
            if state.tensors.contains_key(key) {
                adopt_state_tensor(state, key, parameter).map(Some)
            } else {
                Ok(None)
            }
        };
        let mut states = Vec::with_capacity(self.groups.parameters.len());
        for (name, parameter) in &self.groups.parameters {
            let step_key = format!("state.{name}.step");
            let Some(step) = state.step_count(&step_key)? else {
                states.push(None);
                continue;
            };
            let square_avg_key = format!("state.{name}.square_avg");
            let momentum_key = format!("state.{name}.momentum_buffer");
            let grad_avg_key = format!("state.{name}.grad_avg");
            states.push(Some(RMSpropState {
                step,
                square_avg: adopt_non_negative_state_tensor(state, &square_avg_key, parameter)?,
                momentum_buffer: optional(&momentum_key, parameter)?,
                grad_avg: optional(&grad_avg_key, parameter)?,
            }));
            expected.extend([step_key, square_avg_key, momentum_key, grad_avg_key]);
        }
        check_expected_entries(state, &expected)?;
        self.groups.configs = configs;
        self.states = states;
        Ok(())
    }
}

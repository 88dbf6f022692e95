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

use anygrad_core::{no_grad, Result, SgdStep, Tensor};

use super::group::{GroupConfig, Groups, ParamGroup};
use super::{
    adopt_state_tensor, check_expected_entries, check_known_parameters, check_non_negative,
    kind_mismatch, parse_flag, selected_parameters, Optimizer, OptimizerState,
};
use crate::module::Parameter;

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

/// SGD, like `torch.optim.SGD`, with parameter groups ([`Sgd::with_groups`]).
pub struct Sgd {
    groups: Groups<SgdConfig>,
    /// One momentum buffer per parameter, created at its first update.
    momentum_buffers: Vec<Option<Tensor>>,
}

impl Sgd {
    /// An optimizer over named parameter slots (`module.named_parameter_slots()`), one group.
    pub fn new(parameters: Vec<(String, Parameter)>, config: SgdConfig) -> Result<Sgd> {
        Sgd::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// An optimizer over several parameter groups, each with its own hyper-parameters
    /// (PyTorch's `SGD([{"params": ..., "lr": ...}, ...])`).
    pub fn with_groups(groups: Vec<ParamGroup<SgdConfig>>) -> Result<Sgd> {
        let groups = Groups::new("Sgd::new", groups)?;
        let count = groups.parameters.len();
        Ok(Sgd {
            groups,
            momentum_buffers: vec![None; count],
        })
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &SgdConfig {
        &self.groups.configs[0]
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[SgdConfig] {
        &self.groups.configs
    }

    /// Append a parameter group (PyTorch's `add_param_group`, e.g. to fine-tune layers
    /// unfrozen mid-training). Schedulers created before it refuse the optimizer: create them
    /// after adding groups.
    pub fn add_param_group(&mut self, group: ParamGroup<SgdConfig>) -> Result<()> {
        let added = self.groups.add("Sgd::add_param_group", group)?;
        self.momentum_buffers
            .extend(std::iter::repeat_n(None, added));
        Ok(())
    }
}

impl Sgd {
    /// One step over every parameter (`None`) or those at the given positions, skipped on the
    /// device where `found` (a U32 `[1]` flag on the parameters' device) is nonzero.
    fn step_selected(&mut self, indices: Option<&[usize]>, found: Option<&Tensor>) -> Result<()> {
        let _guard = no_grad();
        let selected = selected_parameters("Sgd::step", self.groups.parameters.len(), indices)?;
        let groups = &self.groups;
        for ((((_, parameter), buffer), &group), &selected) in groups
            .parameters
            .iter()
            .zip(self.momentum_buffers.iter_mut())
            .zip(&groups.group_of)
            .zip(&selected)
        {
            if !selected {
                continue;
            }
            let c = groups.configs[group];
            let param = parameter.tensor();
            let Some(grad) = param.grad() else { continue };
            // The buffer is updated in place; on the first step it becomes the gradient.
            let first = c.momentum != 0.0 && buffer.is_none();
            if first {
                *buffer = Some(param.zeros_like()?);
            }
            let step = SgdStep {
                lr: c.lr,
                momentum: c.momentum,
                dampening: c.dampening,
                weight_decay: c.weight_decay,
                nesterov: c.nesterov,
                first,
            };
            match found {
                Some(found) => param.sgd_step_unless_(&grad, buffer.as_ref(), &step, found)?,
                None => param.sgd_step_(&grad, buffer.as_ref(), &step)?,
            }
        }
        Ok(())
    }
}

impl Optimizer for Sgd {
    fn step(&mut self) -> Result<()> {
        self.step_selected(None, None)
    }

    /// On one device, the fused kernels read the flag there: no readback. A first step with
    /// momentum reads it back (a skipped first step must leave the buffers unset, as PyTorch
    /// does), and so do flags of several devices (a skip on one must skip all).
    fn step_unless_found(&mut self, found: &[Tensor]) -> Result<()> {
        let first_momentum = self
            .groups
            .parameters
            .iter()
            .zip(&self.momentum_buffers)
            .zip(&self.groups.group_of)
            .any(|(((_, parameter), buffer), &group)| {
                self.groups.configs[group].momentum != 0.0
                    && buffer.is_none()
                    && parameter.tensor().grad().is_some()
            });
        match found {
            [flag] if !first_momentum => self.step_selected(None, Some(flag)),
            _ => super::step_after_readback(self, found),
        }
    }

    fn supports_partial_step(&self) -> bool {
        true
    }

    fn step_parameters(&mut self, indices: &[usize]) -> Result<()> {
        self.step_selected(Some(indices), None)
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
            kind: "sgd".into(),
            ..Default::default()
        };
        self.groups.save_configs(&mut state);
        for ((name, _), buffer) in self.groups.parameters.iter().zip(&self.momentum_buffers) {
            if let Some(buffer) = buffer {
                // A snapshot: the live buffer changes in place at every step.
                state
                    .tensors
                    .insert(format!("state.{name}.momentum_buffer"), buffer.copy()?);
            }
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != "sgd" {
            return Err(kind_mismatch("sgd", &state.kind));
        }
        check_known_parameters(state, &self.groups.parameters)?;
        let configs = self.groups.load_configs(state)?;
        let mut expected = Groups::config_keys(&configs);
        let mut buffers = Vec::with_capacity(self.groups.parameters.len());
        for (name, parameter) in &self.groups.parameters {
            let key = format!("state.{name}.momentum_buffer");
            buffers.push(if state.tensors.contains_key(&key) {
                Some(adopt_state_tensor(state, &key, parameter)?)
            } else {
                None
            });
            expected.insert(key);
        }
        check_expected_entries(state, &expected)?;
        self.groups.configs = configs;
        self.momentum_buffers = buffers;
        Ok(())
    }
}

//! Adadelta with `torch.optim.Adadelta`'s exact update and defaults (lr 1.0, rho 0.9,
//! eps 1e-6, no weight decay):
//!
//! ```text
//! g = grad + weight_decay * p
//! v = rho * v + (1 - rho) * g²                      (square_avg)
//! delta = √(u + eps) / √(v + eps) * g
//! u = rho * u + (1 - rho) * delta²                  (acc_delta)
//! p = p - lr * delta
//! ```
//!
//! Its state per parameter (`step`, `square_avg`, `acc_delta`) is checkpointed like the other
//! optimizers'.

use anygrad_core::{no_grad, Error, Result, Tensor};

use super::group::{GroupConfig, Groups, ParamGroup};
use super::{
    adopt_non_negative_state_tensor, check_expected_entries, check_known_parameters,
    check_non_negative, kind_mismatch, selected_parameters, Optimizer, OptimizerState,
};
use crate::module::Parameter;

/// Hyper-parameters of [`Adadelta`] (PyTorch's defaults from [`AdadeltaConfig::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdadeltaConfig {
    /// Scale of the computed delta (1.0).
    pub lr: f64,
    /// Decay of both running averages, of squared gradients and of squared deltas (0.9).
    pub rho: f64,
    /// Added inside both square roots (1e-6).
    pub eps: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
}

impl Default for AdadeltaConfig {
    fn default() -> Self {
        AdadeltaConfig {
            lr: 1.0,
            rho: 0.9,
            eps: 1e-6,
            weight_decay: 0.0,
        }
    }
}

impl AdadeltaConfig {
    /// Defaults with learning rate `lr` (PyTorch's MNIST example uses `lr=1.0`, the default).
    pub fn new(lr: f64) -> AdadeltaConfig {
        AdadeltaConfig {
            lr,
            ..Default::default()
        }
    }

    /// Set rho (builder style).
    pub fn rho(mut self, rho: f64) -> Self {
        self.rho = rho;
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

    /// Check every hyper-parameter like `torch.optim.Adadelta` does: `lr`, `eps` and
    /// `weight_decay` finite and `>= 0`, `rho` in `[0, 1]`. On failure returns the name of the
    /// first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        if !(0.0..=1.0).contains(&self.rho) {
            return Err(("rho", format!("is {}, must be in [0, 1]", self.rho)));
        }
        check_non_negative("eps", self.eps)?;
        check_non_negative("weight_decay", self.weight_decay)
    }
}

impl GroupConfig for AdadeltaConfig {
    fn lr(&self) -> f64 {
        self.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    fn momentum(&self) -> Option<f64> {
        None
    }

    fn set_momentum(&mut self, _momentum: f64) {}

    fn check(&self) -> std::result::Result<(), (&'static str, String)> {
        self.validate()
    }

    fn to_scalars(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("lr", self.lr),
            ("rho", self.rho),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
        ]
    }

    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        Ok(AdadeltaConfig {
            lr: read("lr")?,
            rho: read("rho")?,
            eps: read("eps")?,
            weight_decay: read("weight_decay")?,
        })
    }
}

/// Per-parameter Adadelta state.
#[derive(Clone)]
struct AdadeltaState {
    step: u64,
    square_avg: Tensor,
    acc_delta: Tensor,
}

/// Adadelta, like `torch.optim.Adadelta`, with parameter groups.
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::optim::{Adadelta, AdadeltaConfig};
/// use anygrad_nn::{Optimizer, Parameter};
/// let p = Parameter::new(Tensor::ones(&[2], DType::F32, &Device::Cpu)?);
/// let mut optimizer = Adadelta::new(vec![("p".into(), p.clone())], AdadeltaConfig::default())?;
/// p.tensor().square()?.sum_all()?.backward()?;
/// optimizer.step()?;
/// // First step: g = 2, v = 0.4, delta = √1e-6 / √(0.4 + 1e-6) · 2 ≈ 0.00316.
/// assert!((p.tensor().to_vec::<f32>()?[0] - (1.0 - 0.003_162)).abs() < 1e-5);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct Adadelta {
    groups: Groups<AdadeltaConfig>,
    states: Vec<Option<AdadeltaState>>,
}

impl Adadelta {
    /// Adadelta over named parameter slots (`module.named_parameter_slots()`), one group.
    pub fn new(parameters: Vec<(String, Parameter)>, config: AdadeltaConfig) -> Result<Adadelta> {
        Adadelta::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// Adadelta over several parameter groups, each with its own hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<AdadeltaConfig>>) -> Result<Adadelta> {
        let groups = Groups::new("Adadelta::new", groups)?;
        let count = groups.parameters.len();
        Ok(Adadelta {
            groups,
            states: vec![None; count],
        })
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &AdadeltaConfig {
        &self.groups.configs[0]
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[AdadeltaConfig] {
        &self.groups.configs
    }

    /// Append a parameter group (PyTorch's `add_param_group`). Schedulers created before it
    /// refuse the optimizer: create them after adding groups.
    pub fn add_param_group(&mut self, group: ParamGroup<AdadeltaConfig>) -> Result<()> {
        let added = self.groups.add("Adadelta::add_param_group", group)?;
        self.states.extend(std::iter::repeat_n(None, added));
        Ok(())
    }

    /// One step over every parameter (`None`) or those at the given positions.
    fn step_selected(&mut self, indices: Option<&[usize]>) -> Result<()> {
        let _guard = no_grad();
        let selected =
            selected_parameters("Adadelta::step", self.groups.parameters.len(), indices)?;
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
                None => AdadeltaState {
                    step: 0,
                    square_avg: param.zeros_like()?,
                    acc_delta: param.zeros_like()?,
                },
            };
            let step = state.step.checked_add(1).ok_or_else(|| {
                Error::invalid("Adadelta::step", "the step count overflowed a u64")
            })?;
            let g = if c.weight_decay != 0.0 {
                grad.add(&param.mul_scalar(c.weight_decay)?)?
            } else {
                grad
            };
            let square_avg = state
                .square_avg
                .mul_scalar(c.rho)?
                .add(&g.square()?.mul_scalar(1.0 - c.rho)?)?;
            let std = square_avg.add_scalar(c.eps)?.sqrt()?;
            let delta = state
                .acc_delta
                .add_scalar(c.eps)?
                .sqrt()?
                .div(&std)?
                .mul(&g)?;
            let acc_delta = state
                .acc_delta
                .mul_scalar(c.rho)?
                .add(&delta.square()?.mul_scalar(1.0 - c.rho)?)?;
            param.assign(&param.sub(&delta.mul_scalar(c.lr)?)?)?;
            *slot = Some(AdadeltaState {
                step,
                square_avg,
                acc_delta,
            });
        }
        Ok(())
    }
}

impl Optimizer for Adadelta {
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

    fn state_dict(&self) -> Result<OptimizerState> {
        let mut state = OptimizerState {
            kind: "adadelta".into(),
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
            state
                .tensors
                .insert(format!("state.{name}.acc_delta"), s.acc_delta.clone());
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != "adadelta" {
            return Err(kind_mismatch("adadelta", &state.kind));
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
            let square_avg_key = format!("state.{name}.square_avg");
            let acc_delta_key = format!("state.{name}.acc_delta");
            states.push(Some(AdadeltaState {
                step,
                square_avg: adopt_non_negative_state_tensor(state, &square_avg_key, parameter)?,
                acc_delta: adopt_non_negative_state_tensor(state, &acc_delta_key, parameter)?,
            }));
            expected.extend([step_key, square_avg_key, acc_delta_key]);
        }
        check_expected_entries(state, &expected)?;
        self.groups.configs = configs;
        self.states = states;
        Ok(())
    }
}

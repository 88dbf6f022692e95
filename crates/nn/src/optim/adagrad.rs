//! Adagrad with `torch.optim.Adagrad`'s exact update and defaults (lr 1e-2, no learning-rate
//! decay, no weight decay, initial accumulator 0, eps 1e-10):
//!
//! ```text
//! t = t + 1
//! g = grad + weight_decay * p
//! clr = lr / (1 + (t - 1) * lr_decay)
//! sum = sum + g²                 (sum starts at initial_accumulator_value)
//! p = p - clr * g / (√sum + eps)
//! ```

use anygrad_core::{no_grad, Error, Result, Tensor};

use super::group::{GroupConfig, Groups, ParamGroup};
use super::{
    adopt_non_negative_state_tensor, check_expected_entries, check_known_parameters,
    check_non_negative, kind_mismatch, selected_parameters, Optimizer, OptimizerState,
};
use crate::module::Parameter;

/// Hyper-parameters of [`Adagrad`] (PyTorch's defaults from [`AdagradConfig::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdagradConfig {
    /// Learning rate (1e-2).
    pub lr: f64,
    /// Learning-rate decay per step: step `t` uses `lr / (1 + (t - 1) · lr_decay)` (0).
    pub lr_decay: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// The starting value of the squared-gradient sum (0). Each group's own value is used
    /// (PyTorch seeds every group from the constructor's value).
    pub initial_accumulator_value: f64,
    /// Added to the denominator (1e-10).
    pub eps: f64,
}

impl Default for AdagradConfig {
    fn default() -> Self {
        AdagradConfig {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
        }
    }
}

impl AdagradConfig {
    /// Defaults with learning rate `lr`.
    pub fn new(lr: f64) -> AdagradConfig {
        AdagradConfig {
            lr,
            ..Default::default()
        }
    }

    /// Set the learning-rate decay (builder style).
    pub fn lr_decay(mut self, lr_decay: f64) -> Self {
        self.lr_decay = lr_decay;
        self
    }

    /// Set weight decay (builder style).
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Set the accumulator's starting value (builder style).
    pub fn initial_accumulator_value(mut self, value: f64) -> Self {
        self.initial_accumulator_value = value;
        self
    }

    /// Set eps (builder style).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }

    /// Check every hyper-parameter like `torch.optim.Adagrad` does: all finite and `>= 0`.
    /// On failure returns the name of the first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        check_non_negative("lr_decay", self.lr_decay)?;
        check_non_negative("weight_decay", self.weight_decay)?;
        check_non_negative("initial_accumulator_value", self.initial_accumulator_value)?;
        check_non_negative("eps", self.eps)
    }
}

impl GroupConfig for AdagradConfig {
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
            ("lr_decay", self.lr_decay),
            ("weight_decay", self.weight_decay),
            ("initial_accumulator_value", self.initial_accumulator_value),
            ("eps", self.eps),
        ]
    }

    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        Ok(AdagradConfig {
            lr: read("lr")?,
            lr_decay: read("lr_decay")?,
            weight_decay: read("weight_decay")?,
            initial_accumulator_value: read("initial_accumulator_value")?,
            eps: read("eps")?,
        })
    }
}

/// Per-parameter Adagrad state.
#[derive(Clone)]
struct AdagradState {
    step: u64,
    sum: Tensor,
}

/// Adagrad, like `torch.optim.Adagrad`, with parameter groups.
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{Adagrad, AdagradConfig, Optimizer, Parameter};
/// let p = Parameter::new(Tensor::ones(&[2], DType::F32, &Device::Cpu)?);
/// let mut optimizer = Adagrad::new(vec![("p".into(), p.clone())], AdagradConfig::new(0.1))?;
/// p.tensor().square()?.sum_all()?.backward()?;
/// optimizer.step()?;
/// // First step: sum = g², so the step is lr · g / |g| = 0.1.
/// assert!((p.tensor().to_vec::<f32>()?[0] - 0.9).abs() < 1e-6);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct Adagrad {
    groups: Groups<AdagradConfig>,
    states: Vec<Option<AdagradState>>,
}

impl Adagrad {
    /// Adagrad over named parameter slots (`module.named_parameter_slots()`), one group.
    pub fn new(parameters: Vec<(String, Parameter)>, config: AdagradConfig) -> Result<Adagrad> {
        Adagrad::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// Adagrad over several parameter groups, each with its own hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<AdagradConfig>>) -> Result<Adagrad> {
        let groups = Groups::new("Adagrad::new", groups)?;
        let count = groups.parameters.len();
        Ok(Adagrad {
            groups,
            states: vec![None; count],
        })
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &AdagradConfig {
        &self.groups.configs[0]
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[AdagradConfig] {
        &self.groups.configs
    }

    /// Append a parameter group (PyTorch's `add_param_group`, e.g. to fine-tune layers
    /// unfrozen mid-training). Schedulers created before it refuse the optimizer: create them
    /// after adding groups.
    pub fn add_param_group(&mut self, group: ParamGroup<AdagradConfig>) -> Result<()> {
        let added = self.groups.add("Adagrad::add_param_group", group)?;
        self.states.extend(std::iter::repeat_n(None, added));
        Ok(())
    }
}

impl Adagrad {
    /// One step over every parameter (`None`) or those at the given positions.
    fn step_selected(&mut self, indices: Option<&[usize]>) -> Result<()> {
        let _guard = no_grad();
        let selected = selected_parameters("Adagrad::step", self.groups.parameters.len(), indices)?;
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
                None => AdagradState {
                    step: 0,
                    sum: param
                        .zeros_like()?
                        .add_scalar(c.initial_accumulator_value)?,
                },
            };
            let step = state.step.checked_add(1).ok_or_else(|| {
                Error::invalid("Adagrad::step", "the step count overflowed a u64")
            })?;
            let g = if c.weight_decay != 0.0 {
                grad.add(&param.mul_scalar(c.weight_decay)?)?
            } else {
                grad
            };
            let clr = c.lr / (1.0 + (step - 1) as f64 * c.lr_decay);
            let sum = state.sum.add(&g.square()?)?;
            let std = sum.sqrt()?.add_scalar(c.eps)?;
            param.assign(&param.sub(&g.div(&std)?.mul_scalar(clr)?)?)?;
            *slot = Some(AdagradState { step, sum });
        }
        Ok(())
    }
}

impl Optimizer for Adagrad {
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
            kind: "adagrad".into(),
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
                .insert(format!("state.{name}.sum"), s.sum.clone());
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != "adagrad" {
            return Err(kind_mismatch("adagrad", &state.kind));
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
            let sum_key = format!("state.{name}.sum");
            states.push(Some(AdagradState {
                step,
                sum: adopt_non_negative_state_tensor(state, &sum_key, parameter)?,
            }));
            expected.extend([step_key, sum_key]);
        }
        check_expected_entries(state, &expected)?;
        self.groups.configs = configs;
        self.states = states;
        Ok(())
    }
}

//! Parameter groups: sets of parameters that share one optimizer's rule but have their own
//! hyper-parameters (PyTorch's `param_groups`), e.g. no weight decay on biases and norms, or a
//! smaller learning rate for a pretrained backbone than for a new head.
//!
//! Every optimizer keeps its groups in a [`Groups`]: the flat parameter list the
//! [`super::Optimizer`] trait shows, which group each parameter belongs to, and each group's
//! configuration. Checkpoints keep group 0's hyper-parameters under the plain keys written
//! before groups existed (`lr`, `momentum`, ...) and group `g ≥ 1`'s under `group.g.<key>`,
//! with the count under `param_groups`; so a one-group checkpoint reads exactly as before,
//! and a state with another number of groups is refused on load.

use std::collections::BTreeSet;

use anygrad_core::{Error, Result};

use super::{state_error, OptimizerState};
use crate::module::Parameter;

/// One parameter group: named parameter slots and the hyper-parameters they use.
///
/// ```
/// use anygrad_core::Device;
/// use anygrad_nn::optim::{split_no_decay, ParamGroup};
/// use anygrad_nn::{AdamConfig, AdamW, BatchNorm2d, Conv2d, Conv2dOptions, Module, Sequential};
/// let model = Sequential::new()
///     .add(Conv2d::square(3, 8, 3, Conv2dOptions::default(), &Device::Cpu)?)
///     .add(BatchNorm2d::new_2d(8, &Device::Cpu)?);
/// // Weight decay on the convolution's kernel only; biases and norm scales get none.
/// let (decay, no_decay) = split_no_decay(model.named_parameter_slots());
/// let config = AdamConfig::new(1e-3).weight_decay(0.05);
/// let optimizer = AdamW::with_groups(vec![
///     ParamGroup::new(decay, config),
///     ParamGroup::new(no_decay, config.weight_decay(0.0)),
/// ])?;
/// assert_eq!(optimizer.configs()[1].weight_decay, 0.0);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ParamGroup<C> {
    /// The group's parameters with their names (names must be unique across groups).
    pub parameters: Vec<(String, Parameter)>,
    /// The group's hyper-parameters.
    pub config: C,
}

impl<C> ParamGroup<C> {
    /// A group of `parameters` using `config`.
    pub fn new(parameters: Vec<(String, Parameter)>, config: C) -> ParamGroup<C> {
        ParamGroup { parameters, config }
    }
}

/// A parameter slot with its dotted name (what `Module::named_parameter_slots` yields).
pub type NamedParameter = (String, Parameter);

/// Split parameters into those that usually get weight decay (matrices and kernels: rank ≥ 2)
/// and those that usually do not (biases and normalization scales and shifts: rank ≤ 1), the
/// common rule of image-classification recipes. Order within each part is kept.
pub fn split_no_decay(
    parameters: Vec<NamedParameter>,
) -> (Vec<NamedParameter>, Vec<NamedParameter>) {
    parameters
        .into_iter()
        .partition(|(_, p)| p.shape().len() >= 2)
}

/// The hyper-parameters of one group: what an optimizer needs to schedule, validate and save
/// them.
pub trait GroupConfig: Copy + std::fmt::Debug {
    /// The learning rate.
    fn lr(&self) -> f64;
    /// Set the learning rate.
    fn set_lr(&mut self, lr: f64);
    /// The momentum a one-cycle schedule cycles (SGD's and RMSprop's `momentum`, Adam's
    /// `beta1`), or `None` when the rule has none.
    fn momentum(&self) -> Option<f64>;
    /// Set that momentum (ignored by rules without one).
    fn set_momentum(&mut self, momentum: f64);
    /// Check every value; `(key, why)` for the first bad one.
    fn check(&self) -> std::result::Result<(), (&'static str, String)>;
    /// `(key, value)` for every hyper-parameter, as saved in a checkpoint.
    fn to_scalars(&self) -> Vec<(&'static str, f64)>;
    /// Read the hyper-parameters back; `read(key)` errors for a missing key.
    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self>;
}

/// The key under which group `group`'s hyper-parameter `key` is saved.
pub(crate) fn group_key(group: usize, key: &str) -> String {
    if group == 0 {
        key.to_string()
    } else {
        format!("group.{group}.{key}")
    }
}

/// An optimizer's parameter groups, flattened for the [`super::Optimizer`] trait.
pub(crate) struct Groups<C> {
    /// Every parameter, group by group.
    pub parameters: Vec<(String, Parameter)>,
    /// `group_of[i]`: the group of `parameters[i]`.
    pub group_of: Vec<usize>,
    /// Each group's hyper-parameters.
    pub configs: Vec<C>,
}

impl<C: GroupConfig> Groups<C> {
    /// Validate and flatten `groups` (`op` names the constructor in errors): at least one
    /// group, valid hyper-parameters, and no parameter or name in two places.
    pub fn new(op: &'static str, groups: Vec<ParamGroup<C>>) -> Result<Groups<C>> {
        if groups.is_empty() {
            return Err(Error::invalid(op, "needs at least one parameter group"));
        }
        let mut flat = Groups {
            parameters: Vec::new(),
            group_of: Vec::new(),
            configs: Vec::new(),
        };
        for group in groups {
            flat.add(op, group)?;
        }
        Ok(flat)
    }

    /// Validate and append one group (PyTorch's `add_param_group`); returns how many
    /// parameters it added.
    pub fn add(&mut self, op: &'static str, group: ParamGroup<C>) -> Result<usize> {
        let index = self.configs.len();
        if let Err((key, message)) = group.config.check() {
            return Err(Error::invalid(
                op,
                format!(
                    "group {index}: `{key}` {message} (hyper-parameters {:?})",
                    group.config
                ),
            ));
        }
        for (position, (name, parameter)) in group.parameters.iter().enumerate() {
            let earlier = self
                .parameters
                .iter()
                .chain(&group.parameters[..position])
                .find(|(n, p)| n == name || p.same_slot(parameter));
            if let Some((other, _)) = earlier {
                return Err(Error::invalid(
                    op,
                    format!(
                        "parameter `{name}` (group {index}) is given twice (already as \
                         `{other}`); every parameter and name may appear in one group only"
                    ),
                ));
            }
        }
        let added = group.parameters.len();
        for (name, parameter) in group.parameters {
            self.parameters.push((name, parameter));
            self.group_of.push(index);
        }
        self.configs.push(group.config);
        Ok(added)
    }

    /// Group 0's learning rate.
    pub fn learning_rate(&self) -> f64 {
        self.configs[0].lr()
    }

    /// Set every group's learning rate.
    pub fn set_learning_rate(&mut self, lr: f64) {
        for config in &mut self.configs {
            config.set_lr(lr);
        }
    }

    /// The error for a group index out of range.
    fn bad_group(&self, op: &'static str, group: usize) -> Error {
        Error::invalid(
            op,
            format!(
                "group {group} does not exist (the optimizer has {} parameter groups)",
                self.configs.len()
            ),
        )
    }

    /// Group `group`'s learning rate.
    pub fn group_learning_rate(&self, group: usize) -> Result<f64> {
        self.configs
            .get(group)
            .map(GroupConfig::lr)
            .ok_or_else(|| self.bad_group("Optimizer::group_learning_rate", group))
    }

    /// Set group `group`'s learning rate.
    pub fn set_group_learning_rate(&mut self, group: usize, lr: f64) -> Result<()> {
        let error = self.bad_group("Optimizer::set_group_learning_rate", group);
        let config = self.configs.get_mut(group).ok_or(error)?;
        config.set_lr(lr);
        Ok(())
    }

    /// Group `group`'s momentum (`None` when the rule has none).
    pub fn group_momentum(&self, group: usize) -> Result<Option<f64>> {
        self.configs
            .get(group)
            .map(GroupConfig::momentum)
            .ok_or_else(|| self.bad_group("Optimizer::group_momentum", group))
    }

    /// Set group `group`'s momentum.
    pub fn set_group_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        let error = self.bad_group("Optimizer::set_group_momentum", group);
        let config = self.configs.get_mut(group).ok_or(error)?;
        config.set_momentum(momentum);
        Ok(())
    }

    /// Write every group's hyper-parameters and the group count into `state`.
    pub fn save_configs(&self, state: &mut OptimizerState) {
        state
            .scalars
            .insert("param_groups".into(), self.configs.len() as f64);
        for (group, config) in self.configs.iter().enumerate() {
            for (key, value) in config.to_scalars() {
                state.scalars.insert(group_key(group, key), value);
            }
        }
    }

    /// The scalar keys a state saved with `configs` holds for its groups: `param_groups` and
    /// every group's hyper-parameters (exactly what [`Groups::load_configs`] reads); an
    /// optimizer's loader adds its per-parameter keys and refuses any other entry.
    pub fn config_keys(configs: &[C]) -> BTreeSet<String> {
        let mut keys = BTreeSet::from(["param_groups".to_string()]);
        for (group, config) in configs.iter().enumerate() {
            for (key, _) in config.to_scalars() {
                keys.insert(group_key(group, key));
            }
        }
        keys
    }

    /// Read and check every group's hyper-parameters from `state` (a state without
    /// `param_groups`, written before groups existed, has one group).
    pub fn load_configs(&self, state: &OptimizerState) -> Result<Vec<C>> {
        let count = match state.scalars.get("param_groups") {
            None => 1.0,
            Some(&count) => count,
        };
        if count != self.configs.len() as f64 {
            return Err(state_error(
                "param_groups",
                &format!(
                    "is {count} but this optimizer has {} parameter groups",
                    self.configs.len()
                ),
            ));
        }
        let mut configs = Vec::with_capacity(self.configs.len());
        for group in 0..self.configs.len() {
            let read = |key: &str| state.scalar(&group_key(group, key));
            let config = C::from_scalars(&read)?;
            config
                .check()
                .map_err(|(key, message)| state_error(&group_key(group, key), &message))?;
            configs.push(config);
        }
        Ok(configs)
    }
}

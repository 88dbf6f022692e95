//! [`RuleOptimizer`]: the optimizer scaffolding every algorithm shares, over one
//! [`UpdateRule`]. It keeps the parameter groups, one optional state and one step count per
//! parameter, runs steps (all parameters, a subset for data parallelism, or skipped on the
//! device by an inf/NaN flag where the rule allows), exposes learning rates and momenta to
//! schedulers, and writes and validates checkpoints (the kind, known parameters and keys
//! only, whole step counts, tensors of the parameter's shape with finite values, `>= 0` where
//! the rule requires it) before adopting any of a loaded state.

use std::collections::BTreeSet;

use anygrad_core::{no_grad, Error, Result, Tensor};

use super::group::{GroupConfig, Groups, ParamGroup};
use super::rule::{StateTensors, UpdateRule};
use super::state::{
    adopt_checked_state_tensor, check_expected_entries, check_known_parameters, kind_mismatch,
};
use super::{selected_parameters, step_after_readback, Optimizer, OptimizerState};
use crate::module::Parameter;

/// An optimizer made of an [`UpdateRule`] and the scaffolding all rules share: `Sgd` is
/// `RuleOptimizer<SgdRule>`, `Adam` is `RuleOptimizer<AdamRule>`, and so on.
pub struct RuleOptimizer<R: UpdateRule> {
    groups: Groups<R::Config>,
    /// One state per parameter (`None` before its first update).
    states: Vec<Option<R::State>>,
    /// One step count per parameter (0 before its first update).
    steps: Vec<u64>,
}

impl<R: UpdateRule> RuleOptimizer<R> {
    /// An optimizer over named parameter slots (`module.named_parameter_slots()`), one group.
    pub fn new(parameters: Vec<(String, Parameter)>, config: R::Config) -> Result<Self> {
        Self::with_groups(vec![ParamGroup::new(parameters, config)])
    }

    /// An optimizer over several parameter groups, each with its own hyper-parameters
    /// (PyTorch's `SGD([{"params": ..., "lr": ...}, ...])`; see
    /// [`split_no_decay`](super::split_no_decay) for the usual split).
    pub fn with_groups(groups: Vec<ParamGroup<R::Config>>) -> Result<Self> {
        let groups = Groups::new(R::OPERATIONS.new, groups)?;
        let count = groups.parameters.len();
        Ok(RuleOptimizer {
            groups,
            states: std::iter::repeat_with(|| None).take(count).collect(),
            steps: vec![0; count],
        })
    }

    /// The hyper-parameters (of group 0).
    pub fn config(&self) -> &R::Config {
        &self.groups.configs[0]
    }

    /// The hyper-parameters of every group.
    pub fn configs(&self) -> &[R::Config] {
        &self.groups.configs
    }

    /// Append a parameter group (PyTorch's `add_param_group`, e.g. to fine-tune layers
    /// unfrozen mid-training). Schedulers created before it refuse the optimizer: create them
    /// after adding groups.
    pub fn add_param_group(&mut self, group: ParamGroup<R::Config>) -> Result<()> {
        let added = self.groups.add(R::OPERATIONS.add_param_group, group)?;
        self.states
            .extend(std::iter::repeat_with(|| None).take(added));
        self.steps.extend(std::iter::repeat_n(0, added));
        Ok(())
    }

    /// The step count of parameter `name`: its updates so far (0 before the first, and
    /// always 0 for rules that count no steps, like SGD).
    pub fn step_count(&self, name: &str) -> u64 {
        if !R::COUNTS_STEPS {
            return 0;
        }
        self.groups
            .parameters
            .iter()
            .position(|(n, _)| n == name)
            .map_or(0, |index| self.steps[index])
    }

    /// One step over every parameter (`None`) or those at the given positions; with `found`
    /// (a U32 `[1]` flag on the parameters' device), skipped on the device where it is
    /// nonzero.
    fn step_selected(&mut self, indices: Option<&[usize]>, found: Option<&Tensor>) -> Result<()> {
        let _guard = no_grad();
        let count = self.groups.parameters.len();
        let selected = selected_parameters(R::OPERATIONS.step, count, indices)?;
        for (index, selected) in selected.into_iter().enumerate() {
            if !selected {
                continue;
            }
            let config = self.groups.configs[self.groups.group_of[index]];
            let parameter = self.groups.parameters[index].1.tensor();
            let Some(gradient) = parameter.grad() else {
                continue;
            };
            let step = self.steps[index].checked_add(1).ok_or_else(|| {
                Error::invalid(R::OPERATIONS.step, "the step count overflowed a u64")
            })?;
            // A failed update leaves the parameter without a state (it starts afresh).
            let previous = self.states[index].take();
            self.steps[index] = 0;
            self.states[index] = match found {
                Some(found) => {
                    R::update_unless_found(&parameter, gradient, &config, previous, found)?
                }
                None => R::update(&parameter, gradient, &config, step, previous)?,
            };
            self.steps[index] = step;
        }
        Ok(())
    }

    /// Whether a step skipped by one device flag can read it on the device: the rule counts
    /// no steps and can update every parameter that has a gradient that way.
    fn skips_on_device(&self) -> bool {
        !R::COUNTS_STEPS
            && self
                .groups
                .parameters
                .iter()
                .zip(&self.states)
                .zip(&self.groups.group_of)
                .all(|(((_, parameter), state), &group)| {
                    R::skips_on_device(&self.groups.configs[group], state.as_ref())
                        || parameter.tensor().grad().is_none()
                })
    }

    /// Read parameter `name`'s state from `state` (its step count where the rule keeps one,
    /// then its tensors, each checked), adding every key it may use to `expected`.
    fn load_parameter_state(
        state: &OptimizerState,
        name: &str,
        parameter: &Parameter,
        expected: &mut BTreeSet<String>,
    ) -> Result<(u64, Option<R::State>)> {
        let key = |entry: &str| format!("state.{name}.{entry}");
        let mut step = 0;
        if R::COUNTS_STEPS {
            let step_key = key("step");
            match state.step_count(&step_key)? {
                Some(count) => step = count,
                None => return Ok((0, None)),
            }
            expected.insert(step_key);
        } else {
            let keys: Vec<String> = R::STATE_TENSORS.iter().map(|t| key(t.name)).collect();
            let present = keys.iter().any(|k| state.tensors.contains_key(k));
            expected.extend(keys);
            if !present {
                return Ok((0, None));
            }
        }
        let mut tensors = StateTensors::default();
        for entry in R::STATE_TENSORS {
            let entry_key = key(entry.name);
            if entry.required || state.tensors.contains_key(&entry_key) {
                let tensor =
                    adopt_checked_state_tensor(state, &entry_key, parameter, entry.values)?;
                tensors.insert(entry.name, tensor);
            }
            expected.insert(entry_key);
        }
        Ok((step, Some(R::restore(&mut tensors)?)))
    }
}

impl<R: UpdateRule> Optimizer for RuleOptimizer<R> {
    fn step(&mut self) -> Result<()> {
        self.step_selected(None, None)
    }

    /// On one device, rules with a fused skipping kernel (SGD) read the flag there: no
    /// readback. Otherwise (a rule without one, a parameter the kernel cannot update yet such
    /// as SGD's first step with momentum, whose skip must leave the buffer unset as PyTorch
    /// does, or flags of several devices, where a skip on one must skip all) the flags are
    /// read back first.
    fn step_unless_found(&mut self, found: &[Tensor]) -> Result<()> {
        match found {
            [flag] if self.skips_on_device() => self.step_selected(None, Some(flag)),
            _ => step_after_readback(self, found),
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
        match self.groups.configs.get(group).map(GroupConfig::momentum) {
            Some(None) => Err(Error::invalid(
                "Optimizer::set_group_momentum",
                format!("this optimizer has no momentum to set (group {group})"),
            )),
            _ => self.groups.set_group_momentum(group, momentum),
        }
    }

    fn state_dict(&self) -> Result<OptimizerState> {
        let mut state = OptimizerState {
            kind: R::KIND.into(),
            ..Default::default()
        };
        self.groups.save_configs(&mut state);
        let parameters = self.groups.parameters.iter().zip(&self.states);
        for (((name, _), parameter_state), &step) in parameters.zip(&self.steps) {
            let Some(parameter_state) = parameter_state else {
                continue;
            };
            if R::COUNTS_STEPS {
                state
                    .scalars
                    .insert(format!("state.{name}.step"), step as f64);
            }
            for (entry, tensor) in R::save(parameter_state)? {
                state
                    .tensors
                    .insert(format!("state.{name}.{entry}"), tensor);
            }
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != R::KIND {
            return Err(kind_mismatch(R::KIND, &state.kind));
        }
        check_known_parameters(state, &self.groups.parameters)?;
        let configs = self.groups.load_configs(state)?;
        let mut expected = Groups::config_keys(&configs);
        let count = self.groups.parameters.len();
        let mut states = Vec::with_capacity(count);
        let mut steps = Vec::with_capacity(count);
        for (name, parameter) in &self.groups.parameters {
            let (step, loaded) = Self::load_parameter_state(state, name, parameter, &mut expected)?;
            steps.push(step);
            states.push(loaded);
        }
        check_expected_entries(state, &expected)?;
        self.groups.configs = configs;
        self.states = states;
        self.steps = steps;
        Ok(())
    }
}

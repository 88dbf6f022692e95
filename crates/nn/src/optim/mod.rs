//! Optimizers (`Sgd`, `Adam`, `AdamW`, `RMSprop`, `Adagrad`) with parameter groups,
//! learning-rate schedulers (`StepLR`, `MultiStepLR`, `CosineAnnealingLR`, `LinearLR`,
//! `LambdaLR`, `OneCycleLR`, `SequentialLR`, `ReduceLROnPlateau`) and gradient clipping.
//!
//! An optimizer is created **once** from a module's parameter slots and reused for the whole
//! run, like in PyTorch; its state (momentum buffers, Adam's moments and step counts) lives
//! on the parameters' device and persists across steps and epochs. Updates run under
//! `no_grad` with ordinary tensor ops (so they run on the GPU for GPU parameters) and are
//! written into the parameters with `assign`. Gradients accumulate across `backward` calls
//! until `zero_grad`, so gradient accumulation needs nothing special.

mod adadelta;
mod adagrad;
mod adam;
mod clip;
mod group;
mod one_cycle;
mod plateau;
mod rmsprop;
mod scheduler;
mod sgd;

use std::collections::BTreeMap;

use anygrad_core::{Error, Result, Tensor};

use crate::module::Parameter;

pub use adadelta::{Adadelta, AdadeltaConfig};
pub use adagrad::{Adagrad, AdagradConfig};
pub use adam::{Adam, AdamConfig, AdamW};
pub use clip::{clip_grad_norm_, clip_grad_value_};
pub use group::{split_no_decay, GroupConfig, NamedParameter, ParamGroup};
pub use one_cycle::{AnnealStrategy, OneCycleLR, OneCycleOptions};
pub use plateau::{PlateauMode, PlateauState, ReduceLROnPlateau, ThresholdMode};
pub use rmsprop::{RMSprop, RMSpropConfig};
pub use scheduler::{
    CosineAnnealingLR, LambdaLR, LinearLR, LrSchedule, LrScheduler, MultiStepLR, ScheduleState,
    SequentialLR, StepLR,
};
pub use sgd::{Sgd, SgdConfig};

/// The serializable state of an optimizer: named tensors (`state.<param>.exp_avg`, ...) and
/// named scalars (`lr`, `state.<param>.step`, hyper-parameters). Saved to disk by
/// [`crate::checkpoint::save_optimizer`].
#[derive(Debug, Clone, Default)]
pub struct OptimizerState {
    /// Which optimizer wrote it (`sgd`, `adam`, `adamw`).
    pub kind: String,
    /// State tensors by name.
    pub tensors: BTreeMap<String, Tensor>,
    /// Scalars by name.
    pub scalars: BTreeMap<String, f64>,
}

/// The largest step count a state may hold (2^53: every count up to it is exact in the f64
/// the checkpoint stores, and `step + 1` can never overflow).
pub const MAX_STEP_COUNT: f64 = 9_007_199_254_740_992.0;

impl OptimizerState {
    /// A scalar that must be present.
    pub fn scalar(&self, name: &str) -> Result<f64> {
        self.scalars
            .get(name)
            .copied()
            .ok_or_else(|| state_error(name, "is missing"))
    }

    /// A boolean stored as a scalar: it must be present and exactly 0 or 1.
    pub fn flag(&self, name: &str) -> Result<bool> {
        parse_flag(name, self.scalar(name)?)
    }

    /// A per-parameter step count (`None` when absent): it must be a whole number in
    /// `1..=2^53`; NaN, infinities, negative, fractional and huge counts are errors naming the key.
    pub fn step_count(&self, name: &str) -> Result<Option<u64>> {
        let Some(&value) = self.scalars.get(name) else {
            return Ok(None);
        };
        if !(value.is_finite() && value.fract() == 0.0 && (1.0..=MAX_STEP_COUNT).contains(&value)) {
            return Err(state_error(
                name,
                &format!("is {value}, must be a whole number from 1 to {MAX_STEP_COUNT}"),
            ));
        }
        Ok(Some(value as u64))
    }
}

/// A boolean stored as the scalar `value` under `name`: exactly 0 or 1.
pub(crate) fn parse_flag(name: &str, value: f64) -> Result<bool> {
    if value == 0.0 {
        Ok(false)
    } else if value == 1.0 {
        Ok(true)
    } else {
        Err(state_error(name, &format!("is {value}, must be 0 or 1")))
    }
}

/// The error for a bad optimizer-state entry: `Error::Format` with context `optimizer state`
/// and the key (checkpoint loaders add the file name).
pub(crate) fn state_error(key: &str, message: &str) -> Error {
    Error::format("optimizer state", format!("scalar `{key}` {message}"))
}

/// The error for a state written by another kind of optimizer.
pub(crate) fn kind_mismatch(expected: &str, found: &str) -> Error {
    Error::format(
        "optimizer state",
        format!(
            "it was written by the `{found}` optimizer but this one is `{expected}`; resume \
             with the optimizer that saved it (--optimizer {found})"
        ),
    )
}

/// `value` must be finite and `>= 0`; returns `(key, why)` otherwise.
pub(crate) fn check_non_negative(
    key: &'static str,
    value: f64,
) -> std::result::Result<(), (&'static str, String)> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err((key, format!("is {value}, must be a finite number >= 0")))
    }
}

/// `value` must be in `[0, 1)`; returns `(key, why)` otherwise.
pub(crate) fn check_unit_interval(
    key: &'static str,
    value: f64,
) -> std::result::Result<(), (&'static str, String)> {
    if (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err((key, format!("is {value}, must be in [0, 1)")))
    }
}

/// Which of `count` parameters a step updates: all for `None`, else those at `indices`
/// (each checked to be below `count`).
pub(crate) fn selected_parameters(
    op: &'static str,
    count: usize,
    indices: Option<&[usize]>,
) -> Result<Vec<bool>> {
    let Some(indices) = indices else {
        return Ok(vec![true; count]);
    };
    let mut selected = vec![false; count];
    for &index in indices {
        match selected.get_mut(index) {
            Some(slot) => *slot = true,
            None => {
                return Err(Error::invalid(
                    op,
                    format!("parameter index {index} is out of range for {count} parameters"),
                ))
            }
        }
    }
    Ok(selected)
}

/// [`Optimizer::step_unless_found`] by reading the flags back: `optimizer.step()` unless one
/// is nonzero.
pub fn step_after_readback<O: Optimizer + ?Sized>(
    optimizer: &mut O,
    found: &[Tensor],
) -> Result<()> {
    for flag in found {
        if flag.item_f64()? != 0.0 {
            return Ok(());
        }
    }
    optimizer.step()
}

/// A parameter-updating rule, like `torch.optim.Optimizer`.
pub trait Optimizer {
    /// Update every parameter that has a gradient.
    fn step(&mut self) -> Result<()>;

    /// The parameters (name, slot) this optimizer updates.
    fn parameters(&self) -> &[(String, Parameter)];

    /// Whether [`Optimizer::step_parameters`] works: each parameter's update reads only its
    /// own gradient and state (true for SGD, Adam, AdamW, Adagrad and RMSprop).
    fn supports_partial_step(&self) -> bool {
        false
    }

    /// Update only the parameters at `indices` (positions in [`Optimizer::parameters`]),
    /// exactly as [`Optimizer::step`] updates them; a step is then the union of partial steps
    /// over every parameter, each parameter once. Data parallelism uses it to apply a
    /// bucket's update as soon as its averaged gradients arrive. An error where
    /// [`Optimizer::supports_partial_step`] is false, or for an index out of range.
    fn step_parameters(&mut self, indices: &[usize]) -> Result<()> {
        let _ = indices;
        Err(Error::invalid(
            "Optimizer::step_parameters",
            "this optimizer cannot update a subset of its parameters; call step()",
        ))
    }

    /// [`Optimizer::step`] unless a gradient was inf or NaN: `found` holds one U32 `[1]` flag
    /// per device (`Tensor::unscale_` sets them), nonzero where that device's gradients had
    /// one (`GradScaler::step` calls this). Optimizers that can read the flag on the device
    /// (SGD's fused kernel) skip there, without a readback; this default reads the flags
    /// back first (a synchronization) and then steps or not.
    fn step_unless_found(&mut self, found: &[Tensor]) -> Result<()> {
        step_after_readback(self, found)
    }

    /// Every parameter slot whose gradient a step reads: [`Optimizer::parameters`], except
    /// for optimizers over several copies of a model (data parallelism's
    /// `ReplicatedOptimizer`: every replica's). What `GradScaler` unscales and checks.
    fn gradient_slots(&self) -> Vec<Parameter> {
        self.parameters().iter().map(|(_, p)| p.clone()).collect()
    }

    /// Clear every parameter's gradient.
    fn zero_grad(&self) {
        for (_, parameter) in self.parameters() {
            parameter.zero_grad();
        }
    }

    /// The current learning rate (of parameter group 0).
    fn learning_rate(&self) -> f64;

    /// Set the learning rate of every parameter group.
    fn set_learning_rate(&mut self, learning_rate: f64);

    /// Number of parameter groups (1 unless built with groups).
    fn group_count(&self) -> usize {
        1
    }

    /// The learning rate of parameter group `group` (an error for a group that does not
    /// exist). What schedulers read.
    fn group_learning_rate(&self, group: usize) -> Result<f64> {
        if group == 0 {
            Ok(self.learning_rate())
        } else {
            Err(missing_group("Optimizer::group_learning_rate", group))
        }
    }

    /// Set the learning rate of parameter group `group`. What schedulers call.
    fn set_group_learning_rate(&mut self, group: usize, learning_rate: f64) -> Result<()> {
        if group == 0 {
            self.set_learning_rate(learning_rate);
            Ok(())
        } else {
            Err(missing_group("Optimizer::set_group_learning_rate", group))
        }
    }

    /// The momentum of group `group` that a one-cycle schedule cycles (SGD's and RMSprop's
    /// `momentum`, Adam's `beta1`); `None` for rules without one (Adagrad).
    fn group_momentum(&self, group: usize) -> Result<Option<f64>> {
        let _ = group;
        Ok(None)
    }

    /// Set the momentum of group `group` (see [`Optimizer::group_momentum`]).
    fn set_group_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        let _ = momentum;
        Err(Error::invalid(
            "Optimizer::set_group_momentum",
            format!("this optimizer has no momentum to set (group {group})"),
        ))
    }

    /// The state to checkpoint (hyper-parameters, per-parameter buffers and step counts).
    fn state_dict(&self) -> Result<OptimizerState>;

    /// Restore a state from [`Optimizer::state_dict`]; the parameter names and shapes must
    /// match this optimizer's.
    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()>;
}

/// The error for a parameter group an optimizer does not have.
fn missing_group(op: &'static str, group: usize) -> Error {
    Error::invalid(
        op,
        format!("group {group} does not exist (the optimizer has 1 parameter group)"),
    )
}

/// Name parameters `"0"`, `"1"`, ... for optimizers over plain parameter lists.
pub fn numbered(parameters: Vec<Parameter>) -> Vec<(String, Parameter)> {
    parameters
        .into_iter()
        .enumerate()
        .map(|(i, p)| (i.to_string(), p))
        .collect()
}

/// What values a loaded state tensor may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateValues {
    /// Any finite value (momentum buffers, first moments, gradient averages).
    Finite,
    /// Finite and `>= 0` (second moments, squared-gradient averages and sums).
    NonNegative,
}

/// `state.<param>.<entry>` → (`param`, `entry`); parameter names may hold dots, entries never.
fn split_state_key(key: &str) -> (&str, &str) {
    let rest = key.strip_prefix("state.").unwrap_or(key);
    rest.rsplit_once('.').unwrap_or((rest, key))
}

/// Error unless every value of the state tensor `name` obeys `values`: naming the entry, the
/// parameter, how many values are bad and the first of them.
fn check_state_values(name: &str, tensor: &Tensor, values: StateValues) -> Result<()> {
    let host = tensor
        .detach()
        .to_device(&anygrad_core::Device::Cpu)?
        .to_dtype(anygrad_core::DType::F64)?
        .to_vec::<f64>()?;
    let bad = |v: f64| match values {
        StateValues::Finite => !v.is_finite(),
        StateValues::NonNegative => !(v.is_finite() && v >= 0.0),
    };
    let mut count = 0usize;
    let mut first = None;
    for (index, &value) in host.iter().enumerate() {
        if bad(value) {
            count += 1;
            first.get_or_insert((index, value));
        }
    }
    let Some((index, value)) = first else {
        return Ok(());
    };
    let (parameter, entry) = split_state_key(name);
    let rule = match values {
        StateValues::Finite => "finite",
        StateValues::NonNegative => "finite and >= 0",
    };
    Err(Error::format(
        "optimizer state",
        format!(
            "tensor `{name}` (the `{entry}` of parameter `{parameter}`) has {count} of {} \
             values that are not {rule} (the first, at flat index {index}, is {value}); the \
             state is corrupt or was saved from a run that diverged, so it cannot be resumed",
            host.len()
        ),
    ))
}

/// Check a loaded state tensor against its parameter (same shape, every value finite) and
/// move it to the parameter's device and dtype.
pub(crate) fn adopt_state_tensor(
    state: &OptimizerState,
    name: &str,
    parameter: &Parameter,
) -> Result<Tensor> {
    adopt_checked_state_tensor(state, name, parameter, StateValues::Finite)
}

/// [`adopt_state_tensor`] for an entry that must also be `>= 0` (Adam's `exp_avg_sq`,
/// RMSprop's `square_avg`, Adagrad's `sum`).
pub(crate) fn adopt_non_negative_state_tensor(
    state: &OptimizerState,
    name: &str,
    parameter: &Parameter,
) -> Result<Tensor> {
    adopt_checked_state_tensor(state, name, parameter, StateValues::NonNegative)
}

/// Check a loaded state tensor's shape and `values` and move it to the parameter's device and
/// dtype.
pub(crate) fn adopt_checked_state_tensor(
    state: &OptimizerState,
    name: &str,
    parameter: &Parameter,
    values: StateValues,
) -> Result<Tensor> {
    let tensor = state
        .tensors
        .get(name)
        .ok_or_else(|| Error::format("optimizer state", format!("missing tensor `{name}`")))?;
    let target = parameter.tensor();
    if tensor.shape() != target.shape() {
        let (parameter_name, _) = split_state_key(name);
        return Err(Error::format(
            "optimizer state",
            format!(
                "`{name}` has shape {:?} but the parameter `{parameter_name}` has {:?}",
                tensor.shape(),
                target.shape()
            ),
        ));
    }
    check_state_values(name, tensor, values)?;
    tensor
        .detach()
        .to_dtype(target.dtype())?
        .to_device(target.device())?
        .copy()
}

/// Error unless `state` holds only the entries in `expected` (like PyTorch's
/// `load_state_dict`, which refuses unexpected keys): every unknown scalar and tensor is
/// named, so a state of another configuration or a damaged file is not half-used.
pub(crate) fn check_expected_entries(
    state: &OptimizerState,
    expected: &std::collections::BTreeSet<String>,
) -> Result<()> {
    let scalars: Vec<&String> = state
        .scalars
        .keys()
        .filter(|key| !expected.contains(*key))
        .collect();
    let tensors: Vec<&String> = state
        .tensors
        .keys()
        .filter(|key| !expected.contains(*key))
        .collect();
    if scalars.is_empty() && tensors.is_empty() {
        return Ok(());
    }
    let quoted = |keys: &[&String]| {
        keys.iter()
            .map(|key| format!("`{key}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !scalars.is_empty() {
        parts.push(format!("scalars {}", quoted(&scalars)));
    }
    if !tensors.is_empty() {
        parts.push(format!("tensors {}", quoted(&tensors)));
    }
    Err(Error::format(
        "optimizer state",
        format!(
            "unexpected {} for this `{}` optimizer: it does not use them (a state of another \
             configuration, or a damaged file); nothing was loaded",
            parts.join(" and "),
            state.kind
        ),
    ))
}

/// Error unless every `state.<param>.` entry names a parameter of this optimizer.
pub(crate) fn check_known_parameters(
    state: &OptimizerState,
    parameters: &[(String, Parameter)],
) -> Result<()> {
    let known = |key: &str| -> bool {
        match key.strip_prefix("state.") {
            None => true,
            Some(rest) => parameters.iter().any(|(name, _)| {
                rest.len() > name.len()
                    && rest.starts_with(name.as_str())
                    && rest.as_bytes()[name.len()] == b'.'
            }),
        }
    };
    let unknown: Vec<&String> = state
        .tensors
        .keys()
        .chain(state.scalars.keys())
        .filter(|k| !known(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::format(
            "optimizer state",
            format!("entries for parameters this optimizer does not have: {unknown:?}"),
        ))
    }
}

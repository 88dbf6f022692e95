//! The serializable state of an optimizer ([`OptimizerState`]: hyper-parameters, step counts
//! and per-parameter tensors by name) and the checks a loaded state passes before an
//! optimizer adopts any of it: the kind that wrote it, only known parameters and keys, step
//! counts that are whole numbers, tensors of the parameter's shape whose values are finite
//! (and `>= 0` where the rule requires it).

use std::collections::{BTreeMap, BTreeSet};

use anygrad_core::{Error, Result, Tensor};

use crate::module::Parameter;

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

/// What values a loaded state tensor may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateValues {
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
    expected: &BTreeSet<String>,
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

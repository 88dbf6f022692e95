//! What differs between optimization algorithms: an [`UpdateRule`] names its hyper-parameters
//! (a [`GroupConfig`]), the tensors it keeps per parameter with the values a checkpoint may
//! hold for them ([`StateTensor`]), and the update itself. Everything they share (parameter
//! groups, per-parameter state and step counts, checkpoints and their validation, learning
//! rate and momentum access, partial steps) is [`RuleOptimizer`](super::RuleOptimizer)'s.

use std::collections::BTreeMap;

use anygrad_core::{Error, Result, Tensor};

use super::group::GroupConfig;
use super::state::StateValues;

/// One tensor an update rule keeps per parameter, checkpointed as
/// `state.<parameter>.<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateTensor {
    /// The entry's name (`exp_avg`, `momentum_buffer`, ...).
    pub name: &'static str,
    /// What values a loaded tensor may hold (a state with other values is refused).
    pub values: StateValues,
    /// Whether every saved state of a parameter holds it (else it is optional, like
    /// AMSGrad's `max_exp_avg_sq`).
    pub required: bool,
}

/// The names an optimizer's errors give its operations (`Sgd::new`, `Sgd::add_param_group`,
/// `Sgd::step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationNames {
    /// The constructors' name.
    pub new: &'static str,
    /// The name of `add_param_group`.
    pub add_param_group: &'static str,
    /// The name of a step.
    pub step: &'static str,
}

/// The state tensors of one parameter read back from a checkpoint, already checked (shape,
/// values) and moved to the parameter's device and dtype; [`UpdateRule::restore`] takes them.
#[derive(Debug, Default)]
pub struct StateTensors {
    tensors: BTreeMap<&'static str, Tensor>,
}

impl StateTensors {
    /// Add the entry `name`.
    pub(crate) fn insert(&mut self, name: &'static str, tensor: Tensor) {
        self.tensors.insert(name, tensor);
    }

    /// Take an entry the rule declared `required` (always present once the checkpoint was
    /// accepted; an error naming it otherwise).
    pub fn required(&mut self, name: &str) -> Result<Tensor> {
        self.tensors
            .remove(name)
            .ok_or_else(|| Error::format("optimizer state", format!("missing tensor `{name}`")))
    }

    /// Take an optional entry (`None` when the checkpoint has none).
    pub fn optional(&mut self, name: &str) -> Option<Tensor> {
        self.tensors.remove(name)
    }
}

/// One optimization algorithm, without the scaffolding every optimizer shares.
///
/// A rule is a type without values: its hyper-parameters live in each parameter group's
/// [`UpdateRule::Config`], its per-parameter tensors in [`UpdateRule::State`].
/// [`RuleOptimizer`](super::RuleOptimizer) keeps the groups, one optional state and one
/// step count per parameter, and calls [`UpdateRule::update`] for every parameter with a
/// gradient. A checkpoint holds, for each parameter with a state, its step count (where
/// [`UpdateRule::COUNTS_STEPS`]) and the tensors [`UpdateRule::save`] returns, each named in
/// [`UpdateRule::STATE_TENSORS`].
pub trait UpdateRule {
    /// The hyper-parameters of one group.
    type Config: GroupConfig;
    /// What the rule keeps per parameter between steps.
    type State;
    /// The kind a checkpoint carries (`sgd`, `adam`, ...); a state of another kind is refused.
    const KIND: &'static str;
    /// The names errors give the optimizer's operations.
    const OPERATIONS: OperationNames;
    /// Whether a parameter's state carries a step count, saved as `state.<parameter>.step`
    /// (a state exists exactly when its step is saved); else a state exists when one of its
    /// tensors is saved.
    const COUNTS_STEPS: bool;
    /// Every tensor a state may hold, in the order a checkpoint is checked.
    const STATE_TENSORS: &'static [StateTensor];

    /// Update `parameter` (in place, by `assign` or a fused kernel) from `gradient` with the
    /// group's `config`; `step` counts this update (1 for the first) and `state` is what the
    /// previous update returned (`None` before the first). Returns the state to keep.
    fn update(
        parameter: &Tensor,
        gradient: Tensor,
        config: &Self::Config,
        step: u64,
        state: Option<Self::State>,
    ) -> Result<Option<Self::State>>;

    /// Whether [`UpdateRule::update_unless_found`] can update a parameter in this `state`
    /// while reading the inf/NaN flag on the device (no readback). Only rules that count no
    /// steps may say yes (a skipped step must not advance a count kept on the host).
    fn skips_on_device(config: &Self::Config, state: Option<&Self::State>) -> bool {
        let _ = (config, state);
        false
    }

    /// [`UpdateRule::update`], skipped on the device where the U32 `[1]` flag `found` is
    /// nonzero; called only where [`UpdateRule::skips_on_device`] said yes.
    fn update_unless_found(
        parameter: &Tensor,
        gradient: Tensor,
        config: &Self::Config,
        state: Option<Self::State>,
        found: &Tensor,
    ) -> Result<Option<Self::State>> {
        let _ = (parameter, gradient, config, state, found);
        Err(Error::invalid(
            Self::OPERATIONS.step,
            "this optimizer cannot skip a step on the device; read the flags back first",
        ))
    }

    /// The tensors of `state` to checkpoint, by entry name (snapshots where the live tensors
    /// change in place).
    fn save(state: &Self::State) -> Result<Vec<(&'static str, Tensor)>>;

    /// A state from checkpointed tensors (every required entry is present).
    fn restore(tensors: &mut StateTensors) -> Result<Self::State>;
}

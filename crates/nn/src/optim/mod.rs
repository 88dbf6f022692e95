//! Optimizers (`Sgd`, `Adam`, `AdamW`, `RMSprop`, `Adagrad`, `Adadelta`) with parameter
//! groups, learning-rate schedulers (`StepLR`, `MultiStepLR`, `CosineAnnealingLR`, `LinearLR`,
//! `LambdaLR`, `OneCycleLR`, `SequentialLR`, `ReduceLROnPlateau`) and gradient clipping.
//!
//! An optimizer is created **once** from a module's parameter slots and reused for the whole
//! run, like in PyTorch; its state (momentum buffers, Adam's moments and step counts) lives
//! on the parameters' device and persists across steps and epochs. Updates run under
//! `no_grad` with ordinary tensor ops (so they run on the GPU for GPU parameters) and are
//! written into the parameters with `assign`. Gradients accumulate across `backward` calls
//! until `zero_grad`, so gradient accumulation needs nothing special.
//!
//! Every optimizer is one [`RuleOptimizer`] (parameter groups, per-parameter state, step
//! counts, checkpoints and their validation, learning-rate and momentum access) over one
//! [`UpdateRule`] (the algorithm's hyper-parameters, the tensors it keeps per parameter and
//! its update): `Sgd` is `RuleOptimizer<SgdRule>`, `Adam` is `RuleOptimizer<AdamRule>`, and
//! so on. Each algorithm's file holds only its rule.

mod adadelta;
mod adagrad;
mod adam;
mod clip;
mod group;
mod one_cycle;
mod plateau;
mod rmsprop;
mod rule;
mod rule_optimizer;
mod scheduler;
mod sgd;
mod state;

use anygrad_core::{Error, Result, Tensor};

use crate::module::Parameter;

pub use adadelta::{Adadelta, AdadeltaConfig, AdadeltaRule};
pub use adagrad::{Adagrad, AdagradConfig, AdagradRule};
pub use adam::{Adam, AdamConfig, AdamRule, AdamW, AdamWRule};
pub use clip::{clip_grad_norm_, clip_grad_value_};
pub use group::{split_no_decay, GroupConfig, NamedParameter, ParamGroup};
pub use one_cycle::{AnnealStrategy, OneCycleLR, OneCycleOptions};
pub use plateau::{PlateauMode, PlateauState, ReduceLROnPlateau, ThresholdMode};
pub use rmsprop::{RMSprop, RMSpropConfig, RMSpropRule};
pub use rule::{OperationNames, StateTensor, StateTensors, UpdateRule};
pub use rule_optimizer::RuleOptimizer;
pub use scheduler::{
    CosineAnnealingLR, LambdaLR, LinearLR, LrSchedule, LrScheduler, MultiStepLR, ScheduleState,
    SequentialLR, StepLR,
};
pub use sgd::{Sgd, SgdConfig, SgdRule};
pub(crate) use state::{parse_flag, state_error};
pub use state::{OptimizerState, StateValues, MAX_STEP_COUNT};

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

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

use anygrad_core::{Result, Tensor};

use super::check_non_negative;
use super::group::GroupConfig;
use super::rule::{OperationNames, StateTensor, StateTensors, UpdateRule};
use super::rule_optimizer::RuleOptimizer;
use super::state::StateValues;

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

/// Adadelta, like `torch.optim.Adadelta`, with parameter groups: a [`RuleOptimizer`] over
/// [`AdadeltaRule`].
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
pub type Adadelta = RuleOptimizer<AdadeltaRule>;

/// Per-parameter Adadelta state (the step count is the optimizer's).
pub struct AdadeltaState {
    square_avg: Tensor,
    acc_delta: Tensor,
}

/// Adadelta's update rule: the running averages of squared gradients (`square_avg`) and of
/// squared deltas (`acc_delta`) per parameter.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdadeltaRule;

impl UpdateRule for AdadeltaRule {
    type Config = AdadeltaConfig;
    type State = AdadeltaState;
    const KIND: &'static str = "adadelta";
    const OPERATIONS: OperationNames = OperationNames {
        new: "Adadelta::new",
        add_param_group: "Adadelta::add_param_group",
        step: "Adadelta::step",
    };
    const COUNTS_STEPS: bool = true;
    const STATE_TENSORS: &'static [StateTensor] = &[
        StateTensor {
            name: "square_avg",
            values: StateValues::NonNegative,
            required: true,
        },
        StateTensor {
            name: "acc_delta",
            values: StateValues::NonNegative,
            required: true,
        },
    ];

    fn update(
        param: &Tensor,
        grad: Tensor,
        c: &AdadeltaConfig,
        _step: u64,
        state: Option<AdadeltaState>,
    ) -> Result<Option<AdadeltaState>> {
        let state = match state {
            Some(state) => state,
            None => AdadeltaState {
                square_avg: param.zeros_like()?,
                acc_delta: param.zeros_like()?,
            },
        };
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
        Ok(Some(AdadeltaState {
            square_avg,
            acc_delta,
        }))
    }

    fn save(state: &AdadeltaState) -> Result<Vec<(&'static str, Tensor)>> {
        Ok(vec![
            ("square_avg", state.square_avg.clone()),
            ("acc_delta", state.acc_delta.clone()),
        ])
    }

    fn restore(tensors: &mut StateTensors) -> Result<AdadeltaState> {
        Ok(AdadeltaState {
            square_avg: tensors.required("square_avg")?,
            acc_delta: tensors.required("acc_delta")?,
        })
    }
}

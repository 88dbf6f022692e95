//! RMSprop with `torch.optim.RMSprop`'s exact update and defaults (lr 1e-2, alpha 0.99,
//! eps 1e-8, no weight decay, no momentum, not centered):
//!
//! ```text
//! g = grad + weight_decay * p
//! v = alpha * v + (1 - alpha) * g²
//! centered:  m = alpha * m + (1 - alpha) * g;  avg = √(v - m²) + eps
//! else:      avg = √v + eps
//! momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
//! else:          p = p - lr * g / avg
//! ```
//!
//! Its state per parameter (`step`, `square_avg`, `momentum_buffer`, `grad_avg`) is
//! checkpointed like the other optimizers'.

use anygrad_core::{Result, Tensor};

use super::group::GroupConfig;
use super::rule::{OperationNames, StateTensor, StateTensors, UpdateRule};
use super::rule_optimizer::RuleOptimizer;
use super::state::StateValues;
use super::{check_non_negative, parse_flag};

/// Hyper-parameters of [`RMSprop`] (PyTorch's defaults from [`RMSpropConfig::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RMSpropConfig {
    /// Learning rate (1e-2).
    pub lr: f64,
    /// Smoothing constant of the squared-gradient average (0.99).
    pub alpha: f64,
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Momentum factor (0: no buffer).
    pub momentum: f64,
    /// Normalize by the gradient's estimated variance instead of its second moment.
    pub centered: bool,
}

impl Default for RMSpropConfig {
    fn default() -> Self {
        RMSpropConfig {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
        }
    }
}

impl RMSpropConfig {
    /// Defaults with learning rate `lr`.
    pub fn new(lr: f64) -> RMSpropConfig {
        RMSpropConfig {
            lr,
            ..Default::default()
        }
    }

    /// Set alpha (builder style).
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
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

    /// Set momentum (builder style).
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }

    /// Use the centered variant (builder style).
    pub fn centered(mut self, centered: bool) -> Self {
        self.centered = centered;
        self
    }

    /// Check every hyper-parameter like `torch.optim.RMSprop` does: `lr`, `alpha`, `eps`,
    /// `weight_decay` and `momentum` finite and `>= 0`. On failure returns the name of the
    /// first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        check_non_negative("alpha", self.alpha)?;
        check_non_negative("eps", self.eps)?;
        check_non_negative("weight_decay", self.weight_decay)?;
        check_non_negative("momentum", self.momentum)
    }
}

impl GroupConfig for RMSpropConfig {
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
            ("alpha", self.alpha),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("momentum", self.momentum),
            ("centered", if self.centered { 1.0 } else { 0.0 }),
        ]
    }

    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        Ok(RMSpropConfig {
            lr: read("lr")?,
            alpha: read("alpha")?,
            eps: read("eps")?,
            weight_decay: read("weight_decay")?,
            momentum: read("momentum")?,
            centered: parse_flag("centered", read("centered")?)?,
        })
    }
}

/// RMSprop, like `torch.optim.RMSprop`, with parameter groups: a [`RuleOptimizer`] over
/// [`RMSpropRule`].
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{Optimizer, Parameter, RMSprop, RMSpropConfig};
/// let p = Parameter::new(Tensor::ones(&[2], DType::F32, &Device::Cpu)?);
/// let mut optimizer = RMSprop::new(vec![("p".into(), p.clone())], RMSpropConfig::new(0.01))?;
/// p.tensor().square()?.sum_all()?.backward()?;
/// optimizer.step()?;
/// // First step: v = 0.01 g², so the step is lr · g / (0.1 |g|) = 0.1.
/// assert!((p.tensor().to_vec::<f32>()?[0] - 0.9).abs() < 1e-5);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub type RMSprop = RuleOptimizer<RMSpropRule>;

/// Per-parameter RMSprop state (the step count is the optimizer's).
pub struct RMSpropState {
    square_avg: Tensor,
    momentum_buffer: Option<Tensor>,
    grad_avg: Option<Tensor>,
}

/// RMSprop's update rule: the squared-gradient average `square_avg`, a `momentum_buffer`
/// with a momentum and the gradient average `grad_avg` when centered.
#[derive(Debug, Clone, Copy, Default)]
pub struct RMSpropRule;

impl UpdateRule for RMSpropRule {
    type Config = RMSpropConfig;
    type State = RMSpropState;
    const KIND: &'static str = "rmsprop";
    const OPERATIONS: OperationNames = OperationNames {
        new: "RMSprop::new",
        add_param_group: "RMSprop::add_param_group",
        step: "RMSprop::step",
    };
    const COUNTS_STEPS: bool = true;
    const STATE_TENSORS: &'static [StateTensor] = &[
        StateTensor {
            name: "square_avg",
            values: StateValues::NonNegative,
            required: true,
        },
        StateTensor {
            name: "momentum_buffer",
            values: StateValues::Finite,
            required: false,
        },
        StateTensor {
            name: "grad_avg",
            values: StateValues::Finite,
            required: false,
        },
    ];

    fn update(
        param: &Tensor,
        grad: Tensor,
        c: &RMSpropConfig,
        _step: u64,
        state: Option<RMSpropState>,
    ) -> Result<Option<RMSpropState>> {
        let state = match state {
            Some(state) => state,
            None => RMSpropState {
                square_avg: param.zeros_like()?,
                momentum_buffer: None,
                grad_avg: None,
            },
        };
        let g = if c.weight_decay != 0.0 {
            grad.add(&param.mul_scalar(c.weight_decay)?)?
        } else {
            grad
        };
        let square_avg = state
            .square_avg
            .mul_scalar(c.alpha)?
            .add(&g.square()?.mul_scalar(1.0 - c.alpha)?)?;
        let (avg, grad_avg) = if c.centered {
            let previous = match state.grad_avg {
                Some(previous) => previous,
                None => param.zeros_like()?,
            };
            let grad_avg = previous
                .mul_scalar(c.alpha)?
                .add(&g.mul_scalar(1.0 - c.alpha)?)?;
            let variance = square_avg.sub(&grad_avg.square()?)?;
            (variance.sqrt()?.add_scalar(c.eps)?, Some(grad_avg))
        } else {
            (square_avg.sqrt()?.add_scalar(c.eps)?, state.grad_avg)
        };
        let normalized = g.div(&avg)?;
        let (update, momentum_buffer) = if c.momentum > 0.0 {
            let buffer = match state.momentum_buffer {
                Some(previous) => previous.mul_scalar(c.momentum)?.add(&normalized)?,
                None => normalized,
            };
            (buffer.clone(), Some(buffer))
        } else {
            (normalized, state.momentum_buffer)
        };
        param.assign(&param.sub(&update.mul_scalar(c.lr)?)?)?;
        Ok(Some(RMSpropState {
            square_avg,
            momentum_buffer,
            grad_avg,
        }))
    }

    fn save(state: &RMSpropState) -> Result<Vec<(&'static str, Tensor)>> {
        let mut tensors = vec![("square_avg", state.square_avg.clone())];
        if let Some(buffer) = &state.momentum_buffer {
            tensors.push(("momentum_buffer", buffer.clone()));
        }
        if let Some(grad_avg) = &state.grad_avg {
            tensors.push(("grad_avg", grad_avg.clone()));
        }
        Ok(tensors)
    }

    fn restore(tensors: &mut StateTensors) -> Result<RMSpropState> {
        Ok(RMSpropState {
            square_avg: tensors.required("square_avg")?,
            momentum_buffer: tensors.optional("momentum_buffer"),
            grad_avg: tensors.optional("grad_avg"),
        })
    }
}

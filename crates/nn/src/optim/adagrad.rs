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

use anygrad_core::{Result, Tensor};

use super::check_non_negative;
use super::group::GroupConfig;
use super::rule::{OperationNames, StateTensor, StateTensors, UpdateRule};
use super::rule_optimizer::RuleOptimizer;
use super::state::StateValues;

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

/// Adagrad, like `torch.optim.Adagrad`, with parameter groups: a [`RuleOptimizer`] over
/// [`AdagradRule`].
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
pub type Adagrad = RuleOptimizer<AdagradRule>;

/// Adagrad's update rule: the squared-gradient sum `sum` per parameter, and a step count for
/// the learning-rate decay.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdagradRule;

impl UpdateRule for AdagradRule {
    type Config = AdagradConfig;
    /// The squared-gradient sum.
    type State = Tensor;
    const KIND: &'static str = "adagrad";
    const OPERATIONS: OperationNames = OperationNames {
        new: "Adagrad::new",
        add_param_group: "Adagrad::add_param_group",
        step: "Adagrad::step",
    };
    const COUNTS_STEPS: bool = true;
    const STATE_TENSORS: &'static [StateTensor] = &[StateTensor {
        name: "sum",
        values: StateValues::NonNegative,
        required: true,
    }];

    fn update(
        param: &Tensor,
        grad: Tensor,
        c: &AdagradConfig,
        step: u64,
        sum: Option<Tensor>,
    ) -> Result<Option<Tensor>> {
        let sum = match sum {
            Some(sum) => sum,
            None => param
                .zeros_like()?
                .add_scalar(c.initial_accumulator_value)?,
        };
        let g = if c.weight_decay != 0.0 {
            grad.add(&param.mul_scalar(c.weight_decay)?)?
        } else {
            grad
        };
        let clr = c.lr / (1.0 + (step - 1) as f64 * c.lr_decay);
        let sum = sum.add(&g.square()?)?;
        let std = sum.sqrt()?.add_scalar(c.eps)?;
        param.assign(&param.sub(&g.div(&std)?.mul_scalar(clr)?)?)?;
        Ok(Some(sum))
    }

    fn save(sum: &Tensor) -> Result<Vec<(&'static str, Tensor)>> {
        Ok(vec![("sum", sum.clone())])
    }

    fn restore(tensors: &mut StateTensors) -> Result<Tensor> {
        tensors.required("sum")
    }
}

//! Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay,
//! with `torch.optim.SGD`'s exact update:
//!
//! ```text
//! g = grad + weight_decay * p
//! if momentum != 0:
//!     buf = g                                        (first step)
//!     buf = momentum * buf + (1 - dampening) * g     (later steps)
//!     g = g + momentum * buf   if nesterov   else   buf
//! p = p - lr * g
//! ```

use anygrad_core::{no_grad, Error, Result, Tensor};

use super::{
    adopt_state_tensor, check_known_parameters, check_non_negative, kind_mismatch, state_error,
    Optimizer, OptimizerState,
};
use crate::module::Parameter;

/// Hyper-parameters of [`Sgd`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdConfig {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0 disables the buffer).
    pub momentum: f64,
    /// Dampening of the gradient added to the momentum buffer.
    pub dampening: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum (needs momentum > 0 and dampening 0).
    pub nesterov: bool,
}

impl SgdConfig {
    /// Plain SGD with learning rate `lr`.
    pub fn new(lr: f64) -> SgdConfig {
        SgdConfig {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        }
    }

    /// Set momentum (builder style).
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }

    /// Set dampening (builder style).
    pub fn dampening(mut self, dampening: f64) -> Self {
        self.dampening = dampening;
        self
    }

    /// Set weight decay (builder style).
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Enable Nesterov momentum (builder style).
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.nesterov = nesterov;
        self
    }
}

impl SgdConfig {
    /// Check every hyper-parameter like `torch.optim.SGD` does: `lr`, `momentum` and
    /// `weight_decay` finite and `>= 0`, `dampening` finite, and Nesterov only with a momentum
    /// and zero dampening. On failure returns the name of the first bad value and why.
    pub fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        check_non_negative("lr", self.lr)?;
        check_non_negative("momentum", self.momentum)?;
        check_non_negative("weight_decay", self.weight_decay)?;
        if !self.dampening.is_finite() {
            return Err((
                "dampening",
                format!("is {}, must be finite", self.dampening),
            ));
        }
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err((
                "nesterov",
                "requires a momentum and zero dampening".to_string(),
            ));
        }
        Ok(())
    }
}

/// SGD, like `torch.optim.SGD`.
pub struct Sgd {
    parameters: Vec<(String, Parameter)>,
    config: SgdConfig,
    /// One momentum buffer per parameter, created at its first update.
    momentum_buffers: Vec<Option<Tensor>>,
}

impl Sgd {
    /// An optimizer over named parameter slots (`module.named_parameter_slots()`).
    pub fn new(parameters: Vec<(String, Parameter)>, config: SgdConfig) -> Result<Sgd> {
        if let Err((key, message)) = config.validate() {
            return Err(Error::invalid(
                "Sgd::new",
                format!("`{key}` {message} (hyper-parameters {config:?})"),
            ));
        }
        let count = parameters.len();
        Ok(Sgd {
            parameters,
            config,
            momentum_buffers: vec![None; count],
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &SgdConfig {
        &self.config
    }
}

impl Optimizer for Sgd {
    fn step(&mut self) -> Result<()> {
        let _guard = no_grad();
        let c = self.config;
        for ((_, parameter), buffer) in self.parameters.iter().zip(self.momentum_buffers.iter_mut())
        {
            let param = parameter.tensor();
            let Some(grad) = param.grad() else { continue };
            let mut g = if c.weight_decay != 0.0 {
                grad.add(&param.mul_scalar(c.weight_decay)?)?
            } else {
                grad
            };
            if c.momentum != 0.0 {
                let next = match buffer.as_ref() {
                    None => g.copy()?,
                    Some(previous) => previous
                        .mul_scalar(c.momentum)?
                        .add(&g.mul_scalar(1.0 - c.dampening)?)?,
                };
                g = if c.nesterov {
                    g.add(&next.mul_scalar(c.momentum)?)?
                } else {
                    next.clone()
                };
                *buffer = Some(next);
            }
            param.assign(&param.sub(&g.mul_scalar(c.lr)?)?)?;
        }
        Ok(())
    }

    fn parameters(&self) -> &[(String, Parameter)] {
        &self.parameters
    }

    fn learning_rate(&self) -> f64 {
        self.config.lr
    }

    fn set_learning_rate(&mut self, learning_rate: f64) {
        self.config.lr = learning_rate;
    }

    fn state_dict(&self) -> Result<OptimizerState> {
        let mut state = OptimizerState {
            kind: "sgd".into(),
            ..Default::default()
        };
        let c = self.config;
        for (key, value) in [
            ("lr", c.lr),
            ("momentum", c.momentum),
            ("dampening", c.dampening),
            ("weight_decay", c.weight_decay),
            ("nesterov", if c.nesterov { 1.0 } else { 0.0 }),
        ] {
            state.scalars.insert(key.into(), value);
        }
        for ((name, _), buffer) in self.parameters.iter().zip(&self.momentum_buffers) {
            if let Some(buffer) = buffer {
                state
                    .tensors
                    .insert(format!("state.{name}.momentum_buffer"), buffer.clone());
            }
        }
        Ok(state)
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        if state.kind != "sgd" {
            return Err(kind_mismatch("sgd", &state.kind));
        }
        check_known_parameters(state, &self.parameters)?;
        let config = SgdConfig {
            lr: state.scalar("lr")?,
            momentum: state.scalar("momentum")?,
            dampening: state.scalar("dampening")?,
            weight_decay: state.scalar("weight_decay")?,
            nesterov: state.flag("nesterov")?,
        };
        config
            .validate()
            .map_err(|(key, message)| state_error(key, &message))?;
        let mut buffers = Vec::with_capacity(self.parameters.len());
        for (name, parameter) in &self.parameters {
            let key = format!("state.{name}.momentum_buffer");
            buffers.push(if state.tensors.contains_key(&key) {
                Some(adopt_state_tensor(state, &key, parameter)?)
            } else {
                None
            });
        }
        self.config = config;
        self.momentum_buffers = buffers;
        Ok(())
    }
}

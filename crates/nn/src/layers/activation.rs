//! Parameter-free layers: activations (`ReLU`, `GELU`, `SiLU`, `Sigmoid`, `Tanh`,
//! `LeakyReLU`, `Softmax`, `LogSoftmax`, `Hardswish`, `ReLU6`, `ELU`), `Identity`, `Flatten` and `Dropout`.

use anygrad_core::{Error, Result, Tensor};

use crate::module::{Kind, Module, Parameter, TrainingFlag};

macro_rules! stateless_activation {
    ($($name:ident => $method:ident, $doc:literal;)*) => {
        $(
            #[doc = $doc]
            #[derive(Debug, Clone, Copy, Default)]
            pub struct $name;

            impl Module for $name {
                fn forward(&self, x: &Tensor) -> Result<Tensor> {
                    x.$method()
                }
                fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
            }
        )*
    };
}

stateless_activation! {
    ReLU => relu, "`max(x, 0)`, like `torch.nn.ReLU`.";
    SiLU => silu, "`x * sigmoid(x)`, like `torch.nn.SiLU`.";
    Sigmoid => sigmoid, "The logistic function, like `torch.nn.Sigmoid`.";
    Tanh => tanh, "The hyperbolic tangent, like `torch.nn.Tanh`.";
}

/// GELU, like `torch.nn.GELU`: the exact erf form by default, or the tanh approximation
/// (`approximate='tanh'`).
#[derive(Debug, Clone, Copy, Default)]
pub struct GELU {
    /// Use `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))` instead of the erf form.
    pub tanh_approximation: bool,
}

impl Module for GELU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if self.tanh_approximation {
            x.gelu_tanh()
        } else {
            x.gelu()
        }
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// `x` for `x >= 0`, `negative_slope * x` otherwise, like `torch.nn.LeakyReLU`.
#[derive(Debug, Clone, Copy)]
pub struct LeakyReLU {
    /// Slope for negative inputs (PyTorch's default 0.01).
    pub negative_slope: f64,
}

impl Default for LeakyReLU {
    fn default() -> Self {
        LeakyReLU {
            negative_slope: 0.01,
        }
    }
}

impl Module for LeakyReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Tensor::where_(&x.ge_scalar(0.0)?, x, &x.mul_scalar(self.negative_slope)?)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// `x · relu6(x + 3) / 6`, like `torch.nn.Hardswish`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hardswish;

impl Module for Hardswish {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul(&x.add_scalar(3.0)?.clamp(0.0, 6.0)?.div_scalar(6.0)?)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// `min(max(x, 0), 6)`, like `torch.nn.ReLU6`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReLU6;

impl Module for ReLU6 {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.clamp(0.0, 6.0)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// `x` for `x > 0`, `alpha · (eˣ - 1)` otherwise, like `torch.nn.ELU`.
#[derive(Debug, Clone, Copy)]
pub struct ELU {
    /// Scale of the negative branch (PyTorch's default 1.0).
    pub alpha: f64,
}

impl Default for ELU {
    fn default() -> Self {
        ELU { alpha: 1.0 }
    }
}

impl Module for ELU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // exp of min(x, 0): the unselected branch stays finite, so its zero gradient is not
        // 0 · inf = NaN for large positive inputs.
        let negative = x
            .minimum_scalar(0.0)?
            .exp()?
            .sub_scalar(1.0)?
            .mul_scalar(self.alpha)?;
        Tensor::where_(&x.gt_scalar(0.0)?, x, &negative)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Softmax along `dim`, like `torch.nn.Softmax(dim)`.
#[derive(Debug, Clone, Copy)]
pub struct Softmax {
    /// The dim that sums to one (negative counts from the end).
    pub dim: isize,
}

impl Module for Softmax {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.softmax(self.dim)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Log-softmax along `dim`, like `torch.nn.LogSoftmax(dim)`.
#[derive(Debug, Clone, Copy)]
pub struct LogSoftmax {
    /// The dim normalized over.
    pub dim: isize,
}

impl Module for LogSoftmax {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.log_softmax(self.dim)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Returns its input.
#[derive(Debug, Clone, Copy, Default)]
pub struct Identity;

impl Module for Identity {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Flattens dims `start_dim..=end_dim` into one, like `torch.nn.Flatten` (default 1..=-1).
#[derive(Debug, Clone, Copy)]
pub struct Flatten {
    /// First dim flattened.
    pub start_dim: isize,
    /// Last dim flattened (inclusive; negative counts from the end).
    pub end_dim: isize,
}

impl Default for Flatten {
    fn default() -> Self {
        Flatten {
            start_dim: 1,
            end_dim: -1,
        }
    }
}

impl Module for Flatten {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.flatten(self.start_dim, self.end_dim)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Randomly zeroes elements with probability `p` during training and scales the rest by
/// `1 / (1 - p)`; the identity in eval mode. Like `torch.nn.Dropout`. The mask comes from
/// `Tensor::rand` (seeded by `anygrad_core::manual_seed`).
#[derive(Debug)]
pub struct Dropout {
    /// Probability of zeroing an element.
    pub p: f64,
    training: TrainingFlag,
}

impl Dropout {
    /// Dropout with probability `p` (must be in `[0, 1]`).
    pub fn new(p: f64) -> Result<Dropout> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "Dropout",
                format!("probability must be in [0, 1], got {p}"),
            ));
        }
        Ok(Dropout {
            p,
            training: TrainingFlag::default(),
        })
    }
}

impl Module for Dropout {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if !self.training.get() || self.p == 0.0 {
            return Ok(x.clone());
        }
        if self.p >= 1.0 {
            return x.mul_scalar(0.0);
        }
        let keep = Tensor::rand(x.shape(), x.dtype(), x.device())?.ge_scalar(self.p)?;
        let mask = keep.to_dtype(x.dtype())?.mul_scalar(1.0 / (1.0 - self.p))?;
        x.mul(&mask)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
    fn set_training(&self, training: bool) {
        self.training.set(training)
    }
    fn is_training(&self) -> bool {
        self.training.get()
    }
}

/// Channel dropout, like `torch.nn.Dropout2d`: in training mode each whole channel of `[n,
/// c, h, w]` is zeroed with probability `p` and the kept ones scaled by `1 / (1 - p)`; the
/// identity in eval mode (core's `dropout2d`, seeded by `anygrad_core::manual_seed`).
#[derive(Debug)]
pub struct Dropout2d {
    /// Probability of zeroing a channel.
    pub p: f64,
    training: TrainingFlag,
}

impl Dropout2d {
    /// Channel dropout with probability `p` (must be in `[0, 1]`).
    pub fn new(p: f64) -> Result<Dropout2d> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "Dropout2d",
                format!("probability must be in [0, 1], got {p}"),
            ));
        }
        Ok(Dropout2d {
            p,
            training: TrainingFlag::default(),
        })
    }
}

impl Module for Dropout2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.dropout2d(self.p, self.training.get())
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
    fn set_training(&self, training: bool) {
        self.training.set(training)
    }
    fn is_training(&self) -> bool {
        self.training.get()
    }
}

//! Weight initialization, like `torch.nn.init`. Each function draws new values with the
//! global generator (`anygrad_core::manual_seed`) on the tensor's device and copies them into
//! the tensor in place (`assign`), outside autograd. Pass `parameter.tensor()` or any tensor.
//!
//! Fans follow PyTorch: for a weight `[out, in, k...]`, `fan_in = in * prod(k)` and
//! `fan_out = out * prod(k)`.

use anygrad_core::{Error, Result, Tensor};

/// Which fan a Kaiming initialization preserves the variance of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FanMode {
    /// Preserve the forward pass's variance (PyTorch's default).
    FanIn,
    /// Preserve the backward pass's variance (torchvision's ResNet convolutions).
    FanOut,
}

/// The non-linearity after a layer, which sets the recommended gain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Nonlinearity {
    /// Identity / linear / conv / sigmoid: gain 1.
    Linear,
    /// Sigmoid: gain 1.
    Sigmoid,
    /// Tanh: gain 5/3.
    Tanh,
    /// ReLU: gain √2.
    Relu,
    /// Leaky ReLU with this negative slope: gain √(2 / (1 + slope²)).
    LeakyRelu(f64),
}

/// The recommended gain for a non-linearity (`torch.nn.init.calculate_gain`).
pub fn calculate_gain(nonlinearity: Nonlinearity) -> f64 {
    match nonlinearity {
        Nonlinearity::Linear | Nonlinearity::Sigmoid => 1.0,
        Nonlinearity::Tanh => 5.0 / 3.0,
        Nonlinearity::Relu => 2f64.sqrt(),
        Nonlinearity::LeakyRelu(slope) => (2.0 / (1.0 + slope * slope)).sqrt(),
    }
}

/// `(fan_in, fan_out)` of a weight tensor (needs at least 2 dims).
pub fn fans(tensor: &Tensor) -> Result<(usize, usize)> {
    let shape = tensor.shape();
    if shape.len() < 2 {
        return Err(Error::InvalidShape {
            op: "init::fans",
            shape: shape.to_vec(),
            message: "fan in and fan out need a tensor with at least 2 dims".into(),
        });
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

fn fill_with(tensor: &Tensor, values: Tensor) -> Result<()> {
    let _guard = anygrad_core::no_grad();
    tensor.assign(&values.to_dtype(tensor.dtype())?)
}

/// Fill with values drawn uniformly from `[low, high)`.
pub fn uniform_(tensor: &Tensor, low: f64, high: f64) -> Result<()> {
    let draw_dtype = draw_dtype(tensor)?;
    fill_with(
        tensor,
        Tensor::rand_uniform(tensor.shape(), low, high, draw_dtype, tensor.device())?,
    )
}

/// Fill with values drawn from `N(mean, std²)`.
pub fn normal_(tensor: &Tensor, mean: f64, std: f64) -> Result<()> {
    let draw_dtype = draw_dtype(tensor)?;
    let values = Tensor::randn(tensor.shape(), draw_dtype, tensor.device())?
        .mul_scalar(std)?
        .add_scalar(mean)?;
    fill_with(tensor, values)
}

/// Fill with a constant.
pub fn constant_(tensor: &Tensor, value: f64) -> Result<()> {
    fill_with(
        tensor,
        Tensor::full(tensor.shape(), value, tensor.dtype(), tensor.device())?,
    )
}

/// Fill with zeros.
pub fn zeros_(tensor: &Tensor) -> Result<()> {
    constant_(tensor, 0.0)
}

/// Fill with ones.
pub fn ones_(tensor: &Tensor) -> Result<()> {
    constant_(tensor, 1.0)
}

/// Kaiming (He) uniform: `U(-b, b)` with `b = gain * √(3 / fan)`.
pub fn kaiming_uniform_(tensor: &Tensor, mode: FanMode, nonlinearity: Nonlinearity) -> Result<()> {
    let std = kaiming_std(tensor, mode, nonlinearity)?;
    let bound = 3f64.sqrt() * std;
    uniform_(tensor, -bound, bound)
}

/// Kaiming (He) normal: `N(0, std²)` with `std = gain / √fan`.
pub fn kaiming_normal_(tensor: &Tensor, mode: FanMode, nonlinearity: Nonlinearity) -> Result<()> {
    let std = kaiming_std(tensor, mode, nonlinearity)?;
    normal_(tensor, 0.0, std)
}

/// Xavier (Glorot) uniform: `U(-b, b)` with `b = gain * √(6 / (fan_in + fan_out))`.
pub fn xavier_uniform_(tensor: &Tensor, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = fans(tensor)?;
    let bound = gain * (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
    uniform_(tensor, -bound, bound)
}

/// Xavier (Glorot) normal: `N(0, std²)` with `std = gain * √(2 / (fan_in + fan_out))`.
pub fn xavier_normal_(tensor: &Tensor, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = fans(tensor)?;
    normal_(
        tensor,
        0.0,
        gain * (2.0 / (fan_in + fan_out).max(1) as f64).sqrt(),
    )
}

/// PyTorch's default for `Linear` and `Conv2d` weights: `kaiming_uniform_(a = √5)`, which
/// works out to `U(-1/√fan_in, 1/√fan_in)`.
pub fn default_weight_(tensor: &Tensor) -> Result<()> {
    kaiming_uniform_(tensor, FanMode::FanIn, Nonlinearity::LeakyRelu(5f64.sqrt()))
}

/// PyTorch's default for `Linear` and `Conv2d` biases: `U(-1/√fan_in, 1/√fan_in)`.
pub fn default_bias_(bias: &Tensor, fan_in: usize) -> Result<()> {
    let bound = if fan_in > 0 {
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.0
    };
    uniform_(bias, -bound, bound)
}

fn kaiming_std(tensor: &Tensor, mode: FanMode, nonlinearity: Nonlinearity) -> Result<f64> {
    let (fan_in, fan_out) = fans(tensor)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    if fan == 0 {
        return Err(Error::invalid(
            "init::kaiming",
            "cannot initialize a tensor with a zero fan",
        ));
    }
    Ok(calculate_gain(nonlinearity) / (fan as f64).sqrt())
}

/// Random initialization draws in the tensor's own (float) dtype; integer tensors are refused.
fn draw_dtype(tensor: &Tensor) -> Result<anygrad_core::DType> {
    if tensor.dtype().is_float() {
        Ok(tensor.dtype())
    } else {
        Err(Error::invalid(
            "init",
            format!(
                "random initialization needs a float tensor, got {}",
                tensor.dtype()
            ),
        ))
    }
}

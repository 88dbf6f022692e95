//! `Linear`: `y = x Wᵀ + b` over the last dim, with PyTorch's parameter layout
//! (`weight [out, in]`, `bias [out]`) and default initialization.

use anygrad_core::{DType, Device, Result, Tensor};

use crate::init;
use crate::module::{join_name, Kind, Module, Parameter};

/// A fully connected layer, like `torch.nn.Linear`.
#[derive(Debug, Clone)]
pub struct Linear {
    /// `[out_features, in_features]`.
    pub weight: Parameter,
    /// `[out_features]`, when the layer has a bias.
    pub bias: Option<Parameter>,
}

impl Linear {
    /// A layer with PyTorch's default initialization (`U(-1/√in, 1/√in)` for weight and
    /// bias), in f32 on `device`.
    pub fn new(
        in_features: usize,
        out_features: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Linear> {
        let weight = Tensor::zeros(&[out_features, in_features], DType::F32, device)?;
        init::default_weight_(&weight)?;
        let bias = if bias {
            let b = Tensor::zeros(&[out_features], DType::F32, device)?;
            init::default_bias_(&b, in_features)?;
            Some(Parameter::new(b))
        } else {
            None
        };
        Ok(Linear {
            weight: Parameter::new(weight),
            bias,
        })
    }

    /// A layer from given tensors (`weight [out, in]`, `bias [out]`).
    pub fn from_tensors(weight: Tensor, bias: Option<Tensor>) -> Linear {
        Linear {
            weight: Parameter::new(weight),
            bias: bias.map(Parameter::new),
        }
    }

    /// `in_features`.
    pub fn in_features(&self) -> usize {
        self.weight.shape().get(1).copied().unwrap_or(0)
    }

    /// `out_features`.
    pub fn out_features(&self) -> usize {
        self.weight.shape().first().copied().unwrap_or(0)
    }
}

impl Module for Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let bias = self.bias.as_ref().map(Parameter::tensor);
        x.linear(&self.weight.tensor(), bias.as_ref())
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&join_name(prefix, "weight"), &self.weight, Kind::Parameter);
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
    }
}

//! `Conv2d`: 2-D convolution with PyTorch's parameter layout (`weight [out, in / groups, kh,
//! kw]`, `bias [out]`), options (stride, padding, dilation, groups, bias) and default
//! initialization. The maths is core's `conv2d` (a direct primitive for one group, a composite
//! for grouped convolutions).

use anygrad_core::{Conv2dParams, DType, Device, Error, Result, Tensor};

use crate::init;
use crate::module::{join_name, Kind, Module, Parameter};

/// Options of a [`Conv2d`] (PyTorch's defaults: stride 1, padding 0, dilation 1, one group,
/// with bias). Builder-style: `Conv2dOptions::default().stride(2).padding(1).bias(false)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv2dOptions {
    /// Step between windows (rows, cols).
    pub stride: (usize, usize),
    /// Zero padding on each side (rows, cols).
    pub padding: (usize, usize),
    /// Spacing between kernel taps (rows, cols).
    pub dilation: (usize, usize),
    /// Number of channel groups (`in` and `out` must be divisible by it).
    pub groups: usize,
    /// Whether the layer adds a learnable bias.
    pub bias: bool,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
            bias: true,
        }
    }
}

impl Conv2dOptions {
    /// Same stride in both dims.
    pub fn stride(mut self, stride: usize) -> Self {
        self.stride = (stride, stride);
        self
    }

    /// Same padding in both dims.
    pub fn padding(mut self, padding: usize) -> Self {
        self.padding = (padding, padding);
        self
    }

    /// Same dilation in both dims.
    pub fn dilation(mut self, dilation: usize) -> Self {
        self.dilation = (dilation, dilation);
        self
    }

    /// Number of groups.
    pub fn groups(mut self, groups: usize) -> Self {
        self.groups = groups;
        self
    }

    /// With or without bias.
    pub fn bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }

    /// The functional parameters (`Tensor::conv2d`'s) of these options.
    pub fn params(&self) -> Conv2dParams {
        Conv2dParams {
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            groups: self.groups,
        }
    }
}

/// A 2-D convolution layer over `[n, c, h, w]`, like `torch.nn.Conv2d`.
#[derive(Debug, Clone)]
pub struct Conv2d {
    /// `[out_channels, in_channels / groups, kh, kw]`.
    pub weight: Parameter,
    /// `[out_channels]`, when the layer has a bias.
    pub bias: Option<Parameter>,
    /// Stride, padding, dilation, groups.
    pub options: Conv2dOptions,
}

impl Conv2d {
    /// A layer with PyTorch's default initialization (`U(-1/√fan_in, 1/√fan_in)`), f32 on
    /// `device`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: (usize, usize),
        options: Conv2dOptions,
        device: &Device,
    ) -> Result<Conv2d> {
        let groups = options.groups;
        if groups == 0
            || !in_channels.is_multiple_of(groups)
            || !out_channels.is_multiple_of(groups)
        {
            return Err(Error::invalid(
                "Conv2d::new",
                format!("in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by groups ({groups})"),
            ));
        }
        let shape = [
            out_channels,
            in_channels / groups,
            kernel_size.0,
            kernel_size.1,
        ];
        let weight = Tensor::zeros(&shape, DType::F32, device)?;
        init::default_weight_(&weight)?;
        let bias = if options.bias {
            let b = Tensor::zeros(&[out_channels], DType::F32, device)?;
            init::default_bias_(&b, shape[1] * shape[2] * shape[3])?;
            Some(Parameter::new(b))
        } else {
            None
        };
        Ok(Conv2d {
            weight: Parameter::new(weight),
            bias,
            options,
        })
    }

    /// A square-kernel layer (`kernel_size x kernel_size`).
    pub fn square(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        options: Conv2dOptions,
        device: &Device,
    ) -> Result<Conv2d> {
        Conv2d::new(
            in_channels,
            out_channels,
            (kernel_size, kernel_size),
            options,
            device,
        )
    }

    /// A layer from given tensors (`options.bias` is taken from whether `bias` is given).
    pub fn from_tensors(weight: Tensor, bias: Option<Tensor>, options: Conv2dOptions) -> Conv2d {
        let options = options.bias(bias.is_some());
        Conv2d {
            weight: Parameter::new(weight),
            bias: bias.map(Parameter::new),
            options,
        }
    }
}

impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let bias = self.bias.as_ref().map(|b| b.tensor());
        x.conv2d(&self.weight.tensor(), bias.as_ref(), self.options.params())
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&join_name(prefix, "weight"), &self.weight, Kind::Parameter);
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
    }
}

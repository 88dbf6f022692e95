//! The convolution layers beside `Conv2d`: `ConvTranspose2d` (the learned upsampling of
//! decoders and segmentation heads) and `Conv1d` (sequences and signals), with PyTorch's
//! constructor arguments, parameter names and layouts (`ConvTranspose2d.weight [in, out /
//! groups, kh, kw]`, `Conv1d.weight [out, in / groups, k]`) and default initialization, so
//! PyTorch state dicts load. The maths is core's `conv_transpose2d` and `conv1d`.

use anygrad_core::{Conv1dParams, ConvTranspose2dParams, DType, Device, Error, Result, Tensor};

use crate::init;
use crate::module::{join_name, Kind, Module, Parameter};

/// Options of a [`ConvTranspose2d`] (PyTorch's defaults: stride 1, padding 0, output padding
/// 0, dilation 1, one group, with bias). Builder-style:
/// `ConvTranspose2dOptions::default().stride(2).padding(1).output_padding(1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvTranspose2dOptions {
    /// Stride, padding, output padding, dilation and groups.
    pub params: ConvTranspose2dParams,
    /// Whether the layer adds a learnable bias.
    pub bias: bool,
}

impl Default for ConvTranspose2dOptions {
    fn default() -> Self {
        ConvTranspose2dOptions {
            params: ConvTranspose2dParams::default(),
            bias: true,
        }
    }
}

impl ConvTranspose2dOptions {
    /// Same stride in both dims.
    pub fn stride(mut self, stride: usize) -> Self {
        self.params.stride = (stride, stride);
        self
    }

    /// Same padding in both dims.
    pub fn padding(mut self, padding: usize) -> Self {
        self.params.padding = (padding, padding);
        self
    }

    /// Same output padding in both dims.
    pub fn output_padding(mut self, output_padding: usize) -> Self {
        self.params.output_padding = (output_padding, output_padding);
        self
    }

    /// Same dilation in both dims.
    pub fn dilation(mut self, dilation: usize) -> Self {
        self.params.dilation = (dilation, dilation);
        self
    }

    /// Number of groups.
    pub fn groups(mut self, groups: usize) -> Self {
        self.params.groups = groups;
        self
    }

    /// With or without bias.
    pub fn bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }
}

/// Check that both channel counts divide into `groups`.
fn check_groups(
    op: &'static str,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
) -> Result<()> {
    if groups == 0 || !in_channels.is_multiple_of(groups) || !out_channels.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!("in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by groups ({groups})"),
        ));
    }
    Ok(())
}

/// A weight of `shape` and an optional bias `[bias_len]` with PyTorch's default
/// initialization (the fan-in is `shape[1] * kernel elements`, as PyTorch computes it).
fn default_parameters(
    shape: &[usize],
    bias_len: Option<usize>,
    device: &Device,
) -> Result<(Parameter, Option<Parameter>)> {
    let weight = Tensor::zeros(shape, DType::F32, device)?;
    init::default_weight_(&weight)?;
    let bias = match bias_len {
        Some(len) => {
            let b = Tensor::zeros(&[len], DType::F32, device)?;
            init::default_bias_(&b, shape[1..].iter().product())?;
            Some(Parameter::new(b))
        }
        None => None,
    };
    Ok((Parameter::new(weight), bias))
}

/// A transposed 2-D convolution over `[n, in, h, w]`, like `torch.nn.ConvTranspose2d`.
#[derive(Debug, Clone)]
pub struct ConvTranspose2d {
    /// `[in_channels, out_channels / groups, kh, kw]`.
    pub weight: Parameter,
    /// `[out_channels]`, when the layer has a bias.
    pub bias: Option<Parameter>,
    /// Stride, padding, output padding, dilation, groups.
    pub options: ConvTranspose2dOptions,
}

impl ConvTranspose2d {
    /// A layer with PyTorch's default initialization, f32 on `device`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: (usize, usize),
        options: ConvTranspose2dOptions,
        device: &Device,
    ) -> Result<ConvTranspose2d> {
        let groups = options.params.groups;
        check_groups("ConvTranspose2d::new", in_channels, out_channels, groups)?;
        let shape = [
            in_channels,
            out_channels / groups,
            kernel_size.0,
            kernel_size.1,
        ];
        let (weight, bias) =
            default_parameters(&shape, options.bias.then_some(out_channels), device)?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            options,
        })
    }

    /// A square-kernel layer.
    pub fn square(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        options: ConvTranspose2dOptions,
        device: &Device,
    ) -> Result<ConvTranspose2d> {
        ConvTranspose2d::new(
            in_channels,
            out_channels,
            (kernel_size, kernel_size),
            options,
            device,
        )
    }

    /// A layer from given tensors (`options.bias` is taken from whether `bias` is given).
    pub fn from_tensors(
        weight: Tensor,
        bias: Option<Tensor>,
        options: ConvTranspose2dOptions,
    ) -> ConvTranspose2d {
        let options = options.bias(bias.is_some());
        ConvTranspose2d {
            weight: Parameter::new(weight),
            bias: bias.map(Parameter::new),
            options,
        }
    }
}

impl Module for ConvTranspose2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let bias = self.bias.as_ref().map(|b| b.tensor());
        x.conv_transpose2d(&self.weight.tensor(), bias.as_ref(), self.options.params)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&join_name(prefix, "weight"), &self.weight, Kind::Parameter);
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
    }
}

/// A 1-D convolution over `[n, c, l]`, like `torch.nn.Conv1d`.
#[derive(Debug, Clone)]
pub struct Conv1d {
    /// `[out_channels, in_channels / groups, k]`.
    pub weight: Parameter,
    /// `[out_channels]`, when the layer has a bias.
    pub bias: Option<Parameter>,
    /// Stride, padding, dilation, groups.
    pub params: Conv1dParams,
}

impl Conv1d {
    /// A layer with PyTorch's default initialization (with bias when `bias`), f32 on
    /// `device`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        params: Conv1dParams,
        bias: bool,
        device: &Device,
    ) -> Result<Conv1d> {
        check_groups("Conv1d::new", in_channels, out_channels, params.groups)?;
        let shape = [out_channels, in_channels / params.groups, kernel_size];
        let (weight, bias) = default_parameters(&shape, bias.then_some(out_channels), device)?;
        Ok(Conv1d {
            weight,
            bias,
            params,
        })
    }

    /// A layer from given tensors.
    pub fn from_tensors(weight: Tensor, bias: Option<Tensor>, params: Conv1dParams) -> Conv1d {
        Conv1d {
            weight: Parameter::new(weight),
            bias: bias.map(Parameter::new),
            params,
        }
    }
}

impl Module for Conv1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let bias = self.bias.as_ref().map(|b| b.tensor());
        x.conv1d(&self.weight.tensor(), bias.as_ref(), self.params)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&join_name(prefix, "weight"), &self.weight, Kind::Parameter);
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
    }
}

//! The backend contract's `Convolution` family: 2-D convolutions: the forward, the forward with its
//! epilogue, and both gradients; the depthwise convolution (groups == channels) and both of its
//! gradients. The rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::geometry::Conv2dParams;
use crate::layout::{Layout, MemoryFormat};
use crate::op::EpilogueActivation;

/// The tensors and activation of a convolution's epilogue (`Convolution::conv2d_epilogue`),
/// each tensor with its view.
pub(crate) struct Epilogue<'a, S> {
    /// Per output channel multiplier, F32 `[o]`.
    pub scale: (&'a S, &'a Layout),
    /// Per output channel offset, F32 `[o]`.
    pub shift: (&'a S, &'a Layout),
    /// Added after the shift: the output's shape, the input's dtype.
    pub residual: Option<(&'a S, &'a Layout)>,
    /// Applied last.
    pub activation: EpilogueActivation,
}

/// 2-D convolutions: the forward, the forward with its epilogue, and both gradients; the
/// depthwise convolution and both of its gradients.
pub(crate) trait Convolution: BackendStorage {
    /// 2-D convolution with one group and no bias: input `[n, c, h, w]` and weight
    /// `[o, c, kh, kw]` (any strides, one dtype); output contiguous `[n, o, oh, ow]`. Float
    /// dtypes only. The geometry is `geometry::Conv2dShape`, the same on every backend.
    fn conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self>;

    /// conv2d followed by its epilogue, in one pass where the backend can:
    /// `activation(conv2d(x, weight)[ni, co, ..] * scale[co] + shift[co] + residual[ni, co, ..])`
    /// computed in f32 and rounded once to the convolution's dtype. `scale` and `shift` are
    /// F32 `[o]` views; `residual` (optional) has the output's shape and the input's dtype.
    /// Same rules as `conv2d`; the output is dense in `format` (`MemoryFormat::layout` of
    /// the output shape). Inference only: autograd never records it (`Tensor::conv2d_fused`
    /// runs the composite when a gradient is needed).
    fn conv2d_epilogue(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: &Epilogue<'_, Self>,
        format: MemoryFormat,
    ) -> Result<Self>;

    /// The memory format this backend writes `conv2d_epilogue`'s output in fastest for
    /// these operands: channels-last where the GPU's tensor-core convolutions run it (the
    /// next such convolution then reads it without a copy), contiguous everywhere else.
    fn conv2d_epilogue_format(
        &self,
        layout: &Layout,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> MemoryFormat;

    /// The convolution's input gradient (the transposed convolution): `self` is the output
    /// gradient, which must have the forward output's shape, `weight` the forward's weight;
    /// returns contiguous `[n, c, h, w]` of `input_shape`.
    fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self>;

    /// The convolution's weight gradient: `self` is the forward's input `[n, c, h, w]`,
    /// `grad` the output gradient (the forward output's shape); returns contiguous
    /// `[o, c, kh, kw]` of `weight_shape`.
    fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self>;

    /// Depthwise 2-D convolution without bias: input `[n, c, h, w]` and weight
    /// `[c * multiplier, 1, kh, kw]` (any strides, one dtype), `params.groups == c`; output
    /// channel `o` reads input channel `o / multiplier`. Output contiguous
    /// `[n, c * multiplier, oh, ow]`. Float dtypes only, accumulated in f32 (f64 for F64).
    /// The geometry is `geometry::Conv2dShape::depthwise`, the same on every backend.
    fn depthwise_conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self>;

    /// The depthwise convolution's input gradient: `self` is the output gradient, which must
    /// have the forward output's shape, `weight` the forward's weight; returns contiguous
    /// `[n, c, h, w]` of `input_shape`.
    fn depthwise_conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self>;

    /// The depthwise convolution's weight gradient: `self` is the forward's input
    /// `[n, c, h, w]`, `grad` the output gradient (the forward output's shape); returns
    /// contiguous `[c * multiplier, 1, kh, kw]` of `weight_shape`.
    fn depthwise_conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self>;
}

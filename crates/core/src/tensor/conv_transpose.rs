//! The transposed 2-D convolution and the 1-D convolution, both built on the convolution
//! primitives without a kernel of their own. `conv_transpose2d` is the adjoint of `conv2d`:
//! its forward is the `conv2d_backward_input` primitive (the weight `[in, out / groups, kh,
//! kw]` of PyTorch's layout is exactly the adjoint convolution's `[o, c, kh, kw]`), recorded
//! as `GradFn::ConvTranspose2d`, whose input gradient is a `conv2d` forward and whose weight
//! gradient is `conv2d_backward_weight` with the roles of input and output gradient swapped.
//! Grouped transposed convolutions run one group at a time and concatenate. `conv1d` is a
//! `conv2d` over a height of one.

use super::Tensor;
use crate::autograd::GradFn;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Window};

/// Options of [`Tensor::conv_transpose2d`], like `torch.nn.functional.conv_transpose2d`'s
/// (defaults: stride 1, padding 0, output padding 0, dilation 1, one group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvTranspose2dParams {
    /// Step of the adjoint convolution (the upsampling factor), (rows, cols).
    pub stride: (usize, usize),
    /// `dilation * (kernel - 1) - padding` zeros are added around the input, (rows, cols).
    pub padding: (usize, usize),
    /// Extra rows/cols added on one side of the output (smaller than the stride or the
    /// dilation), to pick among the input sizes a strided convolution maps to one size.
    pub output_padding: (usize, usize),
    /// Spacing between kernel taps, (rows, cols).
    pub dilation: (usize, usize),
    /// Number of channel groups.
    pub groups: usize,
}

impl Default for ConvTranspose2dParams {
    fn default() -> Self {
        ConvTranspose2dParams {
            stride: (1, 1),
            padding: (0, 0),
            output_padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

/// Options of [`Tensor::conv1d`], like `torch.nn.functional.conv1d`'s (defaults: stride 1,
/// padding 0, dilation 1, one group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv1dParams {
    /// Step between windows.
    pub stride: usize,
    /// Zero padding on each side.
    pub padding: usize,
    /// Spacing between kernel taps.
    pub dilation: usize,
    /// Number of channel groups.
    pub groups: usize,
}

impl Default for Conv1dParams {
    fn default() -> Self {
        Conv1dParams {
            stride: 1,
            padding: 0,
            dilation: 1,
            groups: 1,
        }
    }
}

/// One axis of a transposed convolution's output:
/// `(in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1`, or `None`
/// when that is not positive.
fn transposed_span(
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    output_padding: usize,
) -> Option<usize> {
    let span = (size as i64 - 1) * stride as i64 - 2 * padding as i64
        + dilation as i64 * (kernel as i64 - 1)
        + output_padding as i64
        + 1;
    (span > 0).then_some(span as usize)
}

impl Tensor {
    /// Transposed 2-D convolution of `[n, in, h, w]` by `weight [in, out / groups, kh, kw]`
    /// plus an optional `bias [out]`, like `torch.nn.functional.conv_transpose2d`: the output
    /// is `[n, out, (h - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1,
    /// ...]`. Float dtypes only; differentiable in the input, weight and bias.
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        params: ConvTranspose2dParams,
    ) -> Result<Tensor> {
        if let Some(low) = crate::amp::autocast_dtype() {
            if (self.dtype() != low || weight.dtype() != low)
                && self.dtype().is_float()
                && weight.dtype().is_float()
            {
                let _outside = crate::amp::suspend();
                let cast = |t: &Tensor| crate::tensor::autocast_cache::autocast_input(t, low);
                let bias = bias.map(cast).transpose()?;
                return cast(self)?.conv_transpose2d(&cast(weight)?, bias.as_ref(), params);
            }
        }
        const OP: &str = "conv_transpose2d";
        self.same_device(OP, weight)?;
        self.same_dtype(OP, weight)?;
        let shape_error = |reason: String| Error::ShapeMismatch {
            op: OP,
            lhs: self.shape().to_vec(),
            rhs: weight.shape().to_vec(),
            reason,
        };
        if self.rank() != 4 || weight.rank() != 4 {
            return Err(shape_error(
                "must be [n, in, h, w] and [in, out / groups, kh, kw]".into(),
            ));
        }
        let (batch, in_channels, h, w) = (
            self.shape()[0],
            self.shape()[1],
            self.shape()[2],
            self.shape()[3],
        );
        let (weight_in, group_out, kh, kw) = (
            weight.shape()[0],
            weight.shape()[1],
            weight.shape()[2],
            weight.shape()[3],
        );
        let groups = params.groups;
        if groups == 0 || weight_in != in_channels || !in_channels.is_multiple_of(groups) {
            return Err(shape_error(format!(
                "do not fit: input has {in_channels} channels, weight has {weight_in} input channels, groups is {groups} (the channels must match and be divisible by groups)"
            )));
        }
        let zero = |pair: (usize, usize)| pair.0 == 0 || pair.1 == 0;
        if zero(params.stride) || zero(params.dilation) || kh == 0 || kw == 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "stride {:?}, dilation {:?} and kernel ({kh}, {kw}) must be positive",
                    params.stride, params.dilation
                ),
            ));
        }
        let too_big = |o: usize, s: usize, d: usize| o >= s && o >= d;
        if too_big(params.output_padding.0, params.stride.0, params.dilation.0)
            || too_big(params.output_padding.1, params.stride.1, params.dilation.1)
        {
            return Err(Error::invalid(
                OP,
                format!(
                    "output_padding {:?} must be smaller than the stride {:?} or the dilation {:?}",
                    params.output_padding, params.stride, params.dilation
                ),
            ));
        }
        let (Some(oh), Some(ow)) = (
            transposed_span(
                h,
                kh,
                params.stride.0,
                params.padding.0,
                params.dilation.0,
                params.output_padding.0,
            ),
            transposed_span(
                w,
                kw,
                params.stride.1,
                params.padding.1,
                params.dilation.1,
                params.output_padding.1,
            ),
        ) else {
            return Err(shape_error(format!(
                "give an empty output with stride {:?}, padding {:?}, dilation {:?}, output_padding {:?}",
                params.stride, params.padding, params.dilation, params.output_padding
            )));
        };
        let out_channels = group_out * groups;
        let adjoint = Conv2dParams {
            stride: params.stride,
            padding: params.padding,
            dilation: params.dilation,
            groups: 1,
        };
        let out = if groups == 1 {
            transposed_one_group(self, weight, adjoint, [batch, out_channels, oh, ow])?
        } else {
            let per_group = in_channels / groups;
            let mut pieces = Vec::with_capacity(groups);
            for g in 0..groups {
                let input = self.narrow(1, g * per_group, per_group)?;
                let kernels = weight.narrow(0, g * per_group, per_group)?;
                pieces.push(transposed_one_group(
                    &input,
                    &kernels,
                    adjoint,
                    [batch, group_out, oh, ow],
                )?);
            }
            let refs: Vec<&Tensor> = pieces.iter().collect();
            Tensor::cat(&refs, 1)?
        };
        match bias {
            None => Ok(out),
            Some(bias) => {
                if bias.shape() != [out_channels] {
                    return Err(Error::ShapeMismatch {
                        op: OP,
                        lhs: vec![out_channels],
                        rhs: bias.shape().to_vec(),
                        reason: "bias must have one value per output channel".into(),
                    });
                }
                out.add(&bias.reshape([1, out_channels, 1, 1])?)
            }
        }
    }

    /// 1-D convolution of `[n, c, l]` by `weight [out, c / groups, k]` plus an optional
    /// `bias [out]`, like `torch.nn.functional.conv1d` (a `conv2d` over a height of one).
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        params: Conv1dParams,
    ) -> Result<Tensor> {
        if self.rank() != 3 || weight.rank() != 3 {
            return Err(Error::ShapeMismatch {
                op: "conv1d",
                lhs: self.shape().to_vec(),
                rhs: weight.shape().to_vec(),
                reason: "must be [n, c, l] and [out, c / groups, k]".into(),
            });
        }
        let params2d = Conv2dParams {
            stride: (1, params.stride),
            padding: (0, params.padding),
            dilation: (1, params.dilation),
            groups: params.groups,
        };
        self.unsqueeze(2)?
            .conv2d(&weight.unsqueeze(2)?, bias, params2d)
            .map_err(|error| match error {
                Error::ShapeMismatch { reason, .. } => Error::ShapeMismatch {
                    op: "conv1d",
                    lhs: self.shape().to_vec(),
                    rhs: weight.shape().to_vec(),
                    reason,
                },
                other => other,
            })?
            .squeeze(2)
    }

    /// A one-group `conv2d` forward, untracked: the input gradient of a transposed
    /// convolution (`self` its output gradient `[n, out, oh, ow]`, `weight` its `[in, out,
    /// kh, kw]`), a `[n, in, h, w]` tensor.
    pub(crate) fn conv2d_untracked(
        &self,
        weight: &Tensor,
        params: &Conv2dParams,
    ) -> Result<Tensor> {
        let window = Window {
            kernel: (weight.shape()[2], weight.shape()[3]),
            stride: params.stride,
            padding: params.padding,
            dilation: params.dilation,
        };
        let (oh, ow) = window.output_size("conv2d", self.shape()[2], self.shape()[3])?;
        let storage = {
            let (input, kernels) = (self.storage(), weight.storage());
            input.conv2d(self.layout(), &kernels, weight.layout(), params)?
        };
        Ok(Tensor::from_storage(
            storage,
            &[self.shape()[0], weight.shape()[0], oh, ow],
            None,
        ))
    }
}

/// One group of a transposed convolution: the `conv2d_backward_input` primitive with `input`
/// in the role of the output gradient, recorded as `GradFn::ConvTranspose2d`.
fn transposed_one_group(
    input: &Tensor,
    weight: &Tensor,
    params: Conv2dParams,
    output_shape: [usize; 4],
) -> Result<Tensor> {
    let storage = {
        let (x, kernels) = (input.storage(), weight.storage());
        x.conv2d_backward_input(
            input.layout(),
            &kernels,
            weight.layout(),
            &params,
            &output_shape,
        )?
    };
    let grad_fn = Tensor::record(&[input, weight], input.dtype(), || {
        GradFn::ConvTranspose2d {
            input: input.clone(),
            weight: weight.clone(),
            params,
        }
    });
    Ok(Tensor::from_storage(storage, &output_shape, grad_fn))
}

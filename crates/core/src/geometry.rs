//! Sliding-window geometry, a leaf module (it knows shapes and numbers, no tensor, storage or
//! backend): the parameters of a 2-D convolution, the one output-size formula (PyTorch's),
//! the checked shape of a one-group convolution and of its gradients that both backends
//! accept and refuse alike, the window arithmetic the tensor layer's pooling and grouped
//! convolutions use, the checked shape of the pooling primitives (`PoolShape`), and the shape
//! of a fused attention call (`AttentionShape`).

use crate::error::{Error, Result};
use crate::layout::Layout;

/// Parameters of a 2-D convolution (PyTorch's defaults: stride 1, no padding, dilation 1,
/// one group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv2dParams {
    pub stride: (usize, usize),
    pub padding: (usize, usize),
    pub dilation: (usize, usize),
    pub groups: usize,
}

impl Default for Conv2dParams {
    fn default() -> Self {
        Conv2dParams {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

/// Output positions along one axis of `size` for a kernel of `kernel` taps (PyTorch's
/// formula); `None` when the window does not fit, the stride is 0 or the sizes overflow.
fn output_span(
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> Option<usize> {
    let reach = dilation
        .checked_mul(kernel.checked_sub(1)?)?
        .checked_add(1)?;
    let padded = size.checked_add(padding.checked_mul(2)?)?;
    (stride > 0 && reach <= padded).then(|| (padded - reach) / stride + 1)
}

/// The error for a window that does not fit its input.
fn window_error(
    op: &'static str,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    (h, w): (usize, usize),
) -> Error {
    Error::invalid(
        op,
        format!(
            "window {kernel:?} (stride {stride:?}, padding {padding:?}, dilation {dilation:?}) does not fit an input of {h}x{w}"
        ),
    )
}

/// Geometry of a sliding window over an `h x w` image (pooling, unfolded convolutions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) kernel: (usize, usize),
    pub(crate) stride: (usize, usize),
    pub(crate) padding: (usize, usize),
    pub(crate) dilation: (usize, usize),
}

impl Window {
    /// `(oh, ow)` for an `h x w` input, or an error naming `op` when the window does not fit.
    pub(crate) fn output_size(
        &self,
        op: &'static str,
        h: usize,
        w: usize,
    ) -> Result<(usize, usize)> {
        let oh = output_span(
            h,
            self.kernel.0,
            self.stride.0,
            self.padding.0,
            self.dilation.0,
        );
        let ow = output_span(
            w,
            self.kernel.1,
            self.stride.1,
            self.padding.1,
            self.dilation.1,
        );
        match (oh, ow) {
            (Some(oh), Some(ow)) if self.kernel.0 > 0 && self.kernel.1 > 0 => Ok((oh, ow)),
            _ => Err(window_error(
                op,
                self.kernel,
                self.stride,
                self.padding,
                self.dilation,
                (h, w),
            )),
        }
    }

    /// The input row (`axis` 0) or column (`axis` 1) that output position `output` reads at
    /// kernel tap `tap` along that axis, or `None` when it falls in the padding (outside
    /// `0..size`).
    pub(crate) fn input_position(
        &self,
        axis: usize,
        output: usize,
        tap: usize,
        size: usize,
    ) -> Option<usize> {
        let (stride, padding, dilation) = if axis == 0 {
            (self.stride.0, self.padding.0, self.dilation.0)
        } else {
            (self.stride.1, self.padding.1, self.dilation.1)
        };
        (output * stride + tap * dilation)
            .checked_sub(padding)
            .filter(|&position| position < size)
    }

    /// For each kernel position (row-major) and output position (row-major): the flat index
    /// into the `h*w` image, or `h*w` (the appended padding element) when outside.
    pub(crate) fn unfold_indices(&self, h: usize, w: usize, oh: usize, ow: usize) -> Vec<i32> {
        let (kh, kw) = self.kernel;
        let mut table = Vec::with_capacity(kh * kw * oh * ow);
        for ki in 0..kh {
            for kj in 0..kw {
                for oi in 0..oh {
                    for oj in 0..ow {
                        let row = (oi * self.stride.0 + ki * self.dilation.0) as isize
                            - self.padding.0 as isize;
                        let col = (oj * self.stride.1 + kj * self.dilation.1) as isize
                            - self.padding.1 as isize;
                        let inside =
                            row >= 0 && col >= 0 && (row as usize) < h && (col as usize) < w;
                        table.push(if inside {
                            (row as usize * w + col as usize) as i32
                        } else {
                            (h * w) as i32
                        });
                    }
                }
            }
        }
        table
    }
}

/// The checked geometry of the pooling primitives (`max_pool2d` and its gradient) over an
/// input `[n, c, h, w]`, shared by both backends so that they accept and refuse alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolShape {
    /// Images `n`.
    pub(crate) batch: usize,
    /// Channels `c`.
    pub(crate) channels: usize,
    /// Input `(h, w)`.
    pub(crate) input: (usize, usize),
    /// Output `(oh, ow)` (PyTorch's formula, `Window::output_size`).
    pub(crate) output: (usize, usize),
    /// The window.
    pub(crate) window: Window,
}

impl PoolShape {
    /// Check that `input` is `[n, c, h, w]` and that `window` fits it.
    pub(crate) fn new(op: &'static str, input: &Layout, window: &Window) -> Result<PoolShape> {
        let &[batch, channels, h, w] = input.shape.as_slice() else {
            return Err(Error::InvalidShape {
                op,
                shape: input.shape.clone(),
                message: "expects a [n, c, h, w] input".into(),
            });
        };
        let output = window.output_size(op, h, w)?;
        Ok(PoolShape {
            batch,
            channels,
            input: (h, w),
            output,
            window: *window,
        })
    }

    /// `[n, c, h, w]`.
    pub(crate) fn input_shape(&self) -> [usize; 4] {
        [self.batch, self.channels, self.input.0, self.input.1]
    }

    /// `[n, c, oh, ow]`.
    pub(crate) fn output_shape(&self) -> [usize; 4] {
        [self.batch, self.channels, self.output.0, self.output.1]
    }

    /// Check that operand `what` of the gradient primitive `op` has the output's shape.
    pub(crate) fn expect_output(
        &self,
        op: &'static str,
        what: &str,
        layout: &Layout,
    ) -> Result<()> {
        if layout.shape != self.output_shape() {
            return Err(Error::ShapeMismatch {
                op,
                lhs: layout.shape.clone(),
                rhs: self.output_shape().to_vec(),
                reason: format!("the {what} must have the pooling's output shape"),
            });
        }
        Ok(())
    }
}

/// The checked geometry of a one-group convolution of `[n, c, h, w]` by `[o, c, kh, kw]`,
/// shared by both backends' `conv2d` and gradient primitives, so that they accept and refuse
/// exactly the same arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Conv2dShape {
    /// Images `n`.
    pub(crate) batch: usize,
    /// Input channels `c`.
    pub(crate) channels: usize,
    /// Input `(h, w)`.
    pub(crate) input: (usize, usize),
    /// Output channels `o`.
    pub(crate) out_channels: usize,
    /// `(kh, kw)`.
    pub(crate) kernel: (usize, usize),
    /// Stride `(rows, columns)`.
    pub(crate) stride: (usize, usize),
    /// Zero padding on each side `(rows, columns)`.
    pub(crate) padding: (usize, usize),
    /// Dilation `(rows, columns)`.
    pub(crate) dilation: (usize, usize),
    /// Output `(oh, ow)`.
    pub(crate) output: (usize, usize),
}

impl Conv2dShape {
    /// Check the operands' shapes and the parameters (`groups` must be 1) and compute the
    /// output size with PyTorch's formula.
    pub(crate) fn new(
        input: &Layout,
        weight: &Layout,
        params: &Conv2dParams,
    ) -> Result<Conv2dShape> {
        let mismatch = |reason: &str| Error::ShapeMismatch {
            op: "conv2d",
            lhs: input.shape.clone(),
            rhs: weight.shape.clone(),
            reason: reason.into(),
        };
        let (&[batch, channels, h, w], &[out_channels, weight_channels, kh, kw]) =
            (input.shape.as_slice(), weight.shape.as_slice())
        else {
            return Err(mismatch("must be [n, c, h, w] and [out, c, kh, kw]"));
        };
        if params.groups != 1 {
            return Err(Error::invalid(
                "conv2d",
                format!(
                    "the conv2d primitive takes one group, not {}",
                    params.groups
                ),
            ));
        }
        if weight_channels != channels {
            return Err(mismatch(
                "do not fit: the weight's channels differ from the input's",
            ));
        }
        Conv2dShape::with_output(
            "conv2d",
            [batch, channels, h, w],
            [out_channels, kh, kw],
            params,
        )
    }

    /// Check the operands of a depthwise convolution (`op` names it in errors): input
    /// `[n, c, h, w]`, weight `[c * multiplier, 1, kh, kw]`, `groups == c` (at least one
    /// channel); output channel `o` reads input channel `o / multiplier`. The output size is
    /// PyTorch's, as for [`Conv2dShape::new`].
    pub(crate) fn depthwise(
        op: &'static str,
        input: &Layout,
        weight: &Layout,
        params: &Conv2dParams,
    ) -> Result<Conv2dShape> {
        let mismatch = |reason: &str| Error::ShapeMismatch {
            op,
            lhs: input.shape.clone(),
            rhs: weight.shape.clone(),
            reason: reason.into(),
        };
        let (&[batch, channels, h, w], &[out_channels, weight_channels, kh, kw]) =
            (input.shape.as_slice(), weight.shape.as_slice())
        else {
            return Err(mismatch(
                "must be [n, c, h, w] and [c * multiplier, 1, kh, kw]",
            ));
        };
        if channels == 0 || params.groups != channels {
            return Err(Error::invalid(
                op,
                format!(
                    "the depthwise primitive takes groups == channels ({channels}, at least 1), \
                     not {}",
                    params.groups
                ),
            ));
        }
        if weight_channels != 1 || !out_channels.is_multiple_of(channels) {
            return Err(mismatch(
                "do not fit: a depthwise weight is [c * multiplier, 1, kh, kw]",
            ));
        }
        Conv2dShape::with_output(op, [batch, channels, h, w], [out_channels, kh, kw], params)
    }

    /// The shape with its output size computed (PyTorch's formula), or `op`'s window error.
    fn with_output(
        op: &'static str,
        [batch, channels, h, w]: [usize; 4],
        [out_channels, kh, kw]: [usize; 3],
        params: &Conv2dParams,
    ) -> Result<Conv2dShape> {
        let (stride, padding, dilation) = (params.stride, params.padding, params.dilation);
        match (
            output_span(h, kh, stride.0, padding.0, dilation.0),
            output_span(w, kw, stride.1, padding.1, dilation.1),
        ) {
            (Some(oh), Some(ow)) => Ok(Conv2dShape {
                batch,
                channels,
                input: (h, w),
                out_channels,
                kernel: (kh, kw),
                stride,
                padding,
                dilation,
                output: (oh, ow),
            }),
            _ => Err(window_error(
                op,
                (kh, kw),
                stride,
                padding,
                dilation,
                (h, w),
            )),
        }
    }

    /// Output channels per input channel of a depthwise convolution (`out_channels / channels`).
    pub(crate) fn multiplier(&self) -> usize {
        self.out_channels.checked_div(self.channels).unwrap_or(0)
    }

    /// Rows of the implicit GEMM's right operand: `c * kh * kw`.
    pub(crate) fn patch(&self) -> usize {
        self.channels * self.kernel.0 * self.kernel.1
    }

    /// `[n, o, oh, ow]`.
    pub(crate) fn output_shape(&self) -> [usize; 4] {
        [self.batch, self.out_channels, self.output.0, self.output.1]
    }
}

/// The checked geometry of a backward pass: the forward's input and weight shapes, and the
/// output gradient `grad`, which must have the forward output's shape.
pub(crate) fn backward_shape(
    op: &'static str,
    grad: &Layout,
    input_shape: &[usize],
    weight_shape: &[usize],
    params: &Conv2dParams,
) -> Result<Conv2dShape> {
    let shape = Conv2dShape::new(
        &Layout::contiguous(input_shape),
        &Layout::contiguous(weight_shape),
        params,
    )?;
    if grad.shape != shape.output_shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: grad.shape.clone(),
            rhs: shape.output_shape().to_vec(),
            reason: "the output gradient must have the convolution's output shape".into(),
        });
    }
    Ok(shape)
}

/// The checked geometry of a depthwise convolution's backward pass
/// ([`Conv2dShape::depthwise`] of the forward's input and weight shapes), with the output
/// gradient `grad`, which must have the forward output's shape.
pub(crate) fn depthwise_backward_shape(
    op: &'static str,
    grad: &Layout,
    input_shape: &[usize],
    weight_shape: &[usize],
    params: &Conv2dParams,
) -> Result<Conv2dShape> {
    let shape = Conv2dShape::depthwise(
        op,
        &Layout::contiguous(input_shape),
        &Layout::contiguous(weight_shape),
        params,
    )?;
    if grad.shape != shape.output_shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: grad.shape.clone(),
            rhs: shape.output_shape().to_vec(),
            reason: "the output gradient must have the convolution's output shape".into(),
        });
    }
    Ok(shape)
}

/// The geometry of one fused attention call (`tensor/attention_fused.rs` hands it to the GPU
/// kernels of `backend/gpu/attention/`): dense row-major `query [batch_heads, query_length,
/// head_dim]`, `key [batch_heads, key_length, head_dim]`, `value [batch_heads, key_length,
/// value_dim]`, output `[batch_heads, query_length, value_dim]` and one f32 log-sum-exp per
/// query row; `causal`: key column `<=` query row (PyTorch's top-left aligned mask); an
/// optional key-padding bias.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AttentionShape {
    pub(crate) batch_heads: usize,
    pub(crate) query_length: usize,
    pub(crate) key_length: usize,
    pub(crate) head_dim: usize,
    pub(crate) value_dim: usize,
    pub(crate) scale: f64,
    pub(crate) causal: bool,
    /// With a key-padding bias (`[batch_heads / group, key_length]` f32, added to the scaled
    /// scores, `-3e38` for a masked key): the number of consecutive batch-heads sharing one
    /// bias row.
    pub(crate) key_bias_group: Option<usize>,
}

impl AttentionShape {
    /// Query rows (the log-sum-exp's length).
    pub(crate) fn rows(&self) -> usize {
        self.batch_heads * self.query_length
    }
}

/// Where the rows of one attention forward operand lie in its storage, in vec4s: row `r` of
/// batch-head `i` of a `[batch, heads, rows, width]` view starts at `offset + (i / heads) *
/// batch + (i % heads) * head + r * row`. The fused forward reads its query, key and value
/// this way, so heads split from a stacked projection need no dense copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttentionRows {
    pub(crate) offset: usize,
    pub(crate) batch: usize,
    pub(crate) head: usize,
    pub(crate) row: usize,
    /// Heads per batch.
    pub(crate) heads: usize,
}

impl AttentionRows {
    /// The rows of a `[batch, heads, rows, width]` view, where the kernel can address them:
    /// rows contiguous, offset and strides multiples of 4 (whole vec4s); `None` otherwise.
    pub(crate) fn of(layout: &Layout) -> Option<AttentionRows> {
        let (&[_, heads, _, _], &[batch, head, row, 1]) =
            (layout.shape.as_slice(), layout.strides.as_slice())
        else {
            return None;
        };
        [layout.offset, batch, head, row]
            .iter()
            .all(|value| value.is_multiple_of(4))
            .then_some(AttentionRows {
                offset: layout.offset / 4,
                batch: batch / 4,
                head: head / 4,
                row: row / 4,
                heads,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_size_follows_pytorch() {
        // 7x7, kernel 3, stride 2, padding 1, dilation 1 -> 4x4.
        let window = Window {
            kernel: (3, 3),
            stride: (2, 2),
            padding: (1, 1),
            dilation: (1, 1),
        };
        assert_eq!(window.output_size("test", 7, 7).unwrap(), (4, 4));
        let shape = Conv2dShape::new(
            &Layout::contiguous(&[1, 2, 7, 7]),
            &Layout::contiguous(&[5, 2, 3, 3]),
            &Conv2dParams {
                stride: (2, 2),
                padding: (1, 1),
                ..Conv2dParams::default()
            },
        )
        .unwrap();
        assert_eq!(shape.output_shape(), [1, 5, 4, 4]);
    }

    #[test]
    fn windows_that_do_not_fit_are_errors() {
        let too_big = Window {
            kernel: (9, 9),
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
        };
        assert!(too_big.output_size("test", 4, 4).is_err());
        let zero_stride = Window {
            stride: (0, 1),
            ..too_big
        };
        assert!(zero_stride.output_size("test", 16, 16).is_err());
        let overflowing = Window {
            padding: (usize::MAX, 0),
            ..too_big
        };
        assert!(overflowing.output_size("test", 16, 16).is_err());
    }
}

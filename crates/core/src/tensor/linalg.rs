//! Matrix products and the image ops built on them. `matmul` broadcasts batch dims and reduces
//! every case to one batched primitive `[b, m, k] x [b, k, n]`. A float `conv2d` with one
//! group is the direct `Storage::conv2d` primitive, recorded as `GradFn::Conv2d` (its
//! gradients are the primitives `conv2d_backward_input` and `conv2d_backward_weight`); a
//! float depthwise one (groups == channels, one weight channel per group) is the
//! `Storage::depthwise_conv2d` primitive, recorded as `GradFn::DepthwiseConv2d` (gradients:
//! `depthwise_conv2d_backward_input` and `depthwise_conv2d_backward_weight`); other grouped
//! and integer convolutions are a composite: an "unfold" (im2col) written as one
//! `index_select` over the flattened image with a precomputed index table (padding reads an
//! extra constant element), followed by a matmul, differentiated through those primitives
//! (`index_select`'s backward is a `scatter_add`, which accumulates overlapping windows
//! correctly). Max pooling is the `max_pool2d` primitive, recorded as `GradFn::MaxPool2d`
//! (its gradient: the `max_pool2d_backward` primitive); average pooling sums strided window
//! views elementwise.

use std::sync::{Arc, RwLock};

use super::Tensor;
use crate::autograd::GradFn;
use crate::dtype::DType;
use crate::error::{Error, Result};
pub use crate::geometry::Conv2dParams;
use crate::geometry::Window;
use crate::layout::Layout;
use crate::shape::broadcast_shapes;

impl Tensor {
    /// Matrix product with PyTorch's rules: 1-D operands are promoted (and the added dim
    /// removed), batch dims broadcast.
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        if let Some(low) = crate::amp::autocast_dtype() {
            if (self.dtype() != low || rhs.dtype() != low)
                && self.dtype().is_float()
                && rhs.dtype().is_float()
            {
                let _outside = crate::amp::suspend();
                let cast = |t: &Tensor| crate::tensor::autocast_cache::autocast_input(t, low);
                return cast(self)?.matmul(&cast(rhs)?);
            }
        }
        self.same_device("matmul", rhs)?;
        self.same_dtype("matmul", rhs)?;
        let mismatch = |reason: String| Error::ShapeMismatch {
            op: "matmul",
            lhs: self.shape().to_vec(),
            rhs: rhs.shape().to_vec(),
            reason,
        };
        if self.rank() == 0 || rhs.rank() == 0 {
            return Err(mismatch(
                "cannot be multiplied (both operands need at least one dim)".into(),
            ));
        }
        let lhs = if self.rank() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let rhs_m = if rhs.rank() == 1 {
            rhs.unsqueeze(1)?
        } else {
            rhs.clone()
        };
        let (m, k) = (lhs.shape()[lhs.rank() - 2], lhs.shape()[lhs.rank() - 1]);
        let (k2, n) = (
            rhs_m.shape()[rhs_m.rank() - 2],
            rhs_m.shape()[rhs_m.rank() - 1],
        );
        if k != k2 {
            return Err(mismatch(format!(
                "cannot be multiplied (inner dims {k} != {k2})"
            )));
        }
        let lhs_batch = &lhs.shape()[..lhs.rank() - 2];
        let rhs_batch = &rhs_m.shape()[..rhs_m.rank() - 2];
        let batch = broadcast_shapes("matmul", lhs_batch, rhs_batch)
            .map_err(|_| mismatch("have batch dims that cannot be broadcast together".into()))?;
        let batch_count: usize = batch.iter().product();
        let result = if rhs_batch.is_empty() && !lhs_batch.is_empty() {
            // [..., m, k] x [k, n]: fold the batch into the rows, one big product.
            let rows = lhs.reshape([batch_count * m, k])?.unsqueeze(0)?;
            matmul_batched(&rows, &rhs_m.unsqueeze(0)?)?
        } else {
            let to3 = |t: &Tensor, rows: usize, cols: usize| -> Result<Tensor> {
                let mut full = batch.clone();
                full.extend([rows, cols]);
                let expanded = t.broadcast_to(&full)?;
                if batch.len() == 1 {
                    Ok(expanded)
                } else {
                    expanded.reshape([batch_count, rows, cols])
                }
            };
            let a = if batch.is_empty() {
                lhs.unsqueeze(0)?
            } else {
                to3(&lhs, m, k)?
            };
            let b = if batch.is_empty() {
                rhs_m.unsqueeze(0)?
            } else {
                to3(&rhs_m, k, n)?
            };
            matmul_batched(&a, &b)?
        };
        let mut out_shape = batch;
        if self.rank() > 1 {
            out_shape.push(m);
        }
        if rhs.rank() > 1 {
            out_shape.push(n);
        }
        result.reshape(out_shape)
    }

    /// `self · weightᵀ + bias`, like `torch.nn.functional.linear`: `weight [out, in]`,
    /// `bias [out]`. Under autocast the whole op runs in the autocast dtype, the bias
    /// included, so the output stays f16 as PyTorch's (a f32 bias would promote it to f32,
    /// and the next f16 matmul would cast it back).
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        // The weight is cast before its transposed view is taken, so that autocast's kept
        // parameter copies (`autocast_cache.rs`) serve it.
        let weight = match crate::amp::autocast_dtype() {
            Some(low) if weight.dtype().is_float() && self.dtype().is_float() => {
                let _outside = crate::amp::suspend();
                crate::tensor::autocast_cache::autocast_input(weight, low)?
            }
            _ => weight.clone(),
        };
        let out = self.matmul(&weight.t()?)?;
        let Some(bias) = bias else {
            return Ok(out);
        };
        match crate::amp::autocast_dtype() {
            Some(low) if out.dtype() == low && bias.dtype() != low && bias.dtype().is_float() => {
                out.add(&crate::tensor::autocast_cache::autocast_input(bias, low)?)
            }
            _ => out.add(bias),
        }
    }

    /// 2-D convolution of `[n, c, h, w]` by `weight [o, c / groups, kh, kw]` plus an optional
    /// `bias [o]`, like `torch.nn.functional.conv2d`.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        params: Conv2dParams,
    ) -> Result<Tensor> {
        if let Some(low) = crate::amp::autocast_dtype() {
            if (self.dtype() != low || weight.dtype() != low)
                && self.dtype().is_float()
                && weight.dtype().is_float()
            {
                let _outside = crate::amp::suspend();
                let cast = |t: &Tensor| crate::tensor::autocast_cache::autocast_input(t, low);
                let bias = bias.map(cast).transpose()?;
                return cast(self)?.conv2d(&cast(weight)?, bias.as_ref(), params);
            }
        }
        self.same_device("conv2d", weight)?;
        self.same_dtype("conv2d", weight)?;
        let shape_error = |reason: String| Error::ShapeMismatch {
            op: "conv2d",
            lhs: self.shape().to_vec(),
            rhs: weight.shape().to_vec(),
            reason,
        };
        if self.rank() != 4 || weight.rank() != 4 {
            return Err(shape_error(
                "must be [n, c, h, w] and [out, c / groups, kh, kw]".into(),
            ));
        }
        let (batch, channels, h, w) = (
            self.shape()[0],
            self.shape()[1],
            self.shape()[2],
            self.shape()[3],
        );
        let (out_channels, group_channels, kh, kw) = (
            weight.shape()[0],
            weight.shape()[1],
            weight.shape()[2],
            weight.shape()[3],
        );
        let groups = params.groups;
        if groups == 0
            || channels % groups != 0
            || out_channels % groups != 0
            || group_channels != channels / groups
        {
            return Err(shape_error(format!(
                "do not fit: input has {channels} channels, weight expects {group_channels} per group with {groups} groups"
            )));
        }
        let window = Window {
            kernel: (kh, kw),
            stride: params.stride,
            padding: params.padding,
            dilation: params.dilation,
        };
        let (oh, ow) = window.output_size("conv2d", h, w)?;
        // One group and a float dtype: the direct primitive, without an unfolded copy,
        // differentiated by its own backward primitives (`GradFn::Conv2d`); depthwise (one
        // input channel per group) likewise with the depthwise primitives
        // (`GradFn::DepthwiseConv2d`). Otherwise the composite, which autograd differentiates
        // through its primitives.
        let depthwise = groups == channels && group_channels == 1 && groups > 1;
        let out = if depthwise && self.dtype().is_float() {
            let storage = {
                let (input, kernels) = (self.storage(), weight.storage());
                input.depthwise_conv2d(self.layout(), &kernels, weight.layout(), &params)?
            };
            let grad_fn =
                Tensor::record(&[self, weight], self.dtype(), || GradFn::DepthwiseConv2d {
                    input: self.clone(),
                    weight: weight.clone(),
                    params,
                });
            Tensor::from_storage(storage, &[batch, out_channels, oh, ow], grad_fn)
        } else if groups == 1 && self.dtype().is_float() {
            let storage = {
                let (input, kernels) = (self.storage(), weight.storage());
                input.conv2d(self.layout(), &kernels, weight.layout(), &params)?
            };
            let grad_fn = Tensor::record(&[self, weight], self.dtype(), || GradFn::Conv2d {
                input: self.clone(),
                weight: weight.clone(),
                params,
            });
            Tensor::from_storage(storage, &[batch, out_channels, oh, ow], grad_fn)
        } else {
            let columns = self.unfold(&window, h, w, oh, ow, 0.0)?; // [n, c, kh*kw, oh*ow]
            let patch = group_channels * kh * kw;
            let out = if groups == 1 {
                // [o, patch] x [n, patch, oh*ow]: the weight is shared by every image
                // (stride-0 batch), never copied.
                let kernels = weight.reshape([out_channels, patch])?;
                kernels.matmul(&columns.reshape([batch, patch, oh * ow])?)?
            } else {
                let columns = columns.reshape([batch, groups, patch, oh * ow])?;
                let kernels = weight.reshape([groups, out_channels / groups, patch])?;
                kernels.matmul(&columns)? // [n, groups, out/groups, oh*ow]
            };
            out.reshape([batch, out_channels, oh, ow])?
        };
        match bias {
            None => Ok(out),
            Some(bias) => {
                if bias.shape() != [out_channels] {
                    return Err(Error::ShapeMismatch {
                        op: "conv2d",
                        lhs: vec![out_channels],
                        rhs: bias.shape().to_vec(),
                        reason: "bias must have one value per output channel".into(),
                    });
                }
                out.add(&bias.reshape([1, out_channels, 1, 1])?)
            }
        }
    }

    /// 2-D max pooling over `[n, c, h, w]` (padding never wins: it reads `-inf`). `stride` is
    /// `(sh, sw)` or `None` for PyTorch's default, the kernel size:
    /// `x.max_pool2d((2, 2), None, (0, 0))` is `F.max_pool2d(x, 2)`.
    pub fn max_pool2d(
        &self,
        kernel: (usize, usize),
        stride: impl Into<Option<(usize, usize)>>,
        padding: (usize, usize),
    ) -> Result<Tensor> {
        self.pool2d("max_pool2d", kernel, stride.into(), padding, true)
    }

    /// 2-D average pooling over `[n, c, h, w]`; padded zeros count in the average (PyTorch's
    /// default `count_include_pad=True`). `stride` is `(sh, sw)` or `None` for the kernel
    /// size, as in [`Tensor::max_pool2d`].
    pub fn avg_pool2d(
        &self,
        kernel: (usize, usize),
        stride: impl Into<Option<(usize, usize)>>,
        padding: (usize, usize),
    ) -> Result<Tensor> {
        self.pool2d("avg_pool2d", kernel, stride.into(), padding, false)
    }

    fn pool2d(
        &self,
        op: &'static str,
        kernel: (usize, usize),
        stride: Option<(usize, usize)>,
        padding: (usize, usize),
        max: bool,
    ) -> Result<Tensor> {
        if self.rank() != 4 {
            return Err(Error::InvalidShape {
                op,
                shape: self.shape().to_vec(),
                message: "expects a [n, c, h, w] tensor".into(),
            });
        }
        // PyTorch's default stride is the kernel size.
        let stride = stride.unwrap_or(kernel);
        if stride.0 == 0 || stride.1 == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "stride must be positive in both dims, got {stride:?} (pass None for the \
                     default, the kernel size {kernel:?})"
                ),
            ));
        }
        if padding.0 * 2 > kernel.0 || padding.1 * 2 > kernel.1 {
            return Err(Error::invalid(
                op,
                format!("padding {padding:?} must be at most half the kernel {kernel:?}"),
            ));
        }
        let (h, w) = (self.shape()[2], self.shape()[3]);
        let window = Window {
            kernel,
            stride,
            padding,
            dilation: (1, 1),
        };
        let (oh, ow) = window.output_size(op, h, w)?;
        if max {
            // One primitive and one autograd node that keeps its input and output (both
            // usually saved by their neighbours anyway).
            // The output keeps the input's memory format (channels-last activations stay so).
            let shape = [self.shape()[0], self.shape()[1], oh, ow];
            let format = self.memory_format();
            let output = self.storage().max_pool2d(self.layout(), &window, format)?;
            let storage = Arc::new(RwLock::new(output));
            let layout = format.layout(&shape);
            let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::MaxPool2d {
                input: self.clone(),
                output: Tensor::from_view(storage.clone(), layout.clone(), None),
                window,
            });
            return Ok(Tensor::from_view(storage, layout, grad_fn));
        }
        self.pooled_windows(&window, oh, ow, false)?
            .div_scalar((kernel.0 * kernel.1) as f64)
    }

    /// The strided view of the padded image `padded` that kernel position `(ki, kj)` sees.
    fn window_layout(
        window: &Window,
        padded_shape: &[usize],
        (oh, ow): (usize, usize),
        (ki, kj): (usize, usize),
    ) -> Layout {
        let (batch, channels, padded_h, padded_w) = (
            padded_shape[0],
            padded_shape[1],
            padded_shape[2],
            padded_shape[3],
        );
        Layout {
            shape: vec![batch, channels, oh, ow],
            strides: vec![
                channels * padded_h * padded_w,
                padded_h * padded_w,
                window.stride.0 * padded_w,
                window.stride.1,
            ],
            offset: ki * padded_w + kj,
        }
    }

    /// The running maximum (or sum) over the k·k strided window views of the padded image: no
    /// unfolded copy, and every step is a memory-bound elementwise kernel (fused on a GPU).
    fn pooled_windows(&self, window: &Window, oh: usize, ow: usize, max: bool) -> Result<Tensor> {
        let fill = if max { f64::NEG_INFINITY } else { 0.0 };
        let padded = self.pad2d(window.padding, fill)?;
        let mut pooled: Option<Tensor> = None;
        for ki in 0..window.kernel.0 {
            for kj in 0..window.kernel.1 {
                let relative = Tensor::window_layout(window, padded.shape(), (oh, ow), (ki, kj));
                let view = padded.window_view(relative)?;
                pooled = Some(match pooled {
                    None => view,
                    Some(so_far) if max => so_far.maximum(&view)?,
                    Some(so_far) => so_far.add(&view)?,
                });
            }
        }
        pooled
            .ok_or_else(|| Error::invalid("pool2d", "empty kernel"))?
            .contiguous()
    }

    /// The input gradient of max pooling, untracked: each output's gradient goes to the first
    /// input of its window (in row-major kernel order) that equals the maximum, as PyTorch
    /// routes it (the `max_pool2d_backward` primitive; autograd's rule for
    /// `GradFn::MaxPool2d`).
    pub(crate) fn max_pool2d_backward(
        &self,
        output: &Tensor,
        window: &Window,
        grad_output: &Tensor,
    ) -> Result<Tensor> {
        let grad = if grad_output.dtype() == self.dtype() {
            grad_output.clone()
        } else {
            grad_output.to_dtype(self.dtype())?
        };
        let storage = self.storage().max_pool2d_backward(
            self.layout(),
            &output.storage(),
            output.layout(),
            &grad.storage(),
            grad.layout(),
            window,
        )?;
        // Dense in the input's format (the primitive's contract).
        let layout = self.memory_format().layout(self.shape());
        Ok(Tensor::from_view(
            Arc::new(RwLock::new(storage)),
            layout,
            None,
        ))
    }

    /// Pad the last two dims of `[n, c, h, w]` with `fill` (a contiguous result).
    fn pad2d(&self, padding: (usize, usize), fill: f64) -> Result<Tensor> {
        let (batch, channels, h, w) = (
            self.shape()[0],
            self.shape()[1],
            self.shape()[2],
            self.shape()[3],
        );
        let mut out = self.contiguous()?;
        if padding.1 > 0 {
            let side = Tensor::full(
                &[batch, channels, h, padding.1],
                fill,
                self.dtype(),
                self.device(),
            )?;
            out = Tensor::cat(&[&side, &out, &side], 3)?;
        }
        if padding.0 > 0 {
            let side = Tensor::full(
                &[batch, channels, padding.0, w + 2 * padding.1],
                fill,
                self.dtype(),
                self.device(),
            )?;
            out = Tensor::cat(&[&side, &out, &side], 2)?;
        }
        Ok(out)
    }

    /// A view of this contiguous tensor with `relative` (offsets counted from its first
    /// element) that never addresses an element twice; differentiable.
    fn window_view(&self, relative: Layout) -> Result<Tensor> {
        if !self.is_contiguous() || relative.extent() > self.numel() {
            return Err(Error::invalid(
                "window view",
                "needs a contiguous input that contains the window",
            ));
        }
        let mut absolute = relative.clone();
        absolute.offset += self.layout().offset;
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::StridedView {
            input: self.clone(),
            relative,
        });
        Ok(Tensor::from_view(
            self.storage_arc().clone(),
            absolute,
            grad_fn,
        ))
    }

    /// `[n, c, h, w] -> [n, c, kh*kw, oh*ow]`: every window's pixels, padding read as `fill`.
    fn unfold(
        &self,
        window: &Window,
        h: usize,
        w: usize,
        oh: usize,
        ow: usize,
        fill: f64,
    ) -> Result<Tensor> {
        let (batch, channels) = (self.shape()[0], self.shape()[1]);
        let flat = self.reshape([batch, channels, h * w])?;
        let pad = Tensor::full(&[batch, channels, 1], fill, self.dtype(), self.device())?;
        let flat = Tensor::cat(&[&flat, &pad], 2)?;
        let table = window.unfold_indices(h, w, oh, ow);
        let indices = Tensor::from_vec(
            table,
            &[window.kernel.0 * window.kernel.1 * oh * ow],
            self.device(),
        )?;
        flat.index_select(2, &indices)?.reshape([
            batch,
            channels,
            window.kernel.0 * window.kernel.1,
            oh * ow,
        ])
    }
}

impl Tensor {
    /// The one-group convolution's input gradient, untracked: `self` is the output gradient
    /// `[n, o, oh, ow]`, `weight` the forward's; a `[n, c, h, w]` tensor of `input_shape`
    /// (the `conv2d_backward_input` primitive; autograd's rule for `GradFn::Conv2d`).
    pub(crate) fn conv2d_backward_input(
        &self,
        weight: &Tensor,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Tensor> {
        let storage = self.storage().conv2d_backward_input(
            self.layout(),
            &weight.storage(),
            weight.layout(),
            params,
            input_shape,
        )?;
        Ok(Tensor::from_storage(storage, input_shape, None))
    }

    /// The one-group convolution's weight gradient, untracked: `self` is the forward's input,
    /// `grad` the output gradient; a `[o, c, kh, kw]` tensor of `weight_shape` (the
    /// `conv2d_backward_weight` primitive).
    pub(crate) fn conv2d_backward_weight(
        &self,
        grad: &Tensor,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Tensor> {
        let storage = self.storage().conv2d_backward_weight(
            self.layout(),
            &grad.storage(),
            grad.layout(),
            params,
            weight_shape,
        )?;
        Ok(Tensor::from_storage(storage, weight_shape, None))
    }
}

impl Tensor {
    /// The depthwise convolution's input gradient, untracked: `self` is the output gradient
    /// `[n, o, oh, ow]`, `weight` the forward's; a `[n, c, h, w]` tensor of `input_shape`
    /// (the `depthwise_conv2d_backward_input` primitive; autograd's rule for
    /// `GradFn::DepthwiseConv2d`).
    pub(crate) fn depthwise_conv2d_backward_input(
        &self,
        weight: &Tensor,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Tensor> {
        let storage = self.storage().depthwise_conv2d_backward_input(
            self.layout(),
            &weight.storage(),
            weight.layout(),
            params,
            input_shape,
        )?;
        Ok(Tensor::from_storage(storage, input_shape, None))
    }

    /// The depthwise convolution's weight gradient, untracked: `self` is the forward's input,
    /// `grad` the output gradient; a `[o, 1, kh, kw]` tensor of `weight_shape` (the
    /// `depthwise_conv2d_backward_weight` primitive).
    pub(crate) fn depthwise_conv2d_backward_weight(
        &self,
        grad: &Tensor,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Tensor> {
        let storage = self.storage().depthwise_conv2d_backward_weight(
            self.layout(),
            &grad.storage(),
            grad.layout(),
            params,
            weight_shape,
        )?;
        Ok(Tensor::from_storage(storage, weight_shape, None))
    }
}

/// The batched primitive on rank-3 operands with equal batch.
pub(crate) fn matmul_batched(lhs: &Tensor, rhs: &Tensor) -> Result<Tensor> {
    let (batch, m, n) = (lhs.shape()[0], lhs.shape()[1], rhs.shape()[2]);
    let storage = {
        let (l, r) = (lhs.storage(), rhs.storage());
        l.matmul(lhs.layout(), &r, rhs.layout())?
    };
    let dtype: DType = lhs.dtype();
    let grad_fn = Tensor::record(&[lhs, rhs], dtype, || GradFn::Matmul {
        lhs: lhs.clone(),
        rhs: rhs.clone(),
    });
    Ok(Tensor::from_storage(storage, &[batch, m, n], grad_fn))
}

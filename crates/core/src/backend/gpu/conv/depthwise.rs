//! The depthwise 2-D convolution (groups == channels, weight `[c * multiplier, 1, kh, kw]`)
//! and both of its gradients, F32 or F16 (stored as themselves, computed and accumulated in
//! f32): `ConvKernel::Depthwise`, three WGSL templates in `conv/depthwise/` over one parameter
//! struct, [`DepthwiseParams`]. Each tap is one multiply-add, so the work is small next to a
//! dense convolution's and the kernels read their operands straight through their strides:
//! - `forward.wgsl`: one invocation per output element sums its window;
//! - `input_gradient.wgsl`: one invocation per input element gathers the output gradients of
//!   the windows that read it (no atomics);
//! - `weight_gradient.wgsl`: [`weight_gradient_lanes`] invocations per weight element sum over
//!   the batch's output pixels, and their partial sums are added in a fixed tree.
//!
//! The geometry is `geometry::Conv2dShape::depthwise`, the CPU's (`cpu/depthwise.rs`, the
//! reference); coordinates are checked against the kernels' 32-bit arithmetic
//! (`backward::check_coordinates`), every parameter word against 32 bits.

use crate::backend::gpu::conv::backward::check_coordinates;
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{depthwise_backward_shape, Conv2dParams, Conv2dShape};
use crate::layout::Layout;

#[cfg(test)]
mod tests;

kernel_params! {
    /// Parameters of the three depthwise kernels (`conv/depthwise/*.wgsl`). Views unused by a
    /// kernel are left at 0.
    struct DepthwiseParams {
        /// Elements written: output (forward), input (input gradient) or weight (weight
        /// gradient) elements.
        count: u32,
        /// Images `n`.
        batch: u32,
        /// Input channels `c`.
        channels: u32,
        /// Output channels per input channel.
        multiplier: u32,
        /// Input rows `h`.
        height: u32,
        /// Input columns `w`.
        width: u32,
        out_height: u32,
        out_width: u32,
        kernel_h: u32,
        kernel_w: u32,
        stride_h: u32,
        stride_w: u32,
        padding_h: u32,
        padding_w: u32,
        dilation_h: u32,
        dilation_w: u32,
        /// Invocations per weight element (weight gradient): a power of two up to 256.
        lanes: u32,
        /// The input's view (forward, weight gradient).
        input_offset: u32,
        input_stride_n: u32,
        input_stride_c: u32,
        input_stride_h: u32,
        input_stride_w: u32,
        /// The output gradient's view (both gradients).
        grad_offset: u32,
        grad_stride_n: u32,
        grad_stride_c: u32,
        grad_stride_h: u32,
        grad_stride_w: u32,
        /// The weight's view (forward, input gradient): output channel, row and column
        /// strides (its dim 1 has size 1).
        weight_offset: u32,
        weight_stride_o: u32,
        weight_stride_h: u32,
        weight_stride_w: u32,
    }
}

/// The three depthwise kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DepthwisePass {
    /// `conv/depthwise/forward.wgsl`.
    Forward,
    /// `conv/depthwise/input_gradient.wgsl`.
    InputGradient,
    /// `conv/depthwise/weight_gradient.wgsl`.
    WeightGradient,
}

impl DepthwisePass {
    /// Every pass, in order.
    pub(crate) const ALL: [DepthwisePass; 3] = [
        DepthwisePass::Forward,
        DepthwisePass::InputGradient,
        DepthwisePass::WeightGradient,
    ];
}

/// WGSL of `ConvKernel::Depthwise` (after `enable f16;` where needed).
pub(crate) fn source(dtype: DType, pass: DepthwisePass) -> String {
    let mut text = value_header(dtype);
    text.push_str(DepthwiseParams::WGSL);
    text.push_str(COMMON);
    text.push_str(match pass {
        DepthwisePass::Forward => include_str!("depthwise/forward.wgsl"),
        DepthwisePass::InputGradient => include_str!("depthwise/input_gradient.wgsl"),
        DepthwisePass::WeightGradient => include_str!("depthwise/weight_gradient.wgsl"),
    });
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<ConvKernel>, dtype: DType) {
    if is_depthwise_dtype(dtype) {
        for pass in DepthwisePass::ALL {
            keys.push(ConvKernel::Depthwise { dtype, pass });
        }
    }
}

/// Whether the GPU's depthwise kernels take `dtype` (the float dtypes it stores).
fn is_depthwise_dtype(dtype: DType) -> bool {
    match dtype {
        DType::F32 | DType::F16 => true,
        DType::BF16 | DType::F64 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => false,
    }
}

/// `[offset, stride_n, stride_c, stride_h, stride_w]` of a rank-4 view, as parameter words.
fn view_words(layout: &Layout) -> Result<[u32; 5]> {
    let s = &layout.strides;
    Ok([
        word(layout.offset)?,
        word(s[0])?,
        word(s[1])?,
        word(s[2])?,
        word(s[3])?,
    ])
}

/// The header of `shape` writing `count` elements, every view left at 0.
fn header(op: &'static str, shape: &Conv2dShape, count: usize) -> Result<DepthwiseParams> {
    check_coordinates(op, shape)?;
    Ok(DepthwiseParams {
        count: word(count)?,
        batch: word(shape.batch)?,
        channels: word(shape.channels)?,
        multiplier: word(shape.multiplier())?,
        height: word(shape.input.0)?,
        width: word(shape.input.1)?,
        out_height: word(shape.output.0)?,
        out_width: word(shape.output.1)?,
        kernel_h: word(shape.kernel.0)?,
        kernel_w: word(shape.kernel.1)?,
        stride_h: word(shape.stride.0)?,
        stride_w: word(shape.stride.1)?,
        padding_h: word(shape.padding.0)?,
        padding_w: word(shape.padding.1)?,
        dilation_h: word(shape.dilation.0)?,
        dilation_w: word(shape.dilation.1)?,
        ..DepthwiseParams::default()
    })
}

/// `header` with the input's view.
fn with_input(header: DepthwiseParams, layout: &Layout) -> Result<DepthwiseParams> {
    let [offset, n, c, h, w] = view_words(layout)?;
    Ok(DepthwiseParams {
        input_offset: offset,
        input_stride_n: n,
        input_stride_c: c,
        input_stride_h: h,
        input_stride_w: w,
        ..header
    })
}

/// `header` with the output gradient's view.
fn with_grad(header: DepthwiseParams, layout: &Layout) -> Result<DepthwiseParams> {
    let [offset, n, c, h, w] = view_words(layout)?;
    Ok(DepthwiseParams {
        grad_offset: offset,
        grad_stride_n: n,
        grad_stride_c: c,
        grad_stride_h: h,
        grad_stride_w: w,
        ..header
    })
}

/// `header` with the weight's view (its dim 1, of size 1, is never stepped: its stride is
/// not read).
fn with_weight(header: DepthwiseParams, layout: &Layout) -> Result<DepthwiseParams> {
    let s = &layout.strides;
    Ok(DepthwiseParams {
        weight_offset: word(layout.offset)?,
        weight_stride_o: word(s[0])?,
        weight_stride_h: word(s[2])?,
        weight_stride_w: word(s[3])?,
        ..header
    })
}

/// The operand checks every depthwise launcher starts with: one device, one dtype, a float
/// dtype the kernels take.
fn check_operands(op: &'static str, lhs: &GpuStorage, rhs: &GpuStorage) -> Result<()> {
    same_device(op, lhs, rhs)?;
    same_dtype(op, lhs.dtype, rhs.dtype)?;
    if !is_depthwise_dtype(lhs.dtype) {
        return Err(unsupported(op, lhs.dtype, &lhs.device));
    }
    Ok(())
}

/// Output pixels each lane of the weight gradient should at least walk: fewer lanes (and
/// fewer barriers in the tree sum) for small images.
const PIXELS_PER_LANE: usize = 64;

/// Invocations per element of the weight gradient over `pixels` output pixels: a power of
/// two from 1 to 256, about one per [`PIXELS_PER_LANE`] pixels. On lavapipe, one workgroup of
/// 256 per element made the 8 x 80 pixels of a 480-channel 5 x 5 layer 12,000 workgroups of
/// barriers and little work.
pub(crate) fn weight_gradient_lanes(pixels: usize) -> usize {
    pixels
        .div_ceil(PIXELS_PER_LANE)
        .next_power_of_two()
        .min(256)
}

impl GpuStorage {
    /// The depthwise convolution (`Convolution::depthwise_conv2d`): `self` is the input
    /// `[n, c, h, w]`, `weight` `[c * multiplier, 1, kh, kw]` (any strides); a contiguous
    /// `[n, c * multiplier, oh, ow]`.
    pub(crate) fn depthwise_conv2d(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<GpuStorage> {
        const OP: &str = "depthwise_conv2d";
        check_operands(OP, self, weight)?;
        let shape = Conv2dShape::depthwise(OP, layout, weight_layout, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        let count: usize = shape.output_shape().iter().product();
        let header = header(OP, &shape, count)?;
        let header = with_weight(with_input(header, layout)?, weight_layout)?;
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        let key = ConvKernel::Depthwise {
            dtype: self.dtype,
            pass: DepthwisePass::Forward,
        };
        let buffers = [self.raw()?, weight.raw()?, out.raw()?];
        GpuStorage::launch(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            count,
        )?;
        Ok(out)
    }

    /// The depthwise convolution's input gradient
    /// (`Convolution::depthwise_conv2d_backward_input`): `self` is the output gradient,
    /// `weight` the forward's (any strides); a contiguous `[n, c, h, w]` of `input_shape`.
    pub(crate) fn depthwise_conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<GpuStorage> {
        const OP: &str = "depthwise_conv2d_backward_input";
        check_operands(OP, self, weight)?;
        let shape =
            depthwise_backward_shape(OP, layout, input_shape, &weight_layout.shape, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        let count: usize = input_shape.iter().product();
        let header = header(OP, &shape, count)?;
        let header = with_weight(with_grad(header, layout)?, weight_layout)?;
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        let key = ConvKernel::Depthwise {
            dtype: self.dtype,
            pass: DepthwisePass::InputGradient,
        };
        let buffers = [self.raw()?, weight.raw()?, out.raw()?];
        GpuStorage::launch(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            count,
        )?;
        Ok(out)
    }

    /// The depthwise convolution's weight gradient
    /// (`Convolution::depthwise_conv2d_backward_weight`): `self` is the forward's input,
    /// `grad` the output gradient (any strides); a contiguous `[c * multiplier, 1, kh, kw]`
    /// of `weight_shape`, [`weight_gradient_lanes`] invocations per element.
    pub(crate) fn depthwise_conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<GpuStorage> {
        const OP: &str = "depthwise_conv2d_backward_weight";
        check_operands(OP, self, grad)?;
        let shape = depthwise_backward_shape(OP, grad_layout, &layout.shape, weight_shape, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, grad_layout, grad.len)?;
        let count: usize = weight_shape.iter().product();
        let pixels = shape.batch * shape.output.0 * shape.output.1;
        // The kernel's pixel loop steps by up to 256 and its element index must not wrap.
        word(pixels + 256)?;
        word(count.saturating_add(256))?;
        let lanes = weight_gradient_lanes(pixels);
        let header = DepthwiseParams {
            lanes: word(lanes)?,
            ..header(OP, &shape, count)?
        };
        let header = with_grad(with_input(header, layout)?, grad_layout)?;
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        let key = ConvKernel::Depthwise {
            dtype: self.dtype,
            pass: DepthwisePass::WeightGradient,
        };
        let buffers = [self.raw()?, grad.raw()?, out.raw()?];
        // `256 / lanes` elements per workgroup of 256 invocations.
        let workgroups = count.div_ceil(256 / lanes);
        GpuStorage::launch(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            workgroups * 256,
        )?;
        Ok(out)
    }
}

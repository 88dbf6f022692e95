//! Kernel families `MaxPool2d` and `MaxPool2dBackward`, and the `GpuStorage` primitives they
//! serve: 2-D max pooling as one kernel per direction instead of k·k elementwise passes over
//! strided tap views. The forward runs one invocation per output element
//! (`shaders/max_pool2d.wgsl`); the gradient takes two passes: one invocation per window finds
//! the tap its gradient goes to (`shaders/max_pool2d_route.wgsl`), then one invocation per
//! input element sums the gradients of the windows routed to it
//! (`shaders/max_pool2d_backward.wgsl`): no atomics, deterministic. Both read their operands through their strides, share the
//! window arithmetic of `shaders/pool_common.wgsl` and follow `cpu/pool.rs`, the reference.
//! F32 and F16 (computed in f32); the geometry is `geometry::PoolShape`. Params:
//! [`PoolParams`].
//!
//! Those kernels take any window from their parameters. A call whose window fits
//! [`FixedWindow`] runs kernels generated for that window instead (`pool/tiled.rs`): tiles
//! staged through workgroup memory with coalesced loads, and the gradient's two passes in one
//! kernel. Before both, a forward whose window halves the image over a contiguous input with
//! rows of whole 16-byte vectors (`vectorized::plan`) runs `pool/vectorized.rs`: 16-byte
//! loads, nothing staged; its gradient likewise (`pool/halving_backward.rs`).

mod contract;
pub(crate) mod kernel;

use crate::backend::contract::into_format;
use crate::backend::gpu::pool::kernel::PoolKernel;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::operands::unsupported;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{PoolShape, Window};
use crate::layout::{Layout, MemoryFormat};

mod channels_last;
mod channels_last_backward;
mod halving_backward;
mod tiled;
mod vectorized;

pub(crate) use channels_last::source as channels_last_source;
pub use channels_last::UnrolledTaps;
pub(crate) use tiled::forward_source;
pub use tiled::FixedWindow;
pub(crate) use vectorized::source as vectorized_source;
pub use vectorized::HalvingWindow;

kernel_params! {
    /// Parameters of `shaders/max_pool2d.wgsl` and `shaders/max_pool2d_backward.wgsl` (the
    /// forward leaves the output and gradient views at 0: it writes a contiguous output).
    struct PoolParams {
        /// Invocations that write: output elements (forward) or input elements (gradient).
        count: u32,
        channels: u32,
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
        input_offset: u32,
        input_stride_n: u32,
        input_stride_c: u32,
        input_stride_h: u32,
        input_stride_w: u32,
        output_offset: u32,
        output_stride_n: u32,
        output_stride_c: u32,
        output_stride_h: u32,
        output_stride_w: u32,
        grad_offset: u32,
        grad_stride_n: u32,
        grad_stride_c: u32,
        grad_stride_h: u32,
        grad_stride_w: u32,
    }
}

/// The three max pooling kernels: the forward, and the gradient's two passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolPass {
    /// `shaders/max_pool2d.wgsl`: one invocation per output element.
    Forward,
    /// `shaders/max_pool2d_route.wgsl`: the tap each window routes its gradient to.
    Route,
    /// `shaders/max_pool2d_backward.wgsl`: the input gradient gathered by those routes.
    Gather,
    /// Both passes in one kernel, tiled, for one window (`pool/tiled.rs`).
    Tiled(FixedWindow),
    /// The route over a channels-last output, 16 bytes of channels an invocation
    /// (`pool/channels_last_backward.rs`).
    ChannelsLastRoute,
    /// The gather into a channels-last input gradient by those routes.
    ChannelsLastGather,
    /// Routing and gathering in one kernel, 16-byte vectors of a row pair per invocation, for
    /// one halving window (`pool/halving_backward.rs`).
    Halving(HalvingWindow),
}

/// The gathering gradients' window arithmetic.
const WINDOW_RANGE: &str = include_str!("../shaders/pool_window_range.wgsl");

/// WGSL of `PoolKernel::MaxPool2d` (the forward) or `PoolKernel::MaxPool2dBackward` (`pass`).
pub(crate) fn source(dtype: DType, pass: PoolPass) -> String {
    let mut text = value_header(dtype);
    text.push_str(PoolParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/pool_planes.wgsl"));
    match pass {
        PoolPass::Forward => {
            text.push_str(include_str!("../shaders/pool_common.wgsl"));
            text.push_str(include_str!("../shaders/max_pool2d.wgsl"));
        }
        PoolPass::Route => {
            text.push_str(include_str!("../shaders/pool_common.wgsl"));
            text.push_str(include_str!("../shaders/max_pool2d_route.wgsl"));
        }
        PoolPass::Gather => {
            text.push_str(WINDOW_RANGE);
            text.push_str(include_str!("../shaders/max_pool2d_backward.wgsl"));
        }
        PoolPass::Tiled(window) => return tiled::backward_source(dtype, window),
        PoolPass::Halving(window) => return halving_backward::source(dtype, window),
        PoolPass::ChannelsLastRoute | PoolPass::ChannelsLastGather => {
            return channels_last_backward::source(dtype, pass)
        }
    }
    text
}

/// The catalogue entries of both families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<PoolKernel>, dtype: DType) {
    if is_pool_dtype(dtype) {
        let resnet = FixedWindow::RESNET;
        keys.push(PoolKernel::MaxPool2d {
            dtype,
            window: None,
        });
        keys.push(PoolKernel::MaxPool2d {
            dtype,
            window: Some(resnet),
        });
        for pass in [
            PoolPass::Route,
            PoolPass::Gather,
            PoolPass::Tiled(resnet),
            PoolPass::ChannelsLastRoute,
            PoolPass::ChannelsLastGather,
        ] {
            keys.push(PoolKernel::MaxPool2dBackward { dtype, pass });
        }
        for window in HalvingWindow::all() {
            keys.push(PoolKernel::MaxPool2dVectorized { dtype, window });
            keys.push(PoolKernel::MaxPool2dBackward {
                dtype,
                pass: PoolPass::Halving(window),
            });
        }
        let unrolled = channels_last::UnrolledTaps::all().into_iter().map(Some);
        for taps in std::iter::once(None).chain(unrolled) {
            keys.push(PoolKernel::MaxPool2dChannelsLast { dtype, taps });
        }
    }
}

/// Whether the GPU pools `dtype` (the float dtypes it stores).
fn is_pool_dtype(dtype: DType) -> bool {
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

/// The header for `shape` with `count` writing invocations and the input view `layout`.
fn header(shape: &PoolShape, count: usize, layout: &Layout) -> Result<PoolParams> {
    let window = &shape.window;
    let [input_offset, input_stride_n, input_stride_c, input_stride_h, input_stride_w] =
        view_words(layout)?;
    Ok(PoolParams {
        count: word(count)?,
        channels: word(shape.channels)?,
        height: word(shape.input.0)?,
        width: word(shape.input.1)?,
        out_height: word(shape.output.0)?,
        out_width: word(shape.output.1)?,
        kernel_h: word(window.kernel.0)?,
        kernel_w: word(window.kernel.1)?,
        stride_h: word(window.stride.0)?,
        stride_w: word(window.stride.1)?,
        padding_h: word(window.padding.0)?,
        padding_w: word(window.padding.1)?,
        dilation_h: word(window.dilation.0)?,
        dilation_w: word(window.dilation.1)?,
        input_offset,
        input_stride_n,
        input_stride_c,
        input_stride_h,
        input_stride_w,
        ..PoolParams::default()
    })
}

impl GpuStorage {
    /// 2-D max pooling of `[n, c, h, w]` (any strides) into `[n, c, oh, ow]` dense in
    /// `format` (`Pooling::max_pool2d`): channels-last, the channels-last kernel where
    /// `channels_last::plan` accepts the input, else the row-major result copied; row-major,
    /// the vectorized kernel where `vectorized::plan` accepts the call, else the tiled kernel
    /// for the window, else one invocation per output element.
    pub fn max_pool2d(
        &self,
        layout: &Layout,
        window: &Window,
        format: MemoryFormat,
    ) -> Result<GpuStorage> {
        const OP: &str = "max_pool2d";
        if !is_pool_dtype(self.dtype) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let shape = PoolShape::new(OP, layout, window)?;
        check_view(OP, layout, self.len)?;
        let count: usize = shape.output_shape().iter().product();
        if format == MemoryFormat::ChannelsLast {
            if !channels_last::plan(self.dtype, layout, &shape) {
                let out = self.max_pool2d(layout, window, MemoryFormat::Contiguous)?;
                return into_format(out, &shape.output_shape(), format);
            }
            let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
            if count > 0 {
                channels_last::dispatch(self, layout, &shape, &out)?;
            }
            return Ok(out);
        }
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        if count == 0 {
            return Ok(out);
        }
        if let Some(window) = vectorized::plan(self.dtype, layout, &shape) {
            vectorized::dispatch(self, layout, &shape, window, &out)?;
            return Ok(out);
        }
        if let Some((fixed, grid)) = tiled::forward_plan(&self.device, &shape) {
            let key = PoolKernel::MaxPool2d {
                dtype: self.dtype,
                window: Some(fixed),
            };
            let buffers = [self.raw()?, out.raw()?];
            tiled::dispatch(
                &self.device,
                (&key, &shape),
                header(&shape, count, layout)?,
                &buffers,
                grid,
            )?;
            return Ok(out);
        }
        let params = Params::with_header(&header(&shape, count, layout)?, 0);
        GpuStorage::launch(
            &self.device,
            &PoolKernel::MaxPool2d {
                dtype: self.dtype,
                window: None,
            },
            &params,
            &[self.raw()?, out.raw()?],
            count,
        )?;
        Ok(out)
    }

    /// Max pooling's input gradient (`Pooling::max_pool2d_backward`): `self` is the
    /// forward's input, `output` its output, `grad` the output gradient; `[n, c, h, w]` dense
    /// in `format`, gathered one invocation per input element (per 16-byte vector of channels
    /// where input and output are channels-last: `pool/channels_last_backward.rs`).
    pub fn max_pool2d_backward(
        &self,
        layout: &Layout,
        (output, output_layout): (&GpuStorage, &Layout),
        (grad, grad_layout): (&GpuStorage, &Layout),
        window: &Window,
        format: MemoryFormat,
    ) -> Result<GpuStorage> {
        const OP: &str = "max_pool2d_backward";
        if let Some(other) = [output.dtype, grad.dtype]
            .into_iter()
            .find(|&dtype| dtype != self.dtype)
        {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: self.dtype,
                rhs: other,
            });
        }
        if !is_pool_dtype(self.dtype) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let shape = PoolShape::new(OP, layout, window)?;
        shape.expect_output(OP, "output", output_layout)?;
        shape.expect_output(OP, "output gradient", grad_layout)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, output_layout, output.len)?;
        check_view(OP, grad_layout, grad.len)?;
        let count: usize = shape.input_shape().iter().product();
        if format == MemoryFormat::ChannelsLast
            && channels_last_backward::plan(self.dtype, layout, output_layout, &shape)
        {
            let operands = [(self, layout), (output, output_layout), (grad, grad_layout)];
            return channels_last_backward::dispatch(operands, &shape);
        }
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        if count == 0 {
            return Ok(out);
        }
        let views = (layout, output_layout, grad_layout);
        if let Some(window) = halving_backward::plan(self.dtype, views, &shape) {
            let operands = [(self, layout), (output, output_layout), (grad, grad_layout)];
            halving_backward::dispatch(operands, &shape, window, &out)?;
            return into_format(out, &shape.input_shape(), format);
        }
        let [output_offset, output_stride_n, output_stride_c, output_stride_h, output_stride_w] =
            view_words(output_layout)?;
        let [grad_offset, grad_stride_n, grad_stride_c, grad_stride_h, grad_stride_w] =
            view_words(grad_layout)?;
        let header = PoolParams {
            output_offset,
            output_stride_n,
            output_stride_c,
            output_stride_h,
            output_stride_w,
            grad_offset,
            grad_stride_n,
            grad_stride_c,
            grad_stride_h,
            grad_stride_w,
            ..header(&shape, count, layout)?
        };
        if let Some((fixed, grid)) = tiled::backward_plan(&self.device, &shape) {
            let key = PoolKernel::MaxPool2dBackward {
                dtype: self.dtype,
                pass: PoolPass::Tiled(fixed),
            };
            let buffers = [self.raw()?, output.raw()?, grad.raw()?, out.raw()?];
            tiled::dispatch(&self.device, (&key, &shape), header, &buffers, grid)?;
            return into_format(out, &shape.input_shape(), format);
        }
        let params = Params::with_header(&header, 0);
        // Pass 1: each window's routed tap, over the output; pass 2: the gather over the input.
        let windows: usize = shape.output_shape().iter().product();
        let route = GpuStorage::allocate(&self.device, OP, windows, DType::U32)?;
        GpuStorage::launch(
            &self.device,
            &PoolKernel::MaxPool2dBackward {
                dtype: self.dtype,
                pass: PoolPass::Route,
            },
            &Params::with_header(
                &PoolParams {
                    count: word(windows)?,
                    ..header
                },
                0,
            ),
            &[self.raw()?, output.raw()?, route.raw()?],
            windows,
        )?;
        GpuStorage::launch(
            &self.device,
            &PoolKernel::MaxPool2dBackward {
                dtype: self.dtype,
                pass: PoolPass::Gather,
            },
            &params,
            &[route.raw()?, grad.raw()?, out.raw()?],
            count,
        )?;
        into_format(out, &shape.input_shape(), format)
    }
}

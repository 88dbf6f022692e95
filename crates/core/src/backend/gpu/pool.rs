//! Kernel families `MaxPool2d` and `MaxPool2dBackward`, and the `GpuStorage` primitives they
//! serve: 2-D max pooling as one kernel per direction instead of k·k elementwise passes over
//! strided tap views. The forward runs one invocation per output element
//! (`shaders/max_pool2d.wgsl`); the gradient takes two passes: one invocation per window finds
//! the tap its gradient goes to (`shaders/max_pool2d_route.wgsl`), then one invocation per
//! input element sums the gradients of the windows routed to it
//! (`shaders/max_pool2d_backward.wgsl`): no atomics, deterministic. Both read their operands through their strides, share the
//! window arithmetic of `shaders/pool_common.wgsl` and follow `cpu/pool.rs`, the reference.
//! F32 and F16 (computed in f32); the geometry is `geometry::PoolShape`. Params:
//! [`PoolParams`]. Each call runs kernels generated for its window ([`FixedWindow`]: the
//! window's numbers as constants, so that the taps unroll); the parameters carry the window
//! too, for the generic kernels of the catalogue.

use super::kernels::KernelKey;
use super::ops::unsupported;
use super::params::{check_view, kernel_params, word, KernelParams, Params};
use super::storage::GpuStorage;
use super::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{PoolShape, Window};
use crate::layout::Layout;

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
}

/// The window a max pooling kernel is generated for, as WGSL constants (so that its taps
/// unroll and the divisions by its stride and dilation become shifts and multiplications):
/// `[kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w]`.
/// Keys without one read the window from the parameters (any window, the catalogue's
/// generic kernels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedWindow([u8; 8]);

/// The names of [`FixedWindow`]'s numbers, as `PoolParams` spells them.
const WINDOW_FIELDS: [&str; 8] = [
    "kernel_h",
    "kernel_w",
    "stride_h",
    "stride_w",
    "padding_h",
    "padding_w",
    "dilation_h",
    "dilation_w",
];

impl FixedWindow {
    /// `window`'s numbers, or `None` when one is over 255 (the generic kernel runs).
    pub(crate) fn of(window: &Window) -> Option<FixedWindow> {
        let numbers = [
            window.kernel.0,
            window.kernel.1,
            window.stride.0,
            window.stride.1,
            window.padding.0,
            window.padding.1,
            window.dilation.0,
            window.dilation.1,
        ];
        let mut fixed = [0u8; 8];
        for (slot, number) in fixed.iter_mut().zip(numbers) {
            *slot = u8::try_from(number).ok()?;
        }
        Some(FixedWindow(fixed))
    }
}

/// `fn window_kernel_h() -> u32` and its seven siblings: the fixed window's constants, or
/// the parameters' words.
fn window_functions(window: Option<FixedWindow>) -> String {
    let mut text = String::new();
    for (index, field) in WINDOW_FIELDS.iter().enumerate() {
        let value = match window {
            Some(FixedWindow(numbers)) => format!("{}u", numbers[index]),
            None => format!("params.{field}"),
        };
        text.push_str(&format!(
            "fn window_{field}() -> u32 {{\n    return {value};\n}}\n"
        ));
    }
    text
}

/// WGSL of `KernelKey::MaxPool2d` (the forward) or `KernelKey::MaxPool2dBackward` (`pass`),
/// for `window` (`None`: any window, read from the parameters).
pub(crate) fn source(dtype: DType, pass: PoolPass, window: Option<FixedWindow>) -> String {
    let mut text = value_header(dtype);
    text.push_str(PoolParams::WGSL);
    text.push_str(COMMON);
    text.push_str(&window_functions(window));
    text.push_str(include_str!("shaders/pool_planes.wgsl"));
    match pass {
        PoolPass::Forward => {
            text.push_str(include_str!("shaders/pool_common.wgsl"));
            text.push_str(include_str!("shaders/max_pool2d.wgsl"));
        }
        PoolPass::Route => {
            text.push_str(include_str!("shaders/pool_common.wgsl"));
            text.push_str(include_str!("shaders/max_pool2d_route.wgsl"));
        }
        PoolPass::Gather => text.push_str(include_str!("shaders/max_pool2d_backward.wgsl")),
    }
    text
}

/// The catalogue entries of both families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<KernelKey>, dtype: DType) {
    if is_pool_dtype(dtype) {
        // Generic, and ResNet's 3x3 window of stride 2 and padding 1.
        let resnet = FixedWindow([3, 3, 2, 2, 1, 1, 1, 1]);
        for window in [None, Some(resnet)] {
            keys.push(KernelKey::MaxPool2d { dtype, window });
            for pass in [PoolPass::Route, PoolPass::Gather] {
                keys.push(KernelKey::MaxPool2dBackward {
                    dtype,
                    pass,
                    window,
                });
            }
        }
    }
}

/// Whether the GPU pools `dtype` (the float dtypes it stores).
fn is_pool_dtype(dtype: DType) -> bool {
    match dtype {
        DType::F32 | DType::F16 => true,
        DType::F64 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => false,
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
    /// 2-D max pooling of `[n, c, h, w]` (any strides) into a contiguous `[n, c, oh, ow]`
    /// (`BackendStorage::max_pool2d`): one invocation per output element.
    pub fn max_pool2d(&self, layout: &Layout, window: &Window) -> Result<GpuStorage> {
        const OP: &str = "max_pool2d";
        if !is_pool_dtype(self.dtype) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let shape = PoolShape::new(OP, layout, window)?;
        check_view(OP, layout, self.len)?;
        let count: usize = shape.output_shape().iter().product();
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        if count == 0 {
            return Ok(out);
        }
        let params = Params::with_header(&header(&shape, count, layout)?, 0);
        GpuStorage::launch(
            &self.device,
            &KernelKey::MaxPool2d {
                dtype: self.dtype,
                window: FixedWindow::of(window),
            },
            &params,
            &[self.raw()?, out.raw()?],
            count,
        )?;
        Ok(out)
    }

    /// Max pooling's input gradient (`BackendStorage::max_pool2d_backward`): `self` is the
    /// forward's input, `output` its output, `grad` the output gradient; a contiguous
    /// `[n, c, h, w]`, gathered one invocation per input element.
    pub fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &GpuStorage,
        output_layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        window: &Window,
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
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        if count == 0 {
            return Ok(out);
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
        let params = Params::with_header(&header, 0);
        // Pass 1: each window's routed tap, over the output; pass 2: the gather over the input.
        let windows: usize = shape.output_shape().iter().product();
        let route = GpuStorage::allocate(&self.device, OP, windows, DType::U32)?;
        GpuStorage::launch(
            &self.device,
            &KernelKey::MaxPool2dBackward {
                dtype: self.dtype,
                pass: PoolPass::Route,
                window: FixedWindow::of(window),
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
            &KernelKey::MaxPool2dBackward {
                dtype: self.dtype,
                pass: PoolPass::Gather,
                window: FixedWindow::of(window),
            },
            &params,
            &[route.raw()?, grad.raw()?, out.raw()?],
            count,
        )?;
        Ok(out)
    }
}

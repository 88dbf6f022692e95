//! The channels-last max pooling forward (`PoolKernel::MaxPool2dChannelsLast`): any window
//! over an input dense channels-last (`MemoryFormat::ChannelsLast`, `[n, h, w, c]` in
//! memory), written channels-last, so that a network whose convolutions run channels-last
//! (`conv/nhwc.rs`) pools without a transposing copy on either side.
//!
//! Design: a pixel's channels are adjacent, so one 16-byte vector holds `lanes` channels (8
//! for f16, 4 for f32) of one pixel. One invocation computes one output pixel's vector: for
//! each tap of the window inside the image it loads the input pixel's vector under it and
//! keeps the per-lane maximum, then writes one vector. Windows of up to 3 x 3 taps are
//! unrolled ([`UnrolledTaps`]): every tap's load is issued before the first comparison (taps
//! outside the image load the nearest pixel inside, a cache hit, and are never compared), so
//! an invocation waits on memory once instead of once per tap. Neighbouring invocations take
//! neighbouring vectors of one pixel and then of the next pixel, so every load and store is
//! coalesced; the taps that neighbouring windows share hit the cache. Values are compared in
//! their stored type with the generic kernel's test (`shaders/max_pool2d.wgsl`) in row-major
//! tap order: a NaN in the window wins, padding never wins over a real value, -inf pools to
//! -inf.
//!
//! [`plan`] decides where it applies; `GpuStorage::max_pool2d` (`pool/`) pools every other
//! call row-major and copies the result channels-last where that format was asked for.

use crate::backend::gpu::pool::kernel::PoolKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, vector_lanes, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::PoolShape;
use crate::layout::Layout;
use std::fmt::Write;

/// The taps of a window the kernel is generated for, unrolled: `kernel_h x kernel_w`, each 1
/// to 3 (stride, padding and dilation stay parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnrolledTaps {
    kernel_h: u8,
    kernel_w: u8,
}

impl UnrolledTaps {
    /// The unrolled taps of a `(kernel_h, kernel_w)` window, `None` past 3 x 3.
    pub(crate) fn of(kernel: (usize, usize)) -> Option<UnrolledTaps> {
        let taps = |size: usize| {
            u8::try_from(size)
                .ok()
                .filter(|taps| (1..=3).contains(taps))
        };
        Some(UnrolledTaps {
            kernel_h: taps(kernel.0)?,
            kernel_w: taps(kernel.1)?,
        })
    }

    /// Every unrolled window (the catalogue's instances), 1 x 1 to 3 x 3.
    pub(crate) fn all() -> Vec<UnrolledTaps> {
        (1..=3)
            .flat_map(|kernel_h| (1..=3).map(move |kernel_w| UnrolledTaps { kernel_h, kernel_w }))
            .collect()
    }
}

kernel_params! {
    /// Parameters of the channels-last max pooling forward (`pool/channels_last.rs`) and
    /// gradient (`pool/channels_last_backward.rs`).
    struct ChannelsLastPoolParams {
        /// Invocations that write: output pixels x vectors per pixel.
        count: u32,
        /// 16-byte vectors per pixel: channels / lanes.
        channel_vectors: u32,
        height: u32,
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
        /// The input view's offset, in vectors.
        input_offset: u32,
        /// The gradient's passes only (`pool/channels_last_backward.rs`; 0 in the forward):
        /// the pooled output view's offset in vectors, the output gradient's offset and
        /// strides in elements.
        output_offset: u32,
        grad_offset: u32,
        grad_stride_n: u32,
        grad_stride_c: u32,
        grad_stride_h: u32,
        grad_stride_w: u32,
    }
}

/// Whether the kernel pools the view `layout` of `dtype` data: F16 or F32, the view dense
/// channels-last (`[n, h, w, c]` in memory) from an offset of whole vectors, the channels a
/// multiple of the lanes.
pub(super) fn plan(dtype: DType, layout: &Layout, shape: &PoolShape) -> bool {
    let Some(lanes) = vector_lanes(dtype) else {
        return false;
    };
    layout.rank() == 4
        && layout.permute(&[0, 2, 3, 1]).is_contiguous()
        && layout.offset.is_multiple_of(lanes)
        && shape.channels > 0
        && shape.channels.is_multiple_of(lanes)
}

/// The parameters of pooling `shape` over the input view `layout` in vectors of `lanes`
/// channels, `count` invocations (the gradient's own fields 0).
pub(super) fn window_params(
    shape: &PoolShape,
    layout: &Layout,
    lanes: usize,
    count: usize,
) -> Result<ChannelsLastPoolParams> {
    let window = &shape.window;
    Ok(ChannelsLastPoolParams {
        count: word(count)?,
        channel_vectors: word(shape.channels / lanes)?,
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
        input_offset: word(layout.offset / lanes)?,
        ..ChannelsLastPoolParams::default()
    })
}

/// Record the channels-last forward of `input` (the view `layout`, which [`plan`] accepted)
/// into `output`, dense channels-last.
pub(super) fn dispatch(
    input: &GpuStorage,
    layout: &Layout,
    shape: &PoolShape,
    output: &GpuStorage,
) -> Result<()> {
    // `plan` accepted only dtypes with lanes; 4 keeps this total without a panic.
    let lanes = vector_lanes(input.dtype).unwrap_or(4);
    let channel_vectors = shape.channels / lanes;
    let count = shape.batch * shape.output.0 * shape.output.1 * channel_vectors;
    let header = window_params(shape, layout, lanes, count)?;
    GpuStorage::launch(
        &input.device,
        &PoolKernel::MaxPool2dChannelsLast {
            dtype: input.dtype,
            taps: UnrolledTaps::of(shape.window.kernel),
        },
        &Params::with_header(&header, 0),
        &[input.raw()?, output.raw()?],
        count,
    )
}

/// The WGSL that opens a loop over a window's taps inside the image and loads the input
/// pixel's vector under each as `v` (the forward's and the gradient route's generic kernels;
/// `ox`, `oy`, `image`, `channel_vector` and `last` defined before it). Two braces stay open.
pub(super) const WINDOW_TAPS: &str = "    for (var ky = 0u; ky < params.kernel_h; ky = ky + 1u) {
        let y = i32(oy * params.stride_h + ky * params.dilation_h) - i32(params.padding_h);
        if (y < 0 || y >= i32(params.height)) {
            continue;
        }
        for (var kx = 0u; kx < params.kernel_w; kx = kx + 1u) {
            let x = i32(ox * params.stride_w + kx * params.dilation_w) - i32(params.padding_w);
            if (x < 0 || x >= i32(params.width)) {
                continue;
            }
            let at = params.input_offset
                + ((image * params.height + u32(y)) * params.width + u32(x)) * params.channel_vectors
                + channel_vector;
            let v = input[min(at, last)];
";

/// WGSL of `PoolKernel::MaxPool2dChannelsLast` for `dtype` (F16 or F32; other dtypes are
/// generated as F32's vectors of their storage type, never planned), its taps unrolled where
/// `taps` is some.
pub(crate) fn source(dtype: DType, taps: Option<UnrolledTaps>) -> String {
    let lanes = vector_lanes(dtype).unwrap_or(4);
    let (vector, lane): (&str, fn(usize) -> String) = match dtype {
        DType::F16 => ("mat2x4<S>", |l| format!("v[{}][{}]", l / 4, l % 4)),
        DType::F32
        | DType::BF16
        | DType::F64
        | DType::I32
        | DType::U32
        | DType::U8
        | DType::Bool => ("vec4<S>", |l| format!("v[{l}]")),
    };
    let mut text = value_header(dtype);
    text.push_str(ChannelsLastPoolParams::WGSL);
    text.push_str(COMMON);
    let _ = write!(
        text,
        r#"// Channels-last max pooling forward (pool/channels_last.rs): {lanes} channels of one
// output pixel per invocation.
@group(0) @binding(1) var<storage, read> input: array<{vector}>;
@group(0) @binding(2) var<storage, read_write> output: array<{vector}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
    let channel_vector = i % params.channel_vectors;
    let pixel = i / params.channel_vectors;
    let ox = pixel % params.out_width;
    let oy = (pixel / params.out_width) % params.out_height;
    let image = pixel / (params.out_width * params.out_height);
    let lowest = S(bitcast<f32>(0xff800000u));
    let last = arrayLength(&input) - 1u;
"#
    );
    for l in 0..lanes {
        let _ = writeln!(text, "    var best{l} = lowest;");
    }
    let compare = |text: &mut String, indent: &str, vector: &str| {
        for l in 0..lanes {
            let value = lane(l).replace('v', vector);
            let _ = writeln!(
                text,
                "{indent}if (is_nan_value(T({value})) || {value} > best{l}) {{ best{l} = {value}; }}"
            );
        }
    };
    if let Some(taps) = taps {
        let (kernel_h, kernel_w) = (taps.kernel_h, taps.kernel_w);
        for ky in 0..kernel_h {
            let _ = writeln!(
                text,
                "    let y{ky} = i32(oy * params.stride_h + {ky}u * params.dilation_h) - i32(params.padding_h);
    let row{ky} = (image * params.height + u32(clamp(y{ky}, 0, i32(params.height) - 1))) * params.width;"
            );
        }
        for kx in 0..kernel_w {
            let _ = writeln!(
                text,
                "    let x{kx} = i32(ox * params.stride_w + {kx}u * params.dilation_w) - i32(params.padding_w);
    let column{kx} = u32(clamp(x{kx}, 0, i32(params.width) - 1));"
            );
        }
        for ky in 0..kernel_h {
            for kx in 0..kernel_w {
                let _ = writeln!(
                    text,
                    "    let v{ky}{kx} = input[min(params.input_offset + (row{ky} + column{kx}) * params.channel_vectors + channel_vector, last)];"
                );
            }
        }
        for ky in 0..kernel_h {
            for kx in 0..kernel_w {
                let _ = writeln!(
                    text,
                    "    if (y{ky} >= 0 && y{ky} < i32(params.height) && x{kx} >= 0 && x{kx} < i32(params.width)) {{"
                );
                compare(&mut text, "        ", &format!("v{ky}{kx}"));
                let _ = writeln!(text, "    }}");
            }
        }
    } else {
        text.push_str(WINDOW_TAPS);
        compare(&mut text, "            ", "v");
        let _ = writeln!(text, "        }}\n    }}");
    }
    let bests: Vec<String> = (0..lanes).map(|l| format!("best{l}")).collect();
    let result = match dtype {
        DType::F16 => format!(
            "mat2x4<S>(vec4<S>({}), vec4<S>({}))",
            bests[..4].join(", "),
            bests[4..].join(", ")
        ),
        DType::F32
        | DType::BF16
        | DType::F64
        | DType::I32
        | DType::U32
        | DType::U8
        | DType::Bool => {
            format!("vec4<S>({})", bests.join(", "))
        }
    };
    let _ = write!(text, "    output[i] = {result};\n}}\n");
    text
}

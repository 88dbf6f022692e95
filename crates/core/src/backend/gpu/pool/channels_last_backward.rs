//! Max pooling's input gradient over channels-last operands (`PoolPass::ChannelsLastRoute`
//! and `PoolPass::ChannelsLastGather`): the routing and gathering passes of `pool/`, 16
//! bytes of channels an invocation, so that a network whose activations are channels-last
//! (`conv/nhwc.rs`, `pool/channels_last.rs`) gets its gradient channels-last without reading
//! planes through 64-element strides.
//!
//! - **route**: one invocation per output pixel's vector (`lanes` channels: 8 for f16, 4 for
//!   f32) loads the pooled vector and each tap's input vector, and keeps per lane the first
//!   tap, in row-major kernel order, whose input equals the output (NaN matching NaN; taps in
//!   the padding never match). The tap numbers go out as bytes (255: none), four to a word.
//! - **gather**: one invocation per input pixel's vector walks the windows that read its
//!   pixel (`shaders/pool_window_range.wgsl`), in ascending window order, and adds to each
//!   lane the window's output gradient where the window routed that lane to this tap; the
//!   output gradient is read through its strides (any layout), the input gradient written as
//!   dense channels-last vectors.
//!
//! The same routes and the same sums in the same order as the generic kernels, so the results
//! are identical to theirs and to the CPU's. [`plan`] says where it applies: F16 or F32, input
//! and output dense channels-last from offsets of whole vectors, channels a multiple of the
//! lanes, fewer than 255 taps.

use super::channels_last::{window_params, ChannelsLastPoolParams, WINDOW_TAPS};
use super::{PoolPass, WINDOW_RANGE};
use crate::backend::gpu::pool::kernel::PoolKernel;
use crate::backend::gpu::runtime::params::{word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, vector_lanes, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::PoolShape;
use crate::layout::Layout;
use std::fmt::Write;

/// Whether `layout` is dense channels-last (`[n, h, w, c]` in memory) from an offset of whole
/// vectors of `lanes` channels.
fn vectors_of(layout: &Layout, lanes: usize) -> bool {
    layout.rank() == 4
        && layout.permute(&[0, 2, 3, 1]).is_contiguous()
        && layout.offset.is_multiple_of(lanes)
}

/// Whether these kernels compute the gradient of pooling the view `layout` of `dtype` data
/// into the view `output_layout` (see the module header).
pub(super) fn plan(
    dtype: DType,
    layout: &Layout,
    output_layout: &Layout,
    shape: &PoolShape,
) -> bool {
    let Some(lanes) = vector_lanes(dtype) else {
        return false;
    };
    vectors_of(layout, lanes)
        && vectors_of(output_layout, lanes)
        && shape.channels > 0
        && shape.channels.is_multiple_of(lanes)
        && shape.window.kernel.0 * shape.window.kernel.1 < 255
}

/// Record both passes over the operands `[input, output, grad]` (each with its view; [`plan`]
/// accepted the first two): the input gradient, dense channels-last.
pub(super) fn dispatch(
    [(input, layout), (output, output_layout), (grad, grad_layout)]: [(&GpuStorage, &Layout); 3],
    shape: &PoolShape,
) -> Result<GpuStorage> {
    const OP: &str = "max_pool2d_backward";
    // `plan` accepted only dtypes with lanes; 4 keeps this total without a panic.
    let lanes = vector_lanes(input.dtype).unwrap_or(4);
    let channel_vectors = shape.channels / lanes;
    let pixels = shape.batch * shape.input.0 * shape.input.1;
    let out = GpuStorage::allocate(&input.device, OP, pixels * shape.channels, input.dtype)?;
    let windows = shape.batch * shape.output.0 * shape.output.1 * channel_vectors;
    if pixels == 0 || shape.channels == 0 {
        return Ok(out);
    }
    let strides = &grad_layout.strides;
    let header = ChannelsLastPoolParams {
        output_offset: word(output_layout.offset / lanes)?,
        grad_offset: word(grad_layout.offset)?,
        grad_stride_n: word(strides[0])?,
        grad_stride_c: word(strides[1])?,
        grad_stride_h: word(strides[2])?,
        grad_stride_w: word(strides[3])?,
        ..window_params(shape, layout, lanes, pixels * channel_vectors)?
    };
    // One tap byte per channel, four to a word (at least one word: an empty pooling output
    // still binds a buffer).
    let route = GpuStorage::allocate(&input.device, OP, (windows * lanes / 4).max(1), DType::U32)?;
    if windows > 0 {
        GpuStorage::launch(
            &input.device,
            &PoolKernel::MaxPool2dBackward {
                dtype: input.dtype,
                pass: PoolPass::ChannelsLastRoute,
            },
            &Params::with_header(
                &ChannelsLastPoolParams {
                    count: word(windows)?,
                    ..header
                },
                0,
            ),
            &[input.raw()?, output.raw()?, route.raw()?],
            windows,
        )?;
    }
    GpuStorage::launch(
        &input.device,
        &PoolKernel::MaxPool2dBackward {
            dtype: input.dtype,
            pass: PoolPass::ChannelsLastGather,
        },
        &Params::with_header(&header, 0),
        &[route.raw()?, grad.raw()?, out.raw()?],
        pixels * channel_vectors,
    )?;
    Ok(out)
}

/// WGSL of one pass (`ChannelsLastRoute` or `ChannelsLastGather`; other passes are generated
/// as the gather) for `dtype` (F16 or F32; other dtypes as F32's vectors, never planned).
pub(super) fn source(dtype: DType, pass: PoolPass) -> String {
    let lanes = vector_lanes(dtype).unwrap_or(4);
    let words = lanes / 4;
    let (vector, lane): (&str, fn(&str, usize) -> String) = match dtype {
        DType::F16 => ("mat2x4<S>", |v, l| format!("{v}[{}][{}]", l / 4, l % 4)),
        DType::F32
        | DType::BF16
        | DType::F64
        | DType::I32
        | DType::U32
        | DType::U8
        | DType::Bool => ("vec4<S>", |v, l| format!("{v}[{l}]")),
    };
    let route_type = if words == 2 { "vec2<u32>" } else { "u32" };
    let word_of = |l: usize| {
        if words == 2 {
            format!("routes[{}]", l / 4)
        } else {
            "routes".to_string()
        }
    };
    let mut text = value_header(dtype);
    text.push_str(ChannelsLastPoolParams::WGSL);
    text.push_str(COMMON);
    let _ = writeln!(
        text,
        "// Channels-last max pooling gradient (pool/channels_last_backward.rs): {lanes} channels
// of one pixel per invocation."
    );
    let entry = "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let channel_vector = i % params.channel_vectors;
    let pixel = i / params.channel_vectors;";
    if pass == PoolPass::ChannelsLastRoute {
        let _ = writeln!(
            text,
            "@group(0) @binding(1) var<storage, read> input: array<{vector}>;
@group(0) @binding(2) var<storage, read> pooled: array<{vector}>;
@group(0) @binding(3) var<storage, read_write> route: array<{route_type}>;

fn matches(value: T, maximum: T) -> bool {{
    return value == maximum || (is_nan_value(value) && is_nan_value(maximum));
}}

{entry}
    let ox = pixel % params.out_width;
    let oy = (pixel / params.out_width) % params.out_height;
    let image = pixel / (params.out_width * params.out_height);
    let maximum = pooled[min(params.output_offset + i, arrayLength(&pooled) - 1u)];
    let last = arrayLength(&input) - 1u;"
        );
        for l in 0..lanes {
            let _ = writeln!(text, "    var tap{l} = 255u;");
        }
        text.push_str(WINDOW_TAPS);
        text.push_str("            let tap = ky * params.kernel_w + kx;\n");
        for l in 0..lanes {
            let _ = writeln!(
                text,
                "            if (tap{l} == 255u && matches(T({}), T({}))) {{ tap{l} = tap; }}",
                lane("v", l),
                lane("maximum", l)
            );
        }
        text.push_str("        }\n    }\n");
        let packed: Vec<String> = (0..words)
            .map(|w| {
                let l = 4 * w;
                format!(
                    "tap{l} | (tap{} << 8u) | (tap{} << 16u) | (tap{} << 24u)",
                    l + 1,
                    l + 2,
                    l + 3
                )
            })
            .collect();
        let _ = writeln!(
            text,
            "    route[i] = {route_type}({});\n}}",
            packed.join(", ")
        );
        return text;
    }
    text.push_str(WINDOW_RANGE);
    let _ = writeln!(
        text,
        "@group(0) @binding(1) var<storage, read> route: array<{route_type}>;
@group(0) @binding(2) var<storage, read> grad: array<S>;
@group(0) @binding(3) var<storage, read_write> grad_input: array<{vector}>;

{entry}
    let x = pixel % params.width;
    let y = (pixel / params.width) % params.height;
    let image = pixel / (params.width * params.height);
    let route_last = arrayLength(&route) - 1u;
    let grad_last = arrayLength(&grad) - 1u;
    let grad_channels = params.grad_offset + image * params.grad_stride_n
        + channel_vector * {lanes}u * params.grad_stride_c;"
    );
    for l in 0..lanes {
        let _ = writeln!(text, "    var sum{l} = T(0.0);");
    }
    let _ = writeln!(
        text,
        "    let rows = window_range(y + params.padding_h, params.stride_h, params.dilation_h,
                            params.kernel_h, params.out_height);
    let columns = window_range(x + params.padding_w, params.stride_w, params.dilation_w,
                               params.kernel_w, params.out_width);
    for (var oi = rows.x; oi <= rows.y; oi = oi + 1u) {{
        let row_offset = y + params.padding_h - oi * params.stride_h;
        if (params.dilation_h != 1u && row_offset % params.dilation_h != 0u) {{
            continue;
        }}
        let ki = row_offset / params.dilation_h;
        for (var oj = columns.x; oj <= columns.y; oj = oj + 1u) {{
            let column_offset = x + params.padding_w - oj * params.stride_w;
            if (params.dilation_w != 1u && column_offset % params.dilation_w != 0u) {{
                continue;
            }}
            let tap = ki * params.kernel_w + column_offset / params.dilation_w;
            let window = (image * params.out_height + oi) * params.out_width + oj;
            let routes = route[min(window * params.channel_vectors + channel_vector, route_last)];
            let at = grad_channels + oi * params.grad_stride_h + oj * params.grad_stride_w;"
    );
    for l in 0..lanes {
        let _ = writeln!(
            text,
            "            if ((({} >> {}u) & 255u) == tap) {{ sum{l} = sum{l} + load_value(grad[min(at + {l}u * params.grad_stride_c, grad_last)]); }}",
            word_of(l),
            8 * (l % 4)
        );
    }
    text.push_str("        }\n    }\n");
    let sums: Vec<String> = (0..lanes).map(|l| format!("store_value(sum{l})")).collect();
    let result = if lanes == 8 {
        format!(
            "mat2x4<S>(vec4<S>({}), vec4<S>({}))",
            sums[..4].join(", "),
            sums[4..].join(", ")
        )
    } else {
        format!("vec4<S>({})", sums.join(", "))
    };
    let _ = writeln!(text, "    grad_input[i] = {result};\n}}");
    text
}

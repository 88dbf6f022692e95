//! The direct convolution for inputs with few channels (a network's stem: ResNet's 7x7
//! stride-2 convolution of 3-channel images), where the implicit GEMM (`conv.rs`) is bound by
//! its scalar gathers: K = c * kh * kw is short, and every tap of every column is gathered
//! again.
//!
//! One workgroup of 256 invocations computes an 8 x 16 tile of output pixels of one image for
//! 64 output channels. Per input channel it stages in workgroup memory the input patch the tile
//! sees (`(8 - 1) * stride + (kh - 1) * dilation + 1` rows by the same for 16 columns; zeros in
//! the padding) and the 64 channels' filter taps, laid out `[tap][channel]`; then each
//! invocation accumulates 2 pixels x 16 channels (eight named `vec4<f32>`) over the taps: per
//! tap two patch reads and four `vec4` filter reads (the same for every fourth invocation) for
//! 32 multiply-adds. Tiles walk (image, tile row, tile column) in a grid-stride loop, channel
//! groups of 64 along `workgroup.y`. The store applies the forward's epilogue where there is
//! one (`conv_epilogue.rs`). Every global read is bounds-checked, the workgroup arrays are
//! indexed inside their sizes ([`applies`] bounds the patch and the taps), so the kernel runs
//! without wgpu's runtime checks. Params: `conv_gemm.rs`'s [`ConvParams`] (B = the input's
//! view, A = the weight as a dense `[o, c * kh * kw]`).

use std::fmt::Write;

use super::conv_epilogue::{self, finish, BoundEpilogue, ConvEpilogueKey};
use super::conv_gemm::{self, ConvParams};
use super::kernels::KernelKey;
use super::params::{check_view, is_dense, word, Params};
use super::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::Layout;

/// Output rows of a tile.
const TILE_ROWS: usize = 8;
/// Output columns of a tile.
const TILE_COLUMNS: usize = 16;
/// Output channels of a workgroup.
const CHANNELS: usize = 64;
/// Most filter taps (`kh * kw`) the staged filter holds.
const MAX_TAPS: usize = 49;
/// Most elements of the staged input patch.
const MAX_PATCH: usize = 960;
/// Most input channels for which the direct kernel is a candidate (beyond, the implicit GEMM's
/// longer K fills its tiles).
pub(crate) const MAX_INPUT_CHANNELS: usize = 4;

/// Rows and columns of the patch a tile reads.
fn patch_size(params: &Conv2dParams, kernel: (usize, usize)) -> (usize, usize) {
    let rows = (TILE_ROWS - 1) * params.stride.0 + (kernel.0 - 1) * params.dilation.0 + 1;
    let columns = (TILE_COLUMNS - 1) * params.stride.1 + (kernel.1 - 1) * params.dilation.1 + 1;
    (rows, columns)
}

/// Whether the direct kernel computes this forward convolution: F32 or F16, one group, at most
/// [`MAX_INPUT_CHANNELS`] input channels, at most [`MAX_TAPS`] taps and a patch of at most
/// [`MAX_PATCH`] elements.
pub(crate) fn applies(dtype: DType, weight_shape: &[usize], params: &Conv2dParams) -> bool {
    let &[_, channels, kh, kw] = weight_shape else {
        return false;
    };
    let (rows, columns) = patch_size(params, (kh.max(1), kw.max(1)));
    matches!(dtype, DType::F32 | DType::F16)
        && params.groups == 1
        && (1..=MAX_INPUT_CHANNELS).contains(&channels)
        && kh * kw <= MAX_TAPS
        && kh * kw > 0
        && rows * columns <= MAX_PATCH
}

/// WGSL of `KernelKey::Conv2dDirect`.
pub(crate) fn source(dtype: DType, epilogue: Option<ConvEpilogueKey>) -> String {
    let mut w = conv_gemm::source_start(dtype);
    let weights = MAX_TAPS * CHANNELS / 4;
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> conv_input: array<S>;
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;"
    );
    w.push_str(&conv_epilogue::declarations(epilogue, 4));
    let _ = writeln!(
        w,
        "
var<workgroup> window_patch: array<f32, {MAX_PATCH}>;
// The filter taps of the workgroup's 64 channels, [tap][channel] as vec4s of 4 channels.
var<workgroup> taps: array<vec4<f32>, {weights}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let m = params.rows;
    let channels = params.channels;
    let kh = params.kernel_height;
    let kw = params.kernel_width;
    let taps_per_channel = kh * kw;
    let k = params.depth;
    let oh = params.out_height;
    let ow = params.out_width;
    let tiles_y = (oh + {tr}u) / {TILE_ROWS}u;
    let tiles_x = (ow + {tc}u) / {TILE_COLUMNS}u;
    let images = params.columns / max(oh * ow, 1u);
    let tiles = images * tiles_y * tiles_x;
    let patch_rows = {last_row}u * params.stride_height + (kh - 1u) * params.dilation_height + 1u;
    let patch_columns = {last_column}u * params.stride_width + (kw - 1u) * params.dilation_width + 1u;
    let patch_size = patch_rows * patch_columns;
    let group = local % 4u;
    let pixel0 = local / 4u;
    let pixel1 = pixel0 + 64u;
    let channel0 = workgroup.y * {CHANNELS}u;
    // Each pixel's position in the patch (top-left tap).
    let corner0 = (pixel0 / {TILE_COLUMNS}u) * params.stride_height * patch_columns
        + (pixel0 % {TILE_COLUMNS}u) * params.stride_width;
    let corner1 = (pixel1 / {TILE_COLUMNS}u) * params.stride_height * patch_columns
        + (pixel1 % {TILE_COLUMNS}u) * params.stride_width;
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let image = tile / (tiles_y * tiles_x);
        let tile_y = (tile / tiles_x) % tiles_y;
        let tile_x = tile % tiles_x;
        let origin_y = i32(tile_y * {TILE_ROWS}u * params.stride_height) - i32(params.pad_height);
        let origin_x = i32(tile_x * {TILE_COLUMNS}u * params.stride_width) - i32(params.pad_width);",
        tr = TILE_ROWS - 1,
        tc = TILE_COLUMNS - 1,
        last_row = TILE_ROWS - 1,
        last_column = TILE_COLUMNS - 1,
    );
    for half in 0..2 {
        for q in 0..4 {
            let _ = writeln!(w, "        var acc{half}{q} = vec4<f32>(0.0);");
        }
    }
    let _ = writeln!(
        w,
        "        for (var c = 0u; c < channels; c = c + 1u) {{
            // Stage the channel's patch (zeros in the padding) and the 64 channels' taps.
            for (var e = local; e < patch_size; e = e + 256u) {{
                let y = origin_y + i32(e / patch_columns);
                let x = origin_x + i32(e % patch_columns);
                let inside = y >= 0 && x >= 0 && u32(y) < params.height && u32(x) < params.width;
                let at = params.b_offset + image * params.b_stride_n + c * params.b_stride_c
                    + u32(max(y, 0)) * params.b_stride_h + u32(max(x, 0)) * params.b_stride_w;
                let value = conv_input[select(0u, min(at, arrayLength(&conv_input) - 1u), inside)];
                window_patch[min(e, {last_patch}u)] = select(0.0, f32(value), inside);
            }}
            // One invocation per (tap, 4 channels): whole vec4 stores, no shared writes.
            for (var e = local; e < taps_per_channel * {quads}u; e = e + 256u) {{
                let tap = e / {quads}u;
                let first = channel0 + (e % {quads}u) * 4u;
                var quad = vec4<f32>(0.0);
                for (var lane = 0u; lane < 4u; lane = lane + 1u) {{
                    let row = first + lane;
                    let at = params.a_offset + row * k + c * taps_per_channel + tap;
                    let value = conv_weight[min(at, arrayLength(&conv_weight) - 1u)];
                    quad[lane] = select(0.0, f32(value), row < m);
                }}
                taps[min(e, {last_quad}u)] = quad;
            }}
            workgroupBarrier();
            for (var ki = 0u; ki < kh; ki = ki + 1u) {{
                let shift_y = ki * params.dilation_height * patch_columns;
                for (var kj = 0u; kj < kw; kj = kj + 1u) {{
                    let shift = shift_y + kj * params.dilation_width;
                    let a0 = window_patch[min(corner0 + shift, {last_patch}u)];
                    let a1 = window_patch[min(corner1 + shift, {last_patch}u)];
                    let base = min((ki * kw + kj) * {quads}u + group * 4u, {last_base}u);",
        last_patch = MAX_PATCH - 1,
        quads = CHANNELS / 4,
        last_quad = weights - 1,
        last_base = weights - 4,
    );
    for q in 0..4 {
        let _ = writeln!(
            w,
            "                    let w{q} = taps[base + {q}u];
                    acc0{q} = acc0{q} + a0 * w{q};
                    acc1{q} = acc1{q} + a1 * w{q};"
        );
    }
    let _ = writeln!(
        w,
        "                }}
            }}
            workgroupBarrier();
        }}
        // The store: pixel p of the tile, channels channel0 + group * 16 + 0..16."
    );
    for half in 0..2 {
        let _ = writeln!(
            w,
            "        {{
            let y = tile_y * {TILE_ROWS}u + pixel{half} / {TILE_COLUMNS}u;
            let x = tile_x * {TILE_COLUMNS}u + pixel{half} % {TILE_COLUMNS}u;
            if (y < oh && x < ow) {{"
        );
        for q in 0..4 {
            for lane in 0..4 {
                let channel = format!("channel0 + group * 16u + {}u", q * 4 + lane);
                let value = finish(
                    epilogue,
                    &format!("acc{half}{q}[{lane}]"),
                    "row",
                    "position",
                );
                let _ = writeln!(
                    w,
                    "                {{
                    let row = {channel};
                    if (row < m) {{
                        let position = ((image * m + row) * oh + y) * ow + x;
                        conv_output[position] = store_value(T({value}));
                    }}
                }}"
                );
            }
        }
        let _ = writeln!(w, "            }}\n        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<KernelKey>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        let epilogues = std::iter::once(None).chain(ConvEpilogueKey::all().into_iter().map(Some));
        for epilogue in epilogues {
            keys.push(KernelKey::Conv2dDirect { dtype, epilogue });
        }
    }
}

impl GpuStorage {
    /// The forward convolution by the direct kernel (see [`applies`]; an error otherwise), with
    /// the `epilogue` in its store where there is one.
    pub(crate) fn conv2d_direct(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<GpuStorage> {
        const OP: &str = "conv2d (direct)";
        if !applies(self.dtype, &weight_layout.shape, params) || weight.dtype != self.dtype {
            return Err(Error::invalid(
                OP,
                "the direct kernel takes F32 or F16 filters with at most 4 input channels and 49 taps",
            ));
        }
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        let [batch, o, oh, ow] = shape.output_shape();
        let numel = batch * o * oh * ow;
        let out = GpuStorage::allocate(&self.device, OP, numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        let dense;
        let (weight, weight_layout) = if is_dense(weight_layout) {
            (weight, weight_layout)
        } else {
            dense = (
                weight.copy_strided(weight_layout)?,
                Layout::contiguous(&weight_layout.shape),
            );
            (&dense.0, &dense.1)
        };
        let (h, w) = shape.input;
        let (kh, kw) = shape.kernel;
        let (s, p, d) = (shape.stride, shape.padding, shape.dilation);
        let header = ConvParams::new(
            [
                batch * oh * ow,
                o,
                shape.patch(),
                shape.channels,
                h,
                w,
                oh,
                ow,
                kh,
                kw,
                s.0,
                s.1,
                p.0,
                p.1,
                d.0,
                d.1,
            ],
            layout,
            weight_layout.offset,
        )?;
        word(numel)?;
        // Window origins are computed in i32.
        let reach = |size: usize, pad: usize| {
            size.checked_add(pad)
                .is_some_and(|v| v <= i32::MAX as usize)
        };
        if !reach(h * s.0, p.0) || !reach(w * s.1, p.1) {
            return Err(Error::invalid(
                OP,
                "sizes too large for the GPU's 32-bit indexing",
            ));
        }
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let tiles = batch * oh.div_ceil(TILE_ROWS) * ow.div_ceil(TILE_COLUMNS);
        let groups = o.div_ceil(CHANNELS);
        if groups > max {
            return Err(Error::invalid(
                OP,
                format!("{o} output channels are too many"),
            ));
        }
        let key = KernelKey::Conv2dDirect {
            dtype: self.dtype,
            epilogue: epilogue.map(|e| e.key),
        };
        let mut buffers = vec![self.raw()?, weight.raw()?, out.raw()?];
        if let Some(epilogue) = epilogue {
            buffers.extend(epilogue.buffers()?);
        }
        let words = Params::with_header(&header, 0);
        context.dispatch(
            &key,
            words.words(),
            &buffers,
            (tiles.min(max) as u32, groups as u32, 1),
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;

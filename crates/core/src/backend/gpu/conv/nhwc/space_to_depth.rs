//! A stride-2 convolution over few channels (a network's stem: 3 channels, 7 x 7, stride 2)
//! as a stride-1 convolution over the input's 2 x 2 space-to-depth rearrangement, on the
//! channels-last kernels (`conv/nhwc.rs`).
//!
//! Padding 3 channels to 8 makes the plain channels-last GEMM multiply 2.7 times the useful
//! arithmetic (K = 7 * 7 * 8 = 392 for 147 products). Folding each 2 x 2 block of pixels into
//! the channels turns `c` channels into `4c` (12, padded to 16) and a `k x k` kernel of stride
//! 2 into a `ceil(k / 2)` one of stride 1 (7 x 7 into 4 x 4): K = 4 * 4 * 16 = 256.
//!
//! - Rows: input row `y` sits at padded row `y + P` with `P` the padding rounded up to even
//!   (so that blocks start on even padded rows), i.e. in block row `y / 2 + P / 2`, sub-row
//!   `y % 2`; an odd padding shifts the kernel one tap down (`shift = P - p`): tap `ki` becomes
//!   padded tap `ki + shift = 2a + b` (block tap `a`, sub-row `b`). Columns likewise.
//! - The host builds the rearranged input, dense `[n, Hs, Ws, C']` (`C'` = 4c padded to a
//!   multiple of 8; zeros in the padding and the extra channels) with one kernel
//!   ([`input_source`]: each invocation writes a block pixel's channels as 16-byte vectors;
//!   the generic strided copy into a zero-filled buffer took about 150 µs of the stem's 430 on
//!   the H200, its writes 2 bytes apart), and
//!   the weight `[Kh, Kw, C', o]` from a zero-padded copy of `[o, c, 2Kh, 2Kw]`.
//! - Channel `(b * 2 + bx) * c + ch` of block pixel `(Y, X)` is input `(ch, 2Y + b - P, 2X +
//!   bx - P)`; output pixel `(oy, ox)` reads block pixels `(oy + a, ox + a2)`.
//!
//! It applies to undilated one-group stride-2 convolutions with fewer than 8 input channels
//! and even input sizes; the result equals the plain kernel's up to summation order.

use super::{padded_channels, NhwcTile};
use crate::backend::gpu::conv::epilogue::BoundEpilogue;
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::conv::weight_cache::{self, Rearrangement};
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

/// The geometry of one axis: `(P, shift, K2, Hs, used)` — the even padding, the kernel's
/// shift, block taps, block rows of the rearranged input, and the input's block rows that
/// any output reads (`used <= size / 2`).
fn axis(
    size: usize,
    kernel: usize,
    padding: usize,
    out: usize,
) -> (usize, usize, usize, usize, usize) {
    let even = padding.next_multiple_of(2);
    let shift = even - padding;
    let blocks = (kernel + shift).div_ceil(2);
    let rows = out + blocks - 1;
    let used = (size / 2).min(rows.saturating_sub(even / 2));
    (even, shift, blocks, rows, used)
}

/// [`axis`]'s numbers of one axis.
type Axis = (usize, usize, usize, usize, usize);

/// [`axis`] for the rows and the columns of `shape`.
fn axes(shape: &Conv2dShape) -> (Axis, Axis) {
    (
        axis(
            shape.input.0,
            shape.kernel.0,
            shape.padding.0,
            shape.output.0,
        ),
        axis(
            shape.input.1,
            shape.kernel.1,
            shape.padding.1,
            shape.output.1,
        ),
    )
}

/// Whether the rearrangement applies (see the module header).
pub(super) fn applies(layout: &Layout, weight_shape: &[usize], params: &Conv2dParams) -> bool {
    let (&[_, c, h, w], &[_, wc, kh, kw]) = (layout.shape.as_slice(), weight_shape) else {
        return false;
    };
    c == wc
        && c > 0
        && c < 8
        && params.stride == (2, 2)
        && params.dilation == (1, 1)
        && params.groups == 1
        && kh >= 2
        && kw >= 2
        && h.is_multiple_of(2)
        && w.is_multiple_of(2)
        && h > 0
        && w > 0
}

kernel_params! {
    /// Parameters of the space-to-depth input kernel ([`input_source`]).
    struct SpaceToDepthParams {
        /// Block pixels to write (`n * rows * columns`).
        pixels: u32,
        /// The input's channels `c`.
        channels: u32,
        /// 16-byte vectors per block pixel (its padded channels / 8).
        vectors: u32,
        /// Block rows and columns of the rearranged input.
        rows: u32,
        columns: u32,
        /// Block rows and columns of padding before the image (`P / 2`).
        top: u32,
        left: u32,
        /// The image's block rows and columns that any output reads.
        used_rows: u32,
        used_columns: u32,
        /// The input view: offset and strides of `[n, c, h, w]`.
        offset: u32,
        stride_n: u32,
        stride_c: u32,
        stride_h: u32,
        stride_w: u32,
    }
}

/// The input channel counts the rearrangement takes (the kernel is generated for each).
pub(crate) const CHANNELS: std::ops::RangeInclusive<u8> = 1..=7;

/// WGSL of `ConvKernel::SpaceToDepth { channels }` (F16): one invocation per block pixel
/// `(image, Y, X)` writes its channels as 16-byte vectors — channel `(b * 2 + bx) * c + ch`
/// is input `(ch, 2 (Y - top) + b, 2 (X - left) + bx)` inside the used blocks, zero elsewhere
/// and past `4 c` — so neighbouring invocations read neighbouring input columns and write
/// neighbouring vectors. Generated for the channel count `c`, every load unrolled and issued
/// before the first store (a loop over the channels with a division per value took 48 µs on
/// the H200 for ResNet-18's batch of 64). Every read is clamped to the input buffer.
pub(crate) fn input_source(channels: u8) -> String {
    let c = usize::from(channels.max(1));
    let padded = padded_channels(4 * c);
    let mut text = String::from("enable f16;\n");
    text.push_str(&value_header(DType::F16));
    text.push_str(SpaceToDepthParams::WGSL);
    text.push_str(COMMON);
    text.push_str(&format!(
        r#"// Space-to-depth of a {c}-channel input (conv_nhwc/space_to_depth.rs): {padded} channels a block pixel.
@group(0) @binding(1) var<storage, read> input: array<f16>;
@group(0) @binding(2) var<storage, read_write> output: array<mat2x4<f16>>;

// Input `(channel, row, column)` of `image`, clamped to the buffer.
fn input_value(image: u32, channel: u32, row: u32, column: u32) -> f16 {{
    let at = params.offset + image * params.stride_n + channel * params.stride_c
        + row * params.stride_h + column * params.stride_w;
    return input[min(at, arrayLength(&input) - 1u)];
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let pixel = linear_id(workgroup, workgroups, local);
    if (pixel >= params.pixels) {{
        return;
    }}
    let column = pixel % params.columns;
    let row = (pixel / params.columns) % params.rows;
    let image = pixel / (params.columns * params.rows);
    // Block rows and columns before the image wrap around to large values: outside.
    let block_row = row - params.top;
    let block_column = column - params.left;
    let inside = row >= params.top && column >= params.left
        && block_row < params.used_rows && block_column < params.used_columns;
    let y = 2u * block_row;
    let x = 2u * block_column;
"#
    ));
    let mut values = Vec::new();
    for sub in 0..4 {
        for channel in 0..c {
            let name = format!("value{}", values.len());
            text.push_str(&format!(
                "    var {name} = f16(0.0);\n    if (inside) {{\n        \
                 {name} = input_value(image, {channel}u, y + {row}u, x + {column}u);\n    }}\n",
                row = sub / 2,
                column = sub % 2,
            ));
            values.push(name);
        }
    }
    values.resize(padded, "f16(0.0)".to_string());
    for (vector, chunk) in values.chunks(8).enumerate() {
        text.push_str(&format!(
            "    output[pixel * {vectors}u + {vector}u] = mat2x4<f16>(vec4<f16>({}), vec4<f16>({}));\n",
            chunk[..4].join(", "),
            chunk[4..].join(", "),
            vectors = padded / 8,
        ));
    }
    text.push_str("}\n");
    text
}

impl GpuStorage {
    /// The rearranged input of `shape` from the view `layout` of `self`: dense `[n, rows,
    /// columns, channels]`, and those three sizes.
    fn space_to_depth_input(
        &self,
        layout: &Layout,
        shape: &Conv2dShape,
    ) -> Result<(GpuStorage, usize, usize, usize)> {
        let (n, c) = (shape.batch, shape.channels);
        let ((pad_h, _, _, rows, used_rows), (pad_w, _, _, columns, used_columns)) = axes(shape);
        let channels = padded_channels(4 * c);
        // Input (ch, 2Y' + b, 2X' + bx) goes to block pixel (Y' + P/2, X' + P/2), channel
        // (b * 2 + bx) * c + ch.
        let pixels = n * rows * columns;
        if self.dtype == DType::F16 {
            // One kernel: each invocation writes one block pixel's channels, zeros included.
            let input =
                GpuStorage::allocate(&self.device, "conv2d", pixels * channels, self.dtype)?;
            let s = &layout.strides;
            let header = SpaceToDepthParams {
                pixels: word(pixels)?,
                channels: word(c)?,
                vectors: word(channels / 8)?,
                rows: word(rows)?,
                columns: word(columns)?,
                top: word(pad_h / 2)?,
                left: word(pad_w / 2)?,
                used_rows: word(used_rows)?,
                used_columns: word(used_columns)?,
                offset: word(layout.offset)?,
                stride_n: word(s[0])?,
                stride_c: word(s[1])?,
                stride_h: word(s[2])?,
                stride_w: word(s[3])?,
            };
            GpuStorage::launch(
                &self.device,
                &ConvKernel::SpaceToDepth {
                    channels: u8::try_from(c).unwrap_or(u8::MAX),
                },
                &Params::with_header(&header, 0),
                &[self.raw()?, input.raw()?],
                pixels,
            )?;
            return Ok((input, rows, columns, channels));
        }
        let mut input = GpuStorage::full(&self.device, pixels * channels, self.dtype, 0.0)?;
        if used_rows > 0 && used_columns > 0 {
            let s = &layout.strides;
            let blocks = Layout {
                shape: vec![n, c, used_rows, 2, used_columns, 2],
                strides: vec![s[0], s[1], 2 * s[2], s[2], 2 * s[3], s[3]],
                offset: layout.offset,
            };
            let target = Layout {
                shape: blocks.shape.clone(),
                strides: vec![
                    rows * columns * channels,
                    1,
                    columns * channels,
                    2 * c,
                    channels,
                    c,
                ],
                offset: (pad_h / 2) * columns * channels + (pad_w / 2) * channels,
            };
            self.copy_into(&blocks, &mut input, &target)?;
        }
        Ok((input, rows, columns, channels))
    }

    /// The convolution of the view `layout` of `self` with `weight` through the 2 x 2
    /// space-to-depth rearrangement (the caller checked [`applies`] and the tile), with
    /// `epilogue` in its store and the output in `format`; `Ok(None)` where the GEMM does not
    /// run (see `nhwc_gemm`).
    pub(super) fn conv2d_nhwc_space_to_depth(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        shape: &Conv2dShape,
        (tile, emulated, format): (NhwcTile, bool, MemoryFormat),
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        let (input, rearranged, gemm_shape) =
            self.space_to_depth_operands((layout, weight, weight_layout), shape)?;
        GpuStorage::nhwc_gemm_channels_last(
            (
                &input,
                gemm_shape.channels,
                gemm_shape.input.0,
                gemm_shape.input.1,
            ),
            &rearranged,
            &gemm_shape,
            false,
            (tile, emulated, format),
            epilogue,
        )
    }

    /// The operands of the stride-1 convolution without padding that equals the convolution
    /// of `shape` (the caller checked [`applies`]): the rearranged input (dense `[n, rows,
    /// columns, channels]`), the rearranged weight (dense `[Kh, Kw, channels, o]`) and that
    /// convolution's shape (its output is `shape`'s).
    pub(super) fn space_to_depth_operands(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        shape: &Conv2dShape,
    ) -> Result<(GpuStorage, GpuStorage, Conv2dShape)> {
        let ((_, shift_h, blocks_h, _, _), (_, shift_w, blocks_w, _, _)) = axes(shape);
        let gemm_shape = rearranged_shape(shape)?;
        let (input, rows, columns, channels) = self.space_to_depth_input(layout, shape)?;
        // The weight is kept for the next call while it is unchanged (`conv/weight_cache.rs`).
        let rearrangement = Rearrangement::SpaceToDepth {
            geometry: [shift_h, shift_w, blocks_h, blocks_w, channels, 0],
        };
        let make = || {
            self.space_to_depth_weight(
                (weight, weight_layout),
                shape,
                [shift_h, shift_w, blocks_h, blocks_w, channels],
            )
        };
        let rearranged = weight_cache::get_or_make((weight, weight_layout), rearrangement, make)?;
        debug_assert_eq!((rows, columns), (gemm_shape.input.0, gemm_shape.input.1));
        Ok((input, rearranged, gemm_shape))
    }

    /// The weight of [`Self::space_to_depth_operands`]: shifted into [o, c, 2 Kh, 2 Kw] (zeros
    /// around), then rearranged to [Kh, Kw, channels, o]: tap (2a + b, 2a2 + bx) of channel ch
    /// to (a, a2, (b * 2 + bx) * c + ch).
    fn space_to_depth_weight(
        &self,
        (weight, weight_layout): (&GpuStorage, &Layout),
        shape: &Conv2dShape,
        [shift_h, shift_w, blocks_h, blocks_w, channels]: [usize; 5],
    ) -> Result<GpuStorage> {
        let c = shape.channels;
        let (kh, kw) = shape.kernel;
        let o = shape.out_channels;
        let (tall, wide) = (2 * blocks_h, 2 * blocks_w);
        let mut shifted = GpuStorage::full(&self.device, o * c * tall * wide, self.dtype, 0.0)?;
        let inner = Layout {
            shape: vec![o, c, kh, kw],
            strides: vec![c * tall * wide, tall * wide, wide, 1],
            offset: shift_h * wide + shift_w,
        };
        weight.copy_into(weight_layout, &mut shifted, &inner)?;
        let mut rearranged = GpuStorage::full(
            &self.device,
            blocks_h * blocks_w * channels * o,
            self.dtype,
            0.0,
        )?;
        let taps = Layout {
            shape: vec![o, c, blocks_h, 2, blocks_w, 2],
            strides: vec![c * tall * wide, tall * wide, 2 * wide, wide, 2, 1],
            offset: 0,
        };
        let target = Layout {
            shape: taps.shape.clone(),
            strides: vec![
                1,
                o,
                blocks_w * channels * o,
                2 * c * o,
                channels * o,
                c * o,
            ],
            offset: 0,
        };
        shifted.copy_into(&taps, &mut rearranged, &target)?;
        Ok(rearranged)
    }
}

/// The shape of the stride-1 convolution without padding over the rearranged operands that
/// equals the convolution of `shape` (which [`applies`] to).
pub(super) fn rearranged_shape(shape: &Conv2dShape) -> Result<Conv2dShape> {
    let ((_, _, blocks_h, rows, _), (_, _, blocks_w, columns, _)) = axes(shape);
    let channels = padded_channels(4 * shape.channels);
    let rearranged = Conv2dShape::new(
        &Layout::contiguous(&[shape.batch, channels, rows, columns]),
        &Layout::contiguous(&[shape.out_channels, channels, blocks_h, blocks_w]),
        &Conv2dParams::default(),
    )?;
    debug_assert_eq!(rearranged.output, shape.output);
    Ok(rearranged)
}

impl GpuStorage {
    /// The weight gradient of the convolution of the view `layout` of `self` (the caller
    /// checked [`applies`]) through the rearrangement: the stride-1 weight gradient over the
    /// rearranged input (`[o, C', Kh, Kw]`), folded back to `[o, c, kh, kw]`; `Ok(None)` where
    /// the channels-last weight kernel does not run.
    pub(super) fn conv2d_backward_weight_space_to_depth(
        &self,
        (layout, grad, grad_layout): (&Layout, &GpuStorage, &Layout),
        shape: &Conv2dShape,
        key: super::ConvNhwcWeightKey,
    ) -> Result<Option<GpuStorage>> {
        let (c, o) = (shape.channels, shape.out_channels);
        let (kh, kw) = shape.kernel;
        let ((_, shift_h, blocks_h, _, _), (_, shift_w, blocks_w, _, _)) = axes(shape);
        let (input, rows, columns, channels) = self.space_to_depth_input(layout, shape)?;
        // The rearranged input read as [n, channels, rows, columns].
        let view = Layout {
            shape: vec![shape.batch, channels, rows, columns],
            strides: vec![rows * columns * channels, 1, columns * channels, channels],
            offset: 0,
        };
        let Some(blocked) = input.conv2d_backward_weight_nhwc(
            (&view, grad, grad_layout),
            &Conv2dParams::default(),
            &[o, channels, blocks_h, blocks_w],
            key,
        )?
        else {
            return Ok(None);
        };
        // Tap (a, a2) of channel (b * 2 + bx) * c + ch is padded tap (2a + b, 2a2 + bx) of
        // channel ch, shifted: unfold into [o, c, 2 Kh, 2 Kw], then cut [o, c, kh, kw] out.
        let (tall, wide) = (2 * blocks_h, 2 * blocks_w);
        let mut shifted = GpuStorage::allocate(
            &self.device,
            "conv2d_backward_weight",
            o * c * tall * wide,
            self.dtype,
        )?;
        let area = blocks_h * blocks_w;
        let source = Layout {
            shape: vec![o, c, blocks_h, 2, blocks_w, 2],
            strides: vec![channels * area, area, blocks_w, 2 * c * area, 1, c * area],
            offset: 0,
        };
        let target = Layout {
            shape: source.shape.clone(),
            strides: vec![c * tall * wide, tall * wide, 2 * wide, wide, 2, 1],
            offset: 0,
        };
        blocked.copy_into(&source, &mut shifted, &target)?;
        let cut = Layout {
            shape: vec![o, c, kh, kw],
            strides: vec![c * tall * wide, tall * wide, wide, 1],
            offset: shift_h * wide + shift_w,
        };
        shifted.copy_strided(&cut).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::axis;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::conv::gemm::testing::{upload, values};
    use crate::backend::tests::support::f16_gpu_device;
    use crate::dtype::DType;
    use crate::geometry::{Conv2dParams, Conv2dShape};
    use crate::layout::Layout;

    #[test]
    fn stem_geometry() {
        // 224 rows, 7 taps, padding 3, 112 outputs: padding 4, one tap of shift, 4 block
        // taps over 115 block rows, all 112 input block rows read.
        assert_eq!(axis(224, 7, 3, 112), (4, 1, 4, 115, 112));
        // Even padding: no shift. 3 taps, padding 2 over 10 rows: 6 outputs.
        assert_eq!(axis(10, 3, 2, 6), (2, 0, 2, 7, 5));
    }

    /// The F16 kernel's rearranged input equals the strided copy's (the F32 path) for the
    /// same values: odd and even paddings, 3 and 5 channels, and a permuted input view.
    #[test]
    fn input_kernel_matches_the_strided_copy() {
        let Some(device) = f16_gpu_device() else {
            return;
        };
        // [n, c, h, w], kernel, padding; the last views `[n, h, c, w]` storage as NCHW.
        let cases = [
            ([2, 3, 10, 14], 7, 3, false),
            ([1, 5, 8, 6], 4, 2, false),
            ([2, 3, 6, 8], 3, 1, true),
        ];
        for ([n, c, h, w], kernel, padding, permuted) in cases {
            let data = values(n * c * h * w, 3, DType::F16);
            let layout = if permuted {
                Layout::contiguous(&[n, h, c, w]).permute(&[0, 2, 1, 3])
            } else {
                Layout::contiguous(&[n, c, h, w])
            };
            let params = Conv2dParams {
                stride: (2, 2),
                padding: (padding, padding),
                dilation: (1, 1),
                groups: 1,
            };
            let weight = Layout::contiguous(&[16, c, kernel, kernel]);
            assert!(super::applies(&layout, &weight.shape, &params));
            let shape = Conv2dShape::new(&layout, &weight, &params).unwrap();
            let run = |dtype| {
                let input = upload(&device, &data, dtype);
                let (rearranged, ..) = input.space_to_depth_input(&layout, &shape).unwrap();
                match rearranged.to_cpu().unwrap() {
                    CpuStorage::F32(v) => v,
                    CpuStorage::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
                    _ => panic!("dtype changed"),
                }
            };
            let (kernel_values, copied) = (run(DType::F16), run(DType::F32));
            assert_eq!(
                kernel_values, copied,
                "{n}x{c}x{h}x{w} k{kernel} p{padding}"
            );
            assert!(copied.iter().any(|&v| v != 0.0));
        }
    }
}

//! The f16 convolution weight gradient on cooperative matrices over channels-last copies of
//! the input and the output gradient: `dW[o, c, ki, kj] = Σ_p g[p, o] · x[p ⊕ (ki, kj), c]`
//! over the output pixels `p`, as the GEMM `dWᵀ[(tap, c), o] = Xᵀ[(tap, c), p] · G[p, o]`.
//!
//! - The host copies the input to `[n, h, w, c]` and the gradient to `[n, oh, ow, o]` (tiled
//!   transposes, `copy/transpose.rs`). M = kh * kw * c (rows `(tap, c)`, c a multiple of 8;
//!   fewer channels, an image's 3, are padded to 8 with zeros and their rows cut from the
//!   result), N = o (a multiple of the tile's 64 or 128 columns), K = n * oh * ow pixels.
//! - A's block (128 rows x 32 pixels) is staged transposed, one line of 128 rows per pixel:
//!   each 16-byte load is 8 channels of one tap at one pixel and one 16-byte store into its
//!   pixel's line; 16 neighbouring invocations take the 16 channel groups of one pixel, so
//!   their loads are contiguous within a tap; zero in the padding and past the split's
//!   pixels. The subgroups read A's fragments column-major (`coopLoad`). B's block (32 pixels
//!   x N columns): 16-byte loads of 8 output channels.
//! - K is split over `workgroup.z`: every split writes f32 partial sums in the GEMM's `[(tap,
//!   c), o]` order (16 lanes store 64 consecutive bytes), `Conv2dSplitSum` adds them in a
//!   fixed order (deterministic) into an f16 `[kh, kw, c, o]`, and one strided copy permutes
//!   that to the weight's `[o, c, kh, kw]`.
//! - Tiles, staging, the register prefetch and the scratch epilogue are the forward's
//!   (`conv/nhwc.rs`); `emulated` keys spell the matrix operations in plain WGSL.

use super::{
    applies, channels_last_input, gradient_copy, padded_channels, Writer, INVOCATIONS, K_BLOCK,
};
use crate::backend::gpu::conv::backward::{sum_splits, Permutation, MAX_PARTIALS, MAX_SPLITS};
use crate::backend::gpu::conv::coop::dispatch_counted;
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::same_device;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::cooperative::{store_register, Coop};
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::Layout;

/// Workgroups the split of K aims for (a few waves of a large GPU).
const TARGET_WORKGROUPS: usize = 1024;

/// One channels-last weight-gradient kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvNhwcWeightKey {
    /// Output channels per workgroup: 64 or 128.
    pub columns: usize,
    /// Pixels per staged block (the GEMM's k-block): 32 or 64.
    pub k_block: usize,
    /// Plain-WGSL emulation of the matrix operations (tests on any f16 device).
    pub emulated: bool,
}

/// Rows `(tap, c)` per workgroup.
pub(crate) const ROWS: usize = 128;

/// Halves in a pixel's line of A's transposed block: the tile's rows plus 8 of padding
/// (16-byte aligned; the 16 lines a fragment load reads start on different bank groups).
const A_COLUMN: usize = ROWS + 8;

impl ConvNhwcWeightKey {
    /// Every instantiation (the naga catalogue).
    pub(crate) fn all() -> Vec<ConvNhwcWeightKey> {
        let mut keys = Vec::new();
        for columns in [64, 128] {
            for k_block in [K_BLOCK, 2 * K_BLOCK] {
                for emulated in [false, true] {
                    keys.push(ConvNhwcWeightKey {
                        columns,
                        k_block,
                        emulated,
                    });
                }
            }
        }
        keys
    }

    /// Bytes of workgroup memory: one copy of each block and eight f32 scratch tiles.
    pub fn workgroup_bytes(self) -> u32 {
        let halves = self.k_block * (A_COLUMN + self.columns + 8);
        (2 * halves + 8 * 256 * 4) as u32
    }

    /// The complete WGSL source.
    pub(crate) fn source(self) -> String {
        source(self)
    }

    /// The kernel key.
    pub(crate) fn kernel(self) -> ConvKernel {
        ConvKernel::ConvNhwcWeight(self)
    }
}

kernel_params! {
    /// The parameters of the channels-last weight-gradient kernels (binding 0).
    struct ConvNhwcWeightParams {
        /// Output pixels n * oh * ow (GEMM depth).
        pixels: u32,
        /// Output channels o (GEMM columns).
        out_channels: u32,
        /// Input channels c.
        channels: u32,
        /// Input height.
        height: u32,
        /// Input width.
        width: u32,
        /// Output pixels per image: oh * ow.
        plane: u32,
        /// Output width.
        out_width: u32,
        /// Kernel columns kw.
        kernel_w: u32,
        /// Taps kh * kw.
        taps: u32,
        /// GEMM rows: taps * c.
        rows: u32,
        /// Pixels per split (a multiple of 32).
        chunk: u32,
        /// Stride (rows).
        stride_h: u32,
        /// Stride (columns).
        stride_w: u32,
        /// Padding (rows).
        pad_h: u32,
        /// Padding (columns).
        pad_w: u32,
        /// Dilation (rows).
        dilation_h: u32,
        /// Dilation (columns).
        dilation_w: u32,
    }
}

/// The kernel's WGSL source.
fn source(key: ConvNhwcWeightKey) -> String {
    let coop = Coop {
        emulated: key.emulated,
    };
    let columns = key.columns;
    let b_row = columns + 8;
    let sub_columns = columns / 4; // subgroups 2 high, 4 wide
    let fragment_columns = sub_columns / 16;
    let b_per_row = columns / 8;
    let b_rows_per_pass = INVOCATIONS / b_per_row;
    let k_block = key.k_block;
    let b_loads = k_block / b_rows_per_pass;
    let a_loads = k_block / 16;
    let mut w = Writer {
        text: String::from("enable f16;\n"),
    };
    if !key.emulated {
        w.text.push_str(&coop.prelude_columns("tile_a", "tile_b"));
    }
    w.text
        .push_str(<ConvNhwcWeightParams as KernelParams>::WGSL);
    w.text.push_str(COMMON);
    w.text.push_str(&format!(
        "@group(0) @binding(1) var<storage, read> nhwc_input: array<mat2x4<f16>>;
@group(0) @binding(2) var<storage, read> nhwc_gradient: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read_write> partials: array<f32>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it to the output.
var<workgroup> scratch: array<f32, 2048>;
// A's block transposed, [{k_block} pixels][{A_COLUMN}] ({ROWS} (tap, c) rows per pixel, padded),
// and B's [{k_block} pixels][{b_row}] (padded rows).
var<workgroup> tile_a: array<f16, {}>;
var<workgroup> tile_b: array<f16, {}>;
",
        k_block * A_COLUMN,
        k_block * b_row
    ));
    if key.emulated {
        w.text.push_str(&coop.prelude_columns("tile_a", "tile_b"));
    }
    w.text.push_str(&format!(
        "
@compute @workgroup_size({INVOCATIONS})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>,
        @builtin(local_invocation_index) local: u32{}) {{
",
        coop.subgroup_builtins()
    ));
    if key.emulated {
        w.line(1, "let subgroup = local / 32u;");
        w.line(1, "let lane = local % 32u;");
        w.line(1, "emulated_lane = lane;");
    }
    for line in [
        "let c8 = params.channels / 8u;".to_string(),
        "let o8 = params.out_channels / 8u;".into(),
        "let input_last = arrayLength(&nhwc_input) - 1u;".into(),
        "let gradient_last = arrayLength(&nhwc_gradient) - 1u;".into(),
        format!("let row0 = workgroup.y * {ROWS}u;"),
        format!("let column0 = workgroup.x * {columns}u;"),
        "let first = workgroup.z * params.chunk;".into(),
        "let end = min(first + params.chunk, params.pixels);".into(),
        format!("let steps = (end - min(first, end) + {}u) / {k_block}u;", k_block - 1),
        "let sub_row = (subgroup / 4u) * 64u;".into(),
        format!("let sub_column = (subgroup % 4u) * {sub_columns}u;"),
        "let scratch_at = subgroup * 256u;".into(),
        "// A loaders: the 8 channels of rows `row0 + (local % 16) * 8` (one tap) at pixels".into(),
        "// `local / 16 + 16q` of the block: 16 neighbours read 256 consecutive bytes where c >= 128.".into(),
        "let a_row = row0 + (local % 16u) * 8u;".into(),
        "let tap = a_row / params.channels;".into(),
        "let dy = i32((tap / params.kernel_w) * params.dilation_h) - i32(params.pad_h);".into(),
        "let dx = i32((tap % params.kernel_w) * params.dilation_w) - i32(params.pad_w);".into(),
        "let group = (a_row % params.channels) / 8u;".into(),
        "let a_pixel = local / 16u;".into(),
        format!("let a_store = a_pixel * {A_COLUMN}u + (local % 16u) * 8u;"),
        format!("// B loaders: load `local % {b_per_row}` of pixels `local / {b_per_row} + {b_rows_per_pass}q`."),
        format!("let b_pixel = local / {b_per_row}u;"),
        format!("let b_store = b_pixel * {b_row}u + (local % {b_per_row}u) * 8u;"),
        format!("let b_column8 = column0 / 8u + local % {b_per_row}u;"),
    ] {
        w.line(1, &line);
    }
    for q in 0..a_loads {
        w.line(1, &format!("var a{q}: mat2x4<f16>;"));
    }
    for q in 0..b_loads {
        w.line(1, &format!("var b{q}: mat2x4<f16>;"));
    }
    let accumulators: Vec<String> = (0..4 * fragment_columns)
        .map(|t| format!("c{}{}", t / fragment_columns, t % fragment_columns))
        .collect();
    for c in &accumulators {
        w.line(1, &format!("var {c} = {}();", coop.ty('C')));
    }
    let load = |w: &mut Writer, indent: usize| {
        for q in 0..a_loads {
            w.line(
                indent,
                &format!(
                    "let pixel{q} = first + step * {k_block}u + a_pixel + {}u;",
                    16 * q
                ),
            );
            w.line(indent, &format!("let image{q} = pixel{q} / params.plane;"));
            w.line(indent, &format!("let within{q} = pixel{q} % params.plane;"));
            w.line(
                indent,
                &format!("let iy{q} = i32((within{q} / params.out_width) * params.stride_h) + dy;"),
            );
            w.line(
                indent,
                &format!("let ix{q} = i32((within{q} % params.out_width) * params.stride_w) + dx;"),
            );
            w.line(
                indent,
                &format!(
                    "let inside{q} = pixel{q} < end && a_row < params.rows && iy{q} >= 0 && iy{q} < i32(params.height) && ix{q} >= 0 && ix{q} < i32(params.width);"
                ),
            );
            w.line(
                indent,
                &format!(
                    "let at{q} = min(((image{q} * params.height + u32(max(iy{q}, 0))) * params.width + u32(max(ix{q}, 0))) * c8 + group, input_last);"
                ),
            );
            w.line(
                indent,
                &format!("if (inside{q}) {{ a{q} = nhwc_input[at{q}]; }} else {{ a{q} = mat2x4<f16>(); }}"),
            );
        }
        for q in 0..b_loads {
            w.line(
                indent,
                &format!(
                    "let b_at{q} = first + step * {k_block}u + b_pixel + {}u;",
                    q * b_rows_per_pass
                ),
            );
            w.line(
                indent,
                &format!(
                    "if (b_at{q} < end) {{ b{q} = nhwc_gradient[min(b_at{q} * o8 + b_column8, gradient_last)]; }} else {{ b{q} = mat2x4<f16>(); }}"
                ),
            );
        }
    };
    w.line(1, "if (steps > 0u) {");
    w.line(2, "let step = 0u;");
    load(&mut w, 2);
    w.line(1, "}");
    w.line(1, "for (var step = 0u; step < steps; step = step + 1u) {");
    w.line(2, "workgroupBarrier();");
    // A: a load's 8 channels are 8 consecutive rows of its pixel's line (one 16-byte store).
    for q in 0..a_loads {
        let target = ("tile_a", "a_store", q * 16 * A_COLUMN);
        store_register(&mut w.text, "        ", target, &format!("a{q}"));
    }
    for q in 0..b_loads {
        let target = ("tile_b", "b_store", q * b_rows_per_pass * b_row);
        store_register(&mut w.text, "        ", target, &format!("b{q}"));
    }
    w.line(2, "workgroupBarrier();");
    w.line(2, "if (step + 1u < steps) {");
    w.line(3, "let step = step + 1u;");
    load(&mut w, 3);
    w.line(2, "}");
    // The product: A's fragments read column-major from the transposed block.
    for kk in 0..k_block / 16 {
        w.line(2, "{");
        for i in 0..4 {
            let start = format!("sub_row + {}u", kk * 16 * A_COLUMN + i * 16);
            let fragment = coop.load_columns('A', "tile_a", &start, &format!("{A_COLUMN}u"));
            w.line(3, &format!("let fa{i} = {fragment};"));
        }
        for j in 0..fragment_columns {
            let start = format!("sub_column + {}u", kk * 16 * b_row + j * 16);
            let fragment = coop.load('B', "tile_b", &start, &format!("{b_row}u"));
            w.line(3, &format!("let fb{j} = {fragment};"));
            for i in 0..4 {
                let c = format!("c{i}{j}");
                let product = coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &c);
                w.line(3, &format!("{c} = {product};"));
            }
        }
        w.line(2, "}");
    }
    w.line(1, "}");
    // Epilogue: lane writes output channel `lane % 16` of rows `(lane / 16) * 8 ..+ 8` into
    // this split's partial sums, in the GEMM's [(tap, c), o] order (16 lanes: 64 consecutive
    // bytes).
    w.line(1, "let lane_row = (lane / 16u) * 8u;");
    w.line(1, "let lane_column = lane % 16u;");
    w.line(
        1,
        "let split_at = workgroup.z * params.out_channels * params.rows;",
    );
    for (t, c) in accumulators.iter().enumerate() {
        let (i, j) = (t / fragment_columns, t % fragment_columns);
        w.line(1, &coop.store_scratch(c, "scratch_at"));
        w.line(1, "workgroupBarrier();");
        w.line(1, "{");
        w.line(
            2,
            &format!(
                "let channel = column0 + sub_column + {}u + lane_column;",
                j * 16
            ),
        );
        w.line(
            2,
            &format!("let top = row0 + sub_row + {}u + lane_row;", i * 16),
        );
        w.line(2, "for (var r = 0u; r < 8u; r = r + 1u) {");
        w.line(3, "let row = top + r;");
        w.line(3, "if (row < params.rows) {");
        w.line(
            4,
            "let position = split_at + row * params.out_channels + channel;",
        );
        w.line(
            4,
            "partials[min(position, arrayLength(&partials) - 1u)] = scratch[scratch_at + (lane_row + r) * 16u + lane_column];",
        );
        w.line(3, "}");
        w.line(2, "}");
        w.line(1, "}");
        w.line(1, "workgroupBarrier();");
    }
    w.line(0, "}");
    w.text
}

impl GpuStorage {
    /// The channels-last cooperative-matrix weight gradient with `columns` output channels per
    /// workgroup (`emulated`: the plain-WGSL kernel); `self` is the forward's input `[n, c,
    /// h, w]`, `grad` the output gradient; `Ok(None)` where it does not apply here (see
    /// [`applies`]; no tensor cores on this device unless emulated; the tile does not divide
    /// the output channels; limits).
    pub(crate) fn conv2d_backward_weight_nhwc(
        &self,
        (layout, grad, grad_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        weight_shape: &[usize],
        key: ConvNhwcWeightKey,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d_backward_weight (channels-last tensor cores)";
        same_device(OP, self, grad)?;
        let (columns, emulated) = (key.columns, key.emulated);
        let &[o, c, kh, kw] = weight_shape else {
            return Ok(None);
        };
        if self.dtype != grad.dtype
            || !applies(self.dtype, weight_shape, params)
            || !o.is_multiple_of(columns)
            || !self.nhwc_usable(key.workgroup_bytes(), emulated)
        {
            return Ok(None);
        }
        check_view(OP, layout, self.len)?;
        check_view(OP, grad_layout, grad.len)?;
        if let Some((pixels, unit)) = super::pointwise_view(layout, weight_shape, params) {
            return self.conv2d_backward_weight_nhwc(
                (&pixels, grad, grad_layout),
                &unit,
                weight_shape,
                key,
            );
        }
        let weight_layout = Layout::contiguous(weight_shape);
        let shape = Conv2dShape::new(layout, &weight_layout, params)?;
        if grad_layout.shape != shape.output_shape() {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: grad_layout.shape.clone(),
                rhs: shape.output_shape().to_vec(),
                reason: "the gradient must have the convolution's output shape".into(),
            });
        }
        if super::space_to_depth::applies(layout, weight_shape, params) {
            return self.conv2d_backward_weight_space_to_depth(
                (layout, grad, grad_layout),
                &shape,
                key,
            );
        }
        let [batch, _, out_height, out_width] = shape.output_shape();
        let (height, width) = (layout.shape[2], layout.shape[3]);
        let pixels = batch * out_height * out_width;
        if pixels == 0 {
            let numel = o * c * kh * kw;
            return Ok(Some(GpuStorage::full(
                &self.device,
                numel,
                self.dtype,
                0.0,
            )?));
        }
        // Fewer than 8 channels are padded to 8 (zeros), and their gradient cut back.
        let padded = padded_channels(c);
        let rows = kh * kw * padded;
        let numel = o * rows;
        let max = self
            .device
            .context()
            .limits
            .max_compute_workgroups_per_dimension as usize;
        let tiles = (o / columns) * rows.div_ceil(ROWS);
        let splits = TARGET_WORKGROUPS
            .div_ceil(tiles)
            .clamp(1, MAX_SPLITS)
            .min(pixels.div_ceil(key.k_block))
            .min((MAX_PARTIALS / numel).max(1));
        let chunk = pixels.div_ceil(splits).next_multiple_of(key.k_block);
        let splits = pixels.div_ceil(chunk);
        if rows.div_ceil(ROWS) > max || splits > max || splits * numel > MAX_PARTIALS {
            return Ok(None);
        }
        let header = ConvNhwcWeightParams {
            pixels: word(pixels)?,
            out_channels: word(o)?,
            channels: word(padded)?,
            height: word(height)?,
            width: word(width)?,
            plane: word(out_height * out_width)?,
            out_width: word(out_width)?,
            kernel_w: word(kw)?,
            taps: word(kh * kw)?,
            rows: word(rows)?,
            chunk: word(chunk)?,
            stride_h: word(shape.stride.0)?,
            stride_w: word(shape.stride.1)?,
            pad_h: word(shape.padding.0)?,
            pad_w: word(shape.padding.1)?,
            dilation_h: word(shape.dilation.0)?,
            dilation_w: word(shape.dilation.1)?,
        };
        word(splits * numel)?;
        // Channels-last input [n, h, w, c] and gradient [n, oh, ow, o].
        // The forward's copy where it is kept (`channels_last_input`).
        let input = channels_last_input(self, layout, padded)?;
        // (o is a multiple of the tile's columns: nothing to pad.)
        let gradient = gradient_copy(grad, grad_layout, o)?;
        let partials =
            GpuStorage::allocate(&self.device, OP, splits * numel, crate::dtype::DType::F32)?;
        let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&header));
        let grid = (
            (o / columns) as u32,
            rows.div_ceil(ROWS) as u32,
            splits as u32,
        );
        let buffers = [input.raw()?, gradient.raw()?, partials.raw()?];
        if !dispatch_counted(self, (&key.kernel(), emulated), words, &buffers, grid)? {
            return Ok(None);
        }
        // The sums of the GEMM's [kh, kw, c, o] order, stored in the weight's [o, c, kh, kw]
        // (padding channels cut) by the sum itself.
        let permutation = Permutation {
            out_channels: o,
            channels: c,
            padded,
            taps: kh * kw,
        };
        sum_splits(&partials, splits, numel, self.dtype, Some(permutation)).map(Some)
    }
}
